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
