"""Dataset readers: one module per row schema of a published benchmark dataset (kyuz0's results.json, lhl's
results.jsonl, InferenceX's API answers…), each turning one file's bytes into candidate records.

A reader module in this package defines
    NAME: str                     the `format` value a source file names it by (unique)
    SOFTWARE: str | None          the software its rows ran, when one tool made them all (None: per row)
    def read(data: bytes, ctx: FileContext) -> list[Candidate]
and nothing in the engine names it: `reader(name)` finds it by discovery. A reader is pure (no network, no
database, no clock): the same bytes and context give the same candidates, in the same order, with stable slots
(a row's own run id or its place in the file), so a refresh of a newer version of the file supersedes nothing
that did not change. A row that cannot give a figure with all six conditions is still a candidate, with the
field and the reason in `reasons` (it becomes a rejection); nothing is dropped silently.

Syntax (JSON, JSONL, notebook cells) is read by the helpers here and in tpsdb.collect; the row schema is the
reader's."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tpsdb.collect.extract import Candidate


@dataclass(frozen=True)
class FileContext:
    """Where one file's bytes come from: what every candidate of it cites."""

    url: str  # the file's public address at its commit (…/blob/<commit>/<path>), or the API answer's URL
    path: str  # the file's path in its repository (a reader may read a machine or a GPU count from the name)
    retrieved_at: str  # ISO date the bytes were fetched (or copied)
    published_at: str | None = None  # ISO date of the commit (or of the API answer), when known
    # Files of the same dataset a row refers to (system_info.json, model-map.json, a benchmark config), by path.
    siblings: Mapping[str, bytes] = field(default_factory=dict)


Reader = Callable[[bytes, FileContext], "list[Candidate]"]


def _modules() -> dict[str, ModuleType]:
    found: dict[str, ModuleType] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        name = getattr(module, "NAME", None)
        if isinstance(name, str) and callable(getattr(module, "read", None)):
            if name in found:
                raise RuntimeError(f"two dataset readers are named {name!r}")
            found[name] = module
    return found


def names() -> list[str]:
    """The `format` names of every dataset reader, sorted."""
    return sorted(_modules())


def reader(name: str) -> ModuleType:
    """The dataset reader module named `name`; KeyError (naming the known ones) when there is none."""
    modules = _modules()
    if name not in modules:
        raise KeyError(f"{name!r} is not a dataset reader ({', '.join(sorted(modules)) or 'none'})")
    return modules[name]
