"""Issue 20: a page per machine and per model on the published site, reachable from the index and from every table
cell that names it, and one link that downloads everything (CSV and JSONL, with a licence note)."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from test_publish import M1, SPARK, ULTRA, build_db, rec
from tpsdb.publish.definitions import load_definitions
from tpsdb.publish.site import DOWNLOADS, publish_site

HOSTILE = "Evil <b>box</b>"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pages")
    records = [rec(SPARK, 24.5, comment=1), rec(SPARK, 22.0, version="b900", comment=2),
               rec(ULTRA, 94.27, comment=3), rec(M1, 14.2, comment=4), rec(ULTRA, 41.0, quant="F16", comment=5),
               rec(HOSTILE, 10.0, comment=6)]
    engine, _, outcomes = build_db(tmp, records)
    assert all(o.outcome == "accepted" for o in outcomes), [o.reasons for o in outcomes]
    out = tmp / "site"
    publish_site(engine, load_definitions(), out)
    return out


def test_a_page_per_machine_and_model_reachable_from_the_index(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    pages = {"machine-nvidia-dgx-spark.html", "machine-apple-m2-ultra-76-core-gpu.html",
             "machine-apple-m1-8-core-gpu.html", "machine-evil-b-box-b.html", "model-llama-2-7b.html"}
    assert pages == {p.name for p in site.glob("machine-*.html")} | {p.name for p in site.glob("model-*.html")}
    for page in pages:
        assert f'href="{page}"' in index, page
    assert "Evil &lt;b&gt;box&lt;/b&gt;" in index and "<b>box" not in index


def test_a_machine_page_gives_figures_conditions_sources_bandwidth_and_the_calculation(site):
    page = (site / "machine-nvidia-dgx-spark.html").read_text(encoding="utf-8")
    assert "273 GB/s (vendor)" in page and 'href="https://vendor.example/dgx-spec"' in page
    # the computed maximum, labelled: 273 / 3.79 = 72.03
    assert re.search(r'<td class="calc num">72\.03</td>', page) and "Max. tokens/s per user (calc.)" in page
    rows = re.findall(r'<tr id="figure-(\d+)">(.*?)</tr>', page, re.S)
    assert [re.search(r'class="num measured">([\d.]+)', r).group(1) for _, r in rows] == ["24.5", "22"]  # ranked
    assert "tg128, generation, 1 user (per user)" in rows[0][1] and "llama.cpp b1000" in rows[0][1]
    assert 'href="https://github.com/ggml-org/llama.cpp/discussions/4167#discussioncomment-1"' in rows[0][1]
    assert 'href="model-llama-2-7b.html"' in rows[0][1]
    # the other machines measured on the same file and test, fastest first, each linking to its page
    compared = page.split("Compared on the same file and test")[1]
    assert compared.index("machine-apple-m2-ultra-76-core-gpu.html") < compared.index("machine-apple-m1-8-core-gpu.html")
    assert "machine-apple-m2-ultra-76-core-gpu.html\">Apple M2 Ultra (76-core GPU)</a> 94.27" in compared
    m1 = (site / "machine-apple-m1-8-core-gpu.html").read_text(encoding="utf-8")
    assert "unknown: no cited value, so no computed maximum" in m1 and "Not computed for 1 model files" in m1


def test_a_model_page_ranks_the_machines_on_each_file_and_test(site):
    page = (site / "model-llama-2-7b.html").read_text(encoding="utf-8")
    compared = page.split("Compared on the same file and test")[1].split("Computed maximum")[0]
    q4 = next(row for row in compared.split("<tr>") if row.startswith("<td>Q4_0"))
    order = [q4.index(name) for name in (ULTRA, SPARK, M1)]
    assert order == sorted(order)  # 94.27, 24.5, 14.2
    assert "F16" not in compared  # one machine only on the F16 file: nothing to compare


def test_table_cells_and_the_figures_page_link_each_name_to_its_page(site):
    machines = (site / "machines.html").read_text(encoding="utf-8")
    assert '<a href="machine-apple-m2-ultra-76-core-gpu.html">Apple M2 Ultra (76-core GPU)</a>' in machines
    figures = (site / "figures.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="rows">(.*?)</script>', figures, re.S).group(1))
    hardware = [c["key"] for c in data["columns"]].index("hardware")
    linked = dict(zip(data["strings"][hardware], data["pages"][str(hardware)]))
    assert linked[SPARK] == "machine-nvidia-dgx-spark.html" and linked[HOSTILE] == "machine-evil-b-box-b.html"


def test_one_link_downloads_everything_with_a_licence_note(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    for name in DOWNLOADS.values():
        assert f'href="{name}"' in index
    assert "Licence:" in index
    rows = list(csv.DictReader(io.StringIO((site / DOWNLOADS["csv"]).read_text(encoding="utf-8"))))
    records = [json.loads(line) for line in (site / DOWNLOADS["jsonl"]).read_text(encoding="utf-8").splitlines()]
    assert len(rows) == len(records) == 6
    assert {r["hardware"]["name"] for r in records} == {SPARK, ULTRA, M1, HOSTILE}
