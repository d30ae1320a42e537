"""D11 and D14 on PostgreSQL (the server of conftest.py's fixture): a conflicting model fact is refused, and
a second add waits for the first through an advisory lock, or exits 3."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time

import psycopg

from conftest import ROOT, run_cli, runs, write_jsonl
from tpsdb.store import WRITE_LOCK_KEY

ENV_PATH = {"PYTHONPATH": str(ROOT)}


def test_d11_a_conflicting_params_b_is_refused_on_postgres(pg_url, tmp_path, record):
    run_cli("init", "--no-seed", "--db", pg_url)
    other = copy.deepcopy(record)
    other["model"]["params_b"] = 120
    other["stddev"] = 0.18
    path = write_jsonl(tmp_path / "c.jsonl", [record, other])
    result = run_cli("add", str(path), "--db", pg_url, check=False)
    assert result.returncode == 1
    assert f"{path}:2: model.params_b: 120 conflicts with 116.83 already stored for gpt-oss 120B" in result.stdout
    assert "1 measurements added, 0 already stored; 1 rejections added" in result.stdout


def test_d14_a_second_add_waits_for_the_first_or_exits_3_on_postgres(pg_url, tmp_path, record):
    run_cli("init", "--no-seed", "--db", pg_url)
    path = write_jsonl(tmp_path / "same.jsonl", runs(record, 500))
    with psycopg.connect(pg_url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (WRITE_LOCK_KEY,))
        busy = run_cli("add", str(path), "--timeout", "0.5", "--db", pg_url, check=False)
        assert busy.returncode == 3 and busy.stderr.startswith("error: ") and busy.stderr.count("\n") == 1
        assert "busy" in busy.stderr
        adds = [subprocess.Popen([sys.executable, "-m", "tpsdb", "add", str(path), "--db", pg_url], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, **ENV_PATH}) for _ in range(2)]
        time.sleep(4)
        assert [a.poll() for a in adds] == [None, None]
        holder.execute("SELECT pg_advisory_unlock(%s)", (WRITE_LOCK_KEY,))
    outputs = [a.communicate(timeout=120) for a in adds]
    assert [a.returncode for a in adds] == [0, 0], outputs
    assert sorted(out for out, _ in outputs) == [
        "0 measurements added, 500 already stored; 0 rejections added, 0 already stored\n",
        "500 measurements added, 0 already stored; 0 rejections added, 0 already stored\n"]
