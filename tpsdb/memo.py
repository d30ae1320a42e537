"""Memos for the pure readings of short texts (a table cell, a header, a device name) that a thread repeats.

A llama.cpp thread prints the same cells post after post ("pp512", "llama 7B Q4_0", "CUDA", one header shape):
their readings are pure functions of the text, so each is computed once per process. Only short texts are kept,
and only so many: a hostile post of huge or ever-new cells costs what it cost before, never memory.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Any, TypeVar

T = TypeVar("T")

SHORT = 200  # characters: a cell, a header, a device name; longer texts are read every time
ENTRIES = 4096  # per function: far more than the distinct cells of a thread


def short_text_memo(reading: Callable[[Any], T]) -> Callable[[Any], T]:
    """`reading` (a pure function of one text, or of a tuple of texts, whose answer is never changed in place),
    memoized for texts of at most SHORT characters in all. Anything else (another type, a longer text) is read
    every time."""
    memo = lru_cache(maxsize=ENTRIES)(reading)

    @wraps(reading)
    def read(text: Any) -> T:
        kind = type(text)
        if kind is str:
            if len(text) <= SHORT:
                return memo(text)
        elif kind is tuple and len(text) <= SHORT:
            try:
                size = len("".join(text))  # the texts' length in all; a tuple holding anything else is refused
            except TypeError:
                return reading(text)
            if size <= SHORT:
                return memo(text)
        return reading(text)

    read.cache_clear = memo.cache_clear  # type: ignore[attr-defined]
    read.cache_info = memo.cache_info  # type: ignore[attr-defined]
    return read
