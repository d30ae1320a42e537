"""The publishing commands (`tables`, `publish`, `ceiling`), registered on the main app by `register(app)`.

Thin like cli.py: each command parses its options, calls tpsdb.publish, prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer
from sqlmodel import Session

from .cli_common import DbOption, check_choice, fail, open_db
from .config import TABLES_DIR
from .output import os_error_text, write_atomic

# tpsdb.publish (Jinja2, matplotlib) is imported inside the commands: every other command starts faster.

TablesDirOption = Annotated[
    Path, typer.Option("--tables-dir", metavar="DIR", help="Folder of table definitions (*.toml).", show_default=True)
]


def _definitions(tables_dir: Path, names: list[str] | None):
    from .api import ApiError, table_definitions

    try:
        return table_definitions(names, tables_dir)
    except ApiError as error:
        fail(error.message, error.code)


def tables(
    names: Annotated[Optional[list[str]], typer.Argument(metavar="NAME", help="Tables to build (default: all), "
                                                         "e.g. machines ceiling.")] = None,
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="md, html, csv or json.")] = "md",
    out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="Write NAME.<format> files in this folder "
                                                "instead of printing.")] = None,
    tables_dir: TablesDirOption = TABLES_DIR,
    db_url: DbOption = None,
) -> None:
    """Build the published tables from the database (definitions in tables/*.toml).

    Each table states what it holds fixed (model, quantization, software and version, lengths, concurrency, nature);
    each measured cell has a footnote with its source URL and retrieval date; columns marked calc. are computed.
    A table with no validated measurement still prints, with a note saying so.
    """
    from .publish.render import FORMATS, render, render_many

    check_choice("--format", fmt, FORMATS)
    definitions = _definitions(tables_dir, names)
    engine = open_db(db_url)
    from .api import build_tables

    built = build_tables(engine, definitions=definitions)
    if out is None:
        typer.echo(render(built[0], fmt) if len(built) == 1 else render_many(built, fmt), nl=False)
        return
    if out.exists() and not out.is_dir():
        fail(f"{out}: not a folder; --out names the folder to write NAME.{fmt} files into")
    for table in built:
        path = out / f"{table.definition.name}.{fmt}"
        try:
            out.mkdir(parents=True, exist_ok=True)
            write_atomic(path, render(table, fmt))  # never through a planted symlink, never half a file
        except OSError as error:
            fail(os_error_text(error, path))
        typer.echo(f"wrote {path}" + (" (no validated measurement yet)" if table.empty else ""), err=True)


def publish(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Folder of the static site: a new or empty one, or one tpsdb "
                                      "published into before (it replaces only its own files there).")] = Path("site"),
    force: Annotated[bool, typer.Option("--force", help="Publish into a folder holding other files, overwriting "
                                        "those named like the site's.")] = False,
    figures_per_page: Annotated[int | None, typer.Option(
        "--figures-per-page", metavar="N", min=1,
        help="Figures listed on one page of a machine or model: its summary comes first, the list goes on over "
             "numbered pages (default 500).")] = None,
    tables_dir: TablesDirOption = TABLES_DIR,
    db_url: DbOption = None,
) -> None:
    """Write the static site: an index, one page per table with its chart, and each table as CSV, JSON and Markdown.

    Charts (inline SVG): measured tokens/s against memory bandwidth with the computed ceiling line, speed-up by
    format, aggregate vs per-user by number of users. Pages need no server: open OUT/index.html.
    """
    definitions = _definitions(tables_dir, None)
    engine = open_db(db_url)
    from .publish.site import SiteFolderError, publish_site

    from .progress import Progress

    try:
        with Progress("publish") as meter:  # on a terminal only: files written of the total
            paging = {"figures_per_page": figures_per_page} if figures_per_page else {}
            written = publish_site(engine, definitions, out, force=force, progress=meter.update, **paging)
    except SiteFolderError as error:
        fail(str(error))
    except OSError as error:
        fail(os_error_text(error, out))
    typer.echo(f"wrote {len(written)} files in {out} (open {out / 'index.html'})", err=True)


def ceiling(
    hardware: Annotated[str, typer.Option("--hardware", metavar="NAME", help='Hardware name, e.g. "NVIDIA DGX '
                                          'Spark" (any case).')],
    model: Annotated[str, typer.Option("--model", metavar="NAME", help='Model name, e.g. "Llama 2 7B" (any case).')],
    quantization: Annotated[Optional[str], typer.Option("--quantization", metavar="FORMAT", help="Quantization "
                                                        "format, e.g. Q4_0, MXFP4 (any case); required.")] = None,
    users: Annotated[int, typer.Option("--users", metavar="N", help="Concurrent users (aggregate ceiling = users × "
                                       "one-user).")] = 1,
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="text or json.")] = "text",
    db_url: DbOption = None,
    quant: Annotated[Optional[str], typer.Option("--quant", hidden=True, help="Old name of --quantization.")] = None,
) -> None:
    """Print the computed maximum generation speed (memory bandwidth ÷ bytes read per token), labelled as a
    calculation, with its inputs and their sources, and whether the model file fits in the machine's memory.

    A mixture-of-experts model reads its active share of the file per token. Exit status 2, naming the input, when
    the bandwidth or the file size is unknown.
    """
    check_choice("--format", fmt, ("text", "json"))
    quantization = quantization or quant
    if not quantization:
        fail("ceiling: --quantization FORMAT is required (e.g. --quantization Q4_0)")
    engine = open_db(db_url)
    from .publish import ceiling as ceiling_logic

    with Session(engine) as session:
        try:
            results = ceiling_logic.compute(session, hardware, model, quantization, users)
        except ceiling_logic.CeilingError as error:
            fail(str(error))
    if fmt == "json":
        typer.echo(json.dumps(ceiling_logic.as_json(results), ensure_ascii=False, indent=1))
    else:
        typer.echo(ceiling_logic.format_text(results))


def compare(
    hardware: Annotated[str, typer.Option("--hardware", metavar="NAME", help='Hardware name, e.g. "NVIDIA DGX '
                                          'Spark" (any case).')],
    model: Annotated[str, typer.Option("--model", metavar="NAME", help='Model name, e.g. "Llama 2 7B" (any case).')],
    quantization: Annotated[Optional[str], typer.Option("--quantization", metavar="FORMAT", help="Only this format "
                                                        "(default: every format measured).")] = None,
    fmt: Annotated[str, typer.Option("--format", metavar="FORMAT", help="text or json.")] = "text",
    db_url: DbOption = None,
) -> None:
    """What a model does on a machine: every accepted measured figure with its conditions and source, ranked
    (generation first, one user first, fastest first), and the computed maximum of each file, labelled calc.

    Exit status: 0 figures found, 1 nothing measured for that model on that machine (the machines that have figures
    for it are listed), 2 an unknown name (with the closest names).
    """
    check_choice("--format", fmt, ("text", "json"))
    engine = open_db(db_url)
    from .publish import ceiling as ceiling_logic
    from .publish import compare as compare_logic

    with Session(engine) as session:
        try:
            result = compare_logic.compare(session, hardware, model, quantization)
        except ceiling_logic.CeilingError as error:
            fail(str(error))
    if fmt == "json":
        typer.echo(json.dumps(compare_logic.as_json(result), ensure_ascii=False, indent=1))
    else:
        typer.echo(compare_logic.format_text(result))
    raise typer.Exit(0 if result.figures else 1)


def register(app: typer.Typer) -> None:
    """Add `tables`, `publish`, `ceiling` and `compare` to the main command line."""
    app.command("tables")(tables)
    app.command("publish")(publish)
    app.command("ceiling")(ceiling)
    app.command("compare")(compare)
