"""`mlx_lm.generate` (and `mlx_lm generate`): the speeds printed after the text.

    Prompt: 12 tokens, 85.1 tokens-per-sec
    Generation: 128 tokens, 45.3 tokens-per-sec

One user per figure (per_user); generation at the depth of the same run's prompt (a run starts at its `Prompt:`
line). Older versions print no token counts: the lengths stay unknown. The model from `--model`; the version only
one the post states ("mlx-lm 0.21.1"). The format: mlx-lm generate.py.
"""

from __future__ import annotations

import re

from tpsdb.collect.reading import Reading
from tpsdb.collect.tools._post import Position, Post, arg, number, quant_in_name, text_lines

NAME = "mlx"
MLX_LM = "mlx-lm"
SOFTWARE = (MLX_LM,)
COMMANDS = (r"mlx_lm\.generate", r"mlx_lm\s++generate")
COMMAND_WORDS = ("mlx_lm",)
STATED_VERSIONS = {"mlx-lm": MLX_LM}  # spelled mlx-lm or mlx_lm
OTHER_COMMANDS: tuple = ()

_MLX = re.compile(r"^\s*+(?P<what>Prompt|Generation):\s*+(?:(?P<n>\d++)\s++tokens?,\s*+)?"
                  r"(?P<tps>\d[\d.]*+)\s*+tokens-per-sec")


def wants(text: str, reading: Reading) -> bool:
    return "tokens-per-sec" in text


def read(post: Post) -> None:
    prompt: int | None = None
    since: Position = (-1, -1)  # a run's block: after the previous run's figures ("Prompt:" starts a run's)
    last: Position = (-1, -1)
    for pos, line in text_lines(post.reading):
        if "tokens-per-sec" not in line:
            continue
        match = _MLX.match(line)
        if not match:
            continue
        value = number(match["tps"])
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
        tool, command = post.run_command(NAME, since, pos)
        name = arg(command, "--model")
        post.add(line.strip(), pos, f"mlx{len(post.out)}:{phase}", software=MLX_LM,
                 version=post.version(MLX_LM, pos), model={"name": name, "params_b": None, "file_size_gb": None},
                 quantization=quant_in_name(name), lengths=lengths, users=1, figure="per_user",
                 command=command, tool="mlx_lm.generate", phase=phase, value=value, since=since)
