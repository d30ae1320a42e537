"""tpsdb: LLM inference speed figures (tokens per second) kept with their conditions and provenance.

The Python API (tpsdb.api, docs/API.md) is exported here: `tpsdb.open_database(...)`, `tpsdb.add(...)`… It is
loaded on first use, so that a module of the package imported alone (tpsdb.record) does not load the database
layer with it."""

from __future__ import annotations

from .version import __version__ as __version__

# Named unlike the package's modules (tpsdb.ingest, tpsdb.refresh, tpsdb.query): once a module is imported it is
# an attribute of the package, and would hide a function of the same name.
__all__ = ["ApiError", "BusyError", "add", "build_tables", "create_database", "import_peer", "ingest_files",
           "load_reference", "load_sources", "open_database", "refresh_sources", "reparse", "run_query", "source_specs", "withdraw"]


def __getattr__(name: str):
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'tpsdb' has no attribute {name!r}")
