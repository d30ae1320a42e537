"""PoliteSession against a real local server: each fault recovers or ends as a FetchError, never as data."""

from __future__ import annotations

import json
import socket
import time
import traceback
from datetime import UTC

import pytest
import requests

from conftest import run_cli
from fixture_server import Fault, FixtureServer, HostileServer, fixture_server  # noqa: F401  (pytest fixture)
from tpsdb.collect.http import FetchError, PoliteSession, check_same_origin, redact

PAGE = "/ggml-org/llama.cpp/discussions/4167"
TOKEN = "ghp_s3cretT0kenThatMustNeverLeak"


def fast_session(**overrides) -> PoliteSession:
    settings = dict(pause_s=0, backoff_s=0.01, max_backoff_s=0.05, timeout_s=2, max_attempts=4, max_total_s=10)
    return PoliteSession(**(settings | overrides))


def test_get_returns_whole_page_with_lower_case_headers_and_utc_time(fixture_server):
    session = fast_session()
    fetched = session.get(fixture_server.base_url + PAGE)
    assert fetched.status == 200
    assert fetched.url == fixture_server.base_url + PAGE
    assert fetched.body == fixture_server.body(PAGE)
    assert fetched.etag and fetched.last_modified
    assert all(name == name.lower() for name in fetched.headers)
    assert fetched.retrieved_at.tzinfo is not None and fetched.retrieved_at.utcoffset() == UTC.utcoffset(None)
    assert session.requests_made == 1


def test_descriptive_user_agent_and_timeouts_on_every_request(fixture_server, monkeypatch):
    timeouts = []
    original = requests.Session.request

    def spy(self, method, url, **kwargs):
        timeouts.append(kwargs.get("timeout"))
        return original(self, method, url, **kwargs)

    monkeypatch.setattr(requests.Session, "request", spy)
    session = fast_session(timeout_s=7)
    session.get(fixture_server.base_url + PAGE)
    session.post_json(fixture_server.api_url, {"variables": {"number": 4167, "after": None}})

    user_agent = fixture_server.requests[0].headers["user-agent"]
    assert user_agent.startswith("tpsdb/") and "provenance" in user_agent
    assert timeouts == [(7, 7), (7, 7)]  # (connect, read)


def test_pause_between_requests(fixture_server):
    session = fast_session(pause_s=0.3)
    start = time.monotonic()
    session.get(fixture_server.base_url + PAGE)
    session.get(fixture_server.base_url + PAGE)
    assert time.monotonic() - start >= 0.3


def test_conditional_requests_give_304(fixture_server):
    session = fast_session()
    url = fixture_server.base_url + PAGE
    first = session.get(url)

    by_etag = session.get(url, etag=first.etag)
    by_date = session.get(url, last_modified=first.last_modified)

    assert (by_etag.status, by_etag.body) == (304, b"")
    assert (by_date.status, by_date.body) == (304, b"")
    assert session.not_modified == 2
    assert fixture_server.requests[1].headers["if-none-match"] == first.etag
    assert fixture_server.requests[2].headers["if-modified-since"] == first.last_modified


def test_changed_page_is_served_in_full_despite_old_validators(fixture_server):
    session = fast_session()
    url = fixture_server.base_url + PAGE
    first = session.get(url)
    fixture_server.override(PAGE, b"<html>edited</html>")

    second = session.get(url, etag=first.etag, last_modified=first.last_modified)

    assert (second.status, second.body) == (200, b"<html>edited</html>")
    assert second.etag != first.etag


def test_502_then_success(fixture_server):
    fixture_server.inject(PAGE, [Fault("status", 502)])
    session = fast_session()
    assert session.get(fixture_server.base_url + PAGE).status == 200
    assert session.requests_made == 2


def test_persistent_5xx_gives_fetch_error_naming_url_cause_and_attempts(fixture_server):
    fixture_server.inject(PAGE, [Fault("status", 503)] * 10)
    url = fixture_server.base_url + PAGE
    with pytest.raises(FetchError) as raised:
        fast_session(max_attempts=3).get(url)
    assert raised.value.attempts == 3 and raised.value.status == 503
    assert url in str(raised.value) and "HTTP 503" in str(raised.value) and "3 attempts" in str(raised.value)


@pytest.mark.parametrize("fault", [Fault("retry_after", 429, 1), Fault("ratelimit", 403, 1)],
                         ids=["429 with Retry-After", "exhausted rate limit until its reset"])
def test_waits_as_long_as_the_answer_says(fixture_server, fault):
    fixture_server.inject(PAGE, [fault])
    start = time.monotonic()
    assert fast_session().get(fixture_server.base_url + PAGE).status == 200
    assert time.monotonic() - start >= 0.95


def test_retry_after_as_http_date(fixture_server):
    fixture_server.inject(PAGE, [Fault("retry_after_date", 503, 1)])
    session = fast_session()
    assert session.get(fixture_server.base_url + PAGE).status == 200
    assert session.requests_made == 2


def test_retry_after_beyond_budget_gives_up_at_once(fixture_server):
    fixture_server.inject(PAGE, [Fault("retry_after", 429, 600)])
    start = time.monotonic()
    with pytest.raises(FetchError, match="wait 600 s") as raised:
        fast_session(max_total_s=5).get(fixture_server.base_url + PAGE)
    assert raised.value.attempts == 1 and time.monotonic() - start < 2


@pytest.mark.parametrize("kind", ["reset", "truncate", "cut"])
def test_broken_connection_is_retried(fixture_server, kind):
    fixture_server.inject(PAGE, [Fault(kind)])
    session = fast_session()
    fetched = session.get(fixture_server.base_url + PAGE)
    assert fetched.body == fixture_server.body(PAGE)  # the whole page, never the cut one
    assert session.requests_made == 2


@pytest.mark.parametrize("kind", ["reset", "truncate", "cut"])
def test_broken_connection_every_time_gives_fetch_error(fixture_server, kind):
    fixture_server.inject(PAGE, [Fault(kind)] * 10)
    with pytest.raises(FetchError) as raised:
        fast_session(max_attempts=3).get(fixture_server.base_url + PAGE)
    assert raised.value.attempts == 3


def test_slower_than_timeout_is_retried_then_fails(fixture_server):
    fixture_server.inject(PAGE, [Fault("slow", seconds=1.0)])
    session = fast_session(timeout_s=0.3)
    assert session.get(fixture_server.base_url + PAGE).status == 200
    assert session.requests_made == 2

    fixture_server.inject(PAGE, [Fault("slow", seconds=1.0)] * 2)
    with pytest.raises(FetchError, match="(?i)timeout|timed out"):
        fast_session(timeout_s=0.3, max_attempts=2).get(fixture_server.base_url + PAGE)


def test_rate_limit_reset_beyond_budget_gives_fetch_error(fixture_server):
    fixture_server.inject(PAGE, [Fault("ratelimit", 403, 3600)])
    start = time.monotonic()
    with pytest.raises(FetchError, match="HTTP 403"):
        fast_session(max_total_s=5).get(fixture_server.base_url + PAGE)
    assert time.monotonic() - start < 2


def test_last_call_of_rate_limit_holds_back_the_next_request(fixture_server):
    fixture_server.inject(PAGE, [Fault("last_call", seconds=1), Fault("last_call", seconds=3600)])
    session = fast_session(max_total_s=5)
    session.get(fixture_server.base_url + PAGE)
    start = time.monotonic()
    session.get(fixture_server.base_url + PAGE)  # waits for the reset, then goes
    assert time.monotonic() - start >= 0.95

    with pytest.raises(FetchError, match="rate limit"):  # reset an hour away: not even sent
        session.get(fixture_server.base_url + PAGE)
    assert len(fixture_server.requests) == 2


def test_other_4xx_fails_at_once(fixture_server):
    session = fast_session()
    with pytest.raises(FetchError, match="HTTP 404") as raised:
        session.get(fixture_server.base_url + "/no/such/page")
    assert raised.value.attempts == 1 and session.requests_made == 1


def test_connection_refused_fails_at_once_naming_host_and_port():
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(FetchError, match=f"connection refused by 127.0.0.1:{port}") as raised:
        fast_session(max_attempts=4).get(f"http://127.0.0.1:{port}/")
    assert raised.value.attempts == 1  # nothing listens: trying again will not change that


def test_on_request_sees_every_attempt(fixture_server):
    fixture_server.inject(PAGE, [Fault("status", 502)])
    seen = []
    fast_session(on_request=seen.append).get(fixture_server.base_url + PAGE)
    assert seen == [fixture_server.base_url + PAGE] * 2


def _everything_about(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc)) + repr(exc) + repr(vars(exc))


def test_token_is_sent_but_never_kept_or_shown():
    with FixtureServer(token=TOKEN) as server:
        session = fast_session(max_attempts=2)
        auth = {"Authorization": f"bearer {TOKEN}"}
        fetched = session.post_json(server.api_url, {"variables": {"number": 4167, "after": None}}, headers=auth)
        assert fetched.status == 200  # the server checked the token
        assert server.requests[0].auth and "authorization" not in server.requests[0].headers
        assert "authorization" not in fetched.headers
        assert TOKEN not in repr(fetched)

        server.inject("/graphql", [Fault("status", 502)] * 2)
        with pytest.raises(FetchError) as failed:
            session.post_json(server.api_url, {"variables": {"number": 4167, "after": None}}, headers=auth)
        with pytest.raises(FetchError) as refused:
            session.post_json(server.api_url, {}, headers={"Authorization": "bearer wrong-" + TOKEN})
        for raised in (failed, refused):
            assert raised.value.__cause__ is None and raised.value.__context__ is None
            assert TOKEN not in _everything_about(raised.value)


@pytest.mark.parametrize("tail", ["\r", "\n", "\r\n", "\u20ac"], ids=["cr", "lf", "crlf", "euro"])
def test_d5_a_refused_header_never_quotes_the_token(fixture_server, tail):
    # requests quotes a header value with a CR or LF back with repr() ('bearer TOKEN\r'); http.client names a
    # non-Latin-1 character. Whatever the rendering, the token is redacted from the error.
    session = fast_session(max_attempts=2)
    with pytest.raises(FetchError) as refused:
        session.post_json(fixture_server.api_url, {}, headers={"Authorization": f"bearer {TOKEN}{tail}"})
    text = _everything_about(refused.value)
    assert TOKEN not in text and TOKEN[4:20] not in text
    assert refused.value.__cause__ is None and refused.value.__context__ is None


def test_d5_redaction_catches_raw_and_escaped_renderings():
    secret = f"bearer {TOKEN}\r\n"
    renderings = [secret, repr(secret), json.dumps(secret), repr(TOKEN + "\r"), TOKEN, f"'bearer {TOKEN}\\r'"]
    text = redact(" | ".join(renderings), [secret])
    assert TOKEN not in text and "[redacted]" in text
    assert redact("nothing secret here", [secret]) == "nothing secret here"


# --- D2: each answer bounded in total time; D3: in decoded size; issue 20: a host that cannot answer fails at once

@pytest.mark.parametrize("mode", ["trickle", "trickle_headers", "hang"])
def test_d2_an_answer_that_never_completes_ends_at_its_total_time_bound(mode):
    # A byte every 50 ms never trips the 2 s read timeout: only the answer's own deadline ends it.
    with HostileServer(mode) as server:
        start = time.monotonic()
        with pytest.raises(FetchError, match=r"not complete after 0.4 s \(TPSDB_HTTP_MAX_ANSWER_S") as raised:
            fast_session(max_answer_s=0.4, max_attempts=1).get(server.base_url + "/x")
        assert time.monotonic() - start < 1.5
        assert raised.value.attempts == 1


def test_d2_retries_of_a_trickle_stay_within_the_request_budget():
    with HostileServer("trickle") as server:
        start = time.monotonic()
        with pytest.raises(FetchError, match="not complete"):
            fast_session(max_answer_s=0.3, max_total_s=1.0, max_attempts=10).get(server.base_url + "/x")
        assert time.monotonic() - start < 2.0
        assert 2 <= len(server.requests) <= 4


@pytest.mark.parametrize("mode", ["flood", "huge_length", "gzip_bomb"])
def test_d3_an_answer_past_the_cap_fails_at_once_and_is_not_retried(mode):
    with HostileServer(mode) as server:
        start = time.monotonic()
        with pytest.raises(FetchError, match="answer too large") as raised:
            fast_session(max_body_bytes=2**20, max_attempts=3).get(server.base_url + "/x")
        assert time.monotonic() - start < 2 and raised.value.attempts == 1
        if mode == "gzip_bomb":  # counted after decoding: 16 MB of blanks arrive as a few KB
            assert len(server.gzip_bomb()) < 2**20 and "once decoded" in str(raised.value)


def test_d3_a_redirects_body_is_never_read(monkeypatch):
    # requests reads a 3xx body whole before it follows the redirect: an endless one held the request (and memory).
    with HostileServer("redirect_flood") as server:
        start = time.monotonic()
        fetched = fast_session(max_answer_s=2, max_body_bytes=2**20).get(server.base_url + "/x")
        assert fetched.body == b"landed" and time.monotonic() - start < 1


def test_d3_a_kind_may_state_its_own_cap(fixture_server):
    session = fast_session()
    url = fixture_server.base_url + PAGE
    assert session.get(url).body == fixture_server.body(PAGE)
    with pytest.raises(FetchError, match="answer too large"):
        session.get(url, max_bytes=100)


def test_issue20_a_host_that_does_not_resolve_fails_at_once_naming_it():
    try:
        socket.getaddrinfo("tpsdb-no-such-host.invalid", 80)
        pytest.skip("this resolver answers for .invalid names")
    except OSError:
        pass
    start = time.monotonic()
    with pytest.raises(FetchError, match="cannot resolve the host tpsdb-no-such-host.invalid") as raised:
        fast_session(max_attempts=5, backoff_s=1).get("http://tpsdb-no-such-host.invalid/x")
    assert raised.value.attempts == 1 and time.monotonic() - start < 5
    assert "urllib3" not in str(raised.value) and "Max retries" not in str(raised.value)


def test_issue20_offline_refresh_fails_in_seconds_with_one_error_line_naming_the_host(tmp_path):
    try:
        socket.getaddrinfo("tpsdb-no-such-host.invalid", 443)
        pytest.skip("this resolver answers for .invalid names")
    except OSError:
        pass
    db = tmp_path / "offline.sqlite"
    run_cli("init", "--no-seed", db=db)
    start = time.monotonic()
    result = run_cli("refresh", "llamacpp-4167", db=db, check=False,
                     env={"TPSDB_GITHUB_URL": "https://tpsdb-no-such-host.invalid", "TPSDB_GITHUB_TOKEN": "",
                          "GITHUB_TOKEN": "", "TPSDB_HTTP_PAUSE_S": "0"})  # the default attempts and backoff
    assert time.monotonic() - start < 5 and result.returncode == 1
    errors = [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("error:")]
    assert errors == ["error: GET https://tpsdb-no-such-host.invalid/ggml-org/llama.cpp/discussions/4167: cannot "
                      "resolve the host tpsdb-no-such-host.invalid (no network, or no DNS?) (after 1 attempt)"]


@pytest.mark.parametrize(("url", "same"), [
    ("https://api.github.com/repos/o/r/issues/1/comments?page=2", True),
    ("https://API.github.com:443/x", True),  # the default port, named or not; host names in any case
    ("http://api.github.com/x", False),  # another scheme: the token would travel in clear
    ("https://api.github.com:8443/x", False),
    ("https://api.github.com.evil.example/x", False),
    ("https://evil.example/api.github.com/x", False),
    ("//evil.example/x", False),
])
def test_d1_credentials_origin_is_scheme_host_and_port(url, same):
    if same:
        check_same_origin(url, "https://api.github.com", "the next page")
    else:
        with pytest.raises(FetchError, match="the next page is on another host") as raised:
            check_same_origin(url, "https://api.github.com", "the next page")
        assert raised.value.attempts == 0 and "(not sent)" in str(raised.value)
