"""llama-bench result files (json, jsonl, csv, sql, md) to candidate records.

The samples in tests/fixtures/benchfiles/ are written by hand in the shapes llama-bench's printers produce
(`-o json|jsonl|csv|sql`, field names from `test::get_fields()`); their values are illustrative test data.
The csv is the 2024 shape (per-backend flag columns, no n_depth); the sql mixes llama-bench's table `test`
with compare-llama-bench's `llama_bench`, a column no reader knows, and a table that is not a result table.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from shared_data import DGX_SPARK_MD, need
from tpsdb.collect.benchfiles import extract_bench_file, rows_from_text
from tpsdb.collect.extract import PostContext
from tpsdb.record import validate

FILES = Path(__file__).resolve().parent / "fixtures" / "benchfiles"
RETRIEVED = "2026-09-06"
CTX = PostContext("https://example.org/results/run-1", RETRIEVED, "2025-11-02", "tester",
                  {"model_aliases": {"llama 7B": "Llama 2 7B"}, "params_b": 6.74})


def _accepted(candidate) -> bool:
    return not candidate.reasons and validate(candidate.record, today=date.fromisoformat(RETRIEVED)).accepted


def _summary(candidates):
    return [(c.record["phase"], c.record["tokens_per_second"], c.record["lengths"]["prompt_tokens"],
             c.record["lengths"]["generated_tokens"], c.record["lengths"]["context_depth"]) for c in candidates]


def test_json_array():
    candidates = extract_bench_file(FILES / "gb10-gpt-oss-20b.json", None, CTX, None)
    assert _summary(candidates) == [("prompt", 3782.763381, 2048, 0, 0), ("generation", 77.360172, 0, 32, 4096)]
    record = candidates[0].record
    assert record["hardware"]["name"] == "NVIDIA DGX Spark"
    assert record["model"] == {"name": "gpt-oss 20B", "params_b": 20.91, "file_size_gb": 12.1}
    assert record["quantization"] == "MXFP4"
    assert record["software"]["version"] == "b6918 (2f68ce7cf)"
    assert record["software"]["options"] == {"backend": "CUDA", "ngl": 99, "threads": 20, "n_batch": 2048,
                                             "n_ubatch": 2048, "type_k": "f16", "type_v": "f16", "fa": 1,
                                             "mmap": 0, "sm": "layer", "main_gpu": 0, "n_cpu_moe": 0, "nkvo": 0,
                                             "embd": 0, "nopo": 0, "noh": 0}
    assert record["source"]["quote"].startswith("{") and '"avg_ts": 3782.763381' in record["source"]["quote"]
    assert record["stddev"] == 11.94622
    assert all(_accepted(c) for c in candidates), [validate(c.record).reasons for c in candidates]


def test_jsonl_applies_the_protocol_alias():
    candidates = extract_bench_file(FILES / "rtx4090-llama2-7b.jsonl", None, CTX, None)
    assert _summary(candidates) == [("prompt", 14770.632812, 512, 0, 0), ("generation", 188.963013, 0, 128, 0)]
    record = candidates[1].record
    assert record["model"] == {"name": "Llama 2 7B", "params_b": 6.74, "file_size_gb": 3.83}
    assert record["hardware"]["name"] == "NVIDIA GeForce RTX 4090"
    assert record["software"]["version"] == "b6092 (c81de6e1)"
    assert record["software"]["options"]["fa"] == 0 and record["software"]["options"]["mmap"] == 1
    assert all(_accepted(c) for c in candidates)


def test_csv_of_an_older_build_and_stated_hardware():
    candidates = extract_bench_file(FILES / "m2ultra-2024.csv", None, CTX, "M2 Ultra (76-core GPU)")
    assert _summary(candidates) == [("prompt", 1391.783416, 512, 0, 0), ("generation", 108.800438, 0, 128, 0)]
    record = candidates[0].record
    assert record["hardware"]["name"] == "Apple M2 Ultra (76-core GPU)"  # the caller's statement wins
    assert record["software"]["version"] == "b2788 (86ed72d2)"
    assert record["quantization"] == "Q4_0" and record["software"]["options"]["fa"] == 1
    assert record["source"]["quote"].startswith('"86ed72d2","2788"')
    assert all(_accepted(c) for c in candidates)


def test_csv_without_stated_hardware_reads_gpu_info():
    (first, _) = extract_bench_file(FILES / "m2ultra-2024.csv", "csv", CTX, None)
    assert first.record["hardware"]["name"] == "Apple M2 Ultra"


def test_sql_inserts_of_both_table_names():
    candidates = extract_bench_file(FILES / "a100x2-llama2-7b.sql", None, CTX, None)
    assert _summary(candidates) == [("prompt", 8381.22, 512, 0, 0), ("generation", 86.8, 0, 128, 0),
                                    ("end_to_end", 712.45, 512, 128, 0)]
    first, _, last = (c.record for c in candidates)
    assert first["hardware"]["name"] == "2x NVIDIA A100 80GB PCIe"
    assert first["model"] == {"name": "Llama 2 7B", "params_b": 6.74, "file_size_gb": 13.48}
    assert first["software"]["version"] == "b5412 (b5c1d2e3f)"
    assert first["source"]["quote"].startswith("INSERT INTO test (") and first["source"]["quote"].endswith(");")
    assert last["stddev"] is None and last["software"]["options"] == {"ngl": 99}
    assert all(_accepted(c) for c in candidates)


def test_sql_quoted_strings_with_parentheses_and_escaped_quotes():
    rows = rows_from_text((FILES / "a100x2-llama2-7b.sql").read_text(encoding="utf-8"), "sql")
    assert rows[0][0]["cpu_info"] == "AMD EPYC 7763 64-Core Processor (x2, 'server')"
    assert rows[2][0]["some_future_field"] == "x"


@pytest.mark.parametrize("name", ["gb10-gpt-oss-20b.json", "rtx4090-llama2-7b.jsonl", "m2ultra-2024.csv",
                                  "a100x2-llama2-7b.sql"])
def test_bytes_without_a_format_are_sniffed(name):
    data = (FILES / name).read_bytes()
    assert [c.record for c in extract_bench_file(data, None, CTX, None)] == \
           [c.record for c in extract_bench_file(FILES / name, None, CTX, None)]


def test_markdown_file_of_llama_cpp_benches():
    """llama.cpp's benches/dgx-spark.md: five models, each a batched-bench table and a llama-bench table."""
    candidates = extract_bench_file(need(DGX_SPARK_MD), None, CTX, None)
    batched = [c.record for c in candidates if c.record["concurrency"]["figure"] == "aggregate"]
    single = [c.record for c in candidates if c.record["concurrency"]["figure"] == "per_user"]
    assert (len(batched), len(single)) == (5 * 18 * 2, 5 * 10)
    assert {r["hardware"]["name"] for r in batched + single} == {"NVIDIA DGX Spark"}
    assert {r["software"]["version"] for r in batched + single} == {"b6918 (2f68ce7cf)"}
    assert [r["model"]["name"] for r in batched[::36]] == ["gpt-oss 20B", "gpt-oss 120B", "qwen3moe 30B.A3B",
                                                          "qwen2 7B", "gemma3 4B"]
    b32 = next(r for r in batched if r["source"]["quote"].startswith("|  8192 |     32 |   32 |")
               and r["phase"] == "generation")
    assert (b32["tokens_per_second"], b32["concurrency"]["users"], b32["lengths"]) == \
           (341.16, 32, {"prompt_tokens": 0, "generated_tokens": 32, "context_depth": 8192})
    assert all(_accepted(c) for c in candidates)


def test_stated_hardware_applies_to_text_files():
    text = b"| model | size | params | backend | test | t/s |\n|---|---|---|---|---|---|\n" \
           b"| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | tg128 | 94.27 \xc2\xb1 0.04 |\n\nbuild: 8e672efe (1572)\n"
    (candidate,) = extract_bench_file(text, "md", CTX, "M2 Ultra")
    assert candidate.record["hardware"]["name"] == "Apple M2 Ultra"
    assert _accepted(candidate)


def test_unknown_format_is_an_error():
    with pytest.raises(ValueError):
        rows_from_text("x", "xlsx")


def test_truncated_sql_is_an_error_not_a_crash():
    text = (FILES / "a100x2-llama2-7b.sql").read_text(encoding="utf-8")
    truncated = text[: text.index("'2025-05-19T14:02:11Z'")]
    with pytest.raises(ValueError):
        rows_from_text(truncated, "sql")


# ------------------------------------------------------------------ numbers no database column holds (I13-I17)
def _json_row(**changes) -> bytes:
    """The first row of the GB10 file, changed: a llama-bench -o jsonl line."""
    row = json.loads((FILES / "gb10-gpt-oss-20b.json").read_text(encoding="utf-8"))[0]
    row.update(changes)
    return json.dumps(row).encode() + b"\n"


@pytest.mark.parametrize("avg_ts", ["inf", "Infinity", "nan", "-inf", 10 ** 400])
def test_d3_i13_i14_a_speed_that_is_not_finite_is_a_rejection_naming_the_field(avg_ts):
    (candidate,) = extract_bench_file(_json_row(avg_ts=avg_ts), "jsonl", CTX, None)
    assert candidate.record["tokens_per_second"] is None
    assert [r for r in candidate.reasons if r.startswith("tokens_per_second: ")], candidate.reasons
    (candidate,) = extract_bench_file(b'[{"avg_ts": 1e999, "n_gen": 128}]', "json", CTX, None)  # json reads inf
    assert candidate.record["tokens_per_second"] is None and candidate.reasons


def test_d3_i13_a_markdown_speed_of_400_digits_is_a_rejection():
    text = ("| model | size | params | backend | ngl | test | t/s |\n|---|---|---|---|---|---|---|\n"
            f"| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | tg128 | {'9' * 400} |\n"
            "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | pp512 | 1,003.34 ± 7.71 |\n\nbuild: 8e672efe (1572)\n")
    bad, good = extract_bench_file(text.encode(), "md", CTX, "M2 Ultra")
    assert bad.record["tokens_per_second"] is None
    assert bad.reasons == ["tokens_per_second: inf is not a finite number"]
    assert good.record["tokens_per_second"] == 1003.34 and not good.reasons


def test_d3_i15_a_stddev_that_is_not_a_number_is_a_rejection_not_a_null():
    (candidate,) = extract_bench_file(_json_row(stddev_ts="nan"), "jsonl", CTX, None)
    assert candidate.record["stddev"] is None and candidate.reasons == ["stddev: nan is not a finite number"]


@pytest.mark.parametrize("n_gen", ["inf", 1e20, "nan", 2.5, 10 ** 400])
def test_d13_i16_a_length_that_is_not_a_count_is_a_rejection_not_a_crash(n_gen):
    (candidate,) = extract_bench_file(_json_row(n_prompt=0, n_gen=n_gen), "jsonl", CTX, None)
    assert candidate.record["lengths"]["generated_tokens"] is None
    assert candidate.reasons[0].startswith("lengths.generated_tokens: n_gen = "), candidate.reasons


def test_d13_counts_past_64_bits_in_a_markdown_table_are_rejections():
    text = ("| PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |\n|---|---|---|---|---|---|---|"
            f"---|---|---|\n| {'5' * 30} | 32 | 1 | 544 | 0.390 | 1311.72 | 0.395 | 81.11 | 0.785 | 693.12 |\n")
    prompt, generation = extract_bench_file(text.encode(), "md", CTX, "GB10")
    assert prompt.record["lengths"]["prompt_tokens"] is None and generation.record["lengths"]["context_depth"] is None
    assert prompt.reasons == [f"lengths.prompt_tokens: {'5' * 30} is too large for a count"]
    assert generation.reasons == [f"lengths.context_depth: {'5' * 30} is too large for a count"]


def test_d22_i17_an_unterminated_sql_string_names_its_line():
    text = (FILES / "a100x2-llama2-7b.sql").read_text(encoding="utf-8")
    cut = text.index("'2025-05-19T14:02:11Z'") + 5  # inside the string: its closing quote is gone
    with pytest.raises(ValueError, match=r"^line \d+: SQL string opened here is never closed$") as error:
        rows_from_text(text[:cut], "sql")
    assert str(error.value) == f"line {text[:cut].count(chr(10)) + 1}: SQL string opened here is never closed"
