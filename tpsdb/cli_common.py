"""What every command module of the CLI shares: the --db option, error exits, opening a database at head."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer

DbOption = Annotated[
    Optional[str],
    typer.Option("--db", metavar="URL", help="Database URL or SQLite path. Default: the global --db (tpsdb --db URL "
                 "COMMAND), else $TPSDB_DATABASE_URL, else data/tpsdb.sqlite."),
]

FilesArgument = Annotated[
    list[Path], typer.Argument(metavar="FILE", help="JSON or JSONL files of records (format v1); - reads "
                               "standard input.")
]

TableOrJson = Annotated[str, typer.Option("--format", metavar="FORMAT", help="table (for people) or json.")]

# The one table of exit codes, shown by `tpsdb --help` and repeated in the README.
EXIT_CODES = """Exit codes (every command):

\b
  0  done; every record accepted
  1  some records rejected (add, ingest, validate; import: new ones), a source failed (refresh, reparse),
     or nothing measured (compare)
  2  error, nothing stored: bad input, a bad option, a file or database that cannot be used
  3  busy: another process holds the database's write or refresh lock
  4  internal error (a bug): rerun with --debug and report it"""


def fail(message: str, code: int = 2) -> NoReturn:
    """Print `error: MESSAGE` on standard error and exit (2: bad input, 3: database busy)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def check_choice(option: str, value: str, choices) -> None:
    """Refuse an option value outside its choices, listing them."""
    if value not in choices:
        fail(f"{option}: {value!r} is not one of {', '.join(choices)}")


def open_db(url: str | None):
    """An engine on an existing database whose schema is at head (tpsdb.api.open_database), or one `error:` line
    saying what to do."""
    from .api import ApiError, open_database

    try:
        return open_database(url)
    except ApiError as error:
        fail(error.message, error.code)
