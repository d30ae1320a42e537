"""llama-bench result files, as `llama-bench -o json|jsonl|csv|sql` writes them, to candidate records.

Every row of those formats carries its own conditions (build, model file, options, lengths), so one row is one
figure. The machine is the `hardware` the caller states (the person ingesting the file knows it), else the row's
`gpu_info`. Markdown and text files (`-o md`, pasted output) go through `extract_text`.

Field names follow llama-bench's `test::get_fields()` (build_commit, build_number, gpu_info, backends, model_type,
model_size, model_n_params, n_prompt, n_gen, n_depth, avg_ts, stddev_ts, ...); unknown fields are ignored and
missing ones stay unknown, so files from older and newer builds read the same way.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

from tpsdb.collect import llamabench as lb
from tpsdb.collect.extract import (
    Candidate, PostContext, extract_text, model_name, new_record, refuse_unstorable_numbers,
)
from tpsdb.collect.machines import canonical_hardware, devices_hardware, hardware_mentions, select_devices
from tpsdb.units import params_b_from_count

__all__ = ["embedded_rows", "extract_bench_file", "rows_from_text"]

FORMATS = ("json", "jsonl", "csv", "sql", "md", "txt")
LLAMA_CPP = "llama.cpp"  # the software of every llama-bench result file
SQL_TABLES = ("test", "llama_bench")  # llama-bench's own table name, and the one compare-llama-bench uses


def extract_bench_file(path_or_bytes, fmt: str | None, ctx: PostContext, hardware: str | None,
                       suffix: str | None = None) -> list[Candidate]:
    """Candidates from one llama-bench output file: a path, or its bytes with their file name's `suffix` if any.
    Without `fmt`, a known suffix names the format, else the content does."""
    if isinstance(path_or_bytes, (bytes, bytearray)):
        data = bytes(path_or_bytes)
    else:
        path = Path(path_or_bytes)
        data, suffix = path.read_bytes(), path.suffix.lstrip(".").lower()
    text = data.decode("utf-8-sig", errors="replace")
    fmt = (fmt or _format_of(suffix, text)).lower()
    # the person ingesting the file knows the machine better than the file does: their name wins, canonicalised
    hardware = (canonical_hardware(hardware) or hardware) if hardware else None
    serving = _serving_result(text) if fmt in ("json", "jsonl") else None
    if serving is not None:
        return _serving_candidates(serving, text, ctx, hardware)
    if fmt in ("md", "markdown", "txt", "text"):
        # a post or a log holds tables and run logs, and may hold llama-bench's own -o json/jsonl/csv/sql output
        candidates = extract_text(text, ctx) + [
            _candidate(row, quote, i, ctx, None, slot=f"embedded{i}") for i, (row, quote) in enumerate(embedded_rows(text))]
        if hardware:
            for candidate in candidates:
                candidate.record["hardware"]["name"] = hardware
        return candidates
    return [_candidate(row, quote, i, ctx, hardware) for i, (row, quote) in enumerate(rows_from_text(text, fmt))]


_SQL_HEAD = re.compile(r"(CREATE|INSERT)\s", re.I)


def _format_of(suffix: str | None, text: str) -> str:
    if suffix in FORMATS:
        return suffix
    head = text.lstrip()[:200]
    if head.startswith("["):
        return "json"
    if head.startswith("{"):
        return "jsonl"
    if _SQL_HEAD.match(head):
        return "sql"
    if head.split("\n", 1)[0].startswith(("build_commit", '"build_commit"')):
        return "csv"
    return "txt"


# ------------------------------------------------------------------------------------------------- readers
def rows_from_text(text: str, fmt: str) -> list[tuple[dict, str]]:
    """(row as field -> value, the exact source text of the row) for each result row of the file."""
    readers = {"json": _json_rows, "jsonl": _jsonl_rows, "csv": _csv_rows, "sql": _sql_rows}
    if fmt not in readers:
        raise ValueError(f"unknown llama-bench output format {fmt!r} (expected one of {', '.join(FORMATS)})")
    return readers[fmt](text)


def _json_rows(text: str) -> list[tuple[dict, str]]:
    """The objects of a JSON array, each with its own text span (the quote), read with raw_decode."""
    if text.lstrip().startswith("{"):  # a single result object
        return _jsonl_rows(text) if "\n{" in text.strip() else [(json.loads(text), text.strip())]
    decoder, rows = json.JSONDecoder(), []
    position = text.index("[") + 1
    while True:
        position = _skip(text, position, " \t\r\n,")
        if position >= len(text) or text[position] == "]":
            return rows
        obj, end = decoder.raw_decode(text, position)
        if isinstance(obj, dict):
            rows.append((obj, text[position:end]))
        position = end


def _skip(text: str, position: int, chars: str) -> int:
    while position < len(text) and text[position] in chars:
        position += 1
    return position


def _jsonl_rows(text: str) -> list[tuple[dict, str]]:
    rows = []
    for line in text.splitlines():
        if line.strip().startswith("{"):
            obj = json.loads(line)
            if isinstance(obj, dict):
                rows.append((obj, line.strip()))
    return rows


MISALIGNED = "{}: {} values for {} columns (a row that does not match its header is not read: which value is whose is unknown)"


def _csv_rows(text: str) -> list[tuple[dict, str]]:
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        return []
    header = next(csv.reader([lines[0][1]]))
    rows = []
    for n, line in lines[1:]:
        values = next(csv.reader([line]))
        if len(values) != len(header):  # llama-bench's own README once showed such rows: every field shifted
            raise ValueError(MISALIGNED.format(f"CSV line {n}", len(values), len(header)))
        rows.append((dict(zip(header, values)), line))
    return rows


# A column list holds no parenthesis: a try from each "INSERT INTO t (" reads no further than the next one.
_INSERT = re.compile(r"INSERT\s+INTO\s+[\"`]?(?P<table>\w+)[\"`]?\s*\((?P<columns>[^()]*)\)\s*VALUES\s*\(", re.I)


def _sql_rows(text: str) -> list[tuple[dict, str]]:
    """The INSERT statements of llama-bench's `-o sql` (CREATE TABLE is not needed to read them)."""
    rows = []
    for match in _INSERT.finditer(text):
        if match["table"].lower() not in SQL_TABLES:
            continue
        values, end = _sql_values(text, match.end())
        columns = [c.strip().strip('"`') for c in match["columns"].split(",")]
        if len(values) != len(columns):
            line = text.count("\n", 0, match.start()) + 1
            raise ValueError(MISALIGNED.format(f"line {line}: INSERT", len(values), len(columns)))
        statement_end = text.find(";", end)
        rows.append((dict(zip(columns, values)), text[match.start(): statement_end + 1 if statement_end >= 0 else end]))
    return rows


_SQL_TOKEN = re.compile(r"[^,)\s]+")


def _sql_values(text: str, position: int) -> tuple[list, int]:
    """The values of `VALUES (...)` from position: 'quoted strings' ('' escapes a quote), numbers, NULL."""
    values: list = []
    while True:
        position = _skip(text, position, " \t\r\n,")
        if position >= len(text):
            raise ValueError("SQL: INSERT statement ends before its closing parenthesis")
        if text[position] == ")":
            return values, position + 1
        if text[position] == "'":
            end, parts = position + 1, []
            while True:
                quote = text.find("'", end)
                if quote < 0:
                    line = text.count("\n", 0, position) + 1
                    raise ValueError(f"line {line}: SQL string opened here is never closed")
                parts.append(text[end:quote])
                if text.startswith("''", quote):
                    parts.append("'")
                    end = quote + 2
                    continue
                values.append("".join(parts))
                position = quote + 1
                break
        else:
            token = _SQL_TOKEN.match(text, position)  # from position: no copy of the rest of the file
            if not token:  # a blank that is not a space, tab or line end
                position += 1
                continue
            word = token[0]
            values.append(None if word.upper() == "NULL" else word)
            position += len(word)


# llama-bench's JSON objects begin with build_commit (test::get_fields()); each object is read from its own start
# to the next one's at most, so that a pasted object cut short costs its own length, not the rest of the text.
_JSON_OBJECT = re.compile(r'\{\s*+"build_commit"\s*+:')
_CSV_HEADER = re.compile(r'^\s*+"?build_commit"?\s*+,', re.M)


def embedded_rows(text: str) -> list[tuple[dict, str]]:
    """llama-bench result rows pasted into a post or printed into a log (-o json, jsonl, csv or sql output among
    other text): each with its own text (the quote). Rows cut short or broken are left out."""
    rows: list[tuple[dict, str]] = []
    if '"avg_ts"' in text:
        decoder = json.JSONDecoder()
        starts = [m.start() for m in _JSON_OBJECT.finditer(text)] + [len(text)]
        for start, stop in zip(starts, starts[1:]):
            try:
                obj, end = decoder.raw_decode(text[start:stop])
            except ValueError:
                continue
            if isinstance(obj, dict) and "avg_ts" in obj:
                rows.append((obj, text[start:start + end]))
    if "avg_ts" in text and "build_commit" in text:
        for match in _CSV_HEADER.finditer(text):
            lines = []
            for line in text[match.start():].splitlines():
                if not line.strip() or line.lstrip().startswith(("```", "~~~")):
                    break
                lines.append(line)
            try:
                rows += [(row, quote) for row, quote in _csv_rows("\n".join(lines)) if row.get("avg_ts")]
            except ValueError:
                continue  # a row that does not match its header: the block is not read
    if "INSERT INTO" in text.upper():
        try:
            rows += [(row, quote) for row, quote in _sql_rows(text) if row.get("avg_ts")]
        except ValueError:
            pass  # a statement cut short or not matching its columns: its rows are not read
    return rows


# ------------------------------------------------------------------------------------------------- records
def _number(value) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None
    except OverflowError:  # an integer of 400 digits: as float() reads the same digits written "1e400"
        return math.inf if value > 0 else -math.inf


def _count(row: dict, name: str, field: str, reasons: list[str]) -> int | None:
    """A count (n_prompt, n_gen, ...): absent is 0; anything but a whole number a 64-bit column holds is unknown,
    with a reason ("inf", 1e20, "nan", 2.5)."""
    value = row.get(name)
    number = _number(value)
    if number is None:
        return 0
    if number - number != 0 or number != int(number) or abs(number) >= 2 ** 63:
        reasons.append(f"{field}: {name} = {value!r} is not a count (a whole number below 2**63)")
        return None
    return int(number)


def _params_b(n_params) -> float | None:
    # As llama-bench's markdown prints it ("%.2f B" / "%.2f M"), so a model reads the same from every format.
    n = _number(n_params)
    if not n:
        return None
    return params_b_from_count(n)


_CPU_BACKENDS = {"cpu", "blas", "cpu,blas", "blas,cpu", "accelerate"}


def _hardware(row: dict, stated: str | None, options: dict) -> str | None:
    """The machine of a row: the one the caller states; else the devices of gpu_info the row used (its devices,
    tensor_split and split_mode choose among them, as machines.select_devices reads llama-bench's options), or,
    for a run no GPU took part in (a CPU build, devices "none"), the processor cpu_info names."""
    if stated:
        return stated
    gpus = [g.strip() for g in str(row.get("gpu_info") or "").split(",") if g.strip()]
    backends = str(row.get("backends") or "").replace(" ", "").lower()
    if str(options.get("dev", "")).lower() == "none" or (not gpus and backends in _CPU_BACKENDS):
        cpu = str(row.get("cpu_info") or "")
        return next((m.name for m in hardware_mentions(cpu) if m.kind != "gpu"), None)
    if not gpus:
        return None
    chosen = select_devices([(k, name, False) for k, name in enumerate(gpus)], options)
    return devices_hardware([name for _, name, _ in chosen]) if chosen else None


OPTION_FIELDS = {"backends", "n_gpu_layers", "n_threads", "n_batch", "n_ubatch", "type_k", "type_v", "flash_attn",
                "use_mmap", "devices", "split_mode", "n_cpu_moe", "main_gpu", "no_kv_offload", "tensor_split",
                "tensor_buft_overrides", "embeddings", "no_op_offload", "no_host"}


def _options(row: dict, reasons: list[str]) -> dict:
    options = lb.options_from_columns({k: v for k, v in row.items() if k in OPTION_FIELDS})
    for key, value in list(options.items()):
        if isinstance(value, float) and value - value != 0:
            del options[key]
            reasons.append(f"software.options.{key}: {value} is not a finite number")
    if options.get("dev") == "auto":
        del options["dev"]  # the default: every device
    if options.get("ts") in ("0.00", ""):
        del options["ts"]
    if options.get("ot") == "none":
        del options["ot"]
    return options


def _candidate(row: dict, quote: str, index: int, ctx: PostContext, hardware: str | None,
               slot: str | None = None) -> Candidate:
    reasons: list[str] = []
    n_prompt, n_gen, depth = (_count(row, name, f"lengths.{field}", reasons) for name, field in
                              (("n_prompt", "prompt_tokens"), ("n_gen", "generated_tokens"),
                               ("n_depth", "context_depth")))
    build = _count(row, "build_number", "software.version", reasons)
    phase = "end_to_end" if n_prompt and n_gen else "prompt" if n_prompt else "generation" if n_gen else None
    label, quant = lb.split_model_label(str(row.get("model_type") or ""))
    params_b = _params_b(row.get("model_n_params"))
    size = _number(row.get("model_size"))

    files = [str(row["model_filename"])] if row.get("model_filename") else []
    options = _options(row, reasons)
    record = new_record(
        ctx, quote, hardware=_hardware(row, hardware, options),
        model={"name": model_name(label, params_b, ctx.protocol or {}, files), "params_b": params_b,
               "file_size_gb": round(size / 1e9, 2) if size else None},
        quantization=quant, software=LLAMA_CPP, version=lb.format_version(build, row.get("build_commit")),
        options=options, lengths=(n_prompt, n_gen, depth), users=1, figure="per_user",
        procedure=lb.LLAMA_BENCH, phase=phase, value=_number(row.get("avg_ts")), stddev=_number(row.get("stddev_ts")))
    candidate = Candidate(record, f"{slot or f'row{index}'}:{phase or 'unknown'}", reasons)
    refuse_unstorable_numbers(candidate)  # avg_ts "inf", stddev_ts "nan", model_size 1e999
    return candidate


# --------------------------------------------------------------------------------- serving benchmark results
# The result file of vLLM's benchmarks/benchmark_serving.py (`--save-result`, also `vllm bench serve`) and of
# SGLang's bench_serving.py: one JSON object whose keys name the run (backend, model_id, max_concurrency) and its
# totals (completed, total_input_tokens, total_output_tokens, duration, output_throughput,
# total_token_throughput). Its figures are the serving benchmark's, never llama-bench's: the reader names them so.
_SERVING_FIGURES = (("output_throughput", "generation"), ("total_token_throughput", "end_to_end"))
_SERVING_SOFTWARE = {"vllm": "vLLM", "sglang": "SGLang", "lmdeploy": "LMDeploy", "tgi": "TGI",
                     "tensorrt-llm": "TensorRT-LLM", "trt-llm": "TensorRT-LLM"}
NO_SERVER = ("software.name: the serving benchmark ran against backend {!r} (an OpenAI-compatible server), "
             "which does not say which server software answered")
NO_SERVING_CONCURRENCY = "concurrency.users: the result file states no max_concurrency (requests at once unknown)"
UNEVEN_LENGTHS = "lengths: the requests' {} lengths differ (a dataset, not one length)"


def _serving_result(text: str) -> dict | None:
    """The object of a serving benchmark's result file, or None when the file is not one."""
    if '"output_throughput"' not in text:
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        lines = [line for line in text.splitlines() if line.strip()]
        try:
            obj = json.loads(lines[-1]) if lines else None  # a JSON-lines file: its last result
        except ValueError:
            return None
    if isinstance(obj, dict) and "output_throughput" in obj and ("model_id" in obj or "backend" in obj):
        return obj
    return None


def _even(lengths) -> int | None:
    """The one length every request had (a list of counts all equal), else None."""
    if not isinstance(lengths, list) or not lengths:
        return None
    first = lengths[0]
    return first if isinstance(first, int) and not isinstance(first, bool) and all(x == first for x in lengths) \
        else None


def _serving_candidates(result: dict, text: str, ctx: PostContext, hardware: str | None) -> list[Candidate]:
    from tpsdb.collect.tools import quant_in_name  # the one reader of a quantization in a model's name

    backend = str(result.get("backend") or "")
    key = backend.lower().split("-")[0]
    software = _SERVING_SOFTWARE.get(key)
    reasons = [] if software else [NO_SERVER.format(backend)]
    users = result.get("max_concurrency")
    users = users if isinstance(users, int) and not isinstance(users, bool) else None
    if users is None:
        reasons.append(NO_SERVING_CONCURRENCY)
    prompt, output = _even(result.get("input_lens")), _even(result.get("output_lens"))
    for what, value in (("prompt", prompt), ("output", output)):
        if value is None and isinstance(result.get(f"{'input' if what == 'prompt' else 'output'}_lens"), list):
            reasons.append(UNEVEN_LENGTHS.format(what))
    name = str(result.get("model_id") or "") or None
    settings = ", ".join(f"{k}={result[k]}" for k in ("num_prompts", "request_rate", "max_concurrency", "burstiness")
                         if result.get(k) is not None)
    procedure = f"serving benchmark result file (backend {backend or '?'}; {settings})"
    out = []
    for k, (field_name, phase) in enumerate(_SERVING_FIGURES):
        value = _number(result.get(field_name))
        if value is None:
            continue
        quote = _json_pair(text, field_name)
        lengths = {"generation": (0, output, prompt), "end_to_end": (prompt, output, 0)}[phase]
        record = new_record(ctx, quote, hardware=hardware, model={"name": name, "params_b": None,
                                                                   "file_size_gb": None},
                            quantization=quant_in_name(name), software=software, version=None, options={},
                            lengths=lengths, users=users, figure="aggregate", procedure=procedure, phase=phase,
                            value=value)
        candidate = Candidate(record, f"serving{k}:{phase}", list(reasons))
        refuse_unstorable_numbers(candidate)
        out.append(candidate)
    return out


def _json_pair(text: str, key: str) -> str:
    """The `"key": value` text of a result file (the quote of its figure)."""
    match = re.search(r'"' + re.escape(key) + r'"\s*+:\s*+[-+\w.]{1,40}', text)
    return match[0] if match else f'"{key}"'
