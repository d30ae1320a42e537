"""`tpsdb ingest` (llama-bench output files) and the seed rebuilt from its curated inputs."""

import json
import os
import re
import subprocess

from conftest import ROOT, run_cli
from refresh_helpers import rows
from shared_data import DGX_SPARK_MD, SHARED, need

BENCH = ROOT / "tests" / "fixtures" / "benchfiles"
DGX_URL = "https://github.com/ggml-org/llama.cpp/blob/4c7e9893c4ca8eec35d032726d14b74fae76cff8/benches/dgx-spark.md"


def test_ingest_markdown_is_idempotent_and_archived(empty_db):
    path = need(DGX_SPARK_MD)
    args = ("ingest", str(path), "--source-url", DGX_URL, "--hardware", "NVIDIA DGX Spark", "--retrieved-at",
            "2026-11-30")
    first = run_cli(*args, db=empty_db).stdout
    assert first.startswith("230 measurements added")
    assert "0 measurements added, 230 already stored" in run_cli(*args, db=empty_db).stdout
    snaps = rows(empty_db, "select canonical_url, length(body) as n, sha256 from snapshot")
    assert len(snaps) == 1 and snaps[0]["canonical_url"] == DGX_URL and snaps[0]["n"] == path.stat().st_size
    batched = rows(empty_db, "select users, tokens_per_second from measurement_full where model = 'gpt-oss 20B' "
                             "and figure = 'aggregate' and phase = 'generation' and prompt_tokens = 0 "
                             "and context_depth = 512 order by users")
    assert [r["users"] for r in batched] == [1, 2, 4, 8, 16, 32]
    assert [r["tokens_per_second"] for r in batched] == [81.11, 95.0, 151.9, 254.09, 400.94, 614.82]


def test_ingest_every_llama_bench_format(empty_db):
    files = sorted(p for p in BENCH.iterdir() if p.suffix in (".json", ".jsonl", ".csv", ".sql"))
    assert {p.suffix for p in files} == {".json", ".jsonl", ".csv", ".sql"}
    for path in files:
        result = run_cli("ingest", str(path), "--source-url", f"https://example.org/{path.name}",
                         "--hardware", "NVIDIA GeForce RTX 4090", db=empty_db)
        assert "measurements added" in result.stdout
    by_source = rows(empty_db, "select source_url, count(*) n from measurement_full group by source_url")
    assert len(by_source) == len(files) and all(r["n"] > 0 for r in by_source)


def test_a_file_named_without_a_known_suffix_is_read_by_its_content(tmp_path, empty_db):
    log = tmp_path / "run.log"
    log.write_bytes((BENCH / "gb10-gpt-oss-20b.json").read_bytes())
    result = run_cli("ingest", str(log), "--source-url", "https://example.org/run.log", db=empty_db)
    assert "measurements added" in result.stdout and not result.stdout.startswith("0 measurements added")


def test_ingest_refuses_bad_input_and_stores_nothing(tmp_path, empty_db):
    empty = tmp_path / "notes.md"
    empty.write_text("no benchmark output here\n", encoding="utf-8")
    result = run_cli("ingest", str(empty), "--source-url", "https://example.org/x", db=empty_db, check=False)
    assert result.returncode == 2 and "no llama-bench" in result.stderr
    bad_url = run_cli("ingest", str(empty), "--source-url", "example.org/x", db=empty_db, check=False)
    assert bad_url.returncode == 2 and "--source-url" in bad_url.stderr
    bad_date = run_cli("ingest", str(empty), "--source-url", "https://example.org/x", "--retrieved-at", "30/11",
                       db=empty_db, check=False)
    assert bad_date.returncode == 2 and "--retrieved-at" in bad_date.stderr
    assert rows(empty_db, "select count(*) n from snapshot") == [{"n": 0}]


def test_seed_rebuilds_to_the_committed_bytes(tmp_path):
    need(SHARED)  # the seed is built from the shared data folder, read in place
    out = tmp_path / "seed.sql"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TPSDB": str(tmp_path / "tpsdb")}
    (tmp_path / "tpsdb").write_text(f'#!/bin/sh\nexec "{os.sys.executable}" -m tpsdb "$@"\n')
    (tmp_path / "tpsdb").chmod(0o755)
    script = (ROOT / "data" / "build-seed.sh").read_text().replace('"$tpsdb" export-seed --db "$db"',
                                                                  f'"$tpsdb" export-seed --db "$db" --out {out}')
    (tmp_path / "build.sh").write_text(script.replace('cd "$(dirname "$0")/.."', f'cd "{ROOT}"'))
    subprocess.run(["bash", str(tmp_path / "build.sh")], check=True, env=env, capture_output=True, timeout=300)
    assert out.read_bytes() == (ROOT / "data" / "seed.sql").read_bytes()
    # No URL of a test's local server stored as a value (a source, a post, a snapshot). A quoted command line may
    # show a host of its own (`vllm serve --host 127.0.0.1`, `Remote endpoint: http://127.0.0.1:8080`): source text.
    seed = out.read_bytes()
    assert not re.search(rb"'https?://(127\.0\.0\.1|localhost)[:/']", seed) and b"fixture" not in seed.lower()


def test_d3_d13_i13_i16_numbers_no_column_holds_are_rejections_never_stored(tmp_path, empty_db):
    row = json.loads((BENCH / "gb10-gpt-oss-20b.json").read_text(encoding="utf-8"))[0]
    changes = [{"avg_ts": "inf"}, {"avg_ts": "nan"}, {"stddev_ts": "nan"}, {"n_prompt": 0, "n_gen": "inf"},
               {"n_prompt": 0, "n_gen": 1e20}, {"n_prompt": 0, "n_gen": "nan"}, {"model_size": "inf"}]
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps({**row, **change}) + "\n" for change in changes), encoding="utf-8")
    result = run_cli("ingest", str(path), "--source-url", "https://example.org/bad", db=empty_db, check=False)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout.splitlines()[-1].startswith(f"0 measurements added, 0 already stored; {len(changes)} rejections added")
    stored = rows(empty_db, "select reasons, candidate_json from rejection")
    assert len(stored) == len(changes)
    assert not any(word in r["candidate_json"] for r in stored for word in ("Infinity", "NaN"))
    fields = ["tokens_per_second", "tokens_per_second", "stddev"] + ["lengths.generated_tokens"] * 3 + ["model."]
    for r in stored:  # each rejection names its field (in the order of the file)
        assert any(field in r["reasons"] for field in fields), r["reasons"]


def test_d22_i17_unterminated_sql_string_is_one_error_line_naming_file_and_line(tmp_path, empty_db):
    text = (BENCH / "a100x2-llama2-7b.sql").read_text(encoding="utf-8")
    path = tmp_path / "cut.sql"
    path.write_text(text[: text.index("'2025-05-19T14:02:11Z'") + 5], encoding="utf-8")
    result = run_cli("ingest", str(path), "--source-url", "https://example.org/cut", db=empty_db, check=False)
    line = path.read_text(encoding="utf-8").count("\n") + 1
    assert result.returncode == 2
    assert result.stderr == f"error: {path}: line {line}: SQL string opened here is never closed; nothing was stored\n"
    assert rows(empty_db, "select count(*) n from snapshot") == [{"n": 0}]


def test_issue17_a_vllm_serving_result_json_is_filed_as_vllm_not_as_llama_bench(tmp_path, empty_db):
    # the JSON benchmark_serving.py --save-result wrote (https://github.com/nerdalert/vllm-bench-automation,
    # README.md: "<<<RESULT_START>>>" block of the 10 QPS run), abridged
    result = {"date": "20250530-203806", "backend": "vllm", "model_id": "meta-llama/Llama-3.2-3B-Instruct",
              "num_prompts": 300, "request_rate": 10.0, "burstiness": 1.0, "max_concurrency": None,
              "duration": 36.034275877000255, "completed": 300, "total_input_tokens": 299700,
              "total_output_tokens": 81050, "output_throughput": 2249.247363167692,
              "total_token_throughput": 10566.328606120898}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(result), encoding="utf-8")
    out = run_cli("ingest", str(path), "--source-url", "https://example.org/results.json", "--hardware",
                  "4x NVIDIA L40S", db=empty_db, check=False)
    assert out.returncode == 1 and "2 rejections added" in out.stdout, out.stdout + out.stderr
    stored = rows(empty_db, "select candidate_json, reasons from rejection")
    assert {json.loads(r["candidate_json"])["software"]["name"] for r in stored} == {"vLLM"}
    reasons = " ".join(r["reasons"] for r in stored)
    assert "concurrency.users" in reasons and "llama-bench" not in reasons and "build" not in reasons


_LLAMA_BENCH_4090 = """| model | size | params | backend | ngl | test | t/s |
| --- | ---: | ---: | --- | --: | ---: | ---: |
| llama 7B Q4_0 | {size} GiB | 6.74 B | CUDA | 99 | tg128 | 188.96 ± 0.05 |

build: c81de6e1 (6092)
"""
_CITED_Q4_0 = """[[model_file]]
model = "Llama 2 7B"
quantization = "Q4_0"
file_size_gb = 3.79
size_source_url = "https://huggingface.co/ggml-org/Llama-2-7B-GGUF"
quote = "à 4 bits (3,79 Go)"
"""


def _ingest_4090(tmp_path, db, size="3.56", name="bench.md"):
    path = tmp_path / name
    path.write_text(_LLAMA_BENCH_4090.format(size=size))
    return run_cli("ingest", str(path), "--source-url", f"https://example.org/{name}", "--hardware",
                   "NVIDIA GeForce RTX 4090", "--model", "Llama 2 7B", "--retrieved-at", "2026-12-01", db=db)


def test_a_users_llama_bench_result_on_the_cited_file_shows_in_table_1(tmp_path, empty_db):
    """llama-bench's `3.56 GiB` (3.82 GB) Q4_0 Llama 2 7B is the reference's 3.79 GB file (tpsdb.files), as the
    article's Table 1 reads the 4167 and 15013 rows: it shows in `tables machines`; both sizes are kept. Before,
    it was another file and silently left out."""
    reference = tmp_path / "files.toml"
    reference.write_text(_CITED_Q4_0)
    run_cli("reference", str(reference), db=empty_db)
    first = _ingest_4090(tmp_path, empty_db)
    assert first.stdout.startswith("1 measurements added") and "note:" not in first.stderr
    again = _ingest_4090(tmp_path, empty_db)
    assert "0 measurements added, 1 already stored" in again.stdout  # a re-ingest never duplicates
    assert rows(empty_db, "select name from model") == [{"name": "Llama 2 7B"}]  # --model names, never forks
    assert rows(empty_db, "select file_size_gb, reported_file_size_gb from measurement_full") == [
        {"file_size_gb": 3.79, "reported_file_size_gb": 3.82}]
    table = run_cli("tables", "machines", db=empty_db).stdout
    assert "| NVIDIA GeForce RTX 4090 |" in table and "188.96" in table


def test_the_same_size_text_via_ingest_and_add_is_one_model_file(tmp_path, empty_db):
    _ingest_4090(tmp_path, empty_db)
    record = {"source": {"url": "https://example.org/hand", "retrieved_at": "2026-12-01",
                         "quote": "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | tg128 | 94.27 ± 0.1 |"},
              "hardware": {"name": "Apple M2 Ultra (76-core GPU)"},
              "model": {"name": "Llama 2 7B", "params_b": 6.74, "file_size_gb": "3.56 GiB"}, "quantization": "Q4_0",
              "software": {"name": "llama.cpp", "version": "b6092"},
              "lengths": {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 0},
              "concurrency": {"users": 1, "figure": "per_user"},
              "nature": {"kind": "measured", "procedure": "llama-bench"}, "phase": "generation",
              "tokens_per_second": 94.27}
    (tmp_path / "hand.jsonl").write_text(json.dumps(record) + "\n")
    run_cli("add", str(tmp_path / "hand.jsonl"), db=empty_db)
    assert rows(empty_db, "select size_bytes from model_file") == [{"size_bytes": 3820000000}]


def test_a_figure_on_another_file_is_named_not_dropped_silently(tmp_path, empty_db):
    reference = tmp_path / "files.toml"
    reference.write_text(_CITED_Q4_0)
    run_cli("reference", str(reference), db=empty_db)
    result = _ingest_4090(tmp_path, empty_db, size="3.96")  # 4.25 GB: 12 % more than the cited file
    assert result.stdout.startswith("1 measurements added")
    assert ("note: Llama 2 7B Q4_0 4.25 GB is not the file the reference cites (3.79 GB; sizes more than 2% apart "
            "are other files: tpsdb.files), so the tables that hold that file fixed leave this figure out") \
        in result.stderr
    assert "188.96" not in run_cli("tables", "machines", db=empty_db).stdout


def test_a_reference_given_after_the_figures_links_their_file(tmp_path, empty_db):
    _ingest_4090(tmp_path, empty_db)
    assert rows(empty_db, "select file_size_gb from measurement_full") == [{"file_size_gb": 3.82}]
    reference = tmp_path / "files.toml"
    reference.write_text(_CITED_Q4_0)
    run_cli("reference", str(reference), db=empty_db)
    assert rows(empty_db, "select file_size_gb, reported_file_size_gb from measurement_full") == [
        {"file_size_gb": 3.79, "reported_file_size_gb": 3.82}]
