"""`tpsdb add` and `validate` as a user runs them: standard input and pipes, empty files, byte-order marks, a file
changed under a running add, facts that conflict with stored ones, two adds at once, and the exit codes."""

from __future__ import annotations

import contextlib
import copy
import faulthandler
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT, run_cli, runs, write_jsonl
from tpsdb import bulk, cli
from tpsdb.record import RecordFileError


def tpsdb(*args: str, input: str | None = None):
    """The command in this process (typer's runner): exit code, stdout, stderr."""
    return CliRunner().invoke(cli.app, list(args), input=input)


def command(*args: str, db: Path, **popen) -> list[str]:
    return [sys.executable, "-m", "tpsdb", *args, "--db", str(db)]


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def exported(db: Path) -> list[dict]:
    return [json.loads(line) for line in tpsdb("export", "--db", str(db)).stdout.splitlines()]


def rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


# ------------------------------------------------------------------------------------------ D9: pipes and -
def test_d9_records_from_standard_input_a_pipe_and_a_fifo_are_read(tmp_path, empty_db, record):
    text = json.dumps(record) + "\n"
    for name in ("/dev/stdin", "-"):
        piped = subprocess.run(command("validate", name, db=empty_db), input=text, capture_output=True, text=True,
                               env=ENV, cwd=ROOT)
        assert piped.returncode == 0 and "1 accepted, 0 rejected" in piped.stderr, piped.stderr
    added = subprocess.run(command("add", "/dev/stdin", db=empty_db), input=text, capture_output=True, text=True,
                           env=ENV, cwd=ROOT)
    assert added.returncode == 0 and "1 measurements added" in added.stdout, added.stderr
    fifo = tmp_path / "records.fifo"
    os.mkfifo(fifo)
    record["tokens_per_second"] = 58.0
    record["source"]["quote"] = "tg32 | 58.00 ± 0.2"
    writer = threading.Thread(target=lambda: fifo.write_text(json.dumps(record) + "\n", encoding="utf-8"))
    writer.start()
    result = tpsdb("add", str(fifo), "--db", str(empty_db))
    writer.join()
    assert result.exit_code == 0 and "1 measurements added" in result.stdout, result.output
    result = tpsdb("add", "-", "--db", str(empty_db), input=text)
    assert "0 measurements added, 1 already stored" in result.stdout
    assert [r["tokens_per_second"] for r in exported(empty_db)] == [59.02, 58.0]


# ------------------------------------------------------------------------------- D22: empty files, BOM
def test_d22_an_empty_or_blank_file_is_a_warning_naming_it(tmp_path, empty_db):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.json"
    blank.write_text(" \n\t\r\n", encoding="utf-8")
    for path in (empty, blank):
        for name in ("validate", "add"):
            result = tpsdb(name, str(path), "--db", str(empty_db))
            assert result.exit_code == 0
            assert result.stderr.splitlines()[0] == f"warning: 0 records in {path}"


def test_d22_a_utf8_byte_order_mark_is_accepted_in_json_and_jsonl(tmp_path, empty_db, record):
    second = copy.deepcopy(record)
    second["stddev"] = 0.18
    document = tmp_path / "bom.json"
    document.write_bytes(b"\xef\xbb\xbf" + json.dumps(record, indent=2).encode())
    lines = tmp_path / "bom.jsonl"
    lines.write_bytes(b"\xef\xbb\xbf" + (json.dumps(record) + "\r\n" + json.dumps(second) + "\r\n").encode())
    assert tpsdb("validate", str(document), "--db", str(empty_db)).exit_code == 0
    result = tpsdb("add", str(document), str(lines), "--db", str(empty_db))
    assert result.exit_code == 0, result.output
    assert "2 measurements added, 1 already stored" in result.stdout


# ---------------------------------------------------------------- F2: a file changed under a running add
def large_file(path: Path, record: dict) -> Path:
    return write_jsonl(path, runs(record, bulk.PARALLEL_MIN_BYTES // len(json.dumps(record)) + 2000))


def read_while(path: Path, change, monkeypatch) -> None:
    """Read every record of a large file with the worker processes, calling change() after the first one."""
    monkeypatch.setattr(bulk, "RANGE_BYTES", 1 << 16)  # many ranges: most are handed out after the change
    for index, _ in enumerate(cli.read_file(path, {}, strict=True)):  # as `add` reads
        if index == 0:
            change()


def test_f2_a_file_truncated_under_a_running_add_is_a_clear_error(tmp_path, record, monkeypatch):
    path = large_file(tmp_path / "big.jsonl", record)

    def truncate():
        os.truncate(path, 4096)

    enabled = faulthandler.is_enabled()  # pytest's: a worker's SIGBUS (the expected end) would print its stack
    faulthandler.disable()
    try:
        with pytest.raises(RecordFileError, match=f"^{path}: the file changed while it was read"):
            read_while(path, truncate, monkeypatch)
    finally:
        if enabled:
            faulthandler.enable()


def test_f2_a_file_rewritten_under_a_running_add_is_a_clear_error(tmp_path, record, monkeypatch):
    path = large_file(tmp_path / "big.jsonl", record)
    size = path.stat().st_size

    def rewrite():
        with open(path, "r+b") as file:  # same size, other bytes: only the modification time tells
            file.seek(size // 2)
            file.write(b" " * 10)
        os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))

    with pytest.raises(RecordFileError, match=f"^{path}: the file changed while it was read"):
        read_while(path, rewrite, monkeypatch)


# ------------------------------------------------------------------ D11: what a record states is never dropped
def test_d11_a_conflicting_params_b_is_refused_naming_both_values(tmp_path, empty_db, record):
    other = copy.deepcopy(record)
    other["model"]["params_b"] = 120
    other["stddev"] = 0.18
    moe = copy.deepcopy(record)
    moe["model"]["active_params_b"] = 5.13
    moe["stddev"] = 0.19
    path = write_jsonl(tmp_path / "c.jsonl", [record, other, moe])
    result = tpsdb("add", str(path), "--db", str(empty_db))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == \
        f"{path}:2: model.params_b: 120 conflicts with 116.83 already stored for gpt-oss 120B"
    assert "2 measurements added, 0 already stored; 1 rejections added" in result.stdout
    # the refused record is kept whole, with its own value
    rejections = [json.loads(line) for line in tpsdb("export", "--rejections", "--db", str(empty_db)).stdout.splitlines()]
    assert [r["model"]["params_b"] for r in rejections] == [120]
    assert rows(empty_db, "select reasons from rejection") == \
        [('["model.params_b: 120 conflicts with 116.83 already stored for gpt-oss 120B"]',)]
    # an empty active_params_b was filled by the third record; the first record's silence is no conflict
    assert [(r["model"]["params_b"], r["model"]["active_params_b"]) for r in exported(empty_db)] == \
        [(116.83, 5.13), (116.83, 5.13)]
    again = tpsdb("add", str(path), "--db", str(empty_db))
    assert "0 measurements added, 2 already stored; 0 rejections added, 1 already stored" in again.stdout
    moe3 = copy.deepcopy(moe)
    moe3["model"]["active_params_b"] = 3.0
    result = tpsdb("add", str(write_jsonl(tmp_path / "a.jsonl", [moe3])), "--db", str(empty_db))
    assert "model.active_params_b: 3 conflicts with 5.13 already stored for gpt-oss 120B" in result.stdout


def test_d11_hardware_facts_fill_empty_fields_and_a_conflict_is_refused(tmp_path, empty_db, record):
    silent = copy.deepcopy(record)
    stated = copy.deepcopy(record)
    stated["hardware"].update(memory_gb=128, gpu_cores=48)
    stated["stddev"] = 0.18
    wrong = copy.deepcopy(record)
    wrong["hardware"].update(memory_gb=96)
    wrong["stddev"] = 0.19
    path = write_jsonl(tmp_path / "h.jsonl", [silent, stated, wrong])
    result = tpsdb("add", str(path), "--db", str(empty_db))
    assert result.exit_code == 1
    assert f"{path}:3: hardware.memory_gb: 96 conflicts with 128 already stored for NVIDIA DGX Spark" in result.stdout
    assert rows(empty_db, "select memory_gb, gpu_cores from hardware") == [(128.0, 48)]


def test_d11_a_record_fills_a_seeded_model_without_params_and_export_round_trips(tmp_path, record, seeded_db):
    seeded = seeded_db
    with contextlib.closing(sqlite3.connect(seeded)) as conn:  # a model stored without its parameter count
        conn.execute("UPDATE model SET params_b = NULL WHERE name = 'Llama 2 7B'")
        conn.commit()
    record["model"] = {"name": "Llama 2 7B", "params_b": 6.74, "file_size_gb": 3.79}
    record["quantization"] = "Q4_0"
    record["tokens_per_second"] = 57.5
    record["source"]["quote"] = "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | tg32 | 57.50 ± 0.5 |"
    assert tpsdb("add", str(write_jsonl(tmp_path / "one.jsonl", [record])), "--db", str(seeded)).exit_code == 0
    assert rows(seeded, "select params_b from model where name = 'Llama 2 7B'") == [(6.74,)]
    first = tpsdb("export", "--db", str(seeded)).stdout
    assert '"params_b": 6.74' in first
    (tmp_path / "export.jsonl").write_text(first, encoding="utf-8")
    empty = tmp_path / "empty.sqlite"
    run_cli("init", "--no-seed", db=empty)
    result = tpsdb("add", str(tmp_path / "export.jsonl"), "--db", str(empty))
    assert result.exit_code == 0 and "0 rejections added" in result.stdout, result.stdout[-500:]
    assert tpsdb("export", "--db", str(empty)).stdout == first


# ------------------------------------------------------------------------------- D14 / F6: two adds at once
def hold_write_lock(db: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_d14_two_adds_at_once_the_second_waits_and_finds_the_rows_stored(tmp_path, empty_db, record):
    path = write_jsonl(tmp_path / "same.jsonl", runs(record, 3000))
    holder = hold_write_lock(empty_db)  # both adds start while the database is busy, so they surely overlap
    adds = [subprocess.Popen(command("add", str(path), db=empty_db), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=ENV, cwd=ROOT) for _ in range(2)]
    time.sleep(4)  # both have started and wait for the lock
    assert [a.poll() for a in adds] == [None, None]
    holder.execute("ROLLBACK")
    holder.close()
    outputs = [a.communicate(timeout=120) for a in adds]
    assert [a.returncode for a in adds] == [0, 0], outputs
    stored = sorted(out for out, _ in outputs)
    assert stored == ["0 measurements added, 3000 already stored; 0 rejections added, 0 already stored\n",
                      "3000 measurements added, 0 already stored; 0 rejections added, 0 already stored\n"]
    assert all(err == "" for _, err in outputs)
    assert rows(empty_db, "select count(*) from measurement") == [(3000,)]


def test_d14_add_exits_3_with_one_error_line_when_the_database_stays_busy(tmp_path, empty_db, record):
    path = write_jsonl(tmp_path / "one.jsonl", [record])
    holder = hold_write_lock(empty_db)
    try:
        result = subprocess.run(command("add", str(path), "--timeout", "0.5", db=empty_db), capture_output=True,
                                text=True, env=ENV, cwd=ROOT, timeout=60)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.returncode == 3
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ") and "busy" in result.stderr
    assert rows(empty_db, "select count(*) from measurement") == [(0,)]
    assert tpsdb("add", str(path), "--db", str(empty_db)).exit_code == 0  # once free, it goes in


# --------------------------------------------------------------------------------------------- exit codes
def test_add_and_validate_share_their_exit_codes(tmp_path, empty_db, record):
    good = write_jsonl(tmp_path / "good.jsonl", [record])
    bad = copy.deepcopy(record)
    bad["quantization"] = "4-bit"
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [record, bad])
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n", encoding="utf-8")
    for path, code in ((good, 0), (mixed, 1), (broken, 2)):
        assert tpsdb("validate", str(path), "--db", str(empty_db)).exit_code == code
        assert tpsdb("add", str(path), "--db", str(empty_db)).exit_code == code
    assert tpsdb("add", str(mixed), "--db", str(empty_db)).exit_code == 1  # already stored, still rejected


# -------------------------------------------------------------------- probe rows 4 and 67: what is not a record
@pytest.mark.parametrize("text", ["42\n", '"a string"\n', "null\n", "[[{}]]\n", '[{"foo": 1}, 5]\n', '{"foo": 1}\n42\n'])
def test_a_json_value_that_is_not_an_object_refuses_the_file_and_stores_no_junk_row(tmp_path, empty_db, text):
    path = tmp_path / "junk.json"
    path.write_text(text, encoding="utf-8")
    for name in ("validate", "add"):
        result = tpsdb(name, str(path), "--db", str(empty_db))
        assert result.exit_code == 2
        assert result.stderr.startswith(f"error: {path}") and "not a JSON object" in result.stderr
    assert rows(empty_db, "select count(*) from rejection") == [(0,)]


def test_a_value_the_database_cannot_hold_is_one_error_line(tmp_path, empty_db, record):
    huge = copy.deepcopy(record)
    huge["lengths"]["generated_tokens"] = 10**20
    result = tpsdb("add", str(write_jsonl(tmp_path / "good.jsonl", [record])),
                   str(write_jsonl(tmp_path / "huge.jsonl", [huge])), "--db", str(empty_db))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if result.exit_code == 2:  # the validator let it through: the database refuses it, and nothing is stored
        assert result.stderr.count("\n") == 1 and "nothing was stored" in result.stderr
        assert rows(empty_db, "select count(*) from measurement") == [(0,)]
    else:  # the validator refuses it: a rejection
        assert result.exit_code == 1 and rows(empty_db, "select count(*) from rejection") == [(1,)]
