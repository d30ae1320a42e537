"""Issue 10: the extractor on shapes other than the three fixture threads' (open-world hardware, tables as pasted,
versions stated anywhere in the post, every quantization llama.cpp defines, other tools' outputs).

Each example is written in the shape the tool prints (llama.cpp's tools/llama-bench README and the logs of
llama.cpp's backends); figures are made up unless a URL says where they come from.
"""

from __future__ import annotations

from datetime import date

import pytest

from tpsdb.collect.extract import PostContext, extract_post, extract_text
from tpsdb.collect.machines import canonical_hardware
from tpsdb.record import validate

CTX = PostContext("https://github.com/ggml-org/llama.cpp/issues/1#issuecomment-2", "2026-12-01", "2026-11-01",
                  "someone", {})
TODAY = date(2026, 12, 1)


def table(backend: str = "CUDA", value: str = "150.10 ± 0.01", build: str = "build: 3bdc4cd0 (7739)") -> str:
    return f"""| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| llama 7B Q4_0 | 3.56 GiB | 6.74 B | {backend} | 99 | tg128 | {value} |

{build}
"""


def one(text: str):
    (candidate,) = extract_text(text, CTX)
    return candidate


def accepted(candidate) -> bool:
    return not candidate.reasons and validate(candidate.record, today=TODAY).accepted


# ------------------------------------------------------------------------------- 1. open-world hardware
@pytest.mark.parametrize(("log", "backend", "name"), [
    ("ggml_cuda_init: found 1 CUDA devices:\n  Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes",
     "CUDA", "NVIDIA GeForce RTX 4090"),
    ("ggml_cuda_init: found 1 CUDA devices:\n  Device 0: Tesla M40 24GB, compute capability 5.2, VMM: yes",
     "CUDA", "NVIDIA Tesla M40"),
    ("ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon RX 7900 XTX, gfx1100 (0x1100), VMM: no, "
     "Wave Size: 32", "ROCm", "AMD Radeon RX 7900 XTX"),
    ("ggml_vulkan: Found 1 Vulkan devices:\nggml_vulkan: 0 = AMD Radeon RX 7900 XTX (RADV NAVI31) (radv) | uma: 0 | "
     "fp16: 1 | warp size: 64 | shared memory: 65536 | int dot: 1 | matrix cores: KHR_coopmat", "Vulkan",
     "AMD Radeon RX 7900 XTX"),
    ("ggml_vulkan: 0 = Intel(R) Arc(TM) Pro B60 Graphics (Intel open-source Mesa driver) | uma: 0 | fp16: 1",
     "Vulkan", "Intel Arc Pro B60"),
    ("ggml_vulkan: 0 = Intel(R) Graphics (MTL) (Intel open-source Mesa driver) | uma: 1 | fp16: 1", "Vulkan",
     "Intel Graphics (MTL)"),
    ("ggml_vulkan: 0 = Intel(R) Arc(TM) B70 Graphics (Intel Corporation) | uma: 0 | fp16: 1", "Vulkan",
     "Intel Arc B70"),
    ("ggml_metal_init: allocating\nggml_metal_init: found device: Apple M2 Max", "Metal,BLAS", "Apple M2 Max"),
    ("ggml_metal_device_init: GPU name:   MTL0\nllama_model_load_from_file_impl: using device MTL0 (Apple M4 Max) - "
     "98303 MiB free", "Metal,BLAS", "Apple M4 Max"),
    ("""|  |                   |                                       |       |Max    |        |Max  |Global |
|ID|        Device Type|                                   Name|Version|units  |group   |group|size   |
|--|-------------------|---------------------------------------|-------|-------|--------|-----|-------|
| 0| [level_zero:gpu:0]|                Intel Arc A770 Graphics|    1.6|    512|    1024|   32| 16225M|
""", "SYCL", "Intel Arc A770"),
    ("ggml_vulkan: 0 = Moore Threads MTT S80 (MUSA driver) | uma: 0 | fp16: 1", "Vulkan", "Moore Threads MTT S80"),
])
def test_a_device_line_of_any_backend_names_the_machine(log, backend, name):
    candidate = one(f"```\n{log}\n```\n\n{table(backend)}")
    assert candidate.record["hardware"]["name"] == name
    assert accepted(candidate)


def test_a_device_line_that_names_no_chip_names_no_machine():
    candidate = one("ggml_vulkan: 0 = AMD Radeon Graphics (RADV GFX1151) (radv) | uma: 1\n\n" + table("Vulkan"))
    assert candidate.record["hardware"]["name"] is None and not accepted(candidate)


@pytest.mark.parametrize(("text", "name"), [
    ("Intel Arc B70", "Intel Arc B70"),
    ("Intel(R) Arc(TM) Pro B60 Graphics", "Intel Arc Pro B60"),
    ("Intel(R) Graphics (MTL)", "Intel Graphics (MTL)"),
    ("Tesla M40", "NVIDIA Tesla M40"),
    ("Quadro RTX 8000", "NVIDIA Quadro RTX 8000"),
    ("Intel Core i5 4278U", "Intel Core i5-4278U"),
    ("Intel(R) Core(TM) i9-13900K CPU @ 3.00GHz", "Intel Core i9-13900K"),
    ("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", "Intel Xeon Gold 6338"),
    ("AMD Ryzen 9 7950X 16-Core Processor", "AMD Ryzen 9 7950X"),
    ("AMD Ryzen AI Max+ 395", "AMD Ryzen AI Max+ 395"),
    ("AMD Radeon AI PRO R9700", "AMD Radeon AI PRO R9700"),
    ("Chip: Apple M5 Ultra", "Apple M5 Ultra"),
    ("Snapdragon X Elite", "Qualcomm Snapdragon X Elite"),
    ("Raspberry Pi 5", "Raspberry Pi 5"),
    ("NVIDIA GeForce GT 1030", "NVIDIA GeForce GT 1030"),
])
def test_the_catalogue_and_the_generic_rules_name_each_family(text, name):
    assert canonical_hardware(text) == name


def test_a_cpu_backend_row_takes_the_cpu_the_post_names():
    text = "Box: RTX 3090 with an AMD Ryzen 9 7950X, CPU only run:\n\n" + table("CPU", "12.31 ± 0.02")
    candidate = one(text)
    assert candidate.record["hardware"]["name"] == "AMD Ryzen 9 7950X" and accepted(candidate)
    # and a CUDA row of the same post is the GPU's
    assert one(text.replace("| CPU |", "| CUDA |")).record["hardware"]["name"] == "NVIDIA GeForce RTX 3090"


@pytest.mark.parametrize(("lines", "name"), [
    ("Architecture:            x86_64\n  Model name:            AMD Ryzen 9 7950X 16-Core Processor", "AMD Ryzen 9 7950X"),
    ("Hardware:\n    Hardware Overview:\n      Model Name: Mac Studio\n      Chip: Apple M5 Ultra", "Apple M5 Ultra"),
])
def test_lscpu_and_system_profiler_lines_name_the_machine(lines, name):
    assert one(f"```\n{lines}\n```\n{table('CPU')}").record["hardware"]["name"] == name


def test_prose_naming_one_machine_names_the_posts_tables():
    candidate = one("Ran this on my 2014 MacBook Pro (Intel Core i5 4278U), CPU only.\n\n" + table("CPU", "3.10 ± 0.01"))
    assert candidate.record["hardware"]["name"] == "Intel Core i5-4278U" and accepted(candidate)


def test_two_machines_named_and_no_device_line_is_ambiguous():
    candidate = one("Tested on both my RTX 3090 and my RTX 4090:\n\n" + table())
    assert candidate.record["hardware"]["name"] is None
    assert candidate.reasons == ["hardware.name: ambiguous (NVIDIA GeForce RTX 3090, NVIDIA GeForce RTX 4090)"]


def test_a_heading_names_the_machine_of_the_tables_after_it_only():
    text = "### M1 Max\n\n" + table("Metal,BLAS", "60.00 ± 0.10") + "\n### M2 Max\n\n" + table("Metal,BLAS", "70.00 ± 0.10")
    first, second = extract_text(text, CTX)
    assert (first.record["hardware"]["name"], second.record["hardware"]["name"]) == ("Apple M1 Max", "Apple M2 Max")
    # a heading after the only table names nothing for it
    candidate = one(table("Metal,BLAS") + "\n### M2 Max\n\nnext time more")
    assert candidate.record["hardware"]["name"] is None


def test_a_line_after_the_table_names_it_when_it_is_the_posts_only_machine():
    assert one(table() + "\nThat was an RTX 4090.").record["hardware"]["name"] == "NVIDIA GeForce RTX 4090"


def test_html_body_reads_the_same():
    html = ("<p>Ran this on my 2014 MacBook Pro (Intel Core i5 4278U)</p><table><tr><th>model</th><th>size</th>"
            "<th>params</th><th>backend</th><th>test</th><th>t/s</th></tr><tr><td>llama 7B Q4_0</td>"
            "<td>3.56 GiB</td><td>6.74 B</td><td>CPU</td><td>tg128</td><td>3.10 ± 0.01</td></tr></table>"
            "<p>build: 3bdc4cd0 (7739)</p>")
    (candidate,) = extract_post(html, CTX)
    assert candidate.record["hardware"]["name"] == "Intel Core i5-4278U" and accepted(candidate)


# ------------------------------------------------------------------------------------ 2. tables as pasted
RTX = "Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes\n"


def test_a_table_without_outer_pipes_is_read():
    text = RTX + """model | size | params | backend | ngl | test | t/s
--- | ---: | ---: | --- | --: | ---: | ---:
llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | pp512 | 11034.12 ± 22.51
llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | tg128 | 187.35 ± 0.08

build: 3bdc4cd0 (7739)
"""
    prompt, generation = extract_text(text, CTX)
    assert (prompt.record["tokens_per_second"], generation.record["tokens_per_second"]) == (11034.12, 187.35)
    assert accepted(prompt) and accepted(generation)


@pytest.mark.parametrize("between", [
    "\n",
    "llama_model_load: loaded meta data with 19 key-value pairs | fp16: 1\n",
    "</details>\n\n<details><summary>more</summary>\n\n",
])
def test_rows_cut_by_log_lines_blank_lines_or_details_stay_one_table(between):
    text = RTX + """| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | pp512 | 11034.12 ± 22.51 |
""" + between + """| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | tg128 | 187.35 ± 0.08 |

build: 3bdc4cd0 (7739)
"""
    candidates = extract_text(text, CTX)
    assert [c.record["tokens_per_second"] for c in candidates] == [11034.12, 187.35]
    assert all(accepted(c) for c in candidates)
    assert len({c.slot for c in candidates}) == 2


@pytest.mark.parametrize("mark", ["Â±", "Ã‚Â±"])
def test_the_mojibake_of_plus_minus_is_read(mark):
    candidate = one(RTX + table(value=f"187.35 {mark} 0.08"))
    assert (candidate.record["tokens_per_second"], candidate.record["stddev"]) == (187.35, 0.08)
    assert accepted(candidate)


def test_extra_columns_in_any_order():
    text = RTX + """| t/s | test | fa | model | backend | threads | params | size | ngl | n_ubatch |
| ---: | ---: | --: | --- | --- | --: | ---: | ---: | --: | --: |
| 187.35 ± 0.08 | tg128 | 1 | llama 7B Q4_0 | CUDA | 16 | 6.74 B | 3.56 GiB | 99 | 512 |

build: 3bdc4cd0 (7739)
"""
    candidate = one(text)
    assert candidate.record["software"]["options"] == {"fa": 1, "backend": "CUDA", "threads": 16, "ngl": 99,
                                                       "n_ubatch": 512}
    assert accepted(candidate)


# ------------------------------------------------------------------------------------ 3. versions stated in the post
NO_FOOTER = table(build="")


@pytest.mark.parametrize(("stated", "version"), [
    ("Built at commit 3bdc4cd0 with -DGGML_CUDA=ON.", "3bdc4cd0"),
    ("## b7739\n", "b7739"),
    ("llama.cpp build 7739, CUDA 12.8", "b7739"),
    ("```\nC:\\llama-b7739-bin-win-cuda-12.4-x64\\llama-bench.exe -m model.gguf\n```", "b7739"),
])
def test_the_one_version_a_post_states_applies_to_its_tables(stated, version):
    before = one(f"{RTX}{stated}\n\n{NO_FOOTER}")
    after = one(f"{RTX}{NO_FOOTER}\n{stated}\n")
    assert before.record["software"]["version"] == version and accepted(before)
    if stated.startswith("#"):
        # a heading after the table opens the next section: its version is that section's (issue 19, the
        # "## GPU with a33e6a0" of kreier/jetson, tests/test_extract_real_texts.py)
        assert after.record["software"]["version"] is None
    else:
        assert after.record["software"]["version"] == version and accepted(after)


def test_several_versions_stated_each_table_takes_the_nearest_before():
    text = f"{RTX}## b7000\n\n{table(value='150.00 ± 0.01', build='')}\n## b7739\n\n{table(value='160.00 ± 0.01', build='')}"
    first, second = extract_text(text, CTX)
    assert (first.record["software"]["version"], second.record["software"]["version"]) == ("b7000", "b7739")


def test_no_version_stated_is_missing():
    candidate = one(RTX + NO_FOOTER)
    assert candidate.record["software"]["version"] is None
    assert "software.version: missing" in validate(candidate.record, today=TODAY).reasons


def test_a_build_footer_right_after_the_table_is_read_from_html():
    # GitHub's Markdown makes the line right after a table one more row of it
    html = ("<p>Device 0: NVIDIA GeForce RTX 4090, compute capability 8.9, VMM: yes</p><table><thead><tr>"
            "<th>model</th><th>size</th><th>params</th><th>backend</th><th>ngl</th><th>test</th><th>t/s</th></tr>"
            "</thead><tbody><tr><td>llama 7B Q4_0</td><td>3.56 GiB</td><td>6.74 B</td><td>CUDA</td><td>99</td>"
            "<td>tg128</td><td>187.35 ± 0.08</td></tr><tr><td>build: 3bdc4cd0 (7739)</td><td></td><td></td><td></td>"
            "<td></td><td></td><td></td></tr></tbody></table>")
    (candidate,) = extract_post(html, CTX)
    assert candidate.record["software"]["version"] == "b7739 (3bdc4cd0)" and accepted(candidate)


# ------------------------------------------------------------------------------------ 4. llama.cpp's own type names
@pytest.mark.parametrize(("label", "quant"), [
    ("llama 7B Q4_0_4_8", "Q4_0_4_8"),
    ("bitnet 3B IQ2_BN - 2.00 bpw Bitnet", "IQ2_BN"),
    ("llama 8B TQ1_0 - 1.69 bpw ternary", "TQ1_0"),
    ("llama 8B IQ4_NL - 4.5 bpw", "IQ4_NL"),
    ("gpt-oss 20B MXFP4 MoE", "MXFP4"),
])
def test_every_quantization_llama_cpp_defines_is_a_named_format(label, quant):
    candidate = one(RTX + table().replace("llama 7B Q4_0", label))
    assert candidate.record["quantization"] == quant
    assert not any(r.startswith("quantization") for r in validate(candidate.record, today=TODAY).reasons)


@pytest.mark.parametrize("name", ["Q7_0", "Q2_K_M", "4-bit", "IQ9_XS"])
def test_names_llama_cpp_does_not_define_are_refused(name):
    from tpsdb.record import named_quantization
    assert named_quantization(name) is None
