"""What every command module of the CLI shares: the --db option, error exits, opening a database at head."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import db

DbOption = Annotated[
    Optional[str],
    typer.Option("--db", help="Database URL or SQLite path. Default: $TPSDB_DATABASE_URL, else data/tpsdb.sqlite."),
]


def fail(message: str, code: int = 2) -> None:
    """Print `error: MESSAGE` on standard error and exit (2: bad input, 3: database busy)."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def check_choice(option: str, value: str, choices) -> None:
    """Refuse an option value outside its choices, listing them."""
    if value not in choices:
        fail(f"{option}: {value!r} is not one of {', '.join(choices)}")


def open_db(url: str | None):
    """An engine on a database whose schema is at head, or a clear exit saying to run `tpsdb init`."""
    engine = db.make_engine(url)
    try:
        db.require_schema(engine)
    except db.DatabaseError as error:
        fail(str(error))
    return engine
