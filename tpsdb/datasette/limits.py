"""A Datasette plugin that `tpsdb serve` registers: bounds on what one visitor's SELECT may produce.

Datasette bounds a query's time and rows, but not the size of one value: `select zeroblob(900000000)` made the
server take 24 GB and be killed (review, 2026-12-01). SQLite's length limit refuses any text or blob longer than
MAX_VALUE_BYTES ("string or blob too big"), so a response holds at most max_returned_rows such values.
"""

from __future__ import annotations

import sqlite3

from datasette import hookimpl

MAX_VALUE_BYTES = 200_000  # far above any quote or record; a snapshot's page body is not shown whole
# fts3_tokenizer('simple') returns a C pointer: an address of the server's memory, nothing a reader needs.
_REFUSED_FUNCTIONS = {"fts3_tokenizer"}


def _authorize(action: int, arg1, arg2, database, trigger) -> int:
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _REFUSED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


@hookimpl
def prepare_connection(conn: sqlite3.Connection) -> None:
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
    conn.set_authorizer(_authorize)
