"""The database: engine, migration to head, and the seed file (load and deterministic dump)."""

from __future__ import annotations

import weakref
from datetime import date, datetime
from pathlib import Path

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlmodel import SQLModel

from . import config

# The newest migration under migrations/versions/. Every command checks the database against it, so it is written
# here rather than read through Alembic, whose import alone costs each command ~0.15 s; a test holds the two equal.
SCHEMA_REVISION = "0002"

# Tables in foreign-key order: the seed is written and loaded in this order.
SEED_TABLES = ("source", "hardware", "model", "model_file", "software", "post", "measurement", "rejection")
# Columns that hold what is not curated data: raw bytes stay in the snapshot archive, never in the seed.
SEED_NULLED_COLUMNS = {"snapshot_id"}


_engines: weakref.WeakSet[Engine] = weakref.WeakSet()


class DatabaseError(Exception):
    """A database problem explained for the person at the keyboard."""


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite URL; None for another database or an in-memory one."""
    if not url.startswith("sqlite"):
        return None
    path = url.split("///", 1)[-1]
    return path if path and path != ":memory:" else None


def make_engine(url: str | None = None) -> Engine:
    url = config.database_url(url)
    if url.startswith("sqlite"):
        if path := sqlite_path(url):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"timeout": 60})

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):  # why: SQLite leaves foreign keys off by default
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA busy_timeout=60000")
            # A bulk add keeps its figure-key index pages in memory instead of spilling them to the WAL mid-way
            # (~15% of the insert time at 100,000 records). An upper bound: SQLite takes the pages as needed.
            cursor.execute("PRAGMA cache_size=-65536")
            cursor.close()
    else:
        engine = create_engine(url, pool_pre_ping=True)
    _engines.add(engine)
    return engine


def close_all() -> None:
    """Close the connections of every engine made here: the last one to close a SQLite file folds its WAL back
    in and removes it, which a connection left to the interpreter's exit may never do."""
    for engine in list(_engines):
        engine.dispose()


def alembic_config(engine: Engine):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(config.MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", engine.url.render_as_string(hide_password=False))
    cfg.attributes["engine"] = engine
    return cfg


def current_revision(engine: Engine) -> str | None:
    """The migration the database is at (Alembic's own table), or None for a database without tpsdb's schema."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def head_revision(engine: Engine) -> str | None:
    """The newest migration, as Alembic reads it from migrations/versions/ (slow: imports every migration)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def migrate(engine: Engine) -> None:
    """Create or upgrade the schema to head."""
    from alembic import command

    command.upgrade(alembic_config(engine), "head")


def is_empty(engine: Engine) -> bool:
    """No curated data at all: the state in which `init` loads the seed (also after a seed load that failed)."""
    with engine.connect() as conn:
        return not any(conn.execute(text(f"SELECT 1 FROM {name} LIMIT 1")).first() for name in SEED_TABLES)


def require_schema(engine: Engine) -> None:
    """Refuse to work on a database that is not at head, with the command that fixes it."""
    current = current_revision(engine)
    if current is None:
        raise DatabaseError(f"{engine.url.render_as_string()}: no tpsdb schema here; run `tpsdb init` first")
    if current != SCHEMA_REVISION:
        raise DatabaseError(f"database is at revision {current}, code expects {SCHEMA_REVISION}: run `tpsdb init`")


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


def split_sql(script: str) -> list[str]:
    """Statements of a SQL script, split on `;` outside quoted strings and `--` comments."""
    statements, current, quoted, i = [], [], False, 0
    while i < len(script):
        ch = script[i]
        if quoted:
            current.append(ch)
            if ch == "'":
                if script[i + 1 : i + 2] == "'":
                    current.append("'")
                    i += 1
                else:
                    quoted = False
        elif ch == "'":
            quoted, current = True, current + [ch]
        elif ch == "-" and script[i + 1 : i + 2] == "-":
            end = script.find("\n", i)
            i = len(script) if end == -1 else end
            continue
        elif ch == ";":
            statement = "".join(current).strip()
            if statement:
                statements.append(statement)
            current = []
        else:
            current.append(ch)
        i += 1
    if "".join(current).strip():
        statements.append("".join(current).strip())
    return statements


def load_seed(engine: Engine, path: Path = config.SEED_SQL) -> int:
    """Run the seed's INSERTs in one transaction. Returns the number of statements."""
    statements = split_sql(path.read_text(encoding="utf-8"))
    with engine.begin() as conn:
        # The DBAPI cursor itself: no parameter parsing, so a '%' or ':x' inside a quoted string stays text.
        cursor = conn.connection.dbapi_connection.cursor()
        for statement in statements:
            cursor.execute(statement)
        cursor.close()
        if engine.dialect.name == "postgresql":  # explicit ids leave the sequences behind
            for name in SEED_TABLES:
                conn.execute(
                    text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), COALESCE(MAX(id), 1)) FROM {name}")
                )
    return len(statements)
