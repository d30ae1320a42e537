"""Source files: one declarative TOML file per source in sources/ (what to read, how often, under which licence,
and the fixed protocol the source states). Adding a source of a known kind is adding a file, not code; what each
kind accepts is the kind's own (tpsdb.kinds).

This module holds what a source file is (SourceSpec); reading one, which asks the kinds what their settings mean,
is tpsdb.kinds.load_source / load_sources, above the kinds (this module sits below them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# The keys every source file may have; any other key belongs to its kind (SourceSpec.settings).
COMMON_KEYS = {"key", "url", "kind", "title", "licence", "refresh_interval_hours", "protocol", "enabled"}


class SourceFileError(ValueError):
    pass


@dataclass(frozen=True)
class SourceSpec:
    key: str
    url: str
    kind: str
    title: str | None
    licence: str | None
    refresh_interval_hours: float
    protocol: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)  # the kind's own keys of the file
    enabled: bool = True  # False: `refresh --due` leaves it out (naming it still refreshes it)
    # the directory of the source file: a kind may read the source files beside it (a peer's threads' protocols)
    directory: Path | None = field(default=None, compare=False)
