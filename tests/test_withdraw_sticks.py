"""A figure its user withdrew (`tpsdb withdraw`) stays withdrawn when the same record is read again: added again,
refreshed or reparsed. A figure retired by its source (no withdrawal row) still comes back when shown again."""

from __future__ import annotations

import sqlite3

import pytest

from conftest import run_cli, write_jsonl
from fixture_server import FixtureServer
from refresh_helpers import refresh, rows

PAGE_16578 = "/ggml-org/llama.cpp/discussions/16578"
EDITED = "https://github.com/ggml-org/llama.cpp/discussions/16578#discussioncomment-14689947"


def status(db, measurement_id: int) -> str:
    return rows(db, "select status from measurement where id = ?", measurement_id)[0]["status"]


def test_adding_a_withdrawn_record_again_keeps_it_withdrawn(tmp_path, empty_db, record):
    records = write_jsonl(tmp_path / "r.jsonl", [record])
    assert "1 measurements added" in run_cli("add", str(records), db=empty_db).stdout
    run_cli("withdraw", "1", "--why", "wrong machine", db=empty_db)
    again = run_cli("add", str(records), db=empty_db, check=False)
    assert again.returncode == 0, again.stderr  # nothing wrong with the record: the user's withdrawal holds
    assert "0 measurements added, 0 already stored, 1 withdrawn earlier, not re-added;" in again.stdout
    assert f"{records}[1]: figure 1 was withdrawn on " in again.stdout
    assert "(withdrawal 1: wrong machine); not re-added" in again.stdout
    assert status(empty_db, 1) == "withdrawn"
    assert rows(empty_db, "select measurement_id, why from withdrawal") == [
        {"measurement_id": 1, "why": "wrong machine"}]


def test_a_figure_retired_without_a_withdrawal_still_comes_back(tmp_path, empty_db, record):
    records = write_jsonl(tmp_path / "r.jsonl", [record])
    run_cli("add", str(records), db=empty_db)
    with sqlite3.connect(empty_db) as conn:  # retired by its source (as `retire` does), not by its user
        conn.execute("update measurement set status = 'withdrawn' where id = 1")
    assert "1 measurements added, 0 already stored;" in run_cli("add", str(records), db=empty_db).stdout
    assert status(empty_db, 1) == "active"


@pytest.fixture
def served(empty_db):
    with FixtureServer() as server:
        yield empty_db, server


def test_a_withdrawn_figure_read_again_by_refresh_and_reparse_stays_withdrawn(served):
    db, server = served
    refresh(db, server, "llamacpp-16578")
    figures = rows(db, "select id, tokens_per_second from measurement where source_url = ? and status = 'active' "
                       "order by id", EDITED)
    kept = next(f["id"] for f in figures if f["tokens_per_second"] != 79.74)
    # `withdraw` refuses a figure of a refreshed source; this one was withdrawn before its source was registered.
    with sqlite3.connect(db) as conn:
        keys = conn.execute("select id, key from source where key is not null").fetchall()
        conn.execute("update source set key = null")
    run_cli("withdraw", str(kept), "--why", "wrong machine", db=db)
    with sqlite3.connect(db) as conn:
        conn.executemany("update source set key = ? where id = ?", [(k, i) for i, k in keys])
    body = server.body(PAGE_16578)  # an edit of another figure of the same comment: the comment is read again
    assert body.count(b"79.74 \xc2\xb1 0.43") == 1
    server.override(PAGE_16578, body.replace(b"79.74 \xc2\xb1 0.43", b"81.74 \xc2\xb1 0.43"))
    refresh(db, server, "llamacpp-16578")
    assert rows(db, "select 1 from measurement where tokens_per_second = 81.74 and status = 'active'")
    assert status(db, kept) == "withdrawn"
    run_cli("reparse", "llamacpp-16578", db=db)
    assert status(db, kept) == "withdrawn"
