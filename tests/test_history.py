"""Refresh on a schedule: edits supersede, removals withdraw, faults leave the database exactly as it was,
a killed run leaves it intact, two runs at once do not collide, reparse equals a fresh refresh."""

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from bs4 import BeautifulSoup

from conftest import ROOT, run_cli
from fixture_server import Fault, FixtureServer
from refresh_helpers import dump, refresh, rows, server_env

FIXTURES = ROOT / "tests" / "fixtures" / "github" / "ggml-org" / "llama.cpp" / "discussions"
PAGE_16578 = "/ggml-org/llama.cpp/discussions/16578"
PAGES_4167 = "/ggml-org/llama.cpp/discussions/4167/pages"
EDITED = "https://github.com/ggml-org/llama.cpp/discussions/16578#discussioncomment-14689947"
REMOVED = "https://github.com/ggml-org/llama.cpp/discussions/16578#discussioncomment-14804653"


@pytest.fixture
def served(empty_db):
    with FixtureServer() as server:
        yield empty_db, server


def active(db, url):
    return {r["measurement_id"]: r["tokens_per_second"]
            for r in rows(db, "select measurement_id, tokens_per_second from measurement_full "
                              "where source_url = ? and status = 'active'", url)}


def edited_page(server, old: bytes, new: bytes) -> None:
    body = server.body(PAGE_16578)
    assert body.count(old) == 1
    server.override(PAGE_16578, body.replace(old, new))


def test_edited_comment_supersedes_only_the_changed_figure(served):
    db, server = served
    refresh(db, server, "llamacpp-16578")
    before = active(db, EDITED)
    old_id = next(i for i, v in before.items() if v == 79.74)
    edited_page(server, b"79.74 \xc2\xb1 0.43", b"81.74 \xc2\xb1 0.43")
    summary = json.loads(refresh(db, server, "llamacpp-16578", "--format", "json").stdout)[0]
    assert (summary["status"], summary["changed"], summary["new"], summary["withdrawn"]) == ("ok", 1, 0, 0)
    after = active(db, EDITED)
    assert {i: v for i, v in before.items() if i != old_id} == {i: v for i, v in after.items() if v != 81.74}
    new_id = next(i for i, v in after.items() if v == 81.74)
    history = rows(db, "select measurement_id, status, supersedes_id, superseded_by_id, tokens_per_second "
                       "from measurement_history where measurement_id in (?, ?) order by measurement_id",
                   old_id, new_id)
    assert history == [
        {"measurement_id": old_id, "status": "superseded", "supersedes_id": None, "superseded_by_id": new_id,
         "tokens_per_second": 79.74},
        {"measurement_id": new_id, "status": "active", "supersedes_id": old_id, "superseded_by_id": None,
         "tokens_per_second": 81.74},
    ]


def test_removed_comment_withdraws_its_figures(served):
    db, server = served
    refresh(db, server, "llamacpp-16578")
    assert active(db, REMOVED)
    soup = BeautifulSoup(server.body(PAGE_16578), "lxml")
    soup.find(id="discussioncomment-14804653").decompose()
    count = soup.find(id="discussion-comment-count").find(string="8 comments")
    count.replace_with("7 comments")  # as GitHub counts the thread after the removal
    server.override(PAGE_16578, str(soup).encode())
    summary = json.loads(refresh(db, server, "llamacpp-16578", "--format", "json").stdout)[0]
    assert summary["withdrawn"] > 0 and summary["withdrawn"] == len(
        rows(db, "select 1 from measurement where source_url = ? and status = 'withdrawn'", REMOVED))
    assert active(db, REMOVED) == {}
    assert rows(db, "select status from post where permalink = ?", REMOVED) == [{"status": "withdrawn"}]


@pytest.mark.parametrize("faults", [[Fault("status", 502)], [Fault("retry_after", 429, 1)], [Fault("reset")],
                                    [Fault("truncate")], [Fault("slow", seconds=3)]],
                         ids=["502", "429-retry-after", "reset", "truncated", "slow"])
def test_transient_faults_recover(served, faults):
    db, server = served
    server.inject(PAGES_4167, faults)
    result = refresh(db, server, "llamacpp-4167", "--format", "json", TPSDB_HTTP_TIMEOUT_S="1")
    summary = json.loads(result.stdout)[0]
    assert summary["status"] == "ok" and summary["new"] > 0
    assert summary["requests"] == 4  # three pages, one retried


@pytest.mark.parametrize("kind", ["status", "reset", "truncate", "slow"])
def test_persistent_fault_fails_the_source_and_changes_nothing(served, kind):
    db, server = served
    refresh(db, server)
    # Every page changes (so a half-applied refresh would show, and no page answers 304), then the later
    # pages keep failing.
    body = server.body("/ggml-org/llama.cpp/discussions/4167")
    server.override("/ggml-org/llama.cpp/discussions/4167", body.replace(b"108.21", b"109.21", 1))
    for route in json.loads((FIXTURES / "4167" / "routes.json").read_text()):
        if route["path"] == PAGES_4167:
            after = route["query"]["after"]
            server.override(PAGES_4167, server.body(PAGES_4167, after=after) + b"<!-- edited -->", after=after)
    server.inject(PAGES_4167, [Fault(kind, 502 if kind == "status" else None, seconds=3)] * 3)
    before = dump(db)
    result = refresh(db, server, "llamacpp-4167", "llamacpp-16578", "--format", "json", check=False,
                     TPSDB_HTTP_TIMEOUT_S="1", TPSDB_HTTP_MAX_ATTEMPTS="3")
    assert result.returncode == 1
    by_source = {s["source"]: s for s in json.loads(result.stdout)}
    assert by_source["llamacpp-4167"]["status"] == "failed" and by_source["llamacpp-4167"]["error"]
    assert by_source["llamacpp-16578"]["status"] == "unchanged"  # the other source still ran
    assert dump(db) == before
    run = rows(db, "select status, error from refresh_run order by id desc limit 2")
    assert {r["status"] for r in run} == {"failed", "unchanged"}


def test_killed_refresh_leaves_the_previous_data_intact(served):
    db, server = served
    refresh(db, server, "llamacpp-16578")
    before = dump(db)
    edited_page(server, b"79.74 \xc2\xb1 0.43", b"81.74 \xc2\xb1 0.43")
    server.inject("/ggml-org/llama.cpp/discussions/4167", [Fault("slow", seconds=30)])
    env = {**os.environ, "PYTHONPATH": str(ROOT), **server_env(server)}
    process = subprocess.Popen([sys.executable, "-m", "tpsdb", "refresh", "llamacpp-16578", "llamacpp-4167",
                                "--db", str(db)], env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 20
    while not server.requests_to("/ggml-org/llama.cpp/discussions/4167") and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    conn = sqlite3.connect(db)
    assert conn.execute("pragma integrity_check").fetchone() == ("ok",)
    conn.close()
    # 16578 finished its own transaction before the kill: its edit is in; nothing of 4167 is.
    assert rows(db, "select count(*) n from measurement where source_url like '%/4167%'") == [{"n": 0}]
    assert dump(db) != before and 81.74 in active(db, EDITED).values()
    result = refresh(db, server, "llamacpp-4167", "--format", "json")
    assert json.loads(result.stdout)[0]["status"] == "ok"
    statuses = [r["status"] for r in rows(db, "select status from refresh_run order by id")]
    assert "failed" in statuses  # the killed run is recorded as interrupted, not left running
    assert "running" not in statuses


def test_two_refreshes_at_once(served):
    db, server = served
    # The first run holds the lock this long at least: the second must start (a new interpreter, on a busy
    # machine) within it.
    server.inject("/ggml-org/llama.cpp/discussions/16578", [Fault("slow", seconds=4)])  # under the 5 s timeout
    env = {**os.environ, "PYTHONPATH": str(ROOT), **server_env(server)}
    command = [sys.executable, "-m", "tpsdb", "refresh", "llamacpp-16578", "--db", str(db)]
    first = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while not server.requests_to("/ggml-org/llama.cpp/discussions/16578") and time.time() < deadline:
        time.sleep(0.05)
    second = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    waiting = subprocess.Popen(command + ["--wait"], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    first_out, _ = first.communicate(timeout=60)
    waited_out, _ = waiting.communicate(timeout=60)
    assert first.returncode == 0 and "ok" in first_out
    assert second.returncode == 3 and "another refresh is running" in second.stderr
    assert waiting.returncode == 0 and "unchanged" in waited_out
    duplicates = rows(db, "select figure_key, count(*) n from measurement group by figure_key having n > 1")
    assert duplicates == []


def test_reparse_equals_a_fresh_refresh(served, tmp_path):
    db, server = served
    refresh(db, server)
    fresh = dump(db)
    run_cli("reparse", db=db)
    assert dump(db) == fresh  # the same parser on the same snapshots: nothing to change
    # After a "parser change" (here: a figure removed by hand), reparse restores exactly what refresh gives.
    conn = sqlite3.connect(db)
    conn.execute("update measurement set status = 'withdrawn' where id = (select min(id) from measurement)")
    conn.commit()
    conn.close()
    assert dump(db) != fresh
    out = run_cli("reparse", "llamacpp-4167", "--format", "json", db=db).stdout
    assert json.loads(out)[0]["status"] == "ok"
    assert dump(db) == fresh


def test_due_refresh_and_sources_listing(served, tmp_path):
    db, server = served
    env = server_env(server)
    # the shipped source files of the llama.cpp threads and their relays: the ones the fixture server plays
    sources = tmp_path / "sources"
    sources.mkdir()
    for path in [*(ROOT / "sources").glob("llamacpp-*.toml"), *(ROOT / "sources").glob("tokatlas-*.toml")]:
        (sources / path.name).write_bytes(path.read_bytes())
    env["TPSDB_SOURCES_DIR"] = str(sources)
    listing = json.loads(run_cli("sources", "--format", "json", db=db, env=env).stdout)
    assert {s["key"]: s["status"] for s in listing} == {
        "llamacpp-4167": "never run", "llamacpp-15013": "never run", "llamacpp-16578": "never run",
        # shipped with enabled = false: listed, never due
        "llamacpp-pr-4766": "never run", "llamacpp-pr-6017": "never run", "llamacpp-pr-3776": "never run",
        "llamacpp-bench-dgx-spark": "never run", "tokatlas-llamacpp": "never run"}
    first = run_cli("refresh", "--due", "--format", "json", db=db, env=env)
    assert len(json.loads(first.stdout)) == 3
    again = run_cli("refresh", "--due", db=db, env=env)
    assert "no source is due" in again.stdout
    listing = {s["key"]: s for s in json.loads(run_cli("sources", "--format", "json", db=db, env=env).stdout)}
    assert listing["llamacpp-16578"]["status"] == "ok" and listing["llamacpp-16578"]["figures"] > 0
    assert listing["llamacpp-16578"]["next_due"] != "now"


# --- issue 14: only a complete read withdraws by absence ------------------------------------------------------
PAGE_4167 = "/ggml-org/llama.cpp/discussions/4167"
LOAD_MORE = re.compile(rb'<form class="ajax-pagination-form js-ajax-pagination".*?</form>', re.S)


def graphql_answer(number: int, index: int) -> dict:
    return json.loads((FIXTURES / str(number) / "graphql" / f"{index}.json").read_text())


def cursor_of(number: int, index: int) -> str | None:
    """The `after` variable that asks for the index-th GraphQL answer of a fixture thread."""
    return None if index == 0 else graphql_answer(number, index - 1)[
        "data"]["repository"]["discussion"]["comments"]["pageInfo"]["endCursor"]


def fails_and_changes_nothing(db, server, source, *, graphql=False) -> dict:
    """Refresh a source that was read whole before: it must fail, store nothing and keep every figure."""
    before, figures = dump(db), rows(db, "select id, figure_key, status from measurement order by id")
    result = refresh(db, server, source, "--format", "json", graphql=graphql, check=False)
    summary = json.loads(result.stdout)[0]
    assert result.returncode == 1 and summary["status"] == "failed", result.stdout
    assert (summary["new"], summary["changed"], summary["withdrawn"]) == (0, 0, 0)
    assert rows(db, "select id, figure_key, status from measurement order by id") == figures
    assert dump(db) == before  # no post, snapshot or figure of that run
    last = rows(db, "select status, error from refresh_run order by id desc limit 1")[0]
    assert last == {"status": "failed", "error": summary["error"]}  # the run log keeps the reason and the counts
    return summary


def test_missing_load_more_form_fails_the_source_and_withdraws_nothing(served):
    db, server = served
    assert json.loads(refresh(db, server, "llamacpp-4167", "--format", "json").stdout)[0]["new"] > 0
    page = server.body(PAGE_4167)
    assert len(LOAD_MORE.findall(page)) == 1
    server.override(PAGE_4167, LOAD_MORE.sub(b"", page))  # GitHub renamed the form, say
    summary = fails_and_changes_nothing(db, server, "llamacpp-4167")
    assert summary["error"] == ('incomplete: read 10 of 21 comments; the page\'s "Load more" form was not found '
                                'after page 1')


def test_truncated_fragment_that_still_parses_fails_the_source(served):
    db, server = served
    refresh(db, server, "llamacpp-4167")
    after = json.loads((FIXTURES / "4167" / "routes.json").read_text())[1]["query"]["after"]
    fragment = server.body(PAGES_4167, after=after)
    server.override(PAGES_4167, fragment[: len(fragment) // 2], after=after)  # cut, and the next form with it
    summary = fails_and_changes_nothing(db, server, "llamacpp-4167")
    assert summary["error"].startswith("incomplete: read ") and " of 21 comments" in summary["error"]


def test_stated_count_that_disagrees_fails_the_source(served):
    db, server = served
    refresh(db, server, "llamacpp-4167")
    page = server.body(PAGE_4167)
    server.override(PAGE_4167, page.replace(b"<span>21 comments</span>", b"<span>22 comments</span>"))
    summary = fails_and_changes_nothing(db, server, "llamacpp-4167")
    assert summary["error"].startswith("incomplete: read 21 of 22 comments")


def test_graphql_answer_that_drops_a_node_fails_the_source(served):
    db, server = served
    refresh(db, server, "llamacpp-4167", graphql=True)
    answer = graphql_answer(4167, 1)
    del answer["data"]["repository"]["discussion"]["comments"]["nodes"][3]
    server.override_graphql(4167, json.dumps(answer).encode(), after=cursor_of(4167, 1))
    summary = fails_and_changes_nothing(db, server, "llamacpp-4167", graphql=True)
    assert summary["error"].startswith("incomplete: read 20 of 21 comments")


def many_replies(server, count: int, *, dropped: int = 0) -> str:
    """Give comment 14731036 of 16578 `count` replies over GraphQL: 100 in the discussion answer, the rest in
    one replies answer (less `dropped` nodes). Returns the comment's permalink."""
    answer = graphql_answer(16578, 0)
    comment = next(c for c in answer["data"]["repository"]["discussion"]["comments"]["nodes"]
                   if c["databaseId"] == 14731036)
    template = comment["replies"]["nodes"][0]
    replies = [{**template, "databaseId": 90_000_000 + i, "body": f"thanks {i}", "bodyHTML": f"<p>thanks {i}</p>",
                "url": f"{comment['url'][:comment['url'].index('#')]}#discussioncomment-{90_000_000 + i}"}
               for i in range(count)]
    comment["replies"] = {"totalCount": count, "pageInfo": {"hasNextPage": True, "endCursor": "R100"},
                          "nodes": replies[:100]}
    rest = {"data": {"node": {"databaseId": 14731036, "replies": {
        "totalCount": count, "pageInfo": {"hasNextPage": False, "endCursor": "R150"},
        "nodes": replies[100 + dropped:]}}}}
    server.override_graphql(16578, json.dumps(answer).encode())
    server.override_graphql(comment["id"], json.dumps(rest).encode(), after="R100")
    return comment["url"]


def test_graphql_reads_150_replies_to_the_end(served):
    db, server = served
    many_replies(server, 150)
    summary = json.loads(refresh(db, server, "llamacpp-16578", "--format", "json", graphql=True).stdout)[0]
    assert summary["status"] == "ok" and summary["requests"] == 2  # the discussion, then the comment's replies
    assert rows(db, "select count(*) n from post where parent_external_id = '14731036' and status = 'active'") \
        == [{"n": 150}]
    posted = [json.loads(r.body)["variables"] for r in server.requests_to("/graphql")]
    assert posted[1]["after"] == "R100" and posted[1]["id"].startswith("DC_")


def test_graphql_replies_short_of_their_count_fail_the_source(served):
    db, server = served
    refresh(db, server, "llamacpp-16578", graphql=True)
    many_replies(server, 150, dropped=1)
    summary = fails_and_changes_nothing(db, server, "llamacpp-16578", graphql=True)
    assert summary["error"].startswith("incomplete: read 149 of 150 replies to comment 14731036")


def test_without_a_stated_count_absence_withdraws_nothing(served):
    db, server = served
    refresh(db, server, "llamacpp-16578")
    kept = active(db, REMOVED)
    soup = BeautifulSoup(server.body(PAGE_16578), "lxml")
    soup.find(id="discussioncomment-14804653").decompose()
    soup.find(id="discussion-comment-count").decompose()
    server.override(PAGE_16578, str(soup).encode())
    result = refresh(db, server, "llamacpp-16578")
    assert "ok via html" in result.stdout and "0 withdrawn" in result.stdout
    assert "note: the source states no count of comments, replies: posts missing from this read were not " \
           "withdrawn" in result.stdout
    assert active(db, REMOVED) == kept and kept


def test_any_relay_gives_way_to_a_direct_reading(served, tmp_path):
    """Issue 17 item 6: the history rule is keyed by data (a figure's `source.via`), not by one relay's name."""
    db, server = served
    relayed = {
        "source": {"url": "https://github.com/ggml-org/llama.cpp/discussions/4167", "retrieved_at": "2026-09-06",
                   "published_at": "2023-11-22", "author": None, "quote": "M1 7 cores: Q4_0 TG 14.19",
                   "via": {"title": "a blog that is not tokatlas", "publisher": "someone", "published_at": None,
                           "url": "https://example.org/post"}},
        "hardware": {"name": "Apple M1 (7-core GPU)"},
        "model": {"name": "Llama 2 7B", "params_b": 6.74, "file_size_gb": 3.79}, "quantization": "Q4_0",
        "software": {"name": "llama.cpp", "version": "8e672efe", "options": {}},
        "lengths": {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 0},
        "concurrency": {"users": 1, "figure": "per_user"},
        "nature": {"kind": "measured", "procedure": "llama-bench -p 512 -n 128 -ngl 99"},
        "phase": "generation", "tokens_per_second": 14.19, "stddev": None}
    path = tmp_path / "relayed.jsonl"
    path.write_text(json.dumps(relayed, ensure_ascii=False) + "\n", encoding="utf-8")
    run_cli("add", str(path), db=db)
    before = rows(db, "select id, status from measurement where via_title = 'a blog that is not tokatlas'")
    assert [r["status"] for r in before] == ["active"]
    refresh(db, server, "llamacpp-4167")
    after = rows(db, "select status from measurement where id = ?", before[0]["id"])
    assert after[0]["status"] == "superseded"


_DENSE = {"source": {"url": "https://example.org/bench.md", "retrieved_at": "2026-12-01",
                     "quote": "| llama 7B Q4_0 | 3.79 GB | 6.74 B | Metal | 99 | tg128 | 94.27 ± 0.10 |"},
          "hardware": {"name": "Test Machine"},
          "model": {"name": "Llama 2 7B", "params_b": 6.74, "file_size_gb": 3.79}, "quantization": "Q4_0",
          "software": {"name": "llama.cpp", "version": "b6092"},
          "lengths": {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 0},
          "concurrency": {"users": 1, "figure": "per_user"},
          "nature": {"kind": "measured", "procedure": "llama-bench"}, "phase": "generation", "tokens_per_second": 94.27}
_BANDWIDTH = """[[hardware]]
name = "Test Machine"
memory_bandwidth_gbs = {gbs}
bandwidth_kind = "vendor"
bandwidth_source_url = "https://example.org/spec"
bandwidth_quote = "{gbs} GB/s of memory bandwidth"
"""


def test_l10_a_refusal_accepted_later_is_never_both_refused_and_shown(empty_db, tmp_path):
    """Probe round 3, L10: refused above the computed maximum, the bandwidth then corrected and the record added
    again: the figure is shown and its refusal is superseded (kept in the history), not both active."""
    reference, record = tmp_path / "hw.toml", tmp_path / "r.jsonl"
    record.write_text(json.dumps(_DENSE) + "\n")
    reference.write_text(_BANDWIDTH.format(gbs=100))
    run_cli("reference", str(reference), db=empty_db)
    assert "above_ceiling" in run_cli("add", str(record), db=empty_db, check=False).stdout
    reference.write_text(_BANDWIDTH.format(gbs=1000))
    run_cli("reference", str(reference), "--replace", db=empty_db)
    run_cli("add", str(record), db=empty_db)
    assert rows(empty_db, "select status from measurement") == [{"status": "active"}]
    assert rows(empty_db, "select status from rejection") == [{"status": "superseded"}]
