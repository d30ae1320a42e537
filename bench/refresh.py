"""Benchmark: wall time and request count of a first refresh and of a no-change refresh of the three fixture
threads, served by the local fixture server (no network).

    python bench/refresh.py

Target (issue 4): the no-change refresh makes one conditional request per page and parses nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixture_server import FixtureServer  # noqa: E402
from refresh_helpers import SOURCES, TOKEN, server_env  # noqa: E402


def run(db: Path, server: FixtureServer, transport: str) -> tuple[float, list[dict]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), **server_env(server, graphql=transport == "graphql")}
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "tpsdb", "refresh", *SOURCES, "--json", "--db", str(db)],
                         env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, json.loads(out)


def main() -> None:
    for transport in ("html", "graphql"):
        with tempfile.TemporaryDirectory() as tmp, FixtureServer(token=TOKEN) as server:
            db = Path(tmp) / "bench.sqlite"
            subprocess.run([sys.executable, "-m", "tpsdb", "init", "--no-seed", "--db", str(db)], cwd=ROOT,
                           check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
            for label in ("first refresh", "no-change refresh"):
                server.requests.clear()
                seconds, summaries = run(db, server, transport)
                conditional = sum(1 for r in server.requests
                                  if "if-none-match" in r.headers or "if-modified-since" in r.headers)
                parsed = [s["source"] for s in summaries if s["status"] == "ok"]
                print(f"{transport:7s} {label:18s} {seconds:6.2f} s wall, {len(server.requests):2d} requests "
                      f"({conditional} conditional, {sum(s['not_modified'] for s in summaries)} answered 304), "
                      f"statuses {[s['status'] for s in summaries]}, parsed: {parsed or 'nothing'}, "
                      f"figures new {sum(s['new'] for s in summaries)}")


if __name__ == "__main__":
    main()
