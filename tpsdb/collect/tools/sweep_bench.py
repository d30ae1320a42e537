"""ik_llama.cpp's `llama-sweep-bench` table: PP, TG, N_KV, S_PP t/s, S_TG t/s, one row per depth.

    |    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |
    |   512 |    128 |      0 |    0.318 |  1611.49 |    2.735 |    46.80 |

One user at depth N_KV per figure (per_user): the prompt speed for PP tokens, the generation speed for TG. A table
with a B column is llama-batched-bench's (read by tpsdb.collect.extract). The table's block (its run's build, model
and command) starts after the previous figure table, the previous sweep table or the last run's timing lines,
whichever is last; the model from the block's loader lines, else the command's `-m`. The table's format: ik_llama.cpp examples/sweep-bench.
"""

from __future__ import annotations

from bisect import bisect_left

from tpsdb.collect import llamabench as lb
from tpsdb.collect.reading import Reading
from tpsdb.collect.tools._post import Position, Post

NAME = "sweep_bench"
IK_LLAMA_CPP = "ik_llama.cpp"
SOFTWARE = (IK_LLAMA_CPP, "llama.cpp")  # ik_llama.cpp's tool, unless the post names another fork
COMMANDS = (r"llama-sweep-bench",)
COMMAND_WORDS = ("llama-",)
STATED_VERSIONS: dict[str, str] = {}
OTHER_COMMANDS: tuple = ()
_COLUMNS = {"pp", "tg", "n_kv", "s_pp t/s", "s_tg t/s"}


def wants(text: str, reading: Reading) -> bool:
    return any(p.kind == "table" and "n_kv" in " ".join(p.table.header).lower() for p in reading.pieces)


def read(post: Post) -> None:
    reading = post.reading
    t = -1
    previous_sweep = -1  # the sweep-bench table before: another run's (its loader lines are not this one's)
    for i, piece in enumerate(reading.pieces):
        if piece.kind != "table":
            continue
        t += 1
        table = piece.table
        names = [h.strip().lower() for h in table.header]
        if "b" in names or not _COLUMNS <= set(names):
            continue
        column = {name: k for k, name in enumerate(names)}
        pos = (i, 0)
        # the table's block: since the previous figure or sweep table, or since the run that printed its timings
        # last (its build and model are that run's, issue 19); post.run_timings reads every run's timing lines
        # itself, so this holds whatever runs before this reader in ORDER
        block: Position = (max(reading.previous_table(i), previous_sweep), 1 << 30)
        previous_sweep = i
        k = bisect_left(post.run_timings, pos)
        if k and post.run_timings[k - 1] > block:
            block = post.run_timings[k - 1]
        tool, command = post.run_command(NAME, block, pos)
        model, quant = post.run_model(block, pos, command)
        version = post.llama_version(pos, block)
        software = reading.software_at(pos, IK_LLAMA_CPP)
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
                post.add(quote, pos, f"t{t}:r{r}:{phase}", software=software, version=version,
                         model=dict(model), quantization=quant, lengths=lengths, users=1, figure="per_user",
                         command=command, tool="llama-sweep-bench", phase=phase, value=value[0])
