"""A Datasette plugin that `tpsdb serve` registers: bounds on what one visitor's SELECT may produce.

Datasette bounds a query's time and rows, but not the size of one value: `select zeroblob(900000000)` made the
server take 24 GB and be killed (review, 2026-12-01). SQLite's length limit refuses any text or blob longer than
MAX_VALUE_BYTES ("string or blob too big"). Nor does it bound one answer: 2,000 rows of 200 KB values made one GET
of 123 characters return 400 MB and grow the server by 2.3 GB (review 2026-12-01, probe 2, D10). So the rows a
statement returns are counted as SQLite hands them over, and past MAX_ANSWER_BYTES the statement fails with a
sentence saying so, before Datasette holds (and renders) more.
"""

from __future__ import annotations

import sqlite3
import weakref

from datasette import hookimpl

from ..query import SQLITE_REFUSED_FUNCTIONS

MAX_VALUE_BYTES = 200_000  # far above any quote or record; a snapshot's page body is not shown whole
# One answer's values, counted as characters of text and bytes of blobs (8 for a number): the whole of
# `rejection_full` at the 2,000-row cap is about 6 MB, and Datasette's JSON or HTML is a few times the values.
MAX_ANSWER_BYTES = 16_000_000


class AnswerTooLarge(sqlite3.DatabaseError):
    """Raised from the row factory: Datasette shows a DatabaseError as the query's error (HTTP 400)."""


def _authorize(action: int, arg1, arg2, database, trigger) -> int:
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in SQLITE_REFUSED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


def _row_size(row: tuple) -> int:
    return sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row)


def counting_rows(limit: int = MAX_ANSWER_BYTES):
    """A row factory making sqlite3.Row objects (as Datasette's own) that fails a statement once the rows it has
    returned hold more than `limit` bytes. Each connection serves one statement at a time; a new cursor starts a
    new count (the cursor is held weakly, so a new one at a dead one's address is still new)."""
    state: dict = {"cursor": lambda: None, "size": 0}

    def factory(cursor: sqlite3.Cursor, row: tuple) -> sqlite3.Row:
        if state["cursor"]() is not cursor:
            state["cursor"], state["size"] = weakref.ref(cursor), 0
        state["size"] += _row_size(row)
        if state["size"] > limit:
            raise AnswerTooLarge(f"answer too large: the rows hold more than {limit // 1_000_000} MB; ask for fewer "
                                 "rows or shorter values (LIMIT, substr)")
        return sqlite3.Row(cursor, row)

    return factory


@hookimpl
def prepare_connection(conn: sqlite3.Connection) -> None:
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.set_authorizer(_authorize)
    conn.row_factory = counting_rows()  # Datasette set sqlite3.Row just before this hook
