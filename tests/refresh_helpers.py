"""Helpers for refresh tests: run `tpsdb refresh` against the local fixture server, read the truth files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from conftest import ROOT, run_cli

THREADS = ROOT / "tests" / "fixtures" / "threads"
SOURCES = ["llamacpp-4167", "llamacpp-15013", "llamacpp-16578"]
TOKEN = "test-token-not-a-secret-1234"


def server_env(server, *, graphql: bool = False, **extra) -> dict:
    env = {"TPSDB_GITHUB_URL": server.base_url, "TPSDB_GITHUB_API_URL": server.api_url,
           "TPSDB_HTTP_PAUSE_S": "0", "TPSDB_HTTP_BACKOFF_S": "0.05", "TPSDB_HTTP_TIMEOUT_S": "5",
           "TPSDB_HTTP_MAX_TOTAL_S": "20", "GITHUB_TOKEN": "", "TPSDB_GITHUB_TOKEN": TOKEN if graphql else ""}
    env.update(extra)
    return env


def refresh(db: Path, server, *sources: str, graphql: bool = False, check: bool = True, **extra):
    return run_cli("refresh", *(sources or SOURCES), db=db, env=server_env(server, graphql=graphql, **extra),
                   check=check)


def refresh_json(db: Path, server, key: str, sources: Path, *, check: bool = True) -> dict:
    """The run summary of `tpsdb refresh KEY --format json` of a source file in `sources` (printed whether or not
    the run succeeds; `check`: it must), two attempts per request."""
    result = run_cli("refresh", key, "--format", "json", "--sources-dir", str(sources), db=db,
                     env=server_env(server, TPSDB_HTTP_MAX_ATTEMPTS="2"), check=check)
    return json.loads(result.stdout)[0]


def permalink(thread: str, truth_file: Path) -> str:
    stem = truth_file.name.removesuffix(".truth.json")
    base = f"https://github.com/ggml-org/llama.cpp/discussions/{thread}"
    if stem.endswith("-op"):
        return base
    comment_id = stem.split(".r1-")[-1] if ".r1-" in stem else stem.split("-", 1)[1]
    return f"{base}#discussioncomment-{comment_id}"


def truth_items(expect: str):
    """(thread, permalink, truth entry) for every figure the fixture posts hold with this verdict
    ("accept", "reject" or "ignore")."""
    for thread_dir in sorted(THREADS.iterdir()):
        for truth_file in sorted(thread_dir.glob("*.truth.json")):
            for entry in json.loads(truth_file.read_text(encoding="utf-8")):
                if entry["expect"] == expect:
                    yield thread_dir.name, permalink(thread_dir.name, truth_file), entry


def rows(db: Path, sql: str, *params) -> list[dict]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def dump(db: Path) -> str:
    """Every row of every data table (not the run log): equal dumps mean an unchanged database."""
    conn = sqlite3.connect(db)
    try:
        lines = []
        for line in conn.iterdump():
            if "refresh_run" not in line:
                lines.append(line)
        return "\n".join(lines)
    finally:
        conn.close()
