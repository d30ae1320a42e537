"""The Python API: one function per job of the command line that writes or reads the database.

Each call that writes owns its transaction and the database's write lock: it takes the lock before it reads
anything, commits when the whole job is done, and stores nothing when it fails. Nothing here prints: a call
returns what it did (counts, reports) and tells what happens on the way through optional callbacks (progress
text, each rejected record, notes). Every failure a user can act on is one ApiError(message, code) (BusyError when
another process holds the lock); `code` is the command line's exit code for it (2 refused, nothing stored; 3 busy).
The command line (tpsdb.cli) parses, calls these, prints.

    import tpsdb
    engine = tpsdb.open_database("data/tpsdb.sqlite")
    counts = tpsdb.add(engine, ["my-records.jsonl"], on_rejected=lambda where, reasons: print(where, reasons))
"""

from __future__ import annotations

import gc
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

from . import config, db
from .bulk import Read, mapped, read_records
from .history import supersede_refusals_now_accepted
from .output import os_error_text
from .record import RecordFileError
from .reference import ReferenceError
from .reference import bandwidths as stored_bandwidths_of
from .reference import load_reference as _load_reference_file
from .reference import models as stored_models_of
from .store import Busy, Store, lock_for_writing

__all__ = ["ApiError", "BusyError", "Withdrawn", "add", "build_tables", "create_database", "due_sources", "import_peer", "ingest_files",
           "load_reference", "load_sources", "open_database", "pick_sources", "read_file", "refresh_sources",
           "reparse", "run_query", "seeded_sources", "source_specs", "table_definitions", "withdraw", "withdrawal_reason"]

Progress = Callable[[str], None]  # a line of progress text (a terminal shows it, then the next one replaces it)
OnRejected = Callable[[str, list[str]], None]  # where (FILE:LINE) and the reasons of one rejected record

DEFAULT_TIMEOUT = 60.0  # seconds a writer waits for another one to finish


class ApiError(Exception):
    """A failure the user can act on. `code` is the command line's exit code for it: 2 (bad input, nothing
    stored), 3 (busy)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class BusyError(ApiError):
    """Another process held the database's write (or refresh) lock for longer than the call would wait."""

    def __init__(self, message: str) -> None:
        super().__init__(message, 3)


def _quiet(*_args) -> None:
    """The callback of a caller that gave none."""


# ----------------------------------------------------------------------------------------------- database
def open_database(url: str | None = None) -> Engine:
    """An engine on an existing database whose schema is at head (url: a database URL or a SQLite path; default:
    $TPSDB_DATABASE_URL, else data/tpsdb.sqlite). Never creates a file (only `tpsdb init` does), so a mistyped path
    is an ApiError, not a new empty database."""
    url = config.database_url(url)
    try:
        path = db.sqlite_path(url)
        if path and not os.path.isfile(path):
            what = "is not a file" if os.path.exists(path) else "does not exist"
            raise db.DatabaseError(f"{path} {what}; run `tpsdb init --db {path}` to create a database there")
        engine = db.make_engine(url)
        db.require_schema(engine)
    except Exception as error:  # a corrupt file, an unreachable server, a missing driver...
        if (known := db.explain(error)) is None:
            raise
        raise ApiError(*known) from None
    return engine


def create_database(url: str | None = None, seed: bool = True) -> int | None:
    """Create the database (url as for open_database) or upgrade it to the latest schema; an empty one gets the
    curated seed (data/seed.sql) unless seed=False. Returns the number of seed rows loaded (None: none loaded).
    ApiError when it cannot be created or upgraded."""
    try:
        engine = db.create_database(url)
        count = db.init_database(engine, config.SEED_SQL if seed else None)
    except db.DatabaseError as error:
        raise ApiError(str(error)) from None
    engine.dispose()  # its transactions take the write lock; what follows only reads
    return count


def _writing(engine: Engine, timeout: float) -> Session:
    """A session holding the database's write lock (taken before anything is read: a concurrent writer's rows are
    then seen), or BusyError."""
    session = Session(engine)
    try:
        lock_for_writing(session, timeout)
    except Busy as error:
        session.close()
        raise BusyError(f"{db.name_of(engine)}: {error}") from None
    except BaseException:
        session.close()
        raise
    return session


# ---------------------------------------------------------------------------------------------- records
def read_file(path: Path, bandwidths: dict[str, float], models: dict | None = None, strict: bool = False,
              on_warning: Callable[[str], None] = _quiet) -> Iterator[Read]:
    """The records of one file (`-`: standard input) as read (see tpsdb.bulk.read_records); a file without
    records is a warning. Raises OSError and RecordFileError: strict, at the first line that is not a record (raised
    here, where the reader can tell a file changed under it)."""
    count = 0
    with mapped(path) as data:
        for count, read in enumerate(read_records(str(path), data, bandwidths, models), 1):
            if strict and read.prepared is None:
                raise RecordFileError(f"{read.where}: {read.unreadable}")
            yield read
    if count == 0:
        on_warning(f"warning: 0 records in {path}")


def add(engine: Engine, files: Sequence[Path | str], *, timeout: float = DEFAULT_TIMEOUT,
        on_rejected: OnRejected = _quiet, progress: Progress = _quiet,
        on_warning: Callable[[str], None] = _quiet, on_withdrawn: Callable[[str, str], None] = _quiet) -> Counter:
    """Store records (JSON or JSONL files of format v1; "-" reads standard input) in one transaction: accepted ones
    as measurements, rejected ones as rejections with their reasons (on_rejected(where, reasons) for each).
    A record whose figure its user withdrew (`withdraw`) stays withdrawn: counted as accepted_withdrawn,
    on_withdrawn(where, which withdrawal) for each.

    Returns the counts of Store.put outcomes (accepted, accepted_unchanged, rejected, rejected_unchanged). Adding the
    same file twice changes nothing. A line that is not a record, or any other error, stores nothing (ApiError)."""
    paths = [Path(f) for f in files]
    counts: Counter = Counter()
    path = paths[0] if paths else Path("-")
    with _writing(engine, timeout) as session:
        store = Store(session)
        bandwidths, models = stored_bandwidths_of(session), stored_models_of(session)
        # Records and rows hold no reference cycles; the cyclic GC would only rescan every object a bulk add
        # creates, over and over (measured: more than half the time of a 100,000-record add).
        gc.disable()
        try:
            for path in paths:
                for index, read in enumerate(read_file(path, bandwidths, models, strict=True, on_warning=on_warning),
                                             1):
                    result = store.put_prepared(read.prepared)
                    counts[result.outcome] += 1
                    if result.reasons:  # as validate gives them, with the reasons only the database knows
                        on_rejected(read.where, result.reasons)
                    if result.withdrawn:
                        on_withdrawn(read.where, result.withdrawn)
                    if index % 1000 == 0:
                        progress(f"{path}: {index} records")
            store.flush()
            supersede_refusals_now_accepted(session)  # in the add's transaction: a refusal never outlives its fix
            session.commit()
        except RecordFileError as error:
            raise ApiError(f"{error}; nothing was stored") from None
        except OSError as error:
            raise ApiError(f"{os_error_text(error, path)}; nothing was stored") from None
        except (OverflowError, DBAPIError) as error:  # a value the database cannot hold, a full disk…
            known = db.explain(error)
            if known:
                raise ApiError(*known) from None
            why = str(getattr(error, "orig", None) or error).splitlines()[0]  # not the thousands of parameters
            raise ApiError(f"{db.name_of(engine)}: cannot store the records of {', '.join(map(str, paths))}: {why}; "
                           "nothing was stored") from None
        finally:
            gc.enable()
    return counts


def ingest_files(engine: Engine, files: Sequence[Path | str], *, source_url: str, hardware: str | None = None,
           model: str | None = None, fmt: str | None = None, retrieved_at: str | None = None,
           published_at: str | None = None, timeout: float = DEFAULT_TIMEOUT, on_rejected: OnRejected = _quiet,
           on_note: Callable[[str, str], None] = _quiet, progress: Progress = _quiet) -> Counter:
    """Store the figures of llama-bench / llama-batched-bench (and other tools') output files under one source URL,
    in one transaction, with each raw file archived. Returns the counts of Store.put outcomes, as add does; a
    figure lacking a condition is a rejection (on_rejected(where, reasons)). Ingesting the same file twice changes
    nothing. A file that cannot be read stores nothing (ApiError)."""
    from .ingest import IngestError
    from .ingest import ingest_files as store_files

    paths = [Path(f) for f in files]
    try:
        with _writing(engine, timeout) as session:
            progress(f"reading {len(paths)} file{'s' if len(paths) != 1 else ''}")
            counts = store_files(session, paths, source_url=source_url, hardware=hardware, fmt=fmt,
                                  retrieved_at=retrieved_at, published_at=published_at, model=model,
                                  on_rejected=on_rejected, on_note=on_note)
            session.commit()
    except IngestError as error:
        raise ApiError(f"{error}; nothing was stored") from None
    return counts


# ----------------------------------------------------------------------------------------------- reference
def load_reference(engine: Engine, files: Sequence[Path | str], *, replace: bool = False,
                   timeout: float = DEFAULT_TIMEOUT,
                   on_file: Callable[[Path, dict, list[str]], None] = _quiet) -> list[tuple[Path, dict, list[str]]]:
    """Load reference data (hardware bandwidths, model file sizes) from TOML files, all in one transaction.

    Returns, per file, its counts (hardware, model_file, model) and the stored values it replaced (only with
    replace=True; without it, a value that differs from a stored one is an error); on_file(path, counts, replaced)
    is called as each file is loaded. Any error stores nothing (ApiError)."""
    loaded: list[tuple[Path, dict, list[str]]] = []
    with _writing(engine, timeout) as session:
        path = Path()
        try:
            for path in map(Path, files):
                counts, replaced = _load_reference_file(session, path, replace=replace)
                loaded.append((path, counts, replaced))
                on_file(path, counts, replaced)
        except ReferenceError as error:
            session.rollback()
            raise ApiError(f"{error}; nothing was stored") from None
        except OSError as error:
            session.rollback()
            raise ApiError(f"{os_error_text(error, path)}; nothing was stored") from None
        session.commit()
    return loaded


# ----------------------------------------------------------------------------------------------- withdraw
@dataclass(frozen=True)
class Withdrawn:
    """A figure withdrawn: its id, speed, source URL and why."""

    measurement_id: int
    tokens_per_second: float
    source_url: str
    why: str


def withdrawal_reason(why: str) -> str:
    """The reason of a withdrawal, stripped: one line, no control character, at most 500 bytes; else ApiError."""
    from .record import MAX_NAME_BYTES, _check_name

    why = why.strip()
    problems: list[str] = []
    _check_name(why, "--why", problems)  # a name's rule
    if not why or problems:
        raise ApiError(f"--why: give a reason on one line, at most {MAX_NAME_BYTES} bytes (e.g. --why \"wrong "
                       "machine\")")
    return why


def withdraw(engine: Engine, measurement_id: int, why: str, *, timeout: float = DEFAULT_TIMEOUT) -> Withdrawn:
    """Withdraw a figure that was added (add, ingest) and is wrong: its row stays, with status withdrawn, and the
    withdrawal table keeps why and when. A figure of a source that refresh reads is refused (the next refresh would
    read it again). ApiError when refused: nothing changed."""
    from datetime import datetime, timezone

    from .models import Measurement, Source, Status, Withdrawal

    why = withdrawal_reason(why)
    with _writing(engine, timeout) as session:
        figure = session.get(Measurement, measurement_id)
        if figure is None:
            raise ApiError(f"figure {measurement_id}: no such measurement in {db.name_of(engine)}")
        if figure.status != Status.active:
            raise ApiError(f"figure {measurement_id}: already {figure.status}; nothing changed")
        source = session.get(Source, figure.source_id)
        if source is not None and source.key:
            raise ApiError(f"figure {measurement_id} comes from {source.key} ({source.url}), which `tpsdb refresh` "
                           "reads: the next refresh would read it again; nothing changed")
        figure.status = Status.withdrawn
        session.add(figure)
        session.add(Withdrawal(measurement_id=measurement_id, why=why,
                               withdrawn_at=datetime.now(timezone.utc).isoformat(timespec="seconds")))
        session.commit()
        return Withdrawn(measurement_id, figure.tokens_per_second, figure.source_url, why)


# ---------------------------------------------------------------------------------------------- sources
def source_specs(sources_dir: Path | None = None) -> dict:
    """The source files (sources/, or sources_dir) by key, or ApiError naming the file that cannot be read."""
    from .kinds import load_sources
    from .sources import SourceFileError

    try:
        return load_sources(sources_dir)
    except (SourceFileError, OSError) as error:
        raise ApiError(str(error)) from None


def import_peer(engine: Engine, fmt: str, file: Path | str, *, specs: dict | None = None,
                sources_dir: Path | None = None, timeout: float = DEFAULT_TIMEOUT, progress: Progress = _quiet):
    """Store the figures another dataset relayed (fmt: a peer format, "tokatlas"), naming it as `source.via`, in
    one transaction under the write lock; figures lacking a condition are kept as rejections, and a post already
    read directly keeps its direct figures. Returns the peers module's ImportReport (counts, superseded, the
    duplicate ids). An unreadable file stores nothing (ApiError)."""
    from .peers import FORMATS, PeerFileError, import_tokatlas

    if fmt not in FORMATS:
        raise ApiError(f"FORMAT: {fmt!r} is not one of {', '.join(FORMATS)}")
    if specs is None:
        specs = source_specs(sources_dir)
    path = Path(file)
    try:
        with _writing(engine, timeout) as session:
            progress(f"reading {path}")
            report = import_tokatlas(session, path, specs)
            progress(f"storing {report.figures} figures")
            session.commit()
    except PeerFileError as error:
        raise ApiError(f"{error}; nothing was stored") from None
    return report


def pick_sources(specs: dict, names: Sequence[str]) -> list[str]:
    """The named sources, or ApiError naming the ones no source file has."""
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise ApiError(f"unknown source {', '.join(unknown)}; known: {', '.join(specs) or 'none'} (see `tpsdb "
                       "sources`)")
    return list(names)


def due_sources(engine: Engine, specs: dict) -> list[str]:
    """The sources whose refresh interval has passed."""
    from .refresh import due_sources as due

    return due(engine, specs)


def _run_sources(engine: Engine, keys: Sequence[str], run_one, wait: bool, on_summary) -> list:
    """Run one source after another under the database's refresh lock (one transaction per source, the engine's):
    their summaries, each also given to on_summary as it ends. BusyError when another refresh holds the lock."""
    from .refresh import RefreshBusy, RefreshLockError, refresh_lock

    summaries = []
    try:
        with refresh_lock(engine, wait):
            for key in keys:
                summaries.append(run_one(key))
                on_summary(summaries[-1])
    except RefreshBusy as error:
        raise BusyError(str(error)) from None
    except RefreshLockError as error:
        raise ApiError(str(error)) from None
    return summaries


def refresh_sources(engine: Engine, keys: Sequence[str], *, specs: dict | None = None, sources_dir: Path | None = None,
            wait: bool = False, session_factory=None, progress: Progress = _quiet, on_summary=_quiet) -> list:
    """Fetch the named sources, archive every response and store their figures, one transaction per source; a
    source that fails leaves the database as it was and the others still run. Returns each source's summary
    (status "failed" for one that failed). session_factory makes the HTTP session (default: the polite one
    config.http_settings() describes)."""
    from .refresh import refresh_source

    specs = source_specs(sources_dir) if specs is None else specs
    keys = pick_sources(specs, keys)
    factory = session_factory or _http_session
    return _run_sources(engine, keys, lambda key: refresh_source(engine, specs[key], session_factory=factory,
                                                                 progress=progress), wait, on_summary)


def _http_session():
    from .collect.http import PoliteSession

    return PoliteSession(**config.http_settings())


def load_sources(engine: Engine, keys: Sequence[str], *, shared: Path = Path("../shared"),
                 specs: dict | None = None, sources_dir: Path | None = None, progress: Progress = _quiet,
                 on_summary=_quiet) -> list:
    """Store sources from their [seed] copies, offline, through the same kind and engine as a refresh (one
    transaction per source). Returns each source's summary."""
    from .seedload import load_source

    specs = source_specs(sources_dir) if specs is None else specs
    keys = pick_sources(specs, keys)
    return _run_sources(engine, keys, lambda key: load_source(engine, specs[key], shared, progress=progress),
                        False, on_summary)


def seeded_sources(specs: dict) -> list[str]:
    """The sources whose file has a [seed] table (what load_sources can load)."""
    from .seedload import has_seed

    return [key for key, spec in specs.items() if has_seed(spec)]


def reparse(engine: Engine, keys: Sequence[str], *, specs: dict | None = None, sources_dir: Path | None = None,
            progress: Progress = _quiet, on_summary=_quiet) -> list:
    """Re-derive every figure of the named sources from the archived pages of their last run, without the network
    (waiting for a refresh that runs). Returns each source's summary."""
    from .refresh import reparse_source

    specs = source_specs(sources_dir) if specs is None else specs
    keys = pick_sources(specs, keys)
    return _run_sources(engine, keys, lambda key: reparse_source(engine, specs[key], progress=progress), True,
                        on_summary)


# ----------------------------------------------------------------------------------------------- reading
def table_definitions(names: Sequence[str] | None = None, tables_dir: Path | None = None) -> list:
    """The table definitions (tables/*.toml, or tables_dir) named, in the order given, or all; ApiError for a
    definition that cannot be read or a name none has."""
    from .publish.definitions import DefinitionError, load_definitions, select

    try:
        return select(load_definitions(tables_dir or config.TABLES_DIR), list(names) if names else None)
    except DefinitionError as error:
        raise ApiError(str(error)) from None


def build_tables(engine: Engine, names: Sequence[str] | None = None, *, tables_dir: Path | None = None,
                 definitions: list | None = None) -> list:
    """Build the published tables (names: which, default all; or the definitions already read) from the database:
    the built tables, for tpsdb.publish.render (render(table, "md"))."""
    from .publish.tables import build_tables as build

    return build(engine, table_definitions(names, tables_dir) if definitions is None else definitions)


def run_query(sql: str, url: str | None = None, *, timeout: float | None = None,
          limit: int | None = None) -> tuple[list[str], list[tuple]]:
    """Run one SQL statement read-only (anything but reading is refused): its column names and rows (at most
    limit of them). ApiError with the query's one-line message when it cannot run."""
    from itertools import islice

    from .query import DEFAULT_TIMEOUT as QUERY_TIMEOUT
    from .query import QueryError, run_readonly

    try:
        with run_readonly(sql, url, QUERY_TIMEOUT if timeout is None else timeout) as (columns, rows):
            return list(columns), list(islice(rows, limit))
    except QueryError as error:
        raise ApiError(str(error)) from None
