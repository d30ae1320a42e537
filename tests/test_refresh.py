"""`tpsdb refresh` on the three fixture threads, served by a real local HTTP server, with both transports."""

import json
import os
import re
import socket
import subprocess

import pytest

from conftest import ROOT, run_cli
from refresh_helpers import SOURCES, TOKEN, dump, refresh, rows, truth_items
from tpsdb.collect.machines import canonical_hardware
from tpsdb.kinds import load_sources

SPECS = load_sources()
FIELDS = ("hardware, model, quantization, software_version, phase, prompt_tokens, generated_tokens, context_depth, "
          "users, figure, tokens_per_second, quote, status")


def expected_model(thread: str, truth_model: str, quote: str = "") -> set[str]:
    aliases = SPECS[f"llamacpp-{thread}"].protocol.get("model_aliases", {})
    params = re.search(r"\|\s*([\d.]+) B\s*\|", quote)
    if "?B" in truth_model and params:  # issue 19: a "?B" label is named by the row's parameter count
        return {truth_model.replace("?B", f"{float(params[1]):g}B params")}
    return {truth_model, aliases.get(truth_model, truth_model)}


@pytest.fixture(scope="module", params=["html", "graphql"])
def refreshed(request, tmp_path_factory):
    from fixture_server import FixtureServer

    db = tmp_path_factory.mktemp(request.param) / "refresh.sqlite"
    run_cli("init", "--no-seed", db=db)
    with FixtureServer(token=TOKEN) as server:
        result = refresh(db, server, graphql=request.param == "graphql")
        requests = list(server.requests)
    return request.param, db, result, requests


def test_every_accept_figure_is_stored_with_all_fields(refreshed):
    _, db, _, _ = refreshed
    checked = 0
    for thread, url, truth in truth_items("accept"):
        found = rows(db, f"select {FIELDS} from measurement_full where source_url = ? and tokens_per_second = ? "
                         "and phase = ? and users = ? and context_depth = ?",
                     url, truth["tps"], truth["phase"], truth["users"], truth["depth"])
        found = [f for f in found if f["quantization"] == truth["quant"]
                 and f["hardware"] == canonical_hardware(truth["hardware"])
                 and " ".join(f["quote"].split()) == " ".join(truth["quote"].split())]
        assert len(found) == 1, (url, truth)
        row = found[0]
        assert row["status"] == "active"
        assert row["model"] in expected_model(thread, truth["model"], truth["quote"]), (row, truth)
        assert truth["version"] in row["software_version"], (row, truth)
        assert row["figure"] == truth["figure"]
        assert row["generated_tokens"] == truth["generated_tokens"]
        assert (row["prompt_tokens"] or 0) == truth["prompt_tokens"]
        checked += 1
    assert checked == 451


def test_reject_figures_are_rejections_with_a_reason(refreshed):
    _, db, _, _ = refreshed
    for _, url, truth in truth_items("reject"):
        accepted = rows(db, "select measurement_id from measurement_full where source_url = ? and tokens_per_second = ?"
                            " and phase = ?", url, truth["tps"], truth["phase"])
        assert accepted == [], (url, truth)
        if "deleted comment" in truth["why"]:  # the page no longer holds the body: the post is marked deleted
            assert rows(db, "select deleted from post where permalink = ?", url) == [{"deleted": 1}]
            continue
        rejected = rows(db, "select reasons from rejection_full where source_url = ? and tokens_per_second = ?",
                        url, truth["tps"])
        assert rejected and all(json.loads(r["reasons"]) for r in rejected), (url, truth)


def test_ignored_and_quoted_figures_are_never_measurements(refreshed):
    _, db, _, _ = refreshed
    for _, url, truth in truth_items("ignore"):
        accepted = rows(db, "select measurement_id from measurement_full where source_url = ? and tokens_per_second = ?"
                            " and phase = ? and users = ?", url, truth["tps"], truth["phase"], truth["users"])
        assert accepted == [], (url, truth)
        if truth["quote"].lstrip().startswith(">"):  # quoted text: not even a rejection of the quoting post
            assert rows(db, "select 1 from rejection_full where source_url = ? and tokens_per_second = ?",
                        url, truth["tps"]) == []


def test_transport_and_provenance(refreshed):
    transport, db, result, requests = refreshed
    assert f"via {transport}" in result.stdout
    assert all(r.path.endswith("/graphql") == (transport == "graphql") for r in requests)
    # figures keep the canonical github.com permalink whatever server served them
    assert rows(db, "select count(*) n from measurement_full where source_url not like 'https://github.com/%'")[0]["n"] == 0
    snaps = rows(db, "select fetched_url, canonical_url, sha256, length(body) n from snapshot")
    canonical = "https://api.github.com/graphql#" if transport == "graphql" else "https://github.com/"
    assert snaps and all(s["canonical_url"].startswith(canonical) and s["n"] > 0 for s in snaps)
    assert all("127.0.0.1" in s["fetched_url"] for s in snaps)
    everything = dump(db) + result.stdout + result.stderr
    assert TOKEN not in everything


def test_both_transports_store_the_same_figures(tmp_path):
    from fixture_server import FixtureServer

    exports = {}
    for transport in ("html", "graphql"):
        db = tmp_path / f"{transport}.sqlite"
        run_cli("init", "--no-seed", db=db)
        with FixtureServer(token=TOKEN) as server:
            refresh(db, server, graphql=transport == "graphql")
        exports[transport] = sorted(
            (r["source_url"], r["slot"], r["tokens_per_second"], r["hardware"], r["software_version"])
            for r in rows(db, "select * from measurement_full"))
    assert exports["html"] == exports["graphql"] and len(exports["html"]) == 451


def test_second_run_adds_nothing(tmp_path):
    from fixture_server import FixtureServer

    db = tmp_path / "twice.sqlite"
    run_cli("init", "--no-seed", db=db)
    with FixtureServer() as server:
        refresh(db, server)
        before = dump(db)
        server.requests.clear()
        second = refresh(db, server, *SOURCES, "--format", "json")
        summaries = json.loads(second.stdout)
        assert [s["status"] for s in summaries] == ["unchanged"] * 3
        assert all(s["new"] == s["changed"] == s["rejected"] == 0 for s in summaries)
        # only conditional requests, one per page, all answered 304
        assert all("if-none-match" in {k.lower() for k in r.headers} for r in server.requests)
        assert sum(s["requests"] for s in summaries) == sum(s["not_modified"] for s in summaries) == len(server.requests)
    assert dump(db) == before


# --- D5: the token, read clean or refused unshown -------------------------------------------------------------
@pytest.mark.parametrize("written", [TOKEN + "\r", TOKEN + "\n", f"  {TOKEN}\r\n"], ids=["cr", "lf", "spaces-crlf"])
def test_d5_token_with_surrounding_whitespace_is_read_clean(tmp_path, written):
    from fixture_server import FixtureServer

    db = tmp_path / "token.sqlite"
    run_cli("init", "--no-seed", db=db)
    with FixtureServer(token=TOKEN) as server:  # answers only the exact token
        result = refresh(db, server, "llamacpp-16578", graphql=True, TPSDB_GITHUB_TOKEN=written)
    assert "ok via graphql" in result.stdout
    assert TOKEN not in dump(db) + result.stdout + result.stderr + json.dumps(rows(db, "select * from refresh_run"))


@pytest.mark.parametrize("written", [TOKEN[:9] + "\r" + TOKEN[9:], TOKEN + "\x1b", TOKEN[:9] + "\u20ac" + TOKEN[9:]],
                         ids=["inner-cr", "escape", "euro"])
def test_d5_token_with_a_control_or_non_ascii_character_is_refused_unshown(tmp_path, written):
    from fixture_server import FixtureServer

    db = tmp_path / "token.sqlite"
    run_cli("init", "--no-seed", db=db)
    with FixtureServer(token=TOKEN) as server:
        result = refresh(db, server, "llamacpp-16578", graphql=True, check=False, TPSDB_GITHUB_TOKEN=written)
        assert server.requests == []  # refused before anything was sent
    assert result.returncode == 1
    assert "error: TPSDB_GITHUB_TOKEN: the token holds a" in result.stdout
    assert "(the token is not shown)" in result.stdout
    everything = dump(db) + result.stdout + result.stderr + json.dumps(rows(db, "select * from refresh_run"))
    assert TOKEN[:9] not in everything and TOKEN[9:] not in everything


# --- X7 (D15): the refresh lock never follows a planted link ---------------------------------------------------
@pytest.mark.parametrize("link", ["symlink", "hardlink", "dangling"])
def test_x7_refresh_lock_refuses_a_planted_link(tmp_path, link):
    db = tmp_path / "x.sqlite"
    run_cli("init", "--no-seed", db=db)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    lock = db.with_suffix(".refresh.lock")
    if link == "symlink":
        lock.symlink_to(victim)
    elif link == "hardlink":
        os.link(victim, lock)
    else:
        lock.symlink_to(tmp_path / "created-through-the-link.txt")
    result = run_cli("reparse", db=db, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {lock}: cannot use it as the refresh lock") and "Traceback" not in \
        result.stderr
    assert victim.read_text() == "precious\n"
    assert not (tmp_path / "created-through-the-link.txt").exists()


def test_x7_refresh_lock_is_git_ignored():
    ignored = subprocess.run(["git", "check-ignore", "-q", "data/tpsdb.refresh.lock"], cwd=ROOT)
    assert ignored.returncode == 0


# --- first-use review, finding 16: a failed refresh rewrites no source row -----------------------------------
def test_failed_refresh_leaves_the_source_rows_as_they_were(seeded_db):
    db = seeded_db  # the seed holds 4167 without its key, title or licence
    before = rows(db, "select * from source order by id")
    with socket.socket() as closed:  # a port nothing listens on: the network is down
        closed.bind(("127.0.0.1", 0))
        offline = f"http://127.0.0.1:{closed.getsockname()[1]}"
    env = {"TPSDB_GITHUB_URL": offline, "TPSDB_GITHUB_API_URL": offline + "/graphql", "TPSDB_GITHUB_TOKEN": "",
           "GITHUB_TOKEN": "", "TPSDB_HTTP_PAUSE_S": "0", "TPSDB_HTTP_MAX_ATTEMPTS": "1"}
    result = run_cli("refresh", "llamacpp-4167", db=db, env=env, check=False)
    assert result.returncode == 1 and "failed" in result.stdout
    assert rows(db, "select * from source order by id") == before
    assert rows(db, "select status from refresh_run") == [{"status": "failed"}]
