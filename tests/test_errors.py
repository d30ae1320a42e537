"""Failures end in ONE `error:` line naming the database or file and what to do, never a traceback, and change
nothing (reliability probe 2026-12-01: D10, D12, D13, D19, F3-F20). Real SQLite files; tmpfs mounts where the
probe needs a full or read-only disk (skipped where mounting is not permitted)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import shutil
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlmodel import SQLModel

from conftest import ROOT, SEED_MEASUREMENTS, run_cli, write_jsonl
from tpsdb import cli, db
from tpsdb.output import spreadsheet_safe


def tpsdb(capsys, *args: str, env: dict | None = None) -> tuple[int, str, str]:
    """`tpsdb ARGS` in this process through the real entry point (cli.main): (exit code, stdout, stderr)."""
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        with pytest.raises(SystemExit) as ended:
            cli.main(list(args))
    finally:
        for key, value in old.items():
            os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)
    out, err = capsys.readouterr()
    return ended.value.code or 0, out, err


def one_error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, err
    return lines[0]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def count(path, table: str = "measurement") -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, seeded_template):
    return Path(shutil.copy(seeded_template, tmp_path_factory.mktemp("seeded") / "seeded.sqlite"))


# ---------------------------------------------------------------------------------- damaged databases
def _random_bytes(path, seeded):
    path.write_bytes(random.Random(1).randbytes(400_000))


def _truncated(path, seeded):
    path.write_bytes(seeded.read_bytes()[:100_000])


def _bit_flipped(path, seeded):
    data = bytearray(seeded.read_bytes())
    rng = random.Random(3)
    for _ in range(200):
        data[rng.randrange(4096, len(data))] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_random_bytes, _truncated, _bit_flipped])
def test_d13_corrupt_truncated_or_bit_flipped_database_is_one_error_line(tmp_path, seeded, capsys, damage):
    path = tmp_path / "damaged.sqlite"
    damage(path, seeded)
    before = digest(path)
    for command in (["summary"], ["export"], ["init"], ["tables", "machines"], ["export-seed", "--out",
                                                                                 str(tmp_path / "s.sql")]):
        code, _, err = tpsdb(capsys, *command, "--db", str(path))
        line = one_error_line(err)
        assert code == 2 and line.startswith(f"error: {path}: not a tpsdb database or corrupt ("), (command, err)
    assert digest(path) == before


def test_d13_a_foreign_sqlite_database_is_refused_by_init(tmp_path, capsys):
    path = tmp_path / "foreign.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE foo (a)")
        conn.commit()
    before = digest(path)
    code, _, err = tpsdb(capsys, "init", "--db", str(path))
    assert code == 2
    assert one_error_line(err) == f"error: {path} holds other tables (foo); refusing to add tpsdb's schema"
    assert digest(path) == before


def test_d13_an_unexpected_failure_is_one_line_and_the_traceback_needs_debug(tmp_path, seeded, capsys, monkeypatch):
    def broken(engine):
        raise RuntimeError("something nobody foresaw")

    monkeypatch.setattr(db, "dump_seed", broken)
    args = ("export-seed", "--out", str(tmp_path / "s.sql"), "--db", str(seeded))
    code, _, err = tpsdb(capsys, *args)
    assert code == 4  # an internal error: its own code (issue 13 item 5)
    assert one_error_line(err).startswith("error: internal error (RuntimeError: something nobody foresaw) on ")
    assert "--debug" in err
    for debug_args, env in ((("--debug",), None), ((), {"TPSDB_DEBUG": "1"})):
        code, _, err = tpsdb(capsys, *debug_args, *args, env=env)
        assert code == 4 and "Traceback (most recent call last)" in err and "error: internal error" in err
    assert not (tmp_path / "s.sql").exists()


# -------------------------------------------------------------------------------------------- D10: init
def test_d10_an_interrupted_init_leaves_nothing_and_a_rerun_completes(tmp_path, capsys):
    """A full disk in the middle of the migration (SQLite's page limit is exactly that error) rolls everything back."""
    path = tmp_path / "full.sqlite"
    engine = db.create_database(str(path))

    @event.listens_for(engine, "connect")
    def _tiny_disk(dbapi_connection, _record):
        dbapi_connection.execute("PRAGMA max_page_count = 12")

    with pytest.raises(Exception, match="database or disk is full") as raised:
        db.init_database(engine, None)
    assert db.explain(raised.value)[0].startswith(f"{path}: disk full (database or disk is full); nothing was changed")
    engine.dispose()
    assert count(path, "sqlite_master") == 0  # not one table of a half-built schema
    code, out, _ = tpsdb(capsys, "init", "--db", str(path))
    assert code == 0 and f"measurements: {SEED_MEASUREMENTS} active" in out


def test_d10_init_repairs_the_half_built_schema_an_older_tpsdb_left(tmp_path, capsys):
    path = tmp_path / "half.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as conn:  # what a kill inside the old migration left (F3, F5)
        for name in ("source", "hardware", "model"):
            conn.execute(str(__import__("sqlalchemy").schema.CreateTable(SQLModel.metadata.tables[name])
                             .compile(dialect=__import__("sqlalchemy").dialects.sqlite.dialect())))
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
        conn.commit()
    code, out, err = tpsdb(capsys, "init", "--db", str(path))
    assert code == 0, err
    assert f"measurements: {SEED_MEASUREMENTS} active" in out and count(path) == SEED_MEASUREMENTS


def test_d10_init_never_drops_data_of_a_schema_without_revision(seeded_db, capsys):
    path = seeded_db
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("DELETE FROM alembic_version")
        conn.commit()
    code, _, err = tpsdb(capsys, "init", "--db", str(path))
    assert code == 2 and "tpsdb tables with data but no schema revision; refusing to touch them" in one_error_line(err)
    assert count(path) == SEED_MEASUREMENTS


def test_d10_two_inits_at_once_both_end_well_with_one_seed(tmp_path):
    """F8: the second waits for the first (one write transaction), then finds nothing left to do."""
    for attempt in range(3):
        path = tmp_path / f"twice{attempt}.sqlite"
        command = [sys.executable, "-m", "tpsdb", "init", "--db", str(path)]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                for _ in range(2)]
        results = [(run.wait(timeout=120), run.stderr.read()) for run in runs]
        for run in runs:
            run.stdout.close(), run.stderr.close()
        assert [code for code, _ in results] == [0, 0], results
        assert sum("loaded seed.sql" in err for _, err in results) == 1
        assert count(path) == SEED_MEASUREMENTS


# Room for a seeded database, sized from the seed it is built from: the SQLite file is about 1.1x the seed's SQL
# (a 84 MB seed.sql gives a 92 MB file, its WAL folded in as init ends); twice the seed leaves that headroom.
MIB = 1024 * 1024
TMPFS_BYTES = max(32 * MIB, -(-2 * (ROOT / "data" / "seed.sql").stat().st_size // MIB) * MIB)


@pytest.fixture
def tmpfs(tmp_path):
    """A small tmpfs (for a full or a read-only disk); skipped where mounting is not permitted (not root)."""
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(mount_point)],
                      capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs is not permitted here (needs root)")
    try:
        yield mount_point
    finally:
        db.close_all()
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def test_d10_init_on_a_full_disk_changes_nothing_and_a_rerun_recovers(tmpfs, capsys):
    """F5 with a real full filesystem."""
    filler = tmpfs / "fill"
    filler.write_bytes(b"\0" * (TMPFS_BYTES - 100 * 1024))
    path = tmpfs / "i.sqlite"
    code, _, err = tpsdb(capsys, "init", "--db", str(path))
    assert code == 2
    assert one_error_line(err).startswith(f"error: {path}: disk full (database or disk is full); nothing was changed")
    assert count(path, "sqlite_master") == 0
    filler.unlink()
    code, out, err = tpsdb(capsys, "init", "--db", str(path))
    assert code == 0 and f"measurements: {SEED_MEASUREMENTS} active" in out, err


def test_d13_add_on_a_full_disk_is_one_error_line(tmpfs, capsys, tmp_path, record):
    path = tmpfs / "a.sqlite"
    run_cli("init", "--no-seed", db=path)
    records = []
    for i in range(3000):
        r = json.loads(json.dumps(record))
        r["tokens_per_second"] = round(40 + i * 0.01, 2)
        r["source"]["quote"] = f"| gpt-oss 120B MXFP4 MoE | tg32 | {r['tokens_per_second']:.2f} ± 0.17 |"
        records.append(r)
    (tmpfs / "fill").write_bytes(b"\0" * (TMPFS_BYTES - path.stat().st_size - 300 * 1024))
    code, _, err = tpsdb(capsys, "add", str(write_jsonl(tmp_path / "many.jsonl", records)), "--db", str(path))
    assert code == 2 and f"error: {path}: disk full" in one_error_line(err)
    assert count(path) == 0


def test_d13_read_only_filesystem_reads_work_and_writes_are_refused(tmpfs, seeded, capsys, record, tmp_path):
    """F9: even the read commands failed (WAL needs its -shm file); F10: writes refused clearly."""
    path = tmpfs / "r.sqlite"
    path.write_bytes(seeded.read_bytes())
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)
    code, out, err = tpsdb(capsys, "summary", "--db", str(path))
    assert code == 0 and f"measurements: {SEED_MEASUREMENTS} active" in out, err
    code, out, _ = tpsdb(capsys, "export", "--db", str(path))
    assert code == 0 and len(out.splitlines()) == SEED_MEASUREMENTS
    code, _, err = tpsdb(capsys, "add", str(write_jsonl(tmp_path / "r.jsonl", [record])), "--db", str(path))
    assert code == 2
    assert one_error_line(err) == f"error: {path} is read-only: attempt to write a readonly database; nothing was changed"


# ------------------------------------------------------------------------------- D19: reads create nothing
READ_COMMANDS = [["summary"], ["export"], ["export", "--format", "csv"], ["tables"], ["publish", "--out", "{tmp}/site"],
                 ["ceiling", "--hardware", "H", "--model", "M", "--quantization", "Q4_0"], ["export-seed", "--out",
                                                                                      "{tmp}/seed.sql"]]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=lambda c: " ".join(c[:3]))
def test_d19_read_commands_on_a_missing_database_create_nothing(tmp_path, capsys, command):
    path = tmp_path / "typo" / "deeper" / "x.sqlite"
    args = [a.replace("{tmp}", str(tmp_path)) for a in command]
    code, _, err = tpsdb(capsys, *args, "--db", str(path))
    assert code == 2
    assert one_error_line(err) == (f"error: {path} does not exist; run `tpsdb init --db {path}` to create a "
                                   "database there")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_d19_add_on_a_missing_database_and_proc_paths(tmp_path, capsys, record):
    records = write_jsonl(tmp_path / "r.jsonl", [record])
    code, _, err = tpsdb(capsys, "add", str(records), "--db", str(tmp_path / "no" / "x.sqlite"))
    assert code == 2 and "does not exist" in one_error_line(err)
    assert not (tmp_path / "no").exists()
    code, _, err = tpsdb(capsys, "summary", "--db", "/proc/x/y.sqlite")
    assert code == 2 and one_error_line(err).startswith("error: /proc/x/y.sqlite does not exist")
    code, _, err = tpsdb(capsys, "init", "--db", "/proc/x/y.sqlite")
    assert code == 2 and one_error_line(err) == "error: /proc/x/y.sqlite: cannot create its folder (No such file or directory)"


# ------------------------------------------------------------------------------------- D12: odd URLs
def test_d12_a_sqlite_path_with_hash_at_and_percent_escapes_is_that_file(tmp_path, capsys):
    path = tmp_path / "a#b@c%41 d.sqlite"
    code, out, err = tpsdb(capsys, "init", "--no-seed", "--db", str(path))
    assert code == 0, err
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".sqlite") == ["a#b@c%41 d.sqlite"]
    code, out, _ = tpsdb(capsys, "summary", "--db", str(path))
    assert code == 0 and "measurements: 0 active" in out


# ------------------------------------------------------------------------------------ server failures
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_d13_an_unreachable_postgresql_server_is_one_error_line(capsys):
    url = f"postgresql+psycopg://someone:secret@127.0.0.1:{_free_port()}/tpsdb"
    for command in ("summary", "init"):
        code, _, err = tpsdb(capsys, command, "--db", url)
        line = one_error_line(err)
        assert code == 2 and "the PostgreSQL server is not reachable" in line and "secret" not in line


def test_d13_a_missing_driver_says_what_to_install(capsys):
    code, _, err = tpsdb(capsys, "summary", "--db", "postgresql+pg8000://u@127.0.0.1/x")
    assert code == 2 and "pip install '.[postgres]'" in one_error_line(err)


# --------------------------------------------------------------------------------------- D20: export
def test_d20_csv_export_neutralises_formulas_but_keeps_numbers(tmp_path, capsys, record):
    record["source"]["author"] = "=HYPERLINK(\"https://evil.example\",\"x\")"
    record["software"]["options"] = {"backend": "CUDA", "ngl": 99, "fa": 1}
    record["source"]["quote"] = "@SUM(1+1) " + record["source"]["quote"]
    path = tmp_path / "f.sqlite"
    run_cli("init", "--no-seed", db=path)
    run_cli("add", str(write_jsonl(tmp_path / "r.jsonl", [record])), db=path)
    code, out, _ = tpsdb(capsys, "export", "--format", "csv", "--db", str(path))
    assert code == 0
    import csv
    row = next(csv.DictReader(out.splitlines()))
    assert row["source.author"] == "'=HYPERLINK(\"https://evil.example\",\"x\")"
    assert row["source.quote"].startswith("'@SUM(1+1) ")
    assert row["tokens_per_second"] == "59.02"
    assert not any(value.startswith(("=", "+", "@", "\t", "\r")) for value in row.values())


def test_d20_spreadsheet_safe_cells():
    assert spreadsheet_safe("=1+2") == "'=1+2"
    assert spreadsheet_safe("+1+cmd|' /C calc'!A0") == "'+1+cmd|' /C calc'!A0"
    assert spreadsheet_safe("-1+cmd") == "'-1+cmd"
    assert spreadsheet_safe("@SUM(A1)") == "'@SUM(A1)"
    assert spreadsheet_safe("\t=x") == "'\t=x" and spreadsheet_safe("\r=x") == "'\r=x"
    # a negative number is not a formula: it stays the number a spreadsheet reads
    assert spreadsheet_safe(-3.5) == -3.5 and spreadsheet_safe("-3.5") == "-3.5" and spreadsheet_safe("-1e-3") == "-1e-3"
    assert spreadsheet_safe("NVIDIA DGX Spark") == "NVIDIA DGX Spark" and spreadsheet_safe(None) is None


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_d20_export_never_writes_infinity_or_nan(tmp_path, capsys, record, fmt):
    path = tmp_path / "inf.sqlite"
    run_cli("init", "--no-seed", db=path)
    run_cli("add", str(write_jsonl(tmp_path / "r.jsonl", [record])), db=path)
    with contextlib.closing(sqlite3.connect(path)) as conn:  # what the old validator let in (D3)
        conn.execute("UPDATE measurement SET tokens_per_second = 1e999")
        conn.commit()
    code, out, err = tpsdb(capsys, "export", "--format", fmt, "--db", str(path))
    assert code == 2 and "Infinity" not in out and "inf" not in out.lower().replace("info", "")
    assert one_error_line(err).startswith("error: export: record 1 (source https://github.com/ggml-org/llama.cpp/"
                                          "discussions/16578) holds a non-finite number")
