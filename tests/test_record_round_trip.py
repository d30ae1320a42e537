"""A valid record stored and exported is the record that was validated: the same identity, the same fields.

Adding an export back must find every figure already stored. It did not where a value was kept in a form that
reads back as another (an all-null `source.via` block, `nature.inputs: {}`, a file size finer than the bytes
column): the figure was stored a second time. Generated records, a real SQLite file, the store's own write and
export paths.
"""

from __future__ import annotations

import copy
import itertools
import json
from datetime import date

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlmodel import Session

from conftest import VALID_RECORD
from tpsdb.db import create_database
from tpsdb.record import validate
from tpsdb.store import Store, iter_measurement_records

TODAY = date(2026, 12, 1)
PROPERTY = settings(derandomize=True, database=None, deadline=None, max_examples=60,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

_words = st.text("abcdefghij XYZ-_.", min_size=1, max_size=12).filter(str.strip)
_days = st.dates(min_value=date(2000, 1, 1), max_value=date(2026, 9, 6))
_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                          st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False), _words)
_json = st.recursive(_json_scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                            st.dictionaries(_words, inner, max_size=3)), max_leaves=6)


_via = st.one_of(st.none(), st.fixed_dictionaries({
    "title": st.none() | _words, "publisher": st.none() | _words,
    "published_at": st.none() | _days.map(date.isoformat),
    "url": st.none() | st.sampled_from(["https://example.org/a", "http://news.example.com/b?c=1"])}))
_optional_float = st.none() | st.floats(0, 1e4, allow_nan=False)


@st.composite
def records(draw) -> dict:
    """A valid record of its own figure, varied in every field whose stored form is converted."""
    r = copy.deepcopy(VALID_RECORD)
    r["source"]["via"] = draw(_via)
    r["source"]["author"] = draw(st.none() | _words)
    r["source"]["published_at"] = draw(st.none() | _days.map(date.isoformat))
    r["model"]["file_size_gb"] = draw(st.floats(12, 500) | st.integers(12, 500)
                                      | st.sampled_from(["59.02 GiB", "60000.0000004 MB", 60.0000000004]))
    r["model"]["active_params_b"] = draw(st.none() | st.floats(0.1, 116.83))
    r["hardware"]["memory_gb"] = draw(_optional_float.filter(lambda v: v != 0))
    r["hardware"]["gpu_cores"] = draw(st.none() | st.integers(1, 10**6))
    r["software"]["options"] = draw(st.dictionaries(_words, _json, max_size=4))
    r["lengths"]["context_depth"] = draw(st.none() | st.integers(0, 10**9) | st.just(4096.0))
    r["lengths"]["prompt_tokens"] = draw(st.none() | st.integers(0, 10**9))
    r["stddev"] = draw(_optional_float)
    if draw(st.booleans()):
        r["nature"] = {"kind": "measured", "procedure": "llama-bench", "inputs": draw(st.none() | st.just({}))}
    else:
        r["nature"] = {"kind": "computed", "formula": "a / b",
                       "inputs": draw(st.dictionaries(_words, _json, min_size=1, max_size=3))}
    return r


_figure = itertools.count()


@PROPERTY
@given(record=records())
def test_a_stored_record_exports_as_itself_and_adds_as_unchanged(empty_db, record):
    engine = create_database(f"sqlite:///{empty_db}")
    n = next(_figure)
    record["hardware"]["name"] = record["model"]["name"] = f"round trip {n}"  # rows of its own
    first = validate(record, today=TODAY)
    assert first.accepted, first.reasons
    with Session(engine) as session:
        store = Store(session, today=TODAY)
        assert store.put(record).outcome == "accepted"
        store.flush()
        session.commit()
    (exported,) = [r for r in iter_measurement_records(engine) if r["hardware"]["name"] == f"round trip {n}"]
    again = validate(exported, today=TODAY)
    assert again.accepted, again.reasons
    assert json.dumps(exported) == json.dumps(first.record.to_json_dict())  # key order too: it is in the identity
    assert again.record.identity() == first.record.identity()
    with Session(engine) as session:
        store = Store(session, today=TODAY)
        assert store.put(exported).outcome == "accepted_unchanged"
        store.flush()
        session.commit()


def test_values_stored_in_another_form_are_normalised_in_validation(record):
    record["source"]["via"] = {"title": None, "publisher": None, "published_at": None, "url": None}
    record["nature"]["inputs"] = {}
    record["model"]["file_size_gb"] = 60.0000000004
    record["software"]["options"] = {"b": {"y": 1, "x": [{"q": 1, "p": 2}]}, "a": 1}
    r = validate(record, today=TODAY).record
    assert r is not None
    assert (r.source.via, r.nature.inputs, r.model.file_size_gb) == (None, None, 60.0)
    assert json.dumps(r.software.options) == '{"a": 1, "b": {"x": [{"p": 2, "q": 1}], "y": 1}}'
    plain = copy.deepcopy(VALID_RECORD)
    plain["model"]["file_size_gb"] = 60.0
    plain["software"]["options"] = {"a": 1, "b": {"x": [{"p": 2, "q": 1}], "y": 1}}
    assert r.identity() == validate(plain, today=TODAY).record.identity()
