"""The command line. Thin: it parses arguments, calls the package, prints. Every command has --help."""

from __future__ import annotations

import csv
import gc
import io
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer
from sqlalchemy import func
from sqlmodel import Session, select

from . import config, db
from .models import Hardware, Measurement, Model, ModelFile, Rejection, Source, Status
from .query import QueryError, render, run_readonly
from .record import RecordFileError, Via, parse_records, validate
from .reference import ReferenceError, load_reference
from .store import Store, iter_measurement_records, iter_rejections

app = typer.Typer(
    help="tpsdb: LLM inference speed figures (tokens/s) kept with their six conditions and their provenance.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

DbOption = Annotated[
    Optional[str],
    typer.Option("--db", help="Database URL or SQLite path. Default: $TPSDB_DATABASE_URL, else data/tpsdb.sqlite."),
]


def fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def open_db(url: str | None):
    engine = db.make_engine(url)
    try:
        db.require_schema(engine)
    except db.DatabaseError as error:
        fail(str(error))
    return engine


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as error:
        fail(f"{path}: {error.strerror}")
    except UnicodeDecodeError:
        fail(f"{path}: not UTF-8 text")


def load_candidates(path: Path) -> list:
    try:
        return parse_records(read_text(path), str(path))
    except RecordFileError as error:
        fail(f"{error}; nothing was stored")


# ----------------------------------------------------------------------------------------------- database
@app.command()
def init(
    db_url: DbOption = None,
    seed: Annotated[bool, typer.Option(help="Load data/seed.sql into a new database.")] = True,
) -> None:
    """Create the database or upgrade it to the latest schema; a new one gets the curated seed (data/seed.sql).

    Then print a summary of what the database holds.
    """
    engine = db.make_engine(db_url)
    was_new = db.migrate(engine)
    if was_new and seed and config.SEED_SQL.exists():
        count = db.load_seed(engine)
        typer.echo(f"loaded {config.SEED_SQL.name}: {count} rows", err=True)
    typer.echo(summary_text(engine))


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
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(content, encoding="utf-8")
    tmp.replace(out)  # atomic: a reader never sees half a seed
    typer.echo(f"wrote {out} ({len(content.encode())} bytes)", err=True)


@app.command()
def reference(
    files: Annotated[list[Path], typer.Argument(help="TOML files with [[hardware]] / [[model_file]] entries.")],
    db_url: DbOption = None,
) -> None:
    """Load reference data (hardware bandwidths with their spec URL, model file sizes) from TOML files."""
    engine = open_db(db_url)
    with Session(engine) as session:
        try:
            for path in files:
                counts = load_reference(session, path)
                typer.echo(f"{path}: {counts['hardware']} hardware, {counts['model_file']} model files", err=True)
        except (ReferenceError, OSError) as error:
            session.rollback()
            fail(str(error))
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
    bandwidth_of = None
    if db_url or Path(config.DEFAULT_DB_PATH).exists():
        try:
            engine = db.make_engine(db_url)
            db.require_schema(engine)
            session = Session(engine)
            bandwidth_of = Store(session).bandwidth_of
        except db.DatabaseError:
            bandwidth_of = None
    rejected = total = 0
    for path in files:
        for index, candidate in enumerate(load_candidates(path)):
            total += 1
            outcome = validate(candidate, bandwidth_of=bandwidth_of)
            if not outcome.accepted:
                rejected += 1
                typer.echo(f"{path}[{index}]: " + "; ".join(outcome.reasons))
    typer.echo(f"{total - rejected} accepted, {rejected} rejected", err=True)
    raise typer.Exit(1 if rejected else 0)


@app.command()
def add(
    files: Annotated[list[Path], typer.Argument(help="JSON or JSONL files of records (format v1).")],
    db_url: DbOption = None,
) -> None:
    """Store records: accepted ones as measurements, rejected ones as rejections with their reasons.

    Adding the same file twice changes nothing. All files go in one transaction: on an error nothing is written.
    """
    engine = open_db(db_url)
    counts: Counter = Counter()
    with Session(engine) as session:
        store = Store(session)
        for path in files:
            candidates = load_candidates(path)
            gc.freeze()  # why: the cyclic GC rescans every loaded record on each collection, quadratic on big files
            for index, candidate in enumerate(candidates, 1):
                counts[store.put(candidate).outcome] += 1
                if index % 20000 == 0:
                    typer.echo(f"{path}: {index}/{len(candidates)}", err=True)
        store.flush()
        session.commit()
    typer.echo(
        f"{counts['accepted']} measurements added, {counts['accepted_unchanged']} already stored; "
        f"{counts['rejected']} rejections added, {counts['rejected_unchanged']} already stored"
    )


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
    if fmt not in ("jsonl", "csv"):
        fail(f"--format: {fmt!r} is not one of jsonl, csv")
    engine = open_db(db_url)
    items = iter_rejections(engine) if rejections else iter_measurement_records(engine, all_statuses)
    out = sys.stdout
    if fmt == "jsonl":
        for item in items:
            out.write(json.dumps(item, ensure_ascii=False, sort_keys=False) + "\n")
        return
    writer = None
    for item in items:
        if not rejections and item["source"].get("via") is None:  # same columns for every row
            item["source"]["via"] = dict.fromkeys(Via.model_fields)
        flat = _flatten(item)
        if writer is None:
            writer = csv.DictWriter(out, fieldnames=list(flat), lineterminator="\n")
            writer.writeheader()
        writer.writerow(flat)


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help='SQL to run, e.g. "select * from measurement_full limit 5".')],
    fmt: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    db_url: DbOption = None,
) -> None:
    """Run one SQL statement read-only (a write is refused; the database is not touched).

    Views: measurement_full (one row spells a figure out), rejection_full, measurement_history.
    """
    if fmt not in ("table", "csv", "json"):
        fail(f"--format: {fmt!r} is not one of table, csv, json")
    try:
        columns, rows = run_readonly(sql, db_url)
    except QueryError as error:
        fail(str(error))
    typer.echo(render(columns, rows, fmt))


def main() -> None:  # pragma: no cover
    app(prog_name="tpsdb")


if __name__ == "__main__":  # pragma: no cover
    main()
