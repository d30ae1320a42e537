"""What every tool-output reader shares: one post's clues read once, and the door a figure becomes a candidate by.

`Post` holds a post's Reading (tpsdb.collect.reading: the machine, the build and the software around a position),
the commands of every tool and the versions the post states, each with its position, and the llama.cpp run clues
(build lines, model-loader lines) that two shapes read (run logs and sweep-bench). A reader module calls
`Post.add` for each figure; `add` takes the machine from the Reading and names what the post leaves unknown.

The command and version patterns are built by the registry (tpsdb.collect.tools) from what each reader module
declares, and handed to `Post`: this module knows no tool by name, except that a llama.cpp run's `-m` is read from
the commands of the run-log shape (LLAMA_RUNS), the one place llama.cpp commands are collected.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import NamedTuple

from tpsdb.collect import llamabench as lb
from tpsdb.collect.reading import Candidate, Reading, command_run_options, new_record, refuse_unstorable_numbers
from tpsdb.record import named_quantization

Position = tuple[int, int]

NO_COMMAND = "nature.procedure: the post does not show the {} command that printed this figure"
LLAMA_RUNS = "llama_logs"  # the shape whose commands are llama.cpp's runs (their -m names a run's model file)

# Linear on any line (tests/test_linear_time.py): fixed words first, possessive runs, bounded lazy parts.
_LOG_BUILD = re.compile(r"\bbuild:\s*+(?P<number>\d{1,6})\s*+\((?P<commit>[0-9a-f]{6,40})\)")  # main's log header
_FILE_TYPE = re.compile(r"\b(?:file type|model ftype)\s*+=\s*+(?P<ftype>[^\n]{1,80})$")
_MODEL_PARAMS = re.compile(r"\bmodel params\s*+=\s*+(?P<params>\d[\d.]{0,20}\s*+[BMK])\b")
_FILE_SIZE = re.compile(r"\b(?:file|model) size\s*+=\s*+(?P<size>\d[\d.]{0,20}\s*+[GM]i?B)\b")
_QUANT_IN_NAME = re.compile(
    r"(?<![A-Za-z0-9])(?P<quant>(?:UD-)?I?Q\d_[A-Za-z0-9_]++|T?Q\d_\d|BF16|F16|F32|FP8|FP16|AWQ|GPTQ|MXFP4|NVFP4|W8A8|"
    r"W4A16|INT4|INT8|[3468]bit)(?![A-Za-z0-9])", re.I)
_SHARD = re.compile(r"-\d{5}-of-\d{5}$")


class CluePatterns(NamedTuple):
    """The patterns a post's commands and stated versions are found by, built from the reader modules (a tuple, so
    that tests/test_linear_time.py finds the patterns in the registry's globals)."""

    command: re.Pattern  # every reader's command names: group `tool`, and `c<k>` for the k-th reader's names
    groups: tuple[str, ...]  # the reader of group c<k>
    command_words: tuple[str, ...]  # one of these is in a text that holds a command
    other_commands: tuple[tuple[str, re.Pattern, str], ...]  # (word, pattern, reader): tried when `command` fails
    version: re.Pattern  # "ollama version is 0.5.7", "vllm==0.8.4": group `tool` and `version`
    version_software: dict[str, str]  # the tool as `version` matched it (lower case, "_" as "-") -> its software
    version_words: tuple[str, ...]  # one of these is in the (lower-cased) text that states a version


@dataclass
class _Clues:
    """The commands, stated versions and model-loader lines of a post, each with its position, in order."""

    commands: dict[str, list[tuple[Position, str, str]]]  # reader -> (pos, tool, command line)
    versions: dict[str, list[tuple[Position, str]]]  # software -> (pos, version)
    builds: list[tuple[Position, str]]
    loader: dict[str, list[tuple[Position, str]]]  # "file" | "ftype" | "params" | "size" -> (pos, text)


def _first(item):
    return item[0]


def _nearest(items: list, pos: Position):
    """The last item before the position, else the first after (items are (pos, …) in order)."""
    if not items:
        return None
    k = bisect_left(items, pos, key=_first)
    if k:
        return items[k - 1]
    k = bisect_right(items, pos, key=_first)
    return items[k] if k < len(items) else None


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


def text_lines(reading: Reading) -> Iterator[tuple[Position, str]]:
    """Every line of the post's text and headings (tables apart), with its position."""
    for i, piece in enumerate(reading.pieces):
        if piece.kind in ("text", "heading"):
            for j, line in enumerate(piece.lines):
                yield (i, j), line


def _last(pattern: re.Pattern, line: str):
    match = None
    for match in pattern.finditer(line):  # the last one: "make llama-cli && ./llama-cli -m …"
        pass
    return match


def _command_of(patterns: CluePatterns, line: str) -> tuple[str, re.Match] | None:
    """(reader, match) of the command a line shows, if any."""
    match = _last(patterns.command, line)
    if match:
        return next(group for k, group in enumerate(patterns.groups) if match[f"c{k}"] is not None), match
    for word, pattern, group in patterns.other_commands:
        if word in line and (match := pattern.search(line)):
            return group, match
    return None


def _read_clues(reading: Reading, patterns: CluePatterns) -> _Clues:
    clues = _Clues({}, {}, [], {})
    for i, piece in enumerate(reading.pieces):
        if piece.kind not in ("text", "heading"):
            continue
        whole = "\n".join(piece.lines)
        if any(word in whole for word in patterns.command_words):
            for j, line in _joined_lines(whole):
                found = _command_of(patterns, line)
                if found and (found[1]["args"] or "").strip():
                    group, match = found
                    tool = " ".join(match["tool"].split())
                    args = match["args"].split("`", 1)[0]  # a command quoted inline ends at its backtick
                    command = f"{tool} {' '.join(args.split())}".strip()
                    clues.commands.setdefault(group, []).append(((i, j), tool, command))
        lower = whole.lower()
        stated = any(word in lower for word in patterns.version_words)
        for j, line in enumerate(piece.lines):
            if stated:
                for match in patterns.version.finditer(line):
                    software = patterns.version_software[match["tool"].lower().replace("_", "-")]
                    clues.versions.setdefault(software, []).append(((i, j), match["version"]))
            if "build:" in line and (build := _LOG_BUILD.search(line)):
                clues.builds.append(((i, j), lb.format_version(build["number"], build["commit"]) or ""))
            if "llama_model_loader" in line and (path := _loaded_file(line)):
                clues.loader.setdefault("file", []).append(((i, j), path))
            elif "=" in line:
                for key, pattern in (("ftype", _FILE_TYPE), ("params", _MODEL_PARAMS), ("size", _FILE_SIZE)):
                    found_fact = pattern.search(line)
                    if found_fact:
                        clues.loader.setdefault(key, []).append(((i, j), found_fact[1]))
    return clues


_JOINED = "\x00"  # marks, in a joined command, where a continued line ended (never in a line of a post's text)


def _joined_lines(text: str) -> Iterator[tuple[int, str]]:
    """The lines of a text with `\\` continuations joined (llamabench.join_continuations), each with the number of
    its first line in the text: a command is placed where it starts, like the timing, build and loader lines around
    it, so that a command over several lines falls in its own run's block, not the one before."""
    if "\\" not in text or _JOINED in text:
        yield from enumerate(lb.join_continuations(text).splitlines())
        return
    marked = lb._CONTINUATION.sub(  # the same joining, counting the lines each join takes
        lambda m: " " + _JOINED * m[0].count("\n"), text)
    j = 0
    for line in marked.splitlines():
        yield j, line.replace(_JOINED, "")
        j += 1 + line.count(_JOINED)


def _loaded_file(line: str) -> str | None:
    """The model file of "llama_model_loader: loaded meta data with … tensors from PATH (version GGUF V3 (latest))"
    (split, not matched: a path may hold anything)."""
    start = line.find("llama_model_loader: loaded meta data with")
    start = line.find(" from ", start) if start != -1 else -1
    end = line.rfind(" (version GGUF")
    return line[start + 6:end].strip() or None if -1 < start < end else None


def arg(command: str | None, *names: str) -> str | None:
    """The value of an option of a command line (`-m x`, `--model=x`), unquoted."""
    tokens = (command or "").split()
    for k, token in enumerate(tokens):
        for name in names:
            if token == name and k + 1 < len(tokens):
                return tokens[k + 1].strip("\"'")
            if token.startswith(name + "="):
                return token[len(name) + 1:].strip("\"'")
    return None


def int_arg(command: str | None, *names: str) -> int | None:
    value = arg(command, *names)
    return int(value) if value and value.isdecimal() and len(value) < 19 else None


def model_arg(command: str | None) -> str | None:
    """The model file a command's -m names; a shell variable ("$model", "${MODEL}", "%MODEL%") names none."""
    path = arg(command, "-m", "--model")
    return None if path is None or path.lstrip("\"'").startswith(("$", "%")) else path


def number(text: str) -> float | None:
    """A speed as a tool prints it ("45.20", "1,234.5", "45.20,"), else None."""
    text = text.rstrip(".,")
    try:
        return float(text.replace(",", "")) if text[:1].isdigit() else None
    except ValueError:
        return None


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


class Post:
    """One post's tool outputs read into candidates: the readers add to `out`, in the registry's order."""

    def __init__(self, reading: Reading, patterns: CluePatterns):
        self.reading = reading
        self.clues = _read_clues(reading, patterns)
        self.out: list[Candidate] = []
        self._only_file: object = _UNSET
        self._only_command: dict[str, object] = {}
        self._only_facts: dict[str, str | None] = {}
        self._run_timings: list[Position] | None = None

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
        """The version of a software the post states nearest before the position, else first after it."""
        found = _nearest(self.clues.versions.get(software, []), pos)
        return found[1] if found else None

    @property
    def run_timings(self) -> list[Position]:
        """Where llama.cpp runs printed their timing lines (the lines the llama_logs reader reads), in order.

        Read here, once per post, rather than recorded by the llama_logs reader as it goes: the build a run takes
        (llama_version) and a sweep-bench table's block (which starts after the last run's timings) need every
        run's timings, whichever reader asks first; so no reader depends on the registry's ORDER for them."""
        if self._run_timings is None:
            self._run_timings = [pos for pos, line in text_lines(self.reading)
                                 if "tokens per second" in line and lb.parse_timing(line)]
        return self._run_timings

    def run_model(self, since: Position, pos: Position, command: str | None) -> tuple[dict, str | None]:
        """The model of the run whose block is (since, pos): its loader lines, else its command's `-m`. A run's
        model facts come from its own block only (D5: a second, trimmed log must not take the first log's model or
        parameters); a block that names no model file at all takes the post's, when the post names exactly one."""
        path = _within(self.clues.loader.get("file", []), since, pos) or model_arg(command)
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
            paths += [a for _, _, c in self.clues.commands.get(LLAMA_RUNS, []) if (a := model_arg(c))]
            stems = {_file_stem(p) for p in paths}
            self._only_file = paths[0] if len(stems) == 1 else None
        return self._only_file

    def run_command(self, group: str, since: Position, pos: Position) -> tuple[str, str] | tuple[None, None]:
        """(tool, command line) of the run whose block is (since, pos), among the commands of one reader (`group`,
        its NAME): the last one in the block, else the post's only command of that reader (a command shown once for
        several logs, or after its log)."""
        commands = self.clues.commands.get(group, [])
        found = self.block_command(group, since, pos)
        if found is None and commands:
            only = self._only_command.get(group, _UNSET)
            if only is _UNSET:  # once per post, not per figure (linear time)
                only = self._only_command[group] = commands[0] if len({c for _, _, c in commands}) == 1 else None
            found = only
        return (found[1], found[2]) if found else (None, None)

    def block_command(self, group: str, since: Position, pos: Position) -> tuple[Position, str, str] | None:
        """(position, tool, command line) of the last command of one reader (`group`) in the block (since, pos),
        else None (no fallback to the post's only command: where the run's own command was typed)."""
        return _within(self.clues.commands.get(group, []), since, pos, whole=True)

    def run_starts_between(self, since: Position, pos: Position) -> bool:
        """Whether a llama.cpp run starts strictly between two positions: a run's command or a model-loader line
        (timing lines a few lines apart are one run's only when no new run was typed or loaded between them)."""
        return any(_within(items, since, pos, whole=True) is not None
                   for items in (self.clues.commands.get(LLAMA_RUNS, []), self.clues.loader.get("file", [])))

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
