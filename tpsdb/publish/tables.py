"""Building the published tables from the database: what every table kind shares (the result types, formats, SQL
pickers, footnotes, what a table holds fixed), and `build_table`, which hands a definition to its kind's builder
(tpsdb/publish/kinds/, one module per kind).

Everything is read through the `measurement_full` view. Only measurements with `status = 'active'` and
`nature = 'measured'` can fill a cell; rejections are never read. The choice among several qualifying figures is made
in SQL (a window function per cell group, see `pick_figures`), so only the figures that end up in a cell leave the
database, whatever its size. Columns labelled "calc." are computed here from those figures and their inputs; they are
never put in a measured column, and a measured column with no qualifying figure stays empty.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from sqlalchemy import Connection, bindparam, text

from .definitions import FIXED_COLUMNS, TIES_TEXT, Definition, kind_of
from .quotes import is_table_row, quote_headers

NO_MEASUREMENT = "No validated measurement matches this table's conditions yet: its measured cells are empty."
CALC_NOTE = "Columns marked calc. are computed by tpsdb from the figures and inputs shown; they are not measurements."

# Columns of measurement_full that a cell, its hint or its footnote needs.
_VIEW_COLUMNS = (
    "measurement_id", "hardware", "memory_bandwidth_gbs", "bandwidth_source_url", "bandwidth_kind", "bandwidth_quote",
    "bandwidth_source_title", "bandwidth_via_title", "bandwidth_via_quote", "hardware_memory_gb", "model",
    "params_b", "active_params_b", "quantization", "file_size_gb", "file_size_source_url", "software",
    "software_version", "build_number", "build_commit", "software_options", "phase", "prompt_tokens",
    "generated_tokens",
    "context_depth", "users", "figure", "procedure", "tokens_per_second", "stddev", "source_url", "source_home_url",
    "source_title", "retrieved_at", "published_at", "author", "quote", "quote_header", "via_title", "via_publisher", "via_url",
    "calc_ceiling_tps", "read_share",
)

# Ties (same value, same date) go to the simplest conditions (fewest users, shortest context), then to the figure
# stored last: the choice never depends on the order rows happen to come back in.
_TIES = "users ASC, context_depth ASC, measurement_id DESC"
_ORDER = {
    "best": f"tokens_per_second DESC, {_TIES}",
    "median": f"tokens_per_second ASC, {_TIES}",
    "latest": f"COALESCE(published_at, retrieved_at) DESC, (build_number IS NULL) ASC, build_number DESC, {_TIES}",
}


# ---------------------------------------------------------------------------------------------- the result
@dataclass
class Column:
    key: str
    label: str
    kind: str = "text"  # text | measured | calc | reference (an input with its source, e.g. a bandwidth)
    help: str = ""


@dataclass
class Cell:
    text: str = ""
    value: Any = None
    kind: str = "text"
    footnote: int | None = None
    href: str | None = None
    hint: str | None = None
    also: tuple[int, ...] = ()  # footnotes of the same figure published by other sources


@dataclass
class Footnote:
    number: int
    kind: str  # "measurement" or "reference"
    url: str
    label: str
    retrieved_at: str | None = None
    published_at: str | None = None
    quote: str | None = None
    procedure: str | None = None
    author: str | None = None
    via: str | None = None
    measurement_id: int | None = None
    quote_header: str | None = None  # the header line of the table the quoted row is from, kept when it was read


@dataclass
class Table:
    definition: Definition
    columns: list[Column]
    rows: list[dict[str, Cell]]
    held_fixed: list[tuple[str, str]]
    notes: list[str]
    footnotes: list[Footnote]
    chart: dict | None = None
    total_rows: int | None = None  # when the definition's limit cut the rows

    @property
    def measured_cells(self) -> int:
        return sum(1 for row in self.rows for cell in row.values() if cell.kind == "measured" and cell.value is not None)

    @property
    def empty(self) -> bool:  # a table of counts (conformance) is not empty for holding no measured cell
        return self.measured_cells == 0 and not (self.rows and any(c.kind == "count" for c in self.columns))


class Footnotes:
    """Numbers footnotes in the order cells are built; a figure or a URL cited twice keeps its first number."""

    def __init__(self) -> None:
        self.items: list[Footnote] = []
        self._numbers: dict[tuple, int] = {}

    def _add(self, key: tuple, **kwargs) -> int:
        if key not in self._numbers:
            self._numbers[key] = len(self.items) + 1
            self.items.append(Footnote(number=self._numbers[key], **kwargs))
        return self._numbers[key]

    def measurement(self, r: Mapping) -> int:
        via = ", ".join(str(v) for v in (r["via_title"], r["via_publisher"]) if v) or None
        return self._add(
            ("m", r["measurement_id"]), kind="measurement", url=r["source_url"],
            label=r["source_title"] or r["source_url"],
            retrieved_at=iso_date(r["retrieved_at"]), published_at=iso_date(r["published_at"]), quote=r["quote"],
            procedure=r["procedure"], author=r["author"], via=via, measurement_id=r["measurement_id"],
            quote_header=r["quote_header"],
        )

    def reference(self, url: str | None, label: str) -> int | None:
        if not url:
            return None
        return self._add(("r", url), kind="reference", url=url, label=label)

    def bandwidth(self, hardware: str, bandwidth: float, b: Mapping) -> int:
        """One footnote per machine's bandwidth (never shared: two machines cited by one page or one post get one
        each), naming the machine, the value's kind and its own citation."""
        kind = b.get("bandwidth_kind") or "vendor"
        url = b.get("bandwidth_source_url") or ""
        label = f"Memory bandwidth of {hardware}: {fmt_number(bandwidth)} GB/s, " + bandwidth_citation(
            kind, None, b.get("bandwidth_quote"), b.get("bandwidth_source_title"), b.get("bandwidth_via_title"),
            b.get("bandwidth_via_quote"))
        return self._add(("bw", hardware, kind, url, bandwidth), kind="reference", url=url, label=label)


# ------------------------------------------------------------------------------------------------ formats
KIND_TEXT = {
    "vendor": "vendor: stated by the maker's page",
    "relayed": "relayed: the maker's value as a publication gives it (no maker's page stored)",
    "stated": "stated by a source that is not the maker",
}


def bandwidth_citation(kind: str | None, url: str | None, quote: str | None, title: str | None = None,
                       via_title: str | None = None, via_quote: str | None = None) -> str:
    """Which kind a bandwidth is and its citation (its page, or the publication relaying it), in one line."""
    parts = [KIND_TEXT.get(kind or "vendor", kind or "")]
    if title:
        parts.append(f"document: {title}")
    if url:
        parts.append(f"source: {url}")
    if quote:
        parts.append(f'"{quote}"')
    if via_title:
        parts.append(f"via: {via_title}" + (f', "{via_quote}"' if via_quote else ""))
    return "; ".join(parts)


def fmt_number(value: float | None, decimals: int = 2) -> str:
    """A figure as stored, without padding zeros: 59.02, 57, 1311.72."""
    if value is None:
        return ""
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")


def fmt_calc(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def fmt_percent(value: float | None) -> str:
    return "" if value is None else f"{value * 100:.1f}%"


def fmt_ratio(value: float | None) -> str:
    return "" if value is None else f"×{value:.2f}"


def fmt_change(value: float | None) -> str:
    return "" if value is None else f"{value * 100:+.1f}%"


def iso_date(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)[:10]


_GITHUB = re.compile(r"^https?://github\.com/([^/]+)/([^/#?]+)(?:/(blob|tree)/[^/]+/(.+)|/(discussions|issues|pull)/(\d+))?")


def source_label(title: str | None, url: str | None) -> str:
    """A source named in a few words (its title, or its address shortened: "llama.cpp benches/dgx-spark.md",
    "llama.cpp discussion 16578"); the full address stays in the link."""
    if title:
        return title
    if not url:
        return ""
    m = _GITHUB.match(url)
    if m:
        repo = m.group(2)
        if m.group(4):
            return f"{repo} {m.group(4)}"
        if m.group(6):
            return f"{repo} {m.group(5).rstrip('s').replace('pull', 'pull request')} {m.group(6)}"
        return f"{m.group(1)}/{repo}"
    short = re.sub(r"^https?://(www\.)?", "", url).rstrip("/")
    return short if len(short) <= 48 else short[:47] + "…"


def fmt_options(options_json: str | None) -> str:
    try:
        options = json.loads(options_json or "{}")
    except json.JSONDecodeError:
        return options_json or ""
    return ", ".join(f"{k}={v}" for k, v in sorted(options.items()))


def fmt_lengths(r: Mapping) -> str:
    """llama-bench's notation: tg128, pp512, pp512+tg128, with "@ d4096" for a context depth."""
    phase, prompt, generated, depth = r["phase"], r["prompt_tokens"], r["generated_tokens"], r["context_depth"]
    if phase == "prompt":
        label = f"pp{prompt}"
    elif phase == "end_to_end":
        label = f"pp{prompt}+tg{generated}"
    else:
        label = f"tg{generated}" + (f" (after pp{prompt})" if prompt else "")
    return label + (f" @ d{depth}" if depth else "")


def fmt_concurrency(r: Mapping) -> str:
    users = r["users"]
    return f"{users} user{'s' if users != 1 else ''}, {'per user' if r['figure'] == 'per_user' else 'aggregate'}"


def fmt_users(value: Any) -> str:
    """1 user, 4 users, 1 or 2 users."""
    values = value if isinstance(value, (tuple, list)) else (value,)
    return f"{listing(value)} user{'s' if values != (1,) else ''}"


def fmt_software(r: Mapping) -> str:
    return f"{r['software']} {r['software_version']}"


# ---------------------------------------------------------------------------------------------------- SQL
# One size per file: where the reference cites a size for a model in a format (model_file.size_quote), a table holds
# the figures on that file: the view's file_size_gb is the cited size for a figure whose stated size describes it
# (tpsdb.files: llama-bench's 3.56 GiB = 3.82 GB is the cited 3.79 GB file), and a figure on another file is left
# out (`ingest` says so): a table that says "Q4_0 file 3.79 GB" holds exactly that.
_CITED_SIZE = """(NOT EXISTS (SELECT 1 FROM model_file c JOIN model cm ON cm.id = c.model_id
                  WHERE cm.name = measurement_full.model AND c.quantization = measurement_full.quantization
                    AND c.size_quote IS NOT NULL)
     OR EXISTS (SELECT 1 FROM model_file c JOIN model cm ON cm.id = c.model_id
                WHERE cm.name = measurement_full.model AND c.quantization = measurement_full.quantization
                  AND c.size_quote IS NOT NULL AND c.size_bytes / 1000000000.0 = measurement_full.file_size_gb))"""
_FILE_IS_CITED = """(f.size_quote IS NOT NULL OR NOT EXISTS (SELECT 1 FROM model_file c WHERE c.model_id = f.model_id
                     AND c.quantization = f.quantization AND c.size_quote IS NOT NULL))"""


# Only finite figures are published: an infinite or NaN tokens/s (stored before the validator refused them) is
# left out, and the table says how many were (NaN and infinity both fail this test on SQLite and PostgreSQL).
FINITE = "ABS(tokens_per_second) <= 1.7976931348623157e308"


_QUALIFYING = ["status = 'active'", "nature = 'measured'", FINITE]


def _fixed_clause(key: str, value: Any, params: dict[str, Any], expanding: list) -> str:
    """One fixed condition as SQL (a list means any of), its value bound into `params` (and `expanding`)."""
    if key not in FIXED_COLUMNS:  # the key becomes a column name in the SQL text
        raise KeyError(f"fixed.{key} is not a measurement_full column tables filter on")
    name = f"p_{key}"
    if isinstance(value, (tuple, list)):
        params[name] = list(value)
        expanding.append(bindparam(name, expanding=True))
        return f"{key} IN :{name}"
    params[name] = value
    return f"{key} = :{name}"


def _conditions(fixed: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> tuple[str, dict, list]:
    """The WHERE clause of a definition: active, measured, finite, on the cited file size, and every fixed
    condition (a list means any of)."""
    params: dict[str, Any] = {}
    expanding: list = []
    clauses = [*_QUALIFYING, _CITED_SIZE] + [_fixed_clause(key, value, params, expanding)
                                               for key, value in {**fixed, **(extra or {})}.items()]
    return " AND ".join(clauses), params, expanding


def _non_finite_note(conn: Connection, d: Definition) -> str | None:
    where, params, expanding = _conditions(d.fixed)
    sql = f"SELECT COUNT(*) FROM measurement_full WHERE {where.replace(FINITE, f'NOT ({FINITE})')}"
    statement = text(sql).bindparams(*expanding) if expanding else text(sql)
    n = conn.execute(statement, params).scalar_one()
    return (f"{n} figure{'s' if n > 1 else ''} matching this table hold{'s' if n == 1 else ''} a non-finite "
            "tokens/s (infinity or NaN) and are left out.") if n else None


def pick_figures(conn: Connection, d: Definition, partition: Sequence[str], extra: Mapping[str, Any] | None = None,
            windows: Mapping[str, str] | None = None) -> list[Mapping]:
    """One figure per group of `partition` columns, chosen by the definition's pick rule, in one query.

    The ranking runs on the matching rows' ids and sort keys only; the full rows (quote included) are read back for
    the chosen figures alone. Each result also carries `n_qualifying`, how many figures competed for its cell.
    """
    where, params, expanding = _conditions(d.fixed, extra)
    part = ", ".join(partition)
    extra_windows = "".join(f", {sql} OVER (PARTITION BY {part}) AS {name}" for name, sql in (windows or {}).items())
    target = "(n_qualifying + 1) / 2" if d.pick == "median" else "1"
    sql = f"""
        WITH ranked AS (
            SELECT measurement_id,
                   ROW_NUMBER() OVER (PARTITION BY {part} ORDER BY {_ORDER[d.pick]}) AS pick_rank,
                   COUNT(*) OVER (PARTITION BY {part}) AS n_qualifying{extra_windows}
            FROM measurement_full
            WHERE {where}
        )
        SELECT {', '.join('v.' + c for c in _VIEW_COLUMNS)}, r.n_qualifying{''.join(', r.' + n for n in windows or {})}
        FROM ranked r JOIN measurement_full v ON v.measurement_id = r.measurement_id
        WHERE r.pick_rank = {target}
        ORDER BY v.measurement_id
    """
    statement = text(sql).bindparams(*expanding) if expanding else text(sql)
    return list(conn.execute(statement, params).mappings())


# A figure is the same figure, whichever source it was read from, when its conditions and its value are the same
# (llama.cpp's benches/dgx-spark.md and discussion 16578 publish the same runs).
_SAME_FIGURE = ("hardware, model, quantization, file_size_gb, software, software_version, software_options, phase, "
                "prompt_tokens, generated_tokens, context_depth, users, figure, tokens_per_second")


def ranked_figures(conn: Connection, d: Definition) -> tuple[list[list[Mapping]], int]:
    """Every distinct qualifying figure, highest first (up to the definition's limit), each as the list of its
    copies (one per source that published it, first stored first), and how many distinct figures there are."""
    where, params, expanding = _conditions(d.fixed)
    limit = f"LIMIT {int(d.limit)}" if d.limit else ""
    sql = f"""
        WITH copies AS (
            SELECT measurement_id, tokens_per_second,
                   MIN(measurement_id) OVER (PARTITION BY {_SAME_FIGURE}) AS first_id
            FROM measurement_full WHERE {where}
        ), top AS (
            SELECT first_id, tokens_per_second, COUNT(*) OVER () AS n_total
            FROM copies WHERE measurement_id = first_id
            ORDER BY tokens_per_second DESC, first_id ASC {limit}
        )
        SELECT {', '.join('v.' + c for c in _VIEW_COLUMNS)}, t.n_total, t.first_id
        FROM top t JOIN copies c ON c.first_id = t.first_id JOIN measurement_full v ON v.measurement_id = c.measurement_id
        ORDER BY t.tokens_per_second DESC, t.first_id ASC, v.measurement_id ASC
    """
    statement = text(sql).bindparams(*expanding) if expanding else text(sql)
    figures: dict[int, list[Mapping]] = {}
    total = 0
    for r in conn.execute(statement, params).mappings():
        figures.setdefault(r["first_id"], []).append(r)
        total = r["n_total"]
    return list(figures.values()), total


def hardware_facts(conn: Connection, names: Iterable[str]) -> dict[str, Mapping]:
    names = list(names)
    if not names:
        return {}
    statement = text("SELECT name, memory_bandwidth_gbs, bandwidth_source_url, bandwidth_kind, bandwidth_quote, "
                     "bandwidth_source_title, bandwidth_via_title, bandwidth_via_quote, memory_gb FROM hardware "
                     "WHERE name IN :names").bindparams(bindparam("names", expanding=True))
    return {r["name"]: r for r in conn.execute(statement, {"names": names}).mappings()}


def read_model_files(conn: Connection, models: Any, quantizations: Any = None) -> list[Mapping]:
    """Model files of the fixed model(s) (and format(s)), with sizes and where the sizes come from."""
    models = list(models) if isinstance(models, (tuple, list)) else [models]
    sql = ("SELECT mo.name AS model, mo.params_b, mo.active_params_b, mo.mixture_of_experts, f.quantization, "
           "f.size_bytes, "
           f"f.size_source_url FROM model_file f JOIN model mo ON mo.id = f.model_id WHERE mo.name IN :models "
           f"AND {_FILE_IS_CITED}")
    params: dict[str, Any] = {"models": models}
    expanding = [bindparam("models", expanding=True)]
    if quantizations is not None:
        sql += " AND f.quantization IN :quants"
        params["quants"] = list(quantizations) if isinstance(quantizations, (tuple, list)) else [quantizations]
        expanding.append(bindparam("quants", expanding=True))
    return list(conn.execute(text(sql + " ORDER BY mo.name, f.quantization, f.size_bytes").bindparams(*expanding),
                             params).mappings())


# --------------------------------------------------------------------------------------- what is held fixed
def listing(value: Any) -> str:
    return " or ".join(str(v) for v in value) if isinstance(value, (tuple, list)) else str(value)


def held_fixed(conn: Connection, d: Definition, varies: Mapping[str, str],
               files: list[Mapping] | None = None) -> list[tuple[str, str]]:
    """The table's statement of its conditions: hardware and the six fields, each fixed or how it varies.

    `files`: the fixed model's files, when the builder has already read them."""
    f = d.fixed

    def said(key: str, fixed_text: str | None, default: str = "varies (shown per row)") -> str:
        return varies.get(key) or (fixed_text if fixed_text is not None else default)

    model_text = None
    if "model" in f and "model" not in varies:
        if files is None:
            files = read_model_files(conn, f["model"], f.get("quantization") or (d.columns or None))
        parts = [listing(f["model"])]
        params = sorted({r["params_b"] for r in files if r["params_b"]})
        active = sorted({r["active_params_b"] for r in files if r["active_params_b"]})
        if params:
            parts.append(f"{', '.join(fmt_number(p) for p in params)} B parameters"
                         + (f" ({', '.join(fmt_number(a) for a in active)} B active per token)" if active else ""))
        sizes = [f"{r['quantization']} file {fmt_number(r['size_bytes'] / 1e9)} GB" for r in files if r["size_bytes"]]
        if sizes:
            parts.append("; ".join(sizes))
        model_text = " · ".join(parts)
    software_text = None
    if "software" in f:
        software_text = listing(f["software"]) + (
            f" {listing(f['software_version'])}" if "software_version" in f
            else "; version varies (shown per row; the pick rule chooses)")
    elif "software_version" in f:
        software_text = f"version {listing(f['software_version'])}"
    length_parts = []
    for key, label in (("phase", "phase"), ("prompt_tokens", "prompt tokens"), ("generated_tokens", "generated tokens"),
                       ("context_depth", "context depth")):
        length_parts.append(f"{label} {listing(f[key]).replace('_', '-')}" if key in f else f"{label} varies")
    users = fmt_users(f["users"]) if "users" in f else "users vary"
    figure = {"per_user": "per-user figure", "aggregate": "aggregate figure"}.get(f.get("figure"), "figure "
              + (listing(f["figure"]) if "figure" in f else "per user or aggregate (shown per row)"))
    return [
        ("Hardware", said("hardware", listing(f["hardware"]) if "hardware" in f else None)),
        ("Model", said("model", model_text)),
        ("Quantization", said("quantization", listing(f["quantization"]) if "quantization" in f else None)),
        ("Software and version", said("software", software_text)),
        ("Lengths", said("lengths", ", ".join(length_parts))),
        ("Concurrency", said("concurrency", f"{users}, {figure}")),
        ("Nature", "measured: every figure is a measurement with its procedure and source (see its footnote); "
                   "calc. columns are computed by tpsdb and never fill a measured cell"),
    ]


# ------------------------------------------------------------------------------------------------ helpers
def measured_cell(notes: Footnotes, r: Mapping | None) -> Cell:
    """A measured cell: the figure as stored and its footnote; empty (never filled otherwise) when none qualifies."""
    if r is None:
        return Cell(kind="measured")
    n = r.get("n_qualifying", 1)
    picked = f"; the pick rule chose it among {n} qualifying figures" if n > 1 else ""
    return Cell(text=fmt_number(r["tokens_per_second"]), value=r["tokens_per_second"], kind="measured",
                footnote=notes.measurement(r),
                hint=f"{fmt_software(r)} · {fmt_lengths(r)} · {fmt_concurrency(r)}{picked}")


def calc_cell(value: float | None, formatter, hint: str) -> Cell:
    return Cell(text=formatter(value), value=None if value is None else round(value, 6), kind="calc",
                hint=hint if value is not None else None)


def text_cell(value: Any, href: str | None = None, hint: str | None = None, kind: str = "text") -> Cell:
    return Cell(text="" if value is None else str(value), value=value, kind=kind, href=href, hint=hint)


def _pick_note(d: Definition) -> str:
    reason = f" Why: {d.pick_reason}" if d.pick_reason else ""
    return (f"When several validated measurements qualify for a cell, it shows {d.pick_text} (pick = \"{d.pick}\"). "
            f"{TIES_TEXT}{reason}")


def common_notes(d: Definition, calc: bool = True) -> list[str]:
    notes = [_pick_note(d)]
    if calc:
        notes.append(CALC_NOTE)
    return notes


def _decimals(value: float) -> int:
    """How many decimals a figure has as stored (up to 2): 95 → 0, 151.9 → 1, 81.11 → 2."""
    return len(fmt_number(value).partition(".")[2])


def align_decimals(columns: Sequence[Column], rows: Sequence[dict[str, Cell]]) -> None:
    """Every number of a measured or reference column is written with the same decimals (95.00 next to 81.11,
    never 95), those of the most precise figure in the column; the figure itself is unchanged."""
    for c in columns:
        if c.kind not in ("measured", "reference"):
            continue
        cells = [row[c.key] for row in rows if c.key in row and isinstance(row[c.key].value, (int, float))]
        places = max((_decimals(cell.value) for cell in cells), default=0)
        for cell in cells:
            plain = fmt_number(cell.value)
            if cell.text.startswith(plain):
                cell.text = f"{cell.value:.{places}f}" + cell.text[len(plain):]


def empty_reason(conn: Connection, d: Definition) -> str:
    """What keeps a table empty, named: the first of its fixed conditions (in the order a reader narrows down: machine,
    model, format, program, lengths, users) that no validated figure meets together with the ones before it."""
    base = _QUALIFYING
    applied: list[str] = []
    params: dict[str, Any] = {}
    expanding = []

    def count(clauses: list[str]) -> int:
        sql = "SELECT COUNT(*) FROM measurement_full WHERE " + " AND ".join(clauses)
        statement = text(sql).bindparams(*expanding) if expanding else text(sql)
        return conn.execute(statement, params).scalar_one()

    before = count(base)  # the figures meeting the conditions applied so far
    if before == 0:
        return ("The database holds no validated measurement at all: `tpsdb refresh` (reading the enabled sources) "
                "or `tpsdb add` would fill it.")
    said: list[str] = []
    for key in FIXED_COLUMNS:
        if key not in d.fixed:
            continue
        value = d.fixed[key]
        clause = _fixed_clause(key, value, params, expanding)
        now = count(base + applied + [clause])
        if now == 0:
            within = f" with {', '.join(said)}" if said else ""
            return (f"Missing: a figure with {key.replace('_', ' ')} {listing(value)}. The database holds {before} "
                    f"validated figure{'s' if before != 1 else ''}{within}, none with {key.replace('_', ' ')} "
                    f"{listing(value)}; a source measuring it (added with `tpsdb add` or a refreshed source) would "
                    "fill this table.")
        applied.append(clause)
        said.append(f"{key.replace('_', ' ')} {listing(value)}")
        before = now
    return ("Missing: a figure on the model file size the reference cites; the figures meeting every condition were "
            "recorded on another file size of that model and format.")


def finish(conn: Connection, d: Definition, columns, rows, fixed, notes, footnotes: Footnotes, chart=None,
            total=None) -> Table:
    align_decimals(columns, rows)
    table = Table(definition=d, columns=columns, rows=rows, held_fixed=fixed, notes=notes,
                  footnotes=footnotes.items, chart=chart, total_rows=total)
    if table.empty:
        table.notes.insert(0, f"{NO_MEASUREMENT} {empty_reason(conn, d)}")
    return table


_KIND_MARK = {"vendor": "", "relayed": " (relayed)", "stated": " (stated)"}


def bandwidth_cell(notes: Footnotes, hardware: str, bandwidth: float | None, cited: Mapping | None) -> Cell:
    """The bandwidth with its kind: a vendor value plain, a relayed or stated one marked in the cell, each with its
    machine's own footnote."""
    if bandwidth is None or cited is None:
        return Cell(kind="reference", hint="memory bandwidth unknown: no cited source in the hardware reference")
    kind = cited.get("bandwidth_kind") or "vendor"
    return Cell(text=fmt_number(bandwidth) + _KIND_MARK.get(kind, f" ({kind})"), value=bandwidth, kind="reference",
                footnote=notes.bandwidth(hardware, bandwidth, cited),
                hint=f"{hardware}: {fmt_number(bandwidth)} GB/s, {KIND_TEXT.get(kind, kind)}")


def build_table(conn: Connection, d: Definition, any_non_finite: bool = True) -> Table:
    """The table of `d`. `any_non_finite=False` (from `has_non_finite`, asked once for many tables) skips the count
    of the table's non-finite figures, a query over the joined view per table."""
    table = kind_of(d.kind).build(conn, d)
    if any_non_finite and (note := _non_finite_note(conn, d)):
        table.notes.append(note)
    # The header comes with the figure (source.quote_header, read by the table reader). A figure stored before it was
    # kept (an older database or seed: re-reading it finds the same figure, unchanged) has none, and only for those
    # is the archived snapshot read (quotes.py); a seed rebuilt by data/build-seed.sh stores every header.
    rows = {f.measurement_id: f.quote for f in table.footnotes
            if f.measurement_id and f.quote_header is None and is_table_row(f.quote)}
    headers = quote_headers(conn, rows)
    for f in table.footnotes:  # a header is shown above one quoted row of its table, never above other text
        f.quote_header = (f.quote_header or headers.get(f.measurement_id)) if is_table_row(f.quote) else None
    return table


def has_non_finite(conn: Connection) -> bool:
    """Whether any figure holds a non-finite tokens/s: one scan of the measurement table, no join."""
    return bool(conn.execute(text(f"SELECT EXISTS (SELECT 1 FROM measurement WHERE NOT ({FINITE}))")).scalar_one())


def build_tables(engine, definitions: Iterable[Definition]) -> list[Table]:
    """Every table of the definitions, read in one read-only transaction (one consistent view of the data)."""
    with engine.connect() as conn:
        any_non_finite = has_non_finite(conn)
        return [build_table(conn, d, any_non_finite) for d in definitions]
