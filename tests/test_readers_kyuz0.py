"""The kyuz0 reader (results.json of kyuz0/amd-strix-halo-toolboxes): one candidate per run, quoted as the run's
object stands in the file, with a slot from the run's identity; failed and RPC runs are rejections."""

from __future__ import annotations

import json

from tpsdb import readers
from tpsdb.readers import FileContext
from tpsdb.readers.kyuz0 import model_name
from tpsdb.record import validate

CTX = FileContext(url="https://github.com/kyuz0/amd-strix-halo-toolboxes/blob/" + "a" * 40 + "/docs/results.json",
                  path="docs/results.json", retrieved_at="2026-12-01", published_at="2026-05-18")


def run(**changes) -> dict:
    base = {"model": "Qwen3.6-35B-A3B-UD-Q8_K_XL-00001-of-00002", "model_clean": "Qwen3.6-35B-A3B-UD-Q8_K_XL",
            "env": "vulkan_radv", "fa": True, "context": "longctx32768", "test": "tg32 @ d32768", "tps_mean": 41.5,
            "tps_std": 0.25, "error": False, "error_type": None, "backend": "Vulkan", "ngl": 99, "mmap": 0,
            "params_b": 34.66, "file_size_gib": 34.36, "quant": "Q8_K_XL", "rpc": False,
            "build": {"hash": "0253fb21f", "number": "9187"}}
    return {**base, **changes}


def read(*runs: dict, indent: int = 2):
    data = json.dumps({"meta": {"environments": ["vulkan_radv"]}, "runs": list(runs)}, indent=indent).encode()
    return data, readers.reader("kyuz0").read(data, CTX)


def test_a_run_is_a_figure_with_its_conditions_and_its_object_as_the_quote():
    data, (candidate,) = read(run())
    record = candidate.record
    assert record["source"]["quote"] in data.decode() and json.loads(record["source"]["quote"]) == run()
    assert record["hardware"]["name"] == "AMD Radeon 8060S"
    assert record["model"] == {"name": "Qwen3.6-35B-A3B", "params_b": 34.66, "file_size_gb": 36.89}
    assert record["quantization"] == "Q8_K_XL"
    assert record["software"] == {"name": "llama.cpp", "version": "b9187 (0253fb21f)",
                                  "options": {"backend": "Vulkan", "ngl": 99, "fa": 1, "mmap": 0,
                                              "toolbox": "vulkan_radv"}}
    assert record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 32, "context_depth": 32768}
    assert (record["phase"], record["tokens_per_second"], record["stddev"]) == ("generation", 41.5, 0.25)
    assert not candidate.reasons and validate(record).accepted


def test_the_slot_is_the_runs_identity_whatever_its_place_or_the_files_layout():
    _, (alone,) = read(run())
    _, (_, moved) = read(run(test="pp512", tps_mean=900.0), run(), indent=4)
    _, (rerun,) = read(run(tps_mean=42.0))
    assert moved.slot == alone.slot and rerun.slot != alone.slot


def test_failed_and_rpc_runs_are_rejections_naming_the_reason():
    _, (failed, rpc) = read(run(error=True, error_type="hang", test=None, tps_mean=None, build=None), run(rpc=True))
    assert failed.reasons == ["nature: failed run (hang), no figure"]
    assert rpc.reasons and rpc.reasons[0].startswith("hardware.name: RPC run")


def test_model_names_drop_the_quant_and_join_the_names_tpsdb_uses():
    assert model_name("GLM-4.7-Flash-BF16") == "GLM-4.7-Flash"
    assert model_name("gemma-4-31B-it-UD-Q4_K_XL") == "gemma-4-31B-it"
    assert model_name("llama-2-7b.Q4_0") == "Llama 2 7B"
    assert model_name("gpt-oss-120b-mxfp4") == "gpt-oss 120B"


def test_readers_are_found_by_name():
    assert {"kyuz0", "lhl", "xiongjiedai"} <= set(readers.names())
