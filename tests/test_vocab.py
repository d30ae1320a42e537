"""Issue 17: every vocabulary is spelled once (tpsdb.vocab), and the places that must list it agree with it."""

from __future__ import annotations

import copy

import pytest

from conftest import ROOT, VALID_RECORD
from tpsdb import vocab
from tpsdb.kinds import registry
from tpsdb.models import Hardware, Measurement, Rejection, Source
from tpsdb.publish import definitions
from tpsdb.record import validate
from tpsdb.serve import load_metadata


def test_the_tables_check_the_same_values():
    checks = {c.name: str(c.sqltext) for table in (Measurement.__table__, Rejection.__table__, Hardware.__table__)
              for c in table.constraints if c.name and c.name.startswith("ck_")}
    assert checks["ck_measurement_phase"] == vocab.sql_in("phase", vocab.Phase)
    assert checks["ck_measurement_figure"] == vocab.sql_in("figure", vocab.Figure)
    assert checks["ck_measurement_nature"] == vocab.sql_in("nature_kind", vocab.NatureKind)
    assert checks["ck_measurement_status"] == vocab.sql_in("status", vocab.Status)
    assert vocab.sql_in("bandwidth_kind", vocab.BandwidthKind) in checks["ck_hardware_bandwidth_kind"]


@pytest.mark.parametrize("path, vocabulary", [("phase", vocab.Phase), ("concurrency.figure", vocab.Figure),
                                              ("nature.kind", vocab.NatureKind)])
def test_the_validator_takes_exactly_the_values(path, vocabulary):
    *blocks, name = path.split(".")
    for value in (*vocab.values(vocabulary), "not_a_value"):
        record = copy.deepcopy(VALID_RECORD)
        target = record
        for block in blocks:
            target = target[block]
        target[name] = value
        if value == "computed":
            record["nature"].update(formula="bandwidth / bytes per token", inputs={"bandwidth_gbs": 273})
        if value in ("prompt", "end_to_end"):
            record["lengths"]["prompt_tokens"] = 512
        reasons = validate(record).reasons
        assert any(r.startswith(f"{path}:") for r in reasons) == (value == "not_a_value"), (value, reasons)


def test_table_definitions_take_the_same_values():
    assert definitions._ENUMS == {"phase": vocab.values(vocab.Phase), "figure": vocab.values(vocab.Figure)}


def test_the_datasette_descriptions_name_every_value():
    columns = load_metadata()["databases"]["tpsdb"]["tables"]["measurement_full"]["columns"]
    for column, vocabulary in (("phase", vocab.Phase), ("figure", vocab.Figure), ("nature", vocab.NatureKind),
                               ("bandwidth_kind", vocab.BandwidthKind)):
        missing = [v for v in vocab.values(vocabulary) if v not in columns[column]]
        assert not missing, f"measurement_full.{column}'s description does not name {missing}"


def test_every_source_kind_is_a_source_type():
    assert set(registry()) <= set(vocab.values(vocab.SourceType))
    assert Source.model_fields["kind"].description == ", ".join(vocab.values(vocab.SourceType))


def test_the_record_format_documentation_names_every_value():
    text = (ROOT / "docs" / "records.md").read_text(encoding="utf-8")
    for vocabulary in (vocab.Phase, vocab.Figure, vocab.NatureKind):
        missing = [v for v in vocab.values(vocabulary) if f"`{v}`" not in text]
        assert not missing, f"docs/records.md does not name {missing}"
