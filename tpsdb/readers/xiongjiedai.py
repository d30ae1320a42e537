"""XiongjieDai/GPU-Benchmarks-on-LLM-Inference notebooks (`.ipynb`): llama-bench tables (LLaMA 3) and `./main` runs
with their `llama_print_timings` (LLaMA, LLaMA 2) on NVIDIA GPUs (one to eight of a kind) and Macs.

Each code cell is read on its own, as the text of its command and its outputs, by the post readers of
tpsdb.collect (llama-bench Markdown, run-log timings): the machine from the cell's device lines
(`ggml_cuda_init` … `Device 0: NVIDIA GeForce RTX 4090`; `ggml_metal_init: found device`), the build from the
table's `build:` line or the run's `main: build = 2824 (4426e298)`. A figure's quote is part of one cell's output.
The notebook's file name states the number of GPUs (`4090_4_v3` = four RTX 4090): a figure whose machine the
cell names with another count is rejected rather than trusted either way. Sampling speeds are rejections."""

from __future__ import annotations

import json
import posixpath
import re

from tpsdb.collect import llamabench as lb
from tpsdb.collect.extract import Candidate, extract_text
from tpsdb.collect.machines import canonical_hardware
from tpsdb.readers import FileContext
from tpsdb.readers._common import post_context

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
    source = cell.get("source", "")
    source = "".join(source) if isinstance(source, list) else str(source)
    outputs = []
    for output in cell.get("outputs", []):
        text = output.get("text")
        if text is None:
            text = (output.get("data") or {}).get("text/plain", "")
        outputs.append("".join(text) if isinstance(text, list) else str(text))
    return source, "".join(outputs)


def read(data: bytes, ctx: FileContext) -> list[Candidate]:
    notebook = json.loads(data)
    post = post_context(ctx)
    expected = gpu_count(ctx.path)
    out: list[Candidate] = []
    for number, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") != "code":
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
