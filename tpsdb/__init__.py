"""tpsdb: LLM inference speed figures (tokens per second) kept with their conditions and provenance.

The Python API (tpsdb.api, docs/API.md) is exported here: `tpsdb.open_database(...)`, `tpsdb.add(...)`… It is
loaded on first use, so that a module of the package imported alone (tpsdb.record) does not load the database
layer with it."""

from __future__ import annotations

from .version import __version__ as __version__

__all__ = ["ApiError", "BusyError", "add", "import_peer", "ingest", "load_reference", "open_database",
           "source_specs", "withdraw"]


def __getattr__(name: str):
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'tpsdb' has no attribute {name!r}")
