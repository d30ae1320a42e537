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

from sqlmodel import Session, select

from .models import Measurement, Status
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
        if fmt == "csv" and not rejections:
            rows = _CsvRows(out, _any_quote_header(engine, include_inactive))
            for record, _ in items:
                rows.add(record)
            return rows.count
        if fmt == "csv":
            return _write_csv(out, items)
        return _write_json(out, (record for record, _ in items), array=fmt == "json")
    except StoredRecordError as error:
        raise _stored_error(error) from None


def export_measurements(engine, outs: dict[str, TextIO]) -> dict[str, ExportError]:
    """Write the active measurements to several outputs at once, each record made once for all of them (making it
    costs more than writing it; the site writes its downloads as CSV and as JSONL). `outs` maps a format (jsonl or
    csv) to its output; each gets what export(engine, out, fmt) writes. Returns the formats that stopped early on
    a record they cannot carry, with the ExportError export would raise (the records before it are written)."""
    for fmt in outs:
        if fmt not in ("jsonl", "csv"):
            raise ValueError(f"format {fmt!r} is not one of jsonl, csv")
    live = {fmt: _CsvRows(out, _any_quote_header(engine)) if fmt == "csv" else _JsonLines(out)
            for fmt, out in outs.items()}
    stopped: dict[str, ExportError] = {}
    try:
        for record in iter_measurement_records(engine):
            for fmt, writer in list(live.items()):
                try:
                    writer.add(record)
                except ExportError as error:
                    stopped[fmt] = error
                    del live[fmt]
            if not live:
                break
    except StoredRecordError as error:
        stopped.update(dict.fromkeys(live, _stored_error(error)))
    return stopped


def _any_quote_header(engine, include_inactive: bool = False) -> bool:
    """Whether a figure to export has a source.quote_header: a record has the key only then, so the CSV's columns
    (fixed by its first row) must be told it is needed."""
    statement = select(Measurement.id).where(Measurement.quote_header.is_not(None))
    if not include_inactive:
        statement = statement.where(Measurement.status == Status.active)
    with Session(engine) as session:
        return session.exec(statement.limit(1)).first() is not None


def _stored_error(error: StoredRecordError) -> ExportError:
    # a row an older tpsdb let in (an inf speed, D3): no record may carry it
    return ExportError(f"export: record {error.number or '?'} (source {error.url}) holds a non-finite number or "
                       f"another value no record may carry ({error.reason}); fix or withdraw it in the "
                       "database (tpsdb query shows it)")


def _json_text(number: int, record) -> str:
    try:  # never the non-standard Infinity/NaN, which other JSON readers refuse
        return json.dumps(record, ensure_ascii=False, sort_keys=False, allow_nan=False)
    except ValueError:
        raise ExportError(_non_finite(number, record)) from None


def _write_json(out: TextIO, records: Iterator, array: bool) -> int:
    if not array:
        lines = _JsonLines(out)
        for record in records:
            lines.add(record)
        return lines.count
    count = 0
    out.write("[")
    for count, record in enumerate(records, 1):
        out.write(("\n" if count == 1 else ",\n") + _json_text(count, record))
    out.write("\n]\n" if count else "]\n")
    return count


class _JsonLines:
    """JSONL written a record at a time."""

    def __init__(self, out: TextIO):
        self.out, self.count = out, 0

    def add(self, record) -> None:
        self.count += 1
        self.out.write(_json_text(self.count, record) + "\n")


class _CsvRows:
    """Measurement records as CSV rows written a record at a time: the first record's columns are the header, with
    `source.quote_header` after `source.quote` when `quote_headers` (some figure has one; the others leave it
    empty)."""

    def __init__(self, out: TextIO, quote_headers: bool = False):
        self.out, self.count, self.quote_headers = out, 0, quote_headers
        self.writer: csv.DictWriter | None = None
        self.fields: list[str] = []

    def add(self, record: dict) -> None:
        self.count += 1
        if record["source"].get("via") is None:
            # same columns for every row; on a copy, as the record may be written again as JSONL
            record = {**record, "source": {**record["source"], "via": dict.fromkeys(Via.model_fields)}}
        flat = _finite_row(self.count, record)
        if self.writer is None:
            self.fields = list(flat)
            if self.quote_headers and "source.quote_header" not in self.fields:
                self.fields.insert(self.fields.index("source.quote") + 1, "source.quote_header")
            self.writer = csv.DictWriter(self.out, fieldnames=self.fields, lineterminator="\n")
            self.writer.writeheader()
        if list(flat) == self.fields:  # the usual row: its values in column order, without DictWriter's lookups
            self.writer.writer.writerow([spreadsheet_safe(value) for value in flat.values()])
        else:
            self.writer.writerow({key: spreadsheet_safe(value) for key, value in flat.items()})


def _finite_row(number: int, record) -> dict:
    flat = flatten(record) if isinstance(record, dict) else {"record": json.dumps(record, ensure_ascii=False)}
    if any(isinstance(v, float) and not math.isfinite(v) for v in flat.values()):
        raise ExportError(_non_finite(number, record))
    return flat


def _write_csv(out: TextIO, items: Iterator[tuple]) -> int:
    """The rejected candidates as CSV (the measurements are _CsvRows)."""
    candidates = []
    count = 0
    for count, (record, reasons) in enumerate(items, 1):
        # candidates differ in their keys: every row is needed to know the columns
        candidates.append({"reasons": json.dumps(reasons, ensure_ascii=False), **_finite_row(count, record)})
    if candidates:
        columns = list(dict.fromkeys(key for row in candidates for key in row))
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({key: spreadsheet_safe(value) for key, value in row.items()} for row in candidates)
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
