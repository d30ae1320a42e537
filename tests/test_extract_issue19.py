# ruff: noqa: E501  (log lines are quoted as the tools print them)
"""Issue 19 (a figure stored with a wrong condition is worse than a miss) and issue 21's D5: each kind of failure on
real text, each excerpt short and cited by the URL it comes from. Rules: docs/EXTRACTION.md."""

from __future__ import annotations

import json

from tpsdb.collect.benchfiles import NO_SERVING_CONCURRENCY, extract_bench_file
from tpsdb.collect.extract import PostContext, extract_text
from tpsdb.collect.machines import canonical_hardware
from tpsdb.record import validate


def ctx(url: str = "https://github.com/example/example/issues/1") -> PostContext:
    return PostContext(url, "2026-12-01", "2025-09-22", "someone", {})


# --------------------------------------------------------------------------- an invented brand
def test_an_intel_igpu_code_name_is_cleaned_never_branded():
    # "ggml_vulkan: 0 = Intel(R) Graphics (MTL) ..." as llama-server --list-devices prints it in a repository guide
    # found by find_string (stored file id 38396286215); Meteor Lake ships as "Intel Graphics" and "Intel Arc Graphics"
    assert canonical_hardware("Intel(R) Graphics (MTL)") == "Intel Graphics (MTL)"
    assert "Arc" not in (canonical_hardware("Intel(R) Graphics (MTL)") or "")


def test_a_workstation_rtx_number_is_never_branded_geforce():
    # tokatlas's rendering of llama.cpp discussion 15013 names "NVIDIA RTX 3500" (an RTX 3500 Ada laptop part) and
    # "RTX 6000"/"RTX 4000" (workstation cards): none is a GeForce, and the seed showed "NVIDIA GeForce RTX 3500".
    assert canonical_hardware("NVIDIA RTX 3500") == "NVIDIA RTX 3500"
    assert canonical_hardware("RTX 6000") == "NVIDIA RTX 6000"
    assert canonical_hardware("NVIDIA RTX 4000") == "NVIDIA RTX 4000"
    # the consumer numbers are GeForce whether or not the text says it (one product each)
    assert canonical_hardware("RTX 4090") == "NVIDIA GeForce RTX 4090"
    assert canonical_hardware("RTX 5060 Ti") == "NVIDIA GeForce RTX 5060 Ti"
    assert canonical_hardware("GTX 1080") == "NVIDIA GeForce GTX 1080"


# --------------------------------------------------------------------------- which devices ran
# https://github.com/geerlingguy/ai-benchmarks/issues/23 (RX 7900 XT on a Raspberry Pi 5: the Pi's V3D is listed too)
PI_7900XT = """```
$ ./build/bin/llama-bench -m models/Qwen2.5-14B-Instruct-Q4_K_M.gguf -n 128 -p 512,4096 -pg 4096,128 -ngl 99 -r 2
ggml_vulkan: Found 2 Vulkan devices:
ggml_vulkan: 0 = AMD Radeon RX 7900 XT (RADV NAVI31) (radv) | uma: 0 | fp16: 1 | bf16: 0 | warp size: 64 | shared memory: 65536 | int dot: 0 | matrix cores: none
ggml_vulkan: 1 = V3D 7.1.10.2 (V3DV Mesa) | uma: 1 | fp16: 0 | bf16: 0 | warp size: 16 | shared memory: 16384 | int dot: 0 | matrix cores: none
build: 1d0125bc (6552)
```

| model                          |       size |     params | backend    | ngl |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |
| qwen2 14B Q4_K - Medium        |   8.37 GiB |    14.77 B | Vulkan     |  99 |           tg128 |          7.16 ± 0.15 |
"""


def test_a_discrete_gpu_beside_an_integrated_one_is_the_device_llama_cpp_uses():
    (candidate,) = extract_text(PI_7900XT, ctx("https://github.com/geerlingguy/ai-benchmarks/issues/23"))
    assert candidate.record["hardware"]["name"] == "AMD Radeon RX 7900 XT"
    assert candidate.record["software"]["version"] == "b6552 (1d0125bc)"


def test_split_mode_none_names_the_main_gpu_only():
    text = PI_7900XT.replace("uma: 1", "uma: 0").replace("V3D 7.1.10.2 (V3DV Mesa)", "AMD Radeon RX 7600 XT")
    two = extract_text(text, ctx())[0].record["hardware"]["name"]
    assert two == "AMD Radeon RX 7900 XT + AMD Radeon RX 7600 XT"  # both ran: both named
    one = extract_text(text.replace("-ngl 99 -r 2", "-ngl 99 -r 2 -sm none -mg 1"), ctx())[0]
    assert one.record["hardware"]["name"] == "AMD Radeon RX 7600 XT"


# https://github.com/ggml-org/llama.cpp/issues/6184 (a CUDA build that found no device: "no CUDA devices found")
def test_a_run_that_found_no_gpu_is_the_cpus_not_the_posts_gpu():
    text = """I have a NVIDIA GeForce RTX 3090 Ti. On a Ryzen 9 7950X box:

```
ggml_init_cublas: no CUDA devices found, CUDA will be disabled
```

| model                          |       size |     params | backend    | ngl |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | --------------: | -------------------: |
| llama 7B Q8_0                  |   6.67 GiB |     6.74 B | CUDA       |  99 |           tg128 |          9.10 ± 0.01 |

build: 48358b2e (2406)
"""
    (candidate,) = extract_text(text, ctx("https://github.com/ggml-org/llama.cpp/issues/6184"))
    assert candidate.record["hardware"]["name"] == "AMD Ryzen 9 7950X"
    # without the line, the CUDA row is the GPU's
    (gpu,) = extract_text(text.replace("ggml_init_cublas: no CUDA devices found, CUDA will be disabled", "ok"), ctx())
    assert gpu.record["hardware"]["name"] == "NVIDIA GeForce RTX 3090 Ti"


# --------------------------------------------------------------------------- two files with one label
# https://github.com/ikawrakow/ik_llama.cpp/pull/683 (early gpt-oss support printed "gpt-oss ?B" for any size)
def test_a_question_mark_label_is_named_by_its_parameter_count():
    rows = """| model                          |       size |     params | backend    | threads |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | ------: | --------------: | -------------------: |
| gpt-oss ?B MXFP4 MoE           |  11.27 GiB |    20.91 B | CPU        |      16 |           tg128 |         21.29 ± 0.01 |
| gpt-oss ?B MXFP4 MoE           |  59.02 GiB |   116.83 B | CPU        |      16 |           tg128 |          8.10 ± 0.01 |
"""
    small, large = extract_text(rows, ctx("https://github.com/ikawrakow/ik_llama.cpp/pull/683"))
    assert small.record["model"]["name"] == "gpt-oss 20.91B params"
    assert large.record["model"]["name"] == "gpt-oss 116.83B params"


# --------------------------------------------------------------------------- conditions from the wrong place
# https://github.com/ikawrakow/ik_llama.cpp/pull/683: one post, a table of each fork under its own heading
def test_each_forks_table_is_filed_under_its_own_fork():
    text = """### ik_llama.cpp

| model                          |       size |     params | backend    | threads |          test |              t/s |
| ------------------------------ | ---------: | ---------: | ---------- | ------: | ------------: | ---------------: |
| gpt-oss ?B MXFP4 - 4.25 bpw    |  11.27 GiB |    20.91 B | CPU        |      16 |         tg128 |     21.24 ± 0.05 |

### llama.cpp

| model                          |       size |     params | backend    | threads |            test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | ------: | --------------: | -------------------: |
| gpt-oss ?B MXFP4 MoE           |  11.27 GiB |    20.91 B | CPU        |      16 |           tg128 |         21.29 ± 0.01 |

build: 1d0125bc (6552)
"""
    ik, mainline = extract_text(text, ctx("https://github.com/ikawrakow/ik_llama.cpp/pull/683"))
    assert ik.record["software"]["name"] == "ik_llama.cpp" and mainline.record["software"]["name"] == "llama.cpp"
    # the mainline table's build footer is not the ik_llama.cpp table's build
    assert ik.record["software"]["version"] is None and mainline.record["software"]["version"] == "b6552 (1d0125bc)"


# issue 21 D5, the probe's reproduction (../shared/reviews/2026-12-01-reliability-probe-2.md, TM5): a full log, then a
# trimmed second run of another file
TWO_RUNS = """Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
build: 4567 (abcdef12)
llama_model_loader: loaded meta data with 19 key-value pairs and 291 tensors from models/llama-2-7b.Q4_0.gguf (version GGUF V3 (latest))
llm_load_print_meta: model ftype      = Q4_0
llm_load_print_meta: model params     = 6.74 B
llm_load_print_meta: model size       = 3.56 GiB (4.54 BPW)
./llama-cli -m models/llama-2-7b.Q4_0.gguf -p "hi" -n 128
llama_print_timings:        eval time =    1000.00 ms /   127 runs   (    7.87 ms per token,   127.00 tokens per second)

Then the 13B at Q8_0 (log trimmed):

./llama-cli -m models/llama-2-13b.Q8_0.gguf -p "hi" -n 128
llama_print_timings:        eval time =    1000.00 ms /   127 runs   (   31.75 ms per token,    31.50 tokens per second)
"""


def test_d5_a_trimmed_second_log_keeps_its_own_model():
    first, second = extract_text(TWO_RUNS, ctx())
    assert first.record["model"] == {"name": "llama-2-7b.Q4_0", "params_b": 6.74, "file_size_gb": 3.82}
    assert second.record["model"] == {"name": "llama-2-13b.Q8_0", "params_b": None, "file_size_gb": None}
    assert second.record["quantization"] == "Q8_0"
    assert "model.params_b: missing" in validate(second.record).reasons  # rejected, never the 7B's facts


def test_d5_a_second_loader_missing_a_line_does_not_borrow_it():
    text = TWO_RUNS.replace("./llama-cli -m models/llama-2-13b.Q8_0.gguf -p \"hi\" -n 128\n",
                            "llama_model_loader: loaded meta data with 19 key-value pairs and 363 tensors from "
                            "models/llama-2-13b.Q4_0.gguf (version GGUF V3 (latest))\n"
                            "llm_load_print_meta: model size       = 6.86 GiB (4.54 BPW)\n"
                            "./llama-cli -m models/llama-2-13b.Q4_0.gguf -p \"hi\" -n 128\n")
    second = extract_text(text, ctx())[1].record
    assert second["model"]["name"] == "llama-2-13b.Q4_0" and second["model"]["params_b"] is None


# --------------------------------------------------------------------------- procedures that are there
# https://github.com/ggml-org/ci (llama.cpp/47/182dd03fe04a4ffda5d7f4c8a109ae0056cf56/ggml-6-x86-vulkan-t4/README.md):
# a CI log states each run's command on a `+ ./bin/...` line above its output
def test_a_ci_log_states_the_command_of_its_run():
    text = """```
+ ./bin/llama-cli --model ../models-mnt/open-llama/3B-v2/ggml-model-q4_0.gguf -ngl 99 -c 0 -s 1234 -n 64 -p 'I believe the meaning of life is'
ggml_vulkan: 0 = Tesla T4 (NVIDIA) | uma: 0 | fp16: 1 | warp size: 32 | matrix cores: KHR_coopmat
0.00.000.184 I build: 4424 (47182dd0) with cc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0 for x86_64-linux-gnu
0.00.327.853 I llama_perf_context_print: prompt eval time =       5.62 ms /     9 tokens (    0.62 ms per token,  1600.57 tokens per second)
```
"""
    (candidate,) = extract_text(text, ctx("https://github.com/ggml-org/ci"))
    record = candidate.record
    assert record["nature"]["procedure"].startswith("llama-cli --model ../models-mnt/open-llama/3B-v2/ggml-model-q4_0")
    assert record["hardware"]["name"] == "NVIDIA T4" and record["software"]["version"] == "b4424 (47182dd0)"
    assert record["model"]["name"] == "ggml-model-q4_0" and record["quantization"] == "Q4_0"


# --------------------------------------------------------------------------- issue 17: a vLLM result file
# https://github.com/nerdalert/vllm-bench-automation (README.md): the JSON benchmark_serving.py --save-result wrote
VLLM_RESULT = {"date": "20250530-203806", "backend": "vllm", "model_id": "meta-llama/Llama-3.2-3B-Instruct",
               "tokenizer_id": "meta-llama/Llama-3.2-3B-Instruct", "num_prompts": 300, "request_rate": 10.0,
               "burstiness": 1.0, "max_concurrency": None, "duration": 36.034275877000255, "completed": 300,
               "total_input_tokens": 299700, "total_output_tokens": 81050, "request_throughput": 8.325406649602808,
               "output_throughput": 2249.247363167692, "total_token_throughput": 10566.328606120898,
               "mean_ttft_ms": 54.577085783294024}


def test_a_vllm_serving_result_file_is_filed_as_vllm():
    data = json.dumps(VLLM_RESULT).encode()
    candidates = extract_bench_file(data, None, ctx("https://github.com/nerdalert/vllm-bench-automation"),
                                    "4x NVIDIA L40S", suffix="json")
    assert [c.record["software"]["name"] for c in candidates] == ["vLLM", "vLLM"]
    generation = candidates[0]
    assert generation.record["tokens_per_second"] == 2249.247363167692
    assert generation.record["concurrency"]["figure"] == "aggregate"
    assert NO_SERVING_CONCURRENCY in generation.reasons  # max_concurrency null: how many at once is unknown
    assert generation.record["source"]["quote"] == '"output_throughput": 2249.247363167692'


# --------------------------------------------------------------------------- named formats
# https://github.com/ikawrakow/ik_llama.cpp/issues/381 (ik_llama.cpp's llama-bench prints its own types)
IK_381 = """did git pull and tried llama-bench:
~/dev/ik_llama.cpp $ ./build/bin/llama-bench -m /mnt/nvme/models/ubergarm/DeepSeek-V3-0324-GGUF/DeepSeek-V3-0324-IQ4_K_R4/DeepSeek-V3-0324-IQ4_K_R4-00001-of-00010.gguf -p 512 -t 32 -mla 2 -fa 1 -fmoe 1 -ngl 99 --override-tensor "exps=CPU" -amb 512 -ctk q8_0 -ctv q8_0
ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes

Did a llama-bench before git pull and rebuilding.
$ cat ../commands/ik_bench-dsv3.txt
./build/bin/llama-bench -m /mnt/nvme/models/ubergarm/DeepSeek-V3-0324-GGUF/DeepSeek-V3-0324-IQ4_K_R4/DeepSeek-V3-0324-IQ4_K_R4-00001-of-00010.gguf -p 512 -t 32 -mla 2 -fa 1 -fmoe 1 -ngl 99 --override-tensor "exps=CPU" -amb 512

| model                          |       size |     params | backend    | ngl | fa | mla |   amb | fmoe |          test |              t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | -: | --: | ----: | ---: | ------------: | ---------------: |
| deepseek2 671B IQ4_K_R4 - 4.5 bpw | 386.18 GiB |   672.05 B | CUDA       |  99 |  1 |   2 |   512 |    1 |         tg128 |      9.98 ± 0.06 |

build: 1ea1df4b (3659)
"""


def test_ik_llama_cpp_quant_types_are_named_formats():
    (candidate,) = extract_text(IK_381, ctx("https://github.com/ikawrakow/ik_llama.cpp/issues/381"))
    record = candidate.record
    assert record["quantization"] == "IQ4_K_R4" and record["software"]["name"] == "ik_llama.cpp"
    assert record["hardware"]["name"] == "NVIDIA GeForce RTX 3090"
    assert record["software"]["version"] == "b3659 (1ea1df4b)"
    assert "quantization" not in " ".join(validate(record).reasons)


def test_unsloth_dynamic_labels_are_named_formats():
    from tpsdb.collect.tools import quant_in_name
    from tpsdb.record import named_quantization

    # file names as Unsloth publishes them (https://huggingface.co/unsloth/Qwen3-0.6B-GGUF: "UD-Q4_K_XL")
    assert quant_in_name("Qwen3-0.6B-UD-Q4_K_XL.gguf") == "UD-Q4_K_XL"
    assert named_quantization("Q4_K_XL (UD)") == "UD-Q4_K_XL"
    assert named_quantization("UD-IQ1_S") == "UD-IQ1_S" and named_quantization("UD-Q4_K_M") is None


# https://github.com/AUGMXNT/llm-tracker.info-vault/blob/main/howto/AMD%20GPUs.md: a run on a Radeon VII, then a
# section whose heading names the machine of the next log, which prints no device line of its own
TWO_MACHINES = """```
CUDA_VISIBLE_DEVICES=0 ./main -m ../models/nous-hermes-13b.ggmlv3.q4_0.bin -ngl 99 -n 2048 --ignore-eos

main: build = 821 (04419f1)
ggml_init_cublas: found 1 CUDA devices:
  Device 0: AMD Radeon VII
llama_print_timings:        eval time = 157571.58 ms /  2040 runs   (   77.24 ms per token,    12.95 tokens per second)
```

## RTX 4090 Comparison
As a point of comparison, running `llama.cpp` with `make LLAMA_CUBLAS=1` runs at about 72 t/s:
```
./main -m /data/ai/models/llm/manticore/Manticore-13B-Chat-Pyg.ggmlv3.q4_0.bin -ngl 99 -n 2048 --ignore-eos

...

llama_print_timings:        eval time = 28273.11 ms /  2040 runs   (   13.86 ms per token,    72.15 tokens per second)
```
"""


def test_a_log_takes_the_machine_its_own_section_names_not_the_device_list_of_the_run_before():
    radeon, rtx = extract_text(TWO_MACHINES, ctx("https://github.com/AUGMXNT/llm-tracker.info-vault"))
    assert radeon.record["hardware"]["name"] == "AMD Radeon VII"
    assert rtx.record["hardware"]["name"] == "NVIDIA GeForce RTX 4090"
    assert rtx.record["model"]["name"] == "Manticore-13B-Chat-Pyg.ggmlv3.q4_0.bin"  # its own command's file


# https://github.com/AUGMXNT/llm-tracker.info-vault/blob/main/howto/AMD%20GPUs.md (Windows section): llama-bench.exe states the command of the table under it
WINDOWS = """```
C:\\Users\\lhl\\Desktop\\llama.cpp\\build\\bin>llama-bench.exe -m ..\\..\\meta-llama-2-7b-q4_0.gguf -p 3968 -n 128 -ngl 99
ggml_init_cublas: found 1 ROCm devices:
  Device 0: AMD Radeon RX 7900 XT, compute capability 11.0
| model                          |       size |     params | backend    | ngl | test       |              t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | ---------- | ---------------: |
| LLaMA v2 7B mostly Q4_0        |   3.56 GiB |     6.74 B | ROCm       |  99 | tg 128     |     94.55 ± 0.07 |

build: 69fdbb9 (1148)
```
"""


def test_a_windows_llama_bench_exe_command_is_the_procedure():
    (candidate,) = extract_text(WINDOWS, ctx("https://github.com/AUGMXNT/llm-tracker.info-vault"))
    record = candidate.record
    assert record["nature"]["procedure"] == "llama-bench -m ..\\..\\meta-llama-2-7b-q4_0.gguf -p 3968 -n 128 -ngl 99"
    assert record["hardware"]["name"] == "AMD Radeon RX 7900 XT"


def test_a_depth_comes_from_the_runs_own_prompt_line_only():
    # the probe's two runs, the first with its prompt line: the second, trimmed run states no prompt count, and
    # the first run's 7 tokens are not its depth
    text = TWO_RUNS.replace(
        "llama_print_timings:        eval time =    1000.00 ms /   127 runs   (    7.87 ms",
        "llama_print_timings: prompt eval time =      20.00 ms /     7 tokens (    2.86 ms per token,   350.00 tokens "
        "per second)\nllama_print_timings:        eval time =    1000.00 ms /   127 runs   (    7.87 ms")
    prompt, first, second = extract_text(text, ctx())
    assert prompt.record["lengths"]["prompt_tokens"] == 7
    assert first.record["lengths"]["context_depth"] == 7  # its own prompt
    assert second.record["lengths"]["context_depth"] is None  # not the other run's


# https://github.com/open-webui/open-webui/issues/188 (the options before the model name)
def test_ollama_names_the_model_after_its_options():
    text = """```
$ ollama run --verbose llama2
>>> Hi
Hello! It's nice to meet you. Is there something I can help you with or would you like to chat?

total duration:       1.279118717s
load duration:        891.933µs
prompt eval count:    21 token(s)
prompt eval duration: 231.416ms
prompt eval rate:     90.75 tokens/s
eval count:           25 token(s)
eval duration:        1.042407s
eval rate:            23.98 tokens/s
```
"""
    prompt, generation = extract_text(text, ctx("https://github.com/open-webui/open-webui/issues/188"))
    assert generation.record["model"]["name"] == "llama2" and generation.record["software"]["name"] == "ollama"
    assert generation.record["lengths"] == {"prompt_tokens": 0, "generated_tokens": 25, "context_depth": 21}


# rows from https://github.com/geerlingguy/ai-benchmarks/issues/43; the sentence naming two machines is written for
# the test (the rule: context naming two machines names neither, for the first table nor for the ones after it)
def test_a_paragraph_naming_two_machines_names_no_table_after_it():
    row = ("| model                          |       size |     params | backend    | ngl |            test |"
           "                  t/s |\n| --- | ---: | ---: | --- | --: | ---: | ---: |\n"
           "| llama 3B Q4_K - Medium         |   1.87 GiB |     3.21 B | Vulkan     |  99 |           tg128 |"
           "        {} |\n\nbuild: 086a63e3a (7340)\n\n")
    text = "Tested on my RTX 4090 box and on my RTX 3090 box:\n\n" + row.format("215.61 ± 0.45") + \
        "### Llama-3.2-3B again\n\n" + row.format("214.90 ± 0.30")
    first, second = extract_text(text, ctx("https://github.com/geerlingguy/ai-benchmarks/issues/43"))
    for candidate in (first, second):
        assert candidate.record["hardware"]["name"] is None
        assert candidate.reasons == ["hardware.name: ambiguous (NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 3090)"]


# nvidia-smi lists every GPU of the machine; CUDA_VISIBLE_DEVICES says which the run saw (lines in the shape
# nvidia-smi and llama-bench print them; the rows are the RTX 4090 row of tests/test_extract_open_world.py's table)
SMI_TWO_GPUS = """```
|   0  NVIDIA GeForce RTX 4090        On  |   00000000:01:00.0 Off |                  Off |
|   1  NVIDIA GeForce RTX 3090        On  |   00000000:02:00.0 Off |                  N/A |
```

```
{env}./llama-bench -m llama-2-7b.Q4_0.gguf -ngl 99
```

| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | tg128 | 150.10 ± 0.01 |

build: 3bdc4cd0 (7739)
"""


def test_cuda_visible_devices_picks_the_gpus_nvidia_smi_lists():
    both = extract_text(SMI_TWO_GPUS.format(env=""), ctx())[0].record["hardware"]["name"]
    assert both == "NVIDIA GeForce RTX 4090 + NVIDIA GeForce RTX 3090"
    second = extract_text(SMI_TWO_GPUS.format(env="CUDA_VISIBLE_DEVICES=1 "), ctx())[0].record["hardware"]["name"]
    assert second == "NVIDIA GeForce RTX 3090"
    none = extract_text(SMI_TWO_GPUS.format(env="CUDA_VISIBLE_DEVICES= "), ctx())[0]
    assert none.record["hardware"]["name"] is None  # a CPU run, and the post names no CPU


def test_dev_none_is_a_cpu_run_and_an_unlisted_device_is_unknown():
    cpu = extract_text(PI_7900XT.replace("-ngl 99 -r 2", "-ngl 99 -r 2 -dev none"), ctx())[0]
    assert cpu.record["hardware"]["name"] is None  # the CPU's, and the post names no CPU
    unlisted = extract_text(PI_7900XT.replace("-ngl 99 -r 2", "-ngl 99 -r 2 -dev Vulkan5"), ctx())[0]
    assert unlisted.record["hardware"]["name"] is None
    assert unlisted.reasons and unlisted.reasons[0].startswith("hardware.name: which of the listed devices")


def test_two_versions_stated_together_give_a_table_neither():
    # rows of https://github.com/geerlingguy/ai-benchmarks/issues/23; the sentence stating two builds is the test's
    rows = PI_7900XT.split("```\n\n", 1)[1]
    text = "Same card, commit 1d0125bc and then commit 2df5bcf3:\n\n" + rows
    (candidate,) = extract_text(text.replace("build: 1d0125bc (6552)", ""), ctx())
    assert candidate.record["software"]["version"] is None
