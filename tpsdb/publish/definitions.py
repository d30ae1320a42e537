"""Table definitions: one TOML file per published table in tables/, so a user adds a table without code.

A definition names a table kind (what one row is, which columns it has) and its parameters: the conditions it holds
fixed (`[fixed]`, matched against the `measurement_full` view) and the rule that picks one figure for a cell when
several validated measurements qualify (`pick`). Example (tables/machines.toml):

    kind = "machines"
    order = 1
    title = "Table 1. One model file, one test, many machines"
    pick = "latest"

    [fixed]
    model = "Llama 2 7B"
    quantization = "Q4_0"
    software = "llama.cpp"
    phase = "generation"
    prompt_tokens = 0
    generated_tokens = 128
    context_depth = 0
    users = 1
    figure = "per_user"

A value in `[fixed]` may also be a list (any of these values). Keys the loader does not know are an error, so a typo
never silently widens a table.

The common keys are checked here; what a kind adds (the [fixed] keys it needs or varies, its layout keys) is its
`Layout`, declared in its own module under tpsdb/publish/kinds/ and registered here (`register`, `registered_kinds`, `kind_of`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .. import config
from ..vocab import Figure, Phase, values

PICKS = ("latest", "best", "median")

# What each pick rule means, as printed under every table that uses it.
PICK_TEXT = {
    "latest": "the figure of the most recent software version: the latest published figure, then the highest build "
              "number",
    "best": "the highest figure",
    "median": "the median figure (the lower of the two middle ones when their number is even, so that the cell is "
              "always one real measurement, never an average)",
}
TIES_TEXT = "Ties go to the fewest users, then the shortest context, then the figure stored last."

# [fixed] keys: each is matched against the measurement_full column of the same name.
FIXED_COLUMNS = ("hardware", "model", "quantization", "software", "software_version", "phase", "prompt_tokens",
                 "generated_tokens", "context_depth", "users", "figure")
_INT_KEYS = {"prompt_tokens", "generated_tokens", "context_depth", "users"}
_ENUMS = {"phase": values(Phase), "figure": values(Figure)}

_COMMON = {"kind", "order", "title", "description", "pick", "pick_reason", "fixed", "name"}


class DefinitionError(ValueError):
    """A table definition that cannot be used, explained with its file and key."""


# ------------------------------------------------------------------------------------------ the kinds
@dataclass(frozen=True)
class Layout:
    """What a kind's definition says beyond the common keys, checked when the definition is loaded."""

    required: tuple[str, ...] = ()  # [fixed] keys that must be given
    forbidden: tuple[str, ...] = ()  # [fixed] keys that must not be: what the rows or columns vary
    keys: frozenset[str] = frozenset()  # the optional layout keys the kind understands (rows, columns, limit…)
    row_type: type = str  # what `rows` lists: hardware names, versions, programs (str) or user counts (int)
    default_columns: tuple[str, ...] = ()
    baseline: bool = False  # the kind compares its columns with one of them (`baseline`, the first by default)
    check: Callable[[dict, tuple, str], None] | None = None  # (fixed, columns, where): the kind's own rules


@dataclass(frozen=True)
class TableKind:
    """One kind of table: its name, its place among the kinds, how it is built and its layout. Each lives in one
    module of tpsdb/publish/kinds/, found there and registered by that package."""

    name: str
    order: int  # where the kind stands when the kinds are listed
    build: Callable[..., Any]  # (Connection, Definition) -> tables.Table
    layout: Layout


_KINDS: dict[str, TableKind] = {}


def register(kind: TableKind) -> None:
    if kind.name in _KINDS and _KINDS[kind.name] is not kind:
        raise ValueError(f"table kind {kind.name!r} is registered twice")
    _KINDS[kind.name] = kind


def registered_kinds() -> list[TableKind]:
    """Every registered kind, in their order."""
    return sorted(_KINDS.values(), key=lambda k: (k.order, k.name))


def kind_of(name: str) -> TableKind:
    return _KINDS[name]


@dataclass(frozen=True)
class Definition:
    name: str
    kind: str
    title: str
    description: str = ""
    order: int = 1000
    pick: str = "latest"
    pick_reason: str = ""
    fixed: dict[str, Any] = field(default_factory=dict)
    rows: tuple = ()  # explicit rows, in this order (hardware names, versions, software names or user counts)
    columns: tuple[str, ...] = ()  # quantization formats (quantization, versions kinds)
    baseline: str | None = None  # the format speed-ups and size ratios are relative to (quantization kind)
    require_bandwidth: bool = False  # machines/ceiling: leave out machines whose bandwidth is unknown
    limit: int | None = None  # sources/spread: at most this many rows
    path: Path | None = None

    @property
    def pick_text(self) -> str:
        return PICK_TEXT[self.pick]


def _check_scalar(key: str, value: Any, where: str) -> Any:
    if key in _INT_KEYS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise DefinitionError(f"{where}: fixed.{key} must be a non-negative integer, not {value!r}")
    elif not isinstance(value, str) or not value.strip():
        raise DefinitionError(f"{where}: fixed.{key} must be a non-empty string, not {value!r}")
    if key in _ENUMS and value not in _ENUMS[key]:
        raise DefinitionError(f"{where}: fixed.{key} = {value!r} is not one of {', '.join(_ENUMS[key])}")
    return value


def definition_from_dict(data: dict, name: str, where: str = "<definition>", path: Path | None = None) -> Definition:
    """Check one definition (as read from TOML) and return it; every problem names the key at fault."""
    registered = registered_kinds()
    unknown = sorted(set(data) - _COMMON - set().union(*(k.layout.keys for k in registered)))
    if unknown:
        raise DefinitionError(f"{where}: unknown key {unknown[0]!r}")
    kind = data.get("kind")
    table_kind = _KINDS.get(kind) if isinstance(kind, str) else None
    if table_kind is None:
        raise DefinitionError(f"{where}: kind = {kind!r} is not one of {', '.join(k.name for k in registered)}")
    layout = table_kind.layout
    misplaced = sorted(k for k in set(data) - _COMMON if k not in layout.keys)
    if misplaced:
        raise DefinitionError(f"{where}: key {misplaced[0]!r} does not apply to a {kind} table")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise DefinitionError(f"{where}: title missing")
    pick = data.get("pick", "latest")
    if pick not in PICKS:
        raise DefinitionError(f"{where}: pick = {pick!r} is not one of {', '.join(PICKS)}")

    fixed_raw = data.get("fixed", {})
    if not isinstance(fixed_raw, dict):
        raise DefinitionError(f"{where}: [fixed] must be a table")
    fixed: dict[str, Any] = {}
    for key, value in fixed_raw.items():
        if key not in FIXED_COLUMNS:
            raise DefinitionError(f"{where}: unknown key fixed.{key} (known: {', '.join(FIXED_COLUMNS)})")
        if isinstance(value, list):
            if not value:
                raise DefinitionError(f"{where}: fixed.{key} is an empty list")
            fixed[key] = tuple(_check_scalar(key, v, where) for v in value)
        else:
            fixed[key] = _check_scalar(key, value, where)
    for key in layout.required:
        if key not in fixed:
            raise DefinitionError(f"{where}: a {kind} table needs fixed.{key}")
    for key in layout.forbidden:
        if key in fixed:
            raise DefinitionError(f"{where}: a {kind} table varies {key} across its rows or columns; "
                                  f"remove fixed.{key}")

    rows = data.get("rows", [])
    if not isinstance(rows, list):
        raise DefinitionError(f"{where}: rows must be a list")
    if any(not isinstance(r, layout.row_type) or isinstance(r, bool) for r in rows):
        raise DefinitionError(f"{where}: rows must be a list of {'integers' if layout.row_type is int else 'strings'}")
    columns = data.get("columns", list(layout.default_columns))
    if not isinstance(columns, list) or any(not isinstance(c, str) or not c for c in columns):
        raise DefinitionError(f"{where}: columns must be a list of quantization format names")
    if layout.check is not None:
        layout.check(fixed, tuple(columns), where)
    baseline = data.get("baseline", columns[0] if layout.baseline and columns else None)
    if layout.baseline and baseline not in columns:
        raise DefinitionError(f"{where}: baseline {baseline!r} is not one of the columns")
    limit = data.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise DefinitionError(f"{where}: limit must be a positive integer")
    order = data.get("order", 1000)
    if isinstance(order, bool) or not isinstance(order, int):
        raise DefinitionError(f"{where}: order must be an integer")
    require_bandwidth = data.get("require_bandwidth", False)
    if not isinstance(require_bandwidth, bool):
        raise DefinitionError(f"{where}: require_bandwidth must be true or false")
    for key in ("description", "pick_reason"):
        if not isinstance(data.get(key, ""), str):
            raise DefinitionError(f"{where}: {key} must be a string")
    return Definition(
        name=name, kind=kind, title=title.strip(), description=data.get("description", "").strip(), order=order,
        pick=pick, pick_reason=data.get("pick_reason", "").strip(), fixed=fixed, rows=tuple(rows),
        columns=tuple(columns), baseline=baseline, require_bandwidth=require_bandwidth, limit=limit, path=path,
    )


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def load_definition(path: Path) -> Definition:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise DefinitionError(f"{path}: not valid TOML ({error})") from error
    except OSError as error:
        raise DefinitionError(f"{path}: {error.strerror}") from error
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not _NAME.match(name):
        raise DefinitionError(f"{path}: name {name!r} must be letters, digits, '-' or '_' (it names the output files)")
    return definition_from_dict(data, name, str(path), path)


def load_definitions(directory: Path = config.TABLES_DIR) -> list[Definition]:
    """Every tables/*.toml, in their `order` (then name). Two files may not give the same name."""
    if not directory.is_dir():
        raise DefinitionError(f"{directory}: no such directory of table definitions")
    definitions = [load_definition(path) for path in sorted(directory.glob("*.toml"))]
    seen: dict[str, Path | None] = {}
    for d in definitions:
        if d.name in seen:
            raise DefinitionError(f"{d.path}: table name {d.name!r} is already used by {seen[d.name]}")
        seen[d.name] = d.path
    return sorted(definitions, key=lambda d: (d.order, d.name))


def select(definitions: list[Definition], names: list[str] | None) -> list[Definition]:
    """The definitions named (in the order given), or all; an unknown name is an error listing the known ones."""
    if not names:
        return definitions
    by_name = {d.name: d for d in definitions}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise DefinitionError(f"no table named {missing[0]!r} (known: {', '.join(by_name) or 'none'})")
    return [by_name[n] for n in dict.fromkeys(names)]
