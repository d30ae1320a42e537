"""Benchmark: `tpsdb ingest` of a markdown file 1, 4, 16 and 64 times the DGX Spark file (from ../shared) (D8).

    python bench/ingest_scale.py [COPIES ...]       (default: 1 4 16 64)

For each size: `extract` is the extraction alone (extract_bench_file on the bytes); `ingest` is the whole path
(read, archive the snapshot, extract, validate, store, commit) into a fresh SQLite file made by `tpsdb init
--no-seed` (not timed). Target (issue 13): linear, at least 1 MB/s. Best of 3 runs for extract, one for ingest.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlmodel import Session  # noqa: E402

from tpsdb import db  # noqa: E402
from tpsdb.collect.benchfiles import extract_bench_file  # noqa: E402
from tpsdb.collect.extract import PostContext  # noqa: E402
from tpsdb.ingest import ingest_files  # noqa: E402

# llama.cpp's benches/dgx-spark.md, read in place from the shared data folder beside the project (never copied in).
SOURCE = ROOT.parent / "shared" / "sources-extracts" / "llama.cpp-benches-dgx-spark.md"
URL = "https://example.org/bench/dgx-spark.md"


def extract_seconds(data: bytes) -> tuple[float, int]:
    ctx = PostContext(URL, "2026-12-01", None, None, {})
    best, count = float("inf"), 0
    for _ in range(3):
        start = time.perf_counter()
        count = len(extract_bench_file(data, "md", ctx, "NVIDIA DGX Spark"))
        best = min(best, time.perf_counter() - start)
    return best, count


def ingest_seconds(path: Path, database: Path) -> float:
    subprocess.run([sys.executable, "-m", "tpsdb", "init", "--no-seed", "--db", str(database)], check=True,
                   cwd=ROOT, capture_output=True)
    engine = db.make_engine(str(database))
    start = time.perf_counter()
    with Session(engine) as session:
        ingest_files(session, [path], source_url=URL, hardware="NVIDIA DGX Spark", retrieved_at="2026-12-01")
        session.commit()
    seconds = time.perf_counter() - start
    engine.dispose()
    return seconds


def main() -> None:
    copies = [int(n) for n in sys.argv[1:]] or [1, 4, 16, 64]
    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE}: absent (the shared data folder ../shared is not beside the project)")
    text = SOURCE.read_bytes()
    print(f"{'copies':>6} {'MB':>7} {'figures':>8} {'extract s':>10} {'MB/s':>7} {'ingest s':>9} {'MB/s':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in copies:
            data = text * n
            path = Path(tmp) / f"dgx-x{n}.md"
            path.write_bytes(data)
            mb = len(data) / 1e6
            extract, figures = extract_seconds(data)
            ingest = ingest_seconds(path, Path(tmp) / f"x{n}.sqlite")
            print(f"{n:>6} {mb:>7.2f} {figures:>8} {extract:>10.3f} {mb / extract:>7.2f} {ingest:>9.3f} "
                  f"{mb / ingest:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
