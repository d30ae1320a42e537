"""InferenceX (SemiAnalysis) benchmark points, as its public API answers them (`GET /api/v1/benchmarks?model=…`: a
JSON array of points, one per GPU × framework × precision × topology × ISL/OSL × concurrency × run date).

Each point gives two figures, both at `conc` users and both of the generation phase:
- `metrics.median_intvty`: one user's output tokens/s (1 / time per output token), per_user, on the run's GPUs;
- `metrics.output_tput_per_gpu`: the run's output tokens/s divided by its GPUs, aggregate, on one GPU (InferenceX
  normalises throughput per GPU; `software.options.gpus` says how many GPUs ran).
Lengths are the nominal `isl`/`osl`: the benchmark draws each request's input and output lengths between 0.8× and
1× of them (`--random-range-ratio 0.8`), which the figure's procedure and options state.

The answer names the model by a prefix (`dsr1`) and a precision (`fp8`, `fp4`); the checkpoint comes from the
benchmark config (`configs/*-master.yaml` of SemiAnalysisAI/InferenceX, key model-precision-hardware-framework
[-mtp]) in effect on the run's date, from [[inferencex_config]] of data/reference/names/datasets-b-serving.toml
(each entry cites the commit that set it). Where the point gives its container image, only a config with that
image counts; where it does not, the config's image is the software version (cited in the options). `fp4` is
NVFP4 or MXFP4 as the checkpoint's cited format says. A point whose config is unknown or ambiguous, whose
checkpoint has no cited file size, or that lacks a metric is a rejection saying which.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from tpsdb.collect.extract import Candidate
from tpsdb.readers import FileContext
from tpsdb.readers._serving import (
    JsonShapeError,
    candidate,
    checkpoint,
    count,
    day,
    json_items,
    model_block,
    names,
    number,
)

NAME = "inferencex"
SOFTWARE = None  # per point: SGLang, TensorRT-LLM, Dynamo…
RANGE_RATIO = 0.8
CONFIG_REPO = "https://github.com/SemiAnalysisAI/InferenceX"


def read(data: bytes, ctx: FileContext) -> list[Candidate]:
    text = data.decode("utf-8-sig")
    try:
        points = list(json_items(text))
    except JsonShapeError as error:
        raise ValueError(f"{ctx.path}: not an InferenceX benchmarks answer ({error})") from None
    out: list[Candidate] = []
    for k, (point, quote) in enumerate(points):
        out += _figures(point, quote, k, ctx)
    return out


def _figures(point: Any, quote: str, k: int, ctx: FileContext) -> list[Candidate]:
    if not isinstance(point, dict):
        return [candidate(ctx, quote, f"p{k}", ["record: not a JSON object"], software=None)]
    metrics = point.get("metrics") if isinstance(point.get("metrics"), dict) else {}
    reasons: list[str] = []
    gpu = names("inferencex_hardware").get(str(point.get("hardware")))
    if gpu is None:
        reasons.append(f"hardware.name: unknown InferenceX hardware code {point.get('hardware')!r}")
    framework = names("inferencex_frameworks").get(str(point.get("framework")))
    if framework is None:
        reasons.append(f"software.name: unknown InferenceX framework {point.get('framework')!r}")
    run_day = day(point.get("date"))
    config, config_reason = _config(point, run_day)
    if config_reason:
        reasons.append(config_reason)
    image = point.get("image") or _image((config or {}).get("image"))
    found = checkpoint(config["checkpoint"]) if config else None
    if config and found is None:
        reasons.append(f"model.file_size_gb: no cited size for the checkpoint {config['checkpoint']!r} "
                       "(data/reference/datasets-b-*.toml)")
    quantization = _format(str(point.get("precision")), config["checkpoint"]) if config else None
    if config and quantization is None:
        reasons.append(f"quantization: {point.get('precision')!r} with the checkpoint {config['checkpoint']!r}: "
                       "which format is not stated")
    if found and quantization and found.quantization != quantization:
        reasons.append(f"quantization: the checkpoint cited is {found.quantization}, the run's is {quantization}")
    gpus = _gpus(point)
    conc, isl, osl = count(point.get("conc")), count(point.get("isl")), count(point.get("osl"))
    options: dict[str, Any] = {
        "image": image, "framework": point.get("framework"), "precision": point.get("precision"),
        "spec_decoding": point.get("spec_method"), "disaggregated": point.get("disagg"),
        "prefill_tp": point.get("prefill_tp"), "prefill_ep": point.get("prefill_ep"),
        "prefill_dp_attention": point.get("prefill_dp_attention"), "decode_tp": point.get("decode_tp"),
        "decode_ep": point.get("decode_ep"), "decode_dp_attention": point.get("decode_dp_attention"),
        "gpus": gpus, "random_range_ratio": RANGE_RATIO, "run_url": point.get("run_url"),
    }
    if config:
        options["checkpoint"] = config["checkpoint"]
        options["config"] = f"{CONFIG_REPO}/blob/{config['commit']}/{config['path']}"
        options["config_key"] = config["key"]
    if not point.get("image") and config:
        options["image_from"] = "config"  # the point names no image: the config's at the run's date
    procedure = (f"InferenceX benchmark_serving.py, random dataset: each request's input and output lengths drawn "
                 f"between {RANGE_RATIO}x and 1x of ISL {isl} / OSL {osl} (--random-range-ratio {RANGE_RATIO}), "
                 f"--ignore-eos, --request-rate inf, --max-concurrency {conc}")
    slot = _slot(point)
    out = []
    for metric, figure, hardware in (
            ("median_intvty", "per_user", f"{gpus}x {gpu}" if gpu and gpus and gpus > 1 else gpu),
            ("output_tput_per_gpu", "aggregate", gpu)):
        value = number(metrics.get(metric))
        why = list(reasons)
        if value is None:
            why.append(f"tokens_per_second: the point gives no metrics.{metric}")
        if gpus is None:
            why.append("hardware.name: the point gives no GPU count")
        figure_options = {**options, "metric": metric}
        if figure == "aggregate":
            figure_options["throughput"] = "per GPU: the run's output tokens/s divided by its GPUs"
        out.append(candidate(
            ctx, quote, f"{slot}:{metric}", why, software=framework, published_at=run_day,
            hardware=hardware, model=model_block(found, config["checkpoint"] if config else None),
            quantization=quantization,
            version=image, options=figure_options, lengths=(isl, osl, 0), users=conc, figure=figure,
            procedure=f"{procedure}; {metric}", phase="generation", value=value))
    return out


def _format(precision: str, checkpoint: str) -> str | None:
    """The named format of a run: fp8 is FP8; fp4 is MXFP4 or NVFP4 as the checkpoint's name says (AMD's
    MXFP4 checkpoints, NVIDIA's FP4/NVFP4 ones); None when the name does not say."""
    name = checkpoint.lower()
    if precision == "fp8":
        return "FP8"
    if precision == "fp4":
        if "mxfp4" in name:
            return "MXFP4"
        if name.startswith("nvidia/") and ("nvfp4" in name or "fp4" in name):
            return "NVFP4"
    return None


def _gpus(point: dict) -> int | None:
    """The GPUs of the run: prefill and decode workers' when disaggregated, else the one set that does both."""
    prefill, decode = count(point.get("num_prefill_gpu")), count(point.get("num_decode_gpu"))
    if point.get("disagg") is True:
        return prefill + decode if prefill and decode else None
    return decode or prefill


def _slot(point: dict) -> str:
    """The point's identity, the same in every answer and history file that repeats it."""
    fields = ("hardware", "framework", "model", "precision", "spec_method", "disagg", "prefill_tp", "prefill_ep",
              "prefill_dp_attention", "num_prefill_gpu", "decode_tp", "decode_ep", "decode_dp_attention",
              "num_decode_gpu", "isl", "osl", "conc", "date")
    run = str(point.get("run_url") or "").removeprefix("https://github.com/SemiAnalysisAI/InferenceX/actions/runs/")
    return "/".join(str(point.get(f)) for f in fields) + f"/{run}"


def config_key(point: dict) -> str:
    spec = "-mtp" if point.get("spec_method") == "mtp" else ""
    return f"{point.get('model')}-{point.get('precision')}-{point.get('hardware')}-{point.get('framework')}{spec}"


@lru_cache(maxsize=1)
def _history() -> dict[str, list[dict]]:
    """Config key -> its versions in commit order (each: commit, date, path, image, checkpoint)."""
    out: dict[str, list[dict]] = {}
    for entry in names("inferencex_config_versions").get("version", []):
        out.setdefault(entry["key"], []).append(entry)
    for versions in out.values():
        versions.sort(key=lambda v: v["date"])
    return out


def _image(name: str | None) -> str | None:
    """An image name as a registry path: enroot's "nvcr.io#nvidia/…" is nvcr.io/nvidia/…."""
    return name.replace("#", "/", 1) if name else name


def _config(point: dict, run_day: str | None) -> tuple[dict | None, str | None]:
    """The config version the point ran (or None) and, when none can be said, the reason."""
    key = config_key(point)
    versions = _history().get(key)
    if not versions:
        return None, f"model: no benchmark config {key!r} is known, so the checkpoint is not stated"
    if run_day is None:
        return None, "source.published_at: the point gives no run date, so its config is not known"
    before = [v for v in versions if v["date"][:10] < run_day]
    in_effect = before[-1:] + [v for v in versions if v["date"][:10] == run_day]  # a change that day: either ran
    in_effect = [v for v in in_effect if v.get("checkpoint")]
    if not in_effect:
        return None, f"model: the config {key!r} did not exist on {run_day}, so the checkpoint is not stated"
    image = point.get("image")
    if image:
        same = [v for v in in_effect if _image(v.get("image")) == _image(image)]
        if not same:
            return None, (f"model: the config {key!r} in effect on {run_day} ran {in_effect[-1].get('image')!r}, not "
                          f"this point's {image!r}, so its checkpoint is not known")
        in_effect = same
    if len({(v.get("image"), v.get("checkpoint")) for v in in_effect}) > 1:
        return None, (f"model: the config {key!r} changed on {run_day} and the point names no image: which "
                      "checkpoint and image ran is not known")
    return {**in_effect[-1], "key": key}, None
