# ruff: noqa: E501  (log lines and tables are quoted as the tools print them)
"""Issue 19, set B (repository files, forum posts, other tools): short excerpts of real texts that were read wrong
or missed, each cited by the URL it comes from, each failing without its fix. Rules: docs/EXTRACTION.md."""

from __future__ import annotations

from datetime import date

from tpsdb.collect.extract import PostContext, extract_text
from tpsdb.collect.machines import canonical_hardware
from tpsdb.record import validate

KREIER = "https://github.com/kreier/jetson/blob/fd9602445dc0b2997da5bda731e69a886b59d3ce/"


def ctx(url: str) -> PostContext:
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
