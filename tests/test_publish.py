"""Published tables, computed maxima and charts (issue 5), on small real SQLite databases built in each test."""

from __future__ import annotations

import copy
import csv
import io
import json
import re
from datetime import date
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlmodel import Session

from conftest import ROOT, VALID_RECORD, run_cli
from shared_data import DGX_SPARK_MD, need
from tpsdb import db
from tpsdb.models import Hardware
from tpsdb.publish.ceiling import CeilingError, compute, format_text
from tpsdb.publish.charts import chart_svg
from tpsdb.publish.definitions import (
    DefinitionError,
    Layout,
    TableKind,
    definition_from_dict,
    load_definition,
    load_definitions,
    register,
    registered_kinds,
)
from tpsdb.publish.render import render_csv, render_html, render_json, render_many, render_markdown
from tpsdb.publish.site import publish_site
from tpsdb.publish.tables import NO_MEASUREMENT, build_table
from tpsdb.store import Store

TODAY = date(2026, 11, 30)
URL_4167 = "https://github.com/ggml-org/llama.cpp/discussions/4167#discussioncomment-{}"
SPARK, ULTRA, M1 = "NVIDIA DGX Spark", "Apple M2 Ultra (76-core GPU)", "Apple M1 (8-core GPU)"
HARDWARE = [  # name, bandwidth GB/s, memory GB; M1 has no cited bandwidth
    (SPARK, 273, 128), (ULTRA, 800, 192), (M1, None, None),
]
SIZES = {"F16": 13.48, "Q8_0": 7.16, "Q4_0": 3.79}
GPT_OSS = {"gpt-oss 20B": (20.91, 3.61, 12.11), "gpt-oss 120B": (116.83, 5.13, 63.37)}


def rec(hardware: str, tps: float, *, model: str = "Llama 2 7B", quant: str = "Q4_0", software: str = "llama.cpp",
        version: str = "b1000", options: dict | None = None, gen: int = 128, depth: int = 0, users: int = 1,
        figure: str = "per_user", published: str = "2025-01-01", comment: int = 1, url: str | None = None,
        quote: str | None = None, computed: bool = False) -> dict:
    """A valid record (format v1) of one generation figure."""
    r = copy.deepcopy(VALID_RECORD)
    if model in GPT_OSS:
        params, active, size = GPT_OSS[model]
        r["model"] = {"name": model, "params_b": params, "active_params_b": active, "file_size_gb": size}
    else:
        r["model"] = {"name": model, "params_b": 6.74, "file_size_gb": SIZES[quant]}
    r["hardware"] = {"name": hardware}
    r["quantization"] = quant
    r["software"] = {"name": software, "version": version, "options": options or {}}
    r["lengths"] = {"prompt_tokens": 0, "generated_tokens": gen, "context_depth": depth}
    r["concurrency"] = {"users": users, "figure": figure}
    r["tokens_per_second"] = tps
    r["stddev"] = None
    r["source"] = {"url": url or URL_4167.format(comment), "retrieved_at": "2026-09-06", "published_at": published,
                   "author": None, "quote": quote or f"| {hardware} | {quant} | tg{gen} | {tps} |"}
    if computed:
        r["nature"] = {"kind": "computed", "formula": "bandwidth / size", "inputs": {"bandwidth": 1, "size": 1}}
    return r


def build_db(tmp_path: Path, records: list[dict], name: str = "t.sqlite"):
    """A migrated SQLite file with the reference hardware and the records stored through Store (validator included)."""
    path = tmp_path / name
    engine = db.make_engine(str(path))
    db.migrate(engine)
    with Session(engine) as session:
        for hw, bandwidth, memory in HARDWARE:
            session.add(Hardware(name=hw, memory_bandwidth_gbs=bandwidth, memory_gb=memory,
                                 bandwidth_source_url=f"https://vendor.example/{hw.split()[1].lower()}-spec"
                                 if bandwidth else None))
        session.commit()
        store = Store(session, today=TODAY)
        outcomes = [store.put(r) for r in records]
        store.flush()
        session.commit()
    return engine, path, outcomes


def definition(kind: str, fixed: dict, **layout) -> object:
    return definition_from_dict({"kind": kind, "title": f"Test {kind}", "fixed": fixed, **layout}, f"t-{kind}")


TG128 = {"model": "Llama 2 7B", "quantization": "Q4_0", "software": "llama.cpp", "phase": "generation",
         "prompt_tokens": 0, "generated_tokens": 128, "context_depth": 0, "users": 1, "figure": "per_user"}


def build(engine, d):
    with engine.connect() as conn:
        return build_table(conn, d)


def row_of(table, key: str, value: str) -> dict:
    rows = [r for r in table.rows if r[key].text == value]
    assert len(rows) == 1, f"{value!r} in {[r[key].text for r in table.rows]}"
    return rows[0]


def footnote(table, cell):
    return next(f for f in table.footnotes if f.number == cell.footnote)


# ------------------------------------------------------------------------------------------- 1. machines
def test_machines_one_row_per_hardware_with_bandwidth_and_footnotes(tmp_path):
    engine, _, outcomes = build_db(tmp_path, [
        rec(SPARK, 50.0, version="b900", published="2024-05-01", comment=1),
        rec(SPARK, 57.12, version="b1000", published="2025-03-01", comment=2),
        rec(ULTRA, 94.27, version="8e672efe", published="2023-12-01", comment=3),
        rec(M1, 14.19, version="8e672efe", comment=4),
        rec(ULTRA, 99.0, quant="Q8_0", comment=5),  # another format: not in this table
        rec(SPARK, 58.0, gen=32, comment=6),  # another test: not in this table
    ])
    assert all(o.outcome == "accepted" for o in outcomes)
    table = build(engine, definition("machines", TG128, pick="latest"))
    assert [r["hardware"].text for r in table.rows] == [ULTRA, SPARK, M1]  # measured figure, highest first
    spark = row_of(table, "hardware", SPARK)
    assert spark["tokens_per_second"].text == "57.12" and spark["tokens_per_second"].kind == "measured"
    assert spark["bandwidth_gbs"].text == "273" and spark["figures"].text == "2"
    assert spark["software"].text == "llama.cpp b1000"
    note = footnote(table, spark["tokens_per_second"])
    assert note.url == URL_4167.format(2) and note.retrieved_at == "2026-09-06" and "57.12" in note.quote
    assert footnote(table, spark["bandwidth_gbs"]).url == "https://vendor.example/dgx-spec"
    m1 = row_of(table, "hardware", M1)
    assert m1["bandwidth_gbs"].text == "" and m1["bandwidth_gbs"].footnote is None  # unknown stays empty
    fixed = dict(table.held_fixed)
    assert fixed["Model"].startswith("Llama 2 7B") and "Q4_0 file 3.79 GB" in fixed["Model"]
    assert fixed["Quantization"] == "Q4_0" and fixed["Concurrency"] == "1 user, per-user figure"
    assert "generated tokens 128" in fixed["Lengths"] and "measured" in fixed["Nature"]
    assert not any(c.kind == "calc" for c in table.columns)


def test_only_active_measured_figures_fill_cells(tmp_path):
    engine, _, outcomes = build_db(tmp_path, [
        rec(SPARK, 57.12, comment=1),
        rec(SPARK, 70.0, comment=2, published="2026-01-01"),  # will be superseded
        rec(ULTRA, 150.0, comment=3, computed=True),  # a calculation: never fills a measured cell
        {**rec(ULTRA, 90.0, comment=4), "quantization": "4-bit"},  # rejected
    ])
    assert [o.outcome for o in outcomes] == ["accepted", "accepted", "accepted", "rejected"]
    with engine.begin() as conn:
        conn.execute(text("UPDATE measurement SET status = 'superseded' WHERE tokens_per_second = 70.0"))
    table = build(engine, definition("machines", TG128, rows=[SPARK, ULTRA], pick="best"))
    assert row_of(table, "hardware", SPARK)["tokens_per_second"].text == "57.12"
    ultra = row_of(table, "hardware", ULTRA)
    assert ultra["tokens_per_second"].value is None and ultra["tokens_per_second"].text == ""
    assert ultra["tokens_per_second"].footnote is None and ultra["figures"].text == "0"
    assert ultra["bandwidth_gbs"].text == "800"  # the listed row still shows its bandwidth
    assert "150" not in render_markdown(table) and "90" not in render_markdown(table)


# --------------------------------------------------------------------------------------------- 2. ceiling
def test_ceiling_arithmetic_labels_and_required_bandwidth(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 57.12), rec(ULTRA, 94.27, comment=2), rec(M1, 14.19, comment=3)])
    table = build(engine, definition("ceiling", TG128, require_bandwidth=True))
    labels = {c.key: c.label for c in table.columns}
    assert "calc." in labels["ceiling_tps"] and "calc." in labels["share"]
    assert {c.key: c.kind for c in table.columns}["ceiling_tps"] == "calc"
    spark = row_of(table, "hardware", SPARK)
    assert spark["ceiling_tps"].text == "72.03"  # 273 / 3.79
    assert spark["ceiling_tps"].kind == "calc" and spark["ceiling_tps"].footnote is None
    assert spark["share"].text == "79.3%"  # 57.12 / 72.03
    assert row_of(table, "hardware", ULTRA)["ceiling_tps"].text == "211.08"  # 800 / 3.79
    assert M1 not in [r["hardware"].text for r in table.rows]  # no cited bandwidth: left out
    assert any("calc." in n for n in table.notes)
    assert table.chart["read_gb"] == pytest.approx(3.79)


def test_ceiling_of_listed_machine_without_figure_stays_a_calculation(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec(ULTRA, 94.27)])
    table = build(engine, definition("ceiling", TG128, rows=[SPARK, ULTRA]))
    spark = row_of(table, "hardware", SPARK)
    assert spark["tokens_per_second"].text == "" and spark["share"].text == ""  # no measurement: empty
    assert spark["ceiling_tps"].text == "72.03" and spark["ceiling_tps"].kind == "calc"


def test_ceiling_of_a_mixture_of_experts_uses_the_active_share(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 59.02, model="gpt-oss 120B", quant="MXFP4", gen=32,
                                           version="b6918 (2f68ce7cf)")])
    fixed = {"model": "gpt-oss 120B", "quantization": "MXFP4", "phase": "generation", "users": 1}
    spark = row_of(build(engine, definition("ceiling", fixed)), "hardware", SPARK)
    assert spark["ceiling_tps"].text == "98.11"  # 273 / (63.37 × 5.13 / 116.83)
    assert spark["share"].text == "60.2%"


# ------------------------------------------------------------------------------------------- pick rules
@pytest.mark.parametrize("pick, expected", [("best", "70"), ("median", "50"), ("latest", "40")])
def test_pick_rules(tmp_path, pick, expected):
    engine, _, _ = build_db(tmp_path, [
        rec(SPARK, 60.0, published="2025-01-01", comment=1),
        rec(SPARK, 50.0, published="2025-02-01", comment=2),
        rec(SPARK, 70.0, published="2024-01-01", comment=3),
        rec(SPARK, 40.0, published="2026-01-01", comment=4),
    ])
    table = build(engine, definition("machines", TG128, pick=pick))
    cell = row_of(table, "hardware", SPARK)["tokens_per_second"]
    assert cell.text == expected  # median of 40, 50, 60, 70: the lower middle one, a real figure
    assert "4 qualifying figures" in cell.hint
    assert any(f'pick = "{pick}"' in n for n in table.notes)


def test_latest_breaks_date_ties_by_build_number(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 51.0, version="b6000", comment=1),
                                       rec(SPARK, 52.0, version="b7000", comment=2)])
    cell = row_of(build(engine, definition("machines", TG128, pick="latest")), "hardware", SPARK)["tokens_per_second"]
    assert cell.text == "52"


# ----------------------------------------------------------------------------------------- 3. quantization
def test_quantization_formats_side_by_side(tmp_path):
    engine, _, _ = build_db(tmp_path, [
        rec(ULTRA, 41.0, quant="F16", comment=1), rec(ULTRA, 66.0, quant="Q8_0", comment=2),
        rec(ULTRA, 94.27, quant="Q4_0", comment=3),
        rec(M1, 7.92, quant="Q8_0", comment=4), rec(M1, 14.19, quant="Q4_0", comment=5),
    ])
    fixed = {k: v for k, v in TG128.items() if k != "quantization"}
    table = build(engine, definition("quantization", fixed, columns=["F16", "Q8_0", "Q4_0"]))
    ultra = row_of(table, "hardware", ULTRA)
    assert [ultra[f"tps_{q}"].text for q in ("F16", "Q8_0", "Q4_0")] == ["41", "66.00", "94.27"]
    assert ultra["speedup_Q4_0"].text == "×2.30" and ultra["speedup_Q8_0"].text == "×1.61"
    assert ultra["size_Q4_0"].text == "×3.56" and ultra["size_Q8_0"].text == "×1.88"  # 13.48 / 3.79, / 7.16
    m1 = row_of(table, "hardware", M1)
    assert m1["tps_F16"].text == "" and m1["speedup_Q4_0"].text == "" and m1["size_Q4_0"].text == ""
    assert all("calc." in c.label for c in table.columns if c.key.startswith(("speedup", "size")))
    assert [r["label"] for r in table.chart["rows"]] == [ULTRA]


# -------------------------------------------------------------------------------------------- 4. versions
def test_versions_of_unknown_order_say_so_with_options_rows(tmp_path):
    engine, _, _ = build_db(tmp_path, [
        rec(ULTRA, 125.5, version="c1d0e7a00", published="2025-06-01", options={"fa": 1}, comment=1),
        rec(ULTRA, 94.27, version="8e672efe", published="2023-11-20", comment=2),
        rec(ULTRA, 96.0, version="8e672efe", published="2024-02-01", comment=3),
        rec(ULTRA, 110.0, version="5c0eb5ef5", published="2024-09-01", options={"fa": 1}, comment=4),
        rec(ULTRA, 41.0, quant="F16", version="8e672efe", published="2023-11-20", comment=5),
    ])
    fixed = {k: v for k, v in TG128.items() if k != "quantization"} | {"hardware": ULTRA}
    table = build(engine, definition("versions", fixed, columns=["F16", "Q4_0"], pick="median"))
    # Issue 9 item 4: commits without build numbers have no known order; a post's date is not a build's date.
    assert [r["version"].text for r in table.rows] == ["5c0eb5ef5", "8e672efe", "c1d0e7a00"]
    _, middle, last = table.rows
    assert middle["tps_Q4_0"].text == "94.27"  # median of 94.27 and 96: the lower one
    assert middle["first_seen"].text == "2023-11-20" and middle["tps_F16"].text == "41"
    assert last["options"].text == "fa=1" and last["tps_F16"].text == ""
    assert "change_Q4_0" not in last  # no "vs oldest" without an oldest
    assert any("order of these versions is unknown" in n for n in table.notes)


def test_versions_in_build_order_when_every_version_has_one(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 55.0, version="b7000", published="2024-01-01", comment=1),
                                       rec(SPARK, 50.0, version="b6000", published="2025-01-01", comment=2)])
    fixed = {k: v for k, v in TG128.items()} | {"hardware": SPARK}
    table = build(engine, definition("versions", fixed))
    assert [r["version"].text for r in table.rows] == ["b6000", "b7000"]


# -------------------------------------------------------------------------------------------- 5. software
def test_software_one_row_per_program(tmp_path):
    gpt = dict(model="gpt-oss 20B", quant="MXFP4", gen=32)
    engine, _, _ = build_db(tmp_path, [
        rec(SPARK, 84.1, version="b6918 (2f68ce7cf)", **gpt, comment=1),
        rec(SPARK, 49.7, software="Ollama", version="0.12.3", url="https://lmsys.example/spark", **gpt),
    ])
    fixed = {"hardware": SPARK, "model": "gpt-oss 20B", "quantization": "MXFP4", "phase": "generation", "users": 1}
    table = build(engine, definition("software", fixed, rows=["llama.cpp", "Ollama", "vLLM"]))
    assert [r["software"].text for r in table.rows] == ["llama.cpp", "Ollama", "vLLM"]
    assert row_of(table, "software", "Ollama")["tokens_per_second"].text == "49.7"
    assert row_of(table, "software", "Ollama")["version"].text == "0.12.3"
    vllm = row_of(table, "software", "vLLM")
    assert vllm["tokens_per_second"].text == "" and vllm["version"].text == ""


# ----------------------------------------------------------------------------------------- 6. concurrency
GPT_BATCHED = dict(model="gpt-oss 20B", quant="MXFP4", gen=32, depth=512, version="b6918 (2f68ce7cf)")
CONCURRENCY_FIXED = {"hardware": SPARK, "model": "gpt-oss 20B", "quantization": "MXFP4", "phase": "generation",
                     "generated_tokens": 32, "context_depth": 512}


def test_concurrency_per_user_aggregate_and_gain(tmp_path):
    gpt = dict(GPT_BATCHED, figure="aggregate")
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 81.11, users=1, **gpt), rec(SPARK, 95.0, users=2, **gpt),
                                       rec(SPARK, 614.82, users=32, **gpt)])
    fixed = CONCURRENCY_FIXED
    table = build(engine, definition("concurrency", fixed, rows=[1, 2, 4, 32]))
    assert [r["users"].text for r in table.rows] == ["1", "2", "4", "32"]
    n32 = row_of(table, "users", "32")
    assert n32["aggregate"].text == "614.82" and n32["per_user"].text == ""  # no per-user figure measured
    assert n32["per_user_calc"].text == "19.21" and n32["per_user_calc"].kind == "calc"  # 614.82 / 32
    assert n32["gain"].text == "×7.58"  # 614.82 / 81.11
    assert row_of(table, "users", "1")["gain"].text == "×1.00"
    n4 = row_of(table, "users", "4")
    assert n4["aggregate"].text == "" and n4["gain"].text == "" and n4["per_user_calc"].text == ""
    assert "users vary" not in dict(table.held_fixed)["Concurrency"]
    assert [s["aggregate"] for s in table.chart["series"]] == [81.11, 95.0, None, 614.82]


# --------------------------------------------------------------------------------------------- 7. sources
def test_sources_one_example_each(tmp_path):
    engine, _, _ = build_db(tmp_path, [
        rec(SPARK, 57.12, comment=1, published="2025-01-01"), rec(SPARK, 59.0, comment=2, published="2025-05-01"),
        rec(SPARK, 42.1, software="Ollama", version="0.12.3", url="https://servethehome.example/spark-review"),
        rec(ULTRA, 94.27, comment=3),  # another machine
    ])
    table = build(engine, definition("sources", {"hardware": SPARK, "phase": "generation"}, pick="latest"))
    assert [r["source"].text for r in table.rows] == ["llama.cpp discussion 4167",
                                                      "servethehome.example/spark-review"]
    first = table.rows[0]
    assert first["figures"].text == "2" and first["example"].text == "59.0"  # as many decimals as 42.1 below it
    assert first["source"].href == "https://github.com/ggml-org/llama.cpp/discussions/4167"
    assert table.rows[1]["software"].text == "Ollama 0.12.3" and table.rows[1]["lengths"].text == "tg128"


# ---------------------------------------------------------------------------------------------- 8. spread
def test_spread_ranks_every_figure_and_names_what_differs(tmp_path):
    gpt = dict(model="gpt-oss 120B", quant="MXFP4", gen=32)
    engine, _, _ = build_db(tmp_path, [
        rec(SPARK, 55.4, version="b6918 (2f68ce7cf)", comment=1, **gpt),
        rec(SPARK, 42.0, version="b6800", comment=2, **gpt),
        rec(SPARK, 51.85, version="b6918 (2f68ce7cf)", depth=8192, comment=3, **gpt),
        rec(SPARK, 14.5, software="Ollama", version="0.12.3", url="https://servethehome.example/spark", **gpt),
        rec(SPARK, 30.0, users=2, figure="aggregate", comment=4, **gpt),  # two users: not in this table
    ])
    d = definition("spread", {"hardware": SPARK, "model": "gpt-oss 120B", "phase": "generation", "users": 1})
    table = build(engine, d)
    assert [r["tokens_per_second"].text for r in table.rows] == ["55.40", "51.85", "42.00", "14.50"]
    differs = [r["differs"].text for r in table.rows]
    assert differs[0] == "(the highest figure)"
    assert differs[1] == "lengths: tg32 @ d8192"
    assert differs[2] == "software: llama.cpp b6800"
    assert "software: Ollama 0.12.3" in differs[3] and "source: servethehome.example/spark" in differs[3]
    assert table.rows[3]["vs_top"].text == "26.2%"
    limited = build(engine, definition("spread", dict(d.fixed), limit=2))
    assert len(limited.rows) == 2 and limited.total_rows == 4 and any("2 highest of 4" in n for n in limited.notes)


# ----------------------------------------------------------------------------------------- empty tables
def test_every_shipped_table_renders_on_an_empty_database(tmp_path):
    """Every tables/*.toml the project ships (whatever they are: the article's eight, the datasets' own, a new one)
    loads, builds and renders in every format on a database holding no figure, and the site publishes them all."""
    engine, _, _ = build_db(tmp_path, [])
    shipped = sorted((ROOT / "tables").glob("*.toml"))
    assert len(shipped) >= 8
    definitions = load_definitions(ROOT / "tables")
    assert sorted(d.path for d in definitions) == shipped  # each file is one definition, none left out
    with engine.connect() as conn:
        tables = [build_table(conn, load_definition(path)) for path in shipped]
    assert {t.definition.kind for t in tables} <= {k.name for k in registered_kinds()}
    for table in tables:
        assert table.empty and table.notes[0].startswith(NO_MEASUREMENT)
        for renderer in (render_markdown, render_html, render_csv, render_json):
            out = renderer(table)
            assert table.definition.columns == () or out
        assert NO_MEASUREMENT in render_markdown(table)
        assert json.loads(render_json(table))["empty"] is True
        header = next(csv.reader(io.StringIO(render_csv(table))))
        assert header[0] == table.columns[0].label
        assert "Held fixed: Model" in header or table.definition.kind == "conformance"  # counts, not figures
    machines = next(t for t in tables if t.definition.kind == "machines")
    assert chart_svg(machines.chart) == (None, "No chart: no measured figure to draw yet.")
    site = publish_site(engine, definitions, tmp_path / "site")
    # and figures.html, rejections.html, the machines-and-models page and the three downloads (no machine or model)
    assert len(site) == 1 + 4 * len(definitions) + 2 + 1 + 3


def test_a_registered_kind_is_a_table_kind_with_its_own_layout(tmp_path):
    """A kind is its module's TableKind: once registered, definitions of it load (its Layout checked: the [fixed]
    keys it needs and varies, its layout keys) and build through build_table, with no list elsewhere to edit."""
    from tpsdb.publish import definitions as registry
    from tpsdb.publish.tables import Column, Footnotes, finish, held_fixed, pick_figures, text_cell

    def build_models(conn, d):
        rows = [{"hardware": text_cell(r["hardware"])} for r in pick_figures(conn, d, ["hardware"])]
        return finish(conn, d, [Column("hardware", "Hardware")], rows, held_fixed(conn, d, {}), [], Footnotes())

    probe = TableKind("probe-kind", 99, build_models, Layout(required=("model",), forbidden=("hardware",),
                                                             keys=frozenset({"limit"})))
    register(probe)
    try:
        assert registered_kinds()[-1] is probe
        d = definition_from_dict({"kind": "probe-kind", "title": "Probe", "fixed": {"model": "Llama 2 7B"},
                                  "limit": 3}, "probe")
        with pytest.raises(DefinitionError, match="a probe-kind table needs fixed.model"):
            definition_from_dict({"kind": "probe-kind", "title": "Probe"}, "probe")
        with pytest.raises(DefinitionError, match="key 'rows' does not apply to a probe-kind table"):
            definition_from_dict({"kind": "probe-kind", "title": "P", "fixed": {"model": "x"}, "rows": []}, "probe")
        engine, _, _ = build_db(tmp_path, [rec(SPARK, 57.12), rec(ULTRA, 90.5)])
        assert sorted(r["hardware"].text for r in build(engine, d).rows) == [ULTRA, SPARK]
    finally:
        registry._KINDS.pop("probe-kind")
    with pytest.raises(DefinitionError, match="kind = 'probe-kind' is not one of machines, ceiling"):
        definition_from_dict({"kind": "probe-kind", "title": "Probe", "fixed": {"model": "x"}}, "probe")


# ----------------------------------------------------------------------------------------- rendering
def test_source_text_is_escaped(tmp_path):
    hostile = "| NVIDIA DGX Spark | 57.12 | <script>alert('x')</script> <img src=x onerror=alert(1)>"
    engine, _, outcomes = build_db(tmp_path, [rec(SPARK, 57.12, quote=hostile)])
    assert outcomes[0].outcome == "accepted"
    with engine.begin() as conn:
        conn.execute(text("UPDATE source SET title = '<b>Spark</b> & \"friends\"'"))
    table = build(engine, definition("machines", TG128))
    html = render_html(table)
    assert "<script>" not in html and "<img" not in html and "<b>Spark" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;" in html
    assert "&lt;b&gt;Spark&lt;/b&gt; &amp; &#34;friends&#34;" in html
    md = render_markdown(table)
    assert "quote: `| NVIDIA DGX Spark | 57.12 | <script>alert('x')</script>" in md  # in a code span, shown literally
    assert "&lt;b&gt;Spark&lt;/b&gt;" in md


def test_footnotes_in_every_format(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 57.12, comment=7)])
    table = build(engine, definition("machines", TG128))
    url = URL_4167.format(7)
    md = render_markdown(table)
    assert "57.12[^t-machines-2]" in md
    assert f"[^t-machines-2]: [{url}](<{url}>) · retrieved 2026-09-06 · published 2025-01-01" in md
    assert ("[^t-machines-1]: [Memory bandwidth of NVIDIA DGX Spark: 273 GB/s, vendor: stated by the maker's page]"
            "(<https://vendor.example/dgx-spec>)") in md
    html = render_html(table)
    assert '<a href="#t-machines-fn-2">2</a>' in html and '<li id="t-machines-fn-2" value="2">' in html
    assert f'<a href="{url}">' in html and "retrieved 2026-09-06" in html
    rows = list(csv.DictReader(io.StringIO(render_csv(table))))
    assert rows[0]["Measured tokens/s"] == "57.12" and rows[0]["Measured tokens/s source URL"] == url
    assert rows[0]["Measured tokens/s retrieved"] == "2026-09-06" and rows[0]["Held fixed: Quantization"] == "Q4_0"
    data = json.loads(render_json(table))
    cell = data["rows"][0]["tokens_per_second"]
    assert cell == {"text": "57.12", "value": 57.12, "kind": "measured", "footnote": 2, "hint": cell["hint"]}
    assert data["footnotes"][1]["url"] == url and data["footnotes"][1]["retrieved_at"] == "2026-09-06"
    assert json.loads(render_many([table, table], "json"))[1]["name"] == "t-machines"


def test_charts_are_inline_svg_and_deterministic(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 57.12), rec(ULTRA, 94.27, comment=2)])
    table = build(engine, definition("ceiling", TG128))
    svg, caption = chart_svg(table.chart)
    assert svg.startswith("<svg") and "calc." in svg and "NVIDIA DGX Spark" in caption  # named in the key
    assert "calculation" in caption
    assert chart_svg(build(engine, definition("ceiling", TG128)).chart)[0] == svg


# ------------------------------------------------------------------------------------------ definitions
@pytest.mark.parametrize("data, message", [
    ({"kind": "machine", "title": "x"}, "kind = 'machine' is not one of"),
    ({"kind": "machines", "title": "x", "fixed": {"model": "m"}}, "needs fixed.quantization"),
    ({"kind": "machines", "title": "x", "fixed": {"model": "m", "quantization": "Q4_0", "hardware": "h"}},
     "varies hardware"),
    ({"kind": "machines", "title": "x", "fixed": {"model": "m", "quantization": "Q4_0", "modle": "m"}},
     "unknown key fixed.modle"),
    ({"kind": "machines", "title": "x", "colour": "red"}, "unknown key 'colour'"),
    ({"kind": "machines", "title": "x", "limit": 3, "fixed": {"model": "m", "quantization": "Q4_0"}},
     "'limit' does not apply to a machines table"),
    ({"kind": "spread", "title": "x", "pick": "mean", "fixed": {"hardware": "h", "model": "m"}}, "pick = 'mean'"),
    ({"kind": "spread", "title": "x", "fixed": {"hardware": "h", "model": "m", "users": "one"}}, "non-negative integer"),
    ({"kind": "quantization", "title": "x", "baseline": "F32", "fixed": {"model": "m"}}, "baseline 'F32'"),
])
def test_definition_errors_name_the_key(data, message):
    with pytest.raises(DefinitionError, match=message.replace("(", r"\(").replace(".", r"\.")):
        definition_from_dict(data, "t", "t.toml")


# ------------------------------------------------------------------------------------------------- ceiling
def test_ceiling_logic_inputs_sources_and_memory(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 57.12), rec(M1, 14.19, comment=2)])
    with Session(engine) as session:
        (result,) = compute(session, SPARK, "Llama 2 7B", "q4_0")
        assert result.per_user_tps == pytest.approx(72.0317, abs=1e-4) and result.fits is True
        report = format_text([result])
        with pytest.raises(CeilingError, match="memory bandwidth of Apple M1 \\(8-core GPU\\) is unknown"):
            compute(session, M1, "Llama 2 7B", "Q4_0")
        with pytest.raises(CeilingError, match="no F16 file of Llama 2 7B .*formats known: Q4_0"):
            compute(session, SPARK, "Llama 2 7B", "F16")
        with pytest.raises(CeilingError, match="Did you mean: 'Llama 2 7B'"):
            compute(session, SPARK, "Llama 2 7", "Q4_0")
        assert compute(session, SPARK.lower(), "llama 2 7b", "q4_0")[0].model == "Llama 2 7B"  # names in any case
    assert report.startswith("CALCULATION, not a measurement")
    assert "= 273 GB/s ÷ 3.79 GB" in report and "= 72.03 tokens/s per user" in report
    assert "source: https://vendor.example/dgx-spec" in report and f"source: {URL_4167.format(1)}" in report
    assert "has 128 GB: it fits (124.21 GB left" in report


# --------------------------------------------------------------------------------------------------- CLI
def test_cli_tables_publish_and_ceiling(tmp_path):
    _, path, _ = build_db(tmp_path, [
        rec(SPARK, 57.12), rec(ULTRA, 94.27, comment=2),
        rec(SPARK, 59.02, model="gpt-oss 120B", quant="MXFP4", gen=32, comment=3),
    ])
    md = run_cli("tables", "machines", "ceiling", "--format", "md", db=path).stdout
    assert "## Table 1." in md and "## Table 2." in md and "| NVIDIA DGX Spark | 273[^" in md and "72.03" in md
    one = json.loads(run_cli("tables", "ceiling", "--format", "json", db=path).stdout)
    assert one["name"] == "ceiling" and one["rows"][1]["ceiling_tps"]["text"] == "72.03"
    out = tmp_path / "out"
    result = run_cli("tables", "--format", "csv", "--out", str(out), db=path)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{d.name}.csv" for d in load_definitions())
    assert "software.csv (no validated measurement yet)" in result.stderr
    unknown = run_cli("tables", "nope", db=path, check=False)
    assert unknown.returncode == 2 and "no table named 'nope'" in unknown.stderr and "machines" in unknown.stderr

    tables_dir = tmp_path / "defs"
    tables_dir.mkdir()
    (tables_dir / "mine.toml").write_text('kind = "sources"\ntitle = "Mine"\n[fixed]\nhardware = "NVIDIA DGX Spark"\n')
    site = tmp_path / "site"
    run_cli("publish", "--out", str(site), "--tables-dir", str(tables_dir), db=path)
    names = sorted(p.name for p in site.iterdir())
    pages = [name for name in names if name.startswith(("machine-", "model-"))]  # a page per machine and model
    assert [name for name in names if name not in pages] == [
        ".tpsdb-site", "figures.html", "index.html", "machines-and-models.html", "mine.csv", "mine.html", "mine.json",
        "mine.md", "rejections.html", "tpsdb-figures.csv", "tpsdb-figures.jsonl", "tpsdb-rejections.jsonl"]
    assert "machine-nvidia-dgx-spark.html" in pages and all(f'href="{page}"' in (site / "index.html").read_text()
                                                          for page in pages)
    assert 'href="mine.html"' in (site / "index.html").read_text()

    text_out = run_cli("ceiling", "--hardware", SPARK, "--model", "gpt-oss 120B", "--quantization", "MXFP4",
                       "--users", "4", db=path).stdout
    assert text_out.startswith("CALCULATION") and "= 98.11 tokens/s per user" in text_out
    assert "aggregate max. (calc.) for 4 users = 4 × 98.11 = 392.44 tokens/s" in text_out
    assert "5.13 B active per token" in text_out and "it fits" in text_out
    no_memory = run_cli("ceiling", "--hardware", M1, "--model", "Llama 2 7B", "--quantization", "Q4_0", db=path, check=False)
    assert no_memory.returncode == 2 and "memory bandwidth of Apple M1 (8-core GPU) is unknown" in no_memory.stderr
    with Session(db.make_engine(str(path))) as session:
        session.add(Hardware(name="Mystery box", memory_bandwidth_gbs=100, bandwidth_source_url="https://x.example/b"))
        session.commit()
    unknown_memory = run_cli("ceiling", "--hardware", "Mystery box", "--model", "Llama 2 7B", "--quantization", "Q4_0",
                             "--format", "json", db=path)
    data = json.loads(unknown_memory.stdout)[0]
    assert data["kind"] == "calculation" and data["fits"] is None and data["per_user_tps"] == pytest.approx(26.385, 1e-3)
    assert "unknown" in run_cli("ceiling", "--hardware", "Mystery box", "--model", "Llama 2 7B", "--quantization", "Q4_0",
                                db=path).stdout


def test_publish_commands_have_help():
    top = run_cli("--help").stdout
    assert all(command in top for command in ("tables", "publish", "ceiling"))
    ceiling_help = run_cli("ceiling", "--help").stdout
    assert "Usage:" in ceiling_help and "--hardware" in ceiling_help and "calculation" in ceiling_help


def test_project_definitions_are_the_articles_eight():
    definitions = load_definitions(ROOT / "tables")
    by_name = {d.name: d for d in definitions}
    assert by_name["machines"].fixed["model"] == "Llama 2 7B" and by_name["machines"].fixed["generated_tokens"] == 128
    assert by_name["concurrency"].fixed["hardware"] == "NVIDIA DGX Spark" and by_name["concurrency"].rows == (
        1, 2, 4, 8, 16, 32)
    assert by_name["spread"].fixed["model"] == "gpt-oss 120B" and by_name["spread"].fixed["users"] == 1
    assert all(d.pick in ("latest", "best", "median") for d in definitions)


# ------------------------------------------------------------------ output folders (reliability probe P5-P8)
def _site_args(tmp_path):
    tables_dir = tmp_path / "defs"
    tables_dir.mkdir(exist_ok=True)
    (tables_dir / "mine.toml").write_text('kind = "machines"\ntitle = "Mine"\n[fixed]\nmodel = "Llama 2 7B"\n'
                                          'quantization = "Q4_0"\nphase = "generation"\ngenerated_tokens = 128\n')
    return ["--tables-dir", str(tables_dir)]


def _publish(path, out, *extra, tmp_path):
    return run_cli("publish", "--out", str(out), *_site_args(tmp_path), *extra, db=path, check=False)


def test_d16_publish_refuses_a_folder_it_did_not_make_unless_forced(tmp_path):
    _, path, _ = build_db(tmp_path, [rec(SPARK, 57.12)])
    out = tmp_path / "mine"
    out.mkdir()
    for name, content in (("keep.txt", "mine"), ("index.html", "my page"), ("mine.csv", "my,csv")):
        (out / name).write_text(content)
    refused = _publish(path, out, tmp_path=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"error: {out} already holds files tpsdb did not write (index.html, keep.txt, "
                                     "mine.csv)")
    assert [(out / n).read_text() for n in ("keep.txt", "index.html", "mine.csv")] == ["mine", "my page", "my,csv"]
    forced = _publish(path, out, "--force", tmp_path=tmp_path)
    assert forced.returncode == 0 and (out / "keep.txt").read_text() == "mine"
    assert "<!doctype html>" in (out / "index.html").read_text()


def test_d16_publish_replaces_only_its_own_files_in_its_folder(tmp_path):
    _, path, _ = build_db(tmp_path, [rec(SPARK, 57.12)])
    out = tmp_path / "site"
    assert _publish(path, out, tmp_path=tmp_path).returncode == 0
    (out / "notes.txt").write_text("added by hand")  # another file beside the site is left alone
    again = _publish(path, out, tmp_path=tmp_path)
    assert again.returncode == 0 and (out / "notes.txt").read_text() == "added by hand"
    (tmp_path / "defs" / "other.toml").write_text((tmp_path / "defs" / "mine.toml").read_text())
    (out / "other.html").write_text("not tpsdb's")  # a new table's file name, already taken by someone
    clash = _publish(path, out, tmp_path=tmp_path)
    assert clash.returncode == 2 and "other.html were not written by tpsdb" in clash.stderr
    assert (out / "other.html").read_text() == "not tpsdb's"


def test_d15_publish_never_writes_through_a_planted_symlink(tmp_path):
    _, path, _ = build_db(tmp_path, [rec(SPARK, 57.12)])
    out = tmp_path / "site"
    assert _publish(path, out, tmp_path=tmp_path).returncode == 0
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (out / "index.html.tmp").symlink_to(victim)  # the old fixed temporary name
    (out / "mine.csv").unlink()
    (out / "mine.csv").symlink_to(victim)  # a file of the site replaced by a link
    assert _publish(path, out, tmp_path=tmp_path).returncode == 0
    assert victim.read_text() == "precious"
    assert not (out / "mine.csv").is_symlink() and (out / "mine.csv").read_text().startswith("Hardware")


@pytest.mark.parametrize("where", ["file", "file_in_folder", "proc", "missing_parent"])
def test_d13_publish_out_that_cannot_be_a_site_folder_is_one_error_line(tmp_path, where):
    _, path, _ = build_db(tmp_path, [rec(SPARK, 57.12)])
    (tmp_path / "existing").mkdir()
    (tmp_path / "existing" / "index.html").write_text("x")
    (tmp_path / "plain").write_text("x")
    out = {"file": tmp_path / "plain", "file_in_folder": tmp_path / "existing" / "index.html",
           "proc": "/proc/nonexist", "missing_parent": tmp_path / "no" / "such" / "site"}[where]
    result = _publish(path, out, tmp_path=tmp_path)
    assert result.returncode == 2 and result.stderr.startswith(f"error: {out}") and result.stderr.count("\n") == 1
    assert not (tmp_path / "no").exists()


def test_d13_tables_and_export_seed_out_errors_are_one_line(tmp_path):
    _, path, _ = build_db(tmp_path, [rec(SPARK, 57.12)])
    (tmp_path / "plain").write_text("x")
    result = run_cli("tables", "--format", "csv", "--out", str(tmp_path / "plain"), db=path, check=False)
    assert result.returncode == 2 and result.stderr == f"error: {tmp_path / 'plain'}: not a folder; --out names the " \
                                                       "folder to write NAME.csv files into\n"
    seed = run_cli("export-seed", "--out", "/nonexistent/dir/seed.sql", db=path, check=False)
    assert seed.returncode == 2 and seed.stderr.startswith("error: /nonexistent/dir") and "Traceback" not in seed.stderr


def test_d20_published_csv_cells_are_never_formulas(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec("=HYPERLINK(\"https://evil.example\")", 57.12,
                                           quote="| =HYPERLINK | Q4_0 | tg128 | 57.12 |")])
    d = definition("machines", {"model": "Llama 2 7B", "quantization": "Q4_0", "phase": "generation",
                                "generated_tokens": 128})
    with engine.connect() as conn:
        rows = list(csv.reader(io.StringIO(render_csv(build_table(conn, d)))))
    cells = [cell for row in rows for cell in row]
    assert "'=HYPERLINK(\"https://evil.example\")" in cells and "57.12" in cells
    assert not any(cell.startswith(("=", "+", "@", "\t", "\r")) for cell in cells)


def test_d20_p8_a_non_finite_figure_is_never_published(tmp_path):
    engine, path, _ = build_db(tmp_path, [rec(SPARK, 57.12), rec(ULTRA, 94.27, comment=2)])
    with engine.begin() as conn:  # what the old validator let in (D3)
        conn.execute(text("UPDATE measurement SET tokens_per_second = 1e999 WHERE id = 2"))
    out = tmp_path / "site"
    assert _publish(path, out, tmp_path=tmp_path).returncode == 0
    for page in out.iterdir():
        content = page.read_text()
        assert not re.search(r"\binf\b|Infinity", content) and "94.27" not in content, page
    assert "1 figure matching this table holds a non-finite tokens/s" in (out / "mine.md").read_text()
    assert "57.12" in (out / "mine.md").read_text()


# ------------------------------------------------------------------------------------ site defects (issue 12)
def _specificity(selector: str) -> tuple[int, int, int]:
    ids = selector.count("#")
    classes = len(re.findall(r"\.[\w-]+|\[[^\]]+\]|:(?!:)[\w-]+", selector))
    elements = len(re.findall(r"(?:^|[\s>+~])([a-z][\w-]*)", selector))
    return ids, classes, elements


def _background_rules(css: str) -> list[tuple[str, str]]:
    """(selector, declarations) for every CSS rule that sets a background."""
    return [(sel.strip(), body) for group, body in re.findall(r"([^{}]+)\{([^}]*)\}", css) if "background" in body
            for sel in group.split(",")]


def test_calc_and_measured_headers_are_shaded_over_the_plain_header_rule():
    from tpsdb.publish.render import STYLE
    rules = _background_rules(STYLE)
    plain = max(_specificity(s) for s, _ in rules if s.endswith("th") and "." not in s.split()[-1])
    for kind in ("calc", "measured"):
        shaded = [_specificity(s) for s, _ in rules if s.endswith(f"th.{kind}")]
        assert shaded and max(shaded) > plain, (kind, shaded, plain)  # later and not weaker: it wins


def test_empty_table_note_appears_once_and_names_what_would_fill_it(tmp_path):
    engine, _, _ = build_db(tmp_path, [rec(ULTRA, 94.27, quant="Q8_0")])  # Llama 2 7B, but not in Q4_0
    d = definition("machines", TG128)
    table = build(engine, d)
    assert table.empty and table.notes[0].startswith(NO_MEASUREMENT)
    assert "quantization Q4_0" in table.notes[0] and "1 validated figure" in table.notes[0], table.notes[0]
    html = render_html(table)
    assert html.count("No validated measurement matches") == 1
    empty_db_engine, _, _ = build_db(tmp_path, [], name="empty.sqlite")
    assert "tpsdb refresh" in build(empty_db_engine, d).notes[0]
    site = tmp_path / "site"
    publish_site(engine, [d], site)
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "none yet" in index and "quantization Q4_0" in index


def test_numbers_in_one_column_share_their_decimals(tmp_path):
    gpt = dict(GPT_BATCHED, figure="aggregate")
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 81.11, users=1, **gpt), rec(SPARK, 95.0, users=2, **gpt),
                                       rec(SPARK, 151.9, users=4, **gpt)])
    fixed = CONCURRENCY_FIXED
    table = build(engine, definition("concurrency", fixed, rows=[1, 2, 4]))
    assert [r["aggregate"].text for r in table.rows] == ["81.11", "95.00", "151.90"]
    assert [r["aggregate"].value for r in table.rows] == [81.11, 95.0, 151.9]  # the figures themselves unchanged


def test_concurrency_per_user_column_is_filled_where_a_per_user_figure_exists(tmp_path):
    gpt = GPT_BATCHED
    engine, _, _ = build_db(tmp_path, [rec(SPARK, 81.11, users=1, figure="aggregate", **gpt),
                                       rec(SPARK, 95.0, users=2, figure="aggregate", **gpt),
                                       rec(SPARK, 45.5, users=2, figure="per_user", comment=9, **gpt)])
    fixed = CONCURRENCY_FIXED
    table = build(engine, definition("concurrency", fixed, rows=[1, 2, 4]))
    one, two, four = table.rows
    assert one["per_user"].text == "81.11" and one["per_user"].footnote == one["aggregate"].footnote
    assert two["per_user"].text == "45.50" and two["aggregate"].text == "95.00"
    assert four["per_user"].text == ""
    assert any("empty at 4 users" in n and "would fill it" in n for n in table.notes), table.notes


def test_spread_lists_a_figure_seen_via_two_sources_once_with_both_citations(tmp_path):
    gpt = dict(model="gpt-oss 120B", quant="MXFP4", gen=32, version="b6918 (2f68ce7cf)")
    blob = ("https://github.com/ggml-org/llama.cpp/blob/4c7e9893c4ca8eec35d032726d14b74fae76cff8/benches/"
            "dgx-spark.md")
    discussion = "https://github.com/ggml-org/llama.cpp/discussions/16578"
    engine, _, outcomes = build_db(tmp_path, [
        rec(SPARK, 55.4, url=blob, **gpt), rec(SPARK, 55.4, url=discussion, **gpt),
        rec(SPARK, 51.85, depth=8192, url=blob, **gpt), rec(SPARK, 51.85, depth=8192, url=discussion, **gpt),
    ])
    assert all(o.outcome == "accepted" for o in outcomes), [o.reasons for o in outcomes]
    d = definition("spread", {"hardware": SPARK, "model": "gpt-oss 120B", "phase": "generation", "users": 1})
    table = build(engine, d)
    assert [r["tokens_per_second"].text for r in table.rows] == ["55.40", "51.85"]
    first = table.rows[0]
    cited = {footnote(table, first["tokens_per_second"]).url} | {
        f.url for f in table.footnotes if f.number in first["tokens_per_second"].also}
    assert cited == {blob, discussion}
    assert first["source"].text == "llama.cpp benches/dgx-spark.md; llama.cpp discussion 16578"
    assert first["source"].href == blob  # the full address is the link, not the text
    assert table.rows[1]["differs"].text == "lengths: tg32 @ d8192"  # the same two sources: not a difference
    html = render_html(table)
    assert html.count(blob) >= 1 and "benches/dgx-spark.md</a>" not in html.replace(blob, "")
    assert re.search(r'<sup class="fn"><a href="#t-spread-fn-1">1</a>,<a href="#t-spread-fn-2">2</a></sup>', html)
    assert [c.label for c in table.columns].index("Differs from #1") < [c.label for c in table.columns].index("Source")


def test_chart_point_labels_never_overlap_and_the_key_names_each_point():
    from tpsdb.publish.charts import label_offsets
    pixels = [(400.0, 100.0 + i) for i in range(6)] + [(800.0, 200.0), (801.0, 203.0)]  # piled up at 400 and 800
    boxes = [(x + dx, y + dy) for (x, y), (dx, dy) in zip(pixels, label_offsets(pixels))]
    for i, (x1, y1) in enumerate(boxes):
        for x2, y2 in boxes[i + 1:]:
            assert abs(x1 - x2) >= 11 or abs(y1 - y2) >= 9, boxes
    chart = {"type": "bandwidth", "read_gb": 3.79, "title": "t",
             "points": [{"label": f"Apple M{i}", "bandwidth_gbs": 400, "tokens_per_second": 60 + i * 0.2,
                         "bandwidth_kind": "vendor"} for i in range(1, 7)]}
    svg, caption = chart_svg(chart)
    assert "Points: 1 Apple M1; 2 Apple M2" in caption and "6 Apple M6." in caption
    assert "Apple M1" not in svg  # the chart carries numbers; the key carries the names


def _page_data(page: Path) -> dict:
    html = page.read_text()
    start = html.index('<script type="application/json" id="rows">') + len('<script type="application/json" id="rows">')
    return json.loads(html[start:html.index("</script>", start)])


def test_data_page_rows_are_coded_by_column_and_decode_to_the_figures(tmp_path):
    """figures.html holds its rows column by column, each text column's distinct texts once; a text that SQLite let
    into a numeric column shows as empty, the other rows keep their numbers."""
    engine, path, _ = build_db(tmp_path, [rec(SPARK, 57.12), rec(ULTRA, 94.27, comment=2), rec(SPARK, 60.5, comment=3)])
    with engine.begin() as conn:
        conn.execute(text("UPDATE measurement SET context_depth = 'deep' WHERE id = 3"))
    publish_site(engine, load_definitions(), tmp_path / "site")
    data = _page_data(tmp_path / "site" / "figures.html")
    keys = [c["key"] for c in data["columns"]]
    assert data["count"] == 3 and all(len(column) == 3 for column in data["values"])

    def cell(row: int, key: str):
        i = keys.index(key)
        v = data["values"][i][row]
        return v if data["strings"][i] is None or v is None else data["strings"][i][v]

    assert [cell(r, "tps") for r in range(3)] == [57.12, 94.27, 60.5]
    assert [cell(r, "hardware") for r in range(3)] == [SPARK, ULTRA, SPARK]
    assert data["strings"][keys.index("hardware")] == [SPARK, ULTRA]  # each text once
    assert [cell(r, "depth") for r in range(3)] == [0, 0, None]
    assert data["values"][-1][0] == 0 and data["strings"][-1][0] == URL_4167.format(1)  # the permalinks, last


def test_a_quoted_table_row_shows_its_tables_header_line_kept_with_the_figure(tmp_path, empty_db):
    """The DGX Spark file ingested: each footnote quoting a llama-batched-bench or llama-bench row shows the header
    line of that row's table, which the reader kept with the figure (measurement.quote_header): publishing reads no
    archived page for it. A quoted row with no header kept and no snapshot holding it says it is a row of the
    source's table, never a guessed header."""
    dgx = ("https://github.com/ggml-org/llama.cpp/blob/4c7e9893c4ca8eec35d032726d14b74fae76cff8/benches/"
           "dgx-spark.md")
    run_cli("ingest", str(need(DGX_SPARK_MD)), "--source-url", dgx,
            "--hardware", SPARK, "--retrieved-at", "2026-11-30", db=empty_db)
    engine = db.make_engine(str(empty_db))
    with engine.begin() as conn:
        stored = conn.execute(text("SELECT COUNT(*), COUNT(quote_header) FROM measurement_full")).one()
        assert stored[0] and stored[1] == stored[0]  # every figure of the file is a table row, each kept its header
        conn.execute(text("UPDATE snapshot SET body = :empty"), {"empty": b""})  # nothing left to re-read
    with engine.connect() as conn:
        tables = {d.name: build_table(conn, d) for d in load_definitions()}
    batched = "| PP | TG | B | N_KV | T_PP s | S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |"
    bench = "| model | size | params | backend | ngl | n_ubatch | fa | mmap | test | t/s |"
    footnotes = [f for t in tables.values() for f in t.footnotes if f.kind == "measurement"]
    assert footnotes and all(f.quote_header for f in footnotes)
    concurrency = tables["concurrency"]
    first = concurrency.footnotes[0]
    assert " ".join(first.quote_header.split()) == batched and "81.11" in first.quote
    md = render_markdown(concurrency)
    assert f"table header: `{batched}` · quote: `| 512 | 32 | 1 | 544 |" in md
    assert "a row of the source's table" not in md
    html = render_html(concurrency)
    assert html.index('table header: <code class="quote header">|    PP |') < html.index("81.11 |    0.785")
    assert any(" ".join(f.quote_header.split()) == bench for f in footnotes)  # llama-bench's own header

    engine, _, _ = build_db(tmp_path, [rec(SPARK, 57.12)])  # a row quoted from no archived snapshot
    with engine.connect() as conn:
        table = build_table(conn, load_definitions()[0])
    assert table.footnotes[0].quote_header is None
    assert f"quote: `| {SPARK} | Q4_0 | tg128 | 57.12 |` (a row of the source's table)" in render_markdown(table)
    assert "(a row of the source&#39;s table)" in render_html(table)


def test_the_reader_gives_a_quoted_row_its_tables_header_in_html_and_markdown():
    """A candidate read from a table row carries the header line of that table, from an HTML page (whose rows are
    rebuilt as "| a | b |" lines, which no snapshot re-read could find) as from Markdown; a row found under two
    different headers gets none."""
    from tpsdb.collect.extract import PostContext, extract_post, extract_text
    ctx = PostContext(URL_4167.format(1), "2026-11-30", "2025-01-01", "someone", {})
    cells = ["llama 7B Q4_0", "3.56 GiB", "6.74 B", "Metal", "99", "tg128", "94.27 ± 0.11"]
    names = ["model", "size", "params", "backend", "ngl", "test", "t/s"]
    header, row = "| " + " | ".join(names) + " |", "| " + " | ".join(cells) + " |"
    html = ("<table><thead><tr>" + "".join(f"<th>{n}</th>" for n in names) + "</tr></thead><tbody><tr>"
            + "".join(f"<td>{c}</td>" for c in cells) + "</tr></tbody></table>")
    markdown = f"{header}\n|{' --- |' * len(names)}\n{row}\n"
    for candidates in (extract_post(html, ctx), extract_text(markdown, ctx)):
        assert [c.record["source"]["quote"] for c in candidates] == [row]
        assert [c.record["source"]["quote_header"] for c in candidates] == [header]
    other = header.replace("t/s", "tokens/s")
    twice = f"{markdown}\ntext\n\n{other}\n|{' --- |' * len(names)}\n{row}\n"
    read = extract_text(twice, ctx)
    assert read and all(c.record["source"]["quote"] == row and "quote_header" not in c.record["source"] for c in read)


def test_a_figure_stored_before_headers_were_kept_reads_its_header_from_the_snapshot(empty_db):
    """An older database's figures have no header kept (re-reading finds them unchanged): for those alone the
    footnote's header is read from the archived snapshot, as before."""
    run_cli("ingest", str(need(DGX_SPARK_MD)), "--source-url", "https://example.org/benches/dgx-spark.md",
            "--hardware", SPARK, "--retrieved-at", "2026-11-30", db=empty_db)
    engine = db.make_engine(str(empty_db))
    with engine.begin() as conn:
        conn.execute(text("UPDATE measurement SET quote_header = NULL"))
    with engine.connect() as conn:
        table = build_table(conn, next(d for d in load_definitions() if d.name == "concurrency"))
    assert table.footnotes and all(f.quote_header and f.quote_header.startswith("|") for f in table.footnotes)


def test_a_record_carries_its_quote_header_through_add_and_export(tmp_path):
    """source.quote_header is part of the record format: stored by add, written by export, refused with its field
    named when it is not one line of text; it is no part of the figure's identity (adding the figure again
    without it changes nothing)."""
    header = "| machine | quant | test | t/s |"
    with_header = rec(SPARK, 57.12)
    with_header["source"]["quote_header"] = header
    multi_line = rec(ULTRA, 80.5)
    multi_line["source"]["quote_header"] = header + "\n| --- |"
    not_text = rec(ULTRA, 81.5)
    not_text["source"]["quote_header"] = 12
    too_long = rec(ULTRA, 82.5)
    too_long["source"]["quote_header"] = "|" + "x" * 3000 + "|"
    again = rec(SPARK, 57.12)  # the same figure, no header
    engine, path, outcomes = build_db(tmp_path, [with_header, multi_line, not_text, too_long, again])
    assert [o.outcome for o in outcomes][0] == "accepted" and outcomes[4].outcome == "accepted_unchanged"
    assert "source.quote_header: more than one line" in outcomes[1].reasons
    assert any(r.startswith("source.quote_header:") for r in outcomes[2].reasons)
    assert "source.quote_header: longer than 2000 characters" in outcomes[3].reasons
    with engine.connect() as conn:
        assert conn.execute(text("SELECT quote_header FROM measurement_full")).scalars().all() == [header]
        assert conn.execute(text("SELECT COUNT(quote_header) FROM rejection_full")).scalar_one() == 0
    exported = [json.loads(line) for line in run_cli("export", db=path).stdout.splitlines()]
    assert [r["source"].get("quote_header") for r in exported] == [header]
    plain = rec(ULTRA, 83.5)
    _, plain_path, _ = build_db(tmp_path, [plain], name="plain.sqlite")
    assert "quote_header" not in json.loads(run_cli("export", db=plain_path).stdout)["source"]


def test_quote_headers_survive_hostile_snapshots():
    """A snapshot nested deeper than JSON can read is read as text, one nested just within it is walked without
    recursion, and a row seen under two headers gets none."""
    from tpsdb.publish.quotes import _parse
    table = "| a |\n|---|\n| 1 |"
    for depth in (1, 500, 100_000):
        body = "[" * depth + json.dumps(table) + "]" * depth
        assert _parse(body.encode()) == ({"| 1 |": "| a |"} if depth < 1000 else {})
    assert _parse(json.dumps([table, "| b |\n|---|\n| 1 |"]).encode()) == {}


def test_charts_name_their_points_and_mark_the_ideal_gain():
    """Issue 20: the reader sees which machine a point is and what a speed-up is compared against."""
    from tpsdb.publish.charts import short_name

    assert short_name("Apple M2 Ultra (76-core GPU)") == "M2 Ultra 76c" and short_name(SPARK) == "DGX Spark"
    points = [{"label": ULTRA, "bandwidth_gbs": 800, "tokens_per_second": 94.27, "bandwidth_kind": "vendor"},
              {"label": SPARK, "bandwidth_gbs": 273, "tokens_per_second": 24.5, "bandwidth_kind": "relayed"}]
    svg, _ = chart_svg({"type": "bandwidth", "read_gb": 3.79, "title": "t", "points": points})
    assert "1 M2 Ultra 76c" in svg and "2 DGX Spark" in svg
    svg, _ = chart_svg({"type": "speedup", "baseline": "F16", "formats": ["Q8_0", "Q4_0"], "title": "t",
                        "ideal": {"Q8_0": 13.48 / 7.16, "Q4_0": 13.48 / 3.79},
                        "rows": [{"label": ULTRA, "speedups": {"Q8_0": 1.76, "Q4_0": 2.9}}]})
    assert "ideal Q8_0: ×1.88" in svg and "ideal Q4_0: ×3.56" in svg
