"""`tpsdb export`: the stored figures (or the rejected candidates) as records, in JSONL, one JSON array, or CSV.

Records are written in format v1, so that `add` reads them back: the measurements re-create the same
measurements, and the rejected candidates the same rejections (their reasons are recomputed by `add`; CSV, which
`add` does not read, carries them in a `reasons` column).
"""

from __future__ import annotations

import csv
import json
import math
from typing import Iterator, TextIO

from .output import spreadsheet_safe
from .record import Via
from .store import StoredRecordError, iter_measurement_records, iter_rejections

FORMATS = ("jsonl", "json", "csv")


class ExportError(ValueError):
    """A stored value no export format may carry; the message names the record."""


def export(engine, out: TextIO, fmt: str = "jsonl", *, rejections: bool = False,
           include_inactive: bool = False) -> int:
    """Write the active measurements (all of them with include_inactive), or the rejected candidates, to `out` in
    id order; returns how many. Raises ExportError on a non-finite number (after the records before it)."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    if rejections:
        items = ((rejection["candidate"], rejection["reasons"]) for rejection in iter_rejections(engine))
    else:
        items = ((record, None) for record in iter_measurement_records(engine, include_inactive))
    try:
        return _write(out, items, fmt, rejections)
    except StoredRecordError as error:
        raise _stored_error(error) from None


def read_measurements(engine) -> tuple[list[dict], ExportError | None]:
    """The active measurements as records, read once for several exports (the site writes them as CSV and as
    JSONL): the records, and the error of the first stored row no record may carry (the records stop before it),
    or None. Building a record costs more than writing it, so reading once halves the work of two exports."""
    records: list[dict] = []
    try:
        for record in iter_measurement_records(engine):
            records.append(record)
    except StoredRecordError as error:
        return records, _stored_error(error)
    return records, None


def write_measurements(records: list[dict], out: TextIO, fmt: str) -> int:
    """Write records from read_measurements to `out` as export(engine, out, fmt) would write them; returns how
    many. Raises ExportError on a non-finite number (after the records before it). The records are not changed,
    so the same list can be written again in another format."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    return _write(out, ((record, None) for record in records), fmt, rejections=False)


def _write(out: TextIO, items: Iterator[tuple], fmt: str, rejections: bool) -> int:
    if fmt == "csv":
        return _write_csv(out, items, rejections)
    return _write_json(out, (record for record, _ in items), array=fmt == "json")


def _stored_error(error: StoredRecordError) -> ExportError:
    # a row an older tpsdb let in (an inf speed, D3): no record may carry it
    return ExportError(f"export: record {error.number or '?'} (source {error.url}) holds a non-finite number or "
                       f"another value no record may carry ({error.reason}); fix or withdraw it in the "
                       "database (tpsdb query shows it)")


def _write_json(out: TextIO, records: Iterator, array: bool) -> int:
    count = 0
    if array:
        out.write("[")
    for count, record in enumerate(records, 1):
        try:  # never the non-standard Infinity/NaN, which other JSON readers refuse
            text = json.dumps(record, ensure_ascii=False, sort_keys=False, allow_nan=False)
        except ValueError:
            raise ExportError(_non_finite(count, record)) from None
        if array:
            out.write(("\n" if count == 1 else ",\n") + text)
        else:
            out.write(text + "\n")
    if array:
        out.write("\n]\n" if count else "]\n")
    return count


def _write_csv(out: TextIO, items: Iterator[tuple], rejections: bool) -> int:
    rows = []
    writer = None
    fields: list[str] = []
    count = 0
    for count, (record, reasons) in enumerate(items, 1):
        if not rejections and record["source"].get("via") is None:
            # same columns for every row; on a copy, as the caller may write the same records again as JSONL
            record = {**record, "source": {**record["source"], "via": dict.fromkeys(Via.model_fields)}}
        flat = flatten(record) if isinstance(record, dict) else {"record": json.dumps(record, ensure_ascii=False)}
        if any(isinstance(v, float) and not math.isfinite(v) for v in flat.values()):
            raise ExportError(_non_finite(count, record))
        if rejections:  # candidates differ in their keys: every row is needed to know the columns
            rows.append({"reasons": json.dumps(reasons, ensure_ascii=False), **flat})
            continue
        if writer is None:
            fields = list(flat)
            writer = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
            writer.writeheader()
        if list(flat) == fields:  # the usual row: its values in column order, without DictWriter's lookups
            writer.writer.writerow([spreadsheet_safe(value) for value in flat.values()])
        else:
            writer.writerow({key: spreadsheet_safe(value) for key, value in flat.items()})
    if rejections and rows:
        columns = list(dict.fromkeys(key for row in rows for key in row))
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({key: spreadsheet_safe(value) for key, value in row.items()} for row in rows)
    return count


def flatten(record: dict, prefix: str = "") -> dict:
    """A record as one CSV row: nested objects become dotted columns (`source.url`); lists, and the free-form
    `software.options` and `nature.inputs`, stay JSON text in one cell."""
    flat: dict = {}
    _flatten_into(flat, record, prefix)
    return flat


def _flatten_into(flat: dict, record: dict, prefix: str) -> None:
    # into one dict, not a dict per nested object merged upwards: a download flattens every figure
    for key, value in record.items():
        if isinstance(value, dict) and key not in ("options", "inputs"):
            _flatten_into(flat, value, f"{prefix}{key}.")
        elif isinstance(value, (dict, list)):
            flat[prefix + key] = json.dumps(value, sort_keys=True, ensure_ascii=False)
        else:
            flat[prefix + key] = value


def _non_finite(number: int, record) -> str:
    source = record.get("source") if isinstance(record, dict) else None
    source = source.get("url") if isinstance(source, dict) else None
    source = source if isinstance(source, str) else "?"
    return (f"export: record {number} (source {source}) holds a non-finite number (inf or NaN), which no export "
            "format may carry; fix or withdraw it in the database (tpsdb query shows it)")
