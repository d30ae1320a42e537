"""LottoLottoLotto/4x3090-llm-benchmarks `data/benchmarks.jsonl` (schema v2): one measurement per line on one
rig of four RTX 3090 (vLLM, llama.cpp, exllamav3), with its checkpoint, format, engine version, parallelism,
concurrency, prompt and generated tokens, and `output_tok_s`.

`output_tps_kind` says what `output_tok_s` is: `single_stream_wall` one stream's output tokens/s over wall time
(per_user), `aggregate_output` the output tokens/s of all `concurrency` streams together (aggregate); `unknown` (or
none) is a rejection saying so. A row's `curve` holds the same run at other concurrencies (aggregate runs only:
each point is a figure of its own, cited by the row's line; the point at the row's own concurrency is the row's
figure). The GPUs that ran are tp × pp × dp × instances of the rig's four.

`checkpoint_ref` is the rig's own name for the weights; the repository's `model-map.json` maps it to a Hugging Face
repository (a sibling file of the source, else [lotto_checkpoints] of data/reference/names/datasets-b-serving.toml,
which cites it). The file size and parameters are those cited in data/reference/datasets-b-*.toml for that
repository (and, for a GGUF repository, that file); none cited, the figure is a rejection naming the checkpoint.
"""

from __future__ import annotations

import json
from typing import Any

from tpsdb.collect.extract import Candidate
from tpsdb.readers import FileContext
from tpsdb.readers._serving import (
    candidate,
    checkpoint,
    count,
    day,
    jsonl_items,
    model_block,
    names,
    number,
    quant_format,
)

NAME = "lotto"
SOFTWARE = None  # per row: vLLM, llama.cpp, exllamav3
GPU = "NVIDIA GeForce RTX 3090"
RIG_GPUS = 4
MODEL_MAP = "model-map.json"
_ENGINES = {"vllm": "vLLM", "llama.cpp": "llama.cpp", "exllamav3": "ExLlamaV3", "sglang": "SGLang"}
_KINDS = {"single_stream_wall": "per_user", "aggregate_output": "aggregate"}
_PROCEDURE = ("LottoLottoLotto 4x3090 benchmark harness (METHODOLOGY.md): {kind} output tokens/s at concurrency "
              "{users}, {prompt}-token prompts, {gen} generated tokens")


def read(data: bytes, ctx: FileContext) -> list[Candidate]:
    text = data.decode("utf-8-sig")
    model_map = _model_map(ctx)
    out: list[Candidate] = []
    for number_, row, line in jsonl_items(text):
        if not isinstance(row, dict):
            out.append(candidate(ctx, line, f"l{number_}", ["record: not a JSON object"], software=None))
            continue
        out += _figures(row, line, number_, ctx, model_map)
    return out


def _model_map(ctx: FileContext) -> dict[str, str]:
    raw = ctx.siblings.get(MODEL_MAP)
    if raw is not None:
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items() if isinstance(v, str)}
    return dict(names("lotto_checkpoints"))


def _figures(row: dict, line: str, n: int, ctx: FileContext, model_map: dict[str, str]) -> list[Candidate]:
    reasons: list[str] = []
    if row.get("schema_version") != 2:
        reasons.append(f"record: schema_version {row.get('schema_version')!r}, not 2")
    ref = row.get("checkpoint_ref")
    repo = model_map.get(ref) if isinstance(ref, str) else None
    if repo is None and isinstance(ref, str) and ref.count("/") == 1:
        repo = ref  # the row names the Hugging Face repository itself ("poolside/Laguna-S-2.1-INT4")
    found = None
    if repo is None:
        reasons.append(f"model.name: the checkpoint {ref!r} is not named in model-map.json")
    else:
        found = checkpoint(repo, ref if str(ref).lower().endswith(".gguf") else None)
        if found is None:
            reasons.append(f"model.file_size_gb: no cited size for {repo}"
                           + (f" ({ref})" if str(ref).lower().endswith(".gguf") else "")
                           + " (data/reference/datasets-b-*.toml)")
    quant = quant_format(row.get("quant"))
    if quant is None:
        reasons.append(f'quantization: not a named format ("{row.get("quant")}")')
    elif found and found.quantization != quant:
        reasons.append(f"quantization: the row says {quant}, the checkpoint cited is {found.quantization}")
    engine = _ENGINES.get(str(row.get("engine")))
    version = row.get("engine_version")
    if not isinstance(version, str) or not version or version == row.get("engine"):
        reasons.append("software.version: the row gives no engine version")
        version = None
    gpus = _gpus(row)
    if gpus is None:
        reasons.append("hardware.name: how many of the rig's GPUs ran is not stated (tp, pp, dp, instances)")
    elif gpus > RIG_GPUS:
        reasons.append(f"hardware.name: {gpus} GPUs on a rig of {RIG_GPUS}")
    hardware = None if gpus is None else (GPU if gpus == 1 else f"{gpus}x {GPU}")
    figure = _KINDS.get(str(row.get("output_tps_kind")))
    if figure is None:
        reasons.append(f"concurrency.figure: output_tps_kind {row.get('output_tps_kind')!r} does not say whether "
                       "the figure is one stream's or all streams'")
    options = {k: row[k] for k in ("tp", "pp", "dp", "instances", "context_len", "power_limit_w", "kv_cache_dtype",
                                   "spec_decode", "quant_raw", "run_id") if row.get(k) is not None}
    if repo:
        options["checkpoint"] = repo
    if isinstance(row.get("knobs"), dict):
        options["knobs"] = row["knobs"]
    prompt, gen = count(row.get("prompt_tokens")), count(row.get("gen_tokens"))
    fields: dict[str, Any] = dict(
        software=engine, published_at=day(row.get("date")), hardware=hardware, model=model_block(found, ref),
        quantization=quant, version=version, lengths=(prompt, gen, 0), phase="generation")
    users = count(row.get("concurrency"))
    out = [_figure(ctx, line, f"{row.get('run_id') or f'l{n}'}", reasons, fields, options, figure, users,
                   number(row.get("output_tok_s")))]
    curve = row.get("curve") if isinstance(row.get("curve"), list) else []
    for k, point in enumerate(curve):
        if not isinstance(point, dict):
            continue
        # two spellings of a curve point: {concurrency, output_tok_s} and {conc, out_tps}
        at = count(point.get("concurrency", point.get("conc")))
        if at == users:
            continue  # the row's own figure
        why = list(reasons)
        if figure != "aggregate":
            why.append("concurrency.figure: a curve point of a run that is not an aggregate one (what it measures "
                       "at other concurrencies is not stated)")
        out.append(_figure(ctx, line, f"{row.get('run_id') or f'l{n}'}:curve{k}", why, fields, options, figure,
                           at, number(point.get("output_tok_s", point.get("out_tps")))))
    return out


def _figure(ctx: FileContext, line: str, slot: str, reasons: list[str], fields: dict, options: dict,
            figure: str | None, users: int | None, value: float | None) -> Candidate:
    why = list(reasons)
    if value is None:
        why.append("tokens_per_second: the row (or curve point) gives no output tokens/s")
    prompt, gen, _ = fields["lengths"]
    procedure = _PROCEDURE.format(kind={"per_user": "single-stream", "aggregate": "aggregate"}.get(figure or "", "?"),
                                  users=users, prompt=prompt, gen=gen)
    return candidate(ctx, line, slot, why, options=dict(options), users=users, figure=figure, procedure=procedure,
                     value=value, **fields)


def _gpus(row: dict) -> int | None:
    tp, pp = count(row.get("tp")), count(row.get("pp"))
    if not tp or not pp:
        return None
    return tp * pp * (count(row.get("dp")) or 1) * (count(row.get("instances")) or 1)
