"""`tpsdb serve`: the database in Datasette, read-only, described by tpsdb/datasette/metadata.yml.

Datasette opens the SQLite file with read-only connections (`mode=ro`) and no write connection is ever asked for:
the metadata defines no writable canned query and no plugin is loaded. Read-only rather than `immutable=1`:
SQLite's immutable mode ignores the write-ahead log, so figures a refresh committed but not yet checkpointed into
the main file would be missing, and a server left running sees each refresh.
A PostgreSQL database is first copied into a SQLite snapshot (the seed tables), which is then served.
"""

from __future__ import annotations

import copy
import errno
import logging
import signal
import socket
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
    """The Datasette ASGI app on the SQLite file `path`, read-only, with tpsdb's bounds (tpsdb.datasette.limits),
    answering GET and HEAD only and hiding Datasette's pages about the server itself."""
    from datasette.app import Datasette
    from datasette.plugins import pm

    from .datasette import limits

    if not pm.is_registered(limits):
        pm.register(limits, name="tpsdb-limits")

    if not path.is_file():
        raise ServeError(f"{path}: no such database file; create it with `tpsdb --db {path} init`")
    _no_rich_tracebacks()
    datasette = Datasette(files=[str(path)], metadata=metadata_for(path.stem), settings=SETTINGS)
    return reading_only(hiding_the_server(datasette.app()))


def _no_rich_tracebacks() -> None:
    """Datasette 0.65 prints every error it answers, a visitor's 404 or a query stopped at its time limit
    included, as a Rich traceback with the local variables (hundreds of lines each; review 2026-12-01, first use
    2, L10). Its own handler reads the module's `rich`; without it, a 500 (a bug) still prints its plain
    traceback, and a 4xx prints nothing."""
    import datasette.handle_exception

    datasette.handle_exception.rich = None


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


# Datasette's own pages under /-/ that a reader needs: its scripts and style sheets. The others describe the
# server: /-/databases gives the database file's absolute path, /-/versions the Python, SQLite and Datasette
# versions, /-/threads its threads, /-/settings, /-/plugins, /-/metadata… (review 2026-12-01, probe 2, L8).
_SERVER_PAGES_SHOWN = ("/-/static/", "/-/static-plugins/")


def hiding_the_server(app):
    """The ASGI app answering 404 for Datasette's pages about the server (its path, versions, threads…)."""
    async def hiding(scope, receive, send):
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if path.startswith("/-/") and not path.startswith(_SERVER_PAGES_SHOWN):
            await send({"type": "http.response.start", "status": 404,
                        "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
            await send({"type": "http.response.body", "body": b"not found\n"})
            return
        await app(scope, receive, send)
    return hiding


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


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else is done, so that a taken port is one clear error (not
    uvicorn's log line after a snapshot was built) and no other process can take it meanwhile."""
    try:
        return socket.create_server((host, port), family=_family(host), backlog=2048)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise ServeError(f"serve: port {port} on {host} is taken by another process; pass --port with a free "
                             "one") from error
        raise ServeError(f"serve: cannot listen on {host} port {port}: {error.strerror or error}") from error


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def serve(path: Path, listening: socket.socket) -> None:
    """Serve on the bound socket until interrupted."""
    import uvicorn

    config = uvicorn.Config(make_app(path), log_level="warning")
    logging.getLogger("uvicorn.access").setLevel(logging.INFO)  # one line per request, as a server log should
    # asyncio logs "socket.send() raised exception." for every write after a client left (60 lines for one
    # closed CSV download, first use 2, L10); the answer is lost either way
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    uvicorn.Server(config).run(sockets=[listening])


class _Stopped(BaseException):
    """SIGTERM arrived: unwinds the stack (so a temporary copy is removed), then the signal is raised again."""


def serve_snapshot(engine, listening: socket.socket) -> None:
    """Serve a SQLite copy of the database from a temporary folder, removed however the server stops: Ctrl-C, or
    SIGTERM (`kill`, systemd's stop), after which uvicorn re-raises the signal, whose default action ends the
    process without running any cleanup (review 2026-12-01, probe 2, L9)."""
    def stopped(signum, _frame):
        raise _Stopped(signum)

    previous = signal.signal(signal.SIGTERM, stopped)
    try:
        with tempfile.TemporaryDirectory(prefix="tpsdb-serve-") as folder:
            serve(sqlite_snapshot(engine, Path(folder)), listening)
    except _Stopped as stop:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(stop.args[0])  # ends as a SIGTERM'd process would, the folder already gone
    finally:
        signal.signal(signal.SIGTERM, previous)
