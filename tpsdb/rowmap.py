"""The record ↔ row mapping, declared once: which field of a record (format v1, tpsdb.record) is kept in which
table column, and how its value is converted on the way in and on the way out.

`Store.put` writes rows with it (`columns_of`, `refs_of`), and export and the store's refusals read records back
with it (`record_from`), so a field is added here once and flows both ways. The run-time values stay plain tuples
(cheap to pickle between the validating workers and the writer, tpsdb.bulk), in the order declared here; the two
functions that read a record for the store, which run once per record of a bulk add, read it with one
operator.attrgetter over the declared paths, so that declaring the mapping costs no speed.
"""

from __future__ import annotations

import json
from datetime import date
from operator import attrgetter
from typing import Any, Callable, NamedTuple


class Field(NamedTuple):
    """One record field and the column that keeps it."""

    path: str  # in the record, dotted: "source.via.title"
    table: str
    column: str
    to_row: Callable[[Any], Any] | None = None  # record value (validated) -> driver value; None: as it is
    from_row: Callable[[Any], Any] | None = None  # stored value -> record value; None: as it is


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day is not None else None


def _json_or_none(text: str | None) -> Any:
    return json.loads(text) if text else None


def _text(value: Any) -> str:
    return str(value)  # an enum member as its plain value: what both drivers store alike


def _depth(value: int | None) -> int:
    return value or 0  # not stated: no context before the prompt


def gb_to_bytes(gb: float) -> int:
    return round(gb * 1e9)


def _bytes_to_gb(size_bytes: int | None) -> float | None:
    return size_bytes / 1e9 if size_bytes is not None else None


# One encoder for every call: json.dumps with options builds a new encoder each time, which cost a bulk add ~2 µs
# per record.
_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def canonical_json(data: Any) -> str:
    """The one spelling of a JSON value: keys sorted, no spaces (natural keys and JSON columns)."""
    return _CANONICAL.encode(data)


_OPTIONS_JSON: dict[tuple, str] = {}


def options_json(options: dict) -> str:
    """canonical_json(options), remembered: the figures of a file share a few option sets, and encoding one
    cost a bulk add 2.7 µs per record against 0.5 µs for the lookup."""
    try:
        key = (*options.items(), *map(type, options.values()))  # types: 1, 1.0 and True are equal keys
        text = _OPTIONS_JSON.get(key)
    except TypeError:  # a list or a dict among the values
        return canonical_json(options)
    if text is None:
        if len(_OPTIONS_JSON) > 10_000:
            _OPTIONS_JSON.clear()
        text = _OPTIONS_JSON[key] = canonical_json(options)
    return text


def _formula_inputs_to_row(inputs: dict | None) -> str | None:
    return canonical_json(inputs) if inputs else None


# The figure's own row. Fields under an optional block (OPTIONAL below) read None when the block is absent.
MEASUREMENT = (
    Field("source.url", "measurement", "source_url"),
    Field("software.options", "measurement", "software_options", options_json,
          lambda text: json.loads(text or "{}")),
    Field("phase", "measurement", "phase", _text),
    Field("lengths.prompt_tokens", "measurement", "prompt_tokens"),
    Field("lengths.generated_tokens", "measurement", "generated_tokens"),
    Field("lengths.context_depth", "measurement", "context_depth", _depth),
    Field("concurrency.users", "measurement", "users"),
    Field("concurrency.figure", "measurement", "figure", _text),
    Field("nature.kind", "measurement", "nature_kind", _text),
    Field("nature.procedure", "measurement", "procedure"),
    Field("nature.formula", "measurement", "formula"),
    Field("nature.inputs", "measurement", "formula_inputs", _formula_inputs_to_row, _json_or_none),
    Field("tokens_per_second", "measurement", "tokens_per_second"),
    Field("stddev", "measurement", "stddev"),
    Field("source.retrieved_at", "measurement", "retrieved_at", _iso),
    Field("source.published_at", "measurement", "published_at", _iso),
    Field("source.author", "measurement", "author"),
    Field("source.quote", "measurement", "quote"),
    Field("source.quote_header", "measurement", "quote_header"),  # the header line of a quoted table row
    # the bandwidth a record states itself (the reference's, if any, is the hardware row's)
    Field("hardware.memory_bandwidth_gbs", "measurement", "hardware_bandwidth_gbs"),
    Field("source.via.title", "measurement", "via_title"),
    Field("source.via.publisher", "measurement", "via_publisher"),
    Field("source.via.url", "measurement", "via_url"),
    Field("source.via.published_at", "measurement", "via_published_at", _iso),
)
OPTIONAL = "source.via"  # a block a record may leave out (null): its columns are then NULL, and NULL reads it back

# The rows a figure names in other tables, as Prepared.refs holds them: one tuple each, in this order. The
# store finds or creates the row by these values (tpsdb.store.Store.model_file takes the size in GB and keeps it in
# bytes: that conversion is FILE_SIZE.to_row).
HARDWARE = (
    Field("hardware.name", "hardware", "name"),
    Field("hardware.memory_gb", "hardware", "memory_gb"),
    Field("hardware.gpu_cores", "hardware", "gpu_cores"),
)
FILE_SIZE = Field("model.file_size_gb", "model_file", "size_bytes", gb_to_bytes, _bytes_to_gb)
MODEL_FILE = (
    Field("model.name", "model", "name"),
    Field("model.params_b", "model", "params_b"),
    Field("model.active_params_b", "model", "active_params_b"),
    FILE_SIZE,
    Field("quantization", "model_file", "quantization"),
)
SOFTWARE = (
    Field("software.name", "software", "name"),
    Field("software.version", "software", "version"),
)
REFS = (HARDWARE, MODEL_FILE, SOFTWARE)
# Every record field and where it is kept.
ALL = (*MEASUREMENT, *HARDWARE, *MODEL_FILE, *SOFTWARE)

# Derived columns the store adds to a figure's row, of no record field: the active share read per token and where
# it comes from (tpsdb.ceiling).
DERIVED = ("read_share", "read_share_origin")
MEASUREMENT_COLUMNS = (*(f.column for f in MEASUREMENT), *DERIVED)

# ---------------------------------------------------------------------------------------------- record -> row
# Each read is one attrgetter call over the declared paths (C code: a loop in Python over the declaration cost a
# bulk add 1.1 µs per record); the fields of the optional block are read from the block, when it is there.
_IN_BLOCK = OPTIONAL + "."
_PLAIN = tuple(f for f in MEASUREMENT if not f.path.startswith(_IN_BLOCK))
_BLOCK = tuple(f for f in MEASUREMENT if f.path.startswith(_IN_BLOCK))
if MEASUREMENT != (*_PLAIN, *_BLOCK):
    raise ValueError(f"rowmap: the fields of {OPTIONAL} come last in MEASUREMENT")  # columns_of relies on it
_READ_PLAIN = attrgetter(*(f.path for f in _PLAIN))
_READ_BLOCK = attrgetter(*(f.path.removeprefix(_IN_BLOCK) for f in _BLOCK))
_READ_OPTIONAL = attrgetter(OPTIONAL)
_CONVERT_PLAIN = tuple((i, f.to_row) for i, f in enumerate(_PLAIN) if f.to_row is not None)
_CONVERT_BLOCK = tuple((len(_PLAIN) + i, f.to_row) for i, f in enumerate(_BLOCK) if f.to_row is not None)
_NO_BLOCK = (None,) * len(_BLOCK)
_CONVERT_ALL = _CONVERT_PLAIN + _CONVERT_BLOCK
_READ_HARDWARE, _READ_MODEL_FILE, _READ_SOFTWARE = (attrgetter(*(f.path for f in fields)) for fields in REFS)


def columns_of(r: Any) -> tuple:
    """A validated record's values for its measurement row, in MEASUREMENT order (derived columns not included)."""
    block = _READ_OPTIONAL(r)
    values = [*_READ_PLAIN(r), *(_READ_BLOCK(block) if block is not None else _NO_BLOCK)]
    for i, to_row in _CONVERT_PLAIN if block is None else _CONVERT_ALL:
        values[i] = to_row(values[i])
    return tuple(values)


def refs_of(r: Any) -> tuple[tuple, tuple, tuple]:
    """What names a validated record's hardware, model file and software rows: one tuple each, in REFS order, of
    record values (the store finds its rows by them; Store.model_file converts the size)."""
    return _READ_HARDWARE(r), _READ_MODEL_FILE(r), _READ_SOFTWARE(r)


# ---------------------------------------------------------------------------------------------- row -> record
def record_from(columns: dict[str, Any], refs: tuple[tuple, tuple, tuple], *, converted_refs: bool = False) -> dict:
    """The record (a nested dict, for tpsdb.record.Record) of a measurement row's columns (by column name) and the
    values of its reference rows (in REFS order: stored values when converted_refs, else record values)."""
    record: dict[str, Any] = {}
    for f in MEASUREMENT:
        value = columns[f.column]
        _put(record, f.path, f.from_row(value) if f.from_row is not None else value)
    block = _get(record, OPTIONAL)
    if not any(block.values()):
        _put(record, OPTIONAL, None)
    for fields, values in zip(REFS, refs):
        for f, value in zip(fields, values):
            _put(record, f.path, f.from_row(value) if converted_refs and f.from_row is not None else value)
    return record


def _put(record: dict, path: str, value: Any) -> None:
    *blocks, name = path.split(".")
    for block in blocks:
        record = record.setdefault(block, {})
    record[name] = value


def _get(record: dict, path: str) -> dict:
    for block in path.split("."):
        record = record[block]
    return record
