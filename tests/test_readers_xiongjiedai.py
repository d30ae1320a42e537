"""The XiongjieDai reader (notebooks of XiongjieDai/GPU-Benchmarks-on-LLM-Inference): each code cell's command and
outputs read by the post readers; the machine from the device lines checked against the GPU count of the file
name; a `./main` run's build from `main: build = N (hash)`."""

from __future__ import annotations

import json

from tpsdb.readers import FileContext, reader
from tpsdb.readers.xiongjiedai import gpu_count, mac_of
from tpsdb.record import validate

BENCH_OUT = """ggml_cuda_init: found 2 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
  Device 1: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
| model                          |       size |     params | backend    | ngl | test       |              t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | ---------- | ---------------: |
| llama 8B Q4_K - Medium         |   4.58 GiB |     8.03 B | CUDA       |  99 | tg 512     |    122.10 ± 0.25 |

build: 4426e298 (2824)
"""
MAIN_OUT = """Log start
main: build = 1671 (8fe03ff)
ggml_init_cublas: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9
llm_load_print_meta: model ftype      = Q4_0
llm_load_print_meta: model params     = 6.74 B
llm_load_print_meta: model size       = 3.56 GiB (4.54 BPW)
llama_print_timings:      sample time =     100.00 ms /  1024 runs   (    0.10 ms per token, 10240.00 tokens per second)
llama_print_timings: prompt eval time =      88.84 ms /   494 tokens (    0.18 ms per token,  5560.50 tokens per second)
llama_print_timings:        eval time =    6815.89 ms /  1023 runs   (    6.66 ms per token,   150.09 tokens per second)
"""


def notebook(*cells: tuple[str, str]) -> bytes:
    return json.dumps({"cells": [{"cell_type": "markdown", "source": ["## Benchmarks"]}] + [
        {"cell_type": "code", "source": source.splitlines(keepends=True),
         "outputs": [{"output_type": "stream", "name": "stdout", "text": out.splitlines(keepends=True)}]}
        for source, out in cells]}, indent=1).encode()


def read(path: str, data: bytes):
    return reader("xiongjiedai").read(data, FileContext(
        url="https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference/blob/" + "e" * 40 + "/x",
        path=path, retrieved_at="2026-12-01", published_at="2024-05-12"))


BENCH_CELL = ("!./llama-bench -p 512 -n 512 -m ./models/8B-v3/ggml-model-Q4_K_M.gguf", BENCH_OUT)


def test_a_llama_bench_row_of_a_cell_is_a_figure_on_the_machine_its_device_lines_name():
    (candidate,) = read("LLaMA 3/Gaming GPUs/4090_2_v3.ipynb", notebook(BENCH_CELL))
    record = candidate.record
    assert record["source"]["quote"] in BENCH_OUT
    assert record["hardware"]["name"] == "2x NVIDIA GeForce RTX 4090"
    assert (record["model"]["name"], record["quantization"]) == ("Llama 3 8B", "Q4_K_M")
    assert (record["software"]["version"], record["tokens_per_second"]) == ("b2824 (4426e298)", 122.10)
    assert record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 512, "context_depth": 0}
    assert candidate.slot.startswith("cell1:") and not candidate.reasons and validate(record).accepted


def test_a_gpu_count_the_file_name_contradicts_is_a_rejection():
    (candidate,) = read("LLaMA 3/Gaming GPUs/4090_4_v3.ipynb", notebook(BENCH_CELL))
    assert candidate.reasons == ["hardware.name: the cell names '2x NVIDIA GeForce RTX 4090', the file name "
                                 "'4090_4_v3.ipynb' 4 GPU(s)"]


def test_a_main_run_gives_its_prompt_and_generation_figures_with_its_build_and_no_sampling_speed():
    cell = ("!./main -ngl 10000 -m ./models/7B-v2/ggml-model-q4_0.gguf -n 1024 -e", MAIN_OUT)
    candidates = read("LLaMA 2/Gaming GPUs/4090_v2.ipynb", notebook(cell))
    by_value = {c.record["tokens_per_second"]: c for c in candidates}
    assert set(by_value) == {10240.0, 5560.5, 150.09}
    assert by_value[10240.0].reasons == ["phase: sampling speed, not model throughput"]
    for value in (5560.5, 150.09):
        record = by_value[value].record
        assert record["software"]["version"] == "b1671 (8fe03ff)"
        assert (record["model"]["name"], record["hardware"]["name"]) == ("Llama 2 7B", "NVIDIA GeForce RTX 4090")
        assert record["source"]["quote"] in MAIN_OUT and validate(record).accepted
    assert by_value[150.09].record["lengths"]["generated_tokens"] == 1023


def test_file_names_state_the_gpu_count_and_the_mac():
    assert [gpu_count(p) for p in ("a/4090_v3.ipynb", "a/3090_6.ipynb", "a/A100_SXM_4_v3.ipynb")] == [1, 6, 4]
    assert mac_of("LLaMA 3/Mac/M1max_64GB.ipynb") == "Apple M1 Max"
    assert mac_of("LLaMA 3/Gaming GPUs/4090_v3.ipynb") is None
