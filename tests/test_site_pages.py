"""Issue 20: a page per machine and per model on the published site, reachable from the index and from every table
cell that names it, and one link that downloads everything (CSV and JSONL, with a licence note)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest
from sqlalchemy import create_engine, text

from conftest import run_cli
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


# A machine with more figures than a page holds (3 a page here; the site's default is FIGURES_PER_PAGE): the Spark
# has 8 figures in three software versions, the M2 Ultra one, so the Llama 2 7B page has 9.
PER_PAGE = 3
SPARK_PAGES = ["machine-nvidia-dgx-spark.html", "machine-nvidia-dgx-spark.page-2.html",
               "machine-nvidia-dgx-spark.page-3.html"]


@pytest.fixture(scope="module")
def paged(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("paged")
    records = [rec(SPARK, 10.0 + i, version=f"b{1000 + i % 3}", comment=20 + i) for i in range(8)]
    records.append(rec(ULTRA, 94.27, comment=40))
    engine, _, outcomes = build_db(tmp, records)
    assert all(o.outcome == "accepted" for o in outcomes), [o.reasons for o in outcomes]
    out = tmp / "site"
    publish_site(engine, load_definitions(), out, figures_per_page=PER_PAGE)
    with engine.connect() as conn:
        spark = {row[0] for row in conn.execute(text(
            "SELECT measurement_id FROM measurement_full WHERE status = 'active' AND hardware = :h"), {"h": SPARK})}
    return out, spark


def _figure_ids(page) -> list[int]:
    return [int(i) for i in re.findall(r'<tr id="figure-(\d+)">', page.read_text(encoding="utf-8"))]


def test_a_machine_with_more_figures_than_a_page_gets_pages_holding_exactly_its_figures(paged):
    site, spark = paged
    assert sorted(p.name for p in site.glob("machine-nvidia-dgx-spark*.html")) == sorted(SPARK_PAGES)
    listed = [i for name in SPARK_PAGES for i in _figure_ids(site / name)]
    assert len(listed) == len(spark) == 8 and set(listed) == spark  # each figure once, none dropped
    assert [len(_figure_ids(site / name)) for name in SPARK_PAGES] == [3, 3, 2]
    first = (site / SPARK_PAGES[0]).read_text(encoding="utf-8")
    assert "The 8 figures are on 3 pages of at most 3; this is page 1, figures 1 to 3." in first
    assert "Summary: 8 figures in 3 groups" in first
    last = (site / SPARK_PAGES[2]).read_text(encoding="utf-8")
    assert "<h1>NVIDIA DGX Spark: figures 7 to 8 of 8</h1>" in last and "page 3 of 3" in last
    for f in _figure_ids(site / SPARK_PAGES[2]):  # each figure with its source and quote, on any page
        row = re.search(rf'<tr id="figure-{f}">(.*?)</tr>', last, re.S).group(1)
        assert 'href="https://github.com/ggml-org/llama.cpp/discussions/4167#discussioncomment-' in row
        assert '<code class="quote">| NVIDIA DGX Spark | Q4_0 | tg128 |' in row
    model = [i for p in sorted(site.glob("model-llama-2-7b*.html")) for i in _figure_ids(p)]
    assert len(model) == len(set(model)) == 9
    listing = (site / "machines-and-models.html").read_text(encoding="utf-8")
    assert f'<a href="{SPARK_PAGES[0]}">{SPARK}</a> · 8 figures on 3 pages</li>' in listing
    # a small machine keeps one page, with no pager
    assert not list(site.glob("machine-apple-m2-ultra-76-core-gpu.page-*.html"))
    assert 'class="pages"' not in (site / "machine-apple-m2-ultra-76-core-gpu.html").read_text(encoding="utf-8")
    assert set(SPARK_PAGES) <= set(json.loads((site / ".tpsdb-site").read_text(encoding="utf-8"))["files"])


def test_every_link_between_the_pages_of_a_machine_and_model_works(paged):
    site, _ = paged
    pages = sorted(site.glob("machine-*.html")) + sorted(site.glob("model-*.html"))
    checked = 0
    for page in pages:
        html = page.read_text(encoding="utf-8")
        for href in re.findall(r'href="([^"#:]+\.html)(#[^"]*)?"', html):
            target = site / href[0]
            assert target.exists(), f"{page.name} links to {href[0]}, which is absent"
            if href[1].startswith("#figure-"):
                assert f'id="{href[1][1:]}"' in target.read_text(encoding="utf-8"), (page.name, href)
                checked += 1
        for anchor in re.findall(r'href="#([^"]+)"', html):
            assert f'id="{anchor}"' in html, (page.name, anchor)
    assert checked >= 2 * 3 + 2 * 3  # the summaries' best and median of each group link to their rows
    second = (site / SPARK_PAGES[1]).read_text(encoding="utf-8")
    assert f'<a href="{SPARK_PAGES[0]}#figures" rel="prev">' in second
    assert f'<a href="{SPARK_PAGES[2]}#figures" rel="next">' in second
    assert '<strong aria-current="page">2</strong>' in second
    assert f'<a href="{SPARK_PAGES[0]}">NVIDIA DGX Spark</a>' in second  # back to the summary


def test_the_summary_gives_each_group_its_count_best_and_median_with_its_source(paged):
    site, _ = paged
    first = (site / SPARK_PAGES[0]).read_text(encoding="utf-8")
    summary = first.split('<table class="tps summary">')[1].split("</table>")[0]
    rows = {re.search(r"llama\.cpp (b\d+)", r).group(1): r for r in summary.split("<tr>") if "llama.cpp b" in r}
    values = {version: (re.search(r'<td class="num">(\d+)</td>', row).group(1),
                        re.findall(r'#figure-\d+">([\d.]+)</a><sup class="fn"><a href="#source-(\d+)">', row))
              for version, row in rows.items()}
    # b1000: 10, 13, 16; b1001: 11, 14, 17; b1002: 12, 15 (the median of two is the lower one: a real figure)
    assert {v: (count, [tps for tps, _ in refs]) for v, (count, refs) in values.items()} == {
        "b1000": ("3", ["16", "13"]), "b1001": ("3", ["17", "14"]), "b1002": ("2", ["15", "12"])}
    model = (site / "model-llama-2-7b.html").read_text(encoding="utf-8")
    assert (f'Jump to a machine: <a href="#group-1">{ULTRA}</a> (1) · <a href="#group-2">{SPARK}</a> (8)' in model
            and '<tbody id="group-2"><tr><th scope="rowgroup" colspan="6"><a href="machine-nvidia-dgx-spark.html">'
            in model)
    footnotes = first.split('<ol class="footnotes">')[1].split("</ol>")[0]
    for _, refs in values.values():
        for _, n in refs:
            assert re.search(rf'<li id="source-{n}"><a href="https://github\.com/ggml-org/llama\.cpp/discussions/'
                             r'4167#discussioncomment-\d+">', footnotes)


def test_the_biggest_entity_page_stays_under_a_bound(paged, tmp_path):
    """Pages hold at most their share of figures, so a page's size is bounded whatever a machine's count: the same
    database on one page each is bigger than any of its paged pages. Republished so into the paged site's folder,
    the numbered pages it no longer needs (tpsdb's own files) are gone."""
    site, _ = paged
    for page in list(site.glob("machine-*.html")) + list(site.glob("model-*.html")):
        assert len(_figure_ids(page)) <= PER_PAGE, page.name
    engine = create_engine(f"sqlite:///{site.parent / 't.sqlite'}")
    whole = tmp_path / "whole"
    shutil.copytree(site, whole)
    publish_site(engine, load_definitions(), whole)
    assert not list(whole.glob("*.page-*.html")) and len(_figure_ids(whole / SPARK_PAGES[0])) == 8
    first = (whole / SPARK_PAGES[0]).read_text(encoding="utf-8")
    assert 'class="pages"' not in first and "Jump to" not in first  # one page, one model: nothing to jump to
    rows = max(len(_figure_ids(p)) for p in whole.glob("model-*.html"))
    assert rows == 9  # the default holds them all on one page
    biggest_paged = max(p.stat().st_size for p in site.glob("model-llama-2-7b*.html"))
    assert biggest_paged < (whole / "model-llama-2-7b.html").stat().st_size
    with pytest.raises(ValueError, match="figures per page: 0"):
        publish_site(engine, load_definitions(), tmp_path / "none", figures_per_page=0)



def test_publish_takes_the_page_size_from_the_command_line(paged, tmp_path):
    """`tpsdb publish --figures-per-page N` pages a machine as publish_site(figures_per_page=N) does; N < 1 is a
    usage error naming the option, with nothing written."""
    site, spark = paged
    db = site.parent / "t.sqlite"
    out = tmp_path / "cli-site"
    run_cli("publish", "--out", str(out), "--figures-per-page", "3", db=db)
    assert sorted(p.name for p in out.glob("machine-nvidia-dgx-spark*.html")) == sorted(SPARK_PAGES)
    assert {i for name in SPARK_PAGES for i in _figure_ids(out / name)} == spark
    refused = run_cli("publish", "--out", str(tmp_path / "none"), "--figures-per-page", "0", db=db, check=False)
    assert refused.returncode == 2 and "--figures-per-page" in refused.stderr
    assert not (tmp_path / "none").exists()
