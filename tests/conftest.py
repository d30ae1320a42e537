"""Shared test helpers: a valid record to mutate, and the CLI run on a real SQLite file (in this process, or as a
real subprocess)."""

from __future__ import annotations

import copy
import fcntl
import gc
import glob
import io
import json
import os
import shutil
import socket
import subprocess
import subprocess as subprocess_  # run_cli's `subprocess` argument hides the module's name there
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# No test reads the checkout's own database: the README's first set-up command builds data/tpsdb.sqlite, and its
# second (the suite) must then pass as it does on a fresh clone (first-use review, H5). A command run without --db
# finds no database here, as on a clone where `tpsdb init` has not run.
os.environ["TPSDB_DATABASE_URL"] = str(Path(tempfile.mkdtemp(prefix="tpsdb-tests-")) / "absent.sqlite")

# How many figures the curated seed holds (all active): tests of init and of the seeded database compare with it.
SEED_MEASUREMENTS = sum(1 for line in (ROOT / "data" / "seed.sql").open(encoding="utf-8")
                        if line.startswith("INSERT INTO measurement "))

# The files whose tests take longest (measured: `pytest --durations`), run first. With `--dist loadfile` a worker takes
# a whole file at a time; the longest ones started last would leave one worker running alone at the end (longest
# first is the usual remedy). Only the order changes: every test still runs, each file's tests in their order.
LONGEST_FIRST = ("test_ingest.py", "test_postgres.py", "test_readme_examples.py", "test_errors.py",
                 "test_site_browser.py", "test_hostile_records.py", "test_round_trip.py", "test_serve.py")


def pytest_collection_modifyitems(items: list) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the others keep their order


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
            timeout: float = 120, subprocess: bool = False) -> subprocess_.CompletedProcess:
    """`tpsdb ARGS` as a user would run it, from the checkout's folder; `db` adds `--db` (and hides
    $TPSDB_DATABASE_URL), `env` adds environment variables.

    In this process by default (tpsdb.cli.main with its own standard streams, environment and folder, restored
    after): ~0.05 s instead of ~1 s a command. `subprocess=True` runs `python -m tpsdb` for real, for what only a
    process shows (its exit, its interpreter's start, signals, other processes at the same time).
    """
    argv = [*args, *(["--db", str(db)] if db is not None else [])]
    overrides = {**(env or {}), **({"TPSDB_DATABASE_URL": None} if db is not None else {})}
    result = _subprocess_cli(argv, overrides, timeout) if subprocess else _in_process_cli(argv, overrides)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {result.returncode}\nstdout:\n{result.stdout}\n"
                             f"stderr:\n{result.stderr}")
    return result


def _subprocess_cli(argv: list[str], overrides: dict, timeout: float) -> subprocess_.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **overrides}
    env = {key: value for key, value in env.items() if value is not None}
    return subprocess_.run([sys.executable, "-m", "tpsdb", *argv], capture_output=True, text=True, env=env,
                           timeout=timeout, cwd=ROOT)


def _in_process_cli(argv: list[str], overrides: dict) -> subprocess_.CompletedProcess:
    """tpsdb.cli.main(argv) with what a new process would have had: empty standard input, UTF-8 output read back
    as subprocess.run(text=True) reads it, the environment, the folder, and nothing left from an earlier call."""
    import tpsdb.cli
    import tpsdb.db

    out, err = io.BytesIO(), io.BytesIO()
    streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_env = {key: os.environ.get(key) for key in overrides}
    folder = os.getcwd()
    # Kept in locals until read: a wrapper closes its BytesIO when it goes.
    stdin = sys.stdin = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    stdout = sys.stdout = io.TextIOWrapper(out, encoding="utf-8", errors="surrogateescape", write_through=True)
    stderr = sys.stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True)
    _set_env(overrides)
    os.chdir(ROOT)
    tpsdb.cli._debug = False
    tpsdb.db._last_name = None  # the database an error far from its engine names: none yet, as in a new process
    try:
        tpsdb.cli.main(argv)
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        if isinstance(stop.code, str):
            stderr.write(stop.code + "\n")
    finally:
        stdout.flush()
        stderr.flush()
        sys.stdin, sys.stdout, sys.stderr = streams
        _set_env(saved_env)
        os.chdir(folder)
        gc.unfreeze()  # main() freezes what exists at its end, as a process about to exit may; here it lives on

    def text(raw: io.BytesIO) -> str:  # universal newlines, as subprocess's text mode
        return io.TextIOWrapper(io.BytesIO(raw.getvalue()), encoding="utf-8", errors="replace").read()

    result = subprocess_.CompletedProcess(["tpsdb", *argv], code, text(out), text(err))
    del stdin, stdout, stderr
    return result


def _set_env(values: dict) -> None:
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def runs(record: dict, count: int) -> list[dict]:
    """`count` copies of a record, each a figure of its own (software.options.run = 0, 1, …)."""
    many = []
    for i in range(count):
        r = copy.deepcopy(record)
        r["software"]["options"]["run"] = i
        many.append(r)
    return many


def write_jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _built_once(tmp_path_factory, name: str, *init_args: str) -> Path:
    """`tpsdb init INIT_ARGS` on a database built once for the whole run and shared by the worker processes (the
    first to ask builds it under a lock, the others wait for it); tests copy it, never open it."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the workers' common folder
    path = shared / f"{name}.sqlite"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            building = shared / f"{name}.building.sqlite"
            building.unlink(missing_ok=True)
            run_cli("init", *init_args, db=building)
            os.replace(building, path)  # whole or absent: a worker never copies a half-built file
    return path


@pytest.fixture(scope="session")
def seeded_template(tmp_path_factory) -> Path:
    """The database `tpsdb init` builds with the curated seed (~4 s of one core to load 84 MB of SQL): built once,
    copied by `seeded_db` and by module fixtures. A test of init itself runs init."""
    return _built_once(tmp_path_factory, "seeded-template")


@pytest.fixture(scope="session")
def empty_template(tmp_path_factory) -> Path:
    """The database `tpsdb init --no-seed` builds (the migrations run once, not once a test)."""
    return _built_once(tmp_path_factory, "empty-template", "--no-seed")


@pytest.fixture
def seeded_db(tmp_path, seeded_template) -> Path:
    """A copy of the seeded database, the test's own to change."""
    return Path(shutil.copy(seeded_template, tmp_path / "seeded.sqlite"))


@pytest.fixture
def empty_db(tmp_path, empty_template) -> Path:
    """A migrated database without the seed (a copy of what `tpsdb init --no-seed` builds)."""
    return Path(shutil.copy(empty_template, tmp_path / "empty.sqlite"))


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


def _createdb(postgres, name: str, *options: str) -> str:
    bindir, as_user, port = postgres
    subprocess.run(as_user + [f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", *options,
                              name], check=True, capture_output=True)
    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/{name}"


@pytest.fixture
def pg_url(postgres, request):
    return _createdb(postgres, "t_" + request.node.name.lower().replace("[", "_").replace("]", "")[:40])


@pytest.fixture(scope="session")
def pg_seeded_template(postgres) -> str:
    """The name of a PostgreSQL database `tpsdb init` loaded the seed into, once for the session (about as long as
    on SQLite, and the server's work on top); `pg_seeded_url` copies it."""
    run_cli("init", "--db", _createdb(postgres, "tpsdb_seeded"))
    return "tpsdb_seeded"


@pytest.fixture
def pg_seeded_url(postgres, pg_seeded_template, request):
    """A copy of the seeded PostgreSQL database (`createdb -T`: the server copies its files), the test's own."""
    return _createdb(postgres, "s_" + request.node.name.lower()[:40], "-T", pg_seeded_template)
