"""The kinds of source, by the `kind` of their source files: every module of this package that defines a
`SourceKind` subclass with a `name` is one (modules whose names start with `_` are helpers). Adding a kind is adding
a module here (plus its tests and a source file); nothing else names it. See docs/KINDS.md."""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

from tpsdb.kinds.base import Archive, KindSettingsError, Post, SourceKind

if TYPE_CHECKING:
    from tpsdb.sources import SourceSpec

__all__ = ["Archive", "KindSettingsError", "Post", "SourceKind", "kind_for", "kind_names", "registry"]

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
