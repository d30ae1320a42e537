"""`ollama run --verbose`: the statistics printed after each answer.

    prompt eval count:    26 token(s)
    prompt eval rate:     412.70 tokens/s
    eval count:           298 token(s)
    eval rate:            45.20 tokens/s

One user per figure (per_user); the lengths from the `… count:` lines of the same run (a run's statistics start at
`total duration` or its `ollama run` command, and end at its `eval rate`), generation at the depth of the prompt
count; the quote is the rate line, from its count line when that stands just above it (or above its duration).
The model is the first argument after `run`; the version only one the post states ("ollama version is 0.5.7").
The format: ollama api/types.go (Metrics.Summary).
"""

from __future__ import annotations

import re

from tpsdb.collect.reading import Reading
from tpsdb.collect.tools._post import Position, Post, number, quant_in_name, text_lines

NAME = "ollama"
OLLAMA = "ollama"
SOFTWARE = (OLLAMA,)
COMMANDS = (r"ollama\s++run",)
COMMAND_WORDS = ("ollama",)
STATED_VERSIONS = {"ollama": OLLAMA}
OTHER_COMMANDS: tuple = ()

_OLLAMA = re.compile(r"^\s*+(?P<what>prompt eval|eval)\s++(?P<kind>count|rate):\s*+(?P<n>\d[\d.,]*+)\s*+"
                     r"(?:token\(s\)|tokens/s)")


def wants(text: str, reading: Reading) -> bool:
    return "tokens/s" in text


def read(post: Post) -> None:
    counts: dict[str, tuple[int, Position]] = {}  # "prompt eval" | "eval" -> (count, where its line is)
    # a run's block: after the previous run's statistics ("total duration" starts a run's statistics)
    since: Position = (-1, -1)
    last: Position = (-1, -1)
    # where each `ollama run` command starts: a run's counts are its own block's (a trimmed second run, its count
    # lines cut, must not take the first run's)
    starts = [at for at, _, _ in post.clues.commands.get(NAME, [])]
    k = 0
    for pos, line in text_lines(post.reading):
        while k < len(starts) and starts[k] <= pos:  # a new run's command
            k += 1
            counts = {}
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
                counts[what] = (int(match["n"]), pos)
            continue
        value = number(match["n"])
        if value is None:
            continue
        phase = "prompt" if what == "prompt eval" else "generation"
        count, count_at = counts.get(what, (None, None))
        count_line = _count_to_rate(post, count_at, pos)
        prompt = counts.get("prompt eval", (None, ""))[0]
        lengths = (count, 0, 0) if phase == "prompt" else (0, count, prompt)
        last = pos
        tool, command = post.run_command(NAME, since, pos)
        # the model: the first argument after "run" that is no option ("ollama run --verbose llama2")
        name = next((a for a in (command or "").split()[2:] if not a.startswith("-")), None)
        name = name if name and not name.startswith(("'", '"')) else None
        if what == "eval":
            counts = {}  # the run's statistics end at its generation rate
        quote = count_line or line.strip()
        post.add(quote, pos, f"ollama{len(post.out)}:{phase}", software=OLLAMA,
                 version=post.version(OLLAMA, pos), model={"name": name, "params_b": None, "file_size_gb": None},
                 quantization=quant_in_name(name), lengths=lengths, users=1, figure="per_user",
                 command=command, tool="ollama run --verbose", phase=phase, value=value, since=since)


def _count_to_rate(post: Post, first: Position | None, second: Position) -> str | None:
    """The lines from the count line to the rate line as they stand in the text, when at most the duration line
    stands between them (ollama prints count, duration, rate), else None: a quote is the post's own text, never
    lines put together."""
    if first is None or first[0] != second[0] or not 0 < second[1] - first[1] <= 2:
        return None
    return "\n".join(post.reading.pieces[first[0]].lines[first[1]:second[1] + 1]).strip()
