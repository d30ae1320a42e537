"""XiongjieDai/GPU-Benchmarks-on-LLM-Inference notebooks (`.ipynb`): llama-bench tables (LLaMA 3) and `./main` runs
with their `llama_print_timings` (LLaMA, LLaMA 2) on NVIDIA GPUs (one to eight of a kind) and Macs.

Each code cell is read on its own, as the text of its command and its outputs, by the post readers of
tpsdb.collect (llama-bench Markdown, run-log timings: tpsdb.collect.tools.llama_logs): the machine from the cell's device lines
(`ggml_cuda_init` … `Device 0: NVIDIA GeForce RTX 4090`; `ggml_metal_init: found device`), the build from the
table's `build:` line or the run's `main: build = 2824 (4426e298)`. A figure's quote is part of one cell's output.
The notebook's file name states the number of GPUs (`4090_4_v3` = four RTX 4090): a figure whose machine the
cell names with another count is rejected rather than trusted either way. Sampling speeds are rejections."""

from __future__ import annotations

import posixpath
import re

from tpsdb.collect import llamabench as lb
from tpsdb.collect.extract import Candidate, extract_text
from tpsdb.collect.machines import canonical_hardware
from tpsdb.readers import FileContext
from tpsdb.readers._common import loads, post_context

NAME = "xiongjiedai"
SOFTWARE = "llama.cpp"

_MAIN_BUILD = re.compile(r"^main: build = (\d+) \(([0-9a-f]{7,40})\)", re.M)
_GPU_COUNT = re.compile(r"_(\d)(?:_v\d)?$")  # 4090_4_v3, A6000_2_v2, 3090_6
_MACHINE_COUNT = re.compile(r"^(\d+)x ")
# The notebooks keep each model's files in a folder named for it (README and the notebooks' own download cells):
# models/8B-v3 (Llama 3 8B, from https://huggingface.co/JaaackXD/Llama-3-8B-GGUF), 8B-v3-instruct, 7B-v2 (Llama 2),
# 7B (the first LLaMA). llama-bench and the run logs name only "llama 8B" or the file ("ggml-model-q4_0").
_MODEL_FOLDER = re.compile(r"models/(\d+B)(?:-v([23]))?(-instruct|-chat)?/")
_FAMILY = {"3": "Llama 3", "2": "Llama 2", None: "LLaMA"}


def gpu_count(path: str) -> int:
    """How many GPUs the notebook's file name says the run used (1 when it names no count)."""
    stem = posixpath.basename(path).removesuffix(".ipynb")
    found = _GPU_COUNT.search(stem)
    return int(found.group(1)) if found else 1


# The `./main` runs pass their whole prompt on the command line (-p "It was the best of times, …": 2,000 characters
# of Dickens). The procedure keeps every option and says where the prompt is, rather than repeat it in each figure.
_PROMPT_ARG = re.compile(r'(?P<flag>(?:^|\s)(?:-p|--prompt)\s+)(?P<q>"""|"|\')(?P<text>.*?)(?P=q)', re.S)
_PROMPT_KEPT = 60


def elide_prompt(command: str | None) -> str | None:
    """The command with a long -p "…" prompt cut to its start and its length (the notebook's cell holds it)."""
    if not command:
        return command

    def cut(m: re.Match) -> str:
        text = m.group("text")
        if len(text) <= _PROMPT_KEPT:
            return m.group(0)
        q = m.group("q")
        return f"{m.group('flag')}{q}{text[:_PROMPT_KEPT]}…{q} (the cell's prompt, {len(text)} characters)"

    return _PROMPT_ARG.sub(cut, command)


_MAC = re.compile(r"^(M\d)(max|pro|ultra)?(?:_|$)", re.I)


def mac_of(path: str) -> str | None:
    """The Mac a notebook under Mac/ is named for (`M1max_64GB` = Apple M1 Max), for cells no device line names."""
    found = _MAC.match(posixpath.basename(path)) if "/Mac/" in f"/{path}" else None
    if not found:
        return None
    chip, tier = found.groups()
    return canonical_hardware(f"Apple {chip.upper()}" + (f" {tier.title()}" if tier else ""))


def cell_text(cell: dict) -> tuple[str, str]:
    """(the cell's source, the text of its outputs as shown): stream text and plain-text results."""
    source = _text(cell.get("source", ""))
    outputs = []
    listed = cell.get("outputs")
    for output in listed if isinstance(listed, list) else []:
        if not isinstance(output, dict):
            continue  # a malformed output shows nothing
        text = output.get("text")
        if text is None:
            data = output.get("data")
            text = data.get("text/plain", "") if isinstance(data, dict) else ""
        outputs.append(_text(text))
    return source, "".join(outputs)


def _text(value) -> str:
    """A notebook's text: a string, or a list of lines (a line that is not a string shows nothing)."""
    if isinstance(value, list):
        return "".join(line for line in value if isinstance(line, str))
    return value if isinstance(value, str) else ""


def read(data: bytes, ctx: FileContext) -> list[Candidate]:
    notebook = loads(data, ctx.path)
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        raise ValueError(f"{ctx.path}: not a notebook (no list of cells)")
    post = post_context(ctx)
    expected = gpu_count(ctx.path)
    out: list[Candidate] = []
    for number, cell in enumerate(notebook["cells"]):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source, output = cell_text(cell)
        if "tokens per second" not in output and "t/s" not in output:
            continue  # no speed printed: nothing to read (most cells build, download or list)
        # the command first, as a post shows it, then what it printed; `!` and `./` are the notebook's shell
        command = "\n".join(line.lstrip("!").replace("./", "", 1) if line.startswith("!") else line
                            for line in source.splitlines())
        main_build = _MAIN_BUILD.search(output)
        for candidate in extract_text(command + "\n" + output, post):
            candidate.slot = f"cell{number}:{candidate.slot}"
            record = candidate.record
            if record["software"]["version"] is None and main_build:
                record["software"]["version"] = lb.format_version(main_build.group(1), main_build.group(2))
            model = record["model"]
            record["nature"]["procedure"] = elide_prompt(record["nature"]["procedure"])
            folder = _MODEL_FOLDER.search(record["nature"]["procedure"] or "")
            if folder:
                size, family, variant = folder.groups()
                model["name"] = f"{_FAMILY[family]} {size}" + (" " + variant[1:].title() if variant else "")
            if record["hardware"]["name"] is None:
                record["hardware"]["name"] = mac_of(ctx.path)
            machine = record["hardware"]["name"]
            if machine:
                stated = _MACHINE_COUNT.match(machine)
                count = int(stated.group(1)) if stated else 1
                if count != expected and not machine.startswith("Apple"):
                    candidate.reasons.append(f"hardware.name: the cell names {machine!r}, the file name "
                                             f"{posixpath.basename(ctx.path)!r} {expected} GPU(s)")
            out.append(candidate)
    return out
