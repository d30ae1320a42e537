"""From one post (GitHub's bodyHTML, or Markdown/plain text) to candidate records: one per speed figure.

Pure: no network, no database. The post is first flattened into pieces in reading order (text, headings, tables;
quoted text dropped, because a figure someone quotes is not a figure of the quoting post). Then the clues the
text gives around the tables are collected with their positions (the machine, the build, the command), and each
table is read by the reader for its kind, each figure taking the clues nearest to its table:

- hardware: the devices of the run's own log that llama.cpp would use (and its -sm/-dev/-ts), else the one machine
  named since the previous table, else an earlier run's devices or names; two names are ambiguous, never a guess;
- version: the build line after the table before the next one (llama-bench prints it as a footer), else the last
  one since the previous table, else the post's only one;
- command: the last command of the same tool before the table, else the first after.

docs/EXTRACTION.md gives every field's rule: where it may come from, in which order, and what stops it.

Tables that print no model or no lengths take them from elsewhere, never by guessing: the 4167 scoreboard (chip,
cores, t/s) from the source file's [protocol]; a llama-batched-bench table from the llama-bench table of the same
model in the same section of the post.

A figure whose hardware or version the post does not give is still returned, with that field None: the validator
rejects it with its reason. Figures that are not measurements with known conditions (compare tables, hand-made
summaries) are returned with a `reasons` entry, so that nothing is silently dropped. The speeds other tools print
(run logs, llama-sweep-bench, ollama, mlx-lm, vLLM/SGLang serving summaries) are read by the modules of `tools`.
The post's pieces, clues, Reading and Candidate live one floor down, in `reading`, which both readers share.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from operator import itemgetter, methodcaller

from tpsdb.collect import llamabench as lb
from tpsdb.collect.machines import canonical_hardware
from tpsdb.collect.reading import (  # re-exported: the names callers of extract have always taken from it
    _INT_LIMIT, COMPARE_TABLE, SAMPLING_SPEED, SUMMARY_TABLE, Candidate, ModelRow, Piece, PostContext, Reading, Table,
    _lengths, _record, _wanted_kind, body_html_of, command_run_options, drop_element, join_split_tables, model_files,
    model_name, new_record, parse_body, parse_page, pieces_from_html, pieces_from_text, refuse_unstorable_numbers,
)
from tpsdb.collect.reading import carry_quote_headers
from tpsdb.collect.tools import tool_figures

__all__ = ["COMPARE_TABLE", "SAMPLING_SPEED", "SUMMARY_TABLE", "Candidate", "PostContext", "Reading", "body_html_of",
           "drop_element", "extract_post", "extract_text", "model_name", "new_record", "parse_body", "parse_page",
           "refuse_unstorable_numbers"]


def extract_post(body_html: str, ctx: PostContext) -> list[Candidate]:
    """Every speed figure in one post, from its HTML body (GraphQL bodyHTML or the page's comment body)."""
    return _extract(join_split_tables(pieces_from_html(body_html)), ctx)


def extract_text(text: str, ctx: PostContext) -> list[Candidate]:
    """Every speed figure in Markdown or plain text holding llama-bench / llama-batched-bench output."""
    return _extract(join_split_tables(pieces_from_text(text, markdown=True)), ctx)


class _Columns:
    """A table's header read once: the column of each name (of equal names, the last)."""

    def __init__(self, table: Table):
        self.names = [h.strip().lower() for h in table.header]
        self.index = {name: k for k, name in enumerate(self.names)}
        self.width = len(self.names)
        self._pad = [""] * (self.width + 1)

    def cells(self, row: list[str]) -> list[str]:
        """The row cut or padded to the header, and one "" more: the cell of every column the table lacks."""
        return row[:self.width] + self._pad[min(len(row), self.width):]

    def at(self, name: str) -> int:
        """The index of a column in `cells` (of the "" after the row when the table has no such column)."""
        return self.index.get(name, self.width)

    def getter(self, name: str):
        """row -> the row's cell in that column ("" when the table or the row has none)."""
        k = self.index.get(name)
        if k is None:
            return lambda row: ""
        return lambda row: row[k] if k < len(row) else ""

    def option_columns(self) -> list[tuple[int, str]]:
        """(column, option key) of the option columns, in the order lb.options_from_columns reads a row dict."""
        return [(self.index[name], key) for name in dict.fromkeys(self.names)
                if name not in _NOT_OPTIONS and (key := lb.OPTION_KEYS.get(name))]


_NOT_OPTIONS = {"model", "size", "params", "test", "t/s"}


def _picker(indexes: list[int]):
    """cells -> the tuple of the cells at these indexes (itemgetter gives a bare value for one index)."""
    if not indexes:
        return lambda cells: ()
    if len(indexes) == 1:
        k = indexes[0]
        return lambda cells: (cells[k],)
    return itemgetter(*indexes)


# ------------------------------------------------------------------------------------------- table readers
def _llama_bench(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    pos = (i, 0)
    version = reading.version_at(pos)
    command = reading.command_at(pos, lb.LLAMA_BENCH)
    procedure = command or lb.LLAMA_BENCH
    files = tuple(model_files(command))
    run_options = command_run_options(command)
    software = reading.software_at(pos)
    ctx = reading.ctx
    columns = _Columns(table)
    k_value, k_test = columns.at("t/s"), columns.at("test")
    model_cells = itemgetter(*(columns.at(name) for name in ("model", "params", "size", "backend")))
    key_backend = itemgetter(columns.at("backend"))
    option_columns = columns.option_columns()
    option_cells = _picker([k for k, _ in option_columns])
    option_keys = [key for _, key in option_columns]
    options_of: dict[tuple, dict] = {}  # the option cells of a row -> its options (rows repeat them)
    models_of: dict[tuple, tuple] = {}  # the model cells of a row -> (model fields, quantization)
    machines_of: dict[tuple, tuple] = {}  # (backend cell, option cells) -> (machine, reason it is unknown)
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        cells = columns.cells(row)
        value = lb.parse_value(cells[k_value])
        if value is None:
            continue
        shape = reading.test(cells[k_test])
        key = model_cells(cells)
        model = models_of.get(key)
        if model is None:
            found = reading.model(*key)
            model = models_of[key] = ((reading.model_name(found, files), found.params_b, found.file_size_gb),
                                      found.quant)
        key = option_cells(cells)
        options = options_of.get(key)
        if options is None:
            options = options_of[key] = {}
            for name, cell in zip(option_keys, key):
                if cell != "":
                    options[name] = reading.option_value(cell)
        (name, params_b, file_size_gb), quantization = model
        machine_key = (key_backend(cells), key)  # rows repeat their backend and options: one answer for each
        found_machine = machines_of.get(machine_key)
        if found_machine is None:
            found_machine = machines_of[machine_key] = reading.hardware_at(
                pos, _wanted_kind(machine_key[0]), options={**run_options, **options} if options else run_options)
        hardware, unknown = found_machine
        record = _record(ctx, quote, hardware=hardware,
                         model={"name": name, "params_b": params_b, "file_size_gb": file_size_gb},
                         quantization=quantization, software=software, version=version, options=dict(options), lengths=_lengths(shape),
                         users=1, figure="per_user", procedure=procedure, phase=shape.phase if shape else None,
                         value=value[0], stddev=value[1])
        out.append(Candidate(record, f"t{t}:r{r}:{shape.phase if shape else 'unknown'}", [unknown] if unknown else []))
    return out


def _section_model(reading: Reading, i: int) -> ModelRow | None:
    """The model of the llama-bench table in the same section (heading) as a batched-bench table at piece i.

    llama-batched-bench does not print the model; posts that run both benches on one model per section
    (16578's "## ggml-org/gpt-oss-20b-GGUF") say which model it was through the llama-bench table beside it.
    """
    near = reading.bench_tables_in(reading.section_of(i))
    if not near:
        return None
    k = bisect_right(near, i)
    j = near[k] if k < len(near) else near[k - 1]  # the following table first, else the one before
    if j not in reading.table_models:
        table = reading.pieces[j].table
        columns = _Columns(table)
        model_cells = itemgetter(*(columns.at(name) for name in ("model", "params", "size", "backend")))
        models = {(m.label, m.quant, m.params_b, m.file_size_gb, m.backend)
                  for m in (reading.model(*model_cells(columns.cells(row))) for row in table.rows)}
        # several models: which one is unknown
        reading.table_models[j] = ModelRow(*models.pop()) if len(models) == 1 else None
    return reading.table_models[j]


def _batched_bench(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    pos = (i, 0)
    version = reading.version_at(pos)
    command = reading.command_at(pos, lb.BATCHED_BENCH)
    procedure = command or lb.BATCHED_BENCH
    software = reading.software_at(pos)
    options = reading.batched_params_at(pos)
    model = _section_model(reading, i)
    if model and model.backend:
        options = {"backend": model.backend, **options}
    hardware, unknown = reading.hardware_at(pos, _wanted_kind(model.backend if model else None))
    ctx = reading.ctx
    columns = _Columns(table)
    if not {"pp", "tg", "b"} <= columns.index.keys():
        return []  # no row can be read
    pp_cell, tg_cell, b_cell = columns.getter("pp"), columns.getter("tg"), columns.getter("b")
    speeds = ((columns.getter("s_pp t/s"), "prompt"), (columns.getter("s_tg t/s"), "generation"))
    files = tuple(model_files(command))
    name = params_b = file_size_gb = quantization = None
    if model:
        name, params_b, file_size_gb, quantization = (reading.model_name(model, files), model.params_b,
                                                      model.file_size_gb, model.quant)
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        try:
            pp, tg, users = int(pp_cell(row)), int(tg_cell(row)), int(b_cell(row))
        except ValueError:
            continue
        # B sequences in parallel, each with a PP-token prompt then TG generated tokens: S_PP and S_TG are
        # totals over the B sequences; generation runs after the prompt, so at depth PP.
        for cell, phase in speeds:
            value = lb.parse_value(cell(row))
            if value is None:
                continue
            # B sequences each with a PP-token prompt, then TG tokens generated at depth PP
            lengths = (pp, 0, 0) if phase == "prompt" else (0, tg, pp)
            record = _record(ctx, quote, hardware=hardware,
                             model={"name": name, "params_b": params_b, "file_size_gb": file_size_gb},
                             quantization=quantization, software=software, version=version, options=dict(options), lengths=lengths,
                             users=users, figure="aggregate", procedure=procedure, phase=phase, value=value[0],
                             stddev=value[1])
            candidate = Candidate(record, f"t{t}:r{r}:{phase}", [unknown] if unknown else [])
            # the only counts of a post that no bounded pattern reads: any number of digits
            if not -_INT_LIMIT < min(pp, tg, users) <= max(pp, tg, users) < _INT_LIMIT:
                refuse_unstorable_numbers(candidate)
            out.append(candidate)
    return out


_COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
_CHIP_NOTES = re.compile(r"\[\^\w+\]|\+\s*FA\b")  # footnote marks and "+ FA" after the chip's name
_FLASH_ATTENTION = re.compile(r"\+\s*FA\b")


def _scoreboard(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    """The 4167 opening post: one row per chip, one column per format and phase, conditions from the protocol."""
    protocol = reading.protocol
    post_version = reading.version_at((i, 0)) or protocol.get("version")
    sizes = protocol.get("file_size_gb") or {}
    procedure = protocol.get("command") or lb.LLAMA_BENCH
    columns = [(k, column) for k, column in ((k, lb.scoreboard_column(h)) for k, h in enumerate(table.header))
               if column]
    lengths = {"prompt": (protocol.get("prompt_tokens"), 0, 0),
               "generation": (0, protocol.get("generated_tokens"), 0)}
    header = _Columns(table)
    chip_cell, cores_cell, bandwidth_cell = (header.getter(n) for n in ("chip", "gpu cores", "bw [gb/s]"))
    ctx = reading.ctx
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        chip_cell_text = chip_cell(row)
        commit = _COMMIT.search(chip_cell_text)
        chip = _CHIP_NOTES.sub("", _COMMIT.sub("", chip_cell_text)).strip()
        cores = cores_cell(row)
        cores = cores if cores.isdecimal() and len(cores) < 5 else None  # what int() reads ("²" is no number)
        hardware = canonical_hardware(f"{chip} ({cores}-core GPU)" if cores else chip)
        bandwidth = lb.parse_value(bandwidth_cell(row))
        options = {"ngl": protocol["ngl"]} if "ngl" in protocol else {}
        if _FLASH_ATTENTION.search(chip_cell_text):
            options["fa"] = 1
        version = commit.group(0) if commit else post_version
        for k, (quant, phase) in columns:
            value = lb.parse_value(row[k]) if k < len(row) else None
            if value is None:
                continue
            machine = {"name": hardware}
            if cores:
                machine["gpu_cores"] = int(cores)
            if bandwidth:
                machine["memory_bandwidth_gbs"] = bandwidth[0]
            record = _record(ctx, quote, hardware=machine,
                             model={"name": protocol.get("model"), "params_b": protocol.get("params_b"),
                                    "file_size_gb": sizes.get(quant)},
                             quantization=quant, software="llama.cpp", version=version, options=dict(options),
                             lengths=lengths[phase],
                             users=1, figure="per_user", procedure=procedure, phase=phase, value=value[0])
            out.append(Candidate(record, f"t{t}:r{r}:{quant}-{phase}"))
    return out


def _compare(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    """Compare tables: the figures are kept as rejections; which build and settings each column ran is unknown."""
    value_columns = [h for h in table.header if "t/s" in h.lower()]
    reason = COMPARE_TABLE.format(" vs ".join(value_columns))
    post_hardware = reading.hardware_at((i, 0))[0]
    columns = _Columns(table)
    test, model_cell, params, size, backend, gpu = map(columns.getter,
                                                       ("test", "model", "params", "size", "backend", "gpu"))
    value_cells = [(column, columns.getter(column.strip().lower())) for column in value_columns]
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        shape = reading.test(test(row))
        values = [(column, lb.parse_value(cell(row))) for column, cell in value_cells]
        if not any(value for _, value in values):
            continue
        model = reading.model(model_cell(row), params(row), size(row), backend(row))
        name = reading.model_name(model, ())
        hardware = canonical_hardware(gpu(row)) or post_hardware
        for column, value in values:
            if value is None:
                continue
            record = _record(reading.ctx, quote, hardware=hardware,
                             model={"name": name, "params_b": model.params_b, "file_size_gb": model.file_size_gb},
                             quantization=model.quant, software=reading.software_at((i, 0)),
                             lengths=_lengths(shape), users=1, figure="per_user",
                             procedure=lb.LLAMA_BENCH, phase=shape.phase if shape else None, value=value[0],
                             stddev=value[1])
            out.append(Candidate(record, f"t{t}:r{r}:{column}", [reason]))
    return out


def _summary(reading: Reading, t: int, i: int, table: Table) -> list[Candidate]:
    columns = _Columns(table)
    speed, test = columns.getter("t/s"), columns.getter("test")
    out = []
    for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
        value = lb.parse_value(speed(row))
        if value is None:
            continue
        shape = reading.test(test(row))
        record = _record(reading.ctx, quote, hardware=reading.hardware_at((i, 0))[0],
                         software=reading.software_at((i, 0)), version=reading.version_at((i, 0)),
                         lengths=_lengths(shape), users=1, figure="per_user",
                         procedure=lb.LLAMA_BENCH, phase=shape.phase if shape else None, value=value[0],
                         stddev=value[1])
        out.append(Candidate(record, f"t{t}:r{r}:{shape.phase if shape else 'unknown'}", [SUMMARY_TABLE]))
    return out


_READERS = {lb.LLAMA_BENCH: _llama_bench, lb.BATCHED_BENCH: _batched_bench, lb.SCOREBOARD: _scoreboard,
            lb.COMPARE: _compare, lb.SUMMARY: _summary}


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
    candidates += tool_figures(reading)  # run logs, sweep-bench, ollama, mlx-lm, vLLM/SGLang summaries
    carry_quote_headers(candidates, pieces)  # a quoted table row keeps its table's header line
    if candidates and not _floats_finite(candidates):  # a cell of 400 digits reads as infinity
        for candidate in candidates:
            refuse_unstorable_numbers(candidate)
    return candidates


# ================================================================================== numbers no column holds
_FIGURE_FLOATS = tuple(map(itemgetter, ("tokens_per_second", "stddev")))
_MODEL_FLOATS = tuple(map(itemgetter, ("params_b", "file_size_gb")))
_BANDWIDTH = methodcaller("get", "memory_bandwidth_gbs")


def _floats_finite(candidates: list[Candidate]) -> bool:
    """Whether every float of the figures is finite, summed at C speed: inf and nan make any sum not finite
    (a sum of huge numbers may overflow too: then each figure is looked at, and none is refused)."""
    records = [c.record for c in candidates]
    models = list(map(itemgetter("model"), records))
    total = sum(sum(filter(None, map(get, records))) for get in _FIGURE_FLOATS)
    total += sum(sum(filter(None, map(get, models))) for get in _MODEL_FLOATS)
    total += sum(filter(None, map(_BANDWIDTH, map(itemgetter("hardware"), records))))
    return total - total == 0  # inf - inf and nan - nan are nan
