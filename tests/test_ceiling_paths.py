"""The ceiling has one home (tpsdb.ceiling): on random facts, every path gives the same number and the same verdict.

The paths: the domain function itself, the validator (`add` refuses a checked figure above it), the stored view
(`measurement_full.calc_ceiling_tps`, `ceiling_check`), `tpsdb ceiling` (publish.ceiling.compute) and a `ceiling`
table (publish.tables.build_machines). Before, one `qwen3moe 30B.A3B` file gave four answers (issue 17).
"""

from __future__ import annotations

import itertools
import math
from datetime import date

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlmodel import Session

from tpsdb import ceiling, db
from tpsdb.models import Hardware, Model, ModelFile
from tpsdb.publish.ceiling import CeilingError, compute
from tpsdb.publish.definitions import definition_from_dict
from tpsdb.publish.kinds.machines import build_machines
from tpsdb.record import validate
from tpsdb.store import Store

TODAY = date(2026, 12, 1)
_names = itertools.count()


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = db.make_engine(str(tmp_path_factory.mktemp("paths") / "paths.sqlite"))
    db.migrate(engine)
    return engine


facts = st.fixed_dictionaries({
    "cited": st.one_of(st.none(), st.floats(100, 5000).map(lambda x: round(x, 1))),
    "kind": st.sampled_from(["vendor", "relayed"]),
    "stated": st.one_of(st.none(), st.floats(100, 5000).map(lambda x: round(x, 1))),
    "params": st.floats(1, 60).map(lambda x: round(x, 2)),
    "bytes_per_param": st.floats(0.15, 1.0),  # a plausible file for its parameters (the validator checks it)
    # dense; a reference active share; a share stated only by llama-bench's label; a mixture of experts, share unknown
    "moe": st.sampled_from(["dense", "reference", "label", "unknown"]),
    "active_part": st.floats(0.02, 0.9),
    "label": st.tuples(st.integers(2, 400), st.integers(1, 40)).filter(lambda t: t[1] < t[0]),
    "users": st.sampled_from([(1, "per_user"), (8, "aggregate")]),
    "tps": st.floats(1, 3000).map(lambda x: round(x, 2)),
})


def _size(f: dict) -> float:
    return f.get("size") or round(f["params"] * f["bytes_per_param"], 2)


def _record(f: dict, hardware: str, model: str, tps: float) -> dict:
    label = f"{model} {f['label'][0]}B.A{f['label'][1]}B" if f["moe"] == "label" else model
    users, figure = f["users"]
    return {
        "source": {"url": "https://example.org/bench#1", "retrieved_at": TODAY.isoformat(),
                   "quote": f"| {label} {f.get('quant', 'Q4_0')} | {_size(f)} GB | tg128 | {tps:g} |"},
        "hardware": {"name": hardware, "memory_bandwidth_gbs": f["stated"]},
        "model": {"name": model, "params_b": f["params"], "file_size_gb": _size(f)},
        "quantization": f.get("quant", "Q4_0"),
        "software": {"name": "llama.cpp", "version": "b6000"},
        "lengths": {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 0},
        "concurrency": {"users": users, "figure": figure},
        "nature": {"kind": "measured", "procedure": "llama-bench -n 128"},
        "phase": "generation",
        "tokens_per_second": tps,
    }


def _reference(session: Session, f: dict, hardware: str, model: str) -> None:
    """The machine's and the model's reference facts, as `tpsdb reference` stores them."""
    machine = Hardware(name=hardware)
    if f["cited"] is not None:
        machine.memory_bandwidth_gbs, machine.bandwidth_kind = f["cited"], f["kind"]
        machine.bandwidth_source_url = "https://example.org/spec"
    row = Model(name=model, params_b=f["params"])
    if f["moe"] == "reference":
        row.mixture_of_experts, row.active_params_b = True, round(f["params"] * f["active_part"], 3)
    elif f["moe"] == "unknown":
        row.mixture_of_experts = True
    session.add_all([machine, row])
    session.flush()


def _same(a: float | None, b: float | None, rel_tol: float = 1e-9) -> bool:
    return (a is None) == (b is None) and (a is None or math.isclose(a, b, rel_tol=rel_tol))


# No shrinking: each example builds rows in a database, and a shrink of a failure ran for minutes.
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(f=facts)
def test_every_path_gives_the_same_ceiling_and_verdict(engine, f):
    n = next(_names)
    hardware, model = f"Machine {n}", f"model-{n}"
    with Session(engine) as session:
        _reference(session, f, hardware, model)
        store = Store(session, today=TODAY)

        # 1. the domain function
        record = _record(f, hardware, model, f["tps"])
        expected = ceiling.ceiling_of(
            ceiling.choose_bandwidth(f["cited"], f["kind"], f["stated"]), _size(f),
            ceiling.active_share(model, f["params"], None, store.model_of(model), record["source"]["quote"]),
            users=f["users"][0], figure=f["users"][1])

        # 2. the validator: a checked figure above the maximum is refused, any other accepted
        outcome = validate(record, bandwidth_of=store.bandwidth_of, model_of=store.model_of, today=TODAY)
        above = expected.check == ceiling.CHECKED and expected.value is not None and f["tps"] > expected.value
        assert outcome.accepted is not above, outcome.reasons
        if above:
            assert f"> {expected.value:.2f}" in outcome.reasons[0]

        # 3. the stored view, on a figure below any maximum (0.5 t/s: the smallest maximum here is 100 / 60 / 1)
        low = _record(f, hardware, model, 0.5)
        assert store.put(low).outcome == "accepted"
        store.flush()
        value, check = session.execute(text(
            "SELECT calc_ceiling_tps, ceiling_check FROM measurement_full WHERE hardware = :h"), {"h": hardware}).one()
        assert _same(value, expected.value) and check == expected.check

        # 4. `tpsdb ceiling`: the maximum of one user on that file, or an error naming the unknown input
        try:
            computed = compute(session, hardware, model, "Q4_0")[0].per_user_tps
        except CeilingError:
            computed = None
        one_user = ceiling.ceiling_of(expected.bandwidth, _size(f), expected.share)
        assert _same(computed, one_user.value)

        # 5. a ceiling table of that model and format
        d = definition_from_dict({"kind": "ceiling", "title": "t", "pick": "best", "pick_reason": "r",
                                  "fixed": {"model": model, "quantization": "Q4_0", "phase": "generation"}}, "t")
        row = next(r for r in build_machines(session.connection(), d).rows if r["hardware"].text == hardware)
        assert _same(row["ceiling_tps"].value, expected.value, rel_tol=1e-6)  # a cell keeps 6 decimals
        session.commit()


def test_the_views_sql_is_generated_from_the_rule(engine):
    """No second copy: the view's text holds the verdicts and the bandwidth choice tpsdb.ceiling writes."""
    with engine.connect() as conn:
        sql = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'measurement_full'").scalar_one()
    for verdict in (ceiling.CHECKED, ceiling.NO_BANDWIDTH, ceiling.NO_SIZE, ceiling.MOE_UNKNOWN):
        assert f"'{verdict}'" in sql
    assert ceiling.sql_bandwidth("h.memory_bandwidth_gbs", "m.hardware_bandwidth_gbs") in sql


def test_the_four_ceilings_case_gives_one_number(engine):
    """Issue 17's case: qwen3moe 30B.A3B Q4_K_M, 18.56 GB, 30.53 B, share stated only by the label, 1008 GB/s."""
    f = {"cited": 1008.0, "kind": "vendor", "stated": None, "size": 18.56, "params": 30.53, "moe": "dense",
         "users": (1, "per_user"), "quant": "Q4_K_M"}
    hardware, model = "RTX 4090 (four ceilings)", "qwen3moe 30B.A3B"
    with Session(engine) as session:
        _reference(session, f, hardware, model)
        store = Store(session, today=TODAY)
        refused = validate(_record(f, hardware, model, 700), bandwidth_of=store.bandwidth_of,
                           model_of=store.model_of, today=TODAY)
        assert refused.reasons and refused.reasons[0].startswith("tokens_per_second: above_ceiling: 700 > 543.10")
        assert store.put(_record(f, hardware, model, 150)).outcome == "accepted"
        store.flush()
        value, check = session.execute(text("SELECT calc_ceiling_tps, ceiling_check FROM measurement_full "
                                            "WHERE hardware = :h"), {"h": hardware}).one()
        assert (round(value, 2), check) == (543.10, "checked")
        assert round(compute(session, hardware, model, "Q4_K_M")[0].per_user_tps, 2) == 543.10
        d = definition_from_dict({"kind": "ceiling", "title": "t", "pick": "best", "pick_reason": "r",
                                  "fixed": {"model": model, "quantization": "Q4_K_M", "phase": "generation"}}, "t")
        row = next(r for r in build_machines(session.connection(), d).rows if r["hardware"].text == hardware)
        assert row["ceiling_tps"].text == "543.10" and row["share"].text == "27.6%"
        session.rollback()


def test_reference_facts_given_later_recompute_the_stored_share(engine, tmp_path):
    """A figure stored while its model's share was unknown gets its ceiling once the reference states the share."""
    from tpsdb.reference import load_reference

    hardware, model = "Machine later", "later-moe"
    f = {"cited": 800.0, "kind": "vendor", "stated": None, "size": 10.0, "params": 20.0, "moe": "unknown",
         "users": (1, "per_user")}
    with Session(engine) as session:
        _reference(session, f, hardware, model)
        store = Store(session, today=TODAY)
        assert store.put(_record(f, hardware, model, 5.0)).outcome == "accepted"
        store.flush()
        query = text("SELECT calc_ceiling_tps, ceiling_check FROM measurement_full WHERE hardware = :h")
        assert session.execute(query, {"h": hardware}).one() == (None, ceiling.MOE_UNKNOWN)
        path = tmp_path / "later.toml"
        path.write_text(f'[[model]]\nname = "{model}"\nactive_params_b = 2.0\n'
                        'active_params_source_url = "https://example.org/card"\nactive_params_quote = "2B active"\n')
        load_reference(session, path)
        value, check = session.execute(query, {"h": hardware}).one()
        assert (round(value, 2), check) == (800.0, ceiling.CHECKED)  # 800 / (10 × 2/20)
        session.rollback()


def test_a_figure_stating_what_its_model_lacked_updates_the_figures_stored_before(engine):
    """The stored share is recomputed when a later figure fills the model's active parameters."""
    hardware, model = "Machine filled", "filled-moe"
    f = {"cited": 800.0, "kind": "vendor", "stated": None, "size": 10.0, "params": 20.0, "moe": "unknown",
         "users": (1, "per_user")}
    with Session(engine) as session:
        _reference(session, f, hardware, model)
        store = Store(session, today=TODAY)
        assert store.put(_record(f, hardware, model, 5.0)).outcome == "accepted"
        store.flush()
        query = text("SELECT calc_ceiling_tps FROM measurement_full WHERE hardware = :h ORDER BY measurement_id")
        assert session.execute(query, {"h": hardware}).scalars().all() == [None]
        stating = _record(f, hardware, model, 6.0)
        stating["model"]["active_params_b"] = 2.0
        assert store.put(stating).outcome == "accepted"
        store.flush()
        assert [round(v, 2) for v in session.execute(query, {"h": hardware}).scalars()] == [800.0, 800.0]
        session.rollback()


def test_a_model_file_row_is_in_the_schema():
    assert "same_file_id" in ModelFile.model_fields
