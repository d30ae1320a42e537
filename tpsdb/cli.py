"""The command line. Thin: it parses arguments, calls the package, prints. Every command has --help."""

from __future__ import annotations

import csv
import gc
import json
import math
import os
import sys
import traceback
from collections import Counter
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer
from sqlalchemy import func
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, select

from . import cli_publish, config, db
# The refresh and ingest modules (requests, lxml, the extractors) are imported inside their commands, so that the
# other commands start without them.
from .cli_common import DbOption, check_choice, fail, open_db
from .models import Hardware, Measurement, Model, ModelFile, Rejection, Source, Status
from .query import DEFAULT_LIMIT, DEFAULT_TIMEOUT, Limited, QueryError, render, run_readonly, write
from .record import RecordFileError, Via
from .reference import ReferenceError, load_reference
from .bulk import mapped, prepared_records
from .output import os_error_text, spreadsheet_safe, write_atomic
from .store import Busy, Prepared, Store, iter_measurement_records, iter_rejections, lock_for_writing, model_facts

app = typer.Typer(
    help="tpsdb: LLM inference speed figures (tokens/s) kept with their six conditions and their provenance.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

def records_of(path: Path, bandwidths: dict[str, float], models: dict | None = None) -> Iterator[Prepared]:
    """The records of one file (`-`: standard input), validated (see tpsdb.bulk); an unreadable file is a clear
    error, a file without records a warning."""
    count = 0
    try:
        with mapped(path) as data:
            for count, prepared in enumerate(prepared_records(str(path), data, bandwidths, models), 1):
                yield prepared
    except OSError as error:
        fail(f"{path}: {error.strerror}")
    if count == 0:
        typer.echo(f"warning: 0 records in {path}", err=True)


# ----------------------------------------------------------------------------------------------- database
@app.command()
def init(
    db_url: DbOption = None,
    seed: Annotated[bool, typer.Option(help="Load data/seed.sql into a new database.")] = True,
) -> None:
    """Create the database or upgrade it to the latest schema; an empty one gets the curated seed (data/seed.sql).

    Then print a summary of what the database holds.
    """
    try:
        engine = db.create_database(db_url)
        count = db.init_database(engine, config.SEED_SQL if seed else None)
    except db.DatabaseError as error:
        fail(str(error))
    engine.dispose()  # its transactions take the write lock; the summary only reads
    if count is not None:
        typer.echo(f"loaded {config.SEED_SQL.name}: {count} rows", err=True)
    typer.echo(summary_text(db.make_engine(db_url)))


@app.command()
def summary(db_url: DbOption = None) -> None:
    """Print what the database holds: figures by status, rejections and their commonest reasons, references."""
    typer.echo(summary_text(open_db(db_url)))


def summary_text(engine) -> str:
    with Session(engine) as s:
        count = lambda model, *where: s.exec(select(func.count()).select_from(model).where(*where)).one()
        by_status = dict(s.exec(select(Measurement.status, func.count()).group_by(Measurement.status)).all())
        reasons = Counter()
        for text in s.exec(select(Rejection.reasons).where(Rejection.status == Status.active)).all():
            reasons.update(json.loads(text))
        lines = [
            f"database: {engine.url.render_as_string(hide_password=True)} (schema {db.current_revision(engine)})",
            f"measurements: {by_status.get('active', 0)} active, {by_status.get('superseded', 0)} superseded, "
            f"{by_status.get('withdrawn', 0)} withdrawn",
            f"rejections: {count(Rejection, Rejection.status == Status.active)}",
            f"sources: {count(Source)}; hardware: {count(Hardware)} "
            f"({count(Hardware, Hardware.memory_bandwidth_gbs.is_not(None))} with a cited bandwidth); "
            f"models: {count(Model)}; model files: {count(ModelFile)}",
        ]
        if reasons:
            lines.append("commonest rejection reasons:")
            lines += [f"  {n:6d}  {reason}" for reason, n in reasons.most_common(8)]
    return "\n".join(lines)


@app.command("export-seed")
def export_seed(
    db_url: DbOption = None,
    out: Annotated[Path, typer.Option(help="Where to write the seed.")] = config.SEED_SQL,
) -> None:
    """Write the curated tables as data/seed.sql, deterministically (the same database gives the same bytes).

    Raw snapshots are left out: the seed is the dataset, not the archive.
    """
    engine = open_db(db_url)
    content = db.dump_seed(engine)
    try:
        write_atomic(out, content)  # a reader never sees half a seed
    except OSError as error:
        fail(os_error_text(error, out))
    typer.echo(f"wrote {out} ({len(content.encode())} bytes)", err=True)


@app.command()
def reference(
    files: Annotated[list[Path], typer.Argument(help="TOML files with [[hardware]] / [[model_file]] entries.")],
    replace: Annotated[bool, typer.Option("--replace", help="Let a file's values replace different stored ones.")] = False,
    db_url: DbOption = None,
) -> None:
    """Load reference data (hardware bandwidths with their spec URL, model file sizes) from TOML files.

    Each entry is checked like a record (unknown keys, types, finite positive numbers, http(s) URLs, parameters in
    billions, plausible sizes). A value fills an empty field; one that differs from a stored value is an error
    naming both, unless --replace. Any error stores nothing. Exit status: 0 stored, 2 refused, 3 database busy.
    """
    engine = open_db(db_url)
    with Session(engine) as session:
        try:
            lock_for_writing(session, 60)
        except Busy as error:
            fail(f"{_shown(engine)}: {error}", code=3)
        try:
            for path in files:
                counts, replaced = load_reference(session, path, replace=replace)
                typer.echo(f"{path}: {counts['hardware']} hardware, {counts['model_file']} model files, "
                           f"{counts['model']} models", err=True)
                for change in replaced:
                    typer.echo(f"{path}: replaced {change}", err=True)
        except ReferenceError as error:
            session.rollback()
            fail(f"{error}; nothing was stored")
        except OSError as error:
            session.rollback()
            fail(f"{path}: {error.strerror}; nothing was stored")
        session.commit()


# ---------------------------------------------------------------------------------------------- records
@app.command("validate")
def validate_cmd(
    files: Annotated[list[Path], typer.Argument(help="JSON or JSONL files of records (format v1).")],
    db_url: Annotated[
        Optional[str], typer.Option("--db", help="Database whose hardware bandwidths feed the ceiling check.")
    ] = None,
) -> None:
    """Check records without storing them. Prints each rejected record's index and reasons.

    Exit status: 0 when every record is accepted, 1 when any is rejected, 2 on unreadable input.
    """
    bandwidths, models = _reference_bandwidths(db_url) or ({}, {})
    rejected = total = 0
    try:
        for path in files:
            for index, prepared in enumerate(records_of(path, bandwidths, models)):
                total += 1
                if prepared.reasons:
                    rejected += 1
                    typer.echo(f"{path}[{index}]: " + "; ".join(prepared.reasons))
    except RecordFileError as error:
        fail(str(error))
    typer.echo(f"{total - rejected} accepted, {rejected} rejected", err=True)
    raise typer.Exit(1 if rejected else 0)


def _reference_bandwidths(db_url: str | None) -> tuple[dict, dict] | None:
    """Hardware name -> bandwidth and model name -> facts from an existing database (never creates one); None when
    there is none."""
    url = config.database_url(db_url)
    path = db.sqlite_path(url)
    if url.startswith("sqlite") and not (path and Path(path).exists()):
        return None
    engine = db.make_engine(url)
    try:
        db.require_schema(engine)
    except db.DatabaseError:
        return None
    with Session(engine) as session:
        return _bandwidths(session), _models(session)


def _models(session: Session) -> dict:
    """Model name -> the facts the ceiling check of a mixture of experts needs (record.ModelFacts)."""
    return {row.name: model_facts(row) for row in session.exec(select(Model))}


def _bandwidths(session: Session) -> dict[str, float]:
    """Hardware name -> bandwidth, for the ceiling check of records validated away from the database."""
    rows = session.exec(select(Hardware.name, Hardware.memory_bandwidth_gbs)).all()
    return {name: bandwidth for name, bandwidth in rows if bandwidth}


@app.command()
def add(
    files: Annotated[list[Path], typer.Argument(help="JSON or JSONL files of records (format v1); - reads standard input.")],
    db_url: DbOption = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait while another process writes.")] = 60,
) -> None:
    """Store records: accepted ones as measurements, rejected ones as rejections with their reasons.

    Adding the same file twice changes nothing. All files go in one transaction: on an error nothing is written.
    A record whose model or hardware facts (params_b, active_params_b, memory_gb, gpu_cores) differ from those
    already stored is kept as a rejection naming both values. Exit status: 0 when every record is accepted,
    1 when any is rejected, 2 on unreadable input (nothing stored), 3 when another add held the database for
    longer than --timeout.
    """
    engine = open_db(db_url)
    counts: Counter = Counter()
    with Session(engine) as session:
        try:
            lock_for_writing(session, timeout)  # before anything is read: a concurrent add's rows are then seen
        except Busy as error:
            fail(f"{_shown(engine)}: {error}", code=3)
        store = Store(session)
        bandwidths, models = _bandwidths(session), _models(session)
        # Records and rows hold no reference cycles; the cyclic GC would only rescan every object a bulk add
        # creates, over and over (measured: more than half the time of a 100,000-record add).
        gc.disable()
        try:
            for path in files:
                for index, prepared in enumerate(records_of(path, bandwidths, models), 1):
                    result = store.put_prepared(prepared)
                    counts[result.outcome] += 1
                    if result.reasons:  # as validate prints them, with the reasons only the database knows
                        typer.echo(f"{path}[{index - 1}]: " + "; ".join(result.reasons))
                    if index % 20000 == 0:
                        typer.echo(f"{path}: {index} records", err=True)
            store.flush()
            session.commit()
        except RecordFileError as error:
            fail(f"{error}; nothing was stored")
        except (OverflowError, DBAPIError) as error:  # a value the database cannot hold, a full disk…
            known = db.explain(error)
            if known:
                fail(known[0], code=known[1])
            why = str(getattr(error, "orig", None) or error).splitlines()[0]  # not the thousands of parameters
            fail(f"{_shown(engine)}: cannot store the records of {', '.join(map(str, files))}: {why}; "
                 "nothing was stored")
        finally:
            gc.enable()
    typer.echo(_stored_line(counts))
    raise typer.Exit(1 if counts["rejected"] or counts["rejected_unchanged"] else 0)


def _shown(engine) -> str:
    return db.name_of(engine)


def _stored_line(counts: Counter) -> str:
    """What `add` and `ingest` say they stored (counts of Store.put outcomes)."""
    return (f"{counts['accepted']} measurements added, {counts['accepted_unchanged']} already stored; "
            f"{counts['rejected']} rejections added, {counts['rejected_unchanged']} already stored")


def _flatten(record: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and key not in ("options", "inputs"):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = json.dumps(value, sort_keys=True, ensure_ascii=False) if isinstance(value, (dict, list)) else value
    return flat


@app.command()
def export(
    fmt: Annotated[str, typer.Option("--format", help="jsonl or csv.")] = "jsonl",
    rejections: Annotated[bool, typer.Option("--rejections", help="Export the rejections instead.")] = False,
    all_statuses: Annotated[bool, typer.Option("--all", help="Include superseded and withdrawn figures.")] = False,
    db_url: DbOption = None,
) -> None:
    """Write the measurements as records (format v1) to standard output, in id order.

    `export | add` into an empty database then `export` again gives the same bytes.
    """
    check_choice("--format", fmt, ("jsonl", "csv"))
    engine = open_db(db_url)
    items = iter_rejections(engine) if rejections else iter_measurement_records(engine, all_statuses)
    out = sys.stdout
    writer = None
    for number, item in enumerate(items, 1):
        if fmt == "jsonl":
            try:  # never the non-standard Infinity/NaN, which other JSON readers refuse
                out.write(json.dumps(item, ensure_ascii=False, sort_keys=False, allow_nan=False) + "\n")
            except ValueError:
                _non_finite(number, item)
            continue
        if not rejections and item["source"].get("via") is None:  # same columns for every row
            item["source"]["via"] = dict.fromkeys(Via.model_fields)
        flat = _flatten(item)
        if any(isinstance(v, float) and not math.isfinite(v) for v in flat.values()):
            _non_finite(number, item)
        if writer is None:
            writer = csv.DictWriter(out, fieldnames=list(flat), lineterminator="\n")
            writer.writeheader()
        writer.writerow({key: spreadsheet_safe(value) for key, value in flat.items()})


def _non_finite(number: int, item: dict) -> None:
    source = (item.get("source") or {}).get("url", "?") if isinstance(item, dict) else "?"
    fail(f"export: record {number} (source {source}) holds a non-finite number (inf or NaN), which no export "
         "format may carry; fix or withdraw it in the database (tpsdb query shows it)")


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help='SQL to run, e.g. "select * from measurement_full limit 5".')],
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    timeout: Annotated[float, typer.Option("--timeout", help="Stop the statement after this many seconds.")] = DEFAULT_TIMEOUT,
    limit: Annotated[int, typer.Option("--limit", help="Show at most this many rows (0: all); says so when cut.")] = DEFAULT_LIMIT,
    db_url: DbOption = None,
) -> None:
    """Run one SQL statement read-only (anything but reading is refused; the database is not touched).

    Views: measurement_full (one row spells a figure out), rejection_full, measurement_history.
    """
    check_choice("--format", fmt, ("table", "csv", "json"))
    if limit < 0:
        fail(f"query: --limit must be 0 (every row) or more, not {limit}")
    try:
        with run_readonly(sql, db_url, timeout) as (columns, rows):
            shown = Limited(rows, limit)
            write(columns, shown, fmt, sys.stdout)
    except QueryError as error:
        sys.stdout.flush()
        fail(str(error))
    except BrokenPipeError:  # the reader (`| head`) has what it wanted; Python's documented way to stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return
    if shown.cut:
        typer.echo(f"query: showing the first {limit} rows; more matched (--limit N, or --limit 0 for all)", err=True)


# ---------------------------------------------------------------------------------------------- sources
def _specs(sources_dir: Path | None) -> dict:
    from .sources import SourceFileError, load_sources

    try:
        return load_sources(sources_dir)
    except (SourceFileError, OSError) as error:
        fail(str(error))


def _pick(specs: dict, names: list[str]) -> list[str]:
    unknown = [n for n in names if n not in specs]
    if unknown:
        fail(f"unknown source {', '.join(unknown)}; known: {', '.join(specs) or 'none'} (see `tpsdb sources`)")
    return names


SourcesDir = Annotated[Optional[Path], typer.Option("--sources-dir", help="Folder of source files (default sources/).")]


@app.command()
def refresh(
    names: Annotated[Optional[list[str]], typer.Argument(help="Source keys (file names in sources/). Forces them.")] = None,
    due: Annotated[bool, typer.Option("--due", help="Only the sources whose refresh interval has passed.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for a refresh already running instead of exiting.")] = False,
    sources_dir: SourcesDir = None,
    db_url: DbOption = None,
) -> None:
    """Fetch sources, archive every response, and store their figures; one transaction per source.

    Without a token the public discussion pages are read; with GITHUB_TOKEN (or TPSDB_GITHUB_TOKEN) the GraphQL
    API. A source that fails (a fault, or a read short of the counts the source states) leaves the database as it
    was; the others still run. Exit status: 0 when every source succeeded, 1 when one failed, 2 when the lock
    file is a link, 3 when another refresh holds the database.
    """
    from .refresh import due_sources, refresh_source

    specs = _specs(sources_dir)
    if not names and not due:
        fail("name the sources to refresh, or pass --due (see `tpsdb sources`)")
    engine = open_db(db_url)
    keys = _pick(specs, names or []) if names else due_sources(engine, specs)
    _run_sources(engine, keys, lambda key: refresh_source(engine, specs[key], session_factory=_http_session,
                                                          progress=_progress), as_json=as_json, wait=wait)
    if not keys and not as_json:
        typer.echo("no source is due")


def _progress(message: str) -> None:
    typer.echo(message, err=True)


def _run_sources(engine, keys: list[str], run_one, *, as_json: bool, wait: bool) -> None:
    """Run one source after another under the database's refresh lock; print; exit 1 if one failed."""
    from .refresh import RefreshBusy, RefreshLockError, refresh_lock

    summaries = []
    try:
        with refresh_lock(engine, wait):
            for key in keys:
                summaries.append(run_one(key))
                if not as_json:
                    typer.echo(_summary_line(summaries[-1]))
    except RefreshBusy as error:
        fail(str(error), code=3)
    except RefreshLockError as error:
        fail(str(error))
    if as_json:
        typer.echo(json.dumps([s.as_dict() for s in summaries], indent=1))
    if any(s.status == "failed" for s in summaries):
        raise typer.Exit(1)


def _http_session():
    from .collect.http import PoliteSession

    return PoliteSession(**config.http_settings())


def _summary_line(s) -> str:
    line = (f"{s.source}: {s.status} via {s.transport}; {s.requests} requests ({s.not_modified} not modified); "
            f"{s.new} new, {s.changed} changed, {s.withdrawn} withdrawn, {s.rejected} rejected figures; "
            f"{s.duration_s:.1f} s")
    return line + (f"\n  error: {s.error}" if s.error else "") + (f"\n  note: {s.note}" if s.note else "")


@app.command()
def reparse(
    names: Annotated[Optional[list[str]], typer.Argument(help="Source keys; default: every source.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    sources_dir: SourcesDir = None,
    db_url: DbOption = None,
) -> None:
    """Re-derive every figure from the archived pages of each source's last run, without the network.

    Use it after a parser improvement: figures that read the same keep their ids, the others are superseded.
    """
    from .refresh import reparse_source

    specs = _specs(sources_dir)
    engine = open_db(db_url)
    keys = _pick(specs, names) if names else list(specs)
    _run_sources(engine, keys, lambda key: reparse_source(engine, specs[key], progress=_progress),
                 as_json=as_json, wait=True)


@app.command("sources")
def sources_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    sources_dir: SourcesDir = None,
    db_url: DbOption = None,
) -> None:
    """List the sources with their last run, its status, the next due time and their figure counts."""
    from .refresh import source_status

    specs = _specs(sources_dir)
    engine = open_db(db_url)
    rows = source_status(engine, specs)
    if as_json:
        typer.echo(json.dumps(rows, indent=1, default=str))
        return
    columns = list(rows[0]) if rows else ["key"]
    typer.echo(render(columns, [tuple(r.values()) for r in rows], "table"))


@app.command()
def ingest(
    files: Annotated[list[Path], typer.Argument(help="llama-bench output: .json, .jsonl, .csv, .sql, or .md/.txt.")],
    source_url: Annotated[str, typer.Option("--source-url", help="Where the file is published (required).")],
    hardware: Annotated[Optional[str], typer.Option("--hardware", help="The machine the file was measured on.")] = None,
    fmt: Annotated[Optional[str], typer.Option("--format", help="Force the format: json, jsonl, csv, sql, md.")] = None,
    retrieved_at: Annotated[Optional[str], typer.Option("--retrieved-at", help="ISO date read (default today).")] = None,
    published_at: Annotated[Optional[str], typer.Option("--published-at", help="ISO date published.")] = None,
    db_url: DbOption = None,
) -> None:
    """Read llama-bench / llama-batched-bench output from files and store its figures (with the raw file archived).

    The same file ingested twice changes nothing. Figures lacking a condition are kept as rejections.
    """
    from .ingest import IngestError, ingest_files

    engine = open_db(db_url)
    try:
        with Session(engine) as session:
            counts = ingest_files(session, files, source_url=source_url, hardware=hardware, fmt=fmt,
                                  retrieved_at=retrieved_at, published_at=published_at)
            session.commit()
    except IngestError as error:
        fail(str(error))
    typer.echo(_stored_line(counts))




cli_publish.register(app)

_debug = False


@app.callback()
def _global_options(
    debug: Annotated[bool, typer.Option("--debug", help="On an unexpected error, print the traceback too "
                                        "(also TPSDB_DEBUG=1).")] = False,
) -> None:
    global _debug
    _debug = debug


def main(argv: list[str] | None = None) -> None:
    """The `tpsdb` command. Whatever goes wrong ends in ONE `error:` line naming the database or file and what to do
    (exit 2: bad input or a known failure, nothing changed; 3: busy; 1: an internal error). The traceback is printed
    only with --debug or TPSDB_DEBUG=1."""
    try:
        app(args=argv, prog_name="tpsdb")
    except SystemExit:
        raise
    except KeyboardInterrupt:
        typer.echo("error: interrupted; nothing of the running transaction was stored", err=True)
        sys.exit(130)
    except BaseException as error:  # noqa: BLE001 - the one place that turns any failure into an `error:` line
        if _debug or os.environ.get("TPSDB_DEBUG") == "1":
            traceback.print_exc()
        message, code = _explain(error)
        typer.echo(f"error: {message}", err=True)
        sys.exit(code)
    finally:
        db.close_all()
        # At exit the interpreter's collector would walk every object SQLAlchemy, pydantic and the command made
        # (~0.15 s per command, more after a bulk add); nothing left then needs collecting.
        gc.freeze()


def _explain(error: BaseException) -> tuple[str, int]:
    if isinstance(error, UnicodeDecodeError) and not _raised_in_sqlalchemy(error):
        known = None  # text from an input file: its reader names the file; here it is unexpected
    else:
        known = db.explain(error)
    if known is not None:
        return known
    if isinstance(error, OSError):
        return os_error_text(error, "?"), 2
    if isinstance(error, MemoryError):
        return "out of memory; nothing of the running transaction was stored", 1
    first = " ".join(str(error).split())[:300]
    return (f"internal error ({type(error).__name__}: {first}) on {db.name_of()}; nothing of the running "
            "transaction was stored. Run again with --debug for the traceback, and report it"), 1


def _raised_in_sqlalchemy(error: BaseException) -> bool:
    """A UnicodeDecodeError from reading rows means the database's bytes are damaged (SQLite keeps text unchecked)."""
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__", "").startswith("sqlalchemy"):
            return True
        tb = tb.tb_next
    return False


if __name__ == "__main__":  # pragma: no cover
    main()
