"""`tpsdb serve`: the database in Datasette, read-only, described by tpsdb/datasette/metadata.yml.

Datasette opens the SQLite file with read-only connections (`mode=ro`) and no write connection is ever asked for:
the metadata defines no writable canned query and no plugin is loaded. Read-only rather than `immutable=1`:
SQLite's immutable mode ignores the write-ahead log, so figures a refresh committed but not yet checkpointed into
the main file would be missing, and a server left running sees each refresh.
A PostgreSQL database is first copied into a SQLite snapshot (the seed tables), which is then served.
"""

from __future__ import annotations

import copy
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

METADATA = "metadata.yml"
# Arbitrary SELECTs are allowed (Datasette runs only SELECT/WITH/EXPLAIN, on a read-only connection), bounded in time
# and rows so that one visitor cannot hold the server.
SETTINGS = {"sql_time_limit_ms": 3000, "max_returned_rows": 2000, "allow_download": False,
            "allow_csv_stream": False,  # a streamed CSV would pass the row cap (review, 2026-12-01)
            "default_cache_ttl": 60, "num_sql_threads": 3}


class ServeError(Exception):
    """The database cannot be served (missing file, an unreadable metadata file)."""


def load_metadata() -> dict[str, Any]:
    """The project's Datasette metadata, keyed by the database name `tpsdb`."""
    text = resources.files("tpsdb.datasette").joinpath(METADATA).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def metadata_for(name: str) -> dict[str, Any]:
    """The metadata re-keyed for a database Datasette names `name` (the file's stem)."""
    metadata = copy.deepcopy(load_metadata())
    metadata["databases"] = {name: metadata["databases"]["tpsdb"]}
    metadata["source_url"] = f"/{name}/source_conformance"
    return metadata


def make_app(path: Path):
    """The Datasette ASGI app on the SQLite file `path`, read-only, with tpsdb's bounds (tpsdb.datasette.limits)."""
    from datasette.app import Datasette
    from datasette.plugins import pm

    from .datasette import limits

    if not pm.is_registered(limits):
        pm.register(limits, name="tpsdb-limits")

    if not path.is_file():
        raise ServeError(f"{path}: no such database file; create it with `tpsdb --db {path} init`")
    datasette = Datasette(files=[str(path)], metadata=metadata_for(path.stem), settings=SETTINGS)
    return reading_only(datasette.app())


def reading_only(app):
    """The ASGI app answering GET and HEAD only: nothing a visitor sends is ever a write (Datasette 0.65 also
    answers a POST to a read-only canned query with a crash, not a refusal)."""
    async def guarded(scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            await send({"type": "http.response.start", "status": 405,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"allow", b"GET, HEAD")]})
            await send({"type": "http.response.body", "body": b"read-only: GET and HEAD only\n"})
            return
        await app(scope, receive, send)
    return guarded


def sqlite_snapshot(engine, folder: Path) -> Path:
    """A SQLite copy of a (PostgreSQL) database's curated tables, for serving: its seed loaded into a new file."""
    from . import db

    seed = folder / "seed.sql"
    seed.write_text(db.dump_seed(engine), encoding="utf-8")
    path = folder / "tpsdb.sqlite"
    copy_engine = db.create_database(str(path))
    db.init_database(copy_engine, seed)
    copy_engine.dispose()
    return path


def serve(path: Path, host: str = "127.0.0.1", port: int = 8001) -> None:
    """Serve until interrupted."""
    import uvicorn

    uvicorn.run(make_app(path), host=host, port=port, log_level="warning")


def serve_snapshot(engine, host: str, port: int) -> None:
    with tempfile.TemporaryDirectory(prefix="tpsdb-serve-") as folder:
        serve(sqlite_snapshot(engine, Path(folder)), host, port)
