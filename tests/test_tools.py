"""The speeds other tools print (issue 10, item 4): each figure a measurement, or a rejection naming what is missing;
and the registry of their readers, one module per shape (issue 17, item 4: tpsdb/collect/tools/).

The outputs below are shaped as the tools print them (llama.cpp src/llama-context.cpp and tools/server, ik_llama.cpp
examples/sweep-bench, ollama's Metrics.Summary, mlx-lm generate.py, vLLM benchmark_serving.py, SGLang bench_serving).
"""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from tpsdb.collect import tools
from tpsdb.collect.extract import PostContext, extract_post, extract_text
from tpsdb.collect.reading import Reading, join_split_tables, pieces_from_text
from tpsdb.collect.tools import llama_logs, mlx, ollama, serving, sweep_bench
from tpsdb.collect.tools._post import NO_COMMAND, Post, text_lines
from tpsdb.collect.tools.llama_logs import SERVER_SLOTS
from tpsdb.collect.tools.serving import NO_CONCURRENCY, PEAK_FIGURE
from tpsdb.record import validate

CTX = PostContext("https://github.com/ggml-org/llama.cpp/discussions/1#discussioncomment-2", "2026-12-01",
                  "2026-11-30", "someone", {})


def _accepted(candidate) -> bool:
    return not candidate.reasons and validate(candidate.record).accepted


def _missing(candidate) -> list[str]:
    return candidate.reasons + validate(candidate.record).reasons


# What these tools do not print: the model's parameter count and file size (the store's reference may know them).
MODEL_SIZE_UNKNOWN = ["model.params_b: missing", "model.file_size_gb: missing"]


def _all_but_model_size(candidate) -> bool:
    return _missing(candidate) == MODEL_SIZE_UNKNOWN


LLAMA_CLI = """On my RTX 4090:

```
$ ./build/bin/llama-cli -m /models/Qwen3-8B-Q4_K_M.gguf -p "Hello" -n 128 -ngl 99
build: 6918 (2f68ce7cf) with cc (Ubuntu 13.2.0) 13.2.0 for x86_64-linux-gnu
ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
llama_model_loader: loaded meta data with 32 key-value pairs and 399 tensors from /models/Qwen3-8B-Q4_K_M.gguf (version GGUF V3 (latest))
print_info: file type   = Q4_K - Medium
print_info: file size   = 4.68 GiB (4.90 BPW)
print_info: model params     = 8.19 B
llama_perf_sampler_print:    sampling time =      12.31 ms /   140 runs   (    0.09 ms per token, 11373.07 tokens per second)
llama_perf_context_print:        load time =    1520.33 ms
llama_perf_context_print: prompt eval time =      25.10 ms /    12 tokens (    2.09 ms per token,   478.09 tokens per second)
llama_perf_context_print:        eval time =     980.44 ms /   127 runs   (    7.72 ms per token,   129.53 tokens per second)
llama_perf_context_print:       total time =    1050.12 ms /   139 tokens
```
"""


def test_llama_perf_context_print_lines_are_measurements_with_the_loaders_model():
    sampling, prompt, generation = extract_text(LLAMA_CLI, CTX)
    assert _accepted(prompt) and _accepted(generation)
    record = generation.record
    assert record["tokens_per_second"] == 129.53 and record["phase"] == "generation"
    assert record["model"] == {"name": "Qwen3-8B-Q4_K_M", "params_b": 8.19, "file_size_gb": 5.03}
    assert record["quantization"] == "Q4_K_M" and record["hardware"]["name"] == "NVIDIA GeForce RTX 4090"
    assert record["software"] == {"name": "llama.cpp", "version": "b6918 (2f68ce7cf)", "options": {}}
    assert record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 127, "context_depth": 12}
    assert record["concurrency"] == {"users": 1, "figure": "per_user"}
    assert record["nature"]["procedure"] == 'llama-cli -m /models/Qwen3-8B-Q4_K_M.gguf -p "Hello" -n 128 -ngl 99'
    assert prompt.record["lengths"]["prompt_tokens"] == 12 and prompt.record["tokens_per_second"] == 478.09
    assert sampling.reasons == ["phase: sampling speed, not model throughput"]


def test_a_timing_log_without_its_command_is_a_rejection_naming_the_procedure():
    text = LLAMA_CLI.replace('$ ./build/bin/llama-cli -m /models/Qwen3-8B-Q4_K_M.gguf -p "Hello" -n 128 -ngl 99\n', "")
    generation = extract_text(text, CTX)[-1]
    assert generation.record["nature"]["procedure"] is None
    assert NO_COMMAND.format("llama.cpp") in generation.reasons
    assert "nature.procedure: missing" in " ".join(validate(generation.record).reasons)
    # the model still comes from the loader lines, not from a command
    assert generation.record["model"]["name"] == "Qwen3-8B-Q4_K_M"


SERVER = """`llama-server -m gpt-oss-20b-mxfp4.gguf -ngl 99 -c 16384` on an RTX 3090, build: 6918 (2f68ce7cf)

```
slot print_timing: id  0 | task 0 |
prompt eval time =      52.21 ms /    12 tokens (    4.35 ms per token,   229.84 tokens per second)
       eval time =    1234.56 ms /   100 tokens (   12.35 ms per token,    81.00 tokens per second)
      total time =    1286.77 ms /   112 tokens
```
"""


def test_llama_server_print_timing_is_one_user_of_the_server():
    prompt, generation = extract_text(SERVER, CTX)
    assert _all_but_model_size(generation), _missing(generation)
    record = generation.record
    assert (record["tokens_per_second"], record["lengths"]["generated_tokens"]) == (81.0, 100)
    assert record["nature"]["procedure"] == "llama-server -m gpt-oss-20b-mxfp4.gguf -ngl 99 -c 16384"
    assert record["quantization"] == "MXFP4" and record["model"]["name"] == "gpt-oss-20b-mxfp4"
    assert record["hardware"]["name"] == "NVIDIA GeForce RTX 3090"
    assert prompt.record["lengths"]["prompt_tokens"] == 12


def test_llama_server_with_parallel_slots_does_not_say_how_many_users_ran():
    (_, generation) = extract_text(SERVER.replace("-c 16384", "-c 16384 -np 4"), CTX)
    assert SERVER_SLOTS.format(4) in generation.reasons


SWEEP = """ik_llama.cpp:

    ./build/bin/llama-sweep-bench -m /models/DeepSeek-V3-IQ4_XS.gguf -c 4096 -ub 512 -t 96

build: 3675 (a1b2c3d4)
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
llm_load_print_meta: model ftype      = IQ4_XS - 4.25 bpw
llm_load_print_meta: model params     = 672.050 B
llm_load_print_meta: model size       = 334.510 GiB (4.28 BPW)

|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |
|-------|--------|--------|----------|----------|----------|----------|
|   512 |    128 |      0 |    1.100 |   465.51 |    2.311 |    55.38 |
|   512 |    128 |    512 |    1.183 |   432.97 |    1.895 |    67.55 |
"""


def test_sweep_bench_rows_are_one_user_at_the_depth_of_the_row():
    candidates = extract_text(SWEEP, CTX)
    assert [c.slot for c in candidates] == ["t0:r0:prompt", "t0:r0:generation", "t0:r1:prompt",
                                            "t0:r1:generation"]
    assert all(_accepted(c) for c in candidates), [_missing(c) for c in candidates]
    record = candidates[3].record
    assert record["tokens_per_second"] == 67.55 and record["software"]["name"] == "ik_llama.cpp"
    assert record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 512}
    assert candidates[2].record["lengths"] == {"prompt_tokens": 512, "generated_tokens": 0, "context_depth": 512}
    assert record["quantization"] == "IQ4_XS" and record["software"]["version"] == "b3675 (a1b2c3d4)"
    assert record["nature"]["procedure"].startswith("llama-sweep-bench -m /models/DeepSeek-V3-IQ4_XS.gguf")
    assert record["hardware"]["name"] == "NVIDIA GeForce RTX 4090"


OLLAMA = """ollama version is 0.5.7, on a Mac Studio M2 Ultra:

```
$ ollama run llama3.1:8b-instruct-q4_K_M --verbose "Why is the sky blue?"
...
total duration:       6.731543s
load duration:        20.1235ms
prompt eval count:    26 token(s)
prompt eval duration: 123.001ms
prompt eval rate:     211.38 tokens/s
eval count:           298 token(s)
eval duration:        6.593275s
eval rate:            45.20 tokens/s
```
"""


def test_ollama_verbose_rates_are_measurements():
    prompt, generation = extract_text(OLLAMA, CTX)
    assert _all_but_model_size(generation), _missing(generation)
    record = generation.record
    assert record["tokens_per_second"] == 45.2 and record["software"] == {"name": "ollama", "version": "0.5.7",
                                                                           "options": {}}
    assert record["model"]["name"] == "llama3.1:8b-instruct-q4_K_M" and record["quantization"] == "Q4_K_M"
    assert record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 298, "context_depth": 26}
    assert record["nature"]["procedure"] == 'ollama run llama3.1:8b-instruct-q4_K_M --verbose "Why is the sky blue?"'
    assert record["hardware"]["name"] == "Apple M2 Ultra"
    assert (prompt.record["tokens_per_second"], prompt.record["lengths"]["prompt_tokens"]) == (211.38, 26)


def test_ollama_without_a_version_or_a_quantization_is_rejected_naming_them():
    text = OLLAMA.replace("ollama version is 0.5.7, on", "On").replace("-instruct-q4_K_M", "")
    generation = extract_text(text, CTX)[-1]
    reasons = " ".join(_missing(generation))
    assert "software.version: missing" in reasons and "quantization: missing" in reasons
    assert generation.record["model"]["name"] == "llama3.1:8b"  # the tag only: no format guessed from it


MLX = """M3 Max (40-core GPU), mlx-lm 0.21.4:

```
mlx_lm.generate --model mlx-community/Llama-3.2-3B-Instruct-4bit --prompt "hello" --max-tokens 128
==========
Prompt: 12 tokens, 85.123 tokens-per-sec
Generation: 128 tokens, 45.300 tokens-per-sec
Peak memory: 1.065 GB
```
"""


def test_mlx_lm_generate_prints_prompt_and_generation_speeds():
    prompt, generation = extract_text(MLX, CTX)
    assert _all_but_model_size(generation), _missing(generation)
    record = generation.record
    assert (record["tokens_per_second"], record["phase"]) == (45.3, "generation")
    assert record["software"]["name"] == "mlx-lm" and record["software"]["version"] == "0.21.4"
    assert record["model"]["name"] == "mlx-community/Llama-3.2-3B-Instruct-4bit"
    assert record["quantization"] == "MLX_4BIT"
    assert record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 12}
    assert prompt.record["tokens_per_second"] == 85.123


def test_old_mlx_lines_without_counts_are_rejected_for_their_lengths():
    text = MLX.replace("Prompt: 12 tokens, ", "Prompt: ").replace("Generation: 128 tokens, ", "Generation: ")
    generation = extract_text(text, CTX)[-1]
    assert generation.record["tokens_per_second"] == 45.3
    assert "lengths.generated_tokens: missing" in " ".join(_missing(generation))


VLLM = """vllm==0.8.5 on 8x NVIDIA H100 80GB HBM3:

```
vllm bench serve --model meta-llama/Llama-3.1-70B-Instruct-FP8 --dataset-name random \\
  --random-input-len 1024 --random-output-len 128 --max-concurrency 64 --num-prompts 1000
Traffic request rate: inf
Maximum request concurrency: 64
============ Serving Benchmark Result ============
Successful requests:                     1000
Benchmark duration (s):                  45.67
Total input tokens:                      1024000
Total generated tokens:                  128000
Request throughput (req/s):              21.90
Output token throughput (tok/s):         2802.71
Peak output token throughput (tok/s):    3456.00
Total Token throughput (tok/s):          25224.40
---------------Time to First Token----------------
Mean TTFT (ms):                          812.11
==================================================
```
"""


def test_vllm_serving_summary_is_aggregate_over_the_concurrent_requests():
    output, peak, total = extract_text(VLLM, CTX)
    assert _all_but_model_size(output), _missing(output)
    record = output.record
    assert record["tokens_per_second"] == 2802.71 and record["phase"] == "generation"
    assert record["concurrency"] == {"users": 64, "figure": "aggregate"}
    assert record["software"] == {"name": "vLLM", "version": "0.8.5", "options": {}}
    assert record["quantization"] == "FP8" and record["model"]["name"] == "meta-llama/Llama-3.1-70B-Instruct-FP8"
    assert record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 1024}
    assert record["source"]["quote"] == "Output token throughput (tok/s):         2802.71"
    assert peak.reasons == [PEAK_FIGURE] and peak.record["tokens_per_second"] == 3456.0
    assert total.record["phase"] == "end_to_end" and _all_but_model_size(total)


SGLANG = """
```
python3 -m sglang.bench_serving --backend sglang --dataset-name sharegpt --num-prompts 100
============ Serving Benchmark Result ============
Backend:                                 sglang
Traffic request rate:                    inf
Successful requests:                     100
Benchmark duration (s):                  107.24
Total input tokens:                      50561
Total generated tokens:                  25883
Request throughput (req/s):              0.93
Input token throughput (tok/s):          471.48
Output token throughput (tok/s):         241.35
Total throughput (tok/s):                712.83
==================================================
```
"""


def test_sglang_summary_without_concurrency_or_lengths_is_rejected_naming_them():
    prompt, output, total = extract_text(SGLANG, CTX)
    assert output.record["software"]["name"] == "SGLang" and output.record["tokens_per_second"] == 241.35
    assert prompt.record["phase"] == "prompt" and prompt.record["tokens_per_second"] == 471.48
    reasons = " ".join(_missing(output))
    assert NO_CONCURRENCY in output.reasons and "concurrency.users: missing" in reasons
    assert "lengths.generated_tokens: missing" in reasons and "software.version: missing" in reasons
    assert "hardware.name: missing" in reasons


def test_a_summary_without_its_command_names_neither_software_nor_procedure():
    text = VLLM.split("```\n", 1)[1].split("\n", 1)[1]  # the summary alone
    output = extract_text(text, CTX)[0]
    reasons = " ".join(_missing(output))
    assert "software.name: missing" in reasons and "nature.procedure" in reasons
    assert output.record["concurrency"]["users"] == 64  # stated by the summary itself


def test_tool_outputs_are_read_from_html_posts_too():
    html = "<p>ollama version is 0.5.7 on Apple M2 Ultra</p><pre><code>ollama run qwen3:8b-q8_0 --verbose\n" \
           "eval count:           100 token(s)\neval rate:            33.33 tokens/s\n</code></pre>"
    (generation,) = extract_post(html, CTX)
    assert _all_but_model_size(generation), _missing(generation)
    assert generation.record["quantization"] == "Q8_0"


def test_prose_about_speeds_is_not_a_figure():
    assert extract_text("it gets about 45 tokens/s and the throughput is great", CTX) == []


def test_a_timing_line_whose_speed_is_no_number_is_not_a_figure():
    line = "llama_perf_context_print:        eval time =    1.00 ms /     5 runs   (    0.20 ms per token, " \
           "1.2.3 tokens per second)"
    assert extract_text(line, CTX) == []  # read as a float, "1.2.3" raised ValueError out of extract_text


# ------------------------------------------------------------------------------------------- the registry
def test_the_registry_holds_every_reader_module_in_its_stated_order():
    assert tuple(module.__name__.rsplit(".", 1)[-1] for module in tools.TOOLS) == tools.ORDER
    assert tools.TOOLS == (llama_logs, ollama, mlx, serving, sweep_bench)
    assert len({module.NAME for module in tools.TOOLS}) == len(tools.TOOLS)


def test_a_module_left_out_of_the_order_is_named(tmp_path, monkeypatch):
    (tmp_path / "textgen.py").write_text('"""A reader not listed in ORDER."""\n', encoding="utf-8")
    monkeypatch.setattr(tools, "__path__", [*tools.__path__, str(tmp_path)])
    with pytest.raises(RuntimeError, match=r"modules not listed \['textgen'\]"):
        tools._discover()


@pytest.mark.parametrize(("text", "module"), [(LLAMA_CLI, llama_logs), (SERVER, llama_logs), (SWEEP, sweep_bench),
                                              (OLLAMA, ollama), (MLX, mlx), (VLLM, serving), (SGLANG, serving)])
def test_each_reader_names_its_own_software_and_reads_only_its_shape(text, module):
    reading = Reading(join_split_tables(pieces_from_text(text, markdown=True)), CTX)
    assert module.wants("\n".join(line for _, line in text_lines(reading)), reading)
    post = Post(reading, tools.PATTERNS)
    module.read(post)
    assert post.out and {c.record["software"]["name"] for c in post.out} <= set(module.SOFTWARE)
    for other in tools.TOOLS:
        if other.NAME != module.NAME:  # another shape finds no figure of its own in this text
            post = Post(reading, tools.PATTERNS)
            other.read(post)
            assert post.out == [], other.NAME


def test_the_order_is_in_the_slots_a_later_reader_counts_the_figures_before_it():
    # three log figures first (the sampling speed, filed as generation, then prompt and generation): ollama counts them
    slots = [c.slot for c in extract_text(LLAMA_CLI + "\n" + OLLAMA, CTX)]
    assert slots == ["log0:generation", "log1:prompt", "log2:generation", "ollama3:prompt", "ollama4:generation"]


# A tool added in one module: text-generation-webui's line, as the review of 2026-12-01 tried it (§ walk a).
TEXTGEN = """On an RTX 4090:
```
python server.py --model Qwen3-8B-Q4_K_M.gguf --loader llama.cpp
Output generated in 2.53 seconds (50.57 tokens/s, 128 tokens, context 35, seed 1234)
```
"""


def _textgen_module() -> ModuleType:
    module = ModuleType("textgen")
    line = re.compile(r"Output generated in [\d.]++ seconds \((?P<tps>[\d.]++) tokens/s, (?P<n>\d++) tokens, "
                      r"context (?P<depth>\d++)")

    def read(post: Post) -> None:
        for pos, text in text_lines(post.reading):
            if (match := line.search(text)):
                tool, command = post.run_command("textgen", (-1, -1), pos)
                post.add(text.strip(), pos, f"textgen{len(post.out)}", software="text-generation-webui",
                         version=None, model={"name": None, "params_b": None, "file_size_gb": None},
                         quantization=None, lengths=(0, int(match["n"]), int(match["depth"])), users=1,
                         figure="per_user", command=command, tool="server.py", phase="generation",
                         value=float(match["tps"]))

    module.__dict__.update(NAME="textgen", SOFTWARE=("text-generation-webui",), COMMANDS=(r"server\.py",),
                           COMMAND_WORDS=("server.py",), OTHER_COMMANDS=(), STATED_VERSIONS={},
                           wants=lambda text, reading: "Output generated in" in text, read=read)
    return module


def test_a_new_tool_is_one_module_appended_to_the_order():
    reading = Reading(join_split_tables(pieces_from_text(TEXTGEN, markdown=True)), CTX)
    assert tools.tool_figures(reading) == []  # not a shape of the shipped readers
    (figure,) = tools.tool_figures(reading, (*tools.TOOLS, _textgen_module()))
    record = figure.record
    assert (record["tokens_per_second"], record["software"]["name"]) == (50.57, "text-generation-webui")
    assert record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 35}
    assert record["nature"]["procedure"] == "server.py --model Qwen3-8B-Q4_K_M.gguf --loader llama.cpp"
    assert record["hardware"]["name"] == "NVIDIA GeForce RTX 4090" and figure.slot == "textgen0"


# Run blocks: a figure's model, command and lengths are its own run's (review of the tool readers, defects 1-3).
_EVAL = ("llama_perf_context_print:        eval time =    2000.00 ms /   100 runs   (   20.00 ms per token,    "
         "{} tokens per second)")


def _runs(text: str) -> list[tuple[float, str, str]]:
    reading = Reading(join_split_tables(pieces_from_text(text, markdown=True)), CTX)
    return [(c.record["tokens_per_second"], c.record["model"]["name"], c.record["nature"]["procedure"])
            for c in tools.tool_figures(reading)]


def test_a_command_over_several_lines_belongs_to_its_own_run():
    # a command continued with `\` is placed at its first line, as the timing lines around it are placed
    text = "\n".join(["./llama-cli -m /m/Alpha-8B-Q4_K_M.gguf \\", "  -p hello \\", "  -n 100", _EVAL.format("50.00"),
                      "./llama-cli -m /m/Beta-70B-Q8_0.gguf \\", "  -p hello \\", "  -n 100", _EVAL.format("9.00")])
    assert _runs(text) == [(50.0, "Alpha-8B-Q4_K_M", "llama-cli -m /m/Alpha-8B-Q4_K_M.gguf -p hello -n 100"),
                           (9.0, "Beta-70B-Q8_0", "llama-cli -m /m/Beta-70B-Q8_0.gguf -p hello -n 100")]


def test_timing_lines_with_a_new_command_between_them_are_two_runs():
    text = "\n".join(["./llama-cli -m /m/Alpha-8B-Q4_K_M.gguf -p hi", _EVAL.format("50.00"),
                      "./llama-cli -m /m/Beta-70B-Q8_0.gguf -p hi", _EVAL.format("9.00")])
    assert _runs(text) == [(50.0, "Alpha-8B-Q4_K_M", "llama-cli -m /m/Alpha-8B-Q4_K_M.gguf -p hi"),
                           (9.0, "Beta-70B-Q8_0", "llama-cli -m /m/Beta-70B-Q8_0.gguf -p hi")]


def test_timing_lines_with_another_models_loader_line_between_them_are_two_runs():
    loader = "llama_model_loader: loaded meta data with 30 key-value pairs and 291 tensors from {} (version GGUF V3 (latest))"
    text = "\n".join([loader.format("/m/Alpha-8B-Q4_K_M.gguf"), _EVAL.format("50.00"),
                      loader.format("/m/Beta-70B-Q8_0.gguf"), _EVAL.format("9.00")])
    assert [(v, m) for v, m, _ in _runs(text)] == [(50.0, "Alpha-8B-Q4_K_M"), (9.0, "Beta-70B-Q8_0")]


def test_a_trimmed_ollama_run_takes_no_count_of_the_run_before_and_quotes_only_its_text():
    text = "\n".join(["$ ollama run --verbose llama3:8b", "eval count:           100 token(s)",
                      "eval rate:            50.00 tokens/s", "", "$ ollama run --verbose mistral:7b",
                      "eval rate:            30.00 tokens/s"])
    reading = Reading(join_split_tables(pieces_from_text(text, markdown=True)), CTX)
    first, second = tools.tool_figures(reading)
    assert first.record["lengths"]["generated_tokens"] == 100
    assert first.record["source"]["quote"] == "eval count:           100 token(s)\neval rate:            50.00 tokens/s"
    assert (second.record["model"]["name"], second.record["lengths"]["generated_tokens"]) == ("mistral:7b", None)
    assert second.record["source"]["quote"] == "eval rate:            30.00 tokens/s"
    for figure in (first, second):
        assert figure.record["source"]["quote"] in text


def test_an_ollama_quote_is_the_lines_from_count_to_rate_as_they_stand():
    prompt, generation = extract_text(OLLAMA, CTX)
    assert prompt.record["source"]["quote"] == ("prompt eval count:    26 token(s)\nprompt eval duration: 123.001ms\n"
                                                "prompt eval rate:     211.38 tokens/s")
    assert generation.record["source"]["quote"] in OLLAMA and "eval count:           298" in generation.record[
        "source"]["quote"]
