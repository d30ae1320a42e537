"""The bulk path of `tpsdb add` reads a JSON line straight into a record: it must store exactly what the dict
path stores, for accepted and rejected candidates alike."""

import copy
import json
import sqlite3
from datetime import date

import pytest
from pydantic import BaseModel
from sqlmodel import Session

from conftest import VALID_RECORD
from tpsdb import rowmap
from tpsdb.db import make_engine
from tpsdb.models import Hardware, Measurement, Model, ModelFile, Software
from tpsdb.record import Record, validate
from tpsdb.store import KnownKeys, Store, canonical_json, iter_measurement_records, options_json, prepare, prepare_json


def changed(change):
    record = copy.deepcopy(VALID_RECORD)
    change(record)
    return record


CANDIDATES = {
    "valid": VALID_RECORD,
    "size in GiB, params in M": changed(lambda r: r["model"].update(file_size_gb="59.02 GiB", params_b="116830 M")),
    "options unsorted and nested": changed(lambda r: r["software"].update(options={"z": 1, "a": {"y": 2, "b": [1]}})),
    "options 1, 1.0 and true": changed(lambda r: r["software"].update(options={"fa": True, "ngl": 1.0, "t": 1})),
    "lower-case format name": changed(lambda r: r.update(quantization="mxfp4")),
    "integral float as a count": changed(lambda r: r["lengths"].update(generated_tokens=32.0)),
    "relayed by an article": changed(lambda r: r["source"].update(
        via={"title": "An article", "publisher": "QDNA", "published_at": "2026-08-30", "url": None})),
    "computed maximum": changed(lambda r: r.update(nature={
        "kind": "computed", "formula": "bandwidth / bytes per token", "inputs": {"bandwidth_gbs": 273}})),
    "unknown field": changed(lambda r: r.update(extra=1)),
    "unknown nested field": changed(lambda r: r["model"].update(size="big")),
    "wrong type": changed(lambda r: r["lengths"].update(generated_tokens="many")),
    "missing version": changed(lambda r: r["software"].pop("version")),
    # (gpt-oss 120B is a mixture of experts: checked only with its active parameters)
    "above the ceiling": changed(lambda r: (r["hardware"].update(memory_bandwidth_gbs=1.0),
                                            r["model"].update(active_params_b=5.1))),
    "not an object": [VALID_RECORD],
    "a number": 42,
}
ACCEPTED = {"valid", "size in GiB, params in M", "options unsorted and nested", "options 1, 1.0 and true",
            "lower-case format name", "integral float as a count", "relayed by an article", "computed maximum"}


@pytest.mark.parametrize("name", CANDIDATES)
def test_a_json_line_is_prepared_as_its_dict_is(name):
    candidate = CANDIDATES[name]
    today = date(2026, 11, 30)
    prepared = prepare_json(json.dumps(candidate), today=today)
    assert prepared == prepare(candidate, today=today)
    assert (not prepared.reasons) == (name in ACCEPTED), prepared.reasons


def test_a_line_that_is_not_json_raises():
    with pytest.raises(json.JSONDecodeError):
        prepare_json('{"source": ')


@pytest.mark.parametrize("options", [{}, {"fa": 1}, {"fa": True}, {"fa": 1.0}, {"b": 2, "a": 1}, {"a": 1, "b": 2},
                                     {"x": [1, 2]}, {"x": {"z": 1, "y": 2}}, {"é": "ü"}])
def test_remembered_option_sets_are_spelled_as_canonical_json(options):
    assert options_json(options) == canonical_json(options)
    assert options_json(options) == canonical_json(options)  # the second time from memory


# ------------------------------------------------------------------------------------- the record <-> row mapping
# A record stating every field the format has, each with a value no default would give.
EVERY_FIELD = changed(lambda r: (
    r["source"].update(author="someone", quote_header="| model | backend | test | t/s |",
                       via={"title": "An article", "publisher": "QDNA", "published_at": "2026-08-30",
                            "url": "https://example.org/article"}),
    r["hardware"].update(memory_bandwidth_gbs=273.0, memory_gb=128.0, gpu_cores=48),
    r["model"].update(active_params_b=5.13),
    r["lengths"].update(prompt_tokens=512, context_depth=4096),
    r["concurrency"].update(users=2, figure="aggregate"),
    r.update(nature={"kind": "computed", "formula": "bandwidth / bytes per token", "inputs": {"bandwidth_gbs": 273},
                     "procedure": "llama-bench"}),
))


def _leaf_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    paths = set()
    for name, info in model.model_fields.items():
        inner = [t for t in getattr(info.annotation, "__args__", (info.annotation,)) if isinstance(t, type)]
        block = next((t for t in inner if issubclass(t, BaseModel)), None)
        paths |= _leaf_paths(block, f"{prefix}{name}.") if block else {f"{prefix}{name}"}
    return paths


def _at(record: dict, path: str):
    for name in path.split("."):
        record = record[name]
    return record


def test_every_record_field_has_one_column_and_every_column_exists():
    mapped = [f.path for f in rowmap.ALL]
    assert sorted(mapped) == sorted(_leaf_paths(Record))  # each once: none missing, none twice
    tables = {cls.__tablename__: cls for cls in (Measurement, Hardware, Model, ModelFile, Software)}
    for f in rowmap.ALL:
        assert f.column in tables[f.table].model_fields, f


def _stored(db, candidate: dict) -> tuple[dict, dict]:
    """The figure's measurement row (by column) and the record export gives back, after a Store.put."""
    engine = make_engine(f"sqlite:///{db}")
    with Session(engine) as session:
        store = Store(session)
        assert store.put(candidate).outcome == "accepted"
        store.flush()
        session.commit()
    [exported] = iter_measurement_records(engine)
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM measurement").fetchone())
    engine.dispose()
    return row, exported


def test_every_mapped_field_flows_both_ways(empty_db):
    """Driven by the mapping: a field added to rowmap is stored in its column and read back by export unchanged."""
    outcome = validate(EVERY_FIELD)
    assert outcome.accepted, outcome.reasons
    given = outcome.record.to_json_dict()
    row, exported = _stored(empty_db, EVERY_FIELD)
    for f in rowmap.MEASUREMENT:
        value = _at(given, f.path)
        assert value is not None, f"{f.path}: the test record must state it"
        stored = f.to_row(_at(outcome.record.model_dump(), f.path)) if f.to_row else value
        assert row[f.column] == stored, f
    for f in rowmap.ALL:
        assert _at(exported, f.path) == _at(given, f.path), f.path
    assert exported == given


def test_an_absent_optional_block_reads_back_absent(empty_db):
    row, exported = _stored(empty_db, VALID_RECORD)
    assert exported["source"]["via"] is None
    assert all(row[f.column] is None for f in rowmap.MEASUREMENT if f.path.startswith(rowmap.OPTIONAL + "."))
    assert exported == validate(VALID_RECORD).record.to_json_dict()


def _figure(n: int) -> dict:
    return changed(lambda r: r["source"].update(url=f"{VALID_RECORD['source']['url']}#figure-{n}"))


@pytest.mark.parametrize("load_all_after", [2, 10_000], ids=["whole table after two keys", "key by key"])
def test_known_keys_are_the_same_asked_key_by_key_or_loaded_whole(empty_db, monkeypatch, load_all_after):
    """A store asks the database about each natural key as it meets it, and loads the whole table once it has
    asked about many: either way a stored figure is unchanged, a withdrawn one comes back under its id, and what
    the store queued (not flushed yet) is known."""
    engine = make_engine(f"sqlite:///{empty_db}")
    rejected = CANDIDATES["missing version"]
    with Session(engine) as session:
        store = Store(session)
        assert [store.put(_figure(n)).outcome for n in range(3)] == ["accepted"] * 3
        assert store.put(rejected).outcome == "rejected"
        store.flush()
        session.commit()
    with sqlite3.connect(empty_db) as conn:
        withdrawn_id = conn.execute("SELECT id FROM measurement WHERE source_url LIKE '%#figure-1'").fetchone()[0]
        conn.execute("UPDATE measurement SET status = 'withdrawn' WHERE id = ?", (withdrawn_id,))
    monkeypatch.setattr(KnownKeys, "LOAD_ALL_AFTER", load_all_after)
    with Session(engine) as session:
        store = Store(session)
        outcomes = [store.put(candidate).outcome
                    for candidate in (_figure(3), _figure(0), _figure(4), _figure(3), _figure(1), _figure(2),
                                      rejected, _figure(4))]
        store.flush()
        session.commit()
    assert outcomes == ["accepted", "accepted_unchanged", "accepted", "accepted_unchanged", "accepted",
                        "accepted_unchanged", "rejected_unchanged", "accepted_unchanged"]
    with sqlite3.connect(empty_db) as conn:
        rows = conn.execute("SELECT id, status FROM measurement ORDER BY id").fetchall()
        assert conn.execute("SELECT count(*) FROM rejection").fetchone()[0] == 1
    assert len(rows) == 5 and {status for _, status in rows} == {"active"}
    assert withdrawn_id in {row_id for row_id, _ in rows}
    engine.dispose()
