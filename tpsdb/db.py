"""The database: engine, migration to head, and the seed file (load and deterministic dump)."""

from __future__ import annotations

import os
import re
import sqlite3
import weakref
from datetime import date, datetime
from glob import escape as glob_escape
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event, exc, inspect, text
from sqlmodel import SQLModel

from . import config

# The newest migration under migrations/versions/. Every command checks the database against it, so it is written
# here rather than read through Alembic, whose import alone costs each command ~0.15 s; a test holds the two equal.
SCHEMA_REVISION = "0007_quoteheader"

# Tables in foreign-key order: the seed is written and loaded in this order.
SEED_TABLES = ("source", "hardware", "model", "model_file", "software", "post", "measurement", "rejection")
# Columns that hold what is not curated data: raw bytes stay in the snapshot archive, never in the seed.
SEED_NULLED_COLUMNS = {"snapshot_id"}


_engines: weakref.WeakKeyDictionary[Engine, str] = weakref.WeakKeyDictionary()  # engine -> its database's name
_last_name: str | None = None  # the database the command works on, for an error raised far from its engine


class DatabaseError(Exception):
    """A database problem explained for the person at the keyboard."""


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL (its %-escapes decoded); None for another database or an in-memory one."""
    if not url.startswith("sqlite"):
        return None
    from sqlalchemy.engine import make_url

    path = make_url(url).database
    return path if path and path != ":memory:" else None


def display_name(url: str) -> str:
    """How a message names the database: the file for SQLite, the URL without its password otherwise."""
    from sqlalchemy.engine import make_url

    try:
        return sqlite_path(url) or make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL is shown as given
        return url


def _on_read_only_filesystem(path: str) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def make_engine(url: str | None = None, *, transactional_ddl: bool = False) -> Engine:
    """An engine on the database. It creates nothing by itself beyond what SQLite's first write does: commands that
    need an existing database go through `cli_common.open_db`, and only `init` creates a file (`create_database`).

    `transactional_ddl`: every transaction on SQLite starts with BEGIN IMMEDIATE, so DDL (which pysqlite would
    otherwise run outside any transaction) is undone with the rest, and a second writer waits its turn.
    """
    global _last_name
    url = config.database_url(url)
    _last_name = display_name(url)
    try:
        engine = _sqlite_engine(url, transactional_ddl) if url.startswith("sqlite") else \
            create_engine(url, pool_pre_ping=True)
    except ModuleNotFoundError as error:
        raise DatabaseError(f"{display_name(url)}: the database driver is not installed ({error.name}); "
                            "for PostgreSQL: pip install '.[postgres]'") from None
    except (ValueError, exc.ArgumentError) as error:  # NoSuchModuleError is an ArgumentError
        raise DatabaseError(f"{display_name(url)}: not a database URL this tpsdb can open ({error})") from None
    _engines[engine] = _last_name
    return engine


def name_of(engine: Engine | None = None) -> str:
    """The database's name for messages: the file for SQLite, the URL without password otherwise; without an
    engine, the database of the last engine made (the one the command works on)."""
    return (_engines.get(engine) if engine is not None else None) or _last_name or "the database"


def _sqlite_engine(url: str, transactional_ddl: bool) -> Engine:
    path = sqlite_path(url)
    read_only_fs = bool(path) and os.path.exists(path) and _on_read_only_filesystem(path)
    if read_only_fs:
        # WAL readers need to create the -shm file, impossible here; nobody can write the file either, so SQLite
        # may read it as immutable. A write then fails as "readonly", which the CLI explains.
        uri = f"file:{quote(path)}?mode=ro&immutable=1"
        engine = create_engine(url, creator=lambda: sqlite3.connect(uri, uri=True, timeout=60,
                                                                    check_same_thread=False))
    else:
        engine = create_engine(url, connect_args={"timeout": 60})

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_connection, _record):  # why: SQLite leaves foreign keys off by default
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")  # (WAL is set once by `init`: it stays in the file)
        cursor.execute("PRAGMA busy_timeout=60000")
        # A bulk add keeps its figure-key index pages in memory instead of spilling them to the WAL mid-way
        # (~15% of the insert time at 100,000 records). An upper bound: SQLite takes the pages as needed.
        cursor.execute("PRAGMA cache_size=-65536")
        cursor.close()
        if transactional_ddl:
            dbapi_connection.isolation_level = None  # pysqlite's own BEGIN would come after the first DDL

    if transactional_ddl:  # SQLAlchemy's documented recipe for SAVEPOINT / transactional DDL on pysqlite
        @event.listens_for(engine, "begin")
        def _begin(conn):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
    return engine


def close_all() -> None:
    """Close the connections of every engine made here: the last one to close a SQLite file folds its WAL back
    in and removes it, which a connection left to the interpreter's exit may never do."""
    for engine in list(_engines.keys()):
        engine.dispose()


def alembic_config(engine: Engine, connection=None):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(config.MIGRATIONS_DIR))
    # Alembic's configparser reads `%` as interpolation: a %-escaped password or path must be doubled.
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False).replace("%", "%%"))
    cfg.attributes["engine"] = engine
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def _revision_of(conn) -> str | None:
    if not inspect(conn).has_table("alembic_version"):
        return None
    return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def current_revision(engine: Engine) -> str | None:
    """The migration the database is at (Alembic's own table), or None for a database without tpsdb's schema."""
    with engine.connect() as conn:
        return _revision_of(conn)


def head_revision(engine: Engine) -> str | None:
    """The newest migration, as Alembic reads it from migrations/versions/ (slow: imports every migration)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def _known_revision(revision: str) -> bool:
    return any(any(config.MIGRATIONS_DIR.glob(f"versions/{glob_escape(revision)}{tail}")) for tail in ("_*.py", ".py"))


def revision_problem(current: str | None, name: str) -> str | None:
    """Why a database at `current` cannot be used by this tpsdb (None when it can), with what to do."""
    if current is None:
        return f"{name}: no tpsdb schema here; run `tpsdb init --db {name}` first"
    if current == SCHEMA_REVISION:
        return None
    number = current.split("_")[0]  # ids are NNNN or NNNN_name
    if number.isdigit() and int(number) > int(SCHEMA_REVISION.split("_")[0]):
        return f"{name}: database is at revision {current}, newer than this tpsdb ({SCHEMA_REVISION}): upgrade tpsdb"
    if _known_revision(current):
        return f"{name}: database is at revision {current}, this tpsdb expects {SCHEMA_REVISION}: run `tpsdb init`"
    return (f"{name}: database is at revision {current!r}, which no tpsdb migration made (this tpsdb is at "
            f"{SCHEMA_REVISION}); restore it from a backup or use the tpsdb that made it")


def migrate(engine: Engine) -> None:
    """Create or upgrade the schema to head (no checks; `init_database` is what `tpsdb init` runs)."""
    from alembic import command

    with engine.begin() as conn:
        command.upgrade(alembic_config(engine, conn), "head")


def _user_tables(conn) -> tuple[list[str], list[str]]:
    found = inspect(conn)
    return sorted(found.get_table_names()), sorted(found.get_view_names())


def _repair_half_built(conn, name: str, tables: list[str], views: list[str]) -> None:
    """A schema left half-built by an interrupted `init` of an older tpsdb (tables, no revision): rebuild it, but
    only when every table is one of tpsdb's and holds no row: anything else is refused, never dropped."""
    from sqlmodel import SQLModel

    ours = set(SQLModel.metadata.tables) | {"alembic_version"}
    foreign = [t for t in tables if t not in ours]
    if foreign:
        raise DatabaseError(f"{name} holds other tables ({', '.join(foreign)}); refusing to add tpsdb's schema")
    if any(conn.execute(text(f'SELECT 1 FROM "{t}" LIMIT 1')).first() for t in tables if t != "alembic_version"):
        raise DatabaseError(f"{name}: tpsdb tables with data but no schema revision; refusing to touch them "
                            "(inspect it with sqlite3/psql, or restore a backup)")
    for view in views:
        conn.exec_driver_sql(f'DROP VIEW IF EXISTS "{view}"')
    SQLModel.metadata.drop_all(conn)
    conn.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")


def create_database(url: str | None) -> Engine:
    """The engine `init` uses; a SQLite file's folder is created (the one command allowed to create)."""
    url = config.database_url(url)
    if path := sqlite_path(url):
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise DatabaseError(f"{path}: cannot create its folder ({error.strerror})") from None
    return make_engine(url, transactional_ddl=True)


def init_database(engine: Engine, seed: Path | None) -> int | None:
    """Bring the database to head and, when it holds no curated data, load the seed: all in ONE transaction, so an
    interruption (kill, full disk) leaves the database as it was. A second `init` at the same time waits for the
    first (SQLite's write lock, PostgreSQL's advisory lock) and then finds nothing to do.
    Returns the number of seed statements loaded, or None."""
    from alembic import command

    name = name_of(engine)
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(7472707364)"))  # 'tpsdb' + 'd'; held to commit
        current = _revision_of(conn)
        if current is None:
            tables, views = _user_tables(conn)
            if tables or views:
                _repair_half_built(conn, name, tables, views)
        elif not _known_revision(current):  # newer than this tpsdb, or not tpsdb's: never "upgrade" it
            raise DatabaseError(revision_problem(current, name))
        command.upgrade(alembic_config(engine, conn), "head")
        count = _load_seed(conn, seed) if seed is not None and seed.exists() and _is_empty(conn) else None
    if engine.dialect.name == "sqlite":  # readers never wait for a writer; only now that the file is tpsdb's
        raw = engine.raw_connection()
        try:
            raw.driver_connection.execute("PRAGMA journal_mode=WAL")
        finally:
            raw.close()
    return count


def _is_empty(conn) -> bool:
    return not any(conn.execute(text(f"SELECT 1 FROM {name} LIMIT 1")).first() for name in SEED_TABLES)


def is_empty(engine: Engine) -> bool:
    """No curated data at all: the state in which `init` loads the seed (also after a seed load that failed)."""
    with engine.connect() as conn:
        return _is_empty(conn)


def require_schema(engine: Engine) -> None:
    """Refuse to work on a database that is not at head, with the command that fixes it."""
    if problem := revision_problem(current_revision(engine), name_of(engine)):
        raise DatabaseError(problem)


# ---------------------------------------------------------------------------------------------- failures
# What the driver says -> what it means and what to do. Matched on the driver's own message, lower-cased.
_SQLITE_FAILURES = (
    (("file is not a database", "malformed", "not a database", "could not decode to utf-8"),
     "{db}: not a tpsdb database or corrupt ({reason}); restore it from a backup", 2),
    (("disk i/o error",),
     "{db}: input/output error ({reason}); check the disk, the file and its -wal/-shm files", 2),
    (("readonly database", "read-only", "readonly"),
     "{db} is read-only: {reason}; nothing was changed", 2),
    (("database or disk is full", "disk is full"),
     "{db}: disk full ({reason}); nothing was changed: free some space and run the command again", 2),
    (("database is locked", "database table is locked"),
     "{db} is busy: another process holds its write lock ({reason}); try again when it ends", 3),
    (("unable to open database file",),
     "{db}: cannot open it ({reason}); check the path and its folder's permissions", 2),
)
_SERVER_FAILURES = (
    (("does not exist",),
     "{db}: the database does not exist ({reason}); create it with `createdb {dbname}`, then run `tpsdb init`", 2),
    (("connection refused", "could not connect", "connection timeout", "timeout expired", "name or service not known",
      "could not translate host name", "no route to host", "server closed the connection"),
     "{db}: the PostgreSQL server is not reachable ({reason}); is it running, and are host and port right?", 2),
    (("password authentication failed", "authentication failed", "no password supplied", "no pg_hba.conf entry"),
     "{db}: the server refused the login ({reason}); check the user and password in the URL", 2),
    (("read-only transaction", "permission denied"),
     "{db}: not allowed ({reason}); nothing was changed", 2),
    (("no space left on device", "could not extend file"),
     "{db}: the server's disk is full ({reason}); nothing was changed", 2),
)


def explain(error: BaseException) -> tuple[str, int] | None:
    """A known database failure as (message, exit code); None when it is not one (an internal error)."""
    from sqlalchemy.engine import make_url

    db = name_of()
    if isinstance(error, DatabaseError):
        return str(error), 2
    if isinstance(error, UnicodeDecodeError):  # only raised from the database's text: see cli.main
        return f"{db}: not a tpsdb database or corrupt (text that is not UTF-8: {error.reason})", 2
    if not isinstance(error, (exc.DBAPIError, sqlite3.Error)):
        return None
    original = getattr(error, "orig", None) or error
    reason = " ".join(str(original).split()) or type(original).__name__
    lower = reason.lower()
    is_sqlite = isinstance(original, sqlite3.Error)
    for needles, message, code in _SQLITE_FAILURES if is_sqlite else _SERVER_FAILURES:
        if any(needle in lower for needle in needles):
            dbname = make_url(db).database if "://" in db else None
            return message.format(db=db, reason=reason[:300], dbname=dbname), code
    return None


# ------------------------------------------------------------------------------------------------------ seed
def _sql_literal(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime):
        value = value.isoformat(sep=" ")
    elif isinstance(value, date):
        value = value.isoformat()
    return "'" + str(value).replace("'", "''") + "'"


def dump_seed(engine: Engine) -> str:
    """The curated tables as INSERT statements, ordered by id: the same database gives the same bytes."""
    lines = ["-- tpsdb seed: the curated dataset. Written by `tpsdb export-seed`; load with `tpsdb init`.", ""]
    metadata = SQLModel.metadata
    with engine.connect() as conn:
        for name in SEED_TABLES:
            table = metadata.tables[name]
            columns = [c.name for c in table.columns]
            rows = conn.execute(table.select().order_by(table.c.id)).mappings().all()
            lines.append(f"-- {name}: {len(rows)} rows")
            for row in rows:
                values = ", ".join(
                    "NULL" if col in SEED_NULLED_COLUMNS else _sql_literal(row[col]) for col in columns
                )
                lines.append(f"INSERT INTO {name} ({', '.join(columns)}) VALUES ({values});")
            lines.append("")
    return "\n".join(lines)


# One token of a SQL script: a quoted string ('' escapes a quote; unterminated: to the end), a `--` comment, a `;`,
# or a run of anything else. Matching tokens rather than walking characters: a 40 MB seed splits in well under a
# second instead of ~5 s.
_SQL_TOKEN = re.compile(r"'(?:[^']|'')*'?|--[^\n]*|;|[^';-]+|-")


def split_sql(script: str) -> list[str]:
    """Statements of a SQL script, split on `;` outside quoted strings and `--` comments."""
    statements, current = [], []
    for token in _SQL_TOKEN.findall(script):
        if token == ";":
            statement = "".join(current).strip()
            if statement:
                statements.append(statement)
            current = []
        elif not token.startswith("--"):
            current.append(token)
    if "".join(current).strip():
        statements.append("".join(current).strip())
    return statements


# A decimal literal with a fraction or an exponent, outside quoted strings. SQLite before 3.43 converts such text to a
# double inexactly now and then (`SELECT 146.619332` gives 146.61933199999999, one unit in the last place off), so a
# figure loaded from the seed would differ from the one written: its quote no longer shows it, and the seed no longer
# dumps to the same bytes. Python's float() rounds correctly; the loader binds that value instead.
_FLOAT_LITERAL = re.compile(r"(?<![\w.])(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+(?:\.\d*)?[eE][+-]?\d+)(?![\w.])")


def split_sql_binding_floats(script: str) -> list[tuple[str, list[float]]]:
    """Statements of a SQL script as split_sql splits them, each with its decimal literals (outside strings and
    comments) replaced by `?` and given as parameters, in order, parsed by Python (qmark style: SQLite)."""
    statements: list[tuple[str, list[float]]] = []
    current: list[str] = []
    params: list[float] = []

    def bind(match: re.Match) -> str:
        params.append(float(match.group()))
        return "?"

    for token in _SQL_TOKEN.findall(script):
        if token == ";":
            statement = "".join(current).strip()
            if statement:
                statements.append((statement, params))
            current, params = [], []
        elif token.startswith("'"):
            current.append(token)
        elif not token.startswith("--"):
            current.append(_FLOAT_LITERAL.sub(bind, token) if "." in token or "e" in token or "E" in token
                           else token)
    if "".join(current).strip():
        statements.append(("".join(current).strip(), params))
    return statements


def load_seed(engine: Engine, path: Path = config.SEED_SQL) -> int:
    """Run the seed's INSERTs in one transaction. Returns the number of statements."""
    with engine.begin() as conn:
        return _load_seed(conn, path)


def _load_seed(conn, path: Path) -> int:
    script = path.read_text(encoding="utf-8")
    # The DBAPI cursor itself: no parameter parsing by SQLAlchemy, so a '%' or ':x' inside a quoted string stays text.
    cursor = conn.connection.dbapi_connection.cursor()
    if conn.dialect.name == "sqlite":  # sqlite3 binds only its own `?` marks, never one inside a quoted string
        bound = split_sql_binding_floats(script)
        for statement, params in bound:
            cursor.execute(statement, params)
        count = len(bound)
    else:  # PostgreSQL reads a decimal literal exactly (as numeric, then rounded once to double precision)
        statements = split_sql(script)
        for statement in statements:
            cursor.execute(statement)
        count = len(statements)
    cursor.close()
    if conn.dialect.name == "postgresql":  # explicit ids leave the sequences behind
        for name in SEED_TABLES:
            conn.execute(
                text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), COALESCE(MAX(id), 1)) FROM {name}")
            )
    return count
