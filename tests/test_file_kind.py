"""The `file` kind: one benchmark file at a URL, served by the real local server, refreshed conditionally and read
with the llama-bench result readers; a changed file supersedes, a fault leaves the database as it was."""


import pytest

from conftest import ROOT
from fixture_server import Fault, FixtureServer
from refresh_helpers import dump, refresh_json, rows
from tpsdb.collect.benchfiles import extract_bench_file
from tpsdb.collect.extract import PostContext

FILE = ROOT / "tests" / "fixtures" / "benchfiles" / "rtx4090-llama2-7b.jsonl"
PATH = "/raw/bench/rtx4090-llama2-7b.jsonl"
URL = "https://github.com/example/bench/blob/0123456789abcdef0123456789abcdef01234567/rtx4090-llama2-7b.jsonl"


@pytest.fixture
def served(empty_db, tmp_path):
    db = empty_db
    with FixtureServer() as server:
        server.override(PATH, FILE.read_bytes())
        sources = tmp_path / "sources"
        sources.mkdir()
        (sources / "bench.toml").write_text(f'key = "bench"\nurl = "{URL}"\nkind = "file"\n'
                                            f'fetch_url = "{server.base_url}{PATH}"\n', encoding="utf-8")

        yield db, server, lambda check=True: refresh_json(db, server, "bench", sources, check=check)


def expected(data: bytes) -> list[float]:
    ctx = PostContext(permalink=URL, retrieved_at="2026-01-01", published_at=None, author=None, protocol={})
    return sorted(c.record["tokens_per_second"] for c in extract_bench_file(data, None, ctx, None, suffix="jsonl"))


def active(db):
    return sorted(r["tokens_per_second"] for r in rows(db, "select tokens_per_second from measurement "
                                                           "where status = 'active'"))


def test_a_file_refreshes_then_answers_304_and_its_figures_link_to_its_url(served):
    db, server, refresh = served
    first = refresh()
    assert first["status"] == "ok" and first["transport"] == "http" and first["new"] > 0
    assert active(db) == [v for v in expected(FILE.read_bytes())]
    assert {r["permalink"] for r in rows(db, "select permalink from post")} == {URL}
    before = dump(db)
    second = refresh()
    assert second["status"] == "unchanged" and second["not_modified"] == 1
    assert dump(db) == before


def test_a_changed_file_supersedes_and_a_fault_changes_nothing(served):
    db, server, refresh = served
    refresh()
    lines = FILE.read_bytes().splitlines(keepends=True)
    server.override(PATH, b"".join(lines[:1]))
    before = dump(db)
    server.inject(PATH, [Fault("status", 502)] * 3)
    assert refresh(check=False)["status"] == "failed"
    assert dump(db) == before
    assert refresh()["status"] == "ok"
    assert active(db) == expected(b"".join(lines[:1]))


# D4: a file's read that cannot show it is whole fails and retires nothing (it used to retire every figure, exit 0).
CUT = FILE.read_bytes()[: len(FILE.read_bytes()) * 2 // 3]  # mid-line (the half ends at a line's end: a whole file)


@pytest.mark.parametrize(("answer", "fault", "says"), [
    (b"<html><h1>503 Service Unavailable</h1></html>", None, "an HTML page"),
    (b"<!DOCTYPE html>\n<html><body>Unicorn!</body></html>\n", None, "an HTML page"),
    (b"", None, "the answer is empty"),
    (b"  \n", None, "the answer is empty"),
    (CUT, None, "ends mid-line"),
    (b'{"message": "Not Found"}\n', None, "no benchmark result"),
    (b"Service Unavailable\n", None, "no benchmark result"),
    (None, Fault("short_length"), "ends mid-line"),  # Content-Length shorter than what the server sends
    (None, Fault("status", 206), "HTTP 206 is not the whole file"),
], ids=["html-error-page", "doctype-page", "empty", "blank", "cut-download", "json-error", "text-error",
        "short-content-length", "206-partial"])
def test_d4_an_answer_that_cannot_show_it_is_the_whole_file_fails_and_retires_nothing(served, answer, fault, says):
    db, server, refresh = served
    assert refresh()["status"] == "ok"
    before, figures = dump(db), active(db)
    assert figures
    if answer is not None:
        server.override(PATH, answer)
    if fault is not None:
        server.override(PATH, FILE.read_bytes() + b"\n")  # a new version, so that the fault's answer is read
        server.inject(PATH, [fault] * 3)
    summary = refresh(check=False)
    assert summary["status"] == "failed" and says in summary["error"], summary
    assert active(db) == figures
    assert dump(db) == before


def test_d3_a_kind_states_its_own_answer_cap(served, monkeypatch):
    db, server, refresh = served
    from tpsdb.kinds.file import BenchmarkFile

    monkeypatch.setattr(BenchmarkFile, "max_answer_bytes", 100)  # the file is ~1.9 KB
    summary = refresh(check=False)
    assert summary["status"] == "failed" and "answer too large" in summary["error"] and "100 bytes" in summary["error"]
