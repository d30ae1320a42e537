"""Benchmark: wall time and request count of a first refresh and of a no-change refresh of every kind of source,
served by the local fixture server (no network): the three fixture discussions over HTML and over GraphQL
(github_discussion), a pull request made of the 16578 thread's posts over the REST API (github_issue), the DGX
Spark benchmark file (file) and tokatlas's data file (peer_dataset), both from their copies in
../shared (the shared data folder beside the project).

    python bench/refresh.py

Target (issue 4): the no-change refresh makes one conditional request per page and parses nothing.
The no-change refresh is run REPEAT times (default 5; the machine is shared, one run is noise): its median and
best wall times are printed.

    python bench/refresh.py [REPEAT] [KIND ...]      (KIND: only these kinds, e.g. `file`; default: every kind)
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from fixture_server import FixtureServer  # noqa: E402
from refresh_helpers import SOURCES, TOKEN, server_env  # noqa: E402
from rest_fixture import NUMBER, OWNER, REPO, pull_request  # noqa: E402

# (kind, transport, the sources it refreshes)
RUNS = [("github_discussion", "html", SOURCES), ("github_discussion", "graphql", SOURCES),
        ("github_issue", "rest", [f"llamacpp-pr-{NUMBER}"]), ("file", "http", ["llamacpp-bench-dgx-spark"]),
        ("peer_dataset", "http", ["tokatlas-llamacpp"])]
# The file sources' bytes: the copies of the pinned files their source files fetch, read in place from the shared
# data folder beside the project (never copied into it).
SHARED = ROOT.parent / "shared"
SERVED = {"llamacpp-bench-dgx-spark": SHARED / "sources-extracts" / "llama.cpp-benches-dgx-spark.md",
          "tokatlas-llamacpp": SHARED / "peers" / "tokatlas" / "llamacpp_discussions.json"}


def serve_files(server: FixtureServer, sources: Path) -> None:
    """The shipped source files, with the file sources' fetch_url pointed at the local server."""
    shutil.copytree(ROOT / "sources", sources)
    for key, local in SERVED.items():
        path = f"/raw/{key}/{local.name}"
        server.override(path, local.read_bytes())
        toml = sources / f"{key}.toml"
        toml.write_text(re.sub(r'(?m)^fetch_url = ".*"$', f'fetch_url = "{server.base_url}{path}"',
                               toml.read_text(encoding="utf-8")), encoding="utf-8")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(db: Path, server: FixtureServer, transport: str, sources: list[str],
        sources_dir: Path) -> tuple[float, float, list[dict]]:
    """Wall time, CPU time of the refresh process (less sensitive to a busy machine) and its summaries."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **server_env(server, graphql=transport == "graphql")}
    start, cpu = time.perf_counter(), _children_cpu_s()
    out = subprocess.run([sys.executable, "-m", "tpsdb", "refresh", *sources, "--format", "json", "--db", str(db),
                          "--sources-dir", str(sources_dir)], env=env, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - start, _children_cpu_s() - cpu, json.loads(out)


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    kinds = set(sys.argv[2:]) or {kind for kind, _, _ in RUNS}
    unknown = kinds - {kind for kind, _, _ in RUNS}
    if unknown:
        raise SystemExit(f"unknown kind(s): {', '.join(sorted(unknown))}")
    absent = [str(path) for path in SERVED.values() if not path.exists()]
    if absent:
        raise SystemExit(f"{', '.join(absent)}: absent (the shared data folder ../shared is not beside the project)")
    for kind, transport, sources in (r for r in RUNS if r[0] in kinds):
        with tempfile.TemporaryDirectory() as tmp, FixtureServer(token=TOKEN) as server:
            server.rest_issue(OWNER, REPO, NUMBER, *pull_request())
            serve_files(server, Path(tmp) / "sources")
            db = Path(tmp) / "bench.sqlite"
            subprocess.run([sys.executable, "-m", "tpsdb", "init", "--no-seed", "--db", str(db)], cwd=ROOT,
                           check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
            for label, runs in (("first refresh", 1), ("no-change refresh", repeat)):
                times, cpu_times = [], []
                for _ in range(runs):
                    server.requests.clear()
                    seconds, cpu, summaries = run(db, server, transport, sources, Path(tmp) / "sources")
                    times.append(seconds)
                    cpu_times.append(cpu)
                spread = f" (median of {runs}; best {min(times):.2f} s)" if runs > 1 else ""
                seconds = statistics.median(times)
                spread += f", {statistics.median(cpu_times):.2f} s CPU"
                conditional = sum(1 for r in server.requests
                                  if "if-none-match" in r.headers or "if-modified-since" in r.headers)
                parsed = [s["source"] for s in summaries if s["status"] == "ok"]
                print(f"{kind:17s} {transport:7s} {label:18s} {seconds:6.2f} s wall{spread}, {len(server.requests):2d} requests "
                      f"({conditional} conditional, {sum(s['not_modified'] for s in summaries)} answered 304), "
                      f"statuses {[s['status'] for s in summaries]}, parsed: {parsed or 'nothing'}, "
                      f"figures new {sum(s['new'] for s in summaries)}")


if __name__ == "__main__":
    main()
