"""The kinds of source, by the `kind` of their source files: every module of this package that defines a
`SourceKind` subclass with a `name` is one (modules whose names start with `_` are helpers). Adding a kind is adding
a module here (plus its tests and a source file); nothing else names it. See docs/KINDS.md.

Reading a source file (`load_source`) lives here, above the kinds, since each kind checks its own settings."""

from __future__ import annotations

import importlib
import pkgutil
import tomllib
from pathlib import Path

from tpsdb import config
from tpsdb.kinds.base import Archive, KindSettingsError, Post, SourceKind
from tpsdb.sources import COMMON_KEYS, SourceFileError, SourceSpec

__all__ = ["Archive", "KindSettingsError", "Post", "SourceKind", "kind_for", "kind_names", "load_source", "load_sources",
           "registry"]

_REGISTRY: dict[str, type[SourceKind]] = {}


def registry() -> dict[str, type[SourceKind]]:
    """Every kind by name, the package's modules imported on first use (the CLI stays quick to start)."""
    if not _REGISTRY:
        for module in pkgutil.iter_modules(__path__):
            if not module.name.startswith("_") and module.name != "base":
                importlib.import_module(f"{__name__}.{module.name}")
        _collect(SourceKind)
    return _REGISTRY


def _collect(cls: type) -> None:
    for sub in cls.__subclasses__():
        name = getattr(sub, "name", None)
        if isinstance(name, str) and name:
            if _REGISTRY.get(name, sub) is not sub:
                raise RuntimeError(f"two kinds are named {name!r}: {_REGISTRY[name].__module__}, {sub.__module__}")
            _REGISTRY[name] = sub
        _collect(sub)


def kind_names() -> list[str]:
    return sorted(registry())


def kind_for(spec: SourceSpec) -> SourceKind:
    """The kind that serves this source file, for one run."""
    return registry()[spec.kind](spec)


# ------------------------------------------------------------------------------------------ source files
def load_source(path: Path) -> SourceSpec:
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
