"""Reading record files: records are parsed and validated in worker processes while this one writes.

Validation (Pydantic + the six-field checks) costs more per record than the write; on two cores, doing them side
by side nearly halves `tpsdb add` on large files. Small files stay in one process.

A JSONL file stays bytes, mapped from the file rather than read: it is cut into ranges that end on a newline, and
each worker splits and parses its own ranges. The writer neither decodes nor splits 100,000 lines before the first
record is stored, and its memory does not grow with the file.
"""

from __future__ import annotations

import codecs
import gc
import json
import mmap
import multiprocessing
import os
import re
import stat
import sys
import threading
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from datetime import datetime, timezone
from itertools import islice
from pathlib import Path
from typing import Iterator, NamedTuple

from .record import RecordFileError
from .store import Prepared, prepare, prepare_json

RANGE_BYTES = 1 << 20  # JSONL bytes per task (~1,500 records of llama-bench size): cheap to send, quick to start
RANGE_ITEMS = 1500  # the same for the items of a JSON array
PARALLEL_MIN_BYTES = 2_000_000  # below this, starting two processes costs more than it saves
# One core for the writer, the others for validation; at least two workers, since validation is the larger share
# (on two cores the writer and two niced workers share them); more than four would wait on the writer anyway.
WORKERS = max(2, min(4, (os.cpu_count() or 2) - 1))
IN_FLIGHT = 3 * WORKERS  # ranges handed out ahead of the writer: enough that no worker waits for the next one
# Workers yield the CPU to the writer: the writer alone is the pace of an add, and at equal priority three busy
# processes on two cores slowed its inserts by half (measured with bench/ingest.py).
WORKER_NICENESS = 10

# What a worker reads: set before the pool starts, so that a forked worker shares the file instead of receiving it.
_name = ""
_data: bytes | mmap.mmap = b""  # a JSONL file
_items: list | None = None  # or the items of a JSON document
_bandwidths: dict[str, float] = {}
_models: dict = {}  # model name -> record.ModelFacts, for the ceiling check of a mixture of experts


def _load(name: str, data: bytes | mmap.mmap, items: list | None, bandwidths: dict[str, float],
          models: dict | None = None) -> None:
    global _name, _data, _items, _bandwidths, _models
    _name, _data, _items, _bandwidths, _models = name, data, items, bandwidths, models or {}


def _start_worker(parent: int, *what_to_read) -> None:
    _load(*what_to_read)
    os.nice(WORKER_NICENESS)
    gc.disable()  # records hold no reference cycles: the collector would only rescan them
    threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent: int) -> None:
    """A worker whose writer was killed (kill -9, the OOM killer) would wait for work forever: it leaves too."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)


# A file of records holds objects: anything else means it is not one (stored, it would be a junk rejection row).
_NOT_A_RECORD = "not a JSON object"


def _prepare_range(start: int, stop: int) -> tuple[list[tuple], int]:
    """Records start..stop (bytes of a JSONL file, or items of a JSON document) prepared, as plain tuples whose
    equal refs are one object: they cross the process boundary at half the pickling cost of Prepared tuples
    (measured: 2.6 against 5.5 µs per record). Each tuple ends with the record's place: its line's offset in the
    range (JSONL) or its item index; a line or item that is not a record is `(None, why, None, None, place)`.
    Also returns how many lines the range holds, from which the reader numbers the lines of the next one."""
    today = datetime.now(timezone.utc).date()  # once per range rather than once per record
    prepared = []
    if _items is None:
        # split on b"\n" only: a JSON string may hold U+2028, which str.splitlines() would take for a line break
        lines = _data[start:stop].split(b"\n")
        for offset, line in enumerate(lines):
            if not line or line.isspace():
                continue
            try:
                if line[:1] != b"{" and not line.lstrip().startswith(b"{"):  # 42, null, [...]: not a record
                    json.loads(line)
                    prepared.append((None, _NOT_A_RECORD, None, None, offset))
                    continue
                key, reasons, columns, refs = prepare_json(line, bandwidth_of=_bandwidths.get, model_of=_models.get,
                                                           today=today)
            except (ValueError, RecursionError) as error:  # not JSON, not UTF-8, too deep, a number too long
                prepared.append((None, _unreadable(error), None, None, offset))
                continue
            prepared.append((key, reasons, columns, refs, offset))
        line_count = len(lines) - 1  # a range ends just after a newline, or at the end of the file
    else:
        for index, candidate in enumerate(_items[start:stop], start):
            if not isinstance(candidate, dict):
                prepared.append((None, _NOT_A_RECORD, None, None, index))
                continue
            try:
                prepared.append((*prepare(candidate, bandwidth_of=_bandwidths.get, model_of=_models.get, today=today),
                                 index))
            except RecursionError:  # the candidate, kept whole in a rejection row, would be too deep to store
                prepared.append((None, _TOO_DEEP, None, None, index))
        line_count = 0
    shared: dict[tuple, tuple] = {}
    return [(key, reasons, columns, refs and tuple([shared.setdefault(ref, ref) for ref in refs]), place)
            for key, reasons, columns, refs, place in prepared], line_count


_TOO_DEEP = "nested too deeply"


def _unreadable(error: ValueError | RecursionError) -> str:
    """Why json.loads could not read a text."""
    if isinstance(error, json.JSONDecodeError):
        return f"not JSON ({error.msg})"
    if isinstance(error, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(error, RecursionError):
        return _TOO_DEEP
    return "not JSON (a number too long to read)"  # more than 4,300 digits (sys.get_int_max_str_digits)


@contextmanager
def mapped(path: Path) -> Iterator[bytes | mmap.mmap]:
    """The bytes of a file: a large regular file mapped (read by the page, shared with forked workers), anything
    else read whole: `-` (standard input), a pipe, a FIFO, /dev/stdin, <(…), whose size says nothing, and a small
    file. Raises OSError; RecordFileError when the file changed while it was read."""
    if str(path) == "-":
        yield sys.stdin.buffer.read()
        return
    with path.open("rb") as file:
        before = os.fstat(file.fileno())
        if not stat.S_ISREG(before.st_mode):
            yield file.read()
            return
        try:
            if before.st_size < PARALLEL_MIN_BYTES:
                # Read rather than mapped: a map gains nothing at this size, and a file truncated under a map kills
                # the process that reads it (SIGBUS) before any error can be reported.
                yield file.read()
            else:
                with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    yield data
        except RecordFileError:
            _refuse_if_changed(path, file, before)  # the change is the cause, not the broken line it made
            raise
        _refuse_if_changed(path, file, before)


def _refuse_if_changed(path: Path, file, before: os.stat_result) -> None:
    after = os.fstat(file.fileno())
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise RecordFileError(_CHANGED.format(path)) from None


# The records read may mix two versions of the file (or miss its end): refuse them all.
_CHANGED = "{}: the file changed while it was read (truncated or rewritten by another process)"
_WORKER_DIED = ("{}: a worker process reading the file died: the file was truncated or changed meanwhile, "
                "or the worker was killed")


_NON_SPACE = re.compile(rb"\S")


def _document_items(name: str, data: bytes | mmap.mmap, start: int) -> list | None:
    """The items of a file that holds one JSON value (an object, or a list of them); None for JSONL.
    `start`: where the text begins (after a byte-order mark)."""
    first = _NON_SPACE.search(data, start)
    if first is None:
        return []
    newline = data.find(b"\n", first.start())
    if data[first.start():first.start() + 1] != b"[" and newline != -1 and _NON_SPACE.search(data, newline):
        try:
            json.loads(data[first.start():newline])
            return None  # a whole value on the first line, and more lines: JSONL
        except (ValueError, RecursionError):
            pass  # a value written over several lines
    try:
        value = json.loads(data[start:].decode("utf-8"))
    except UnicodeDecodeError:
        raise RecordFileError(f"{name}: not UTF-8 text") from None
    except json.JSONDecodeError as error:
        if _second_line_is_a_record(data, newline):
            return None  # JSONL whose first line is broken: its other lines are still read
        raise RecordFileError(f"{name}:{error.lineno}: not JSON ({error.msg})") from None
    except (ValueError, RecursionError) as error:
        raise RecordFileError(f"{name}: {_unreadable(error)}") from None
    return value if isinstance(value, list) else [value]


def _second_line_is_a_record(data: bytes | mmap.mmap, newline: int) -> bool:
    if newline == -1:
        return False
    second = _NON_SPACE.search(data, newline)
    if second is None or data[second.start():second.start() + 1] != b"{":
        return False
    end = data.find(b"\n", second.start())
    try:
        return isinstance(json.loads(data[second.start():None if end == -1 else end]), dict)
    except ValueError:
        return False


def _line_ranges(data: bytes | mmap.mmap, start: int) -> list[tuple[int, int]]:
    ranges = []
    while start < len(data):
        newline = data.find(b"\n", start + RANGE_BYTES)
        stop = len(data) if newline == -1 else newline + 1
        ranges.append((start, stop))
        start = stop
    return ranges


class Read(NamedTuple):
    """One record of a file as read: where it is, and either its validation or why it is not a record."""

    name: str
    line: int  # JSONL: its line in the file, from 1; 0 for the items of a JSON document
    item: int  # a JSON document: its place in the list, from 1
    prepared: Prepared | None  # None: not a record
    unreadable: str | None = None  # why not ("not JSON (…)", "not a record (a JSON object)")

    @property
    def where(self) -> str:
        """`FILE:LINE` for a line of a JSONL file, `FILE[N]` for the Nth record of a JSON document (both from 1)."""
        return f"{self.name}:{self.line}" if self.line else f"{self.name}[{self.item}]"


def read_records(name: str, data: bytes | mmap.mmap, bandwidths: dict[str, float],
                 models: dict | None = None) -> Iterator[Read]:
    """Every record of a JSON or JSONL file, validated, in file order (worker processes for large files), with
    its place. A line or item that is not a record is read too (prepared None), so that `validate` reports them
    all; a file that is one broken JSON document raises RecordFileError.

    The one reader of record files (`add` and `validate`): one JSON value (an object or a list), else JSONL,
    whose blank lines are skipped. A UTF-8 byte-order mark (written by some Windows editors) is skipped.
    """
    start = len(codecs.BOM_UTF8) if data[:len(codecs.BOM_UTF8)] == codecs.BOM_UTF8 else 0
    items = _document_items(name, data, start)
    if items is None:
        ranges = _line_ranges(data, start)
    else:
        ranges = [(start, min(start + RANGE_ITEMS, len(items))) for start in range(0, len(items), RANGE_ITEMS)]
    if len(data) < PARALLEL_MIN_BYTES or (os.cpu_count() or 1) < 2:
        _load(name, data, items, bandwidths, models)
        yield from _numbered(name, items is None, (_prepare_range(*r) for r in ranges))
        return
    fork = "fork" in multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if fork else None)
    shared = data if fork or isinstance(data, bytes) else data[:]  # a map is inherited by fork, never pickled
    try:
        with ProcessPoolExecutor(max_workers=WORKERS, mp_context=context, initializer=_start_worker,
                                 initargs=(os.getpid(), name, shared, items, bandwidths, models)) as pool:
            yield from _numbered(name, items is None, _in_order(pool, ranges))
    except BrokenProcessPool:
        # A worker died: reading a mapped file that was truncated meanwhile ends it with SIGBUS.
        raise RecordFileError(_WORKER_DIED.format(name)) from None


def _numbered(name: str, jsonl: bool, results) -> Iterator[Read]:
    first_line = 1  # of the current range
    for rows, line_count in results:
        for key, reasons, columns, refs, place in rows:
            line, item = (first_line + place, 0) if jsonl else (0, place + 1)
            if key is None:
                yield Read(name, line, item, None, reasons)
            else:
                yield Read(name, line, item, Prepared(key, reasons, columns, refs))
        first_line += line_count


def _in_order(pool: ProcessPoolExecutor, ranges: list[tuple[int, int]]) -> Iterator[tuple[list[tuple], int]]:
    """The ranges' results in order, with at most IN_FLIGHT ranges handed out: pool.map would hand out all of
    them at once, and the results of a fast worker would pile up in memory while the writer catches up."""
    ranges_left = iter(ranges)
    pending = deque(pool.submit(_prepare_range, *r) for r in islice(ranges_left, IN_FLIGHT))
    while pending:
        result = pending.popleft().result()
        for r in islice(ranges_left, 1):
            pending.append(pool.submit(_prepare_range, *r))
        yield result
