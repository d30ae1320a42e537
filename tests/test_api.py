"""The Python API (tpsdb.api, exported by tpsdb): used from Python on a temporary database, with no printing, its
own transactions, the write lock (a second writer waits, then is told busy), and one error family."""

from __future__ import annotations

import copy
import re
import sqlite3
import threading
import time

import pytest

import tpsdb
from conftest import ROOT, VALID_RECORD, run_cli, write_jsonl


def _records(tmp_path, rejected: int = 0):
    good = copy.deepcopy(VALID_RECORD)
    bad = []
    for k in range(rejected):
        record = copy.deepcopy(VALID_RECORD)
        record["hardware"]["name"] = None
        record["tokens_per_second"] = 10.0 + k
        bad.append(record)
    return write_jsonl(tmp_path / "records.jsonl", [good, *bad])


def _active(db) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("select count(*) from measurement where status = 'active'").fetchone()[0]


def test_add_returns_counts_reports_each_rejection_and_prints_nothing(tmp_path, empty_db, capsys):
    engine = tpsdb.open_database(str(empty_db))
    refused: list[tuple[str, list[str]]] = []
    counts = tpsdb.add(engine, [_records(tmp_path, rejected=1)], on_rejected=lambda w, r: refused.append((w, r)))
    assert (counts["accepted"], counts["rejected"]) == (1, 1)
    assert refused[0][0].endswith("records.jsonl:2") and any(r.startswith("hardware.name") for r in refused[0][1])
    again = tpsdb.add(engine, [tmp_path / "records.jsonl"])
    assert (again["accepted_unchanged"], again["rejected_unchanged"], again["accepted"]) == (1, 1, 0)
    assert capsys.readouterr() == ("", "")
    assert _active(empty_db) == 1


def test_a_bad_line_stores_nothing_and_is_an_api_error(tmp_path, empty_db):
    path = _records(tmp_path)
    path.write_text(path.read_text() + "not json\n")
    with pytest.raises(tpsdb.ApiError) as raised:
        tpsdb.add(tpsdb.open_database(str(empty_db)), [path])
    assert raised.value.code == 2 and raised.value.message.endswith("nothing was stored")
    assert _active(empty_db) == 0


def test_open_database_refuses_a_missing_file(tmp_path):
    with pytest.raises(tpsdb.ApiError) as raised:
        tpsdb.open_database(str(tmp_path / "missing.sqlite"))
    assert raised.value.code == 2 and "does not exist" in raised.value.message
    assert not (tmp_path / "missing.sqlite").exists()


def _hold_write_lock(db):
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")  # what another writer's transaction holds
    return conn


def test_a_second_writer_is_told_busy_and_stores_nothing(tmp_path, empty_db):
    holder = _hold_write_lock(empty_db)
    try:
        with pytest.raises(tpsdb.BusyError) as raised:
            tpsdb.add(tpsdb.open_database(str(empty_db)), [_records(tmp_path)], timeout=0.2)
        assert raised.value.code == 3 and "busy" in raised.value.message
    finally:
        holder.rollback()
        holder.close()
    assert _active(empty_db) == 0


def test_a_second_writer_waits_for_the_first_to_end(tmp_path, empty_db):
    holder = _hold_write_lock(empty_db)
    released = threading.Timer(0.3, lambda: (holder.rollback(), holder.close()))
    released.start()
    began = time.monotonic()
    counts = tpsdb.add(tpsdb.open_database(str(empty_db)), [_records(tmp_path)], timeout=10)
    released.join()
    assert counts["accepted"] == 1 and time.monotonic() - began >= 0.25


def test_withdraw_and_query(tmp_path, empty_db):
    engine = tpsdb.open_database(str(empty_db))
    tpsdb.add(engine, [_records(tmp_path)])
    columns, rows = tpsdb.run_query("select measurement_id from measurement_full", str(empty_db))
    assert columns == ["measurement_id"] and len(rows) == 1
    done = tpsdb.withdraw(engine, rows[0][0], "wrong machine")
    assert done.why == "wrong machine" and _active(empty_db) == 0
    with pytest.raises(tpsdb.ApiError, match="already withdrawn"):
        tpsdb.withdraw(engine, rows[0][0], "again")
    with pytest.raises(tpsdb.ApiError, match="read-only|only"):
        tpsdb.run_query("delete from measurement", str(empty_db))


def test_the_example_of_docs_api_runs(tmp_path, monkeypatch, capsys):
    example = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "API.md").read_text(encoding="utf-8"), re.S)
    assert example is not None
    (tmp_path / "data").mkdir()
    run_cli("init", "--no-seed", db=tmp_path / "data" / "tpsdb.sqlite")
    _records(tmp_path, rejected=1).rename(tmp_path / "my-records.jsonl")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TPSDB_DATABASE_URL", raising=False)
    exec(compile(example.group(1), "docs/API.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("1 accepted, 1 rejected: ['my-records.jsonl:2']")
    assert "['hardware', 'tokens_per_second']" in out


def test_every_exported_name_is_the_api_function_even_after_the_modules_load():
    """A module imported becomes an attribute of the package: none may share a name with a function of the API."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(tpsdb.__path__):
        importlib.import_module(f"tpsdb.{module.name}")
    from tpsdb import api

    assert all(getattr(tpsdb, name) is getattr(api, name) for name in tpsdb.__all__)


def test_import_takes_the_write_lock_too(tmp_path, empty_db):
    """It used to write without it (issue 17): a peer's import while another process writes is told busy before
    it reads its file, and the command exits 3 as add does."""
    peer_file = tmp_path / "peer.json"
    peer_file.write_text("[]", encoding="utf-8")
    holder = _hold_write_lock(empty_db)
    try:
        with pytest.raises(tpsdb.BusyError):
            tpsdb.import_peer(tpsdb.open_database(str(empty_db)), "tokatlas", peer_file, specs={}, timeout=0.2)
        with pytest.raises(tpsdb.ApiError, match="FORMAT"):
            tpsdb.import_peer(tpsdb.open_database(str(empty_db)), "nope", peer_file, specs={})
    finally:
        holder.rollback()
        holder.close()
