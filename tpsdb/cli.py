"""The command line. Thin: it parses arguments, calls the package, prints. Every command has --help."""

from __future__ import annotations

import gc
import json
import os
import sys
import traceback
from collections import Counter
from pathlib import Path
from typing import Annotated, Iterator, Optional

import typer

from . import api, cli_publish, config, db
# The refresh and ingest modules (requests, lxml, the extractors) are imported inside their commands, so that the
# other commands start without them.
from .bulk import Read
from .cli_common import EXIT_CODES, DbOption, FilesArgument, TableOrJson, check_choice, fail, open_db
from .export import FORMATS as EXPORT_FORMATS, ExportError, export as export_records
from .query import DEFAULT_LIMIT, DEFAULT_TIMEOUT, Limited, QueryError, render, run_readonly, write
from .record import RecordFileError
from .reference import reference_facts, stored_facts
from .output import os_error_text, write_atomic
from .progress import Progress
from .summary import summary_text

app = typer.Typer(
    help="tpsdb: LLM inference speed figures (tokens/s) kept with their six conditions and their provenance.\n\n"
         + EXIT_CODES,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help texts are plain: rich markup would eat `[[hardware]]`
    context_settings={"help_option_names": ["-h", "--help"]},  # every command, as most tools take it
)


def read_file(path: Path, bandwidths: dict[str, float], models: dict | None = None,
              strict: bool = False) -> Iterator[Read]:
    """The records of one file as `validate` and `add` read them (tpsdb.api.read_file), warning on standard error
    of a file without records."""
    return api.read_file(path, bandwidths, models, strict, on_warning=lambda text: typer.echo(text, err=True))


def _reasons_line(where: str, reasons: list[str]) -> str:
    """How `validate`, `add` and `ingest` print a rejected record: `FILE:LINE: reason; reason`."""
    return f"{where}: " + "; ".join(reasons)


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
        count = api.create_database(db_url, seed)
    except api.ApiError as error:
        fail(error.message, error.code)
    if count is not None:
        typer.echo(f"loaded {config.SEED_SQL.name}: {count} rows", err=True)
    typer.echo(summary_text(db.make_engine(db_url)))


@app.command()
def summary(db_url: DbOption = None) -> None:
    """Print what the database holds, each number saying what it counts: measurements by status, rejections and
    their commonest reasons, sources (all of them, and those with a file in sources/), hardware, models."""
    typer.echo(summary_text(open_db(db_url)))


@app.command("export-seed")
def export_seed(
    db_url: DbOption = None,
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="Where to write the seed.")] = config.SEED_SQL,
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
    files: Annotated[list[Path], typer.Argument(metavar="FILE.toml", help="TOML files of reference entries "
                                                "(format above).")],
    replace: Annotated[bool, typer.Option("--replace", help="Let a file's values replace different stored ones "
                                          "(default: a difference is an error).")] = False,
    db_url: DbOption = None,
) -> None:
    """Load reference data (hardware bandwidths with their spec URL, model file sizes) from TOML files.

    A file holds [[hardware]] and [[model_file]] tables (examples: data/reference/*.toml):

    \b
      [[hardware]]
      name = "NVIDIA DGX Spark"             # required
      memory_bandwidth_gbs = 273            # GB/s
      bandwidth_source_url = "https://..."  # the page that states it
      bandwidth_quote = "..."               # its words
      memory_gb = 128                       # optional, as are vendor, gpu_cores, notes

    \b
      [[model_file]]
      model = "Llama 2 7B"                  # required
      quantization = "Q4_0"                 # required, a named format
      file_size_gb = 3.79                   # required, decimal GB (10^9 bytes)
      size_source_url = "https://..."       # required, where the size is stated
      params_b = 6.74                       # optional, billions
      active_params_b = 6.74                # optional, billions read per token (mixture of experts)
      quote = "..."                         # optional, as are quote_from, notes

    Each entry is checked like a record (unknown keys, types, finite positive numbers, http(s) URLs, parameters in
    billions, plausible sizes). A value fills an empty field; one that differs from a stored value is an error
    naming both, unless --replace. Any error stores nothing. Exit status: 0 stored, 2 refused, 3 database busy.
    """
    engine = open_db(db_url)

    def loaded(path: Path, counts: dict, replaced: list[str]) -> None:
        typer.echo(f"{path}: {counts['hardware']} hardware, {counts['model_file']} model files, "
                   f"{counts['model']} models", err=True)
        for change in replaced:
            typer.echo(f"{path}: replaced {change}", err=True)

    try:
        api.load_reference(engine, files, replace=replace, on_file=loaded)
    except api.ApiError as error:
        fail(error.message, error.code)


# ---------------------------------------------------------------------------------------------- records
@app.command("validate")
def validate_cmd(
    files: FilesArgument,
    db_url: Annotated[
        Optional[str], typer.Option("--db", metavar="URL", help="Database whose hardware bandwidths feed the "
                                    "ceiling check. Default: $TPSDB_DATABASE_URL, else data/tpsdb.sqlite; "
                                    "none there: the reference data `tpsdb init` loads (data/reference), so a "
                                    "record gets the same answer with or without a database.")
    ] = None,
) -> None:
    """Check records without storing them. Prints every rejected record as FILE:LINE: reasons (JSONL; FILE[N] for
    the Nth record of a JSON list), counting from 1, and goes on past a line that is not JSON (reported as
    `error: FILE:LINE: not JSON (...)`) to the end of every file.

    Exit status: 0 every record accepted, 1 some rejected, 2 a file or line could not be read.
    """
    bandwidths, models = stored_facts(db_url) or reference_facts()
    rejected = total = unreadable = 0
    for path in files:
        try:
            for read in read_file(path, bandwidths, models):
                if read.prepared is None:
                    unreadable += 1
                    typer.echo(f"error: {read.where}: {read.unreadable}", err=True)
                    continue
                total += 1
                if read.prepared.reasons:
                    rejected += 1
                    typer.echo(_reasons_line(read.where, read.prepared.reasons))
        except RecordFileError as error:
            unreadable += 1
            typer.echo(f"error: {error}", err=True)
        except BrokenPipeError:  # the reader of our output stopped (`| head`): not the input file's fault
            raise
        except OSError as error:
            unreadable += 1
            typer.echo(f"error: {os_error_text(error, path)}", err=True)
    typer.echo(f"{total - rejected} accepted, {rejected} rejected"
               + (f"; {unreadable} unreadable (lines or files)" if unreadable else ""), err=True)
    raise typer.Exit(2 if unreadable else 1 if rejected else 0)


TimeoutOption = Annotated[float, typer.Option("--timeout", metavar="SECONDS",
                                              help="Seconds to wait while another process writes.")]


@app.command()
def add(
    files: FilesArgument,
    db_url: DbOption = None,
    timeout: TimeoutOption = 60,
) -> None:
    """Store records: accepted ones as measurements, rejected ones as rejections with their reasons (printed as
    validate prints them: FILE:LINE: reasons).

    Adding the same file twice changes nothing. All files go in one transaction: a line that is not a record, or
    any other error, stores nothing. A record whose model or hardware facts (params_b, active_params_b,
    memory_gb, gpu_cores) differ from those already stored is kept as a rejection naming both values.

    A record whose figure you withdrew (`tpsdb withdraw`) is not re-added: the figure stays withdrawn and the record
    is named with its withdrawal and counted as "withdrawn earlier, not re-added".

    Exit status: 0 every record accepted (stored, already stored, or withdrawn earlier and kept so: your own
    decision, not a fault of the record), 1 some rejected, 2 unreadable input (nothing stored), 3 another add held
    the database for longer than --timeout.
    """
    engine = open_db(db_url)
    with Progress("add") as meter:  # on a terminal only
        try:
            counts = api.add(engine, files, timeout=timeout, progress=meter.say,
                             on_rejected=lambda where, reasons: typer.echo(_reasons_line(where, reasons)),
                             on_warning=lambda text: typer.echo(text, err=True),
                             on_withdrawn=lambda where, which: typer.echo(f"{where}: {which}; not re-added"))
        except api.ApiError as error:
            fail(error.message, error.code)
    typer.echo(_stored_line(counts))
    raise typer.Exit(_stored_code(counts))


@app.command()
def withdraw(
    measurement_id: Annotated[int, typer.Argument(metavar="ID", help="The figure's id (measurement_id; `tpsdb "
                                                  "compare` and the site's pages show it).")],
    why: Annotated[str, typer.Option("--why", metavar="TEXT", help='Why it is withdrawn, e.g. "wrong machine" '
                                     "(required).")],
    db_url: DbOption = None,
    timeout: TimeoutOption = 60,
) -> None:
    """Withdraw a figure you added (add, ingest) that is wrong. Nothing is deleted: the figure keeps its row with
    status withdrawn (measurement_history shows it), and the withdrawal table keeps why and when. Tables, the site
    and compare show active figures only.

    A figure of a source that `tpsdb refresh` reads (a file in sources/) is refused: the next refresh would read it
    again; correct the source instead. The withdrawal holds: adding or ingesting the same record again leaves the
    figure withdrawn (there is no command to undo it). Exit status: 0 withdrawn, 2 refused (nothing changed).
    """
    try:
        why = api.withdrawal_reason(why)  # before the database is opened
    except api.ApiError as error:
        fail(error.message, error.code)
    engine = open_db(db_url)
    try:
        done = api.withdraw(engine, measurement_id, why, timeout=timeout)
    except api.ApiError as error:
        fail(error.message, error.code)
    typer.echo(f"withdrew figure {measurement_id} ({done.tokens_per_second:g} tokens/s, from "
               f"{done.source_url}): {done.why}; kept in the history (measurement_history, status withdrawn)")


def _stored_line(counts: Counter) -> str:
    """What `add` and `ingest` say they stored (counts of Store.put outcomes)."""
    # store.WITHDRAWN_EARLIER; named only when there is one, so the line scripts read stays as it was
    withdrawn = counts["accepted_withdrawn"]
    return (f"{counts['accepted']} measurements added, {counts['accepted_unchanged']} already stored"
            + (f", {withdrawn} withdrawn earlier, not re-added" if withdrawn else "")
            + f"; {counts['rejected']} rejections added, {counts['rejected_unchanged']} already stored")


def _stored_code(counts: Counter) -> int:
    """`add` and `ingest`: 1 when a record was rejected (a rejection already stored counts too), else 0."""
    return 1 if counts["rejected"] or counts["rejected_unchanged"] else 0


@app.command()
def export(
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="jsonl (one record a line), json (one "
                                     "array) or csv.")] = "jsonl",
    rejections: Annotated[bool, typer.Option("--rejections", help="Export the rejected candidates instead: `add` "
                                             "of the output re-creates the same rejections; csv adds a reasons "
                                             "column.")] = False,
    all_statuses: Annotated[bool, typer.Option("--all", help="Include superseded and withdrawn figures "
                                               "(default: active only).")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", metavar="FILE", help="Write this file (whole, or not at "
                                                "all) instead of standard output.")] = None,
    db_url: DbOption = None,
) -> None:
    """Write the measurements as records (format v1) to standard output (or --out FILE), in id order.

    `export | add` into an empty database then `export` again gives the same bytes.
    """
    import io

    check_choice("--format", fmt, EXPORT_FORMATS)
    engine = open_db(db_url)
    stream = sys.stdout if out is None else io.StringIO()
    try:
        count = export_records(engine, stream, fmt, rejections=rejections, include_inactive=all_statuses)
    except ExportError as error:
        fail(str(error) + ("" if out is None else f"; {out} was not written"))
    if out is not None:
        try:
            write_atomic(out, stream.getvalue())  # a reader never sees half a file
        except OSError as error:
            fail(os_error_text(error, out))
        typer.echo(f"wrote {count} {'rejections' if rejections else 'figures'} in {out}", err=True)


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help='SQL to run, e.g. "select * from measurement_full limit 5".')],
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="table, csv, json or md (a Markdown "
                                     "table). JSON columns (reasons, candidate_json…) are JSON values in json.")
                   ] = "table",
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS",
                                           help="Stop the statement after this many seconds.")] = DEFAULT_TIMEOUT,
    limit: Annotated[int, typer.Option("--limit", metavar="N", help="Show at most N rows (0: all); says so when "
                                       "cut.")] = DEFAULT_LIMIT,
    max_width: Annotated[int, typer.Option("--max-width", metavar="N", help="In a table, cut cells longer than N "
                                           "characters (with …). Default 0: every cell whole.")] = 0,
    out: Annotated[Optional[Path], typer.Option("--out", metavar="FILE", help="Write the output to FILE (whole, "
                                                "or nothing if the query fails) instead of standard output.")
                   ] = None,
    db_url: DbOption = None,
) -> None:
    """Run one SQL statement read-only (anything but reading is refused; the database is not touched).

    Views: measurement_full (one row spells a figure out), rejection_full, measurement_history, source_conformance.
    On PostgreSQL, a superuser's (or a server-file role's) session runs the statement as pg_read_all_data.
    """
    from .output import atomic_file
    from .query import FORMATS, timeout_message

    check_choice("--format", fmt, FORMATS)
    if limit < 0:
        fail(f"query: --limit must be 0 (every row) or more, not {limit}")
    if max_width < 0 or max_width == 1:
        fail(f"query: --max-width must be 0 (cells whole) or 2 or more, not {max_width}")
    writing: list[str] = []  # the temporary file of --out while it is written

    def hard_stop() -> None:
        """A SQLite statement that ignored its interrupt: end the process (from the watchdog thread)."""
        for path in writing:
            Path(path).unlink(missing_ok=True)
        os.write(2, f"error: {timeout_message(timeout)}\n".encode())
        os._exit(2)

    try:
        with run_readonly(sql, db_url, timeout, on_overrun=hard_stop) as (columns, rows):
            shown = Limited(rows, limit)
            if out is None:
                write(columns, shown, fmt, sys.stdout, max_width)
            else:
                with atomic_file(out) as handle:
                    writing.append(handle.temporary_path)  # type: ignore[attr-defined]
                    write(columns, shown, fmt, handle, max_width)
                writing.clear()
    except QueryError as error:
        sys.stdout.flush()
        fail(str(error))
    except OSError as error:
        if isinstance(error, BrokenPipeError) and out is None:
            # the reader (`| head`) has what it wanted; Python's documented way to stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return
        fail(f"query: {os_error_text(error, out or 'standard output')}")
    if shown.cut:
        typer.echo(f"query: showing the first {limit} rows; more matched (--limit N, or --limit 0 for all)", err=True)


# ---------------------------------------------------------------------------------------------- sources
def _specs(sources_dir: Path | None) -> dict:
    try:
        return api.source_specs(sources_dir)
    except api.ApiError as error:
        fail(error.message, error.code)


def _pick(specs: dict, names: list[str]) -> list[str]:
    try:
        return api.pick_sources(specs, names)
    except api.ApiError as error:
        fail(error.message, error.code)


SourcesDir = Annotated[Optional[Path], typer.Option("--sources-dir", metavar="DIR",
                                                    help="Folder of source files. Default: sources/.")]


@app.command()
def refresh(
    names: Annotated[Optional[list[str]], typer.Argument(help="Source keys (file names in sources/). Forces them.")] = None,
    due: Annotated[bool, typer.Option("--due", help="Only the sources whose refresh interval has passed.")] = False,
    fmt: TableOrJson = "table",
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
    check_choice("--format", fmt, ("table", "json"))
    specs = _specs(sources_dir)
    if not names and not due:
        fail("name the sources to refresh, or pass --due (see `tpsdb sources`)")
    engine = open_db(db_url)
    keys = _pick(specs, names or []) if names else api.due_sources(engine, specs)
    meter = Progress("refresh")
    _run_sources(lambda on_summary: api.refresh_sources(engine, keys, specs=specs, wait=wait, progress=meter.say,
                                                on_summary=on_summary), as_json=fmt == "json", meter=meter)
    if not keys and fmt != "json":
        typer.echo("no source is due")


@app.command()
def load(
    names: Annotated[Optional[list[str]], typer.Argument(help="Source keys whose [seed] copies to load.")] = None,
    seeded: Annotated[bool, typer.Option("--seeded", help="Every source file that has a [seed] table.")] = False,
    shared: Annotated[Path, typer.Option("--shared", metavar="DIR", help="Folder the copies' paths start from.")]
    = Path("../shared"),
    fmt: TableOrJson = "table",
    sources_dir: SourcesDir = None,
    db_url: DbOption = None,
) -> None:
    """Store sources from their [seed] copies (files copied from where they live), offline, through the same kind
    and engine as a refresh: one transaction per source, each copy cited at its commit. Exit 1 if one failed."""
    check_choice("--format", fmt, ("table", "json"))
    specs = _specs(sources_dir)
    if not names and not seeded:
        fail("name the sources to load, or pass --seeded (every source file with a [seed] table)")
    keys = _pick(specs, names) if names else api.seeded_sources(specs)
    engine = open_db(db_url)
    meter = Progress("load")
    _run_sources(lambda on_summary: api.load_sources(engine, keys, shared=shared, specs=specs, progress=meter.say,
                                                     on_summary=on_summary), as_json=fmt == "json", meter=meter)


def _run_sources(run, *, as_json: bool, meter: Progress) -> None:
    """Run the sources through the API (run(on_summary)); print each summary as its source ends; exit 1 if one
    failed."""

    def ended(summary) -> None:
        meter.close()  # the progress line gives way to the source's summary
        if not as_json:
            typer.echo(_summary_line(summary))

    try:
        summaries = run(ended)
    except api.ApiError as error:
        fail(error.message, error.code)
    if as_json:
        typer.echo(json.dumps([s.as_dict() for s in summaries], indent=1))
    if any(s.status == "failed" for s in summaries):
        raise typer.Exit(1)


def _summary_line(s) -> str:
    line = (f"{s.source}: {s.status} via {s.transport}; {s.requests} requests ({s.not_modified} not modified); "
            f"{s.new} new, {s.changed} changed, {s.withdrawn} withdrawn, {s.rejected} rejected figures; "
            f"{s.duration_s:.1f} s")
    return line + (f"\n  error: {s.error}" if s.error else "") + (f"\n  note: {s.note}" if s.note else "")


@app.command()
def reparse(
    names: Annotated[Optional[list[str]], typer.Argument(help="Source keys; default: every source.")] = None,
    fmt: TableOrJson = "table",
    sources_dir: SourcesDir = None,
    db_url: DbOption = None,
) -> None:
    """Re-derive every figure from the archived pages of each source's last run, without the network.

    Use it after a parser improvement: figures that read the same keep their ids, the others are superseded.
    """
    check_choice("--format", fmt, ("table", "json"))
    specs = _specs(sources_dir)
    engine = open_db(db_url)
    keys = _pick(specs, names) if names else list(specs)
    meter = Progress("reparse")
    _run_sources(lambda on_summary: api.reparse(engine, keys, specs=specs, progress=meter.say,
                                                on_summary=on_summary), as_json=fmt == "json", meter=meter)


@app.command("sources")
def sources_cmd(
    fmt: TableOrJson = "table",
    sources_dir: SourcesDir = None,
    db_url: DbOption = None,
) -> None:
    """List the sources with their last run, its status, the next due time and their figure counts."""
    from .refresh import source_status

    check_choice("--format", fmt, ("table", "json"))
    specs = _specs(sources_dir)
    engine = open_db(db_url)
    rows = source_status(engine, specs)
    if fmt == "json":
        typer.echo(json.dumps(rows, indent=1, default=str))
        return
    columns = list(rows[0]) if rows else ["key"]
    typer.echo(render(columns, [tuple(r.values()) for r in rows], "table"))


@app.command()
def ingest(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="llama-bench output: .json, .jsonl, .csv, "
                                                ".sql (llama-bench -o json|jsonl|csv|sql), or its .md/.txt table.")],
    source_url: Annotated[str, typer.Option("--source-url", metavar="URL",
                                            help="Where the file is published (required).")],
    hardware: Annotated[Optional[str], typer.Option("--hardware", metavar="NAME", help="The machine the file was "
                                                    "measured on (default: the device the file names).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", metavar="NAME", help='The model measured, e.g. "Llama 2 '
                                                 '7B" (default: llama-bench\'s type label, e.g. "llama 7B").')] = None,
    fmt: Annotated[Optional[str], typer.Option("--input-format", metavar="FORMAT",
                                               help="Read the files as json, jsonl, csv, sql or md (default: from "
                                               "the file name, else the content).")] = None,
    retrieved_at: Annotated[Optional[str], typer.Option("--retrieved-at", metavar="DATE",
                                                        help="ISO date read (default: today).")] = None,
    published_at: Annotated[Optional[str], typer.Option("--published-at", metavar="DATE",
                                                        help="ISO date published (default: unknown).")] = None,
    timeout: TimeoutOption = 60,
    db_url: DbOption = None,
) -> None:
    """Read llama-bench / llama-batched-bench output from files and store its figures (with the raw file archived).

    The same file ingested twice changes nothing. Figures lacking a condition are kept as rejections, each printed
    with its reasons as `add` prints them. All files go in one transaction.

    Exit status: as `add`: 0 every figure accepted, 1 some rejected, 2 an error (nothing stored), 3 busy.
    """
    engine = open_db(db_url)
    reasons_seen: set[str] = set()

    def rejected(where: str, reasons: list[str]) -> None:
        reasons_seen.update(reasons)
        typer.echo(_reasons_line(where, reasons))

    with Progress("ingest") as meter:
        try:
            counts = api.ingest_files(engine, files, source_url=source_url, hardware=hardware, fmt=fmt,
                                retrieved_at=retrieved_at, published_at=published_at, model=model, timeout=timeout,
                                on_rejected=rejected, progress=lambda text: meter.say(text, final=True),
                                on_note=lambda where, note: typer.echo(f"{where}: note: {note}", err=True))
        except api.ApiError as error:
            fail(error.message, error.code)
    for reason, hint in _INGEST_HINTS.items():
        if reason in reasons_seen:
            typer.echo(f"hint: {hint}", err=True)
    typer.echo(_stored_line(counts))
    raise typer.Exit(_stored_code(counts))


_INGEST_HINTS = {
    "hardware.name: missing": "the file does not name the machine it ran on: pass --hardware NAME",
    "model.name: missing": "the file does not name the model: pass --model NAME",
}


@app.command("import")
def import_cmd(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help="The peer dataset's format: tokatlas.")],
    file: Annotated[Path, typer.Argument(help="The peer's data file (tokatlas: ../shared/peers/tokatlas/*.json).")],
    sources_dir: SourcesDir = None,
    db_url: DbOption = None,
) -> None:
    """Store the figures another dataset relayed, naming it as `source.via`; figures lacking a condition are kept
    as rejections. A post already read directly keeps its direct figures (the relayed ones are superseded).
    """
    from .peers import FORMATS

    check_choice("FORMAT", fmt, FORMATS)
    specs = _specs(sources_dir)
    engine = open_db(db_url)
    with Progress("import") as meter:
        try:
            report = api.import_peer(engine, fmt, file, specs=specs, progress=lambda text: meter.say(text, final=True))
        except api.ApiError as error:
            fail(error.message, error.code)
    typer.echo(f"{file}: {report.records} records, {report.figures} figures "
               f"({report.protocol_applied} records read with their thread's protocol); "
               f"{report.superseded} relayed figures superseded by direct readings")
    if report.duplicate_ids:
        shown = ", ".join(report.duplicate_ids[:10]) + (", …" if len(report.duplicate_ids) > 10 else "")
        typer.echo(f"{len(report.duplicate_ids)} ids occur more than once, every record kept (slots ~2, ~3…): "
                   + shown)
    typer.echo(_stored_line(report.outcomes))
    # A peer's figures that lack a condition are its nature, not an error: only new rejections exit 1, and an
    # import of nothing new exits 0 (first-use review, L4).
    raise typer.Exit(1 if report.outcomes["rejected"] else 0)


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", metavar="ADDRESS", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="PORT", help="Port to listen on.")] = 8001,
    db_url: DbOption = None,
) -> None:
    """Browse the database in Datasette, read-only: the views described column by column, facets, canned queries.

    A SQLite database is served as it is (each refresh shows up); a PostgreSQL one is first copied into a temporary
    SQLite file, removed when the server stops. Stop with Ctrl-C. A port already taken is exit code 2.
    """
    from .serve import ServeError, bind, serve as serve_sqlite, serve_snapshot

    engine = open_db(db_url)  # an error line for a missing file or a schema behind head
    url = engine.url.render_as_string(hide_password=False)
    path = db.sqlite_path(url)
    try:
        listening = bind(host, port)
    except ServeError as error:
        fail(str(error))
    typer.echo(f"serving {db.display_name(url)} read-only on http://{host}:{port}/ (Ctrl-C stops)",
               err=True)
    try:
        if path:
            engine.dispose()
            serve_sqlite(Path(path), listening)
        else:
            serve_snapshot(engine, listening)
    except ServeError as error:
        fail(str(error))
    finally:
        listening.close()


cli_publish.register(app)

_debug = False
INTERNAL_ERROR = 4  # a bug: its own exit code, never mistaken for rejected records (1)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"tpsdb {version('tpsdb')}")
        raise typer.Exit()


@app.callback()
def _global_options(
    ctx: typer.Context,
    db_url: Annotated[Optional[str], typer.Option(
        "--db", metavar="URL", help="Database URL or SQLite path for the command (a command's own --db wins). "
        "Default: $TPSDB_DATABASE_URL, else data/tpsdb.sqlite.")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="On an unexpected error, print the traceback too "
                                        "(also TPSDB_DEBUG=1).")] = False,
    version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True,
                                          help="Print tpsdb's version and exit.")] = False,
) -> None:
    global _debug
    _debug = debug
    if db_url is not None:
        # Click's default map: the value becomes the default of every command's --db parameter (db_url), which the
        # command's own --db still overrides.
        ctx.default_map = {name: {"db_url": db_url} for name in _commands_with_db(ctx)}


def _commands_with_db(ctx: typer.Context) -> list[str]:
    group = ctx.command
    return [name for name, command in group.commands.items()  # type: ignore[attr-defined]
            if any(param.name == "db_url" for param in command.params)]


def main(argv: list[str] | None = None) -> None:
    """The `tpsdb` command. Whatever goes wrong ends in ONE `error:` line naming the database or file and what to do
    (exit codes: cli_common.EXIT_CODES; 4: an internal error, a bug). The traceback is printed only with --debug or
    TPSDB_DEBUG=1."""
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
        return "out of memory; nothing of the running transaction was stored", 2
    first = " ".join(str(error).split())[:300]
    return (f"internal error ({type(error).__name__}: {first}) on {db.name_of()}; nothing of the running "
            "transaction was stored. Run again with --debug for the traceback, and report it"), INTERNAL_ERROR


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
