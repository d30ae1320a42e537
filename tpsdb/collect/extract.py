"""From one post (GitHub's bodyHTML, or Markdown/plain text) to candidate records: one per speed figure.

Pure: no network, no database. The post is first flattened into pieces in reading order (text, headings, tables;
quoted text dropped, because a figure someone quotes is not a figure of the quoting post). Then the clues the
text gives around the tables are collected with their positions (the machine, the build, the command), and each
table is read by the reader for its kind, each figure taking the clues nearest to its table:

- hardware: the last machine named before the table, else the first one named after it;
- version: the first build line after the table (llama-bench prints it as a footer), else the last one before;
- command: the last command of the same tool before the table, else the first after.

Tables that print no model or no lengths take them from elsewhere, never by guessing: the 4167 scoreboard (chip,
cores, t/s) from the source file's [protocol]; a llama-batched-bench table from the llama-bench table of the same
model in the same section of the post.

A figure whose hardware or version the post does not give is still returned, with that field None: the validator
rejects it with its reason. Figures that are not measurements with known conditions (compare tables, hand-made
summaries, timing logs) are returned with a `reasons` entry, so that nothing is silently dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from bs4 import BeautifulSoup, Comment, NavigableString, Tag

from tpsdb.collect import llamabench as lb
from tpsdb.collect.machines import canonical_hardware, device_on_line, devices_hardware, hardware_mentions

__all__ = ["Candidate", "PostContext", "extract_post", "extract_text", "model_name", "new_record"]


@dataclass(frozen=True)
class PostContext:
    permalink: str  # canonical https://github.com/ggml-org/llama.cpp/discussions/N#discussioncomment-ID
    retrieved_at: str  # ISO date
    published_at: str | None  # ISO date of the post
    author: str | None
    protocol: dict  # the [protocol] table of the source file (may be {})


@dataclass
class Candidate:
    record: dict  # record format v1; fields the source does not give are None
    slot: str  # the figure's place in the post ("t2:r5:generation"), stable across edits of the post
    reasons: list[str] = field(default_factory=list)  # extractor-level rejection codes, "<field>: <reason>"


# Extractor-level reason codes, spelled once.
COMPARE_TABLE = "nature: compare table ({}), not a measurement with known conditions"
SUMMARY_TABLE = "nature: hand-made summary table (no model column), not pasted llama-bench output"
TIMING_LOG = "nature: timing log of a llama.cpp run (not llama-bench), conditions unknown"
SAMPLING_SPEED = "phase: sampling speed, not model throughput"


def extract_post(body_html: str, ctx: PostContext) -> list[Candidate]:
    """Every speed figure in one post, from its HTML body (GraphQL bodyHTML or the page's comment body)."""
    return _extract(pieces_from_html(body_html), ctx)


def extract_text(text: str, ctx: PostContext) -> list[Candidate]:
    """Every speed figure in Markdown or plain text holding llama-bench / llama-batched-bench output."""
    return _extract(pieces_from_text(text, markdown=True), ctx)


# =============================================================================================== the post
@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    quotes: list[str]  # per row: the row as the source shows it (rebuilt as "| a | b |" for HTML tables)


@dataclass
class Piece:
    kind: str  # "text" | "heading" | "table"
    lines: list[str] = field(default_factory=list)
    table: Table | None = None


_SEPARATOR_CELL = re.compile(r"^:?-+:?$")


def _split_cells(line: str) -> list[str]:
    text = line.strip()
    text = text[1:] if text.startswith("|") else text
    text = text[:-1] if text.endswith("|") else text
    return [cell.strip() for cell in text.split("|")]


def _pipe_table(lines: list[str]) -> Piece:
    """A run of `| … |` lines; the separator row is optional (some pastes lack it)."""
    rows, quotes = [], []
    for line in lines:
        cells = _split_cells(line)
        if any(cells) and all(_SEPARATOR_CELL.match(c) for c in cells if c):
            continue
        rows.append(cells)
        quotes.append(line.strip())
    return Piece("table", table=Table(rows[0] if rows else [], rows[1:], quotes[1:]))


def pieces_from_text(text: str, *, markdown: bool) -> list[Piece]:
    """Text in reading order. In Markdown, `> ` quotes are dropped and `#` lines are headings (outside fences)."""
    pieces: list[Piece] = []
    prose: list[str] = []
    pipes: list[str] = []
    in_fence = False

    def flush() -> None:
        if pipes:
            pieces.append(_pipe_table(pipes))
            pipes.clear()
        if any(line.strip() for line in prose):
            pieces.append(Piece("text", lines=list(prose)))
        prose.clear()

    for line in text.splitlines():
        stripped = line.strip()
        if markdown and re.match(r"^(```|~~~)", stripped):
            in_fence = not in_fence
            flush()
            continue
        if markdown and not in_fence and stripped.startswith(">"):
            continue  # quoted from another post
        if stripped.startswith("|"):
            if prose:
                flush()
            pipes.append(line)
            continue
        if pipes:
            flush()
        if markdown and not in_fence and re.match(r"^#{1,6}\s", stripped):
            flush()
            pieces.append(Piece("heading", lines=[stripped.lstrip("#").strip()]))
            continue
        prose.append(line)
    flush()
    return pieces


_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}
_BLOCKS = _HEADINGS | {"p", "div", "ul", "ol", "li", "table", "pre", "details", "summary", "section", "article",
                       "dl", "dt", "dd", "hr", "figure", "markdown-accessiblity-table"}


def pieces_from_html(body_html: str) -> list[Piece]:
    soup = BeautifulSoup(body_html or "", "lxml")
    # Quoted text belongs to the quoted post; the rest is chrome (copy buttons, icons, client-side templates).
    for tag in soup.find_all(["blockquote", "template", "script", "style", "svg", "clipboard-copy"]):
        tag.decompose()
    for br in soup.find_all("br"):
        br.replace_with("\n")
    pieces: list[Piece] = []
    _walk(soup.body or soup, pieces)
    return pieces


def _walk(node: Tag, pieces: list[Piece]) -> None:
    for child in node.children:
        if isinstance(child, Comment):
            continue
        if isinstance(child, NavigableString):
            pieces += pieces_from_text(str(child), markdown=False)
        elif child.name == "table":
            pieces.append(_html_table(child))
        elif child.name == "pre":
            pieces += pieces_from_text(child.get_text(), markdown=False)
        elif child.name in _HEADINGS:
            pieces.append(Piece("heading", lines=[child.get_text(" ", strip=True)]))
        elif child.find(_BLOCKS):
            _walk(child, pieces)
        else:
            pieces += pieces_from_text(child.get_text(), markdown=False)


def _html_table(table: Tag) -> Piece:
    rows = [[" ".join(cell.get_text().split()) for cell in tr.find_all(["th", "td"])] for tr in table.find_all("tr")]
    if not rows:
        return Piece("table", table=Table([], [], []))
    body = rows[1:]
    return Piece("table", table=Table(rows[0], body, ["| " + " | ".join(cells) + " |" for cells in body]))


# ============================================================================================== the clues
Position = tuple[int, int]  # (piece index, line index)


@dataclass
class Clue:
    pos: Position
    kind: str  # "hardware" | "version" | "command" | "batched_params"
    value: object


def _text_lines(piece: Piece, kind: str | None) -> list[str]:
    """The lines of a piece that may carry clues: prose, headings, and tables that hold no figure (nvidia-smi)."""
    if piece.kind != "table":
        return piece.lines
    if kind is not None:
        return []
    return ["| " + " | ".join(piece.table.header) + " |"] + piece.table.quotes


def read_clues(pieces: list[Piece], kinds: list[str | None]) -> list[Clue]:
    clues: list[Clue] = []
    for i, (piece, kind) in enumerate(zip(pieces, kinds)):
        lines = _text_lines(piece, kind)
        runs: list[list[tuple[int, str]]] = []  # the device lines of each run printed in this piece
        for j, line in enumerate(lines):
            device = device_on_line(line)
            if device:
                index, name = device
                if not runs or index == 0 or index != len(runs[-1]):  # "Device 0" again: another run's log
                    runs.append([])
                runs[-1].append((j, name))
            else:
                clues += [Clue((i, j), "hardware", m.name) for m in hardware_mentions(line)]
            version = lb.parse_build(line)
            if version:
                clues.append(Clue((i, j), "version", version))
            params = lb.parse_batched_params(line)
            if params:
                clues.append(Clue((i, j), "batched_params", params))
        # The devices of one run name its machine together (8 devices -> "8x ...").
        for run in runs:
            machine = devices_hardware([name for _, name in run])
            if machine:
                clues.append(Clue((i, run[0][0]), "hardware", machine))
        # A command may span lines ("\\" continuations). Its line number after joining is only approximate, which
        # is enough: positions only order clues against tables, and a table is always a piece of its own.
        for j, line in enumerate(lb.join_continuations("\n".join(lines)).splitlines()):
            command = lb.parse_command(line)
            if command:
                clues.append(Clue((i, j), "command", command))
    clues.sort(key=lambda c: c.pos)
    return clues


class Reading:
    """The post with its clues: answers "what does the post say about the figures at this position"."""

    def __init__(self, pieces: list[Piece], ctx: PostContext):
        self.pieces = pieces
        self.ctx = ctx
        self.protocol = ctx.protocol or {}
        self.kinds = [lb.table_kind(p.table.header) if p.kind == "table" else None for p in pieces]
        self.clues = read_clues(pieces, self.kinds)

    def _of(self, kind: str, test=lambda value: True) -> list[Clue]:
        return [c for c in self.clues if c.kind == kind and test(c.value)]

    def hardware_at(self, pos: Position) -> str | None:
        return _before_then_after(self._of("hardware"), pos)

    def version_at(self, pos: Position) -> str | None:
        return _after_then_before(self._of("version"), pos)

    def command_at(self, pos: Position, tool: str) -> str | None:
        found = _before_then_after(self._of("command", lambda v: v[0] == tool), pos)
        return found[1] if found else None

    def batched_params_at(self, pos: Position) -> dict:
        before = [c for c in self._of("batched_params") if c.pos < pos]
        return dict(before[-1].value) if before else {}

    def section_of(self, index: int) -> int:
        return sum(1 for p in self.pieces[:index] if p.kind == "heading")


def _before_then_after(clues: list[Clue], pos: Position):
    before = [c for c in clues if c.pos < pos]
    if before:
        return before[-1].value
    after = [c for c in clues if c.pos > pos]
    return after[0].value if after else None


def _after_then_before(clues: list[Clue], pos: Position):
    after = [c for c in clues if c.pos > pos]
    if after:
        return after[0].value
    before = [c for c in clues if c.pos < pos]
    return before[-1].value if before else None


# ============================================================================================ the records
def new_record(ctx: PostContext, quote: str) -> dict:
    """A record v1 with provenance filled in and every other field unknown (None)."""
    return {
        "source": {"url": ctx.permalink, "retrieved_at": ctx.retrieved_at, "published_at": ctx.published_at,
                   "author": ctx.author, "quote": quote},
        "hardware": {"name": None},
        "model": {"name": None, "params_b": None, "file_size_gb": None},
        "quantization": None,
        "software": {"name": "llama.cpp", "version": None, "options": {}},
        "lengths": {"prompt_tokens": None, "generated_tokens": None, "context_depth": None},
        "concurrency": {"users": None, "figure": None},
        "nature": {"kind": "measured", "procedure": None},
        "phase": None,
        "tokens_per_second": None,
        "stddev": None,
    }


def _set_figure(record: dict, shape: lb.TestShape | None, value: tuple[float, float | None],
                users: int = 1, figure: str = "per_user") -> dict:
    if shape:
        record["phase"] = shape.phase
        record["lengths"] = {"prompt_tokens": shape.prompt_tokens, "generated_tokens": shape.generated_tokens,
                             "context_depth": shape.context_depth}
    record["tokens_per_second"], record["stddev"] = value
    record["concurrency"] = {"users": users, "figure": figure}
    return record


def model_name(label: str | None, params_b: float | None, protocol: dict, files: Sequence[str] = ()) -> str | None:
    """llama-bench's type label, or the name the source file's protocol gives it.

    The label says little ("llama 7B" is Llama 2 7B, but also Mistral 7B and CodeLlama 7B), so the alias applies
    only when the parameter count is the protocol model's (`params_b`), and, when the run's model files are known
    (`-m` in the post's command) and the protocol gives a `model_file_pattern`, only when one of them matches it.
    """
    if not label:
        return None
    aliases = {k.lower(): v for k, v in (protocol.get("model_aliases") or {}).items()}
    alias = aliases.get(label.lower())
    if alias is None:
        return label
    expected = protocol.get("params_b")
    if expected is not None and (params_b is None or abs(params_b - expected) > 0.005 * expected):
        return label
    pattern = protocol.get("model_file_pattern")
    if pattern and files and not any(re.search(pattern, f, re.I) for f in files):
        return label
    return alias


def model_files(command: str | None) -> list[str]:
    """The model files a llama-bench command line names (`-m a.gguf -m b.gguf`)."""
    return [f.strip('"\'') for f in re.findall(r"(?:^|\s)(?:-m|--model)\s+(\"[^\"]+\"|'[^']+'|\S+)", command or "")]


@dataclass
class ModelRow:
    """What one llama-bench row says about the model file."""

    label: str | None
    quant: str | None
    params_b: float | None
    file_size_gb: float | None
    backend: str | None


def _model_row(cells: dict[str, str]) -> ModelRow:
    label, quant = lb.split_model_label(cells.get("model", ""))
    return ModelRow(label, quant, lb.parse_params_b(cells.get("params", "")),
                    lb.parse_size_gb(cells.get("size", "")), cells.get("backend") or None)


def _set_model(record: dict, model: ModelRow, protocol: dict, command: str | None = None) -> None:
    record["model"] = {"name": model_name(model.label, model.params_b, protocol, model_files(command)),
                       "params_b": model.params_b, "file_size_gb": model.file_size_gb}
    record["quantization"] = model.quant


def _row_cells(table: Table, row: list[str]) -> dict[str, str]:
    return {h.strip().lower(): (row[k] if k < len(row) else "") for k, h in enumerate(table.header)}


_NOT_OPTIONS = {"model", "size", "params", "test", "t/s"}


# ------------------------------------------------------------------------------------------- table readers
def _llama_bench(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    pos = (i, 0)
    hardware = reading.hardware_at(pos)
    version = reading.version_at(pos)
    command = reading.command_at(pos, lb.LLAMA_BENCH)
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        cells = _row_cells(table, row)
        value = lb.parse_value(cells.get("t/s", ""))
        if value is None:
            continue
        shape = lb.parse_test(cells.get("test", ""))
        record = _set_figure(new_record(reading.ctx, quote), shape, value)
        _set_model(record, _model_row(cells), reading.protocol, command)
        record["hardware"]["name"] = hardware
        record["software"]["version"] = version
        record["software"]["options"] = lb.options_from_columns(
            {k: v for k, v in cells.items() if k not in _NOT_OPTIONS})
        record["nature"]["procedure"] = command or lb.LLAMA_BENCH
        out.append(Candidate(record, f"t{t}:r{r}:{shape.phase if shape else 'unknown'}"))
    return out


def _section_model(reading: Reading, i: int) -> ModelRow | None:
    """The model of the llama-bench table in the same section (heading) as a batched-bench table at piece i.

    llama-batched-bench does not print the model; posts that run both benches on one model per section
    (16578's "## ggml-org/gpt-oss-20b-GGUF") say which model it was through the llama-bench table beside it.
    """
    section = reading.section_of(i)
    near = [j for j, kind in enumerate(reading.kinds) if kind == lb.LLAMA_BENCH and reading.section_of(j) == section]
    if not near:
        return None
    table = reading.pieces[min(near, key=lambda j: (j < i, abs(j - i)))].table  # the following table first
    models = {(m.label, m.quant, m.params_b, m.file_size_gb, m.backend)
              for m in (_model_row(_row_cells(table, row)) for row in table.rows)}
    return ModelRow(*models.pop()) if len(models) == 1 else None  # several models: which one is unknown


def _batched_bench(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    pos = (i, 0)
    hardware, version = reading.hardware_at(pos), reading.version_at(pos)
    command = reading.command_at(pos, lb.BATCHED_BENCH)
    options = reading.batched_params_at(pos)
    model = _section_model(reading, i)
    if model and model.backend:
        options = {"backend": model.backend, **options}
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        cells = _row_cells(table, row)
        try:
            pp, tg, users = int(cells["pp"]), int(cells["tg"]), int(cells["b"])
        except (KeyError, ValueError):
            continue
        # B sequences in parallel, each with a PP-token prompt then TG generated tokens: S_PP and S_TG are
        # totals over the B sequences; generation runs after the prompt, so at depth PP.
        for column, shape in (("s_pp t/s", lb.TestShape("prompt", pp, 0, 0)),
                              ("s_tg t/s", lb.TestShape("generation", 0, tg, pp))):
            value = lb.parse_value(cells.get(column, ""))
            if value is None:
                continue
            record = _set_figure(new_record(reading.ctx, quote), shape, value, users=users, figure="aggregate")
            if model:
                _set_model(record, model, reading.protocol, command)
            record["hardware"]["name"] = hardware
            record["software"]["version"] = version
            record["software"]["options"] = dict(options)
            record["nature"]["procedure"] = command or lb.BATCHED_BENCH
            out.append(Candidate(record, f"t{t}:r{r}:{shape.phase}"))
    return out


_COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")


def _scoreboard(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    """The 4167 opening post: one row per chip, one column per format and phase, conditions from the protocol."""
    protocol = reading.protocol
    post_version = reading.version_at((i, 0)) or protocol.get("version")
    sizes = protocol.get("file_size_gb") or {}
    columns = {k: lb.scoreboard_column(h) for k, h in enumerate(table.header)}
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        cells = _row_cells(table, row)
        chip_cell = cells.get("chip", "")
        commit = _COMMIT.search(chip_cell)
        chip = re.sub(r"\[\^\w+\]|\+\s*FA\b", "", _COMMIT.sub("", chip_cell)).strip()
        cores = cells.get("gpu cores", "")
        hardware = canonical_hardware(f"{chip} ({cores}-core GPU)" if cores.isdigit() else chip)
        bandwidth = lb.parse_value(cells.get("bw [gb/s]", ""))
        options = {"ngl": protocol["ngl"]} if "ngl" in protocol else {}
        if re.search(r"\+\s*FA\b", chip_cell):
            options["fa"] = 1
        for k, column in columns.items():
            value = lb.parse_value(row[k]) if column and k < len(row) else None
            if value is None:
                continue
            quant, phase = column
            prompt = protocol.get("prompt_tokens") if phase == "prompt" else 0
            generated = protocol.get("generated_tokens") if phase == "generation" else 0
            record = new_record(reading.ctx, quote)
            record["phase"] = phase
            record["lengths"] = {"prompt_tokens": prompt, "generated_tokens": generated, "context_depth": 0}
            record["tokens_per_second"], record["concurrency"] = value[0], {"users": 1, "figure": "per_user"}
            record["hardware"] = {"name": hardware}
            if cores.isdigit():
                record["hardware"]["gpu_cores"] = int(cores)
            if bandwidth:
                record["hardware"]["memory_bandwidth_gbs"] = bandwidth[0]
            record["model"] = {"name": protocol.get("model"),
                               "params_b": protocol.get("params_b"), "file_size_gb": sizes.get(quant)}
            record["quantization"] = quant
            record["software"]["version"] = commit.group(0) if commit else post_version
            record["software"]["options"] = dict(options)
            record["nature"]["procedure"] = protocol.get("command") or lb.LLAMA_BENCH
            out.append(Candidate(record, f"t{t}:r{r}:{quant}-{phase}"))
    return out


def _compare(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    """Compare tables: the figures are kept as rejections; which build and settings each column ran is unknown."""
    value_columns = [h for h in table.header if "t/s" in h.lower()]
    reason = COMPARE_TABLE.format(" vs ".join(value_columns))
    post_hardware = reading.hardware_at((i, 0))
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        cells = _row_cells(table, row)
        shape = lb.parse_test(cells.get("test", ""))
        for column in value_columns:
            value = lb.parse_value(cells.get(column.strip().lower(), ""))
            if value is None:
                continue
            record = _set_figure(new_record(reading.ctx, quote), shape, value)
            _set_model(record, _model_row(cells), reading.protocol)
            record["hardware"]["name"] = canonical_hardware(cells.get("gpu", "")) or post_hardware
            record["nature"]["procedure"] = lb.LLAMA_BENCH
            out.append(Candidate(record, f"t{t}:r{r}:{column}", [reason]))
    return out


def _summary(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        cells = _row_cells(table, row)
        value = lb.parse_value(cells.get("t/s", ""))
        if value is None:
            continue
        shape = lb.parse_test(cells.get("test", ""))
        record = _set_figure(new_record(reading.ctx, quote), shape, value)
        record["hardware"]["name"] = reading.hardware_at((i, 0))
        record["software"]["version"] = reading.version_at((i, 0))
        record["nature"]["procedure"] = lb.LLAMA_BENCH
        out.append(Candidate(record, f"t{t}:r{r}:{shape.phase if shape else 'unknown'}", [SUMMARY_TABLE]))
    return out


_READERS = {lb.LLAMA_BENCH: _llama_bench, lb.BATCHED_BENCH: _batched_bench, lb.SCOREBOARD: _scoreboard,
            lb.COMPARE: _compare, lb.SUMMARY: _summary}


def _timing_figures(reading: Reading) -> list[Candidate]:
    """llama_print_timings / llama-server timing lines: kept as rejections (no model, no settings, no machine)."""
    out = []
    for piece in reading.pieces:
        if piece.kind != "text":
            continue
        for line in piece.lines:
            timing = lb.parse_timing(line)
            if not timing:
                continue
            shape = lb.TestShape(timing.phase, timing.tokens if timing.phase == "prompt" else 0,
                                 timing.tokens if timing.phase == "generation" else 0, 0)
            record = _set_figure(new_record(reading.ctx, line.strip()), shape, (timing.tokens_per_second, None))
            record["nature"]["procedure"] = "timing log"
            reasons = [TIMING_LOG] + ([SAMPLING_SPEED] if timing.sampling else [])
            out.append(Candidate(record, f"log{len(out)}:{timing.phase}", reasons))
    return out


def _extract(pieces: list[Piece], ctx: PostContext) -> list[Candidate]:
    reading = Reading(pieces, ctx)
    candidates: list[Candidate] = []
    t = 0
    for i, (piece, kind) in enumerate(zip(pieces, reading.kinds)):
        if piece.kind != "table":
            continue
        if kind in _READERS:
            candidates += _READERS[kind](reading, t, i, piece.table)
        t += 1
    candidates += _timing_figures(reading)
    return candidates
