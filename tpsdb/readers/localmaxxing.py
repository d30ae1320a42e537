"""localmaxxing.com leaderboard rows: the public API's answer (`GET /api/benchmarks`), or llmfit's copy of it
(`llmfit-core/data/benchmark_cache.json`: {"scraped_at", "presets": {<preset>: {"rows": […], "total"}}}).

A row is one user-submitted run: the Hugging Face model id (`model.hfId`, with its parameter count), the engine,
its version and the weights' quantization (`engine`), `promptTokens`, `outputTokens`, `batchSize`, and the output
speed `tokSOut` (a generation figure). The hardware is `hardware.gpuName` × `gpuCount`.

`batchSize` is not a number of users: for llama.cpp it is the logical batch (-b 2048), for others what the
submitter typed. The users are stated only by the run's command (`engineFlags.commandSnippet` or `notes`): one
llama-bench run, or a server started for one sequence (`-np 1`, `--parallel 1`, `--max-num-seqs 1`). Otherwise
the figure is a rejection saying so. The file size is that cited in data/reference/datasets-b-*.toml for the
repository (and quantization); none cited, the figure is a rejection naming the repository.
"""

from __future__ import annotations

import re
from typing import Any

from tpsdb.collect.extract import Candidate
from tpsdb.collect.machines import canonical_hardware
from tpsdb.readers import FileContext
from tpsdb.readers._serving import (
    Checkpoint,
    JsonShapeError,
    candidate,
    checkpoints,
    count,
    day,
    json_items,
    model_block,
    number,
    quant_format,
)

NAME = "localmaxxing"
SOFTWARE = None  # per row
_ENGINES = {"llama.cpp": "llama.cpp", "vllm": "vLLM", "sglang": "SGLang", "ollama": "Ollama", "mlx": "MLX",
            "lmstudio": "LM Studio", "hipfire": "hipfire", "exllamav2": "ExLlamaV2", "tensorrt-llm": "TensorRT-LLM"}
# what a command says of the sequences run at once
_ONE_SEQUENCE = re.compile(r"(?:^|[\s;&|/])(?:llama-bench\b|(?:-np|--parallel|--max-num-seqs)[ =]1\b)")
_MANY = re.compile(r"(?:-np|--parallel|--max-num-seqs)[ =](\d+)\b")


def read(data: bytes, ctx: FileContext) -> list[Candidate]:
    text = data.decode("utf-8-sig")
    try:
        rows = list(_rows(text))
    except JsonShapeError as error:
        raise ValueError(f"{ctx.path}: not a localmaxxing benchmarks answer ({error})") from None
    out: list[Candidate] = []
    seen: set[str] = set()
    for k, (row, quote) in enumerate(rows):
        slot = str(row.get("id")) if isinstance(row, dict) and row.get("id") else f"r{k}"
        if slot in seen:
            continue  # llmfit's copy lists a row under every preset it matches: one figure
        seen.add(slot)
        out.append(_figure(row, quote, slot, ctx))
    return out


def _rows(text: str):
    """The rows of an API answer (an array, or {"benchmarks"|"data"|"rows": […]}) or of llmfit's cache."""
    start = text.lstrip()[:1]
    if start == "[":
        yield from json_items(text)
        return
    for path in (("presets", "*", "rows"), ("benchmarks",), ("data",), ("rows",)):
        found = list(json_items(text, path))
        if found:
            yield from found
            return


def _figure(row: Any, quote: str, slot: str, ctx: FileContext) -> Candidate:
    if not isinstance(row, dict):
        return candidate(ctx, quote, slot, ["record: not a JSON object"], software=None)
    model = row.get("model") if isinstance(row.get("model"), dict) else {}
    engine = row.get("engine") if isinstance(row.get("engine"), dict) else {}
    hardware = row.get("hardware") if isinstance(row.get("hardware"), dict) else {}
    flags = row.get("engineFlags") if isinstance(row.get("engineFlags"), dict) else {}
    user = row.get("user") if isinstance(row.get("user"), dict) else {}
    reasons: list[str] = []
    repo = model.get("hfId") if isinstance(model.get("hfId"), str) else None
    quant = quant_format(engine.get("quantization"))
    if quant is None:
        reasons.append(f'quantization: not a named format ("{engine.get("quantization")}")')
    found = _checkpoint(repo, quant)
    if found is None:
        reasons.append(f"model.file_size_gb: no cited size for {repo} {engine.get('quantization')} "
                       "(data/reference/datasets-b-*.toml)")
    name = _ENGINES.get(str(engine.get("engineName")), engine.get("engineName"))
    version = engine.get("engineVersion") if isinstance(engine.get("engineVersion"), str) else None
    machine = _hardware(hardware)
    command = " ".join(str(v) for v in (flags.get("commandSnippet"), row.get("notes")) if isinstance(v, str))
    users = 1 if _ONE_SEQUENCE.search(command) and not _several(command) else None
    if users is None:
        reasons.append(f"concurrency.users: batchSize {row.get('batchSize')!r} is not a count of users, and the "
                       "row's command does not say how many sequences ran at once")
    options: dict[str, Any] = {k: v for k, v in {
        "backend": engine.get("backend"), "batch_size": row.get("batchSize"),
        "context_length": row.get("contextLength"), "checkpoint": repo, "revision": row.get("modelRevision"),
        "quantization_label": engine.get("quantization"), "command": flags.get("commandSnippet") or None,
        "gpu_layers": flags.get("gpuLayers"), "kv_cache_dtype": flags.get("kvCacheDtype"),
        "flash_attention": flags.get("flashAttn"), "tensor_parallel": flags.get("tensorParallel"),
        "spec_decoding": flags.get("specDecoding") or None}.items() if v is not None}
    block = model_block(found, repo)
    if found is None and number(model.get("params")) is not None:
        block["params_b"] = number(model.get("params"))  # as the row gives it (billions, rounded by the site)
    return candidate(
        ctx, quote, slot, reasons, software=name, published_at=day(row.get("createdAt")),
        author=user.get("username") if isinstance(user.get("username"), str) else None,
        hardware=machine, model=block, quantization=quant, version=version, options=options,
        lengths=(count(row.get("promptTokens")), count(row.get("outputTokens")), 0), users=users,
        figure="per_user" if users == 1 else None,
        procedure=f"localmaxxing submission ({row.get('notes') or 'no method stated'})"[:400], phase="generation",
        value=number(row.get("tokSOut")))


def _several(command: str) -> bool:
    return any(int(n) > 1 for n in _MANY.findall(command))


def _checkpoint(repo: str | None, quant: str | None) -> Checkpoint | None:
    """The cited facts of the repository, or of its file in this format (a GGUF repository holds several)."""
    if not repo:
        return None
    whole = checkpoints().get(repo.lower())
    if whole is not None:
        return whole if quant is None or whole.quantization == quant else None
    prefix = repo.lower() + "/"
    files = [c for key, c in checkpoints().items() if key.startswith(prefix) and c.quantization == quant]
    return files[0] if len(files) == 1 else None


def _hardware(block: dict) -> str | None:
    name = canonical_hardware(str(block.get("gpuName") or "")) if block.get("gpuName") else None
    if name is None:
        return None
    gpus = count(block.get("gpuCount")) or 1
    return name if gpus == 1 else f"{gpus}x {name}"
