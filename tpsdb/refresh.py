"""One source, end to end, in one transaction: fetch (archiving every response first), parse, store, keep history.

A failure leaves the data exactly as before; only the run log (refresh_run) records that the run happened.
Parsing reads stored snapshots only, so `reparse` is the same code without the network.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
import time
import zlib
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Callable, Iterator

from sqlalchemy import Engine, func, update
from sqlmodel import Session, select

from .collect.completeness import Completeness, IncompleteRead
from .collect.extract import PostContext
from .collect.http import Cached, Fetched, FetchError, PoliteSession, redact
from .errors import PageFormatError
from .history import retire, supersede_relayed
from .kinds import Archive, KindSettingsError, SourceKind, kind_for
from .kinds import Post as FetchedPost
from .models import Measurement, Post, RefreshRun, Rejection, Snapshot, Source, Status
from .sources import SourceSpec
from .store import Provenance, Store, archive_snapshot

Progress = Callable[[str], None]


class RefreshBusy(Exception):
    """Another refresh holds this database."""


class RefreshLockError(Exception):
    """The lock file cannot be used safely (a symbolic link, not a regular file): nothing was written."""


@dataclass
class RunSummary:
    source: str
    status: str = "running"  # ok, unchanged, failed
    transport: str | None = None
    requests: int = 0
    not_modified: int = 0
    posts: int = 0
    new: int = 0
    changed: int = 0
    withdrawn: int = 0
    rejected: int = 0
    duration_s: float = 0.0
    error: str | None = None
    note: str | None = None  # e.g. the source states no count, so absence withdrew nothing

    def as_dict(self) -> dict:
        return asdict(self)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


# ------------------------------------------------------------------------------------------------- locking
@contextmanager
def refresh_lock(engine: Engine, wait: bool) -> Iterator[None]:
    """One refresh at a time per database: a lock file beside a SQLite file, an advisory lock on PostgreSQL."""
    if engine.dialect.name == "sqlite":
        path = Path(engine.url.database or "memory").with_suffix(".refresh.lock")
        with _open_lock_file(path) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "?"
                raise RefreshBusy(f"another refresh is running on this database (pid {holder}); "
                                  "try again when it ends, or pass --wait") from None
            handle.seek(0)
            handle.truncate()
            handle.write(str(os.getpid()))
            handle.flush()
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    key = zlib.crc32(b"tpsdb-refresh")
    with engine.connect() as conn:
        if wait:
            conn.exec_driver_sql(f"SELECT pg_advisory_lock({key})")
        elif not conn.exec_driver_sql(f"SELECT pg_try_advisory_lock({key})").scalar():
            raise RefreshBusy("another refresh is running on this database; try again when it ends, or pass --wait")
        try:
            yield
        finally:
            conn.exec_driver_sql(f"SELECT pg_advisory_unlock({key})")


def _open_lock_file(path: Path):
    """The lock file, opened for reading and writing without following a symbolic link: the PID written into it
    must never land in a file someone planted the link to (nor in one hard-linked to it)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        why = "it is a symbolic link" if path.is_symlink() else error.strerror
        raise RefreshLockError(f"{path}: cannot use it as the refresh lock: {why}; remove it and try again") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise RefreshLockError(f"{path}: cannot use it as the refresh lock: not a plain file of its own "
                               "(a special file or a hard link); remove it and try again")
    return os.fdopen(fd, "r+")


# ----------------------------------------------------------------------------------------------- run log
def _start_run(engine: Engine, source_id: int, transport: str) -> int:
    with Session(engine) as s:
        # A run left "running" by a killed process is over: say so rather than leave it pending forever.
        s.execute(update(RefreshRun).where(RefreshRun.source_id == source_id, RefreshRun.status == "running")
                  .values(status="failed", error="interrupted (the process ended before the run finished)"))
        run = RefreshRun(source_id=source_id, started_at=utcnow(), transport=transport)
        s.add(run)
        s.commit()
        return run.id


def _finish_run(engine: Engine, run_id: int, summary: RunSummary, snapshot_ids: list[int] | None) -> None:
    with Session(engine) as s:
        run = s.get(RefreshRun, run_id)
        run.finished_at = utcnow()
        run.status = summary.status
        run.requests, run.not_modified = summary.requests, summary.not_modified
        run.new_figures, run.changed_figures = summary.new, summary.changed
        run.withdrawn_figures, run.rejected_figures = summary.withdrawn, summary.rejected
        run.error = summary.error
        run.snapshot_ids = json.dumps(snapshot_ids) if snapshot_ids is not None else None
        s.commit()


def last_good_run(session: Session, source_id: int) -> RefreshRun | None:
    return session.exec(
        select(RefreshRun).where(RefreshRun.source_id == source_id, RefreshRun.status.in_(("ok", "unchanged")))
        .order_by(RefreshRun.id.desc())
    ).first()


def sync_source(session: Session, spec: SourceSpec) -> Source:
    """The source's row, created or brought in line with its file."""
    row = _source_row(session, spec) or Source(url=spec.url)
    changes = {"key": spec.key, "kind": spec.kind, "title": spec.title, "licence": spec.licence,
               "refresh_interval_hours": spec.refresh_interval_hours}
    if row.id is None or any(getattr(row, k) != v for k, v in changes.items()):
        for k, v in changes.items():
            setattr(row, k, v)
        session.add(row)
        session.flush()
    return row


# ----------------------------------------------------------------------------------------------- refresh
def _snapshots(session: Session, ids: list[int]) -> list[Snapshot]:
    """The snapshots of a run, in its page order (one query)."""
    by_id = {snap.id: snap for snap in session.exec(select(Snapshot).where(Snapshot.id.in_(ids)))} if ids else {}
    return [by_id[i] for i in ids]


class _Archive(Archive):
    """Stores each response as a snapshot before anything reads it, and serves the previous ones. The kind names
    each page (its canonical address); the archive knows no kind."""

    def __init__(self, session: Session, source: Source, kind: SourceKind):
        self.session, self.source, self.kind = session, source, kind
        self.chain: list[Snapshot] = []
        run = last_good_run(session, source.id)
        # the pages of the last good run, which a refresh that reads the same bytes again reproduces exactly
        self.previous_ids: list[int] | None = json.loads(run.snapshot_ids) if run and run.snapshot_ids else None
        chain = _snapshots(session, self.previous_ids or [])
        self.previous = {snap.canonical_url: snap for snap in chain}
        self.following = {a.canonical_url: b.canonical_url for a, b in zip(chain, chain[1:])}

    def cached(self, url: str) -> Cached | None:
        key = self.kind.canonical(url)
        snap = self.previous.get(key)
        if snap is None:
            return None
        return Cached(etag=snap.etag, last_modified=snap.last_modified, sha256=snap.sha256, body=snap.body,
                      following=self.following.get(key))

    def on_response(self, fetched: Fetched) -> None:
        key = self.kind.page_key(fetched)
        before = self.previous.get(key)
        if fetched.status == 304:
            if before is None:
                raise FetchError(fetched.url, "304 Not Modified for a page never fetched", 1, 304)
            self.chain.append(before)
            return
        sha = hashlib.sha256(fetched.body).hexdigest()
        if before is not None and before.sha256 == sha:
            self.chain.append(before)  # same bytes: nothing to archive again
            return
        snap = archive_snapshot(self.session, source_id=self.source.id, fetched_url=fetched.url, canonical_url=key,
                                body=fetched.body, retrieved_at=fetched.retrieved_at, http_status=fetched.status,
                                etag=fetched.etag, last_modified=fetched.last_modified,
                                content_type=fetched.headers.get("content-type"), page_index=len(self.chain))
        self.chain.append(snap)


def refresh_source(engine: Engine, spec: SourceSpec, *, session_factory: Callable[[], PoliteSession],
                   progress: Progress = lambda message: None, today: date | None = None) -> RunSummary:
    """Refresh one source in one transaction. Never raises for a fetch or page fault: the summary says it."""
    kind = kind_for(spec)
    try:
        transport = kind.prepare()  # the kind's settings: refused before anything is sent or written
    except KindSettingsError as error:
        return RunSummary(source=spec.key, status="failed", transport="none (not started)", error=str(error))
    summary = RunSummary(source=spec.key, transport=transport)
    started = time.monotonic()
    run_id = _start_run(engine, _source_id_for_log(engine, spec), summary.transport)
    chain_ids = None
    http = session_factory()
    http.on_request = lambda url: progress(f"{spec.key}: request {http.requests_made}: {url.split('?')[0]}")
    try:
        with Session(engine) as session:
            source = sync_source(session, spec)  # the file's title, licence...: stored with the data, or not at all
            archive = _Archive(session, source, kind)
            kind.fetch(http, archive, transport)
            chain_ids = [snap.id for snap in archive.chain]
            if chain_ids == archive.previous_ids:
                summary.status = "unchanged"  # nothing to parse; the source row may follow its file
                session.commit()
            else:
                progress(f"{spec.key}: parsing {len(archive.chain)} pages")
                apply_snapshots(session, source, kind, archive.chain, transport, summary, today=today, force=False)
                session.commit()
                summary.status = "ok"
    except Exception as error:  # a parser bug must fail this source, not the whole command
        summary.status, summary.error = "failed", redact(_failure(error), kind.secrets)
        summary.new = summary.changed = summary.withdrawn = summary.rejected = summary.posts = 0  # none stored
        summary.note = None
        chain_ids = None
    finally:
        http.close()
        summary.requests, summary.not_modified = http.requests_made, http.not_modified
        summary.duration_s = round(time.monotonic() - started, 3)
        _finish_run(engine, run_id, summary, chain_ids)
    return summary


def _source_id_for_log(engine: Engine, spec: SourceSpec) -> int:
    """The source's row for the run log. An existing row is left as it is (the run brings it in line with its
    file only if it succeeds); a source never stored gets its row now, as the run log needs one."""
    with Session(engine) as s:
        row = _source_row(s, spec)
        if row is None:
            row = sync_source(s, spec)
            s.commit()
        return row.id


def _failure(error: Exception) -> str:
    """What a failed run says: the message of a fault we expect, the type too for anything else (a bug)."""
    expected = (FetchError, PageFormatError, IncompleteRead)
    return str(error) if isinstance(error, expected) else f"{type(error).__name__}: {error}"


def reparse_source(engine: Engine, spec: SourceSpec, *, progress: Progress = lambda message: None,
                   today: date | None = None) -> RunSummary:
    """Re-derive every figure of a source from its last archived pages, without the network."""
    summary = RunSummary(source=spec.key, transport="archive")
    started = time.monotonic()
    with Session(engine) as session:
        source = sync_source(session, spec)
        run = last_good_run(session, source.id)
        if run is None or not run.snapshot_ids:
            # Nothing to re-derive is no failure (a source off the --due schedule may never have run).
            summary.status, summary.note = "unchanged", "never refreshed: no archived pages to reparse"
            return summary
        chain = _snapshots(session, json.loads(run.snapshot_ids))
        progress(f"{spec.key}: reparsing {len(chain)} archived pages")
        try:
            apply_snapshots(session, source, kind_for(spec), chain, run.transport, summary, today=today,
                            force=True)
            session.commit()
            summary.status = "ok"
        except Exception as error:  # as in refresh_source: one source's failure, not the command's
            session.rollback()
            summary.status, summary.error = "failed", _failure(error)
            summary.new = summary.changed = summary.withdrawn = summary.rejected = summary.posts = 0
            summary.note = None
    summary.duration_s = round(time.monotonic() - started, 3)
    return summary


# ---------------------------------------------------------------------------------------- posts -> figures
def _read(chain: list[Snapshot], transport: str,
          kind: SourceKind) -> tuple[list[tuple[FetchedPost, Snapshot]], Completeness]:
    """The posts of a run's pages, each with the page (snapshot) it was read from, and the read's completeness."""
    posts, completeness = kind.read([snap.body for snap in chain], transport)
    return [(post, chain[index]) for index, post in posts], completeness


def _may_withdraw_by_absence(completeness: Completeness, summary: RunSummary) -> bool:
    """Raises IncompleteRead when the read disagrees with a count its source states. True when every count is
    stated and met; otherwise (a count not stated) False, and the summary says why."""
    problem = completeness.problem()
    if problem:
        raise IncompleteRead(problem)
    if not completeness.verified:
        summary.note = (f"the source states no count of {', '.join(completeness.unstated) or 'its posts'}: "
                        "posts missing from this read were not withdrawn")
    return completeness.verified


def _date(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(timezone.utc)


def apply_snapshots(session: Session, source: Source, kind: SourceKind, chain: list[Snapshot], transport: str,
                    summary: RunSummary, *, today: date | None, force: bool) -> None:
    """Bring the stored posts and figures of a source in line with the pages of one run."""
    store = Store(session, today=today)
    retrieved = max(snap.retrieved_at for snap in chain).date().isoformat()
    posts, completeness = _read(chain, transport, kind)
    withdraw_absent = _may_withdraw_by_absence(completeness, summary)  # before anything is written
    existing = {p.external_id: p for p in session.exec(select(Post).where(Post.source_id == source.id))}
    seen: set[str] = set()
    read_directly: list[str] = []
    relayed_posts: set[str] = set()
    for fetched, snap in posts:
        seen.add(fetched.external_id)
        summary.posts += 1
        body_sha = hashlib.sha256(fetched.body.encode()).hexdigest()
        row = existing.get(fetched.external_id)
        if row is not None and not force and row.body_sha256 == body_sha and row.status == Status.active \
                and row.deleted == fetched.deleted:
            continue  # unchanged post: its figures stay as they are, same ids
        first_reading = row is None  # a post new to the store: no figure of it to compare, supersede or retire
        row = _upsert_post(session, source, row, fetched, snap, body_sha)
        ctx = PostContext(permalink=fetched.permalink, retrieved_at=retrieved,
                          published_at=fetched.created_at[:10] if fetched.created_at else None,
                          author=fetched.author, protocol=kind.spec.protocol)
        if fetched.deleted:  # a deleted comment's figures are withdrawn, not replaced
            summary.withdrawn += retire(session, row.id, set(), set(), Status.withdrawn)
            continue
        candidates = kind.candidates(fetched, ctx)
        _apply_candidates(session, store, source, row, snap, candidates, summary, first_reading)
        read_directly.append(fetched.permalink)
        relayed_posts.update(url for c in candidates if (url := _source_url(c.record)))
    for external_id, row in existing.items():
        if withdraw_absent and external_id not in seen and row.status == Status.active:
            row.status = Status.withdrawn
            session.add(row)
            summary.withdrawn += retire(session, row.id, set(), set(), Status.withdrawn)
    store.flush()
    # A direct reading outranks what a peer dataset relayed of the same post, whichever is stored first: the posts
    # read here supersede the relays of them, and a peer's figures (which name the post they are of) give way to a
    # reading of that post already stored.
    supersede_relayed(session, read_directly + sorted(relayed_posts - set(read_directly)))


def _source_url(record: dict) -> str | None:
    source = record.get("source")
    url = source.get("url") if isinstance(source, dict) else None
    return url if isinstance(url, str) else None


def _upsert_post(session: Session, source: Source, row: Post | None, fetched: FetchedPost, snap: Snapshot,
                 body_sha: str) -> Post:
    row = row or Post(source_id=source.id, external_id=fetched.external_id, permalink=fetched.permalink)
    row.kind, row.parent_external_id, row.author = fetched.kind, fetched.parent_id, fetched.author
    row.published_at, row.edited_at = _date(fetched.created_at), _date(fetched.edited_at)
    row.minimized, row.deleted = fetched.minimized, fetched.deleted
    row.body_sha256, row.snapshot_id, row.status = body_sha, snap.id, Status.active
    session.add(row)
    session.flush()
    return row


def _apply_candidates(session: Session, store: Store, source: Source, post: Post, snap: Snapshot,
                      candidates: list, summary: RunSummary, first_reading: bool) -> None:
    """Store a post's candidates; of a post read before, retire what it no longer says and link what it now says
    differently. A first reading has nothing to retire or link: its rows wait for the run's last flush (a peer
    file's first refresh is ~2,000 such posts, four statements each saved)."""
    old_by_slot = {} if first_reading else {m.slot: m for m in session.exec(
        select(Measurement).where(Measurement.post_id == post.id, Measurement.status == Status.active))}
    figure_keys, rejection_keys, new_by_slot = set(), set(), {}
    for candidate in candidates:
        result = store.put(candidate.record, Provenance(source=source, post=post, snapshot_id=snap.id,
                                                        slot=candidate.slot, extra_reasons=candidate.reasons))
        if result.outcome.startswith("accepted"):
            figure_keys.add(result.key)
            if result.outcome == "accepted":
                new_by_slot[candidate.slot] = result.key
        else:
            rejection_keys.add(result.key)
            summary.rejected += result.outcome == "rejected"
    if not first_reading:
        store.flush()
        retire(session, post.id, figure_keys, rejection_keys, Status.superseded)
    for slot, key in new_by_slot.items():
        old = old_by_slot.get(slot)
        if old is not None and old.figure_key != key:
            summary.changed += 1  # the figure in this place of the post now reads differently
            session.execute(update(Measurement).where(Measurement.figure_key == key,
                                                      Measurement.supersedes_id.is_(None))
                            .values(supersedes_id=old.id))
        else:
            summary.new += 1


def _next_due(session: Session, source: Source | None, spec: SourceSpec) -> datetime | None:
    """When the source is due again: its interval after its last successful run (None: never ran, due now)."""
    run = last_good_run(session, source.id) if source else None
    return run.finished_at + timedelta(hours=spec.refresh_interval_hours) if run else None


def due_sources(engine: Engine, specs: dict[str, SourceSpec], now: datetime | None = None) -> list[str]:
    """Keys of the enabled sources whose interval has passed since their last successful run (or that never ran)."""
    now = now or utcnow()
    with Session(engine) as session:
        return [key for key, spec in specs.items() if spec.enabled
                and ((due := _next_due(session, _source_row(session, spec), spec)) is None or due <= now)]


def _source_row(session: Session, spec: SourceSpec) -> Source | None:
    return session.exec(select(Source).where(Source.url == spec.url)).first()


def _active_count(session: Session, model_cls, source_id: int) -> int:
    return session.exec(select(func.count()).select_from(model_cls).where(
        model_cls.source_id == source_id, model_cls.status == Status.active)).one()


def source_status(engine: Engine, specs: dict[str, SourceSpec], now: datetime | None = None) -> list[dict]:
    """One row per source file: last run, its status, when it is next due, and what it holds."""
    now = now or utcnow()
    rows = []
    with Session(engine) as session:
        for key, spec in specs.items():
            source = _source_row(session, spec)
            last = source and session.exec(select(RefreshRun).where(RefreshRun.source_id == source.id)
                                           .order_by(RefreshRun.id.desc())).first()
            next_due = _next_due(session, source, spec)
            rows.append({
                "key": key,
                "kind": spec.kind,
                "every_h": spec.refresh_interval_hours,
                "last_run": last.started_at.isoformat(sep=" ", timespec="seconds") if last else None,
                "status": last.status if last else "never run",
                "next_due": "now" if next_due is None or next_due <= now
                else next_due.isoformat(sep=" ", timespec="minutes"),
                "figures": _active_count(session, Measurement, source.id) if source else 0,
                "rejections": _active_count(session, Rejection, source.id) if source else 0,
                "url": spec.url,
            })
    return rows
