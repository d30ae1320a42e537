"""Shared test helpers: a valid record to mutate, and the CLI run as a real subprocess on a real SQLite file."""

from __future__ import annotations

import copy
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# How many figures the curated seed holds (all active): tests of init and of the seeded database compare with it.
SEED_MEASUREMENTS = sum(1 for line in (ROOT / "data" / "seed.sql").open(encoding="utf-8")
                        if line.startswith("INSERT INTO measurement "))

VALID_RECORD = {
    "source": {
        "url": "https://github.com/ggml-org/llama.cpp/discussions/16578",
        "retrieved_at": "2026-09-06",
        "published_at": "2025-11-02",
        "author": None,
        "quote": "| gpt-oss 120B MXFP4 MoE | 59.02 GiB | 116.83 B | CUDA | 99 | 2048 | 1 | 0 | tg32 | 59.02 ± 0.17 |",
    },
    "hardware": {"name": "NVIDIA DGX Spark"},
    "model": {"name": "gpt-oss 120B", "params_b": 116.83, "file_size_gb": 63.37},
    "quantization": "MXFP4",
    "software": {"name": "llama.cpp", "version": "b6918 (2f68ce7cf)", "options": {"backend": "CUDA", "ngl": 99, "fa": 1}},
    "lengths": {"prompt_tokens": 0, "generated_tokens": 32, "context_depth": 0},
    "concurrency": {"users": 1, "figure": "per_user"},
    "nature": {"kind": "measured", "procedure": "llama-bench -fa 1 -p 2048 -n 32 -ub 2048"},
    "phase": "generation",
    "tokens_per_second": 59.02,
    "stddev": 0.17,
}


@pytest.fixture
def record():
    return copy.deepcopy(VALID_RECORD)


def run_cli(*args: str, db: Path | None = None, check: bool = True, env: dict | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m tpsdb ARGS` in a subprocess, as a user would run it."""
    command = [sys.executable, "-m", "tpsdb", *args]
    if db is not None:
        command += ["--db", str(db)]
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    full_env.pop("TPSDB_DATABASE_URL", None) if db is not None else None
    result = subprocess.run(command, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=ROOT)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def empty_db(tmp_path) -> Path:
    """A migrated database without the seed."""
    path = tmp_path / "empty.sqlite"
    run_cli("init", "--no-seed", db=path)
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def postgres():
    """A throw-away PostgreSQL server on 127.0.0.1, for the session: (bindir, as_user, port)."""
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not binaries:
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    bindir = os.path.dirname(binaries[-1])
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: initdb refuses root")
    workdir = tempfile.mkdtemp(prefix="tpsdb-pg-")
    if as_user:
        shutil.chown(workdir, "postgres")
    port = _free_port()
    data = os.path.join(workdir, "data")
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres"], check=True,
                   capture_output=True)
    subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(workdir, "log"), "-w", "-o",
                              f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                   check=True, capture_output=True)
    try:
        yield bindir, as_user, port
    finally:
        subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def pg_url(postgres, request):
    bindir, as_user, port = postgres
    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "")[:40]
    subprocess.run(as_user + [f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", name],
                   check=True, capture_output=True)
    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/{name}"
