"""Read-only SQL for users: one statement, on a connection that cannot write, bounded in time and rows.

SQLite: the file is opened read-only (`mode=ro`) and an authorizer refuses, while SQLite parses the statement,
everything but reading (ATTACH, which VACUUM INTO also goes through, writes, transactions, settings). PostgreSQL:
the statement, read with PostgreSQL's lexical rules (tpsdb.pg_lexer), must be a reading one naming no function
that reaches past the database; it is sent alone through the extended protocol (which refuses a second statement,
so the text cannot end the transaction) inside `BEGIN READ ONLY`, with `default_transaction_read_only` and
`statement_timeout` set, and as a role that can only read (a superuser's session switches to pg_read_all_data for
the transaction). Rows are streamed, never fetched whole.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import sqlite3
import threading
import time
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from itertools import chain, islice
from typing import IO, Callable, Iterable, Iterator
from urllib.parse import quote

from . import config
from .db import sqlite_path

DEFAULT_TIMEOUT = 10.0  # seconds
DEFAULT_LIMIT = 1000  # rows; 0 means no limit


class QueryError(Exception):
    pass


def timeout_message(timeout: float) -> str:
    return f"query: stopped after {timeout:g} s (--timeout)"


@contextmanager
def run_readonly(sql: str, db: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 on_overrun: Callable[[], None] | None = None):
    """`with run_readonly(sql) as (columns, rows)`: rows is an iterator streamed from the database. Every failure,
    while opening or while iterating, is a QueryError with a one-line message. `on_overrun` is called (from
    another thread) if a SQLite statement has not stopped overrun_grace() after its timeout: a command
    ends the process there (PostgreSQL's server stops its own statements)."""
    if not timeout > 0:
        raise QueryError(f"query: --timeout must be more than 0 seconds, not {timeout:g}")
    url = config.database_url(db)
    if url.startswith("sqlite"):
        path = sqlite_path(url)
        if path is None:
            raise QueryError("query: an in-memory SQLite database has nothing to query")
        with _sqlite_rows(path, sql, timeout, on_overrun) as answer:
            yield answer
    else:
        with _postgres_rows(url, sql, timeout) as answer:
            yield answer


class Limited:
    """At most `limit` rows of `rows` (0: all); `cut` tells, once they are read, whether more rows existed."""

    def __init__(self, rows: Iterable[tuple], limit: int):
        self.rows, self.limit, self.cut = rows, limit, False

    def __iter__(self) -> Iterator[tuple]:
        if not self.limit:
            yield from self.rows
            return
        rows = iter(self.rows)
        yield from islice(rows, self.limit)
        self.cut = next(rows, None) is not None  # one row more says that there were more, without reading them all


# ---------------------------------------------------------------------------------------------------- SQLite
# What the authorizer lets through: reading, and functions. Anything else is refused while SQLite parses the
# statement, before it runs.
_SQLITE_READING = {sqlite3.SQLITE_READ, sqlite3.SQLITE_SELECT, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
# How a refusal names the action (the module's constant names; ATTACH is also how VACUUM INTO writes its copy).
_SQLITE_ACTIONS = {getattr(sqlite3, f"SQLITE_{name.replace(' ', '_')}"): name for name in (
    "CREATE INDEX", "CREATE TABLE", "CREATE TEMP INDEX", "CREATE TEMP TABLE", "CREATE TEMP TRIGGER",
    "CREATE TEMP VIEW", "CREATE TRIGGER", "CREATE VIEW", "DELETE", "DROP INDEX", "DROP TABLE", "DROP TEMP INDEX",
    "DROP TEMP TABLE", "DROP TEMP TRIGGER", "DROP TEMP VIEW", "DROP TRIGGER", "DROP VIEW", "INSERT", "UPDATE",
    "DETACH", "ALTER TABLE", "REINDEX", "ANALYZE", "CREATE VTABLE", "DROP VTABLE", "SAVEPOINT", "TRANSACTION")}
_SQLITE_ACTIONS[sqlite3.SQLITE_ATTACH] = "ATTACH (or VACUUM INTO)"
# The actions whose first argument says what they touch, and the word before it.
_SQLITE_TARGET = {sqlite3.SQLITE_DELETE: "from", sqlite3.SQLITE_INSERT: "into", sqlite3.SQLITE_UPDATE: "of",
                  sqlite3.SQLITE_ATTACH: ""}
# PRAGMAs that only describe the database. Those that are settings are allowed only without a value (a read).
_DESCRIBING_PRAGMAS = {"table_info", "table_xinfo", "table_list", "index_list", "index_info", "index_xinfo",
                       "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check"}
_SETTING_PRAGMAS = {"user_version", "schema_version", "application_id", "journal_mode", "page_size", "page_count",
                    "freelist_count", "encoding", "foreign_keys", "data_version", "database_list", "collation_list",
                    "function_list", "pragma_list", "module_list", "compile_options"}


# Functions refused although they are functions: load_extension runs a library's code; fts3_tokenizer returns a
# pointer into the process's memory, and with two arguments registers a tokenizer at any address (review
# 2026-12-01, L7). `tpsdb serve` refuses the same (tpsdb.datasette.limits).
SQLITE_REFUSED_FUNCTIONS = frozenset({"load_extension", "fts3_tokenizer"})


def _authorizer(refused: list[str]):
    def authorize(action, arg1, arg2, _database, _trigger):
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in SQLITE_REFUSED_FUNCTIONS:
            refused.append(f"{arg2.lower()}()")
            return sqlite3.SQLITE_DENY
        if action in _SQLITE_READING:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_UPDATE and arg1 in ("sqlite_master", "sqlite_schema"):
            # SQLite reports its own declaration of a table-valued function (json_each, pragma_table_info) as an
            # update of the schema table; a user's write to that table is refused by SQLite and by mode=ro anyway.
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_PRAGMA:
            name = (arg1 or "").lower()
            if name in _DESCRIBING_PRAGMAS or (name in _SETTING_PRAGMAS and arg2 is None):
                return sqlite3.SQLITE_OK
            refused.append(f"PRAGMA {arg1}" + (f"={arg2}" if arg2 is not None else ""))
            return sqlite3.SQLITE_DENY
        what = _SQLITE_ACTIONS.get(action, f"action {action}")
        if action in _SQLITE_TARGET and arg1:
            what = f"{what} {_SQLITE_TARGET[action]} {arg1}".replace("  ", " ")
            if arg1.startswith("sqlite_"):  # SQLite's own record of a CREATE or DROP
                what = "a change of the schema (CREATE, DROP)"
        refused.append(what)
        return sqlite3.SQLITE_DENY

    return authorize


def _sqlite_open(path: str, timeout: float) -> sqlite3.Connection:
    """The file read-only. Its path is percent-quoted into the URI: a `#` or `?` in it would otherwise end the
    path, and SQLite would open (and create, read-write) another file."""
    uri = f"file:{quote(path)}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=timeout)
    try:
        conn.execute("select 1 from sqlite_schema limit 1")  # opening is lazy: this reads the file and its WAL
        return conn
    except sqlite3.OperationalError as error:
        conn.close()
        cannot_create = error.sqlite_errorname in ("SQLITE_CANTOPEN", "SQLITE_READONLY_DIRECTORY")
        if not cannot_create or os.path.exists(path + "-wal"):
            raise
    # A WAL database needs its -wal and -shm files; on read-only media (or in a directory we may not write) SQLite
    # cannot create them. No -wal file means no connection has it open and the file holds every committed
    # transaction, so reading it as immutable (no locks, no side files) answers exactly. A writer starting during
    # the read could change pages under us; that is why this is the fallback, not the rule.
    conn = sqlite3.connect(uri + "&immutable=1", uri=True)
    conn.execute("select 1 from sqlite_schema limit 1")
    return conn


def _remove_side_files(path: str, existed: set[str]) -> None:
    """A read-only connection to a WAL database creates `-wal` and `-shm` files and cannot remove them: SQLite
    leaves that to the last read-write connection to close. So one that only opens the WAL and closes does it,
    and only if no other connection has the database open (SQLite checks its locks; the files then stay for the
    connection using them). It writes nothing to the database: the WAL our reader created is empty (unless a
    writer committed into it meanwhile; folding that in is what any tpsdb command closing last would do)."""
    created = [p for p in (path + "-wal", path + "-shm") if p not in existed and os.path.exists(p)]
    if not created:
        return
    try:
        conn = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True, timeout=1)
        try:
            conn.execute("select 1 from sqlite_schema limit 1")
        finally:
            conn.close()
    except sqlite3.Error:
        pass  # busy or not writable: the files stay, as they would after any reader


def overrun_grace(timeout: float) -> float:
    """How long past its timeout an interrupted SQLite statement may take to stop before the hard stop: as long
    again as the timeout, at least 1 s (a busy machine's slow step is not a hung one), at most 2 s."""
    return min(2.0, max(1.0, timeout))


class _Watchdog(threading.Thread):
    """Stops a SQLite statement at its deadline, whatever it is doing. The progress handler sees only the steps
    between virtual-machine instructions, and one instruction can take seconds (`randomblob(1e9)`, `replace` on a
    long value, a big sort; review 2026-12-01, D9: `--timeout 1` ran 20.6 s). So at the deadline this thread calls
    sqlite3_interrupt (SQLite stops at its next check); if SQLite is still busy with the statement
    overrun_grace() later, `on_overrun` (the command's hard stop) is called."""

    def __init__(self, conn: sqlite3.Connection, timeout: float, on_overrun: Callable[[], None] | None):
        super().__init__(name="tpsdb-query-watchdog", daemon=True)
        self.conn, self.timeout, self.on_overrun = conn, timeout, on_overrun
        self.done = threading.Event()
        self.closing = threading.Lock()  # an interrupt never meets a connection being closed
        self.in_sqlite = False  # the reading thread is inside SQLite (not writing rows out, say)

    def stop(self) -> None:
        """The statement is over: call before closing the connection."""
        with self.closing:
            self.done.set()

    def call(self, function: Callable, *args):
        """function(*args), a call into SQLite that the hard stop may end."""
        self.in_sqlite = True
        try:
            return function(*args)
        finally:
            self.in_sqlite = False

    def run(self) -> None:
        if self.done.wait(self.timeout):
            return
        with self.closing:
            if self.done.is_set():
                return
            self.conn.interrupt()
        if not self.done.wait(overrun_grace(self.timeout)) and self.in_sqlite and self.on_overrun is not None:
            self.on_overrun()


@contextmanager
def _sqlite_rows(path: str, sql: str, timeout: float, on_overrun: Callable[[], None] | None = None):
    if not os.path.isfile(path):
        raise QueryError(f"query: no database at {path} (run `tpsdb init` first?)")
    existed = {p for p in (path + "-wal", path + "-shm") if os.path.exists(p)}
    try:
        conn = _sqlite_open(path, timeout)
    except sqlite3.Error as error:
        _remove_side_files(path, existed)
        raise QueryError(f"query: cannot open {path} read-only: {error}") from error
    refused: list[str] = []
    deadline = time.monotonic() + timeout
    cursor = None
    watchdog = _Watchdog(conn, timeout, on_overrun)
    try:
        conn.set_authorizer(_authorizer(refused))
        # Called every 1,000 virtual-machine steps (about 0.1 ms); a true return interrupts the statement. The
        # watchdog covers the single steps that take long.
        conn.set_progress_handler(lambda: time.monotonic() > deadline, 1_000)
        watchdog.start()

        def failure(error: sqlite3.Error) -> QueryError:
            if refused and refused[0].endswith("()"):
                return QueryError(f"query: refused: {refused[0]} (it reaches past the data: a library's code, or "
                                  "the process's memory)")
            if refused:
                return QueryError(f"query: refused: {refused[0]} (query is read-only: no writes, ATTACH, VACUUM, "
                                  "transactions or settings)")
            if isinstance(error, sqlite3.OperationalError) and str(error) == "interrupted":
                return QueryError(timeout_message(timeout))
            if isinstance(error, sqlite3.ProgrammingError) and "one statement" in str(error):
                return QueryError("query: one statement only (the text holds more than one)")
            return QueryError(f"query: {error}")

        try:
            cursor = watchdog.call(conn.execute, sql)
        except sqlite3.Error as error:
            raise failure(error) from error

        def rows() -> Iterator[tuple]:
            try:
                while batch := watchdog.call(cursor.fetchmany, 500):
                    yield from batch
            except sqlite3.Error as error:
                raise failure(error) from error

        yield [d[0] for d in cursor.description or []], rows()
    finally:
        watchdog.stop()
        if cursor is not None:
            cursor.close()  # a statement left running would keep the connection (and its lock) open past close()
        conn.close()
        _remove_side_files(path, existed)


# ------------------------------------------------------------------------------------------------ PostgreSQL
# The statements a query may be. SELECT, WITH, VALUES and TABLE read (a WITH holding an INSERT/UPDATE/DELETE is
# refused by the read-only transaction); SHOW reads a setting; EXPLAIN describes a plan, and EXPLAIN ANALYZE runs
# its statement inside the same read-only, time-limited transaction, so it can do nothing the statement could
# not. Everything else is refused: COPY (it writes and reads files on the server even in a read-only
# transaction), transaction control (COMMIT would end the read-only transaction), SET/RESET, CALL/DO, LOAD, LISTEN…
_PG_STATEMENTS = ("select", "with", "values", "table", "show", "explain")
# Names refused wherever they occur in the statement (as the scanner reads it, so comments, quotes and U& escapes
# cannot hide them). Functions that reach the server's files or processes or another server; set_config, which
# could change the role or the session back; and the functions that run SQL built from a string at run time (the
# string is not read here). The role the statement runs as is the real guard (see _reading_role); this is the
# second one, and it also says in words what was refused.
_PG_REFUSED_NAMES = frozenset({
    "pg_read_file", "pg_read_binary_file", "pg_stat_file", "pg_terminate_backend", "pg_cancel_backend",
    "pg_reload_conf", "pg_rotate_logfile", "pg_promote", "pg_switch_wal", "pg_create_restore_point",
    "pg_logical_emit_message", "set_config", "query_to_xml", "query_to_xmlschema", "query_to_xml_and_xmlschema",
    "cursor_to_xml", "cursor_to_xmlschema", "ts_stat", "ts_rewrite", "pg_import_system_collations"})
_PG_REFUSED_PREFIXES = ("pg_ls_", "lo_", "pg_file_", "dblink", "pg_replication_", "pg_create_", "pg_drop_",
                        "pg_copy_", "pg_backup_", "pg_start_backup", "pg_stop_backup", "pg_wal_replay_")


def check_postgres_statement(sql: str) -> None:
    """Refuse a statement that is not a query, or that names a function reaching past the database. The text is
    read with PostgreSQL's own lexical rules (tpsdb.pg_lexer): nested comments, quoted and U& names."""
    from .pg_lexer import LexError, tokens

    try:
        words = tokens(sql)
    except LexError as error:
        raise QueryError(f"query: refused: {error}") from error
    first = next((t for t in words if t.value != "(" or t.kind != "other"), None)
    word = first.value if first is not None and first.kind == "name" and not first.quoted else ""
    if word not in _PG_STATEMENTS:
        shown = (word or (first.value if first is not None else "")).upper()[:40]
        raise QueryError(f"query: refused: {shown or 'this statement'} is not a read-only query "
                         f"(allowed: {', '.join(w.upper() for w in _PG_STATEMENTS)})")
    for token in words:
        if token.kind == "name" and (token.value in _PG_REFUSED_NAMES
                                     or token.value.startswith(_PG_REFUSED_PREFIXES)):
            raise QueryError(f"query: refused: {_shown(token.value)}() reaches past the database "
                             "(the server's files or processes, another server, the session's role, or SQL built "
                             "from a string)")


def _pg_conninfo(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def _pg_columns(conn, sql: str) -> list[str]:
    """The columns of a statement that returned no row (stream() learns them from its first row): the server
    parses and describes it again, without running it."""
    from psycopg import pq

    encoding = conn.info.encoding
    pgconn = conn.pgconn
    described = pgconn.prepare(b"", sql.encode(encoding))
    if described.status == pq.ExecStatus.COMMAND_OK:
        described = pgconn.describe_prepared(b"")
    if described.status != pq.ExecStatus.COMMAND_OK:
        return []
    return [described.fname(i).decode(encoding) for i in range(described.nfields)]


# Who may reach past the database: a superuser, or a member of a superuser role or of a role that reads or writes
# the server's files or runs its programs (COPY … TO PROGRAM; PostgreSQL 11+). pg_has_role is true of any role for
# a superuser.
_PG_PRIVILEGED = """
select current_user,
       r.rolsuper or exists (select 1 from pg_roles d
                             where (d.rolsuper or d.rolname in ('pg_read_server_files', 'pg_write_server_files',
                                                                'pg_execute_server_program'))
                               and pg_has_role(current_user, d.oid, 'MEMBER')),
       exists (select 1 from pg_roles d where d.rolname = 'pg_read_all_data'
                                          and pg_has_role(current_user, d.oid, 'MEMBER'))
from pg_roles r where r.rolname = current_user
"""
READER_ROLE = "pg_read_all_data"  # PostgreSQL 14+: SELECT on every table and view, USAGE on every schema, no more


def _reading_role(cursor) -> None:
    """Run the rest of the transaction as a role that can only read. A session that could reach the server's
    files or programs (a superuser: what `init` and `refresh` are often given) switches, for this transaction
    only, to PostgreSQL's built-in pg_read_all_data role; without it (PostgreSQL 13 or older, or a privileged role
    not granted it) the query is refused. The statement check refuses the ways back (SET/RESET ROLE, set_config),
    and even a statement the check missed meets the privileges of a reader (review 2026-12-01, D6)."""
    user, privileged, can_read_all = cursor.execute(_PG_PRIVILEGED).fetchone()
    if not privileged:
        return
    if not can_read_all:
        raise QueryError(f"query: refused: the role {user} is a superuser or may reach the server's files, and "
                         f"cannot run the query as {READER_ROLE} (PostgreSQL 14+); connect as a role that can "
                         "only read (README: What `tpsdb query` allows)")
    cursor.execute(f"set local role {READER_ROLE}")
    if cursor.execute(_PG_PRIVILEGED).fetchone()[1]:  # never: the built-in role holds nothing more
        raise QueryError(f"query: refused: the role {READER_ROLE} may reach the server's files")


@contextmanager
def _postgres_rows(url: str, sql: str, timeout: float):
    import psycopg

    check_postgres_statement(sql)

    def failure(error: psycopg.Error) -> QueryError:
        if isinstance(error, psycopg.errors.QueryCanceled):
            return QueryError(timeout_message(timeout))
        message = (str(error).strip().splitlines() or [type(error).__name__])[0]
        if isinstance(error, psycopg.errors.ReadOnlySqlTransaction):
            return QueryError(f"query: refused, the transaction is read-only: {message}")
        return QueryError(f"query: {message}")

    try:
        conn = psycopg.connect(_pg_conninfo(url), connect_timeout=max(2, math.ceil(timeout)),
                               # the check reads the text with standard strings: a backslash in '…' is a plain character
                               options="-c default_transaction_read_only=on -c standard_conforming_strings=on")
    except psycopg.Error as error:
        raise failure(error) from error
    try:
        conn.read_only = True  # psycopg opens the transaction with BEGIN READ ONLY
        cursor, stream = conn.cursor(), None
        try:
            cursor.execute("select set_config('statement_timeout', %s, true)", [f"{round(timeout * 1000)}ms"])
            _reading_role(cursor)
            # stream(): the extended protocol (one statement, or an error) and rows as they come.
            stream = cursor.stream(sql)
            first = next(stream, None)
        except psycopg.Error as error:
            raise failure(error) from error

        def rows() -> Iterator[tuple]:
            try:
                if first is not None:
                    yield from chain([first], stream)
            except psycopg.Error as error:
                raise failure(error) from error

        columns = [d.name for d in cursor.description] if first is not None else _pg_columns(conn, sql)
        yield columns, rows()
    finally:
        if stream is not None:
            stream.close()  # rows left unread (--limit): psycopg cancels the statement on the server
        conn.close()  # without a commit: the transaction is rolled back


# ------------------------------------------------------------------------------------------------ output
def _plain(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes | memoryview):
        return f"<{len(value)} bytes>"
    return value


# Control characters (C0, DEL, C1), line/paragraph separators and bidirectional overrides: on a terminal they
# move the cursor, retitle the window or reorder text. A table shows them as escapes.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _shown(value) -> str:
    text = "" if value is None else str(value)
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


FORMATS = ("table", "csv", "json", "md")
# The schema's text columns that hold JSON (tpsdb.models: a candidate, reason codes, options, a formula's inputs,
# a run's pages). `--format json` gives their values as JSON, not as strings of JSON (review 2026-12-01, M3).
JSON_COLUMNS = frozenset({"reasons", "candidate_json", "software_options", "formula_inputs", "snapshot_ids"})


def _json_value(column: str, value):
    if column in JSON_COLUMNS and isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:
            pass  # text that only looks like JSON stays text
    return value


def write(columns: list[str], rows: Iterable[tuple], fmt: str, out: IO[str], max_width: int = 0) -> int:
    """Write rows as they come (memory does not grow with their number); returns how many. A table cuts no cell
    unless `max_width` (characters) is given: a URL copied from it must be whole."""
    rows = (tuple(_plain(v) for v in row) for row in rows)
    count = 0
    if fmt == "json":
        out.write("[")
        for count, row in enumerate(rows, 1):
            item = {c: _json_value(c, v) for c, v in zip(columns, row)}
            text = json.dumps(item, ensure_ascii=False, indent=1).replace("\n", "\n ")
            out.write(("," if count > 1 else "") + "\n " + text)
        out.write("\n]\n" if count else "]\n")
    elif fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        for count, row in enumerate(rows, 1):
            writer.writerow(row)
    elif fmt == "md":
        count = _markdown(columns, rows, out)
    else:
        count = _table(columns, rows, out, max_width)
    return count


def _table(columns: list[str], rows: Iterator[tuple], out: IO[str], max_width: int = 0) -> int:
    """Columns as wide as their widest value in the first 1000 rows (at most `max_width` if given); a longer
    value later is written whole (its line is then longer), or cut with `…` to `max_width`."""
    header = [_shown(c) for c in columns]
    first = [[_shown(v) for v in row] for row in islice(rows, 1000)]
    widths = [max([len(c)] + [len(r[i]) for r in first]) for i, c in enumerate(header)]
    if max_width:
        widths = [min(max_width, w) for w in widths]

    def line(cells) -> str:
        if max_width:
            cells = (v if len(v) <= max_width else v[: max_width - 1] + "…" for v in cells)
        return "  ".join(v.ljust(w) for v, w in zip(cells, widths)).rstrip() + "\n"

    out.write(line(header) + "  ".join("-" * w for w in widths) + "\n")
    count = 0
    for count, cells in enumerate(chain(first, ([_shown(v) for v in row] for row in rows)), 1):
        out.write(line(cells))
    out.write(f"({count} row{'s' if count != 1 else ''})\n")
    return count


def _md_cell(value) -> str:
    """A Markdown table cell: control characters escaped as in a table; a backslash, `|` (the cell's end) and `<`
    (an HTML tag) escaped with a backslash, as CommonMark reads them; nothing cut."""
    return re.sub(r"[\\|<]", lambda m: "\\" + m.group(), _shown(value))


def _markdown(columns: list[str], rows: Iterator[tuple], out: IO[str]) -> int:
    """A GitHub-flavoured Markdown table; columns whose first value is a number are aligned right."""
    first = next(rows, None)
    numeric = [first is not None and isinstance(v, (int, float)) and not isinstance(v, bool)
               for v in (first or [None] * len(columns))]
    out.write("| " + " | ".join(_md_cell(c) for c in columns) + " |\n")
    out.write("|" + "|".join(" ---: " if n else " --- " for n in numeric) + "|\n")
    count = 0
    for count, row in enumerate(chain([first] if first is not None else [], rows), 1):
        out.write("| " + " | ".join(_md_cell(v) for v in row) + " |\n")
    return count


def render(columns: list[str], rows: list[tuple], fmt: str, max_width: int = 60) -> str:
    """The rows as one text (small results: `tpsdb sources` uses it, its table's cells cut at 60 characters as
    they always were; `query` cuts nothing unless asked)."""
    import io

    out = io.StringIO()
    write(columns, rows, fmt, out, max_width)
    return out.getvalue().rstrip("\n")
