# ruff: noqa: E501  (log lines and tables are quoted as the tools print them)
"""Issue 19, set B (repository files, forum posts, other tools): short excerpts of real texts that were read wrong
or missed, each cited by the URL it comes from, each failing without its fix. Rules: docs/EXTRACTION.md."""

from __future__ import annotations

import json
from datetime import date

import pytest

from tpsdb.collect.benchfiles import extract_bench_file
from tpsdb.collect.extract import PostContext, extract_text
from tpsdb.collect.machines import canonical_hardware
from tpsdb.record import validate

KREIER = "https://github.com/kreier/jetson/blob/fd9602445dc0b2997da5bda731e69a886b59d3ce/"


def ctx(url: str = "https://github.com/example/example/issues/1") -> PostContext:
    return PostContext(url, "2026-12-01", "2025-04-01", None, {})


def accepted(candidate) -> bool:
    return not candidate.reasons and validate(candidate.record, today=date(2026, 12, 1)).accepted


# ----------------------------------------------------------------------------- the machine of each section
# kreier/jetson llama.cpp/history.md: one table under each machine's heading. The Jetson Nano's table was stored as
# the i7-13700T's (named only under the next heading), a wrong machine.
HISTORY = """### Jetson Nano - memory bandwidth 6 GB/s

```
| model                  |       size | params | backend | threads |  test |         t/s |
| ---------------------- | ---------: | -----: | ------- | ------: | ----: | ----------: |
| llama 1B Q4_K - Medium | 636.18 MiB | 1.10 B | CPU     |       4 | pp512 | 6.71 ± 0.00 |
| llama 1B Q4_K - Medium | 636.18 MiB | 1.10 B | CPU     |       4 | tg128 | 4.98 ± 0.01 |

build: c7b43ab6 (4970)
```

### Intel i7-13700T - memory bandwidth 54 GB/s

For comparison I ran the same model and benchmark on an i7-13700T:
"""


def test_a_jetson_nano_heading_names_the_table_under_it():
    pp, tg = extract_text(HISTORY, ctx(KREIER + "llama.cpp/history.md"))
    assert pp.record["hardware"]["name"] == tg.record["hardware"]["name"] == "NVIDIA Jetson Nano"
    assert accepted(pp) and accepted(tg)
    # the original Jetson Nano is not the Jetson Orin Nano
    assert canonical_hardware("Jetson Orin Nano") == "NVIDIA Jetson Orin Nano"


def test_a_machine_named_only_under_a_later_heading_never_names_the_table_above():
    (pp, _) = extract_text(HISTORY.replace("### Jetson Nano", "### My board"), ctx(KREIER + "llama.cpp/history.md"))
    assert pp.record["hardware"]["name"] is None and not accepted(pp)


# kreier/jetson llama.cpp/CUDA/benchmark.md: the device line of a Jetson Nano's CUDA build names its SoC; the table
# under "## GPU with 81bc921" took the `git checkout a33e6a0` of the next section ("## GPU with a33e6a0") as its build.
BENCHMARK = """```
  Device 0: NVIDIA Tegra X1, compute capability 5.3
| model                          |       size | params | backend | ngl | test   |          t/s |
| ------------------------------ | ---------: | -----: | ------- | --: | ------ | -----------: |
| llama ?B mostly Q4_K - Medium  | 636.18 MiB | 1.10 B | CUDA    |   5 | pp 512 | 20.99 ± 0.16 |
| llama ?B mostly Q4_K - Medium  | 636.18 MiB | 1.10 B | CUDA    |   5 | tg 128 |  2.77 ± 0.01 |

build: 81bc9214 (1618)
```

| model                          |       size |     params | backend    | ngl | test       |              t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | ---------- | ---------------: |
| llama ?B mostly Q4_K - Medium  | 636.18 MiB |     1.10 B | CUDA       |  24 | pp 512     |     54.18 ± 0.17 |
| llama ?B mostly Q4_K - Medium  | 636.18 MiB |     1.10 B | CUDA       |  24 | tg 128     |      3.55 ± 0.01 |

## GPU with a33e6a0 from February 26, 2024

```
git clone https://github.com/ggml-org/llama.cpp.git llama.cpp4
cd llama.cpp4/
git checkout a33e6a0
```
"""


def test_a_tegra_device_line_names_the_soc():
    assert canonical_hardware("Device 0: NVIDIA Tegra X1, compute capability 5.3") == "NVIDIA Tegra X1"
    first = extract_text(BENCHMARK, ctx(KREIER + "llama.cpp/CUDA/benchmark.md"))[0]
    assert first.record["hardware"]["name"] == "NVIDIA Tegra X1" and accepted(first)


def test_a_build_under_a_later_heading_is_not_the_build_of_the_table_above():
    figures = extract_text(BENCHMARK, ctx(KREIER + "llama.cpp/CUDA/benchmark.md"))
    assert [c.record["software"]["version"] for c in figures] == ["b1618 (81bc9214)"] * 4


# ----------------------------------------------------------------------------- llama-bench's own result formats
# llama-bench's README (ikawrakow/ik_llama.cpp examples/llama-bench/README.md at 8337e4cd, as in llama.cpp's of
# 2023): its CSV and SQL examples hold 27 values for 26 columns (a stray "1" after `blas`). Read by position, the
# row was the i9-13900K's at 732372 t/s; a row that does not match its header is refused with its line.
README_CSV = """build_commit,build_number,cuda,metal,gpu_blas,blas,cpu_info,gpu_info,model_filename,model_type,model_size,model_n_params,n_batch,n_threads,f16_kv,n_gpu_layers,main_gpu,mul_mat_q,tensor_split,n_prompt,n_gen,test_time,avg_ns,stddev_ns,avg_ts,stddev_ts
"3469684","1275","1","0","0","1","1","13th Gen Intel(R) Core(TM) i9-13900K","NVIDIA GeForce RTX 3090 Ti","models/7B/ggml-model-q4_0.gguf","llama 7B mostly Q4_0","3825065984","6738415616","512","16","1","99","0","1","0.00","512","0","2023-09-23T12:09:01Z","212155977","732372","2413.341687","8.305961"
"""
README_SQL = """INSERT INTO test (build_commit, build_number, cuda, metal, gpu_blas, blas, cpu_info, gpu_info, model_filename, model_type, model_size, model_n_params, n_batch, n_threads, f16_kv, n_gpu_layers, main_gpu, mul_mat_q, tensor_split, n_prompt, n_gen, test_time, avg_ns, stddev_ns, avg_ts, stddev_ts) VALUES ('3469684', '1275', '1', '0', '0', '1', '1', '13th Gen Intel(R) Core(TM) i9-13900K', 'NVIDIA GeForce RTX 3090 Ti', 'models/7B/ggml-model-q4_0.gguf', 'llama 7B mostly Q4_0', '3825065984', '6738415616', '512', '16', '1', '99', '0', '1', '0.00', '512', '0', '2023-09-23T12:10:30Z', '212693772', '743623', '2407.240204', '8.409634');
"""
IK_README = "https://github.com/ikawrakow/ik_llama.cpp/blob/8337e4cd3861406fc04e0854b1409cd1b027fbc9/examples/llama-bench/README.md"


@pytest.mark.parametrize(("fmt", "text", "where"), [("csv", README_CSV, "CSV line 2"), ("sql", README_SQL, "line 1")])
def test_a_result_row_that_does_not_match_its_columns_is_refused(fmt, text, where):
    with pytest.raises(ValueError, match=f"{where}.*27 values for 26 columns"):
        extract_bench_file(text.encode(), fmt, ctx(IK_README), None)
    # aligned, the same row reads as the README's markdown says: the RTX 3090 Ti's 2413 t/s
    aligned = text.replace('"1","1","13th', '"1","13th').replace("'1', '1', '13th", "'1', '13th")
    (row,) = extract_bench_file(aligned.encode(), fmt, ctx(IK_README), None)
    assert row.record["hardware"]["name"] == "NVIDIA GeForce RTX 3090 Ti"
    assert row.record["tokens_per_second"] == (2413.341687 if fmt == "csv" else 2407.240204)


# https://github.com/ggml-org/llama.cpp/pull/12994: llama-bench `-o json` pasted in a post (a CANN run on an Ascend)
CANN_POST = """Here is a comparison of the results with `-o json`.
### Before
```
[
  {
    "build_commit": "12b17501",
    "build_number": 5145,
    "cpu_info": "CPU",
    "gpu_info": "Ascend910B3",
    "backends": "CANN",
    "model_filename": "/home/models/qwen2.5:0.5b-instruct-fp16",
    "model_type": "qwen2 1B F16",
    "model_size": 988208640,
    "model_n_params": 494032768,
    "n_threads": 192,
    "n_gpu_layers": 32,
    "split_mode": "layer",
    "main_gpu": 0,
    "tensor_split": "0.00",
    "n_prompt": 0,
    "n_gen": 128,
    "avg_ts": 60.984063,
    "stddev_ts": 0.844204
  }
]
```
"""


def test_llama_bench_json_pasted_in_a_post_is_read_with_its_own_conditions():
    (row,) = extract_bench_file(CANN_POST.encode(), "md", ctx("https://github.com/ggml-org/llama.cpp/pull/12994"), None)
    record = row.record
    assert record["hardware"]["name"] == "Huawei Ascend 910B3"
    assert record["software"]["version"] == "b5145 (12b17501)" and record["quantization"] == "F16"
    assert (record["tokens_per_second"], record["lengths"]["generated_tokens"]) == (60.984063, 128)
    assert accepted(row)
    # cut short, the object is not read (and nothing else is made of it)
    assert extract_bench_file(CANN_POST.split('"n_prompt"')[0].encode(), "md", ctx(IK_README), None) == []


def test_a_result_rows_devices_are_the_ones_it_used():
    # The README's JSON row (IK_README), its gpu_info as llama-bench joins two devices; the options are the test's.
    row = json.loads(README_JSON)
    row["gpu_info"] = "NVIDIA GeForce RTX 3090 Ti, NVIDIA GeForce RTX 3060"

    def machine(**options):
        text = json.dumps([{**row, **options}])
        return extract_bench_file(text.encode(), "json", ctx(IK_README), None)[0].record["hardware"]["name"]

    assert machine() == "NVIDIA GeForce RTX 3090 Ti + NVIDIA GeForce RTX 3060"
    assert machine(split_mode="none", main_gpu=1) == "NVIDIA GeForce RTX 3060"
    assert machine(tensor_split="1.00/0.00") == "NVIDIA GeForce RTX 3090 Ti"
    assert machine(devices="CUDA1") == "NVIDIA GeForce RTX 3060"
    assert machine(devices="CUDA2") is None  # a device gpu_info does not list: unknown, never guessed
    # a CPU build's row (no gpu_info) is the processor's that cpu_info names
    assert machine(gpu_info="", backends="CPU") == "Intel Core i9-13900K"


README_JSON = """{
    "build_commit": "3469684", "build_number": 1275, "cpu_info": "13th Gen Intel(R) Core(TM) i9-13900K",
    "gpu_info": "NVIDIA GeForce RTX 3090 Ti", "model_filename": "models/7B/ggml-model-q4_0.gguf",
    "model_type": "llama 7B mostly Q4_0", "model_size": 3825065984, "model_n_params": 6738415616, "n_batch": 512,
    "n_threads": 16, "n_gpu_layers": 99, "main_gpu": 0, "tensor_split": "0.00", "n_prompt": 512, "n_gen": 0,
    "avg_ts": 2410.974041, "stddev_ts": 11.163766}"""


# ----------------------------------------------------------------------------- whole threads as one text
# ikawrakow/ik_llama.cpp's own dump of discussion 164 (github-data/discussions/164 - Latest CPU performance
# comparison with llama.cpp.md, https://github.com/ikawrakow/ik_llama.cpp/discussions/164): one table, a Zen4 row
# (the Ryzen-7950X) and an ARM_NEON row (the M2-Max). Both rows were stored as "Apple M2" (the "-Max" dropped), at
# the "build 4404 for llama.cpp" of a reply under the next heading.
DISCUSSION_164 = """* Using `llama.cpp` build `14b699ec (4384)` (latest as of December 23 2024)
* `AVX2/Zen4` performance is on a Ryzen-7950X, `ARM` is on `M2-Max`

### Prompt processing (prefill) champion

| model                          |       size |     params | backend    | threads |          test |              t/s |
| ------------------------------ | ---------: | ---------: | ---------- | ------: | ------------: | ---------------: |
| llama 8B Q8_K_R8               |   7.56 GiB |     8.03 B | Zen4        |      16 |         pp512 |    370.11 ± 0.58 |
 llama 8B Q8_K_R8               |   7.56 GiB |     8.03 B | ARM_NEON      |   8 |         pp512 |    170.68 ± 0.56 |

#### 🗣️ Discussion

👤 **saood06** replied the **2025-01-10** at **23:34:54**:<br>

I ran some benchmarks on an AVX2 machine (Xeon E5-2683 v4, 32 core, quad channel broadwell) on an IQ4_XS of Midnight Miqu 70B v1.5 via batched bench, build 4404 for llama.cpp. No runtime repacking for ik_llama.cpp.
"""


def test_a_hyphenated_tier_is_kept_and_a_table_of_two_named_cpus_names_neither():
    assert canonical_hardware("M2-Max") == "Apple M2 Max"
    assert canonical_hardware("Ryzen-7950X") == "AMD Ryzen 7950X"  # as printed: no tier word added
    zen4, neon = extract_text(DISCUSSION_164, ctx("https://github.com/ikawrakow/ik_llama.cpp/discussions/164"))
    for row in (zen4, neon):
        assert row.record["hardware"]["name"] is None
        assert any("ambiguous" in reason for reason in row.reasons)
        assert row.record["software"]["version"] != "b4404"  # a reply's build under a later heading
        assert not accepted(row)


# The same dump of issue 380 (https://github.com/ikawrakow/ik_llama.cpp/issues/380): an ik_llama.cpp server's
# timings, then mainline's server with its "build: 5273", then a reply's sweep-bench table on a Ryzen-7950X. The
# mainline build was stored for all three runs, and the reply's Ryzen for the first run (named in a later reply).
ISSUE_380 = """```
./llama-server.exe -t 7 -c 4096 -m F:\\llm\\Qwen3-30B-A3B-Q5_K_M.gguf
```

```
INFO [           print_timings] prompt eval time     =    1253.52 ms /    50 tokens (   25.07 ms per token,    39.89 tokens per second)
INFO [           print_timings] generation eval time =   10483.45 ms /   120 runs   (   87.36 ms per token,    11.45 tokens per second)
```

```
PS C:\\neuro\\llama-avx2> ./llama-server.exe -t 8 -c 4096 -m F:\\llm\\Qwen3-30B-A3B-Q5_K_M.gguf
build: 5273 (8ae5ebcf) with MSVC 19.43.34808.0 for x64
slot print_timing: id  0 | task 0 |
prompt eval time =     713.89 ms /    20 tokens (   35.69 ms per token,    28.02 tokens per second)
       eval time =    3163.91 ms /    48 tokens (   65.91 ms per token,    15.17 tokens per second)
```

You didn't say what your CPU was, so here another reference point from me on a more recent CPU (Ryzen-7950X). Again using 8 threads to be comparable to yours, same command as above:

|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |
|-------|--------|--------|----------|----------|----------|----------|
|   512 |    128 |      0 |    1.874 |   273.19 |    5.253 |    24.37 |
"""


def test_a_build_and_a_machine_belong_to_their_own_runs_block():
    figures = {c.record["tokens_per_second"]: c.record
               for c in extract_text(ISSUE_380, ctx("https://github.com/ikawrakow/ik_llama.cpp/issues/380"))}
    first, mainline, sweep = figures[39.89], figures[28.02], figures[273.19]
    assert mainline["software"]["version"] == "b5273 (8ae5ebcf)"  # its own block's build line
    assert first["software"]["version"] is None  # printed after its figures: a later run's
    assert sweep["software"]["version"] is None  # printed before another run's figures: that run's
    assert first["hardware"]["name"] is None  # named in a later reply, after other runs
    assert sweep["hardware"]["name"] == "AMD Ryzen 7950X"  # named in the table's own block


# ik_llama.cpp's dump of issue 539 (github-data/issues/539 - Bug_ garbage output.md,
# https://github.com/ikawrakow/ik_llama.cpp/issues/539):
# a user's CPU table on an ARM server; far down the thread the maintainer names the machines *he* tests on. The
# table was stored as "Apple M2" (named only in that later reply).
ARM_SERVER = """ik_llama.cpp:
| model                          |       size |     params | backend    | threads | type_k | type_v | fa | mla |   amb | rtr | fmoe |          test |              t/s |
| ------------------------------ | ---------: | ---------: | ---------- | ------: | -----: | -----: | -: | --: | ----: | --: | ---: | ------------: | ---------------: |
| deepseek2 671B Q4_K_R4         | 413.14 GiB |   672.05 B | CPU        |      64 |   q8_0 |   q8_0 |  1 |   3 |  2048 |   1 |    1 |         pp512 |     70.30 ± 0.08 |

---

👤 **jagusztinl** commented the **2025-06-20** at **14:04:07**:<br>

Fixed:  build with -DGGML_SVE=ON solved it

---

👤 **jagusztinl** commented the **2025-06-20** at **14:06:39**:<br>

But not faster for any model than the current llama.cpp build on ARM CPU

---

👤 **ikawrakow** commented the **2025-06-21** at **09:22:44**:<br>

I'm open to working on optimizing this project for SVE, but it is a hobby project of mine without commercial backing, so I develop/test on the CPU platforms I have access to (`AVX2`, `Zen4`, `ARM_NEON` on an M2-Max CPU).
"""


def test_a_machine_named_far_down_a_thread_never_names_a_table_above():
    (row,) = extract_text(ARM_SERVER, ctx("https://github.com/ikawrakow/ik_llama.cpp/issues/539"))
    assert row.record["hardware"]["name"] is None
    # right under the table, the same words name it
    (own,) = extract_text(ARM_SERVER.split("\n---\n")[0] + "That was on my M2-Max.\n", ctx())
    assert own.record["hardware"]["name"] == "Apple M2 Max"


# ik_llama.cpp's dump of PR 287 (https://github.com/ikawrakow/ik_llama.cpp/pull/287): the PR names the author's
# "Ryzen-7950X test system"; a reply posts a GPU log and table, another a CPU table of a 6980P rig it never names
# as a Xeon. The CPU rows were stored as the Ryzen's.
PR_287 = """On my Ryzen-7950X test system I'm maxing out the available memory bandwidth, so there cannot be much impact from this change.

Device 0: NVIDIA RTX A6000, compute capability 8.6, VMM: yes

| model                          |       size |     params | backend    | ngl | type_k | fa | mla |   amb | fmoe |          test |              t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | -----: | -: | --: | ----: | ---: | ------------: | ---------------: |
| deepseek2 671B IQ2_K_R4 - 2.375 bpw | 226.00 GiB |   672.05 B | CUDA       |  63 |   q8_0 |  1 |   2 |   512 |    1 |         pp512 |    105.92 ± 0.50 |

It is complex, basically this PR is  7~12% better for pp and ~5% better for tg *only* when the number of threads is dialed in.

| model                          |       size |     params | backend    | threads | type_k | fa | mla |   amb | mmap | fmoe |          test |              t/s |
| ------------------------------ | ---------: | ---------: | ---------- | ------: | -----: | -: | --: | ----: | ---: | ---: | ------------: | ---------------: |
| deepseek2 671B Q4_K_R4         | 376.65 GiB |   671.03 B | CPU        |      32 |   q8_0 |  1 |   3 |  1024 |    0 |    1 |         pp512 |     56.67 ± 3.68 |
"""


def test_a_cpu_named_before_other_runs_logs_does_not_name_a_later_cpu_table():
    gpu, cpu = extract_text(PR_287, ctx("https://github.com/ikawrakow/ik_llama.cpp/pull/287"))
    assert gpu.record["hardware"]["name"] == "NVIDIA RTX A6000"
    assert cpu.record["hardware"]["name"] is None
    # with no other run's log in between, the CPU the post names is the CPU table's
    (alone,) = extract_text(PR_287.split("Device 0")[0] + PR_287.split("dialed in.")[1], ctx())
    assert alone.record["hardware"]["name"] == "AMD Ryzen 7950X"


# ik_llama.cpp's dump of discussion 357 (https://github.com/ikawrakow/ik_llama.cpp/discussions/357): two sweep-bench
# runs, each after its own log; the second log's file line wraps (".gguf (version ..." on the next line), so only
# its ftype/params/size are read. The second table was stored as the first run's mix-IQ3_K at the Q8_0's size.
DISCUSSION_357 = """```
  Device 0: NVIDIA GeForce RTX 3090 Ti, compute capability 8.6, VMM: yes
llama_model_loader: loaded meta data with 40 key-value pairs and 1131 tensors from /mnt/ai/models/ubergarm/Qwen3-235B-A22B-GGUF/Qwen3-235B-A22B-mix-IQ3_K-00001-of-00003.gguf (version GGUF V3 (latest))
llm_load_print_meta: model ftype      = IQ3_K - 3.4325 bpw
llm_load_print_meta: model params     = 235.094 B
llm_load_print_meta: model size       = 106.830 GiB (3.903 BPW)
```

|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |
|-------|--------|--------|----------|----------|----------|----------|
|   512 |    128 |      0 |    4.165 |   122.94 |   11.925 |    10.73 |

```
  Device 0: NVIDIA RTX A6000, compute capability 8.6, VMM: yes
llama_model_loader: loaded meta data with 33 key-value pairs and 1131 tensors from /mnt/raid/models/ubergarm/Qwen3-235B-A22B-GGUF/Qwen3-235B-A22B-Q8_0
.gguf (version GGUF V3 (latest))
llm_load_print_meta: model ftype      = Q8_0
llm_load_print_meta: model params     = 235.094 B
llm_load_print_meta: model size       = 232.769 GiB (8.505 BPW)
```

|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |
|-------|--------|--------|----------|----------|----------|----------|
|   512 |    128 |      0 |    3.115 |   164.36 |   11.715 |    10.93 |
"""


def test_a_sweep_table_takes_its_own_runs_model_never_an_earlier_runs():
    figures = {c.record["tokens_per_second"]: c.record for c in
               extract_text(DISCUSSION_357, ctx("https://github.com/ikawrakow/ik_llama.cpp/discussions/357"))}
    first, second = figures[122.94], figures[164.36]
    assert (first["model"]["name"], first["quantization"]) == ("Qwen3-235B-A22B-mix-IQ3_K", "IQ3_K")
    assert second["model"]["name"] is None  # its file line is not read: unnamed, never the first run's file
    assert (second["quantization"], second["model"]["file_size_gb"]) == ("Q8_0", 249.93)
    assert second["hardware"]["name"] == "NVIDIA RTX A6000"


def test_a_shell_variable_names_no_model_file():
    # discussion 357 again: the Q8_0 run's command passes the file as a shell variable
    command = """```
model=/mnt/raid/models/ubergarm/Qwen3-235B-A22B-GGUF/Qwen3-235B-A22B-Q8_0.gguf

# Offload 48GB onto single RTX A6000 VRAM
CUDA_VISIBLE_DEVICES="0" \\
./build/bin/llama-sweep-bench \\
  --model "$model" \\
  -fa \\
  -c 32768 \\
  -ngl 99 \\
  --threads 24
```
"""
    second = DISCUSSION_357.split("|   512 |    128 |      0 |    4.165 |   122.94 |   11.925 |    10.73 |")[1]
    figures = extract_text(command + second, ctx("https://github.com/ikawrakow/ik_llama.cpp/discussions/357"))
    assert figures and all(c.record["model"]["name"] is None for c in figures)  # was "$model"
    assert all(c.record["nature"]["procedure"].startswith("llama-sweep-bench") for c in figures)


# ik_llama.cpp's dump of PR 132 (https://github.com/ikawrakow/ik_llama.cpp/pull/132): each table after a sentence
# naming its machine and build. The M2-Max table took the build of the sentence after it (the next table's intro),
# as "Apple M2"; a sentence naming a build is no footer.
PR_132 = """Hahaha - here is what we get on my M2-Max (`build: 7736837d (4274)`)

| model                          |       size |     params | backend    | threads |          test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | ------: | ------------: | -------------------: |
| llama 8B Q5_K - Small          |   5.21 GiB |     8.03 B | CPU        |       8 |         pp512 |         27.69 ± 0.09 |

The performance gap in prompt processing for `Q5_K` has now grown to 3.5X, and it is ~30% slower for TG with 2 threads.

Here is what I get on my Ryzen-7950X (`build: 26a8406b (4295)`)

| model                          |       size |     params | backend    | threads |          test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | ------: | ------------: | -------------------: |
| llama 8B Q5_K - Small          |   5.21 GiB |     8.03 B | CPU        |      16 |         pp512 |         75.88 ± 0.26 |
"""


def test_a_sentence_naming_a_build_after_a_table_introduces_the_next_one():
    m2, ryzen = extract_text(PR_132, ctx("https://github.com/ikawrakow/ik_llama.cpp/pull/132"))
    assert (m2.record["hardware"]["name"], m2.record["software"]["version"]) == ("Apple M2 Max", "b4274 (7736837d)")
    assert (ryzen.record["hardware"]["name"], ryzen.record["software"]["version"]) == ("AMD Ryzen 7950X", "b4295 (26a8406b)")
    assert accepted(m2) and accepted(ryzen)


# ik_llama.cpp's dump of issue 514 (https://github.com/ikawrakow/ik_llama.cpp/issues/514): a user compares with
# mainline, running ./llama.cpp/llama-cli; posted in ik_llama.cpp's repository, the run was stored as ik_llama.cpp's.
ISSUE_514 = """```
(base) mukul@jarvis:~/dev-ai$ ./llama.cpp/llama-cli \\
    --model /media/mukul/data/models/unsloth/Qwen3-30B-A3B-GGUF/Q4_K_M/Qwen3-30B-A3B-Q4_K_M.gguf \\
    --threads 32 \\
    --n-gpu-layers 99 \\
    -no-cnv
ggml_cuda_init: found 2 CUDA devices:
  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes
  Device 1: NVIDIA GeForce RTX 5090, compute capability 12.0, VMM: yes
build: 5622 (97340b4c) with cc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0 for x86_64-linux-gnu
llama_perf_context_print: prompt eval time =     149.75 ms /    14 tokens (   10.70 ms per token,    93.49 tokens per second)
```
"""


def test_a_run_of_another_llama_cpp_tree_in_ik_llama_cpps_repository_is_no_ones_guess():
    (run,) = extract_text(ISSUE_514, ctx("https://github.com/ikawrakow/ik_llama.cpp/issues/514"))
    assert run.record["software"]["name"] is None
    assert any("not ik_llama.cpp's" in reason for reason in run.reasons) and not accepted(run)
    # run from ik_llama.cpp's tree, the repository's fork it is
    (ik,) = extract_text(ISSUE_514.replace("~/dev-ai$ ./llama.cpp/", "~/dev-ai/ik_llama.cpp$ ./build/bin/"),
                         ctx("https://github.com/ikawrakow/ik_llama.cpp/issues/514"))
    assert ik.record["software"]["name"] == "ik_llama.cpp"
    # posted elsewhere, the tool's own
    (mainline,) = extract_text(ISSUE_514, ctx("https://github.com/ggml-org/llama.cpp/issues/1"))
    assert mainline.record["software"]["name"] == "llama.cpp"
