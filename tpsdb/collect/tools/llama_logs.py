"""llama.cpp run logs: `llama_print_timings` / `llama_perf_context_print` lines (llama-cli, main, llama-simple…)
and llama-server's `slot print_timing` block.

    llama_perf_context_print: prompt eval time =  20.00 ms /  7 tokens (2.86 ms per token, 350.00 tokens per second)
    llama_perf_context_print:        eval time = 1000.00 ms / 127 runs (7.87 ms per token, 127.00 tokens per second)

One user per figure (per_user). A run's block runs from the previous run's timing lines to its own: its model from
the `llama_model_loader: … from FILE` line (and its `file type` / `model params` / `file size` lines), else from the
command's `-m` (a shell variable, `$model`, names none); its build from the block's `build:` line, else the post's
only build printed before its figures with no other run's timings between; generation at the depth of the run's own
prompt line. In ik_llama.cpp's repository, a run whose command runs from another llama.cpp tree (`./llama.cpp/
llama-cli`) is no fork's: its software is left unknown, with the path (OTHER_TREE).
The line's format: llama.cpp src/llama-context.cpp (llama_perf_context_print) and tools/server (print_timings).
"""

from __future__ import annotations

import re

from tpsdb.collect import llamabench as lb
from tpsdb.collect.reading import SAMPLING_SPEED, Reading
from tpsdb.collect.tools._post import LLAMA_RUNS, Position, Post, int_arg, text_lines

NAME = LLAMA_RUNS
SOFTWARE = ("llama.cpp",)  # or the fork the post names (Reading.software_at)
COMMANDS = (r"llama-cli", r"llama-server", r"llama-simple", r"llama-run", r"llama-completion", r"llama-perplexity",
            r"llama-embedding", r"llama-imatrix")
COMMAND_WORDS = ("llama-", "main")
STATED_VERSIONS: dict[str, str] = {}  # a build is read from the log's `build:` line instead
_MAIN_COMMAND = re.compile(r"(?:^|[\s/\\])(?P<tool>main)(?:\.exe)?(?P<args>\s++-.*+)$")  # llama.cpp before 2024
OTHER_COMMANDS = (("main", _MAIN_COMMAND),)

IK_LLAMA_CPP = "ik_llama.cpp"
# a path into a directory named llama.cpp (mainline's clone) from which a llama.cpp tool runs
_OTHER_TREE = re.compile(r"(?<![\w.-])llama\.cpp[/\\](?:[\w.-]{1,40}[/\\]){0,3}llama-[a-z-]{2,20}")
OTHER_TREE = ("software.name: the run's command runs {} (a llama.cpp tree, not ik_llama.cpp's): which fork printed "
              "it is unknown")

SERVER_SLOTS = "concurrency.users: llama-server ran {} slots (--parallel): how many requests ran at once is unknown"


def wants(text: str, reading: Reading) -> bool:
    return "tokens per second" in text


def read(post: Post) -> None:
    timings = []
    server_at: Position | None = None  # llama-server's "slot print_timing:" line: its timings follow it
    for pos, line in text_lines(post.reading):
        if "print_timing" in line and "llama_print_timing" not in line:
            server_at = pos
        timing = lb.parse_timing(line) if "tokens per second" in line else None
        if timing:
            server = server_at is not None and server_at[0] == pos[0] and 0 <= pos[1] - server_at[1] <= 2
            timings.append((pos, line, timing, server))
    count = 0
    since: Position = (-1, -1)  # where the current run's block starts: after the previous run's timings
    group_start, group_prompt = 0, None
    for k, (pos, line, timing, server) in enumerate(timings):
        previous = timings[k - 1][0] if k else None
        if (previous is None or previous[0] != pos[0] or pos[1] - previous[1] > 4
                or post.run_starts_between(previous, pos)):  # a new run's timings
            since = previous if previous is not None else (-1, -1)
            group_start, group_prompt = k, None
        first = timings[group_start][0]
        tool, command = post.run_command(NAME, since, first)
        if server:
            tool, command = ("llama-server", command) if tool == "llama-server" else ("llama-server", None)
        model, quant = post.run_model(since, first, command)
        reasons = [SAMPLING_SPEED] if timing.sampling else []
        slots = int_arg(command, "-np", "--parallel")
        if server and slots and slots > 1:
            reasons.append(SERVER_SLOTS.format(slots))
        if timing.phase == "prompt" and not timing.sampling:
            lengths: tuple = (timing.tokens, 0, 0)
            if group_prompt is None:
                group_prompt = timing.tokens
        else:
            # generation follows the run's own prompt (its prompt line in the same timings), at that depth
            lengths = (0, timing.tokens, None if server else group_prompt)
        software: str | None = post.reading.software_at(pos)
        at = post.block_command(NAME, since, first)
        tree = _mainline_tree(post.reading, (at[0][0], at[0][1] - 1), first) if software == IK_LLAMA_CPP and at else None
        if tree:
            # a post of ik_llama.cpp's repository running a binary of another llama.cpp tree (a comparison
            # with mainline): which fork printed it is not the repository's to say (issue 19)
            software = None
            reasons = reasons + [OTHER_TREE.format(tree)]
        post.add(line.strip(), pos, f"log{count}:{timing.phase}", software=software,
                 version=post.llama_version(first, since), model=model, quantization=quant, lengths=lengths,
                 users=1, figure="per_user", command=command, tool=tool or "llama.cpp", phase=timing.phase,
                 value=timing.tokens_per_second, reasons=reasons, since=since)
        count += 1


def _mainline_tree(reading: Reading, since: Position, until: Position) -> str | None:
    """The path of a llama.cpp tree other than ik_llama.cpp's that the run's command runs from ("./llama.cpp/
    llama-cli", "~/dev-ai/llama.cpp/build/bin/..."), read from its command (a joined command's line number is
    at most its first line's) to its figures, when those lines name no ik_llama.cpp tree."""
    found = None
    for i in range(max(since[0], 0), until[0] + 1):
        piece = reading.pieces[i]
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
