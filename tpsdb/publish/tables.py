"""Building the published tables from the database, one function per table kind.

Everything is read through the `measurement_full` view. Only measurements with `status = 'active'` and
`nature = 'measured'` can fill a cell; rejections are never read. The choice among several qualifying figures is made
in SQL (a window function per cell group, see `_picked`), so only the figures that end up in a cell leave the
database, whatever its size. Columns labelled "calc." are computed here from those figures and their inputs; they are
never put in a measured column, and a measured column with no qualifying figure stays empty.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from sqlalchemy import Connection, bindparam, text

from ..ceiling import ModelFacts, active_share, ceiling_of, choose_bandwidth
from .definitions import FIXED_COLUMNS, TIES_TEXT, Definition
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


class _Footnotes:
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
            retrieved_at=_date(r["retrieved_at"]), published_at=_date(r["published_at"]), quote=r["quote"],
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


def _date(value: Any) -> str | None:
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
    return f"{_listing(value)} user{'s' if values != (1,) else ''}"


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
_FINITE = "ABS(tokens_per_second) <= 1.7976931348623157e308"


_QUALIFYING = ["status = 'active'", "nature = 'measured'", _FINITE]


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
    sql = f"SELECT COUNT(*) FROM measurement_full WHERE {where.replace(_FINITE, f'NOT ({_FINITE})')}"
    statement = text(sql).bindparams(*expanding) if expanding else text(sql)
    n = conn.execute(statement, params).scalar_one()
    return (f"{n} figure{'s' if n > 1 else ''} matching this table hold{'s' if n == 1 else ''} a non-finite "
            "tokens/s (infinity or NaN) and are left out.") if n else None


def _picked(conn: Connection, d: Definition, partition: Sequence[str], extra: Mapping[str, Any] | None = None,
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


def _ranked(conn: Connection, d: Definition) -> tuple[list[list[Mapping]], int]:
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


def _hardware_facts(conn: Connection, names: Iterable[str]) -> dict[str, Mapping]:
    names = list(names)
    if not names:
        return {}
    statement = text("SELECT name, memory_bandwidth_gbs, bandwidth_source_url, bandwidth_kind, bandwidth_quote, "
                     "bandwidth_source_title, bandwidth_via_title, bandwidth_via_quote, memory_gb FROM hardware "
                     "WHERE name IN :names").bindparams(bindparam("names", expanding=True))
    return {r["name"]: r for r in conn.execute(statement, {"names": names}).mappings()}


def _model_files(conn: Connection, models: Any, quantizations: Any = None) -> list[Mapping]:
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
def _listing(value: Any) -> str:
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
            files = _model_files(conn, f["model"], f.get("quantization") or (d.columns or None))
        parts = [_listing(f["model"])]
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
        software_text = _listing(f["software"]) + (
            f" {_listing(f['software_version'])}" if "software_version" in f
            else "; version varies (shown per row; the pick rule chooses)")
    elif "software_version" in f:
        software_text = f"version {_listing(f['software_version'])}"
    length_parts = []
    for key, label in (("phase", "phase"), ("prompt_tokens", "prompt tokens"), ("generated_tokens", "generated tokens"),
                       ("context_depth", "context depth")):
        length_parts.append(f"{label} {_listing(f[key]).replace('_', '-')}" if key in f else f"{label} varies")
    users = fmt_users(f["users"]) if "users" in f else "users vary"
    figure = {"per_user": "per-user figure", "aggregate": "aggregate figure"}.get(f.get("figure"), "figure "
              + (_listing(f["figure"]) if "figure" in f else "per user or aggregate (shown per row)"))
    return [
        ("Hardware", said("hardware", _listing(f["hardware"]) if "hardware" in f else None)),
        ("Model", said("model", model_text)),
        ("Quantization", said("quantization", _listing(f["quantization"]) if "quantization" in f else None)),
        ("Software and version", said("software", software_text)),
        ("Lengths", said("lengths", ", ".join(length_parts))),
        ("Concurrency", said("concurrency", f"{users}, {figure}")),
        ("Nature", "measured: every figure is a measurement with its procedure and source (see its footnote); "
                   "calc. columns are computed by tpsdb and never fill a measured cell"),
    ]


# ------------------------------------------------------------------------------------------------ helpers
def _measured(notes: _Footnotes, r: Mapping | None) -> Cell:
    """A measured cell: the figure as stored and its footnote; empty (never filled otherwise) when none qualifies."""
    if r is None:
        return Cell(kind="measured")
    n = r.get("n_qualifying", 1)
    picked = f"; the pick rule chose it among {n} qualifying figures" if n > 1 else ""
    return Cell(text=fmt_number(r["tokens_per_second"]), value=r["tokens_per_second"], kind="measured",
                footnote=notes.measurement(r),
                hint=f"{fmt_software(r)} · {fmt_lengths(r)} · {fmt_concurrency(r)}{picked}")


def _calc(value: float | None, formatter, hint: str) -> Cell:
    return Cell(text=formatter(value), value=None if value is None else round(value, 6), kind="calc",
                hint=hint if value is not None else None)


def _text(value: Any, href: str | None = None, hint: str | None = None, kind: str = "text") -> Cell:
    return Cell(text="" if value is None else str(value), value=value, kind=kind, href=href, hint=hint)


def _pick_note(d: Definition) -> str:
    reason = f" Why: {d.pick_reason}" if d.pick_reason else ""
    return (f"When several validated measurements qualify for a cell, it shows {d.pick_text} (pick = \"{d.pick}\"). "
            f"{TIES_TEXT}{reason}")


def _common_notes(d: Definition, calc: bool = True) -> list[str]:
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
            return (f"Missing: a figure with {key.replace('_', ' ')} {_listing(value)}. The database holds {before} "
                    f"validated figure{'s' if before != 1 else ''}{within}, none with {key.replace('_', ' ')} "
                    f"{_listing(value)}; a source measuring it (added with `tpsdb add` or a refreshed source) would "
                    "fill this table.")
        applied.append(clause)
        said.append(f"{key.replace('_', ' ')} {_listing(value)}")
        before = now
    return ("Missing: a figure on the model file size the reference cites; the figures meeting every condition were "
            "recorded on another file size of that model and format.")


def _finish(conn: Connection, d: Definition, columns, rows, fixed, notes, footnotes: _Footnotes, chart=None,
            total=None) -> Table:
    align_decimals(columns, rows)
    table = Table(definition=d, columns=columns, rows=rows, held_fixed=fixed, notes=notes,
                  footnotes=footnotes.items, chart=chart, total_rows=total)
    if table.empty:
        table.notes.insert(0, f"{NO_MEASUREMENT} {empty_reason(conn, d)}")
    return table


_KIND_MARK = {"vendor": "", "relayed": " (relayed)", "stated": " (stated)"}


def _bandwidth_cell(notes: _Footnotes, hardware: str, bandwidth: float | None, cited: Mapping | None) -> Cell:
    """The bandwidth with its kind: a vendor value plain, a relayed or stated one marked in the cell, each with its
    machine's own footnote."""
    if bandwidth is None or cited is None:
        return Cell(kind="reference", hint="memory bandwidth unknown: no cited source in the hardware reference")
    kind = cited.get("bandwidth_kind") or "vendor"
    return Cell(text=fmt_number(bandwidth) + _KIND_MARK.get(kind, f" ({kind})"), value=bandwidth, kind="reference",
                footnote=notes.bandwidth(hardware, bandwidth, cited),
                hint=f"{hardware}: {fmt_number(bandwidth)} GB/s, {KIND_TEXT.get(kind, kind)}")


# ------------------------------------------------------------------------------------ 1–2. machines, ceiling
def _file_ceiling(machine: Mapping | None, model_file: Mapping | None):
    """tpsdb.ceiling's maximum for one user generating on this file on this machine (no figure of its own)."""
    bandwidth = choose_bandwidth(machine["memory_bandwidth_gbs"] if machine else None,
                                 machine["bandwidth_kind"] if machine else None, None)
    if model_file is None:
        return ceiling_of(bandwidth, None, active_share(None, None, None, None))
    facts = ModelFacts(model_file["params_b"], model_file["active_params_b"], model_file["mixture_of_experts"])
    share = active_share(model_file["model"], None, None, facts)
    return ceiling_of(bandwidth, model_file["size_bytes"] / 1e9, share)


def build_machines(conn: Connection, d: Definition) -> Table:
    """One model file, one test: one row per machine with its memory bandwidth and the figure picked for it.

    The ceiling kind adds the computed maximum (bandwidth ÷ bytes read per token) and the share of it reached.
    """
    ceiling = d.kind == "ceiling"
    picked = {r["hardware"]: r for r in _picked(conn, d, ["hardware"])}
    notes = _Footnotes()
    if d.rows:
        names = list(d.rows)
    else:
        names = sorted(picked, key=lambda h: (-picked[h]["tokens_per_second"], h))
    facts = _hardware_facts(conn, [n for n in names if n not in picked])
    model_files = _model_files(conn, d.fixed["model"], d.fixed["quantization"])
    files = [r for r in model_files if r["size_bytes"]]
    only_file = files[0] if len(files) == 1 else None

    columns = [Column("hardware", "Hardware"),
               Column("bandwidth_gbs", "Memory bandwidth (GB/s)", "reference",
                      "vendor (the maker's page), relayed (the maker's value as a publication gives it) or stated "
                      "(by a source that is not the maker): each machine's footnote says which and cites it"),
               Column("tokens_per_second", "Measured tokens/s", "measured")]
    if ceiling:
        columns += [Column("ceiling_tps", "Max. tokens/s (calc.)", "calc",
                           "memory bandwidth ÷ bytes read per token (file size × active share)"),
                    Column("share", "Share of max. reached (calc.)", "calc", "measured ÷ max.")]
    columns += [Column("software", "Software"), Column("figures", "Qualifying figures")]

    rows, points, reads = [], [], Counter()
    for name in names:
        r = picked.get(name)
        if r is not None:  # the view's ceiling columns: tpsdb.ceiling's rule on the figure's stored facts
            bandwidth, cited = r["memory_bandwidth_gbs"], r
            size, share, max_tps = r["file_size_gb"], r["read_share"], r["calc_ceiling_tps"]
        else:  # a machine without a figure: the same rule on the machine's and the file's facts
            fact = facts.get(name)
            cited = fact
            size = only_file["size_bytes"] / 1e9 if only_file else None
            computed = _file_ceiling(fact, only_file)
            bandwidth = computed.bandwidth.gbs if computed.bandwidth else None
            share, max_tps = computed.share.stored, computed.value
        if d.require_bandwidth and bandwidth is None:
            continue
        row = {"hardware": _text(name, hint=None if (r or name in facts) else "not in the database"),
               "bandwidth_gbs": _bandwidth_cell(notes, name, bandwidth, cited),
               "tokens_per_second": _measured(notes, r)}
        if ceiling:
            formula = (f"{fmt_number(bandwidth)} GB/s ÷ {fmt_number(size)} GB" if share == 1.0 else
                       f"{fmt_number(bandwidth)} GB/s ÷ ({fmt_number(size)} GB × {share:.4f} active share)"
                       if share is not None else "the active share of this mixture of experts is unknown")
            row["ceiling_tps"] = _calc(max_tps, fmt_calc, f"{formula} = {fmt_calc(max_tps)} tokens/s")
            reached = r["tokens_per_second"] / max_tps if (r is not None and max_tps) else None
            row["share"] = _calc(reached, fmt_percent,
                                 f"{fmt_number(r['tokens_per_second']) if r else ''} ÷ {fmt_calc(max_tps)}")
            if size and share is not None:
                reads[round(size * share, 4)] += 1
        row["software"] = _text(fmt_software(r) if r else None)
        row["figures"] = _text(r["n_qualifying"] if r else 0)
        rows.append(row)
        if r is not None and bandwidth:
            points.append({"label": name, "bandwidth_gbs": bandwidth, "tokens_per_second": r["tokens_per_second"],
                           "bandwidth_kind": r["bandwidth_kind"] or "vendor"})
            if not ceiling and size and share is not None:
                reads[round(size * share, 4)] += 1

    table_notes = _common_notes(d, calc=ceiling)
    if ceiling:
        table_notes.append("Max. (calc.) = memory bandwidth ÷ bytes read per token. A dense model reads its whole "
                           "file per token; a mixture-of-experts model about its active share (active ÷ total "
                           "parameters) of it. It is a ceiling never reached, not a prediction.")
    table_notes.append("Memory bandwidths are of three kinds, each cited in its machine's own footnote: vendor (the "
                       "maker's page), relayed (the maker's value as a publication gives it, marked \"relayed\") and "
                       "stated (by a source that is not the maker, such as a thread's table, marked \"stated\"). A "
                       "maker's value is preferred, then a relayed one, then a stated one.")
    if d.require_bandwidth:
        table_notes.append("Machines whose memory bandwidth has no cited source are left out (require_bandwidth).")
    read_gb = reads.most_common(1)[0][0] if reads else None
    chart = {"type": "bandwidth", "points": points, "read_gb": read_gb,
             "title": f"{_listing(d.fixed['model'])} {_listing(d.fixed['quantization'])}: measured vs memory bandwidth"}
    varies = {"hardware": "one machine per row"}
    return _finish(conn, d, columns, rows, held_fixed(conn, d, varies, model_files), table_notes, notes, chart)


# --------------------------------------------------------------------------------------------- 3. quantization
def build_quantization(conn: Connection, d: Definition) -> Table:
    """Formats side by side: one row per machine, one measured column per format, speed-ups and size ratios (calc.)."""
    formats, base = list(d.columns), d.baseline
    picked = _picked(conn, d, ["hardware", "quantization"], extra={"quantization": tuple(formats)})
    cells: dict[str, dict[str, Mapping]] = {}
    for r in picked:
        cells.setdefault(r["hardware"], {})[r["quantization"]] = r
    if d.rows:
        names = list(d.rows)
    else:
        def order(h: str):
            b = cells[h].get(base)
            return (b is None, -(b["tokens_per_second"] if b else 0), h)
        names = sorted(cells, key=order)
    others = [q for q in formats if q != base]
    notes = _Footnotes()
    columns = [Column("hardware", "Hardware")]
    columns += [Column(f"tps_{q}", f"{q} tokens/s", "measured") for q in formats]
    columns += [Column(f"speedup_{q}", f"{q} speed ÷ {base} (calc.)", "calc", f"measured {q} ÷ measured {base}")
                for q in others]
    columns += [Column(f"size_{q}", f"{base} size ÷ {q} size (calc.)", "calc", "file sizes of the measured files")
                for q in others]
    columns.append(Column("software", "Software"))
    rows, chart_rows = [], []
    ideal: dict[str, float] = {}  # the file-size ratio the chart marks (the files are held fixed: one per format)
    for name in names:
        by_q = cells.get(name, {})
        row = {"hardware": _text(name)}
        for q in formats:
            row[f"tps_{q}"] = _measured(notes, by_q.get(q))
        b = by_q.get(base)
        speedups = {}
        for q in others:
            o = by_q.get(q)
            value = o["tokens_per_second"] / b["tokens_per_second"] if (o and b) else None
            speedups[q] = value
            row[f"speedup_{q}"] = _calc(value, fmt_ratio, f"{fmt_number(o['tokens_per_second']) if o else ''} ÷ "
                                                          f"{fmt_number(b['tokens_per_second']) if b else ''}")
        for q in others:
            o = by_q.get(q)
            value = b["file_size_gb"] / o["file_size_gb"] if (o and b and o["file_size_gb"]) else None
            if value is not None:
                ideal.setdefault(q, value)
            row[f"size_{q}"] = _calc(value, fmt_ratio, f"{fmt_number(b['file_size_gb']) if b else ''} GB ÷ "
                                                       f"{fmt_number(o['file_size_gb']) if o else ''} GB")
        row["software"] = _text(", ".join(dict.fromkeys(fmt_software(r) for r in by_q.values())) or None)
        rows.append(row)
        if any(v is not None for v in speedups.values()):
            chart_rows.append({"label": name, "speedups": speedups})
    varies = {"quantization": f"one format per column: {', '.join(formats)} (ratios relative to {base})",
              "hardware": _listing(d.fixed["hardware"]) if "hardware" in d.fixed else "one machine per row"}
    table_notes = _common_notes(d)
    table_notes.append("Each cell is picked on its own; when the software version is not held fixed, the footnotes "
                       "say which version each figure comes from.")
    chart = {"type": "speedup", "rows": chart_rows, "formats": others, "baseline": base, "ideal": ideal,
             "title": f"{_listing(d.fixed['model'])}: generation speed-up over {base} (calc.)"}
    return _finish(conn, d, columns, rows, held_fixed(conn, d, varies), table_notes, notes, chart)


# ------------------------------------------------------------------------------------------------ 4. versions
def build_versions(conn: Connection, d: Definition) -> Table:
    """One machine and model file across the versions (and speed-changing options) of one program, oldest first."""
    formats = list(d.columns) if d.columns else [d.fixed["quantization"]]
    formats = [f for v in formats for f in (v if isinstance(v, tuple) else (v,))]
    extra = {"quantization": tuple(formats)} if d.columns else {}
    if d.rows:
        extra["software_version"] = tuple(d.rows)
    picked = _picked(conn, d, ["software_version", "software_options", "quantization"], extra=extra,
                     windows={"first_seen": "MIN(COALESCE(published_at, retrieved_at))"})
    groups: dict[tuple[str, str], dict[str, Mapping]] = {}
    for r in picked:
        groups.setdefault((r["software_version"], r["software_options"]), {})[r["quantization"]] = r

    def first_seen(key):
        return min(_date(r["first_seen"]) or "" for r in groups[key].values())

    numbers = _build_numbers(conn)

    def build(key):
        r = next(iter(groups[key].values()))
        return r["build_number"] if r["build_number"] is not None else numbers(r["build_commit"])

    keys = list(groups)
    ordered = True
    if d.rows:
        position = {v: i for i, v in enumerate(d.rows)}
        keys.sort(key=lambda k: (position[k[0]], k[1]))
        keys += [(v, None) for v in d.rows if not any(k[0] == v for k in keys)]
        order_note = "Rows are in the order the definition lists the versions."
    elif all(build(k) is not None for k in keys):
        keys.sort(key=lambda k: (build(k), k[0], k[1]))
        order_note = "Rows are in build-number order (oldest first)."
    else:
        # A post's date says when a figure was published, not when its build was made (the 4167 scoreboard gives
        # four builds the date of the opening post): without build numbers the order is unknown, and said so.
        ordered = False
        keys.sort(key=lambda k: (k[0], k[1] or ""))
        unnumbered = ", ".join(sorted({k[0] for k in keys if build(k) is None}))
        order_note = (f"The order of these versions is unknown (no known build number for {unnumbered}): rows "
                      "are listed by version name and no change against an oldest version is computed. "
                      "\"First figure\" is the date of the first published figure, not of the build.")
    notes = _Footnotes()
    columns = [Column("version", "Version"), Column("options", "Options"), Column("first_seen", "First figure")]
    columns += [Column(f"tps_{q}", f"{q} tokens/s", "measured") for q in formats]
    if ordered:
        columns += [Column(f"change_{q}", f"{q} vs oldest (calc.)", "calc", "change from the first row with a figure")
                    for q in formats]
    rows = []
    oldest: dict[str, float] = {}
    for key in keys:
        by_q = groups.get(key, {})
        row = {"version": _text(key[0]), "options": _text(fmt_options(key[1]) if key[1] else None),
               "first_seen": _text(first_seen(key) if by_q else None)}
        for q in formats:
            row[f"tps_{q}"] = _measured(notes, by_q.get(q))
        for q in formats if ordered else ():
            r = by_q.get(q)
            value = None
            if r is not None:
                oldest.setdefault(q, r["tokens_per_second"])
                value = r["tokens_per_second"] / oldest[q] - 1
            row[f"change_{q}"] = _calc(value, fmt_change, f"{fmt_number(r['tokens_per_second']) if r else ''} ÷ "
                                                          f"{fmt_number(oldest.get(q))} − 1")
        rows.append(row)
    varies = {"software": f"{_listing(d.fixed['software'])}, one version (and set of options) per row"}
    if d.columns:
        varies["quantization"] = f"one format per column: {', '.join(formats)}"
    table_notes = _common_notes(d) + [order_note]
    return _finish(conn, d, columns, rows, held_fixed(conn, d, varies), table_notes, notes)


def _build_numbers(conn: Connection):
    """A lookup: commit -> the build number another version string of the database gives it ("b1569 (8e672efe)"),
    or None. Commits are compared on their common prefix (posts abbreviate them to 7-9 characters)."""
    known = conn.execute(text("SELECT DISTINCT build_commit, build_number FROM software "
                              "WHERE build_commit IS NOT NULL AND build_number IS NOT NULL")).all()

    def number(commit: str | None) -> int | None:
        if not commit:
            return None
        found = {n for c, n in known if c.startswith(commit) or commit.startswith(c)}
        return found.pop() if len(found) == 1 else None
    return number


# ------------------------------------------------------------------------------------------------ 5. software
def build_software(conn: Connection, d: Definition) -> Table:
    """One model on one machine across programs (llama.cpp, Ollama, vLLM, SGLang, MLX…): one row per program."""
    partition = ["software"] + ([] if "quantization" in d.fixed else ["quantization"])
    extra = {"software": tuple(d.rows)} if d.rows else None
    picked = _picked(conn, d, partition, extra=extra)
    if d.rows:
        position = {s: i for i, s in enumerate(d.rows)}
        picked.sort(key=lambda r: (position[r["software"]], -r["tokens_per_second"]))
        present = {r["software"] for r in picked}
        entries = [(r["software"], r) for r in picked] + [(s, None) for s in d.rows if s not in present]
        entries.sort(key=lambda e: position[e[0]])
    else:
        entries = [(r["software"], r) for r in sorted(picked, key=lambda r: (-r["tokens_per_second"], r["software"]))]
    notes = _Footnotes()
    columns = [Column("software", "Software"), Column("version", "Version"), Column("options", "Options")]
    if "quantization" not in d.fixed:
        columns.append(Column("quantization", "Quantization"))
    columns += [Column("lengths", "Lengths"), Column("tokens_per_second", "Measured tokens/s", "measured"),
                Column("figures", "Qualifying figures")]
    rows = []
    for name, r in entries:
        row = {"software": _text(name), "version": _text(r["software_version"] if r else None),
               "options": _text(fmt_options(r["software_options"]) if r else None)}
        if "quantization" not in d.fixed:
            row["quantization"] = _text(r["quantization"] if r else None)
        row["lengths"] = _text(fmt_lengths(r) if r else None)
        row["tokens_per_second"] = _measured(notes, r)
        row["figures"] = _text(r["n_qualifying"] if r else 0)
        rows.append(row)
    varies = {"software": "one program per row (its version as picked)"}
    return _finish(conn, d, columns, rows, held_fixed(conn, d, varies), _common_notes(d, calc=False), notes)


# --------------------------------------------------------------------------------------------- 6. concurrency
def build_concurrency(conn: Connection, d: Definition) -> Table:
    """One user, then N: per-user and aggregate figures as measured, the per-user share and the gain (calc.)."""
    extra = {"users": tuple(d.rows)} if d.rows else None
    picked = _picked(conn, d, ["users", "figure"], extra=extra)
    cells: dict[int, dict[str, Mapping]] = {}
    for r in picked:
        cells.setdefault(r["users"], {})[r["figure"]] = r
    user_counts = list(d.rows) if d.rows else sorted(cells)
    single = cells.get(1, {})
    reference = single.get("aggregate") or single.get("per_user")
    notes = _Footnotes()
    columns = [Column("users", "Users"),
               Column("per_user", "Per user tokens/s", "measured"),
               Column("aggregate", "Aggregate tokens/s", "measured"),
               Column("per_user_calc", "Per user = aggregate ÷ users (calc.)", "calc"),
               Column("gain", "Aggregate gain over 1 user (calc.)", "calc",
                      "aggregate figure ÷ the one-user figure"),
               Column("software", "Software")]
    rows, series = [], []
    for n in user_counts:
        by_f = cells.get(n, {})
        agg, per = by_f.get("aggregate"), by_f.get("per_user")
        if n == 1:  # one user: what that user sees is the whole output, so each figure is also the other
            per, agg = per or agg, agg or per
        row = {"users": _text(n), "per_user": _measured(notes, per), "aggregate": _measured(notes, agg)}
        share = agg["tokens_per_second"] / n if agg else None
        row["per_user_calc"] = _calc(share, fmt_calc, f"{fmt_number(agg['tokens_per_second']) if agg else ''} ÷ {n}")
        gain = agg["tokens_per_second"] / reference["tokens_per_second"] if (agg and reference) else None
        row["gain"] = _calc(gain, fmt_ratio, f"{fmt_number(agg['tokens_per_second']) if agg else ''} ÷ "
                                             f"{fmt_number(reference['tokens_per_second']) if reference else ''}")
        row["software"] = _text(", ".join(dict.fromkeys(fmt_software(r) for r in by_f.values())) or None)
        rows.append(row)
        series.append({"users": n, "aggregate": agg["tokens_per_second"] if agg else None,
                       "per_user": per["tokens_per_second"] if per else None, "per_user_calc": share})
    table_notes = _common_notes(d)
    table_notes.append("The gain divides each aggregate figure by the one-user figure of the same conditions (the "
                       "aggregate at 1 user when there is one, else the per-user figure at 1 user); with one user the "
                       "two are the same quantity.")
    if reference is None:
        table_notes.append("No one-user figure qualifies, so no gain can be computed.")
    missing = [str(n) for n in user_counts if n != 1 and "per_user" not in cells.get(n, {})]
    if missing:
        table_notes.append(f"Per user tokens/s (measured) is empty at {', '.join(missing)} users: no source measured "
                           "what one user sees there (llama-batched-bench reports the aggregate only); a per-user "
                           "figure, e.g. from a serving benchmark, would fill it. The calc. column divides the "
                           "aggregate instead. At one user the two figures are the same.")
    varies = {"concurrency": "one number of concurrent users per row; per-user and aggregate figures in their own "
                             "columns"}
    chart = {"type": "concurrency", "series": series,
             "title": f"{_listing(d.fixed['model'])} on {_listing(d.fixed['hardware'])}: aggregate vs per user"}
    return _finish(conn, d, columns, rows, held_fixed(conn, d, varies), table_notes, notes, chart)


# ------------------------------------------------------------------------------------------------- 7. sources
def build_sources(conn: Connection, d: Definition) -> Table:
    """Every source that measured one machine (within the fixed conditions), with one example figure each."""
    picked = _picked(conn, d, ["source_home_url"])
    picked.sort(key=lambda r: (-r["n_qualifying"], r["source_home_url"]))
    total = len(picked)
    if d.limit:
        picked = picked[: d.limit]
    notes = _Footnotes()
    columns = [Column("source", "Source"), Column("figures", "Figures"),
               Column("example", "Example tokens/s", "measured"), Column("model", "Model"),
               Column("quantization", "Quantization"), Column("software", "Software"), Column("lengths", "Lengths"),
               Column("concurrency", "Concurrency")]
    rows = []
    for r in picked:
        rows.append({
            "source": _text(source_label(r["source_title"], r["source_home_url"]), href=r["source_home_url"],
                            hint=r["source_home_url"]),
            "figures": _text(r["n_qualifying"]),
            "example": _measured(notes, r),
            "model": _text(r["model"]),
            "quantization": _text(r["quantization"]),
            "software": _text(fmt_software(r)),
            "lengths": _text(fmt_lengths(r)),
            "concurrency": _text(fmt_concurrency(r)),
        })
    varies = {"model": _listing(d.fixed["model"]) if "model" in d.fixed else "varies (shown per row)"}
    table_notes = [f"One row per source; the example is {d.pick_text} among that source's qualifying figures "
                   f"(pick = \"{d.pick}\"). {TIES_TEXT} \"Figures\" counts them."]
    if d.pick_reason:
        table_notes[0] += f" Why: {d.pick_reason}"
    if total > len(rows):
        table_notes.append(f"Showing the {len(rows)} sources with the most figures, of {total}.")
    return _finish(conn, d, columns, rows, held_fixed(conn, d, varies), table_notes, notes,
                   total=total if total > len(rows) else None)


# -------------------------------------------------------------------------------------------------- 8. spread
def _options(options_json: str | None) -> dict:
    try:
        options = json.loads(options_json or "{}")
    except json.JSONDecodeError:
        return {"options": options_json}
    return options if isinstance(options, dict) else {"options": options}


def options_differing(r: Mapping, top: Mapping) -> str:
    """The options of `r` that differ from those of `top` ("ngl=-1, threads=20"; "fa unset" when `r` lacks one)."""
    mine, theirs = _options(r["software_options"]), _options(top["software_options"])
    return ", ".join(f"{k}={mine[k]}" if k in mine else f"{k} unset"
                     for k in sorted(set(mine) | set(theirs)) if mine.get(k, object()) != theirs.get(k, object()))


_DIMENSIONS = (
    ("software", fmt_software),
    ("quantization", lambda r: r["quantization"]),
    ("lengths", fmt_lengths),
    ("concurrency", fmt_concurrency),
)


def build_spread(conn: Connection, d: Definition) -> Table:
    """Every qualifying figure for one model on one machine, highest first, with what differs from the top one. A
    figure several sources publish is one row citing each of them."""
    ranked, total = _ranked(conn, d)
    notes = _Footnotes()
    columns = [Column("rank", "Rank"), Column("tokens_per_second", "Measured tokens/s", "measured"),
               Column("vs_top", "Share of #1 (calc.)", "calc", "this figure ÷ the highest"),
               Column("differs", "Differs from #1"),
               Column("software", "Software"), Column("quantization", "Quantization"), Column("lengths", "Lengths"),
               Column("concurrency", "Concurrency"), Column("source", "Source")]
    rows = []
    top = ranked[0][0] if ranked else None

    def conditions(copies):  # what a figure says, its sources being every copy's
        return {**{name: fn(copies[0]) for name, fn in _DIMENSIONS},
                "source": "; ".join(dict.fromkeys(source_label(c["source_title"], c["source_home_url"])
                                                  for c in copies))}

    top_says = conditions(ranked[0]) if ranked else {}
    for rank, copies in enumerate(ranked, 1):
        r = copies[0]
        says = conditions(copies)
        differs = [f"{name}: {text}" for name, text in says.items() if text != top_says[name]]
        if options := options_differing(r, top):
            differs.insert(1 if says["software"] != top_says["software"] else 0, f"options: {options}")
        cell = _measured(notes, r)
        cell.also = tuple(dict.fromkeys(n for n in (notes.measurement(c) for c in copies[1:]) if n != cell.footnote))
        rows.append({
            "rank": _text(rank),
            "tokens_per_second": cell,
            "vs_top": _calc(r["tokens_per_second"] / top["tokens_per_second"], fmt_percent,
                            f"{fmt_number(r['tokens_per_second'])} ÷ {fmt_number(top['tokens_per_second'])}"),
            "differs": _text("(the highest figure)" if rank == 1 else
                             ("; ".join(differs) or "nothing recorded: same conditions, another run")),
            "software": _text(fmt_software(r)),
            "quantization": _text(r["quantization"]),
            "lengths": _text(fmt_lengths(r)),
            "concurrency": _text(fmt_concurrency(r)),
            "source": _text(says["source"], href=r["source_home_url"], hint=" · ".join(
                dict.fromkeys(c["source_home_url"] for c in copies))),
        })
    table_notes = ["Every qualifying figure, highest first; no pick rule applies. \"Differs from #1\" lists the "
                   "recorded conditions in which a figure differs from the highest one. A figure published by several "
                   "sources (same conditions, same value) is one row citing each source.", CALC_NOTE]
    if total > len(rows):
        table_notes.append(f"Showing the {len(rows)} highest of {total} figures (limit = {d.limit}).")
    return _finish(conn, d, columns, rows, held_fixed(conn, d, {}), table_notes, notes,
                   total=total if total > len(rows) else None)


# --------------------------------------------------------------------------------------------- 9. conformance
def build_conformance(conn: Connection, d: Definition) -> Table:
    """What each source gives: figures read, accepted, rejected, and the field most often missing (the
    source_conformance view). A relayed figure counts for its relay and the source it names."""
    rows_read = list(conn.execute(text(
        "SELECT * FROM source_conformance ORDER BY relayed_by IS NOT NULL, relayed_by, figures_read DESC, "
        "source_url")).mappings())
    total = len(rows_read)
    if d.limit:
        rows_read = rows_read[: d.limit]
    columns = [Column("relayed_by", "Relayed by"), Column("source", "Source"),
               Column("read", "Figures read", "count"), Column("accepted", "Accepted", "count"),
               Column("rejected", "Rejected", "count"), Column("share", "Accepted share (calc.)", "calc"),
               Column("missing", "Commonest missing field"), Column("missing_n", "Figures missing it", "count")]
    rows = []
    for r in rows_read:
        rows.append({
            "relayed_by": _text(r["relayed_by"] or "(read directly)"),
            "source": _text(r["source_title"] or r["source_url"] or "(no source URL)", href=r["source_url"]),
            "read": _text(r["figures_read"], kind="count"), "accepted": _text(r["accepted"], kind="count"),
            "rejected": _text(r["rejected"], kind="count"),
            "share": _calc(r["accepted"] / r["figures_read"] if r["figures_read"] else None, fmt_percent,
                           f"{r['accepted']} ÷ {r['figures_read']}"),
            "missing": _text(r["commonest_missing"]), "missing_n": _text(r["commonest_missing_count"], kind="count"),
        })
    fixed = [("Figures", "every active figure of the database, accepted (a measurement) or rejected (kept with its "
                         "reasons); superseded and withdrawn ones are history and not counted"),
             ("Source", "the publication a figure was read from; a relayed figure (source.via) counts under its "
                        "relay and the source it names")]
    notes = ["\"Commonest missing field\" is the field whose reason \"FIELD: missing\" is most frequent among the "
             "source's rejections (ties: the first by name).", CALC_NOTE]
    if total > len(rows):
        notes.append(f"Showing {len(rows)} of {total} sources (limit = {d.limit}).")
    if not rows:
        notes.insert(0, f"{NO_MEASUREMENT} No source has been read yet: `tpsdb refresh` or `tpsdb add` would fill it.")
    return Table(definition=d, columns=columns, rows=rows, held_fixed=fixed, notes=notes, footnotes=[],
                 total_rows=total if total > len(rows) else None)


BUILDERS = {
    "machines": build_machines,
    "ceiling": build_machines,
    "quantization": build_quantization,
    "versions": build_versions,
    "software": build_software,
    "concurrency": build_concurrency,
    "sources": build_sources,
    "spread": build_spread,
    "conformance": build_conformance,
}


def build_table(conn: Connection, d: Definition, any_non_finite: bool = True) -> Table:
    """The table of `d`. `any_non_finite=False` (from `has_non_finite`, asked once for many tables) skips the count
    of the table's non-finite figures, a query over the joined view per table."""
    table = BUILDERS[d.kind](conn, d)
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
    return bool(conn.execute(text(f"SELECT EXISTS (SELECT 1 FROM measurement WHERE NOT ({_FINITE}))")).scalar_one())


def build_tables(engine, definitions: Iterable[Definition]) -> list[Table]:
    """Every table of the definitions, read in one read-only transaction (one consistent view of the data)."""
    with engine.connect() as conn:
        any_non_finite = has_non_finite(conn)
        return [build_table(conn, d, any_non_finite) for d in definitions]
