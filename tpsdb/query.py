"""Read-only SQL for users: the statement runs on a connection that cannot write, whatever it says."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError

from . import config
from .db import sqlite_path


class QueryError(Exception):
    pass


def run_readonly(sql: str, db: str | None = None) -> tuple[list[str], list[tuple]]:
    url = config.database_url(db)
    if url.startswith("sqlite"):
        path = sqlite_path(url) or ":memory:"
        try:
            # mode=ro: SQLite itself refuses every write, so no statement parsing is trusted for safety.
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        except sqlite3.OperationalError as error:
            raise QueryError(f"cannot open {path} read-only: {error} (run `tpsdb init` first?)") from error
        try:
            cursor = conn.execute(sql)
            columns = [d[0] for d in cursor.description or []]
            return columns, cursor.fetchall()
        except sqlite3.OperationalError as error:
            if "readonly" in str(error) or "read-only" in str(error):
                raise QueryError("query: refused, the database is opened read-only (no INSERT/UPDATE/DELETE/DDL)") from error
            raise QueryError(f"query: {error}") from error
        except sqlite3.Error as error:
            raise QueryError(f"query: {error}") from error
        finally:
            conn.close()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            result = conn.execute(text(sql))
            columns = list(result.keys())
            rows = [tuple(r) for r in result.fetchall()]
            conn.rollback()
            return columns, rows
    except DBAPIError as error:
        message = str(error.orig).strip().splitlines()[0]
        if "read-only" in message:
            raise QueryError("query: refused, the database is opened read-only (no INSERT/UPDATE/DELETE/DDL)") from error
        raise QueryError(f"query: {message}") from error
    finally:
        engine.dispose()


def _plain(value):
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return value


def render(columns: list[str], rows: list[tuple], fmt: str) -> str:
    rows = [tuple(_plain(v) for v in row) for row in rows]
    if fmt == "json":
        return json.dumps([dict(zip(columns, row)) for row in rows], ensure_ascii=False, indent=1)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows(rows)
        return out.getvalue().rstrip("\n")
    cells = [[("" if v is None else str(v)).replace("\n", " ") for v in row] for row in rows]
    widths = [min(60, max([len(c)] + [len(r[i]) for r in cells])) for i, c in enumerate(columns)]
    fit = lambda value, width: value if len(value) <= width else value[: width - 1] + "…"
    lines = ["  ".join(fit(c, w).ljust(w) for c, w in zip(columns, widths)).rstrip(),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(fit(v, w).ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines)
