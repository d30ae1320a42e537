"""kyuz0/amd-strix-halo-toolboxes `docs/results.json` (every version of it): llama-bench runs on one AMD Strix Halo
machine, many models, one run per model file x toolbox (ROCm/Vulkan stack) x flash-attention x context x test.

Each run states its model file, GiB size, parameters, quant, backend, ngl, fa, mmap, test and t/s with the
llama.cpp build; the machine is the one the repository benchmarks (README: Ryzen AI Max+ 395, Radeon 8060S,
gfx1151), which no run names. A failed run (`error`) and an RPC run (llama.cpp split over the network to other
machines) are rejections, with the reason. The quote is the run's object as it stands in the file.

The slot is the run's identity (model, toolbox, fa, context, test, build, t/s), not its place: a run that later
versions of the file repeat is the same candidate in each, so the repo_file kind counts it once."""

from __future__ import annotations

import re

from tpsdb.collect import llamabench as lb
from tpsdb.collect.extract import Candidate, new_record, refuse_unstorable_numbers
from tpsdb.readers import FileContext
from tpsdb.readers._common import loads, post_context, run_slot
from tpsdb.readers._serving import json_items
from tpsdb.units import GIB_IN_GB

NAME = "kyuz0"
SOFTWARE = "llama.cpp"

# The repository's one machine (its README: "AMD Ryzen AI Max+ 395 … Radeon 8060S"), as tpsdb names it.
HARDWARE = "AMD Radeon 8060S"

# The quant a file name ends with (Unsloth's dynamic "UD-Q4_K_XL" too), so that the model is named without it.
_QUANT_SUFFIX = re.compile(r"[-.](?:UD-)?(?:I?Q\d\w*|BF16|F16|F32|MXFP4|mxfp4)$")


# File names of models tpsdb already names otherwise (the seed's threads and reference): the same model, one name.
# llama-2-7b.Q4_0.gguf is the Llama 2 7B file the llama.cpp threads benchmark (6.74 B parameters as every run here
# states); gpt-oss-20b/120b are OpenAI's gpt-oss, named as llama-bench labels them (data/reference/models.toml).
_KNOWN_MODELS = {"llama-2-7b": "Llama 2 7B", "gpt-oss-20b": "gpt-oss 20B", "gpt-oss-120b": "gpt-oss 120B"}


def model_name(model_clean: str) -> str:
    """The model a file name is of: "Qwen3.6-35B-A3B-UD-Q8_K_XL" -> "Qwen3.6-35B-A3B"."""
    name = _QUANT_SUFFIX.sub("", model_clean) or model_clean
    return _KNOWN_MODELS.get(name.lower(), name)


def read(data: bytes, ctx: FileContext) -> list[Candidate]:
    text = data.decode("utf-8-sig")
    document = loads(text, ctx.path)
    runs = document.get("runs") if isinstance(document, dict) else None
    if not isinstance(runs, list):
        raise ValueError(f"{ctx.path}: runs: not a list at the top level (not a kyuz0 results.json)")
    # each run's exact text, from the top-level array only (not a "runs" key nested elsewhere or another array)
    quotes = [quote for _, quote in json_items(text, ("runs",))]
    if len(quotes) != len(runs):
        raise ValueError(f"{ctx.path}: runs: the key is given twice")
    post = post_context(ctx)
    return [_candidate(run, quote, post) if isinstance(run, dict) else
            Candidate(new_record(post, quote, hardware=HARDWARE, software=SOFTWARE), f"runs[{k}]",
                      ["record: not a JSON object"])
            for k, (run, quote) in enumerate(zip(runs, quotes))]


def _candidate(run: dict, quote: str, post) -> Candidate:
    build = run.get("build") if isinstance(run.get("build"), dict) else {}
    identity = (run.get("model"), run.get("env"), run.get("fa"), run.get("context"), run.get("test"),
                build.get("number"), build.get("hash"), run.get("tps_mean"), run.get("tps_std"),
                run.get("error_type"))
    reasons: list[str] = []
    if run.get("error"):
        reasons.append(f"nature: failed run ({run.get('error_type') or 'error'}), no figure")
    if run.get("rpc"):
        reasons.append("hardware.name: RPC run (llama.cpp split over the network to other machines), "
                       "not one machine's figure")
    shape = lb.parse_test(str(run.get("test") or ""))
    if shape is None and not run.get("error"):
        reasons.append(f"lengths.generated_tokens: test {run.get('test')!r} is not a llama-bench test name")
    size_gib = run.get("file_size_gib")
    columns: dict = {"backend": run.get("backend"), "ngl": run.get("ngl"), "fa": run.get("fa"), "mmap": run.get("mmap")}
    options = lb.options_from_columns(columns)
    if run.get("env"):
        options["toolbox"] = str(run["env"])  # the ROCm/Vulkan stack the run used (kyuz0's toolbox image)
    model_clean = str(run.get("model_clean") or run.get("model") or "")
    record = new_record(
        post, quote, hardware=HARDWARE, software=SOFTWARE,
        model={"name": model_name(model_clean) or None, "params_b": run.get("params_b"),
               "file_size_gb": round(size_gib * GIB_IN_GB, 2) if isinstance(size_gib, (int, float)) else None},
        quantization=run.get("quant"), version=lb.format_version(build.get("number"), build.get("hash")),
        options=options,
        lengths=(shape.prompt_tokens, shape.generated_tokens, shape.context_depth) if shape else (None, None, None),
        users=1, figure="per_user", procedure=lb.LLAMA_BENCH, phase=shape.phase if shape else None,
        value=run.get("tps_mean"), stddev=run.get("tps_std"))
    candidate = Candidate(record, run_slot(*identity), reasons)
    refuse_unstorable_numbers(candidate)
    return candidate
