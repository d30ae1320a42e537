"""Issue 20, CLI consistency: -h everywhere, `compare` (a machine and a model -> ranked figures and the calc.),
an import of nothing new exits 0, `withdraw` keeps the figure in the history."""

from __future__ import annotations

import copy
import json

import pytest

from conftest import run_cli, write_jsonl
from test_peers import tokatlas_slice


@pytest.fixture
def small_db(tmp_path, record):
    """Three DGX Spark figures of gpt-oss 120B (59.02, 57.1 per user; 200 aggregate at 4 users) and the reference
    data (273 GB/s, 5.1 B active)."""
    from conftest import ROOT

    db = tmp_path / "small.sqlite"
    run_cli("init", "--no-seed", db=db)
    run_cli("reference", *map(str, sorted((ROOT / "data" / "reference").glob("*.toml"))), db=db)
    slower, many = copy.deepcopy(record), copy.deepcopy(record)
    slower["tokens_per_second"], slower["source"]["quote"] = 57.1, "| tg32 | 57.1 ± 0.2 |"
    slower["lengths"]["context_depth"] = 4096
    many["tokens_per_second"], many["source"]["quote"] = 200, "| 4 | S_TG 200 |"
    many["concurrency"] = {"users": 4, "figure": "aggregate"}
    run_cli("add", str(write_jsonl(tmp_path / "r.jsonl", [slower, many, record])), db=db)
    return db


@pytest.mark.parametrize("argv", [["-h"], ["validate", "-h"], ["compare", "-h"], ["tables", "-h"]])
def test_dash_h_is_help_everywhere(argv):
    result = run_cli(*argv)
    assert result.stdout.startswith("Usage: tpsdb")


def test_compare_ranks_the_figures_with_their_conditions_and_the_calculation(small_db):
    out = run_cli("compare", "--hardware", "nvidia dgx spark", "--model", "GPT-OSS 120B", db=small_db).stdout
    lines = out.splitlines()
    assert lines[0] == "gpt-oss 120B on NVIDIA DGX Spark" and "3 measured figures" in lines[1]
    ranked = [line for line in lines if line.startswith("  ") and "generation" in line]
    assert [line.split()[1] for line in ranked] == ["59.02", "57.1", "200"]  # one user first, fastest first
    assert "depth 4096" in ranked[1] and "4 aggregate" in ranked[2] and "b6918 (2f68ce7cf)" in ranked[0]
    assert "calc. maximum, MXFP4 file 63.37 GB: 98.69 tokens/s per user (CALCULATION" in out
    data = json.loads(run_cli("compare", "--hardware", "NVIDIA DGX Spark", "--model", "gpt-oss 120B",
                              "--format", "json", db=small_db).stdout)
    assert [f["tokens_per_second"] for f in data["figures"]] == [59.02, 57.1, 200]
    assert data["calculations"][0]["per_user_tps"] == 98.69


def test_compare_says_clearly_when_nothing_was_measured(small_db):
    result = run_cli("compare", "--hardware", "Apple M2 Ultra (76-core GPU)", "--model", "gpt-oss 120B",
                     "--quantization", "MXFP4", db=small_db, check=False)
    assert result.returncode == 1
    assert "nothing measured: no accepted figure of this model on this machine" in result.stdout
    assert "measured on: NVIDIA DGX Spark" in result.stdout
    assert "calc. maximum, MXFP4" in result.stdout  # computed, or why not
    unknown = run_cli("compare", "--hardware", "M2 Ultra", "--model", "gpt-oss 120B", db=small_db, check=False)
    assert unknown.returncode == 2 and "Did you mean" in unknown.stderr


def test_an_import_of_nothing_new_exits_0(empty_db, tmp_path):
    path = tokatlas_slice(tmp_path)
    assert run_cli("import", "tokatlas", str(path), db=empty_db, check=False).returncode == 1  # new rejections
    again = run_cli("import", "tokatlas", str(path), db=empty_db, check=False)
    assert again.returncode == 0, again.stdout
    assert "0 measurements added" in again.stdout and "0 rejections added" in again.stdout




def test_withdraw_keeps_the_figure_in_the_history_with_why(small_db):
    before = json.loads(run_cli("compare", "--hardware", "NVIDIA DGX Spark", "--model", "gpt-oss 120B", "--format",
                                "json", db=small_db).stdout)
    first = before["figures"][0]["measurement_id"]
    done = run_cli("withdraw", str(first), "--why", "wrong machine", db=small_db)
    assert f"withdrew figure {first} (59.02 tokens/s" in done.stdout
    after = json.loads(run_cli("compare", "--hardware", "NVIDIA DGX Spark", "--model", "gpt-oss 120B", "--format",
                               "json", db=small_db).stdout)
    assert [f["tokens_per_second"] for f in after["figures"]] == [57.1, 200]
    history = json.loads(run_cli("query", f"select m.status, w.why from measurement m join withdrawal w on "
                                 f"w.measurement_id = m.id where m.id = {first}", "--format", "json",
                                 db=small_db).stdout)
    assert history == [{"status": "withdrawn", "why": "wrong machine"}]
    again = run_cli("withdraw", str(first), "--why", "again", db=small_db, check=False)
    assert again.returncode == 2 and "already withdrawn" in again.stderr
    for argv in (["999", "--why", "x"], [str(first + 1), "--why", "   "], [str(first + 1), "--why", "a\nb"]):
        refused = run_cli("withdraw", *argv, db=small_db, check=False)
        assert refused.returncode == 2 and refused.stderr.startswith("error: "), argv


def test_withdraw_refuses_a_figure_that_refresh_would_read_again(tmp_path, small_db):
    import sqlite3

    with sqlite3.connect(small_db) as conn:
        conn.execute("update source set key = 'llamacpp-16578'")
    refused = run_cli("withdraw", "1", "--why", "wrong", db=small_db, check=False)
    assert refused.returncode == 2 and "which `tpsdb refresh` reads" in refused.stderr


LLAMA_BENCH_MD = """| model                          |       size |     params | backend    | ngl |          test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | ------------: | -------------------: |
| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | CUDA       |  99 |         tg128 |        152.93 ± 0.12 |

build: 7b5c3a1f0 (7120)
"""


def test_ingest_says_where_figures_on_another_file_show(tmp_path, small_db):
    """llama-bench's 3.96 GiB (4.25 GB, 12 % more) Q4_0 is not the 3.79 GB file the reference cites (3.56 GiB =
    3.82 GB would be that file: tpsdb.files): the tables leave such figures out, and ingest says so and where they
    show (first-use review, H3)."""
    path = tmp_path / "my-4090.md"
    path.write_text(LLAMA_BENCH_MD.replace("3.56 GiB", "3.96 GiB"), encoding="utf-8")
    done = run_cli("ingest", str(path), "--source-url", "https://example.org/my-4090", "--hardware",
                   "NVIDIA GeForce RTX 4090", "--model", "Llama 2 7B", db=small_db)
    assert "note: Llama 2 7B Q4_0 4.25 GB is not the file the reference cites (3.79 GB;" in done.stderr
    assert done.stderr.count("note:") == 1 and "tpsdb compare" in done.stderr
    shown = run_cli("compare", "--hardware", "nvidia geforce rtx 4090", "--model", "llama 2 7b", db=small_db).stdout
    assert "152.93 ± 0.12  generation  Q4_0 (4.25)" in shown


def test_validate_into_a_closed_pipe_blames_no_input_file(tmp_path, record):
    """`tpsdb validate FILE | head -1`: the reader stopping early is not a broken input file (first-use review, M8)."""
    import os
    import subprocess
    import sys

    from conftest import ROOT

    bad = []
    for i in range(3000):
        r = json.loads(json.dumps(record))
        r["quantization"], r["software"]["options"]["run"] = "4-bit", i
        bad.append(r)
    path = write_jsonl(tmp_path / "bad.jsonl", bad)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(f"{sys.executable} -m tpsdb validate {path} --db {tmp_path / 'none.sqlite'} | head -1",
                          shell=True, capture_output=True, text=True, env=env, timeout=120)
    assert done.stdout.count("\n") == 1 and "Broken pipe" not in done.stderr and "bad.jsonl: " not in done.stderr


def test_export_out_writes_the_same_bytes_as_standard_output(tmp_path, small_db):
    """--out names where output goes, as for tables, publish and export-seed (issue 20: one meaning for --out)."""
    out = tmp_path / "figures.csv"
    done = run_cli("export", "--format", "csv", "--out", str(out), db=small_db)
    assert done.stdout == "" and f"wrote 3 figures in {out}" in done.stderr
    assert out.read_text(encoding="utf-8") == run_cli("export", "--format", "csv", db=small_db).stdout
