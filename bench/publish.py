"""Benchmark: building and publishing every table of tables/*.toml on synthetic databases.

    python bench/publish.py [N ...]        (default: 10000 1000000)

For each N, a SQLite database of N measurements and N/10 rejections is built directly (bulk executemany with a
handful of hardware, model file, software and source rows; the validator is skipped, this measures publishing, not
ingest). The data matches the conditions of the project's eight table definitions, so every table has rows to pick
from. Then it times, in one process:
  - build: every table built from the database (SQL on measurement_full, pick rules in SQL);
  - publish: the whole static site (`publish_site`: HTML pages with inline SVG charts, CSV, JSON, Markdown, and
    the figures and rejections pages holding every row); the size of those two pages is printed.

Targets (issues 5 and 12, 2-core machine): publish < 2 s at N = 10,000 and < 20 s at N = 1,000,000.
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert  # noqa: E402
from sqlmodel import Session  # noqa: E402

from tpsdb import db  # noqa: E402
from tpsdb.models import Hardware, Measurement, Model, ModelFile, Rejection, Software, Source  # noqa: E402
from tpsdb.publish.definitions import load_definitions  # noqa: E402
from tpsdb.publish.site import publish_site  # noqa: E402
from tpsdb.publish.tables import build_table  # noqa: E402

HARDWARE = [  # name, bandwidth GB/s, memory GB
    ("NVIDIA DGX Spark", 273, 128), ("Apple M2 Ultra (76-core GPU)", 800, 192), ("Apple M4 Pro (20-core GPU)", 273, 48),
    ("NVIDIA GeForce RTX 5090", 1792, 32), ("NVIDIA RTX PRO 6000 Blackwell", 1792, 96),
    ("NVIDIA H100 80GB HBM3", 3350, 80), ("Apple M1 (8-core GPU)", 68.25, 16), ("AMD Radeon 8060S", 256, 128),
]
MODELS = [("Llama 2 7B", 6.74, None), ("gpt-oss 20B", 20.91, 3.61), ("gpt-oss 120B", 116.83, 5.13)]
FILES = [("Llama 2 7B", "F16", 13.48), ("Llama 2 7B", "Q8_0", 7.16), ("Llama 2 7B", "Q4_0", 3.79),
         ("gpt-oss 20B", "MXFP4", 12.1), ("gpt-oss 120B", "MXFP4", 63.37)]
SOFTWARE = [("llama.cpp", v) for v in ("8e672efe", "86ed72d2", "5c0eb5ef5", "c1d0e7a00", "b6918 (2f68ce7cf)",
                                       "b7000")] + [("Ollama", "0.12.3"), ("vLLM", "0.11.0"), ("SGLang", "0.5.3")]
N_SOURCES = 30
BATCH = 50_000


def build_database(path: Path, n: int, seed: int = 5) -> None:
    engine = db.make_engine(str(path))
    db.migrate(engine)
    with Session(engine) as session:
        hardware = [Hardware(name=name, memory_bandwidth_gbs=bw, memory_gb=mem,
                             bandwidth_source_url=f"https://example.org/spec/{i}") for i, (name, bw, mem) in enumerate(HARDWARE)]
        models = {name: Model(name=name, params_b=p, active_params_b=a) for name, p, a in MODELS}
        session.add_all(hardware + list(models.values()))
        session.flush()
        files = [ModelFile(model_id=models[m].id, quantization=q, size_bytes=round(gb * 1e9),
                           size_source_url="https://example.org/sizes") for m, q, gb in FILES]
        software = [Software(name=s, version=v) for s, v in SOFTWARE]
        sources = [Source(url=f"https://example.org/source/{i}", title=f"Bench source {i}") for i in range(N_SOURCES)]
        session.add_all(files + software + sources)
        session.flush()
        ids = ([h.id for h in hardware], [f.id for f in files], [s.id for s in software], [s.id for s in sources])
        session.commit()
    rng = random.Random(seed)
    start = time.perf_counter()
    with engine.begin() as conn:
        batch = []
        for i in range(n):
            batch.append(_row(i, rng, *ids))
            if len(batch) == BATCH:
                conn.execute(insert(Measurement), batch)
                batch = []
        if batch:
            conn.execute(insert(Measurement), batch)
        conn.execute(insert(Rejection), [_rejection(i, rng, ids[3]) for i in range(n // 10)])
    size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))  # the file and its WAL
    print(f"  built {n:,} measurements in {time.perf_counter() - start:.1f} s ({size / 1e6:.0f} MB)", flush=True)
    engine.dispose()


def _row(i: int, rng: random.Random, hardware_ids, file_ids, software_ids, source_ids) -> dict:
    scenario = i % 3
    users, figure, generated, depth = 1, "per_user", 128, 0
    if scenario == 0:  # llama-bench tg128 on Llama 2 7B (tables 1-4)
        file_index, software_index = rng.randrange(3), rng.randrange(4)
    elif scenario == 1:  # llama-batched-bench on gpt-oss 20B, B = 1…32 aggregate (table 6)
        file_index, software_index = 3, rng.choice((4, 5))
        users, figure, generated, depth = rng.choice((1, 2, 4, 8, 16, 32)), "aggregate", 32, 512
    else:  # one user, gpt-oss 20B/120B across programs (tables 5, 7, 8)
        file_index, software_index = rng.choice((3, 4)), rng.randrange(4, len(software_ids))
        generated, depth = 32, rng.choice((0, 0, 4096))
    published = date(2023, 6, 1) + timedelta(days=rng.randrange(1000))
    value = round(rng.uniform(5, 300), 2)
    source = rng.randrange(len(source_ids))
    return dict(
        figure_key=f"bench-{i}", slot=None, hardware_id=hardware_ids[rng.randrange(len(hardware_ids))],
        model_file_id=file_ids[file_index], software_id=software_ids[software_index], software_options="{}",
        phase="generation", prompt_tokens=0, generated_tokens=generated, context_depth=depth, users=users,
        figure=figure, nature_kind="measured", procedure="llama-bench -n 128", formula=None, formula_inputs=None,
        tokens_per_second=value, stddev=None, source_id=source_ids[source],
        source_url=f"https://example.org/source/{source}#row-{i}", post_id=None, snapshot_id=None,
        retrieved_at=date(2026, 9, 6), published_at=published, author="bench", quote=f"| bench | {value} |",
        via_title=None, via_publisher=None, via_url=None, via_published_at=None,
        status="active" if rng.random() > 0.05 else "superseded", supersedes_id=None, hardware_bandwidth_gbs=None,
    )


REASONS = ['["missing: software version"]', '["missing: quantization", "missing: lengths"]',
           '["hardware not in the reference"]', '["missing: concurrency"]']


def _rejection(i: int, rng: random.Random, source_ids) -> dict:
    source = rng.randrange(len(source_ids))
    value = round(rng.uniform(5, 300), 2)
    return dict(candidate_key=f"bench-r{i}", slot=None, candidate_json="{}", reasons=rng.choice(REASONS),
                source_url=f"https://example.org/source/{source}#rejected-{i}", quote=f"| bench | {value} |",
                tokens_per_second=value, source_id=source_ids[source], post_id=None, snapshot_id=None,
                status="active")


def bench(n: int) -> tuple[float, float]:
    definitions = load_definitions()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.sqlite"
        print(f"N = {n:,}", flush=True)
        build_database(path, n)
        engine = db.make_engine(str(path))
        with engine.connect() as conn:  # first touch: pages into the OS cache, as for any real run
            conn.exec_driver_sql("SELECT COUNT(*) FROM measurement").scalar()
        start = time.perf_counter()
        with engine.connect() as conn:
            for d in definitions:
                t0 = time.perf_counter()
                table = build_table(conn, d)
                print(f"    {d.name:<13} {len(table.rows):4d} rows  {table.measured_cells:4d} measured cells  "
                      f"{(time.perf_counter() - t0) * 1000:8.1f} ms")
        build = time.perf_counter() - start
        start = time.perf_counter()
        written = publish_site(engine, definitions, Path(tmp) / "site")
        publish = time.perf_counter() - start
        print(f"  build all {len(definitions)} tables: {build:6.2f} s")
        print(f"  publish site ({len(written)} files, charts included): {publish:6.2f} s", flush=True)
        for page in ("figures", "rejections"):
            print(f"    {page}.html: {(Path(tmp) / 'site' / f'{page}.html').stat().st_size / 1e6:.1f} MB")
        engine.dispose()
    return build, publish


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10_000, 1_000_000]
    targets = {10_000: 2.0, 1_000_000: 20.0}
    results = {n: bench(n) for n in sizes}
    print("\nsummary")
    for n, (build, publish) in results.items():
        target = targets.get(n)
        verdict = f"target < {target:g} s: {'ok' if publish < target else 'MISSED'}" if target else ""
        print(f"  N = {n:>9,}: build {build:6.2f} s, publish {publish:6.2f} s  {verdict}")


if __name__ == "__main__":
    main()
