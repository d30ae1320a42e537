"""Property-based tests of the extractor (issue 10, item 5): arbitrary text and mutated real outputs never crash it,
never take more than linear time, and never give an accepted figure whose quote does not show its value.

Derandomized (the same examples on every run, no example database), about 5 s in all. The DGX Spark post is read
exactly as ../shared holds it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_data import DGX_SPARK_MD, need, text_or_empty
from test_tools import LLAMA_CLI, MLX, OLLAMA, SERVER, SGLANG, SWEEP, VLLM
from tpsdb.collect.extract import PostContext, extract_post, extract_text
from tpsdb.record import _value_in_quote, quote_numbers, validate

ROOT = Path(__file__).resolve().parent.parent
# The DGX Spark file exactly as ../shared holds it ("" without ../shared: the fuzz then starts from the other outputs).
DGX = text_or_empty(DGX_SPARK_MD)
CTX = PostContext("https://github.com/ggml-org/llama.cpp/discussions/1#discussioncomment-2", "2026-12-01",
                  "2026-11-30", "someone", {})
REAL = [DGX, LLAMA_CLI, SERVER, SWEEP, OLLAMA, MLX, VLLM, SGLANG]

FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# What tables and tool lines are made of, so that random text often comes close to a figure.
_PIECES = ["|", " | ", "---", ":", "\n", " ", "±", "Â±", "t/s", "tokens/s", "tokens per second", "tokens-per-sec",
           "pp512", "tg128", "@ d4096", "1,003.34", "59.02", "0.17", "1e309", "9" * 40, "nan", "GiB", "B", "Q4_0",
           "llama 7B", "model", "test", "size", "params", "backend", "CUDA", "PP", "TG", "B", "N_KV", "S_PP t/s",
           "S_TG t/s", "eval rate:", "eval count:", "token(s)", "Prompt:", "Generation:", "tokens,",
           "Output token throughput (tok/s):", "Maximum request concurrency:", "==========", "Benchmark Result",
           "llama-bench -p 512", "llama-cli -m x.gguf", "ollama run x --verbose", "build: 2f68ce7cf (6918)",
           "Device 0: NVIDIA GeForce RTX 4090, compute", "prompt eval time =", " ms / ", " runs (", " ms per token, ",
           "```", "> ", "# ", "<table>", "<tr><td>", "</td>", "<br>", "\t", "\x00", "\ud7ff", "é"]
# What cuts a table in two in real posts: a blank line, a log line, a fence, a <details> block, a border line.
_CUTS = ["", "llama_model_load: loaded meta data with 19 key-value pairs | fp16: 1", "```", "</details>",
         "+-----------------------------------------+------------------------+"]
PIECEMEAL = st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=8)), max_size=120).map("".join)


def _check(candidates, text: str | None = None) -> None:
    """Every candidate is a well-formed record; an accepted one shows its value in its quote."""
    for candidate in candidates:
        record = candidate.record
        value, quote = record["tokens_per_second"], record["source"]["quote"]
        assert isinstance(quote, str) and quote.strip()
        if candidate.reasons or not validate(record).accepted:
            continue
        assert _value_in_quote(value, quote), (value, quote)
        # read as printed: the value is one of the quote's numbers, not a rounding or a sum of them
        assert any(float(number) == value for number in quote_numbers(quote)), (value, quote)
        if text is not None:  # the quote is what the post shows (a table's row, a log's lines)
            assert all(part.strip() in text for part in quote.split("\n")), quote


@settings(FUZZ, max_examples=400)
@given(PIECEMEAL)
def test_arbitrary_text_never_crashes_the_extractor(text):
    _check(extract_text(text, CTX))
    _check(extract_post(text, CTX))


@st.composite
def mutated(draw):
    """A real output (a window of the DGX Spark post, or a tool's output) with a few edits."""
    text = draw(st.sampled_from(REAL))
    lines = text.splitlines()
    if len(lines) > 60:  # a window of the long post, holding a table
        start = draw(st.integers(0, len(lines) - 40))
        lines = lines[start:start + draw(st.integers(10, 60))]
    for _ in range(draw(st.integers(1, 6))):
        if not lines:
            break
        k = draw(st.integers(0, len(lines) - 1))
        line = lines[k]
        edit = draw(st.sampled_from(["char", "delete", "duplicate", "insert", "cut", "swap"]))
        at = draw(st.integers(0, len(line)))
        if edit == "char":
            lines[k] = line[:at] + draw(st.sampled_from(_PIECES + list("0123456789.,|"))) + line[at + 1:]
        elif edit == "delete":
            lines[k] = line[:at] + line[at + draw(st.integers(1, 12)):]
        elif edit == "duplicate":
            lines.insert(k, line)
        elif edit == "insert":
            lines.insert(k, draw(PIECEMEAL))
        elif edit == "cut":
            lines.insert(k, draw(st.sampled_from(_CUTS)))
        else:
            j = draw(st.integers(0, len(lines) - 1))
            lines[k], lines[j] = lines[j], lines[k]
    return "\n".join(lines)


@settings(FUZZ, max_examples=500)
@given(mutated())
def test_mutated_real_outputs_never_accept_a_figure_the_quote_does_not_show(text):
    _check(extract_text(text, CTX), text)


# The rows of a llama-batched-bench table cut by a line, in a post that gives them a model (its llama-bench table), a
# machine (nvidia-smi) and a build. The rows after the cut continue the table, and the first of them was read as the
# header of a table of its own; its quote was rebuilt from its cells ("| 512 | 32 | 2 | …"), which the post does not
# show, and the figure was accepted with it.
CUT_TABLE = """\
|   0  NVIDIA GB10                    On  |   0000000F:01:00.0 Off |                  N/A |

## ggml-org/gpt-oss-20b-GGUF

|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
|   512 |     32 |    1 |    544 |    0.390 |  1311.72 |    0.395 |    81.11 |    0.785 |   693.12 |
{cut}
|   512 |     32 |    2 |   1088 |    0.273 |  3754.20 |    0.674 |    95.00 |    0.946 |  1149.52 |

| model                 |       size |     params | backend | ngl | n_ubatch | fa | mmap |  test |          t/s |
| --------------------- | ---------: | ---------: | ------- | --: | -------: | -: | ---: | ----: | -----------: |
| gpt-oss 20B MXFP4 MoE |  11.27 GiB |    20.91 B | CUDA    |  99 |     2048 |  1 |    0 |  tg32 | 84.10 ± 0.52 |

build: 2f68ce7cf (6918)
"""


@pytest.mark.parametrize("cut", _CUTS)
def test_rows_after_a_cut_are_quoted_as_the_post_shows_them(cut):
    text = CUT_TABLE.format(cut=cut)
    candidates = extract_text(text, CTX)
    quotes = {c.record["tokens_per_second"]: c.record["source"]["quote"] for c in candidates
              if not c.reasons and validate(c.record).accepted}
    row = "|   512 |     32 |    2 |   1088 |    0.273 |  3754.20 |    0.674 |    95.00 |    0.946 |  1149.52 |"
    assert quotes[3754.2] == quotes[95.0] == row  # the row after the cut, accepted, quoted as written
    _check(candidates, text)


def test_a_cut_anywhere_in_the_real_post_keeps_every_quote_exact():
    """The class of the case above on the real post: a line cutting any of its tables before any row."""
    lines = need(DGX_SPARK_MD).read_text(encoding="utf-8").splitlines()
    rows = [k for k, line in enumerate(lines) if line.startswith("|") and k > 0 and lines[k - 1].startswith("|")]
    assert len(rows) > 50
    for n, k in enumerate(rows):
        text = "\n".join(lines[:k] + [_CUTS[n % len(_CUTS)]] + lines[k:])
        candidates = extract_text(text, CTX)
        assert len(candidates) > 100
        # validated only when the quote is not the post's (the validator is most of the time of a full _check)
        inexact = [c for c in candidates if not all(part.strip() in text for part in c.record["source"]["quote"].split("\n"))]
        assert not [c.record["source"]["quote"] for c in inexact if not c.reasons and validate(c.record).accepted]


def test_the_real_outputs_give_accepted_figures():
    """The property above is about something: unmutated, the outputs give figures that pass the validator."""
    accepted = [c for text in REAL for c in extract_text(text, CTX) if not c.reasons and validate(c.record).accepted]
    assert len(accepted) >= 10
    _check(accepted)


def _best_time(text: str) -> float:
    """CPU time, not wall time: the other test worker's work must not count as the extractor's."""
    best = float("inf")
    for _ in range(2):
        start = time.process_time()
        extract_text(text, CTX)
        best = min(best, time.process_time() - start)
    return best


@settings(FUZZ, max_examples=30)
@given(st.one_of(mutated(), PIECEMEAL).filter(lambda t: 20 <= len(t) <= 3000), st.booleans())
def test_extraction_time_grows_linearly(unit, one_line):
    """10 times the text (as more lines, or all on one line) takes about 10 times as long, not 100."""
    glue = " " if one_line else "\n"
    small, large = glue.join([unit] * 4), glue.join([unit] * 40)
    ratio = _best_time(large) / max(_best_time(small), 1e-4)
    if ratio > 40:  # a busy machine: measure again before failing
        ratio = min(ratio, _best_time(large) / max(_best_time(small), 1e-4))
    assert ratio < 40, f"10x the text took {ratio:.0f}x the time"
