"""`tpsdb load`: a source's [seed] copies (byte-identical copies of its files, kept outside the project) stored as a
refresh would store them: the same kind reads them (kind.read, kind.candidates), the same engine archives each copy
as a snapshot, applies the posts in one transaction and keeps history, and the run log says `seed`. Only where the
bytes come from differs: a folder on disk instead of the network, each copy cited at its commit's URL and date.
This is how the seed is built offline from ../shared (data/build-seed.sh)."""

from __future__ import annotations

import time
from datetime import date
from pathlib import Path

from sqlalchemy import Engine
from sqlmodel import Session

from . import refresh
from .kinds import kind_for
from .kinds._copies import SeedError
from .kinds.repo_file import SEED
from .sources import SourceSpec


def has_seed(spec: SourceSpec) -> bool:
    """Whether a source file lists copies to load offline (a [seed] table)."""
    return bool(spec.settings.get("seed"))


def load_source(engine: Engine, spec: SourceSpec, shared: Path, *, progress: refresh.Progress = lambda m: None,
                today: date | None = None) -> refresh.RunSummary:
    """Load one source's [seed] copies in one transaction. Never raises for a bad copy: the summary says it."""
    kind = kind_for(spec)
    summary = refresh.RunSummary(source=spec.key, transport=SEED)
    seed_responses = getattr(kind, "seed_responses", None)
    if seed_responses is None:
        summary.status, summary.error = "failed", f"the {spec.kind} kind cannot be loaded from copies"
        return summary
    started = time.monotonic()
    run_id = refresh._start_run(engine, refresh._source_id_for_log(engine, spec), SEED)
    chain_ids = None
    try:
        responses = seed_responses(shared)
        with Session(engine) as session:
            source = refresh.sync_source(session, spec)
            archive = refresh._Archive(session, source, kind)
            for fetched in responses:
                archive.on_response(fetched)
            chain_ids = [snap.id for snap in archive.chain]
            if chain_ids == archive.previous_ids:
                summary.status = "unchanged"
                session.commit()
            else:
                progress(f"{spec.key}: reading {len(archive.chain)} copies")
                refresh.apply_snapshots(session, source, kind, archive.chain, SEED, summary, today=today,
                                        force=False)
                session.commit()
                summary.status = "ok"
    except SeedError as error:
        summary.status, summary.error, chain_ids = "failed", str(error), None
    except Exception as error:  # as a refresh: one source's failure, never half of its figures
        summary.status, summary.error, chain_ids = "failed", refresh._failure(error), None
        summary.new = summary.changed = summary.withdrawn = summary.rejected = summary.posts = 0
    finally:
        summary.duration_s = round(time.monotonic() - started, 3)
        refresh._finish_run(engine, run_id, summary, chain_ids)
    return summary
