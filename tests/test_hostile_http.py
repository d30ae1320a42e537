"""Every registered kind's fetch path against a hostile server (issue 21: "a hostile server test runs against every
kind's fetch path"): a server that hangs, trickles its headers or its body, floods, announces 10 GB, sends a gzip
bomb, points its next page at another host, or answers 500/429 for ever. Whatever the kind, the fetch ends within
its bounds with a FetchError (or PageFormatError) that says why, keeps nothing over the size cap, sends nothing to
the other host, and never shows the token.

The kinds come from the registry, so a new kind is covered as soon as it exists: its source file is the one in
EXAMPLES, else the first of GUESSES its `check` accepts; a kind neither fits is skipped with the reason `check`
gives (add it to EXAMPLES). The bounds are lowered through the environment, as a user would set them, so the
module stays fast: each hanging case costs at most TPSDB_HTTP_MAX_TOTAL_S.
"""

from __future__ import annotations

import time

import pytest

from fixture_server import HostileServer
from tpsdb import config
from tpsdb.collect.github import PageFormatError
from tpsdb.collect.http import Cached, Fetched, FetchError, PoliteSession
from tpsdb.kinds import Archive, registry
from tpsdb.sources import SourceSpec

TOKEN = "ghp_CANARYhostileServerMustNeverSeeMe"
CAP = 2**20
BOUNDS = {"TPSDB_HTTP_PAUSE_S": "0", "TPSDB_HTTP_BACKOFF_S": "0.01", "TPSDB_HTTP_TIMEOUT_S": "1",
          "TPSDB_HTTP_MAX_ATTEMPTS": "2", "TPSDB_HTTP_MAX_ANSWER_S": "0.15", "TPSDB_HTTP_MAX_TOTAL_S": "0.25",
          "TPSDB_HTTP_MAX_BYTES": str(CAP)}
# What each mode's failure must say.
# What the error says, per mode. A slow answer is cut either inside an attempt or, on a loaded machine, before a
# retry has any of the budget left: both are the time bound speaking.
_TIME_BOUND = ("not complete after", "no time left of the")
SAYS = {"hang": _TIME_BOUND, "trickle": _TIME_BOUND, "trickle_headers": _TIME_BOUND,
        "flood": ("answer too large",), "huge_length": ("answer too large",), "gzip_bomb": ("answer too large",),
        "status_500": ("HTTP 500",), "status_429": ("HTTP 429",)}
MODES = [*SAYS, "foreign_link"]

# A source file of each kind whose addresses are the hostile server's ("{base}"); the GitHub kinds find the server
# through TPSDB_GITHUB_URL and TPSDB_GITHUB_API_URL.
EXAMPLES = {
    "github_issue": {"url": "https://github.com/ggml-org/llama.cpp/pull/4766"},
    "github_discussion": {"url": "https://github.com/ggml-org/llama.cpp/discussions/4167"},
    "file": {"url": "https://github.com/o/r/blob/0123456/bench.md", "fetch_url": "{base}/o/r/bench.md"},
    "peer_dataset": {"url": "https://github.com/o/r/blob/0123456/peer.json", "fetch_url": "{base}/o/r/peer.json",
                     "format": "tokatlas"},
    "repo_file": {"url": "https://github.com/o/r/blob/" + "0" * 40 + "/docs/results.json", "repo": "o/r",
                  "path": "docs/results.json", "format": "kyuz0"},
    "json_api": {"url": "https://example.org/api/v1/benchmarks", "fetch_url": "{base}/api/v1/benchmarks",
                 "format": "inferencex", "queries": ["dsr1"]},
}
GUESSES = [
    {"url": "{base}/o/r/data.json"},
    {"url": "https://github.com/o/r/blob/0123456/data.json", "fetch_url": "{base}/o/r/data.json"},
    {"url": "https://github.com/o/r/issues/1"},
]


class MemoryArchive(Archive):
    """The engine's side of a fetch, kept in memory: every response handed over, no copies from a last run."""

    def __init__(self) -> None:
        self.responses: list[Fetched] = []

    def on_response(self, fetched: Fetched) -> None:
        self.responses.append(fetched)

    def cached(self, url: str) -> Cached | None:
        return None


def _spec(name: str, settings: dict, base: str) -> SourceSpec:
    values = {key: value.replace("{base}", base) if isinstance(value, str) else value
              for key, value in settings.items()}
    return SourceSpec(key=f"hostile-{name}", url=values.pop("url"), kind=name, title=None, licence=None,
                      refresh_interval_hours=24, settings=values)


def _example(name: str) -> tuple[dict | None, str]:
    """(a source file's settings for this kind, or None; why there is none)."""
    kind = registry()[name]
    why = "no example"
    for settings in ([EXAMPLES[name]] if name in EXAMPLES else GUESSES):
        problem = kind.check(_spec(name, settings, "http://127.0.0.1:9"))
        if problem is None:
            return settings, ""
        why = problem
    return None, why


def _targets():
    for name in sorted(registry()):
        settings, why = _example(name)
        for token in (True, False):
            marks = [] if settings else [pytest.mark.skip(reason=f"{name}: no example source file ({why}); "
                                                                 "add one to EXAMPLES")]
            yield pytest.param(name, settings, token, id=f"{name}-{'token' if token else 'anonymous'}", marks=marks)


@pytest.fixture
def bounded(monkeypatch):
    for name, value in BOUNDS.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("name", "settings", "token"), list(_targets()))
def test_every_kinds_fetch_is_bounded_and_keeps_to_its_host(bounded, name, settings, token, mode):
    with HostileServer(mode) as server:
        bounded.setenv("TPSDB_GITHUB_URL", server.base_url)
        bounded.setenv("TPSDB_GITHUB_API_URL", server.base_url)
        bounded.setenv("TPSDB_GITHUB_RAW_URL", server.base_url)
        bounded.delenv("GITHUB_TOKEN", raising=False)
        bounded.setenv("TPSDB_GITHUB_TOKEN", TOKEN)
        with_token = registry()[name](_spec(name, settings, server.base_url)).prepare()
        bounded.setenv("TPSDB_GITHUB_TOKEN", "")
        without = registry()[name](_spec(name, settings, server.base_url)).prepare()
        if not token and without == with_token:
            pytest.skip(f"{name} fetches the same way ({without}) with a token or without")
        bounded.setenv("TPSDB_GITHUB_TOKEN", TOKEN if token else "")

        kind = registry()[name](_spec(name, settings, server.base_url))
        transport = kind.prepare()
        archive = MemoryArchive()
        error: Exception | None = None
        start = time.monotonic()
        with PoliteSession(**config.http_settings()) as http:
            try:
                kind.fetch(http, archive, transport)
            except (FetchError, PageFormatError) as raised:  # anything else is a bare exception: a failure here
                error = raised
        elapsed = time.monotonic() - start
        foreign = server.foreign.requests if server.foreign else []

    # Bounded in time: a hanging answer costs at most the request's budget (0.25 s) per request.
    assert elapsed < 3, f"{name} ({transport}) took {elapsed:.1f} s against {mode}"
    # Bounded in size: nothing over the cap reaches the archive.
    assert all(len(f.body) <= CAP for f in archive.responses)
    # Kept to its host: no kind asks another host than its own, with or without the token.
    assert foreign == [], f"{name} ({transport}) followed a link to the other host"
    if error is not None:
        assert TOKEN not in str(error)
    if mode == "foreign_link":
        if name == "github_issue" or transport == "html":  # the fetch paths that follow a next-page link
            assert error is not None and "another host, 127.0.0.2" in str(error), error
    else:
        assert error is not None, f"{name} ({transport}) accepted a {mode} answer"
        assert any(words in str(error) for words in SAYS[mode]), error


def test_the_kinds_that_ship_have_an_example():
    # The others (new kinds) are covered by a guess or skipped with the reason their `check` gives.
    assert all(_example(name)[0] is not None for name in EXAMPLES)
