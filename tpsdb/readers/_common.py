"""What the dataset readers share: JSON read without a crash however deep, JSONL lines, the exact text of an
object inside a line (a figure's quote is the record as it stands in the file), a stable slot from a run's
identity, and the context every record cites."""

from __future__ import annotations

import hashlib
import json

from tpsdb.collect.extract import PostContext
from tpsdb.readers import FileContext

_DECODER = json.JSONDecoder()


def loads(text: str | bytes, where: str) -> object:
    """json.loads, with a document nested deeper than Python's JSON reader follows as a ValueError naming `where`
    (a reader's callers take a ValueError as "not a file of this schema"; a RecursionError would be a crash)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to read as JSON") from None


def raw_decode(text: str, position: int, where: str) -> tuple[object, int]:
    """JSONDecoder.raw_decode at `position`, too deep a value a ValueError naming `where` (as `loads`)."""
    try:
        return _DECODER.raw_decode(text, position)
    except RecursionError:
        raise ValueError(f"{where}: nested too deeply to read as JSON (at character {position})") from None


def jsonl_lines(text: str) -> list[str]:
    """The lines of a JSONL text, split at "\n" only (a "\r" before it dropped): str.splitlines would also split
    at U+2028, U+2029, \x1c… that a JSON string may hold raw, cutting one record in two."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def post_context(ctx: FileContext, protocol: dict | None = None) -> PostContext:
    """The provenance every candidate of this file carries: the file at its commit, its date, no author."""
    return PostContext(permalink=ctx.url, retrieved_at=ctx.retrieved_at, published_at=ctx.published_at,
                       author=None, protocol=protocol or {})


def member_span(line: str, key: str) -> str | None:
    """The exact text of the object `"key": {...}` inside one JSON line, or None when the key holds no object."""
    marker = f'"{key}":'
    at = line.find(marker)
    if at < 0:
        return None
    position = at + len(marker)
    while position < len(line) and line[position] in " \t":
        position += 1
    if not line.startswith("{", position):
        return None
    _, end = raw_decode(line, position, key)
    return line[position:end]


def run_slot(*identity) -> str:
    """A slot from what makes a run that run (not its place in the file): the same run read from another version
    of the file gets the same slot, so it is one figure however many versions repeat it."""
    text = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
    return "run:" + hashlib.sha256(text.encode()).hexdigest()[:20]
