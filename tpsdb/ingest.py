"""`tpsdb ingest`: benchmark output files into the database, raw file archived first: llama-bench and
llama-batched-bench (tables or -o json/jsonl/csv/sql), and as text the outputs tpsdb.collect.tools reads
(llama.cpp run logs, llama-sweep-bench, ollama --verbose, mlx_lm.generate, vLLM/SGLang serving summaries)."""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Callable

from sqlmodel import Session

from .collect.benchfiles import FORMATS, extract_bench_file
from .collect.extract import PostContext
from .store import Provenance, Store, archive_snapshot
from .vocab import SourceType


class IngestError(ValueError):
    pass


def _iso_date(value: str | None, option: str) -> str | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError:
        raise IngestError(f"{option}: {value!r} is not an ISO date (YYYY-MM-DD)") from None


def ingest_files(session: Session, files: list[Path], *, source_url: str, hardware: str | None = None,
                 fmt: str | None = None, retrieved_at: str | None = None, published_at: str | None = None,
                 model: str | None = None,
                 on_rejected: Callable[[str, list[str]], None] | None = None,
                 on_note: Callable[[str, str], None] | None = None) -> Counter:
    """Store the figures of each file under one source URL. The caller commits (all files or none).

    `hardware` and `model` name the machine and the model of every figure, whatever the file says (llama-bench
    labels a model by its type, such as "llama 7B"); `on_rejected(where, reasons)` hears of each rejection, and
    `on_note(where, note)` of each figure stored on another file than the one the reference cites for its model and
    format (tpsdb.files), which the tables holding that file leave out: never silently."""
    if not source_url.startswith(("http://", "https://")):
        raise IngestError(f"--source-url: {source_url!r} is not an http(s) URL")
    if fmt is not None and fmt.lower() not in FORMATS:
        raise IngestError(f"--format: {fmt!r} is not one of {', '.join(FORMATS)}")
    now = datetime.now(timezone.utc)
    retrieved = _iso_date(retrieved_at, "--retrieved-at") or now.date().isoformat()
    published = _iso_date(published_at, "--published-at")
    store = Store(session)
    source = store.source_for(source_url, kind=SourceType.benchmark_file.value)
    counts: Counter = Counter()
    ctx = PostContext(permalink=source_url, retrieved_at=retrieved, published_at=published, author=None, protocol={})
    for path in files:
        try:
            data = path.read_bytes()
        except OSError as error:
            raise IngestError(f"{path}: {error.strerror}") from None
        snapshot = archive_snapshot(session, source_id=source.id, fetched_url=path.resolve().as_uri(),
                                    canonical_url=source_url, body=data, retrieved_at=now, content_type="text/plain")
        try:
            candidates = extract_bench_file(data, fmt, ctx, hardware, suffix=path.suffix.lstrip(".").lower())
        except ValueError as error:
            raise IngestError(f"{path}: {error}") from None
        if not candidates:
            raise IngestError(f"{path}: no llama-bench, llama-batched-bench, llama.cpp timing, llama-sweep-bench, "
                              "ollama, mlx_lm or vLLM/SGLang serving figures found")
        if model:
            _name_the_model(path, candidates, model)
        noted: set[str] = set()
        for candidate in candidates:
            provenance = Provenance(source=source, snapshot_id=snapshot.id, slot=candidate.slot,
                                    extra_reasons=candidate.reasons)
            result = store.put(candidate.record, provenance)
            counts[result.outcome] += 1
            if result.reasons and on_rejected:
                on_rejected(f"{path} ({candidate.slot})", result.reasons)
            # one note per file and model file: a file's many rows on one other file say it once
            if result.refs is not None and on_note and (note := store.file_note(result.refs)) \
                    and note not in noted:
                noted.add(note)
                on_note(f"{path} ({candidate.slot})", note)
    store.flush()
    return counts



def _name_the_model(path: Path, candidates: list, model: str) -> None:
    """--model: one name for the one model the file measures; a file of several models is refused rather than
    having them all named alike."""
    labels = sorted({str((c.record.get("model") or {}).get("name")) for c in candidates})
    if len(labels) > 1:
        raise IngestError(f"{path}: --model: the file measures {len(labels)} models ({', '.join(labels)}); "
                          "--model names one (ingest each model's rows from its own file)")
    for candidate in candidates:
        if not isinstance(candidate.record.get("model"), dict):
            candidate.record["model"] = {}
        candidate.record["model"]["name"] = model
