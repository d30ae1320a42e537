"""export.export_measurements: the site's downloads read each figure once and write it as CSV and as JSONL
together; each file must be what `tpsdb export` writes in that format, also when a stored row stops it."""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import sqlite3

import pytest

from conftest import VALID_RECORD, run_cli, write_jsonl
from tpsdb import db
from tpsdb.export import ExportError, export, export_measurements

HEADER = "| model | size | params | backend | ngl | n_ubatch | fa | mmap | test | t/s |"


def _two_records(tmp_path, empty_db, header: str | None = None):
    other = copy.deepcopy(VALID_RECORD)
    other["lengths"]["generated_tokens"] = 64
    other["tokens_per_second"] = 58.5
    other["source"]["quote"] = VALID_RECORD["source"]["quote"].replace("tg32 | 59.02", "tg64 | 58.5")
    if header:
        other["source"]["quote_header"] = header
    run_cli("add", str(write_jsonl(tmp_path / "r.jsonl", [copy.deepcopy(VALID_RECORD), other])), db=empty_db)
    return db.make_engine(str(empty_db))


def _alone(engine, fmt: str) -> str:
    out = io.StringIO()
    with contextlib.suppress(ExportError):
        export(engine, out, fmt)
    return out.getvalue()


def test_csv_and_jsonl_together_are_what_export_writes_alone(tmp_path, empty_db):
    engine = _two_records(tmp_path, empty_db)
    # CSV first: its rows fill a record's missing `via` with empty columns, which must not reach the JSONL
    outs = {"csv": io.StringIO(), "jsonl": io.StringIO()}
    assert export_measurements(engine, outs) == {}
    assert outs["jsonl"].getvalue() == _alone(engine, "jsonl")
    assert outs["csv"].getvalue() == _alone(engine, "csv")
    assert len(outs["jsonl"].getvalue().splitlines()) == 2 and '"via": null' in outs["jsonl"].getvalue()


def test_a_non_finite_row_stops_both_files_where_export_stops(tmp_path, empty_db):
    engine = _two_records(tmp_path, empty_db)
    with contextlib.closing(sqlite3.connect(empty_db)) as conn:  # what the old validator let in (D3)
        conn.execute("UPDATE measurement SET tokens_per_second = 1e999 WHERE generated_tokens = 64")
        conn.commit()
    outs = {"csv": io.StringIO(), "jsonl": io.StringIO()}
    stopped = export_measurements(engine, outs)
    assert set(stopped) == {"csv", "jsonl"}
    assert all(str(error).startswith("export: record 2 ") for error in stopped.values())
    assert outs["jsonl"].getvalue() == _alone(engine, "jsonl") and len(outs["jsonl"].getvalue().splitlines()) == 1
    assert outs["csv"].getvalue() == _alone(engine, "csv") and len(outs["csv"].getvalue().splitlines()) == 2


def test_only_jsonl_and_csv_are_written_together(tmp_path, empty_db):
    with pytest.raises(ValueError, match="'json'"):
        export_measurements(db.make_engine(str(empty_db)), {"json": io.StringIO()})


def test_a_quote_header_on_a_later_figure_gets_its_column(tmp_path, empty_db):
    """Only a figure with a table header has the key: the CSV's columns, fixed by its first row, must have it
    (the site's publish failed on `dict contains fields not in fieldnames: 'source.quote_header'`)."""
    engine = _two_records(tmp_path, empty_db, header=HEADER)
    outs = {"csv": io.StringIO(), "jsonl": io.StringIO()}
    assert export_measurements(engine, outs) == {}
    rows = list(csv.DictReader(io.StringIO(outs["csv"].getvalue())))
    assert [row["source.quote_header"] for row in rows] == ["", HEADER]
    columns = list(rows[0])
    assert columns.index("source.quote_header") == columns.index("source.quote") + 1
    assert outs["csv"].getvalue() == _alone(engine, "csv")
    assert outs["jsonl"].getvalue() == _alone(engine, "jsonl")


def test_without_a_quote_header_there_is_no_column(tmp_path, empty_db):
    engine = _two_records(tmp_path, empty_db)
    assert "quote_header" not in _alone(engine, "csv").splitlines()[0]
