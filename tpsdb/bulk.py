"""Reading record files: records are parsed and validated in worker processes while this one writes.

Validation (Pydantic + the six-field checks) and the writes cost about the same per record; on two cores,
doing them side by side nearly doubles `tpsdb add` on large files. Small files stay in one process.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from itertools import chain
from typing import Iterable, Iterator

from .record import RecordFileError
from .store import Prepared, prepare

CHUNK = 2000  # records per message to the worker: large enough that pickling stays cheap per record
PARALLEL_MIN = 5000  # below this, starting a process costs more than it saves

_bandwidths: dict[str, float] = {}


def _init_worker(bandwidths: dict[str, float]) -> None:
    global _bandwidths
    _bandwidths = bandwidths


def _prepare_lines(name: str, first_lineno: int, lines: list[str]) -> list[Prepared]:
    out = []
    for lineno, line in enumerate(lines, first_lineno):
        if not line.strip():
            continue
        try:
            candidate = json.loads(line)
        except json.JSONDecodeError as error:
            raise RecordFileError(f"{name}:{lineno}: not JSON ({error.msg})") from None
        out.append(prepare(candidate, bandwidth_of=_bandwidths.get))
    return out


def _prepare_items(items: list) -> list[Prepared]:
    return [prepare(candidate, bandwidth_of=_bandwidths.get) for candidate in items]


def prepared_records(name: str, text: str, bandwidths: dict[str, float]) -> Iterator[Prepared]:
    """Every record of a JSON or JSONL text, validated, in file order (worker processes for large files).

    The one reader of record files (`add` and `validate`): one JSON value (an object or a list), else JSONL,
    whose blank lines are skipped; a line that is not JSON refuses the whole file, naming the line.
    """
    try:
        data = json.loads(text) if text.strip() else []
        items = data if isinstance(data, list) else [data]
        chunks: Iterable = [(items[i:i + CHUNK],) for i in range(0, len(items), CHUNK)]
        work, size = _prepare_items, len(items)
    except json.JSONDecodeError as error:
        if text.lstrip().startswith("["):
            raise RecordFileError(f"{name}:{error.lineno}: not JSON ({error.msg})") from None
        lines = text.splitlines()
        chunks = [(name, i + 1, lines[i:i + CHUNK]) for i in range(0, len(lines), CHUNK)]
        work, size = _prepare_lines, len(lines)
    if size < PARALLEL_MIN or (os.cpu_count() or 1) < 2:
        _init_worker(bandwidths)
        yield from chain.from_iterable(work(*args) for args in chunks)
        return
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
    with ProcessPoolExecutor(max_workers=2, mp_context=context, initializer=_init_worker,
                             initargs=(bandwidths,)) as pool:
        yield from chain.from_iterable(pool.map(work, *zip(*chunks)))
