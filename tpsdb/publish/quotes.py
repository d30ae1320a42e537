"""The header line of a quoted table row: a footnote quoting one row of a Markdown table ("| 512 | 32 | 81.11 |")
shows the header line of the table it came from, so a reader can tell which column holds the figure.

The header is read, never guessed, from the source's archived snapshot (the measurement's, else its post's): the
snapshot's text (or, for a JSON response such as GitHub's REST API, each text in it) is read line by line, and each
row of a table whose second line is a separator (|---|) is mapped to the table's first line. A row found under two
different headers, or not found (an HTML page, whose tables were rebuilt as rows when read), has no header: the
footnote says it is a row of the source's table instead. Each snapshot is parsed once (cached by its sha256).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator

from sqlalchemy import Connection, bindparam, text

_SEPARATOR = re.compile(r"^\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?$")  # GFM: one dash or more a cell
_AMBIGUOUS = ""  # a row seen under two different headers


def is_table_row(quote: str | None) -> bool:
    """One line that is a Markdown table row."""
    return bool(quote) and "\n" not in quote and quote.startswith("|") and quote.endswith("|")


def quote_headers(conn: Connection, quotes: dict[int, str]) -> dict[int, str]:
    """For measurement id -> its quote (table rows only), the header line of each row's table, where the
    measurement's snapshot holds that row under one header."""
    if not quotes:
        return {}
    statement = text("""SELECT m.id, s.id AS snapshot_id, s.sha256 FROM measurement m
                        LEFT JOIN post p ON p.id = m.post_id
                        JOIN snapshot s ON s.id = COALESCE(m.snapshot_id, p.snapshot_id)
                        WHERE m.id IN :ids""").bindparams(bindparam("ids", expanding=True))
    found: dict[int, str] = {}
    for measurement_id, snapshot_id, sha256 in conn.execute(statement, {"ids": sorted(quotes)}).all():
        if sha256 not in _HEADERS:
            if len(_HEADERS) >= 64:  # a snapshot's rows are the same whatever database holds it; keep a few
                _HEADERS.clear()
            body = conn.execute(text("SELECT body FROM snapshot WHERE id = :id"), {"id": snapshot_id}).scalar_one()
            _HEADERS[sha256] = _parse(body)
        if header := _HEADERS[sha256].get(quotes[measurement_id].strip()):
            found[measurement_id] = header
    return found


_HEADERS: dict[str, dict[str, str]] = {}  # snapshot sha256 -> each table row in it -> its table's header line


def _parse(body: bytes) -> dict[str, str]:
    headers: dict[str, str] = {}
    for document in _texts(body):
        for row, header in _rows_under_headers(document.splitlines()):
            headers[row] = header if headers.get(row, header) == header else _AMBIGUOUS
    return {row: header for row, header in headers.items() if header}


def _texts(body: bytes) -> Iterator[str]:
    decoded = body.decode("utf-8", errors="replace")
    try:
        data = json.loads(decoded)
    except (ValueError, RecursionError):  # not JSON, or nested too deeply to read as JSON: read as text
        yield decoded
        return
    yield from _strings(data)


def _strings(data) -> Iterator[str]:
    """Every text in a JSON value (order does not matter: a row under two headers is ambiguous either way); walked
    with a list, not recursion, so a deeply nested value cannot exhaust the stack."""
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _rows_under_headers(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    block: list[str] = []  # the table lines read so far, in a run of lines that start with |
    for line in lines:
        line = line.strip()
        if not line.startswith("|"):
            block = []
            continue
        block.append(line)
        if len(block) > 2 and _SEPARATOR.match(block[1]):
            yield line, block[0]
