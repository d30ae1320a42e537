"""The published site in a real headless Chromium (Debian package `chromium`), opened from file:// as a reader would.

Each page is loaded twice: `--dump-dom` (the DOM after scripts would have run: tables and inline SVG charts present,
source text shown as text) and `--screenshot` (kept under tests/artifacts/, one PNG per page, for a human to look at).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ROOT
from test_publish import SPARK, ULTRA, build_db, rec
from test_serve import QUERIES, seeded, served  # noqa: F401 (fixtures)
from tpsdb.db import make_engine
from tpsdb.publish.definitions import load_definitions
from tpsdb.publish.site import publish_site

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "tests" / "artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CHART_PAGES = {"machines", "ceiling", "quantization", "concurrency"}
HOSTILE = "| NVIDIA DGX Spark | 57.12 | <script>document.title='pwned'</script>"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason="/usr/bin/chromium is absent (install Debian's package: apt-get install chromium)")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The project's eight tables published from a small database that gives each of them rows."""
    tmp = tmp_path_factory.mktemp("site")
    gpt20 = dict(model="gpt-oss 20B", quant="MXFP4", gen=32, version="b6918 (2f68ce7cf)")
    gpt120 = dict(model="gpt-oss 120B", quant="MXFP4", gen=32)
    records = [
        rec(SPARK, 57.12, comment=1, quote=HOSTILE),
        rec(ULTRA, 94.27, version="8e672efe", published="2023-11-20", comment=2),
        rec(ULTRA, 66.0, quant="Q8_0", version="8e672efe", published="2023-11-20", comment=3),
        rec(ULTRA, 41.0, quant="F16", version="8e672efe", published="2023-11-20", comment=4),
        rec(ULTRA, 125.5, version="c1d0e7a00", published="2025-06-01", options={"fa": 1}, comment=5),
        rec(SPARK, 84.1, **gpt20, comment=6),
        rec(SPARK, 49.7, model="gpt-oss 20B", quant="MXFP4", gen=32, software="Ollama", version="0.12.3",
            url="https://lmsys.example/spark-review"),
        *[rec(SPARK, tps, **gpt20, depth=512, users=n, figure="aggregate", comment=10 + n)
          for n, tps in ((1, 81.11), (2, 95.0), (4, 151.9), (8, 254.09), (16, 400.94), (32, 614.82))],
        rec(SPARK, 59.02, **gpt120, version="b6918 (2f68ce7cf)", comment=7),
        rec(SPARK, 42.0, **gpt120, version="b6800", comment=8),
        rec(SPARK, 14.5, **gpt120, software="Ollama", version="0.12.3", url="https://servethehome.example/spark"),
    ]
    engine, _, outcomes = build_db(tmp, records)
    assert all(o.outcome == "accepted" for o in outcomes), [o.reasons for o in outcomes]
    out = tmp / "site"
    publish_site(engine, load_definitions(), out)
    return out


def _chromium(page: Path, *args: str) -> subprocess.CompletedProcess:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)  # a fresh clone has none; any test may run first (xdist)
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                              capture_output=True, text=True, timeout=90)


def _load(page: Path) -> tuple[Path, str, Path]:
    shot = ARTIFACTS / f"site-{page.stem}.png"
    shot.unlink(missing_ok=True)
    # One browser for both (Chromium's headless mode writes the DOM to stdout and the screenshot to its file).
    dom = _chromium(page, "--dump-dom", f"--screenshot={shot}", "--window-size=1400,2000")
    assert dom.returncode == 0, dom.stderr[-2000:]
    return page, dom.stdout, shot


def test_every_page_loads_with_its_table_and_chart(site):
    entity_pages = sorted(site.glob("machine-*.html")) + sorted(site.glob("model-*.html"))
    assert len(entity_pages) == 2 + 3  # a page per machine (DGX Spark, M2 Ultra), per model (Llama 2 7B, gpt-oss)
    pages = sorted(p for p in site.glob("*.html") if p not in entity_pages and p.name != "machines-and-models.html")
    assert len(pages) == 1 + len(load_definitions()) + 2  # the index, a page per table, figures and rejections
    pages += [site / "machine-nvidia-dgx-spark.html", site / "model-gpt-oss-20b.html"]
    with ThreadPoolExecutor(max_workers=3) as pool:
        loaded = list(pool.map(_load, pages))
    doms = {page.stem: dom for page, dom, _ in loaded}
    for page, dom, shot in loaded:
        assert "<table" in dom, page.name
        assert shot.exists() and shot.stat().st_size > 10_000, shot
        if page.stem in CHART_PAGES:
            assert "<svg" in dom and "<path" in dom, f"{page.name}: no chart"
    for page in pages:
        if page.stem != "index":
            assert f'href="{page.name}"' in doms["index"]
    machines = doms["machines"]
    assert "<title>Table 1." in machines and "pwned" not in machines.split("</title>")[0]
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in machines
    assert "72.03" in doms["ceiling"] and "calc." in doms["ceiling"]
    assert "×7.58" in doms["concurrency"]
    assert 'class="empty"' not in doms["machines"]
    figures = doms["figures"]  # drawn by its script: rows in the table body, the counts in the status line
    assert "Rows 1–" in figures and "of 16" in figures, figures[:3000]
    assert figures.count("<tr>") >= 16 and "57.12" in figures and "95.00" in figures
    assert 'href="https://lmsys.example/spark-review"' in figures
    assert "<script>document.title" not in figures and "pwned" not in figures.split("</title>")[0]
    assert 'href="figures.html"' in doms["index"] and 'href="rejections.html"' in doms["index"]
    assert "No rejected figure" in doms["rejections"]


def test_data_pages_fit_a_phone_and_1400_px(site):
    """The figures page at a phone's width: its table scrolls inside its box, the page itself does not widen."""
    for width in (1400, 390):
        shot = ARTIFACTS / f"site-figures-{width}px.png"
        result = _chromium(site / "figures.html", f"--screenshot={shot}", f"--window-size={width},900")
        assert result.returncode == 0 and shot.stat().st_size > 5_000


def _load_url(url: str, shot: Path) -> str:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as profile:  # one browser for the DOM and the screenshot
        dom = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", "--dump-dom", f"--screenshot={shot}",
                              "--window-size=1400,1400", url], capture_output=True, text=True, timeout=90)
        assert dom.returncode == 0, dom.stderr[-2000:]
    assert shot.exists(), dom.stderr[-2000:]
    return dom.stdout


def test_datasette_pages_load_in_chromium(served):
    """`tpsdb serve` on the seed (plus a hostile quote): the index, a table with a facet, each canned query."""
    base, name = served
    pages = {"index": "/", "measurement_full-facet": f"/{name}/measurement_full?_facet=hardware&phase=generation",
             "hostile": f"/{name}/measurement_full?tokens_per_second=57.12&hardware=NVIDIA+DGX+Spark",
             **{query: f"/{name}/{query}" for query in QUERIES}}
    with ThreadPoolExecutor(max_workers=3) as pool:
        doms = dict(zip(pages, pool.map(lambda item: _load_url(base + item[1], ARTIFACTS / f"datasette-{item[0]}.png"),
                                        pages.items())))
    for page, dom in doms.items():
        assert "<table" in dom or page == "index", page  # the index lists the database and its tables
        assert "pwned" not in dom.split("</title>")[0], page
        assert (ARTIFACTS / f"datasette-{page}.png").stat().st_size > 10_000, page
    assert "tpsdb: LLM inference speed" in doms["index"] and f'href="/{name}/measurement"' in doms["index"]
    assert 'class="facet-info' in doms["measurement_full-facet"]
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in doms["hostile"]
    assert "<script>document.title" not in doms["hostile"]


def test_datasette_views_open_on_the_columns_a_reader_needs_first(served):
    """Issue 20: descriptions folded, the reader's columns shown (the rest a click away), the refused figures named
    by machine and model."""
    base, name = served
    doms = {view: _load_url(f"{base}/{name}/{view}", ARTIFACTS / f"datasette-view-{view}.png")
            for view in ("measurement_full", "rejection_full")}
    for view, dom in doms.items():
        assert '<details><summary>What each column means (' in dom, view
        assert 'class="tpsdb-columns"' in dom and "columns a reader needs first: show all" in dom, view
    full = doms["measurement_full"]
    assert re.search(r'<th [^>]*data-column="tokens_per_second"[^>]*>', full)
    assert re.search(r'<th [^>]*style="display: none;"[^>]*data-column="bandwidth_quote"', full) or \
        re.search(r'<th [^>]*data-column="bandwidth_quote"[^>]*style="display: none;"', full)
    assert not re.search(r'<th [^>]*data-column="tokens_per_second"[^>]*style="display: none;"', full)
    order = re.findall(r'<th [^>]*data-column="([a-z_]+)"', full)
    assert order[:6] == ["measurement_id", "hardware", "model", "quantization", "phase", "tokens_per_second"]
    assert re.search(r'<th [^>]*data-column="hardware"', doms["rejection_full"])
    home = _load_url(f"{base}/", ARTIFACTS / "datasette-view-home.png")
    assert f'<a href="/{name}/measurement_full?phase=generation">Start here: every accepted figure' in home
    asked = _load_url(f"{base}/{name}/measurement_full?_col=hardware", ARTIFACTS / "datasette-view-asked.png")
    assert 'class="tpsdb-columns"' not in asked  # a URL that names its columns is left as asked


_MEASURE = """<!doctype html><meta charset="utf-8"><title>widths</title><div id="out"></div>
<script>
var pages = PAGES, out = document.getElementById("out");
pages.forEach(function (page) {
  var frame = document.createElement("iframe");
  frame.style.width = "390px"; frame.style.height = "844px"; frame.style.border = "0";
  frame.onload = function () {
    var root = frame.contentDocument.documentElement, line = document.createElement("p");
    line.className = "width"; line.textContent = page + " " + root.scrollWidth + " " + root.clientWidth;
    out.appendChild(line);
  };
  frame.src = page; document.body.appendChild(frame);
});
</script>"""


def test_no_page_scrolls_sideways_at_390_px(site):
    """Issue 20: at a phone's width (390 px) no page is wider than the screen: tables scroll inside their box, long
    addresses and quotes wrap. Each page is measured in a 390 px frame of one page (file:// pages may read each
    other with --allow-file-access-from-files), its scrollWidth against its clientWidth."""
    _assert_fits_390_px(site, sorted(p.name for p in site.glob("*.html")))
    for page in ("index", "machine-nvidia-dgx-spark", "model-gpt-oss-20b", "concurrency"):
        shot = ARTIFACTS / f"site-{page}-390px.png"
        done = _chromium(site / f"{page}.html", f"--screenshot={shot}", "--window-size=390,844")
        assert done.returncode == 0 and shot.stat().st_size > 5_000


def test_the_figures_filters_and_sort_live_in_the_address(site):
    """A filtered, sorted view of figures.html can be shared: the fragment holds the filters and the sort."""
    url = (site / "figures.html").as_uri() + "#hardware=ultra&tps=%3E50&sort=tps&dir=desc"
    dom = _load_url(url, ARTIFACTS / "site-figures-filtered.png")
    assert "of 3 (filtered from 16)" in dom  # 125.5, 94.27 and 66 on the M2 Ultra, dom[dom.find('id="status"'):][:300]
    body = dom.split("<tbody>")[1]
    assert body.index("125.50") < body.index("94.27") < body.index("66.00")  # sorted by tokens/s, fastest first
    assert 'aria-sort="descending"><button type="button">tokens/s' in dom
    assert '<a href="machine-apple-m2-ultra-76-core-gpu.html">Apple M2 Ultra (76-core GPU)</a>' in body  # its page


def _assert_fits_390_px(site: Path, pages: list[str]) -> None:
    probe = site / "_widths.html"
    probe.write_text(_MEASURE.replace("PAGES", json.dumps(pages)), encoding="utf-8")
    try:
        result = _chromium(probe, "--allow-file-access-from-files", "--virtual-time-budget=20000", "--dump-dom")
    finally:
        probe.unlink()
    assert result.returncode == 0, result.stderr[-2000:]
    widths = {m[0]: (int(m[1]), int(m[2])) for m in re.findall(r'<p class="width">(\S+) (\d+) (\d+)</p>', result.stdout)}
    assert set(widths) == set(pages), set(pages) - set(widths)
    wide = {page: w for page, w in widths.items() if w[0] > w[1]}
    assert not wide, f"pages wider than 390 px (scrollWidth, clientWidth): {wide}"


def test_a_machine_paged_in_chromium_links_its_pages_and_fits_a_phone(site, tmp_path):
    """The same database with 4 figures a page: the Spark's 12 figures on 3 pages, each drawn in Chromium with its
    rows and its pager, the summary's links reaching rows on later pages, and no page wider than a phone."""
    engine = make_engine(str(site.parent / "t.sqlite"))
    paged = tmp_path / "paged"
    publish_site(engine, load_definitions(), paged, figures_per_page=4)
    names = ["machine-nvidia-dgx-spark.html"] + [f"machine-nvidia-dgx-spark.page-{n}.html" for n in (2, 3)]
    assert sorted(p.name for p in paged.glob("machine-nvidia-dgx-spark*.html")) == sorted(names)
    def load(page: Path) -> str:  # its own screenshot names: the unpaged site's pages have the same stems
        dom = _chromium(page, "--dump-dom")
        assert dom.returncode == 0, dom.stderr[-2000:]
        shot = ARTIFACTS / f"site-paged-{page.stem}.png"
        assert _chromium(page, f"--screenshot={shot}", "--window-size=1400,2000").returncode == 0
        return dom.stdout
    with ThreadPoolExecutor(max_workers=2) as pool:
        doms = list(pool.map(load, [paged / names[0], paged / names[2]]))
    first, third = doms
    rows = [re.findall(r'<tr id="figure-(\d+)">', dom) for dom in doms]
    assert len(rows[0]) == 4 and len(rows[1]) == 4 and not set(rows[0]) & set(rows[1])
    assert 'aria-label="Pages of figures, above the table"' in third and 'rel="prev"' in third and 'rel="next"' not in third
    assert '<strong aria-current="page">3</strong>' in third and "figures 9 to 12 of 12" in third
    assert "Summary: 12 figures in" in first and f'href="{names[1]}#figures"' in first
    later = set(re.findall(r'href="machine-nvidia-dgx-spark\.page-\d\.html#figure-(\d+)"', first))
    assert later and later <= {i for page in names[1:] for i in re.findall(
        r'<tr id="figure-(\d+)">', (paged / page).read_text(encoding="utf-8"))}
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in "".join(
        (paged / page).read_text(encoding="utf-8") for page in names)  # the hostile quote, as text, on its page
    _assert_fits_390_px(paged, names + ["model-gpt-oss-20b.html"])
