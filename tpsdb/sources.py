"""Source files: one declarative TOML file per source in sources/ (what to read, how often, under which licence,
and the fixed protocol the source states). Adding a source of a known kind is adding a file, not code; what each
kind accepts is the kind's own (tpsdb.kinds)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from . import config

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


def load_source(path: Path) -> SourceSpec:
    from .kinds import registry

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise SourceFileError(f"{path}: not valid TOML ({error})") from error
    where = path.name
    for name in ("key", "url", "kind"):
        if not data.get(name):
            raise SourceFileError(f"{where}: {name}: missing")
    kind = registry().get(data["kind"])
    if kind is None:
        raise SourceFileError(f"{where}: kind: {data['kind']!r} is not one of {', '.join(sorted(registry()))}")
    interval = data.get("refresh_interval_hours", 24)
    if not isinstance(interval, (int, float)) or isinstance(interval, bool) or interval <= 0:
        raise SourceFileError(f"{where}: refresh_interval_hours: not a positive number")
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise SourceFileError(f"{where}: enabled: not true or false")
    spec = SourceSpec(key=data["key"], url=data["url"], kind=data["kind"], title=data.get("title"),
                      licence=data.get("licence"), refresh_interval_hours=float(interval),
                      protocol=data.get("protocol", {}), enabled=enabled,
                      settings={k: v for k, v in data.items() if k not in COMMON_KEYS}, directory=path.parent)
    problem = kind.check(spec)
    if problem:
        raise SourceFileError(f"{where}: {problem}")
    return spec


def load_sources(directory: Path | None = None) -> dict[str, SourceSpec]:
    directory = directory or config.sources_dir()
    specs = [load_source(path) for path in sorted(directory.glob("*.toml"))]
    keys = [s.key for s in specs]
    duplicates = {k for k in keys if keys.count(k) > 1}
    if duplicates:
        raise SourceFileError(f"{directory}: key used by more than one file: {', '.join(sorted(duplicates))}")
    return {s.key: s for s in specs}
