"""The `peer_dataset` kind: tokatlas's data file served by the real local server, refreshed conditionally and read
by the importer's own code; a changed file supersedes and withdraws, a fault leaves the database as it was."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import ROOT, run_cli
from fixture_server import Fault, FixtureServer
from refresh_helpers import dump, refresh, refresh_json, rows, server_env
from test_peers import OP_4167, TOKATLAS, import_file, tokatlas_bytes, tokatlas_slice
from tpsdb.store import MEASUREMENT_COLUMNS, REJECTION_COLUMNS

PATH = "/raw/tokatlas/llamacpp_discussions.json"
URL = ("https://github.com/tokatlas/tokatlas.github.io/blob/12c6d709e0764f28551b652ebd8ce77040e68d75/"
       "data/raw/llamacpp_discussions.json")
# What a stored figure or rejection is, without the row ids that tell the two paths apart (source, post, snapshot).
FIGURE = ", ".join(("figure_key", "slot", "status", *MEASUREMENT_COLUMNS))
REJECTION = ", ".join(("candidate_key", "slot", "status", *REJECTION_COLUMNS))


@pytest.fixture
def served(empty_db, tmp_path):
    """A database, the shipped source files (the threads' protocols) plus the peer's, served by a local server."""
    db = empty_db
    sources = tmp_path / "sources"
    shutil.copytree(ROOT / "sources", sources)
    with FixtureServer() as server:
        shipped = (sources / "tokatlas-llamacpp.toml").read_text(encoding="utf-8")
        fetch = next(line for line in shipped.splitlines() if line.startswith("fetch_url"))
        (sources / "tokatlas-llamacpp.toml").write_text(
            shipped.replace(fetch, f'fetch_url = "{server.base_url}{PATH}"'), encoding="utf-8")
        yield db, server, lambda check=True: refresh_json(db, server, "tokatlas-llamacpp", sources, check=check)


def stored(db) -> tuple[list[tuple], list[tuple]]:
    return ([tuple(r.values()) for r in rows(db, f"SELECT {FIGURE} FROM measurement ORDER BY figure_key")],
            [tuple(r.values()) for r in rows(db, f"SELECT {REJECTION} FROM rejection ORDER BY candidate_key")])


def test_a_peer_refresh_stores_what_the_importer_stores_then_answers_304(served, tmp_path):
    db, server, peer_refresh = served
    server.override(PATH, tokatlas_bytes())
    first = peer_refresh()
    assert first["status"] == "ok" and first["transport"] == "http" and first["posts"] == 1981
    assert first["note"] is None  # a whole file is a complete read: absence withdraws
    imported = tmp_path / "imported.sqlite"
    run_cli("init", "--no-seed", db=imported)
    assert import_file(imported, TOKATLAS).exit_code == 1  # the relay's rejections make the import exit 1
    figures, rejections = stored(db)
    assert (len(figures), len(rejections)) == (596, 3258)
    assert (figures, rejections) == stored(imported)
    assert {r["via_title"] for r in rows(db, "SELECT via_title FROM measurement")} == {"tokatlas"}
    # Each record is a post of the peer source, linked to the file (the figures link to the thread's comment).
    permalinks = [r["permalink"] for r in rows(db, "SELECT permalink FROM post WHERE kind = 'record'")]
    assert len(permalinks) == 1981 and all(p.startswith(URL + "#tokatlas:") for p in permalinks)

    before = dump(db)
    second = peer_refresh()
    assert (second["status"], second["not_modified"], second["posts"]) == ("unchanged", 1, 0)
    assert dump(db) == before


def test_a_changed_peer_file_supersedes_and_withdraws(served, tmp_path):
    db, server, peer_refresh = served
    server.override(PATH, tokatlas_slice(tmp_path, [0, 1, 1898]).read_bytes())
    assert peer_refresh()["new"] == 4  # records 0 and 1: the 4167 scoreboard, read with its protocol
    data = json.loads(tokatlas_slice(tmp_path, [0, 1898]).read_bytes())
    # The peer corrected record 0's generation figure (its quote and its value); record 1 is gone.
    record = data["records"][0]
    record["tps"], record["quote"] = 8.5, record["quote"].replace("TG   [t/s]: 7.92", "TG   [t/s]: 8.5")
    server.override(PATH, json.dumps(data).encode())
    summary = peer_refresh()
    # Both figures of record 0 quote the new words: both are superseded, the generation figure by its new value.
    assert (summary["status"], summary["changed"], summary["withdrawn"]) == ("ok", 2, 2)
    figures = rows(db, "SELECT id, tokens_per_second AS tps, status, supersedes_id FROM measurement ORDER BY id")
    assert [(f["tps"], f["status"]) for f in figures] == [
        (108.21, "superseded"), (7.92, "superseded"), (107.81, "withdrawn"), (14.19, "withdrawn"),
        (108.21, "active"), (8.5, "active")]
    assert [f["supersedes_id"] for f in figures[4:]] == [figures[0]["id"], figures[1]["id"]]
    assert rows(db, "SELECT COUNT(*) AS n FROM rejection WHERE status = 'active'")[0]["n"] == 1  # record 1898 (27593: a prompt figure only)


@pytest.mark.parametrize("fault", [Fault("status", 502), Fault("truncate"), Fault("cut")],
                         ids=["502", "truncated", "cut"])
def test_a_peer_fault_fails_the_source_and_changes_nothing(served, tmp_path, fault):
    db, server, peer_refresh = served
    server.override(PATH, tokatlas_slice(tmp_path, [0, 1]).read_bytes())
    peer_refresh()
    server.override(PATH, tokatlas_slice(tmp_path, [1129]).read_bytes())
    before = dump(db)
    server.inject(PATH, [fault] * 2)
    summary = peer_refresh(check=False)
    assert summary["status"] == "failed" and summary["new"] == summary["withdrawn"] == 0, summary
    assert dump(db) == before
    assert peer_refresh()["status"] == "ok"  # the fault over, the file is read again


def test_a_relayed_figure_gives_way_to_a_direct_reading_stored_before_or_after(served, tmp_path):
    db, server, peer_refresh = served
    server.override(PATH, tokatlas_slice(tmp_path, [0, 1]).read_bytes())
    refresh(db, server, "llamacpp-4167")  # the direct reading first: the relay, stored after, gives way at once
    peer_refresh()
    relayed = rows(db, "SELECT id, status, post_id FROM measurement WHERE via_title = 'tokatlas' ORDER BY id")
    assert len(relayed) == 4 and {r["status"] for r in relayed} == {"superseded"}
    successors = rows(db, "SELECT supersedes_id FROM measurement WHERE supersedes_id IS NOT NULL")
    assert {s["supersedes_id"] for s in successors} == {r["id"] for r in relayed}

    later = tmp_path / "later.sqlite"  # the relay first, then the direct reading
    run_cli("init", "--no-seed", db=later)
    sources = tmp_path / "sources"
    run_cli("refresh", "tokatlas-llamacpp", "--sources-dir", str(sources), db=later, env=server_env(server))
    assert rows(later, "SELECT COUNT(*) AS n FROM measurement WHERE status = 'active' AND source_url = ?",
                OP_4167)[0]["n"] == 4
    refresh(later, server, "llamacpp-4167")
    assert rows(later, "SELECT COUNT(*) AS n FROM measurement WHERE via_title = 'tokatlas' AND status = 'active'"
                )[0]["n"] == 0


@pytest.mark.parametrize("answer", [b'{"records": []}', b"", b"<html><h1>503 Service Unavailable</h1></html>"],
                         ids=["no-records", "empty", "html-error-page"])
def test_d4_a_peer_file_that_cannot_show_it_is_whole_fails_and_withdraws_nothing(served, tmp_path, answer):
    # An emptied file used to withdraw every figure of the peer, exit 0 (probe 2, P3).
    db, server, peer_refresh = served
    server.override(PATH, tokatlas_slice(tmp_path, [0, 1]).read_bytes())
    assert peer_refresh()["new"] == 4
    before = dump(db)
    server.override(PATH, answer)
    summary = peer_refresh(check=False)
    assert summary["status"] == "failed" and summary["withdrawn"] == 0, summary
    if answer.startswith(b"{"):
        assert "the peer's file holds no records" in summary["error"]
    assert dump(db) == before
