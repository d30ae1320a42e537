"""Speed figures other tools print, read from a post's text: one candidate per figure, never a guessed condition.

- llama.cpp run logs: `llama_print_timings` / `llama_perf_context_print` lines (llama-cli, main, llama-simple)
  and llama-server's `slot print_timing` block; the model from the `llama_model_loader: … from FILE` line (and
  its `file type` / `model params` / `file size` lines), else from the command's `-m`;
- ik_llama.cpp's `llama-sweep-bench` table (PP, TG, N_KV, S_PP t/s, S_TG t/s: one user, at depth N_KV);
- `ollama run --verbose` (`prompt eval rate:` / `eval rate: 45.20 tokens/s`, counts from `… count: N token(s)`);
- `mlx_lm.generate` (`Prompt: 12 tokens, 85.1 tokens-per-sec`, `Generation: 128 tokens, 45.3 tokens-per-sec`);
- the vLLM and SGLang serving benchmark summaries (`Output token throughput (tok/s)`, aggregate over the
  `Maximum request concurrency` users).

The procedure is the command line the post shows; the version only one the post states; the machine as for the
tables (extract.Reading). What the post does not say stays unknown, and the validator (or a reason here) names it.
Formats read from the tools' sources: llama.cpp src/llama-context.cpp (llama_perf_context_print) and
tools/server (print_timings), ollama api/types.go (Metrics.Summary), mlx-lm generate.py, vLLM
benchmarks/benchmark_serving.py, SGLang python/sglang/bench_serving.py, ik_llama.cpp examples/sweep-bench.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath

from tpsdb.collect import llamabench as lb
from tpsdb.collect.reading import (
    SAMPLING_SPEED, Candidate, Reading, command_run_options, new_record, refuse_unstorable_numbers,
)
from tpsdb.record import named_quantization

__all__ = ["tool_figures"]

Position = tuple[int, int]

NO_COMMAND = "nature.procedure: the post does not show the {} command that printed this figure"
PEAK_FIGURE = "nature: a peak over the run, not the run's throughput"
NO_CONCURRENCY = "concurrency.users: the serving benchmark's request concurrency is not stated"
SERVER_SLOTS = "concurrency.users: llama-server ran {} slots (--parallel): how many requests ran at once is unknown"

LLAMA_CPP, IK_LLAMA_CPP, OLLAMA, MLX_LM, VLLM, SGLANG = "llama.cpp", "ik_llama.cpp", "ollama", "mlx-lm", "vLLM", \
    "SGLang"

# ------------------------------------------------------------------------------------------------ patterns
# Linear on any line (tests/test_linear_time.py): fixed words first, possessive runs, bounded lazy parts.
_COMMAND = re.compile(
    r"(?<![\w-])(?P<tool>llama-cli|llama-server|llama-simple|llama-run|llama-completion|llama-sweep-bench"
    r"|llama-perplexity|llama-embedding|llama-imatrix"
    r"|ollama\s++run|mlx_lm\.generate|mlx_lm\s++generate|vllm\s++bench\s++serve|benchmark_serving\.py"
    r"|sglang\.bench_serving|bench_serving\.py)(?:\.exe)?(?P<args>\s.*+)?$")
_MAIN_COMMAND = re.compile(r"(?:^|[\s/\\])(?P<tool>main)(?:\.exe)?(?P<args>\s++-.*+)$")  # llama.cpp before 2024
_TOOL_GROUP = {"llama-cli": "llama", "llama-server": "llama", "llama-simple": "llama", "llama-run": "llama",
               "llama-perplexity": "llama", "llama-embedding": "llama", "llama-imatrix": "llama",
               "llama-completion": "llama", "main": "llama", "llama-sweep-bench": "sweep", "ollama run": "ollama",
               "mlx_lm.generate": "mlx", "mlx_lm generate": "mlx", "vllm bench serve": "serving",
               "benchmark_serving.py": "serving", "sglang.bench_serving": "serving", "bench_serving.py": "serving"}
_TOOL_VERSION = re.compile(
    r"(?<![\w.-])(?P<tool>ollama|mlx[-_]lm|vllm|sglang)(?:\s*+(?:==|version(?:\s++is)?:?|v|:))?\s*+v?"
    r"(?P<version>\d{1,4}\.\d{1,4}(?:\.\d{1,4})?(?:\.?(?:post|rc|dev)\d{1,4})?)(?![\w.])", re.I)
_LOG_BUILD = re.compile(r"\bbuild:\s*+(?P<number>\d{1,6})\s*+\((?P<commit>[0-9a-f]{6,40})\)")  # main's log header
_FILE_TYPE = re.compile(r"\b(?:file type|model ftype)\s*+=\s*+(?P<ftype>[^\n]{1,80})$")
_MODEL_PARAMS = re.compile(r"\bmodel params\s*+=\s*+(?P<params>\d[\d.]{0,20}\s*+[BMK])\b")
_FILE_SIZE = re.compile(r"\b(?:file|model) size\s*+=\s*+(?P<size>\d[\d.]{0,20}\s*+[GM]i?B)\b")
_OLLAMA = re.compile(r"^\s*+(?P<what>prompt eval|eval)\s++(?P<kind>count|rate):\s*+(?P<n>\d[\d.,]*+)\s*+"
                     r"(?:token\(s\)|tokens/s)")
_MLX = re.compile(r"^\s*+(?P<what>Prompt|Generation):\s*+(?:(?P<n>\d++)\s++tokens?,\s*+)?"
                  r"(?P<tps>\d[\d.]*+)\s*+tokens-per-sec")
_FIELD = re.compile(r"^[\s#]*+(?P<key>[A-Za-z][^:\n]{0,80}):\s*+(?P<value>\S++)")
_QUANT_IN_NAME = re.compile(
    r"(?<![A-Za-z0-9])(?P<quant>(?:UD-)?I?Q\d_[A-Za-z0-9_]++|T?Q\d_\d|BF16|F16|F32|FP8|FP16|AWQ|GPTQ|MXFP4|NVFP4|W8A8|"
    r"W4A16|INT4|INT8|[3468]bit)(?![A-Za-z0-9])", re.I)
_SHARD = re.compile(r"-\d{5}-of-\d{5}$")

_SERVING_PHASES = {"output token throughput (tok/s)": "generation", "input token throughput (tok/s)": "prompt",
                   "total token throughput (tok/s)": "end_to_end", "total throughput (tok/s)": "end_to_end"}
_CONCURRENCY_KEYS = ("maximum request concurrency", "max request concurrency", "max concurrency")


@dataclass
class _Clues:
    """The commands, stated versions and model-loader lines of a post, each with its position, in order."""

    commands: dict[str, list[tuple[Position, str, str]]]  # group -> (pos, tool, command line)
    versions: dict[str, list[tuple[Position, str]]]  # software -> (pos, version)
    builds: list[tuple[Position, str]]
    loader: dict[str, list[tuple[Position, str]]]  # "file" | "ftype" | "params" | "size" -> (pos, text)


def _nearest(items: list, pos: Position):
    """The last item before the position, else the first after (items are (pos, …) in order)."""
    if not items:
        return None
    k = bisect_left(items, pos, key=_first)
    if k:
        return items[k - 1]
    k = bisect_right(items, pos, key=_first)
    return items[k] if k < len(items) else None


def _first(item):
    return item[0]


def _within(items: list, since: Position, pos: Position, whole: bool = False):
    """The value of the last item strictly between `since` and `pos` (items are (pos, …, value) in order), or the
    whole item with `whole`; None when the block holds none."""
    k = bisect_left(items, pos, key=_first)
    if k and items[k - 1][0] > since:
        return items[k - 1] if whole else items[k - 1][-1]
    return None


def _only(items: list):
    """The value all the items share (the post states one), else None."""
    values = {item[-1] for item in items}
    return items[0][-1] if len(values) == 1 else None


_UNSET = object()


def _text_lines(reading: Reading):
    for i, piece in enumerate(reading.pieces):
        if piece.kind in ("text", "heading"):
            for j, line in enumerate(piece.lines):
                yield (i, j), line


def _read_clues(reading: Reading) -> _Clues:
    clues = _Clues({}, {}, [], {})
    for i, piece in enumerate(reading.pieces):
        if piece.kind not in ("text", "heading"):
            continue
        whole = "\n".join(piece.lines)
        if any(word in whole for word in ("llama-", "main", "ollama", "mlx_lm", "bench")):
            for j, line in enumerate(lb.join_continuations(whole).splitlines()):
                match = _last(_COMMAND, line) or (_MAIN_COMMAND.search(line) if "main" in line else None)
                if match and (match["args"] or "").strip():
                    tool = " ".join(match["tool"].split())
                    args = match["args"].split("`", 1)[0]  # a command quoted inline ends at its backtick
                    command = f"{tool} {' '.join(args.split())}".strip()
                    clues.commands.setdefault(_TOOL_GROUP[tool], []).append(((i, j), tool, command))
        lower = whole.lower()
        stated = any(word in lower for word in ("ollama", "mlx", "vllm", "sglang"))
        for j, line in enumerate(piece.lines):
            if stated:
                for match in _TOOL_VERSION.finditer(line):
                    software = _SOFTWARE[match["tool"].lower().replace("_", "-")]
                    clues.versions.setdefault(software, []).append(((i, j), match["version"]))
            if "build:" in line and (build := _LOG_BUILD.search(line)):
                clues.builds.append(((i, j), lb.format_version(build["number"], build["commit"]) or ""))
            if "llama_model_loader" in line and (path := _loaded_file(line)):
                clues.loader.setdefault("file", []).append(((i, j), path))
            elif "=" in line:
                for key, pattern in (("ftype", _FILE_TYPE), ("params", _MODEL_PARAMS), ("size", _FILE_SIZE)):
                    found = pattern.search(line)
                    if found:
                        clues.loader.setdefault(key, []).append(((i, j), found[1]))
    return clues


def _loaded_file(line: str) -> str | None:
    """The model file of "llama_model_loader: loaded meta data with … tensors from PATH (version GGUF V3 (latest))"
    (split, not matched: a path may hold anything)."""
    start = line.find("llama_model_loader: loaded meta data with")
    start = line.find(" from ", start) if start != -1 else -1
    end = line.rfind(" (version GGUF")
    return line[start + 6:end].strip() or None if -1 < start < end else None


_SOFTWARE = {"ollama": OLLAMA, "mlx-lm": MLX_LM, "vllm": VLLM, "sglang": SGLANG}


def _last(pattern: re.Pattern, line: str):
    match = None
    for match in pattern.finditer(line):  # the last one: "make llama-cli && ./llama-cli -m …"
        pass
    return match


def _arg(command: str | None, *names: str) -> str | None:
    """The value of an option of a command line (`-m x`, `--model=x`), unquoted."""
    tokens = (command or "").split()
    for k, token in enumerate(tokens):
        for name in names:
            if token == name and k + 1 < len(tokens):
                return tokens[k + 1].strip("\"'")
            if token.startswith(name + "="):
                return token[len(name) + 1:].strip("\"'")
    return None


def _int_arg(command: str | None, *names: str) -> int | None:
    value = _arg(command, *names)
    return int(value) if value and value.isdecimal() and len(value) < 19 else None


# a path into a directory named llama.cpp (mainline's clone) from which a llama.cpp tool runs
_OTHER_TREE = re.compile(r"(?<![\w.-])llama\.cpp[/\\](?:[\w.-]{1,40}[/\\]){0,3}llama-[a-z-]{2,20}")
OTHER_TREE = ("software.name: the run's command runs {} (a llama.cpp tree, not ik_llama.cpp's): which fork printed "
              "it is unknown")


def _model_arg(command: str | None) -> str | None:
    """The model file a command's -m names; a shell variable ("$model", "${MODEL}", "%MODEL%") names none."""
    path = _arg(command, "-m", "--model")
    return None if path is None or path.lstrip("\"'").startswith(("$", "%")) else path


def quant_in_name(name: str | None) -> str | None:
    """A quantization the model's name states ("Qwen3-8B-Q4_K_M.gguf", "Llama-3.2-3B-Instruct-4bit", "-AWQ")."""
    if not name:
        return None
    for match in _QUANT_IN_NAME.finditer(name):
        quant = match["quant"]
        if quant.lower().endswith("bit"):
            quant = f"MLX_{quant}"
        named = named_quantization(quant)
        if named:
            return named
    return None


def _file_stem(path: str) -> str:
    name = PureWindowsPath(path).name if "\\" in path else PurePosixPath(path).name
    stem = name[:-5] if name.lower().endswith(".gguf") else name
    return _SHARD.sub("", stem)


class _Post:
    """One post's tool outputs read into candidates."""

    def __init__(self, reading: Reading):
        self.reading = reading
        self.clues = _read_clues(reading)
        self.out: list[Candidate] = []
        self._only_file: object = _UNSET
        self._only_command: dict[str, object] = {}
        self._only_facts: dict[str, str | None] = {}
        self._serving_last: Position = (-1, -1)  # the last figure of the serving summary read before
        self.run_timings: list[Position] = []  # where llama.cpp runs printed their timings (llama_logs)

    def add(self, quote: str, pos: Position, slot: str, *, software: str | None, version: str | None, model: dict,
            quantization: str | None, lengths: tuple, users: int | None, figure: str, command: str | None,
            tool: str, phase: str, value: float, reasons: list[str] | None = None,
            since: Position | None = None) -> None:
        hardware, unknown = self.reading.hardware_at(pos, since=since, options=command_run_options(command))
        record = new_record(self.reading.ctx, quote, hardware=hardware, model=model, quantization=quantization,
                            version=version, options={}, lengths=lengths, users=users, figure=figure,
                            procedure=command, phase=phase, value=value)
        record["software"]["name"] = software
        reasons = list(reasons or [])
        if unknown:
            reasons.append(unknown)
        if command is None:
            reasons.append(NO_COMMAND.format(tool))
        candidate = Candidate(record, slot, reasons)
        refuse_unstorable_numbers(candidate)
        self.out.append(candidate)

    def version(self, software: str, pos: Position) -> str | None:
        found = _nearest(self.clues.versions.get(software, []), pos)
        return found[1] if found else None

    def run_model(self, since: Position, pos: Position, command: str | None) -> tuple[dict, str | None]:
        """The model of the run whose block is (since, pos): its loader lines, else its command's `-m`. A run's
        model facts come from its own block only (D5: a second, trimmed log must not take the first log's model or
        parameters); a block that names no model file at all takes the post's, when the post names exactly one."""
        path = _within(self.clues.loader.get("file", []), since, pos) or _model_arg(command)
        own = {key: _within(self.clues.loader.get(key, []), since, pos) for key in ("ftype", "params", "size")}
        if path or any(own.values()):
            # a block with loader lines of its own is its own model's, even when its file line is not read (a
            # path wrapped over two lines): never the post's other file (issue 19, a Q8_0 run named mix-IQ3_K)
            facts = own
        else:
            path = self.only_model_file()
            facts = {key: self.only_loader_fact(key) if path else None for key in ("ftype", "params", "size")}
        name = _file_stem(path) if path else None
        ftype, params, size = facts["ftype"], facts["params"], facts["size"]
        quant = (lb.normalize_quant(ftype) if ftype else None) or quant_in_name(name)
        return ({"name": name, "params_b": lb.parse_params_b(params) if params else None,
                 "file_size_gb": lb.parse_size_gb(size) if size else None}, quant)

    def only_loader_fact(self, key: str) -> str | None:
        """The value all the post's loader lines of that kind share, else None (computed once per post)."""
        if key not in self._only_facts:
            self._only_facts[key] = _only(self.clues.loader.get(key, []))
        return self._only_facts[key]

    def only_model_file(self) -> str | None:
        """The one model file the whole post names (loader lines and the llama.cpp commands' -m), else None."""
        if self._only_file is _UNSET:
            paths = [p for _, p in self.clues.loader.get("file", [])]
            paths += [a for _, _, c in self.clues.commands.get("llama", []) if (a := _model_arg(c))]
            stems = {_file_stem(p) for p in paths}
            self._only_file = paths[0] if len(stems) == 1 else None
        return self._only_file

    def run_command(self, group: str, since: Position, pos: Position) -> tuple[str, str] | tuple[None, None]:
        """The command of the run whose block is (since, pos): the last one in the block, else the post's only
        command of that tool (a command shown once for several logs, or after its log)."""
        commands = self.clues.commands.get(group, [])
        found = _within(commands, since, pos, whole=True)
        if found is None and commands:
            only = self._only_command.get(group, _UNSET)
            if only is _UNSET:  # once per post, not per figure (linear time)
                only = self._only_command[group] = commands[0] if len({c for _, _, c in commands}) == 1 else None
            found = only
        return (found[1], found[2]) if found else (None, None)

    def llama_version(self, pos: Position, since: Position | None = None) -> str | None:
        """The build of a run: its block's build line; else the post's only build; else (no build line at all)
        the version the post states (extract.Reading.version_at). Several builds and none in the block: unknown."""
        builds = self.clues.builds
        if since is not None:
            found = _within(builds, since, pos)
            if found:
                return found
        if builds:
            # the post's only build, when printed before the run's figures and no other run printed its timings in
            # between: a build after them opens a later run's block, a build before another run's timings is that
            # run's (issue 19: mainline's "build: 5273" under an ik_llama.cpp server's and sweep-bench's figures)
            at = builds[0][0]
            k = bisect_right(self.run_timings, at)
            other_run = k < len(self.run_timings) and self.run_timings[k] < pos
            return builds[0][1] if len({b for _, b in builds}) == 1 and at < pos and not other_run else None
        return self.reading.version_at(pos)

    # ------------------------------------------------------------------------------------------ readers
    def llama_logs(self) -> None:
        timings = []
        server_at: Position | None = None  # llama-server's "slot print_timing:" line: its timings follow it
        for pos, line in _text_lines(self.reading):
            if "print_timing" in line and "llama_print_timing" not in line:
                server_at = pos
            timing = lb.parse_timing(line) if "tokens per second" in line else None
            if timing:
                server = server_at is not None and server_at[0] == pos[0] and 0 <= pos[1] - server_at[1] <= 2
                timings.append((pos, line, timing, server))
                self.run_timings.append(pos)
        count = 0
        since: Position = (-1, -1)  # where the current run's block starts: after the previous run's timings
        group_start, group_prompt = 0, None
        for k, (pos, line, timing, server) in enumerate(timings):
            previous = timings[k - 1][0] if k else None
            if previous is None or previous[0] != pos[0] or pos[1] - previous[1] > 4:  # a new run's timings
                since = previous if previous is not None else (-1, -1)
                group_start, group_prompt = k, None
            first = timings[group_start][0]
            tool, command = self.run_command("llama", since, first)
            if server:
                tool, command = ("llama-server", command) if tool == "llama-server" else ("llama-server", None)
            model, quant = self.run_model(since, first, command)
            reasons = [SAMPLING_SPEED] if timing.sampling else []
            slots = _int_arg(command, "-np", "--parallel")
            if server and slots and slots > 1:
                reasons.append(SERVER_SLOTS.format(slots))
            if timing.phase == "prompt" and not timing.sampling:
                lengths: tuple = (timing.tokens, 0, 0)
                if group_prompt is None:
                    group_prompt = timing.tokens
            else:
                # generation follows the run's own prompt (its prompt line in the same timings), at that depth
                lengths = (0, timing.tokens, None if server else group_prompt)
            software: str | None = self.reading.software_at(pos)
            at = _within(self.clues.commands.get("llama", []), since, first, whole=True)
            if software == IK_LLAMA_CPP and at and (tree := self._mainline_tree((at[0][0], at[0][1] - 1), first)):
                # a post of ik_llama.cpp's repository running a binary of another llama.cpp tree (a comparison
                # with mainline): which fork printed it is not the repository's to say (issue 19)
                software = None
                reasons = reasons + [OTHER_TREE.format(tree)]
            self.add(line.strip(), pos, f"log{count}:{timing.phase}", software=software,
                     version=self.llama_version(first, since), model=model, quantization=quant, lengths=lengths,
                     users=1, figure="per_user", command=command, tool=tool or "llama.cpp", phase=timing.phase,
                     value=timing.tokens_per_second, reasons=reasons, since=since)
            count += 1

    def _mainline_tree(self, since: Position, until: Position) -> str | None:
        """The path of a llama.cpp tree other than ik_llama.cpp's that the run's command runs from ("./llama.cpp/
        llama-cli", "~/dev-ai/llama.cpp/build/bin/..."), read from its command (a joined command's line number is
        at most its first line's) to its figures, when those lines name no ik_llama.cpp tree."""
        found = None
        for i in range(max(since[0], 0), until[0] + 1):
            piece = self.reading.pieces[i]
            if piece.kind != "text":
                continue
            lo = since[1] + 1 if i == since[0] else 0
            hi = until[1] if i == until[0] else len(piece.lines)
            for line in piece.lines[lo:hi]:
                if "ik_llama" in line:
                    return None
                if found is None and "llama-" in line and (match := _OTHER_TREE.search(line)):
                    found = match[0]
        return found

    def sweep_tables(self) -> None:
        t = -1
        previous_sweep = -1  # the sweep-bench table before: another run's (its loader lines are not this one's)
        for i, piece in enumerate(self.reading.pieces):
            if piece.kind != "table":
                continue
            t += 1
            table = piece.table
            names = [h.strip().lower() for h in table.header]
            if "b" in names or not {"pp", "tg", "n_kv", "s_pp t/s", "s_tg t/s"} <= set(names):
                continue
            column = {name: k for k, name in enumerate(names)}
            pos = (i, 0)
            # the table's block: since the previous figure table, or since the run that printed its timings last
            # (its build and model are that run's, issue 19)
            block: Position = (max(self.reading.previous_table(i), previous_sweep), 1 << 30)
            previous_sweep = i
            k = bisect_left(self.run_timings, pos)
            if k and self.run_timings[k - 1] > block:
                block = self.run_timings[k - 1]
            tool, command = self.run_command("sweep", block, pos)
            model, quant = self.run_model(block, pos, command)
            version = self.llama_version(pos, block)
            software = self.reading.software_at(pos, IK_LLAMA_CPP)
            for r, (row, quote) in enumerate(zip(table.rows, table.quotes)):
                cells = [row[column[n]] if column[n] < len(row) else "" for n in ("pp", "tg", "n_kv")]
                if not all(c.isdecimal() for c in cells):
                    continue
                pp, tg, depth = map(int, cells)
                for key, phase, lengths in (("s_pp t/s", "prompt", (pp, 0, depth)),
                                            ("s_tg t/s", "generation", (0, tg, depth))):
                    k = column[key]
                    value = lb.parse_value(row[k]) if k < len(row) else None
                    if value is None:
                        continue
                    self.add(quote, pos, f"t{t}:r{r}:{phase}", software=software, version=version,
                             model=dict(model), quantization=quant, lengths=lengths, users=1, figure="per_user",
                             command=command, tool="llama-sweep-bench", phase=phase, value=value[0])

    def ollama(self) -> None:
        counts: dict[str, tuple[int, str]] = {}  # "prompt eval" | "eval" -> (count, its line)
        # a run's block: after the previous run's statistics ("total duration" starts a run's statistics)
        since: Position = (-1, -1)
        last: Position = (-1, -1)
        for pos, line in _text_lines(self.reading):
            if "total duration" in line:
                counts = {}
                since = last
            if "eval" not in line:
                continue
            match = _OLLAMA.match(line)
            if not match:
                continue
            what = match["what"]
            if match["kind"] == "count":
                if match["n"].isdecimal():
                    counts[what] = (int(match["n"]), line.strip())
                continue
            value = _number(match["n"])
            if value is None:
                continue
            phase = "prompt" if what == "prompt eval" else "generation"
            count, count_line = counts.get(what, (None, ""))
            prompt = counts.get("prompt eval", (None, ""))[0]
            lengths = (count, 0, 0) if phase == "prompt" else (0, count, prompt)
            last = pos
            tool, command = self.run_command("ollama", since, pos)
            # the model: the first argument after "run" that is no option ("ollama run --verbose llama2")
            name = next((a for a in (command or "").split()[2:] if not a.startswith("-")), None)
            name = name if name and not name.startswith(("'", '"')) else None
            quote = f"{count_line}\n{line.strip()}" if count_line else line.strip()
            self.add(quote, pos, f"ollama{len(self.out)}:{phase}", software=OLLAMA,
                     version=self.version(OLLAMA, pos), model={"name": name, "params_b": None, "file_size_gb": None},
                     quantization=quant_in_name(name), lengths=lengths, users=1, figure="per_user",
                     command=command, tool="ollama run --verbose", phase=phase, value=value, since=since)

    def mlx(self) -> None:
        prompt: int | None = None
        since: Position = (-1, -1)  # a run's block: after the previous run's figures ("Prompt:" starts a run's)
        last: Position = (-1, -1)
        for pos, line in _text_lines(self.reading):
            if "tokens-per-sec" not in line:
                continue
            match = _MLX.match(line)
            if not match:
                continue
            value = _number(match["tps"])
            if value is None:
                continue
            count = int(match["n"]) if match["n"] else None
            phase = "prompt" if match["what"] == "Prompt" else "generation"
            if phase == "prompt" or pos[0] != last[0] or pos[1] - last[1] > 2:
                since, prompt = last, None  # a new run: the depth of its generation is its own prompt only
            if phase == "prompt":
                prompt = count
            last = pos
            lengths = (count, 0, 0) if phase == "prompt" else (0, count, prompt)
            tool, command = self.run_command("mlx", since, pos)
            name = _arg(command, "--model")
            self.add(line.strip(), pos, f"mlx{len(self.out)}:{phase}", software=MLX_LM,
                     version=self.version(MLX_LM, pos), model={"name": name, "params_b": None, "file_size_gb": None},
                     quantization=quant_in_name(name), lengths=lengths, users=1, figure="per_user",
                     command=command, tool="mlx_lm.generate", phase=phase, value=value, since=since)

    def serving(self) -> None:
        for i, piece in enumerate(self.reading.pieces):
            if piece.kind != "text" or "throughput" not in "\n".join(piece.lines):
                continue
            block: list[tuple[int, str, str, str]] = []  # (line, key, value, the line)
            started = False
            for j, line in enumerate(piece.lines):
                if "Benchmark Result" in line:
                    started = True
                    continue
                stripped = line.strip(" #")
                if started and len(stripped) >= 10 and not stripped.strip("="):
                    self.serving_block(i, block)
                    block, started = [], False
                    continue
                if ":" in line:
                    match = _FIELD.match(line)
                    if match:
                        block.append((j, " ".join(match["key"].lower().split()), match["value"], line.strip()))
            self.serving_block(i, block)

    def serving_block(self, i: int, block: list[tuple[int, str, str, str]]) -> None:
        fields = {key: value for _, key, value, _ in block}
        figures = [(j, key, value, line) for j, key, value, line in block
                   if key in _SERVING_PHASES or key.startswith("peak output token throughput")]
        if not figures:
            return
        pos = (i, figures[0][0])
        since, self._serving_last = self._serving_last, (i, figures[-1][0])  # a run's block: after the previous
        tool, command = self.run_command("serving", since, pos)
        backend = (fields.get("backend") or _arg(command, "--backend") or "").lower()
        if backend.startswith("sglang") or (not backend and tool and "sglang" in tool):
            software: str | None = SGLANG
        elif backend.startswith("vllm") or (not backend and tool in ("vllm bench serve", "benchmark_serving.py")):
            software = VLLM
        else:
            software = None  # another server measured by the benchmark, or no word of which
        concurrency = next((fields[k] for k in _CONCURRENCY_KEYS if k in fields), None)
        users = int(concurrency) if concurrency and concurrency.isdecimal() and len(concurrency) < 19 else \
            _int_arg(command, "--max-concurrency")
        name = _arg(command, "--model", "--model-path")
        prompt = _int_arg(command, "--random-input-len", "--input-len", "--random-input", "--sonnet-input-len")
        output = _int_arg(command, "--random-output-len", "--output-len", "--random-output", "--sonnet-output-len")
        for j, key, value_text, line in figures:
            value = _number(value_text)
            if value is None:
                continue
            phase = _SERVING_PHASES.get(key, "generation")
            reasons = [] if key in _SERVING_PHASES else [PEAK_FIGURE]
            if users is None:
                reasons.append(NO_CONCURRENCY)
            lengths = {"prompt": (prompt, 0, 0), "generation": (0, output, prompt),
                       "end_to_end": (prompt, output, 0)}[phase]
            self.add(line, (i, j), f"serving{len(self.out)}:{phase}", software=software,
                     version=self.version(software, (i, j)) if software else None,
                     model={"name": name, "params_b": None, "file_size_gb": None}, quantization=quant_in_name(name),
                     lengths=lengths, users=users, figure="aggregate", command=command,
                     tool=tool or "serving benchmark", phase=phase, value=value, reasons=reasons, since=since)


def _number(text: str) -> float | None:
    text = text.rstrip(".,")
    try:
        return float(text.replace(",", "")) if text[:1].isdigit() else None
    except ValueError:
        return None


def tool_figures(reading: Reading) -> list[Candidate]:
    """Every figure the post's text prints in a shape of the tools above (llama-bench tables are read apart)."""
    text = "\n".join(line for _, line in _text_lines(reading))
    wanted = ("tokens per second" in text, "tokens/s" in text, "tokens-per-sec" in text, "throughput" in text,
              any(p.kind == "table" and "n_kv" in " ".join(p.table.header).lower() for p in reading.pieces))
    if not any(wanted):
        return []
    post = _Post(reading)
    readers = (post.llama_logs, post.ollama, post.mlx, post.serving, post.sweep_tables)
    for reader, needed in zip(readers, wanted):
        if needed:
            reader()
    return post.out
