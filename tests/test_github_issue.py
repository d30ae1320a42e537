"""The `github_issue` kind: a pull request read over GitHub's REST API from a real local server (tests/fixture_server),
end to end through `tpsdb refresh`: pagination by Link header to the end, conditional requests, edits and deletions,
faults and short reads that leave the database as it was."""

import json

import pytest

from conftest import run_cli
from fixture_server import Fault, FixtureServer, HostileServer
from refresh_helpers import TOKEN, dump, rows, server_env
from rest_fixture import NUMBER, OWNER, PR_URL, REPO, SOURCE_FILE, comment, expected_figures, pull_request
from tpsdb.collect.github import PageFormatError
from tpsdb.collect.github_rest import read_issue_rest

KEY = f"llamacpp-pr-{NUMBER}"
ISSUE = f"/repos/{OWNER}/{REPO}/issues/{NUMBER}"
PER_PAGE = 2  # the fixture's comments on several pages
COMMENTS = len(pull_request()[1])
PAGES = -(-COMMENTS // PER_PAGE)


@pytest.fixture
def pr(tmp_path):
    """(db, server, refresh) with the source file written as the issue asks (nothing but the five keys)."""
    db = tmp_path / "issue.sqlite"
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / f"{KEY}.toml").write_text(SOURCE_FILE, encoding="utf-8")
    run_cli("init", "--no-seed", db=db)
    issue, comments = pull_request()
    with FixtureServer() as server:
        server.rest_issue(OWNER, REPO, NUMBER, issue, comments, per_page=PER_PAGE)

        def refresh(check=True, **env):
            # The API's base, as GitHub's own address is named (no /graphql).
            env = {**server_env(server), "TPSDB_GITHUB_API_URL": server.base_url, **env}
            result = run_cli("refresh", KEY, "--format", "json", "--sources-dir", str(sources), db=db, env=env,
                             check=check)
            return json.loads(result.stdout)[0] if check else result  # unchecked: the process's result

        yield db, server, refresh


def figures(db, status="active"):
    return sorted((r["post_url"], r["tokens_per_second"]) for r in rows(
        db, "select p.permalink as post_url, m.tokens_per_second from measurement m join post p on p.id = m.post_id "
            "where m.status = ?", status))


def test_first_refresh_follows_every_link_and_reads_every_figure_with_its_issuecomment_permalink(pr):
    db, server, refresh = pr
    summary = refresh()
    assert summary["status"] == "ok" and summary["transport"] == "rest"
    paths = [(r.path, r.query.get("page")) for r in server.requests]
    assert paths == [(ISSUE, None), (f"{ISSUE}/comments", None)] + [
        (f"{ISSUE}/comments", str(page)) for page in range(2, PAGES + 1)]  # the issue, then every page to the last
    assert all(r.headers["accept"] == "application/vnd.github+json" for r in server.requests)
    assert server.requests[1].query["per_page"] == "100"
    assert figures(db) == expected_figures()
    assert summary["new"] == len(expected_figures()) and summary["posts"] == 1 + COMMENTS  # the body too
    links = {r["permalink"] for r in rows(db, "select permalink from post")}
    assert f"{PR_URL}#issuecomment-14689947" in links and PR_URL in links
    sources = rows(db, "select kind, url from source")
    assert sources == [{"kind": "github_issue", "url": PR_URL}]


def test_second_refresh_is_all_304_and_parses_nothing(pr):
    db, server, refresh = pr
    refresh()
    before = dump(db)
    server.requests.clear()
    summary = refresh()
    assert summary["status"] == "unchanged" and summary["requests"] == summary["not_modified"] == 1 + PAGES
    assert all("if-none-match" in r.headers for r in server.requests)
    assert dump(db) == before


def test_a_304_without_its_link_header_goes_on_by_page_number(pr):
    db, server, refresh = pr
    issue, comments = pull_request()
    server.rest_issue(OWNER, REPO, NUMBER, issue, comments, per_page=PER_PAGE, link_on_304=False)
    refresh()
    server.requests.clear()
    assert refresh()["status"] == "unchanged"
    assert [r.query.get("page") for r in server.requests_to(f"{ISSUE}/comments")] == [None] + [str(p) for p in range(2, PAGES + 1)]


def test_comments_added_after_a_full_unchanged_page_are_read(pr):
    db, server, refresh = pr
    issue, comments = pull_request()
    server.rest_issue(OWNER, REPO, NUMBER, issue, comments[:2], per_page=PER_PAGE, link_on_304=False)
    refresh()
    server.rest_issue(OWNER, REPO, NUMBER, issue, comments, per_page=PER_PAGE, link_on_304=False)
    summary = refresh()  # page 1 is the same bytes (304, no Link): the issue's count says more follow
    assert summary["status"] == "ok", summary
    assert figures(db) == expected_figures()


def test_an_edited_comment_supersedes_and_a_deleted_one_withdraws(pr):
    db, server, refresh = pr
    refresh()
    issue, comments = pull_request()
    edited = next(c for c in comments if c["id"] == 14689947)
    edited["body"] = edited["body"].replace("3610.56", "3777.77")
    edited["updated_at"] = "2025-12-01T00:00:00Z"
    removed = next(c for c in comments if c["id"] == 14804653)
    server.rest_issue(OWNER, REPO, NUMBER, issue, [c for c in comments if c is not removed], per_page=PER_PAGE)
    summary = refresh()
    assert summary["status"] == "ok" and summary["changed"] == 1 and summary["withdrawn"] == 2, summary
    edited_link, removed_link = f"{PR_URL}#issuecomment-14689947", f"{PR_URL}#issuecomment-14804653"
    assert (edited_link, 3777.77) in figures(db) and (edited_link, 3610.56) in figures(db, "superseded")
    assert [f for f in figures(db) if f[0] == removed_link] == []
    assert len([f for f in figures(db, "withdrawn") if f[0] == removed_link]) == 2
    post = rows(db, "select status, edited_at from post where permalink = ?", edited_link)[0]
    assert post["status"] == "active" and post["edited_at"].startswith("2025-12-01")
    assert rows(db, "select status from post where permalink = ?", removed_link) == [{"status": "withdrawn"}]


def test_a_read_short_of_the_issues_comment_count_fails_and_withdraws_nothing(pr):
    db, server, refresh = pr
    refresh()
    before = dump(db)
    issue, comments = pull_request()
    server.rest_issue(OWNER, REPO, NUMBER, {**issue, "comments": len(comments)}, comments[:4], per_page=PER_PAGE)
    result = refresh(check=False)
    summary = json.loads(result.stdout)[0]
    assert result.returncode == 1 and summary["status"] == "failed"
    assert summary["error"].startswith(f"incomplete: read 4 of {COMMENTS} comments")
    assert dump(db) == before


@pytest.mark.parametrize("faults", [
    [Fault("status", 502)],
    [Fault("retry_after", seconds=1)],
    [Fault("reset")],
    [Fault("truncate")],
    [Fault("ratelimit", seconds=1)],
], ids=["502", "429-retry-after", "reset", "truncated", "rate-limit-reset"])
def test_a_transient_fault_on_a_comment_page_is_retried(pr, faults):
    db, server, refresh = pr
    server.inject(f"{ISSUE}/comments", faults)
    summary = refresh()
    assert summary["status"] == "ok" and summary["requests"] == 2 + PAGES
    assert figures(db) == expected_figures()


def test_retry_after_is_waited_for(pr):
    db, server, refresh = pr
    server.inject(ISSUE, [Fault("retry_after", seconds=1)])
    refresh()
    first, second = server.requests[0], server.requests[1]
    assert first.path == second.path == ISSUE
    assert summary_duration(db) >= 1.0


def summary_duration(db):
    run = rows(db, "select started_at, finished_at from refresh_run order by id desc limit 1")[0]
    from datetime import datetime
    return (datetime.fromisoformat(run["finished_at"]) - datetime.fromisoformat(run["started_at"])).total_seconds()


@pytest.mark.parametrize("fault", ["status", "reset", "truncate"])
def test_a_lasting_fault_fails_the_source_and_leaves_the_database_as_it_was(pr, fault):
    db, server, refresh = pr
    refresh()
    issue, comments = pull_request()
    comments[0]["body"] += "\n\nedited"  # a change the failed run must not store
    server.rest_issue(OWNER, REPO, NUMBER, issue, comments, per_page=PER_PAGE)
    before = dump(db)
    server.inject(f"{ISSUE}/comments", [Fault(fault)] * 10)
    result = refresh(check=False, TPSDB_HTTP_MAX_ATTEMPTS="3")
    summary = json.loads(result.stdout)[0]
    assert result.returncode == 1 and summary["status"] == "failed" and f"{ISSUE}/comments" in summary["error"]
    assert dump(db) == before


def test_the_token_is_sent_as_a_bearer_and_stored_nowhere(pr):
    db, server, refresh = pr
    refresh(TPSDB_GITHUB_TOKEN=TOKEN)
    assert server.requests and all(r.auth for r in server.requests)
    assert TOKEN not in dump(db) + json.dumps(rows(db, "select * from refresh_run"))


def test_the_graphql_form_of_the_api_variable_names_the_same_api(pr):
    db, server, refresh = pr
    assert refresh(TPSDB_GITHUB_API_URL=server.base_url + "/graphql")["status"] == "ok"


def test_reparse_reads_the_archived_pages_again(pr):
    db, server, refresh = pr
    refresh()
    server.stop()  # no network: the archive alone
    sources = db.parent / "sources"
    result = run_cli("reparse", KEY, "--format", "json", "--sources-dir", str(sources), db=db)
    assert json.loads(result.stdout)[0]["status"] == "ok"
    assert figures(db) == expected_figures()


# --- reading, without the network -----------------------------------------------------------------------------
def test_permalinks_come_from_the_source_url_when_html_url_is_not_this_issues_comment():
    issue = {"number": NUMBER, "comments": 2, "html_url": "http://127.0.0.1:9/x", "body": "op", "user": None}
    ours = comment(11, "a")
    stranger = {**comment(12, "b"), "html_url": "https://github.com/other/repo/pull/1#issuecomment-12"}
    posts, completeness = read_issue_rest([json.dumps(issue).encode(), json.dumps([ours, stranger]).encode()],
                                          OWNER, REPO, NUMBER, PR_URL)
    assert [p.permalink for _, p in posts] == [PR_URL, f"{PR_URL}#issuecomment-11", f"{PR_URL}#issuecomment-12"]
    assert [index for index, _ in posts] == [0, 1, 1] and posts[0][1].author is None
    assert completeness.verified


def test_an_issue_without_a_comment_count_withdraws_nothing_by_absence():
    issue = {"number": NUMBER, "body": "op"}
    _, completeness = read_issue_rest([json.dumps(issue).encode(), b"[]"], OWNER, REPO, NUMBER, PR_URL)
    assert not completeness.verified and completeness.unstated == ["comments"]


def test_a_source_file_of_the_kind_must_name_an_issue_or_pull_request(tmp_path):
    (tmp_path / "bad.toml").write_text(SOURCE_FILE.replace("/pull/", "/discussions/"), encoding="utf-8")
    result = run_cli("sources", "--sources-dir", str(tmp_path), db=tmp_path / "x.sqlite", check=False)
    assert result.returncode != 0
    assert result.stderr.strip() == "error: bad.toml: url: not a https://github.com/OWNER/REPO/pull/N (or issues/N) " \
                                    "address"



# --- probe 2: D1 (the token followed a Link to any host), L1 (pagination errors), L2/L3 (malformed answers) -------
CANARY = "ghp_CANARYtokenThatMustStayOnTheApiHost"


def test_d1_a_next_link_to_another_host_gets_no_request_and_fails_the_source_storing_nothing(tmp_path):
    # The comments page says its next page is on 127.0.0.2: the token (and the reading) must stay on 127.0.0.1.
    db, sources = tmp_path / "d1.sqlite", tmp_path / "sources"
    sources.mkdir()
    (sources / f"{KEY}.toml").write_text(SOURCE_FILE, encoding="utf-8")
    run_cli("init", "--no-seed", db=db)
    with HostileServer("foreign_link") as server:
        result = run_cli("refresh", KEY, "--format", "json", "--sources-dir", str(sources), db=db, check=False,
                         env={"TPSDB_GITHUB_API_URL": server.base_url, "TPSDB_GITHUB_TOKEN": CANARY,
                              "TPSDB_HTTP_PAUSE_S": "0", "TPSDB_HTTP_MAX_ATTEMPTS": "1"})
        assert server.foreign.requests == []  # not asked at all, so neither the token nor its answer moved
        assert [auth for _, _, auth in server.requests] == [True, True]  # the issue and comments page 1
    summary = json.loads(result.stdout)[0]
    assert result.returncode == 1 and summary["status"] == "failed"
    assert "another host, 127.0.0.2" in summary["error"] and "next page of comments" in summary["error"]
    assert CANARY not in result.stdout + result.stderr
    for table in ("snapshot", "post", "measurement", "rejection"):
        assert rows(db, f"select count(*) as n from {table}")[0]["n"] == 0, table


def test_l1_a_link_header_with_no_address_says_so(pr):
    db, server, refresh = pr
    server.answer(f"{ISSUE}/comments", json.dumps([comment(11, "a")]).encode(), {"Link": '<>; rel="next"'})
    summary = refresh(check=False, TPSDB_HTTP_MAX_ATTEMPTS="1")
    error = json.loads(summary.stdout)[0]["error"]
    assert 'rel="next" page with no address' in error and "loops back" not in error


def test_l1_pagination_far_past_the_issues_count_stops_early_and_says_why(pr):
    db, server, refresh = pr
    issue, _ = pull_request()
    server.rest_issue(OWNER, REPO, NUMBER, {**issue, "comments": 2}, [comment(i, "x") for i in range(1, 121)],
                      per_page=1)  # 120 pages of one comment each, for an issue of 2 comments
    summary = json.loads(refresh(check=False, TPSDB_HTTP_MAX_ATTEMPTS="1").stdout)[0]
    assert "pagination goes on past the issue's count: 103 comments read, the issue states 2" in summary["error"]
    assert summary["requests"] == 1 + 103  # not the 1,000-page cap


@pytest.mark.parametrize(("comments", "says"), [
    ([5, "x"], "comment page 1, item 1: not a JSON object (5)"),
    ([{"body": "no id"}], "comment page 1, item 1: id: not a comment id (a positive whole number): null"),
    ([{"id": [1], "body": "x"}], "comment page 1, item 1: id: not a comment id (a positive whole number): [1]"),
    ([{"id": "7", "body": "x"}], 'comment page 1, item 1: id: not a comment id (a positive whole number): "7"'),
    ([{"id": True, "body": "x"}], "comment page 1, item 1: id: not a comment id (a positive whole number): true"),
    ([{"id": 7, "body": {"a": 1}}], 'comment 7: body: not text ({"a": 1})'),
    ([{"id": 7, "body": "x", "created_at": "not a date"}], 'comment 7: created_at: not a date ("not a date")'),
    ([{"id": 7, "body": "x", "created_at": 5}], "comment 7: created_at: not a date (5)"),
], ids=["not-objects", "no-id", "list-id", "string-id", "bool-id", "dict-body", "bad-date", "number-date"])
def test_l2_l3_a_malformed_comment_fails_the_read_naming_page_and_field(comments, says):
    issue = json.dumps({"number": NUMBER, "comments": len(comments), "body": "op"}).encode()
    with pytest.raises(PageFormatError) as raised:
        read_issue_rest([issue, json.dumps(comments).encode()], OWNER, REPO, NUMBER, PR_URL)
    assert str(raised.value) == f"{OWNER}/{REPO}#{NUMBER}: {says}"


def test_l2_a_malformed_answer_fails_the_run_with_a_message_not_a_python_exception(pr):
    db, server, refresh = pr
    server.answer(f"{ISSUE}/comments", b'[5, "x"]')
    summary = json.loads(refresh(check=False).stdout)[0]
    assert summary["status"] == "failed"
    assert summary["error"] == f"{OWNER}/{REPO}#{NUMBER}: comment page 1, item 1: not a JSON object (5)"


def test_l2_an_answer_nested_too_deeply_is_no_recursion_error(pr):
    db, server, refresh = pr
    server.answer(f"{ISSUE}/comments", b"[" * 200_000)
    error = json.loads(refresh(check=False, TPSDB_HTTP_MAX_ATTEMPTS="1").stdout)[0]["error"]
    assert "nested too deeply" in error and "RecursionError" not in error
