"""The vLLM and SGLang serving benchmarks' text summary (`vllm bench serve`, benchmark_serving.py,
`python -m sglang.bench_serving`): one block between `Benchmark Result` and a rule of `=`.

    ============ Serving Benchmark Result ============
    Maximum request concurrency:             16
    Output token throughput (tok/s):         1234.56
    Total Token throughput (tok/s):          2345.67
    ==================================================

Aggregate figures over the `Maximum request concurrency` users (else `--max-concurrency`; neither: a rejection);
lengths from `--random-input-len` / `--random-output-len`; the software from the `Backend:` line, else the
benchmark's own (a benchmark that measured another server names none). A peak throughput is kept as a rejection.
The formats: vLLM benchmarks/benchmark_serving.py, SGLang python/sglang/bench_serving.py. Result files (JSON) are
read by tpsdb.collect.benchfiles.
"""

from __future__ import annotations

import re

from tpsdb.collect.reading import Reading
from tpsdb.collect.tools._post import Position, Post, arg, int_arg, number, quant_in_name

NAME = "serving"
VLLM, SGLANG = "vLLM", "SGLang"
SOFTWARE = (VLLM, SGLANG)
COMMANDS = (r"vllm\s++bench\s++serve", r"benchmark_serving\.py", r"sglang\.bench_serving", r"bench_serving\.py")
COMMAND_WORDS = ("bench",)
STATED_VERSIONS = {"vllm": VLLM, "sglang": SGLANG}
OTHER_COMMANDS: tuple = ()

PEAK_FIGURE = "nature: a peak over the run, not the run's throughput"
NO_CONCURRENCY = "concurrency.users: the serving benchmark's request concurrency is not stated"

_FIELD = re.compile(r"^[\s#]*+(?P<key>[A-Za-z][^:\n]{0,80}):\s*+(?P<value>\S++)")
_PHASES = {"output token throughput (tok/s)": "generation", "input token throughput (tok/s)": "prompt",
           "total token throughput (tok/s)": "end_to_end", "total throughput (tok/s)": "end_to_end"}
_CONCURRENCY_KEYS = ("maximum request concurrency", "max request concurrency", "max concurrency")

Block = list[tuple[int, str, str, str]]  # (line, key, value, the line)


def wants(text: str, reading: Reading) -> bool:
    return "throughput" in text


def read(post: Post) -> None:
    last: Position = (-1, -1)  # the last figure of the summary read before: a run's block starts after it
    for i, piece in enumerate(post.reading.pieces):
        if piece.kind != "text" or "throughput" not in "\n".join(piece.lines):
            continue
        block: Block = []
        started = False
        for j, line in enumerate(piece.lines):
            if "Benchmark Result" in line:
                started = True
                continue
            stripped = line.strip(" #")
            if started and len(stripped) >= 10 and not stripped.strip("="):
                last = _block(post, i, block, last)
                block, started = [], False
                continue
            if ":" in line:
                match = _FIELD.match(line)
                if match:
                    block.append((j, " ".join(match["key"].lower().split()), match["value"], line.strip()))
        last = _block(post, i, block, last)


def _block(post: Post, i: int, block: Block, last: Position) -> Position:
    """Adds the figures of one summary; returns the position of its last figure (`last` when it has none)."""
    fields = {key: value for _, key, value, _ in block}
    figures = [(j, key, value, line) for j, key, value, line in block
               if key in _PHASES or key.startswith("peak output token throughput")]
    if not figures:
        return last
    pos = (i, figures[0][0])
    since = last
    tool, command = post.run_command(NAME, since, pos)
    backend = (fields.get("backend") or arg(command, "--backend") or "").lower()
    if backend.startswith("sglang") or (not backend and tool and "sglang" in tool):
        software: str | None = SGLANG
    elif backend.startswith("vllm") or (not backend and tool in ("vllm bench serve", "benchmark_serving.py")):
        software = VLLM
    else:
        software = None  # another server measured by the benchmark, or no word of which
    concurrency = next((fields[k] for k in _CONCURRENCY_KEYS if k in fields), None)
    users = int(concurrency) if concurrency and concurrency.isdecimal() and len(concurrency) < 19 else \
        int_arg(command, "--max-concurrency")
    name = arg(command, "--model", "--model-path")
    prompt = int_arg(command, "--random-input-len", "--input-len", "--random-input", "--sonnet-input-len")
    output = int_arg(command, "--random-output-len", "--output-len", "--random-output", "--sonnet-output-len")
    for j, key, value_text, line in figures:
        value = number(value_text)
        if value is None:
            continue
        phase = _PHASES.get(key, "generation")
        reasons = [] if key in _PHASES else [PEAK_FIGURE]
        if users is None:
            reasons.append(NO_CONCURRENCY)
        lengths = {"prompt": (prompt, 0, 0), "generation": (0, output, prompt),
                   "end_to_end": (prompt, output, 0)}[phase]
        post.add(line, (i, j), f"serving{len(post.out)}:{phase}", software=software,
                 version=post.version(software, (i, j)) if software else None,
                 model={"name": name, "params_b": None, "file_size_gb": None}, quantization=quant_in_name(name),
                 lengths=lengths, users=users, figure="aggregate", command=command,
                 tool=tool or "serving benchmark", phase=phase, value=value, reasons=reasons, since=since)
    return (i, figures[-1][0])
