"""Faults that several layers name: raised by a kind or a format, told apart from a bug by the engine.

They live here, below every kind, so that the engine (tpsdb.refresh) can recognise a page fault without importing
the kind that raises it."""

from __future__ import annotations

__all__ = ["PageFormatError", "PeerFileError"]


class PageFormatError(ValueError):
    """The bytes are not the discussion page (or API answer) they should be: a bad page, never data."""


class PeerFileError(ValueError):
    """A peer file that cannot be read as its format: refused whole, naming the file and the record."""
