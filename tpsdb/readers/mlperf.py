"""MLPerf Inference result summaries (`summary_results.json` of a round, mlcommons/inference_results_vX.Y): one row
per submitter × system × benchmark × scenario, with `Performance_Result` in `Performance_Units`.

Only the LLM benchmarks report tokens/s (`Performance_Units` "Tokens/s"): those rows are read, each a candidate.
None of them can be stored as a figure, and each says why, condition by condition:
- lengths: the benchmark's dataset (OpenOrca for llama2-70b, CNN/DailyMail for gpt-j…) gives every query its
  own prompt and output; the row states no prompt length, and `TOKENS_PER_SAMPLE` in `Accuracy` is the mean
  output of the accuracy run, not the length of the performance run's queries;
- concurrency: the scenario sets the load (Offline: every query at once; Server and Interactive: queries arriving
  at a target rate under latency bounds), never a number of users; the figure is the system's total;
- model: the row names the benchmark (`llama2-70b-99`: the model at 99% of its reference accuracy), not a
  checkpoint, so there is no file size.
What the row does state is kept (the accelerator and its count, the software, the weights' data type, the value,
the scenario in the options), so that a scenario notion can take these rows up later without reading them again.
"""

from __future__ import annotations

import re
from typing import Any

from tpsdb.collect.extract import Candidate
from tpsdb.collect.machines import canonical_hardware
from tpsdb.readers import FileContext
from tpsdb.readers._serving import JsonShapeError, candidate, count, json_items, number, quant_format

NAME = "mlperf"
SOFTWARE = None
TOKENS = "Tokens/s"
LENGTHS = ("lengths: MLPerf gives no per-figure prompt or output length: the {model} benchmark's dataset gives each "
           "query its own, and TOKENS_PER_SAMPLE is the accuracy run's mean output")
LOAD = ("concurrency.users: the {scenario} scenario sets the load (queries at once or at a rate), not a number of "
        "users")
CHECKPOINT = "model: the row names the benchmark {model!r}, not a checkpoint, so no file size can be cited"
_SCENARIOS = {"Offline": "all queries issued at once", "Server": "queries arriving at a target rate (Poisson) "
              "under a latency bound", "Interactive": "as Server, under tighter time-to-first-token and "
              "time-per-output-token bounds"}


def read(data: bytes, ctx: FileContext) -> list[Candidate]:
    text = data.decode("utf-8-sig")
    try:
        rows = list(json_items(text))
    except JsonShapeError as error:
        raise ValueError(f"{ctx.path}: not an MLPerf summary_results.json ({error})") from None
    out = []
    for k, (row, quote) in enumerate(rows):
        if isinstance(row, dict) and row.get("Performance_Units") == TOKENS:
            out.append(_figure(row, quote, k, ctx))
    return out


def _figure(row: dict, quote: str, k: int, ctx: FileContext) -> Candidate:
    model, scenario = str(row.get("Model")), str(row.get("Scenario"))
    reasons = [LENGTHS.format(model=model), LOAD.format(scenario=scenario), CHECKPOINT.format(model=model)]
    accelerators = _accelerators(row)
    chip = canonical_hardware(re.sub(r"\(x\d+\)", "", str(row.get("Accelerator") or "")))
    hardware = (f"{accelerators}x {chip}" if accelerators and accelerators > 1 else chip) if chip else None
    if hardware is None:
        reasons.append(f"hardware.name: the accelerator {row.get('Accelerator')!r} is not a known machine")
    software = str(row.get("Software") or "").split(",")[0].strip() or None
    name, _, version = (software or "").rpartition(" ")
    options: dict[str, Any] = {"scenario": scenario, "load": _SCENARIOS.get(scenario), "benchmark": model,
                               "accelerators": accelerators, "nodes": row.get("Nodes"),
                               "system": row.get("System"), "software": row.get("Software"),
                               "division": row.get("Category"), "accuracy": row.get("Accuracy")}
    return candidate(
        ctx, quote, f"{row.get('ID') or f'r{k}'}/{model}/{scenario}", reasons, software=name or software,
        author=row.get("Submitter") if isinstance(row.get("Submitter"), str) else None,
        hardware=hardware, model={"name": model, "params_b": None, "file_size_gb": None},
        quantization=quant_format(str(row.get("weight_data_types") or "")), version=version or None,
        options={k: v for k, v in options.items() if v is not None}, figure="aggregate",
        procedure=f"MLPerf Inference {row.get('version')} {scenario} scenario (LoadGen)", phase="generation",
        value=number(row.get("Performance_Result")))


def _accelerators(row: dict) -> int | None:
    total = count(row.get("Total Accelerators"))
    if total:
        return total
    per_node, nodes = number(row.get("a#")), count(row.get("Nodes"))
    return int(per_node) * (nodes or 1) if per_node and per_node.is_integer() else None
