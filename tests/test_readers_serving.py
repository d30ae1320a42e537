"""The serving-benchmark readers (InferenceX, LottoLottoLotto, localmaxxing, MLPerf) on small inputs built here, and
on the shared datasets (skipped without ../shared): every row is a candidate, its quote the record's exact text,
and a row that cannot give all six conditions says which."""

from __future__ import annotations

import json
import subprocess
from datetime import date
from pathlib import Path

import pytest

from conftest import ROOT
from tpsdb.readers import FileContext, _serving, names, reader
from tpsdb.readers._serving import Checkpoint, JsonShapeError, json_items
from tpsdb.record import validate

SHARED = ROOT.parent / "shared" / "datasets"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/datasets is absent")
CTX = FileContext(url="https://example.org/answer", path="answer.json", retrieved_at="2026-12-01")
TODAY = date(2026, 12, 6)


def test_the_readers_are_found_by_their_names():
    assert {"inferencex", "lotto", "localmaxxing", "mlperf"} <= set(names())


def test_json_items_gives_each_element_s_exact_text_pretty_or_compact():
    for text in ('[\n  {"a": 1,\n   "b": [1, 2]},\n  {"a": 2}\n]', '[{"a":1,"b":[1,2]},{"a":2}]', "[]"):
        items = list(json_items(text))
        assert [value for value, _ in items] == json.loads(text)
        assert all(raw in text and json.loads(raw) == value for value, raw in items)
    nested = '{"scraped_at": "x", "presets": {"A": {"rows": [{"id": 1}], "total": 1}, "B": {"rows": [{"id": 2}]}}}'
    assert [v["id"] for v, _ in json_items(nested, ("presets", "*", "rows"))] == [1, 2]
    with pytest.raises(JsonShapeError, match="truncated"):
        list(json_items('[{"a": 1}, {"a": 2}'))


# ------------------------------------------------------------------------------------------------ InferenceX
def inferencex_point(**changes) -> dict:
    point = {"hardware": "h200", "framework": "sglang", "model": "dsr1", "precision": "fp8", "spec_method": "none",
             "disagg": False, "prefill_tp": 8, "prefill_ep": 1, "prefill_dp_attention": False, "decode_tp": 8,
             "decode_ep": 1, "decode_dp_attention": False, "num_prefill_gpu": 8, "num_decode_gpu": 8, "isl": 1024,
             "osl": 8192, "conc": 32, "image": "lmsysorg/sglang:v0.5.12-cu130",
             "metrics": {"median_intvty": 45.125, "output_tput_per_gpu": 170.5}, "date": "2026-05-20",
             "run_url": "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/1/attempts/1"}
    point.update(changes)
    return point


@pytest.fixture
def deepseek(monkeypatch):
    """A stand-in for a cited size of the FP8 checkpoint (the shipped reference has none)."""
    monkeypatch.setitem(_serving.checkpoints(), "deepseek-ai/deepseek-r1-0528",
                        Checkpoint("deepseek-ai/DeepSeek-R1-0528", "DeepSeek-R1-0528", "FP8", 671.0, 37.0, 688.6))


def test_an_inferencex_point_gives_a_per_user_and_a_per_gpu_aggregate_figure(deepseek):
    text = json.dumps([inferencex_point()], indent=2)
    per_user, per_gpu = reader("inferencex").read(text.encode(), CTX)
    for candidate in (per_user, per_gpu):
        outcome = validate(candidate.record, today=TODAY)
        assert candidate.reasons == [] and outcome.accepted, outcome.reasons
        record = candidate.record
        quote = record["source"]["quote"]
        assert quote in text and quote.startswith("{") and json.loads(quote) == inferencex_point()
        assert record["source"]["published_at"] == "2026-05-20"
        assert (record["model"]["name"], record["quantization"]) == ("DeepSeek-R1-0528", "FP8")
        assert record["software"] == {"name": "SGLang", "version": "lmsysorg/sglang:v0.5.12-cu130",
                                      "options": record["software"]["options"]}
        assert record["lengths"] == {"prompt_tokens": 1024, "generated_tokens": 8192, "context_depth": 0}
        assert record["software"]["options"]["random_range_ratio"] == 0.8
        assert "--random-range-ratio 0.8" in record["nature"]["procedure"]
        assert record["software"]["options"]["config"].startswith("https://github.com/SemiAnalysisAI/InferenceX/blob/")
    assert (per_user.record["tokens_per_second"], per_user.record["concurrency"]) == (45.125, {"users": 32,
                                                                                             "figure": "per_user"})
    assert per_user.record["hardware"]["name"] == "8x NVIDIA H200"
    assert (per_gpu.record["tokens_per_second"], per_gpu.record["concurrency"]["figure"]) == (170.5, "aggregate")
    assert per_gpu.record["hardware"]["name"] == "NVIDIA H200"  # the figure is per GPU
    assert per_user.slot.endswith(":median_intvty") and per_gpu.slot.endswith(":output_tput_per_gpu")


def test_an_inferencex_point_without_image_takes_the_config_s_and_a_mismatch_is_a_rejection(deepseek):
    no_image, other_image, no_config, early = reader("inferencex").read(json.dumps([
        inferencex_point(image=None), inferencex_point(image="lmsysorg/sglang:v0.0.1"),
        inferencex_point(framework="vllm"), inferencex_point(date="2025-10-01")]).encode(), CTX)[::2]
    assert no_image.reasons == [] and no_image.record["software"]["version"] == "lmsysorg/sglang:v0.5.12-cu130"
    assert no_image.record["software"]["options"]["image_from"] == "config"
    assert any("ran 'lmsysorg/sglang:v0.5.12-cu130', not this point's" in r for r in other_image.reasons)
    assert any("no benchmark config 'dsr1-fp8-h200-vllm'" in r for r in no_config.reasons)
    assert any("did not exist on 2025-10-01" in r for r in early.reasons)


def test_an_inferencex_checkpoint_without_a_cited_size_is_a_rejection_naming_it():
    candidate = reader("inferencex").read(json.dumps([inferencex_point()]).encode(), CTX)[0]
    assert any("no cited size for the checkpoint 'deepseek-ai/DeepSeek-R1-0528'" in r for r in candidate.reasons)
    assert candidate.record["model"]["file_size_gb"] is None


def test_an_inferencex_fp4_point_is_nvfp4_or_mxfp4_by_its_checkpoint(monkeypatch):
    monkeypatch.setitem(_serving.checkpoints(), "amd/deepseek-r1-0528-mxfp4-preview",
                        Checkpoint("amd/DeepSeek-R1-0528-MXFP4-Preview", "DeepSeek-R1-0528", "MXFP4", 671.0, 37.0,
                                   377.0))
    point = inferencex_point(hardware="mi355x", precision="fp4", image="lmsysorg/sglang:v0.5.12-rocm700-mi35x",
                             date="2026-06-11", prefill_tp=4, decode_tp=4, num_prefill_gpu=4, num_decode_gpu=4)
    candidate = reader("inferencex").read(json.dumps([point]).encode(), CTX)[0]
    assert candidate.reasons == [] and candidate.record["quantization"] == "MXFP4"
    assert candidate.record["hardware"]["name"] == "4x AMD Instinct MI355X"


# ------------------------------------------------------------------------------------------------ Lotto
def lotto_row(**changes) -> dict:
    row = {"schema_version": 2, "record_kind": "measurement", "run_id": "camp/run-1", "date": "2026-07-01",
           "checkpoint_ref": "Mistral-7B-v0.3", "quant": "bf16", "engine": "vllm", "engine_version": "0.25.0",
           "tp": 2, "pp": 1, "dp": None, "instances": 1, "concurrency": 8, "prompt_tokens": 512, "gen_tokens": 256,
           "output_tok_s": 312.4, "output_tps_kind": "aggregate_output",
           "curve": [{"concurrency": 1, "output_tok_s": 51.5}, {"concurrency": 8, "output_tok_s": 312.4}]}
    row.update(changes)
    return row


def test_a_lotto_row_and_its_curve_are_figures_with_the_kind_the_row_states(monkeypatch):
    monkeypatch.setitem(_serving.checkpoints(), "mistralai/mistral-7b-v0.3",
                        Checkpoint("mistralai/Mistral-7B-v0.3", "Mistral-7B-v0.3", "BF16", 7.25, None, 14.5))
    lines = [json.dumps(lotto_row()), json.dumps(lotto_row(run_id="camp/run-2", output_tps_kind="unknown",
                                                            curve=None))]
    row, curve_point, unknown = reader("lotto").read("\n".join(lines).encode(), CTX)
    assert row.reasons == [] and validate(row.record, today=TODAY).accepted
    assert row.record["hardware"]["name"] == "2x NVIDIA GeForce RTX 3090"
    assert (row.record["software"]["name"], row.record["software"]["version"]) == ("vLLM", "0.25.0")
    assert row.record["concurrency"] == {"users": 8, "figure": "aggregate"} and row.record["source"]["quote"] == lines[0]
    assert (curve_point.record["tokens_per_second"], curve_point.record["concurrency"]["users"]) == (51.5, 1)
    assert curve_point.slot == "camp/run-1:curve0"
    assert any("output_tps_kind 'unknown'" in r for r in unknown.reasons)


def test_a_lotto_checkpoint_comes_from_model_map_json_when_the_source_hands_it():
    ctx = FileContext(url=CTX.url, path="data/benchmarks.jsonl", retrieved_at="2026-12-01",
                      siblings={"model-map.json": b'{"Mistral-7B-v0.3": "someone/else"}'})
    candidate = reader("lotto").read(json.dumps(lotto_row()).encode(), ctx)[0]
    assert candidate.record["software"]["options"]["checkpoint"] == "someone/else"
    assert any("no cited size for someone/else" in r for r in candidate.reasons)


# ------------------------------------------------------------------------------------------------ localmaxxing
def localmaxxing_row(**changes) -> dict:
    row = {"id": "row1", "promptTokens": 83, "outputTokens": 512, "batchSize": 2048, "tokSOut": 313.1,
           "createdAt": "2026-07-23T16:14:36.049Z", "notes": "llama-server -m x.gguf -ngl 999 -np 1",
           "engineFlags": {"commandSnippet": None}, "model": {"hfId": "org/model-GGUF", "params": 30},
           "hardware": {"gpuName": "RTX 5090", "gpuCount": 1},
           "engine": {"engineName": "llama.cpp", "engineVersion": "b741 (1fd6dfe)", "quantization": "UD-Q4_K_XL"},
           "user": {"username": "someone"}}
    row.update(changes)
    return row


def test_a_localmaxxing_batch_size_is_not_a_user_count_unless_the_command_says_so():
    one, unsaid = reader("localmaxxing").read(json.dumps({"presets": {"A": {"rows": [
        localmaxxing_row(), localmaxxing_row(id="row2", notes="benchmark, batch 1")]}, "B": {"rows": [
            localmaxxing_row()]}}}).encode(), CTX)  # row1 listed under two presets: one figure
    assert one.record["concurrency"] == {"users": 1, "figure": "per_user"}
    assert one.record["quantization"] == "Q4_K_XL" and one.record["hardware"]["name"] == "NVIDIA GeForce RTX 5090"
    assert one.record["source"]["author"] == "someone"
    assert any(r.startswith("concurrency.users: batchSize 2048 is not a count of users") for r in unsaid.reasons)
    assert any("no cited size for org/model-GGUF" in r for r in one.reasons)


# ------------------------------------------------------------------------------------------------ MLPerf
def test_an_mlperf_row_is_a_rejection_naming_what_the_scenario_leaves_unstated():
    rows = [{"ID": "5.1-0001", "Model": "llama2-70b-99", "Scenario": "Offline", "Accelerator": "NVIDIA H200",
             "a#": 8, "Nodes": 1, "Software": "TensorRT 10.2, CUDA 12.4", "weight_data_types": "fp8",
             "Performance_Result": 34864.2, "Performance_Units": "Tokens/s", "version": "v5.1"},
            {"ID": "5.1-0002", "Model": "resnet", "Performance_Result": 1.0, "Performance_Units": "Samples/s"}]
    (candidate,) = reader("mlperf").read(json.dumps(rows, indent=1).encode(), CTX)
    assert candidate.record["hardware"]["name"] == "8x NVIDIA H200" and candidate.record["quantization"] == "FP8"
    assert any(r.startswith("lengths: MLPerf gives no per-figure prompt or output length") for r in candidate.reasons)
    assert any("Offline scenario sets the load" in r for r in candidate.reasons)
    assert candidate.record["tokens_per_second"] == 34864.2


# ------------------------------------------------------------------------------------------------ shared data
SHARED_FILES = {
    "inferencex": ["inferencex/api-fixtures-2026-06-14/benchmarks.json"],
    "lotto": ["lottolottolotto-4x3090-llm-benchmarks/data/benchmarks.jsonl"],
    "localmaxxing": ["localmaxxing-via-llmfit/llmfit-core/data/benchmark_cache.json"],
    "mlperf": ["mlperf-inference-summaries/v5.1_summary_results.json"],
}


@needs_shared
@pytest.mark.parametrize("name", sorted(SHARED_FILES))
def test_every_shared_row_is_a_candidate_with_its_exact_text(name):
    for path in SHARED_FILES[name]:
        text = (SHARED / path).read_text(encoding="utf-8")
        candidates = reader(name).read(text.encode(), FileContext(url=CTX.url, path=path, retrieved_at="2026-12-01"))
        assert candidates
        assert len({c.slot for c in candidates}) == len(candidates)  # stable, distinct slots
        for candidate in candidates:
            assert candidate.record["source"]["quote"] in text
            outcome = validate(candidate.record, today=TODAY)
            assert candidate.reasons or outcome.reasons or outcome.accepted  # every rejection says why


def test_no_shared_file_is_copied_into_the_project():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    names_in_project = {Path(p).name for p in tracked}
    assert not {"benchmarks.jsonl", "benchmark_cache.json", "benchmarks-history.json", "model-map.json"} \
        & names_in_project
    assert not [p for p in names_in_project if p.endswith("summary_results.json")]


def test_an_inferencex_fp4_checkpoint_named_by_a_local_path_states_no_format():
    point = inferencex_point(hardware="b200", framework="dynamo-trt", precision="fp4", image=None, date="2026-02-10",
                             disagg=True, num_prefill_gpu=8, num_decode_gpu=16)
    candidate = reader("inferencex").read(json.dumps([point]).encode(), CTX)[0]
    assert candidate.record["quantization"] is None
    assert any("'fp4' with the checkpoint 'deepseek-r1-fp4': which format is not stated" in r
               for r in candidate.reasons)
    assert candidate.record["hardware"]["name"] == "24x NVIDIA B200"  # prefill and decode GPUs


def test_a_quote_stops_before_the_member_naming_the_runs_own_loopback_server():
    from tpsdb.readers._serving import quote_without_local_host

    line = '{"model": "m", "output_tok_s": 35.3, "launch_argv": ["vllm", "serve", "--host", "127.0.0.1"], "n": 1}'
    assert quote_without_local_host(line, 35.3) == '{"model": "m", "output_tok_s": 35.3'
    assert line.startswith(quote_without_local_host(line, 35.3))  # still an exact piece of the file
    # a beginning that would no longer show the value keeps the whole quote; a quote naming no host is left alone
    assert quote_without_local_host('{"host": "localhost", "tps": 9.5}', 9.5) == '{"host": "localhost", "tps": 9.5}'
    assert quote_without_local_host('{"tps": 9.5}', 9.5) == '{"tps": 9.5}'


def test_a_quote_naming_a_loopback_server_keeps_a_clean_part_that_shows_the_value_or_any_when_there_is_none():
    from tpsdb.readers._serving import quote_without_local_host

    row = '{"id": "r", "engine": {"cmd": "llama-server --host 127.0.0.1"}, "tokSOut": 68, "notes": null}'
    assert quote_without_local_host(row, 68.0) == '"tokSOut": 68, "notes": null}'  # 68.0 is written 68
    assert quote_without_local_host(row, None) == '{"id": "r"'  # no value to show: the part before the member
    assert "127.0.0.1" in quote_without_local_host(row, 71.5)  # no part shows 71.5: the whole row, never a cut
