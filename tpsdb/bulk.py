"""Reading record files: records are parsed and validated in worker processes while this one writes.

Validation (Pydantic + the six-field checks) costs more per record than the write; on two cores, doing them side
by side nearly halves `tpsdb add` on large files. Small files stay in one process.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from itertools import chain
from typing import Iterator

from .record import RecordFileError
from .store import Prepared, prepare, prepare_json

CHUNK = 2000  # records per task: large enough that sending results stays cheap per record
PARALLEL_MIN = 5000  # below this, starting a process costs more than it saves
# Workers yield the CPU to the writer: the writer alone is the pace of an add, and at equal priority three busy
# processes on two cores slowed its inserts by half (measured with bench/ingest.py).
WORKER_NICENESS = 10

# What a worker reads: set before the pool starts, so that a forked worker shares the text instead of receiving it.
_name = ""
_items: list = []
_is_jsonl = True
_bandwidths: dict[str, float] = {}


def _load(name: str, items: list, is_jsonl: bool, bandwidths: dict[str, float], niceness: int = 0) -> None:
    global _name, _items, _is_jsonl, _bandwidths
    _name, _items, _is_jsonl, _bandwidths = name, items, is_jsonl, bandwidths
    if niceness:
        os.nice(niceness)


def _prepare_range(start: int, stop: int) -> list[Prepared]:
    if not _is_jsonl:
        return [prepare(candidate, bandwidth_of=_bandwidths.get) for candidate in _items[start:stop]]
    out = []
    for lineno, line in enumerate(_items[start:stop], start + 1):
        if not line or line.isspace():
            continue
        try:
            out.append(prepare_json(line, bandwidth_of=_bandwidths.get))
        except json.JSONDecodeError as error:
            raise RecordFileError(f"{_name}:{lineno}: not JSON ({error.msg})") from None
    return out


def prepared_records(name: str, text: str, bandwidths: dict[str, float]) -> Iterator[Prepared]:
    """Every record of a JSON or JSONL text, validated, in file order (worker processes for large files).

    The one reader of record files (`add` and `validate`): one JSON value (an object or a list), else JSONL,
    whose blank lines are skipped; a line that is not JSON refuses the whole file, naming the line.
    """
    try:
        data = json.loads(text) if text.strip() else []
        items, is_jsonl = (data if isinstance(data, list) else [data]), False
    except json.JSONDecodeError as error:
        if text.lstrip().startswith("["):
            raise RecordFileError(f"{name}:{error.lineno}: not JSON ({error.msg})") from None
        items, is_jsonl = text.splitlines(), True
    ranges = [(start, min(start + CHUNK, len(items))) for start in range(0, len(items), CHUNK)]
    if len(items) < PARALLEL_MIN or (os.cpu_count() or 1) < 2:
        _load(name, items, is_jsonl, bandwidths)
        yield from chain.from_iterable(_prepare_range(*r) for r in ranges)
        return
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with ProcessPoolExecutor(max_workers=2, mp_context=context, initializer=_load,
                             initargs=(name, items, is_jsonl, bandwidths, WORKER_NICENESS)) as pool:
        yield from chain.from_iterable(pool.map(_prepare_range, *zip(*ranges)))
