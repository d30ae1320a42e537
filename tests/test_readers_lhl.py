"""The lhl reader (llm-bench/<model>/results.jsonl of lhl/strix-halo-testing): `bench_raw` read as llama-bench's
own JSON record, the machine from system_info.json beside the file; failed and RPC runs are rejections."""

from __future__ import annotations

import json

from tpsdb.readers import FileContext, reader
from tpsdb.record import validate

PATH = "llm-bench/Llama-4-Scout-17B-16E-Instruct-UD-Q4_K_XL/results.jsonl"
INFO = "llm-bench/Llama-4-Scout-17B-16E-Instruct-UD-Q4_K_XL/system_info.json"
RAW = {"build_commit": "086cf81e", "build_number": 5921, "gpu_info": "AMD Radeon Graphics", "backends": "ROCm",
       "model_filename": "/models/gguf/Llama-4-Scout-17B-16E-Instruct-UD-Q4_K_XL-00001-of-00002.gguf",
       "model_type": "llama4 17Bx16E (Scout) Q4_K - Medium", "model_size": 61985006336,
       "model_n_params": 107769861184, "n_gpu_layers": 99, "flash_attn": False, "n_prompt": 0, "n_gen": 128,
       "n_depth": 0, "test_time": "2025-07-18T01:57:18Z", "avg_ts": 19.25, "stddev_ts": 0.04}


def line(raw: dict | None, start: int = 1752800000000) -> str:
    # as the file writes it: compact, with escaped slashes, the record in the middle of the line
    text = json.dumps({"start_time": start, "mode": "tg", "value": 128, "bench_raw": raw, "avg_power_w": 80.5,
                       "build": "llama.cpp-hip"}, separators=(",", ":"))
    return text.replace("/", "\\/")


def ctx(info: dict | None) -> FileContext:
    siblings = {INFO: json.dumps(info).encode()} if info is not None else {}
    return FileContext(url="https://github.com/lhl/strix-halo-testing/blob/" + "d" * 40 + "/" + PATH, path=PATH,
                       retrieved_at="2026-12-01", published_at="2025-08-09", siblings=siblings)


def test_a_record_is_a_figure_quoted_as_it_stands_in_the_line():
    text = line(RAW)
    (candidate,) = reader("lhl").read(text.encode(), ctx({"cpu": "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S"}))
    record = candidate.record
    assert record["source"]["quote"] in text and json.loads(record["source"]["quote"]) == RAW
    assert record["hardware"]["name"] == "AMD Radeon 8060S"
    assert record["model"]["name"] == "Llama-4-Scout-17B-16E-Instruct"
    assert record["quantization"] == "Q4_K_M"  # from the label's end, which the common reader cannot split
    assert (record["software"]["version"], record["tokens_per_second"]) == ("b5921 (086cf81e)", 19.25)
    assert record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 0}
    assert not candidate.reasons and validate(record).accepted


def test_an_engineering_sample_cpu_leaves_the_machine_to_the_gpu_it_states():
    info = {"cpu": "AMD Eng Sample", "gpu_details": {"device_name": "Radeon 8060S Graphics"}}
    (candidate,) = reader("lhl").read(line(RAW).encode(), ctx(info))
    assert candidate.record["hardware"]["name"] == "AMD Radeon 8060S"


def test_failed_rpc_and_unnamed_machine_runs_are_rejections_with_the_reason():
    text = "\n".join([line(None, 1), line({**RAW, "backends": "Vulkan,RPC"}, 2), ""])
    failed, rpc = reader("lhl").read(text.encode(), ctx({"cpu": "AMD RYZEN AI MAX+ 395 w/ Radeon 8060S"}))
    assert failed.reasons == ["nature: failed run (the line holds no llama-bench record), no figure"]
    assert any(r.startswith("hardware.name: RPC run") for r in rpc.reasons)
    assert failed.slot != rpc.slot
    (alone,) = reader("lhl").read(line(RAW).encode(), ctx(None))
    assert alone.reasons == ["hardware.name: no system_info.json beside the file names the machine"]
