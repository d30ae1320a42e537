"""The static site: an index, one page per table (with its chart inlined as SVG) and each table as CSV, JSON and
Markdown beside its page. Every link is relative and nothing is fetched, so the pages work from file:// as well as
from any static web server."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

from jinja2 import Environment
from sqlalchemy import text
from sqlmodel import Session

from ..export import ExportError, export_measurements
from ..export import export as export_records
from ..output import atomic_file, write_atomic
from . import entities as entity_pages
from .charts import chart_svg
from .definitions import Definition
from .pages import DATA_PAGES, render_data_page
from .render import render_csv, render_json, render_markdown, render_page, render_table_html
from .tables import FINITE, NO_MEASUREMENT, Table, build_table, has_non_finite

_INDEX = """<section class="index">
<h1>{{ title }}</h1>
<p>Inference speed figures (tokens per second), each shown with the conditions it was measured under and its source.
{{ measured }} validated measurements in the database. Computed values are marked <em>calc.</em> and never fill a
measured cell.</p>
<p class="data-links">The data itself: <a href="figures.html">all {{ figures }} accepted figures</a> and
<a href="rejections.html">the {{ rejections }} rejected figures with their reasons</a>, each sortable and filterable.</p>
<p class="download">Download everything: <a href="{{ downloads.csv }}" download>every accepted figure as CSV</a>
· <a href="{{ downloads.jsonl }}" download>as JSONL records</a> (the record format <code>tpsdb add</code> reads back)
· <a href="{{ downloads.rejections }}" download>every rejection as JSONL</a>. {{ licence }}</p>
<nav class="entities" aria-label="Machines and models">
<h2>A page per machine ({{ machines|length }})</h2>
<p class="entities">{% for e in machines %}<a href="{{ e.page }}">{{ e.name }}</a>{% if not loop.last %} · {% endif %}{% endfor %}</p>
<h2>A page per model ({{ models|length }})</h2>
<p class="entities">{% for e in models %}<a href="{{ e.page }}">{{ e.name }}</a>{% if not loop.last %} · {% endif %}{% endfor %}</p>
<p><a href="{{ list_page }}">Machines and models, with their figure counts</a></p>
</nav>
<h2>The tables</h2>
<div class="scroll"><table class="tps">
<thead><tr><th>Table</th><th>Kind</th><th>What it shows</th><th class="measured">Measured cells</th><th>Data</th></tr></thead>
<tbody>
{% for t in tables %}<tr>
<td><a href="{{ t.definition.name }}.html">{{ t.definition.title }}</a></td>
<td>{{ t.definition.kind }}</td>
<td>{{ t.definition.description }}</td>
<td class="num">{% if t.empty %}none yet<div class="why">{{ t.notes[0][skip:] }}</div>{% else %}{{ t.measured_cells }}{% endif %}</td>
<td><a href="{{ t.definition.name }}.csv">CSV</a> · <a href="{{ t.definition.name }}.json">JSON</a> · <a href="{{ t.definition.name }}.md">Markdown</a></td>
</tr>
{% endfor %}</tbody>
</table></div>
</section>
"""

_index_template = Environment(autoescape=True).from_string(_INDEX)
FOOTER = "Made by tpsdb publish. Every measured cell links to its source; calc. marks a computation."
# The whole dataset, one link each (issue 20), with what a reuser may do with it.
DOWNLOADS = {"csv": "tpsdb-figures.csv", "jsonl": "tpsdb-figures.jsonl", "rejections": "tpsdb-rejections.jsonl"}
LICENCE = ("Licence: tpsdb and this compilation are MIT-licensed; each figure is a fact read from its source, "
           "and each quote is a short excerpt of that source, cited by its URL: reuse it with that URL.")


# Marks a folder as a site tpsdb wrote, and lists the files it owns there: a later publish replaces those only.
MANIFEST = ".tpsdb-site"


class SiteFolderError(Exception):
    """The --out folder cannot take the site (a file, a missing parent, someone else's files)."""


def _write(path: Path, content: str) -> None:
    write_atomic(path, content)  # a reader never sees half a page; a planted symlink is never followed


def prepare_folder(out: Path, files: list[str], force: bool = False) -> set[str]:
    """Make sure `out` may take the site's `files`; create it if it is new. Returns the files tpsdb wrote there
    before (from its manifest), which a new publish may replace or remove.

    A new folder needs an existing parent. An existing folder is taken when it is empty or holds tpsdb's manifest;
    then a file of the site that tpsdb did not write there is still refused. `force` overwrites such files (other
    files are always left alone)."""
    if out.exists() and not out.is_dir():
        raise SiteFolderError(f"{out}: not a folder; --out names the folder to write the site into")
    if not out.exists():
        if not out.parent.is_dir():
            raise SiteFolderError(f"{out}: its parent folder {out.parent} does not exist; create it first")
        try:
            out.mkdir()
        except OSError as error:
            raise SiteFolderError(f"{out}: cannot create it ({error.strerror})") from None
        return set()
    try:
        present = {p.name for p in out.iterdir()}
    except OSError as error:
        raise SiteFolderError(f"{out}: cannot read it ({error.strerror})") from None
    owned: set[str] = set()
    if MANIFEST in present:
        try:
            owned = set(json.loads((out / MANIFEST).read_text(encoding="utf-8"))["files"])
        except (OSError, ValueError, KeyError, TypeError):
            raise SiteFolderError(f"{out}/{MANIFEST}: unreadable; remove it, or pass --force") from None
    elif present and not force:
        raise SiteFolderError(f"{out} already holds files tpsdb did not write ({_listing(present)}); publish into "
                              "a new or empty folder, or pass --force to overwrite the site's files there")
    clashes = sorted((set(files) & present) - owned)
    if clashes and not force:
        raise SiteFolderError(f"{out}: {_listing(clashes)} were not written by tpsdb; move them away, or pass "
                              "--force to overwrite them")
    return owned


def _listing(names) -> str:
    names = sorted(names)
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def write_table_files(table: Table, out: Path, entities: entity_pages.Entities | None = None) -> list[Path]:
    """The table's page (with its chart; its machine and model cells linking to their pages) and its CSV, JSON and
    Markdown files."""
    name = table.definition.name
    svg, caption = chart_svg(table.chart)
    downloads = [("CSV", f"{name}.csv"), ("JSON", f"{name}.json"), ("Markdown", f"{name}.md")]
    section = render_table_html(entity_pages.linked(table, entities) if entities else table, svg, caption, downloads)
    written = []
    for filename, content in ((f"{name}.html", render_page(table.definition.title, [section], nav="index.html",
                                                            footer=FOOTER)),
                              (f"{name}.csv", render_csv(table)),
                              (f"{name}.json", render_json(table)),
                              (f"{name}.md", render_markdown(table))):
        _write(out / filename, content)
        written.append(out / filename)
    return written


def site_files(definitions: list[Definition], entities: entity_pages.Entities | None = None,
               figures_per_page: int = entity_pages.FIGURES_PER_PAGE) -> list[str]:
    """The names of the files a site of these tables (and of these machines and models, each on its pages of
    at most `figures_per_page` figures) is made of."""
    pages = [] if entities is None else (
        [entity_pages.LIST_PAGE] + [page for e in [*entities.machines.values(), *entities.models.values()]
                                    for page in entity_pages.figure_pages(e, figures_per_page)])
    return (["index.html"] + [f"{d.name}.{ext}" for d in definitions for ext in ("html", "csv", "json", "md")]
            + [f"{page.name}.html" for page in DATA_PAGES] + pages + list(DOWNLOADS.values()))


def publish_site(engine, definitions: list[Definition], out: Path, title: str = "tpsdb: LLM inference speed",
                 force: bool = False, progress=None,
                 figures_per_page: int = entity_pages.FIGURES_PER_PAGE) -> list[Path]:
    """Write the whole site under `out` and return the files written, index.html first. `progress(done, total)`
    is called as pages are written (the command shows it on a terminal). A machine's or model's figures are
    listed `figures_per_page` a page (its first page keeps its name, the others are numbered).
    Raises SiteFolderError when `out` cannot take it (see prepare_folder), before anything is written."""
    with engine.connect() as conn:
        entities = entity_pages.collect(conn)
    files = site_files(definitions, entities, figures_per_page)
    owned = prepare_folder(out, files, force)
    step = _stepper(progress, len(files))
    with engine.connect() as conn:  # the count and the tables from one view of the data
        any_non_finite = has_non_finite(conn)
        tables = [build_table(conn, d, any_non_finite) for d in definitions]
        measured = conn.execute(text("SELECT COUNT(*) FROM measurement WHERE status = 'active' "
                                     f"AND nature_kind = 'measured' AND {FINITE}")).scalar_one()
        counts = {}
        for page in DATA_PAGES:
            counts[page.name], content = render_data_page(conn, page, FOOTER, entities)
            _write(out / f"{page.name}.html", content)
            step()
    written = [out / f"{page.name}.html" for page in DATA_PAGES]
    for table in tables:
        written += write_table_files(table, out, entities)
        step(4)
    written += _write_entity_pages(engine, entities, out, step, figures_per_page)
    written += _write_downloads(engine, out)
    step(len(DOWNLOADS))
    index = render_page(title, [_index_template.render(
        title=title, tables=tables, skip=len(NO_MEASUREMENT) + 1, measured=measured, figures=counts["figures"],
        rejections=counts["rejections"], downloads=DOWNLOADS, licence=LICENCE,
        machines=list(entities.machines.values()), models=list(entities.models.values()),
        list_page=entity_pages.LIST_PAGE)], footer=FOOTER)
    _write(out / "index.html", index)
    step()
    for stale in sorted(owned - set(files)):  # a table no longer published: its files were tpsdb's
        (out / stale).unlink(missing_ok=True)
    _write(out / MANIFEST, json.dumps({"written_by": "tpsdb publish", "files": files}, indent=1) + "\n")
    return [out / "index.html"] + written


def _stepper(progress, total: int):
    done = 0

    def step(n: int = 1) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(min(done, total), total)
    return step


def _write_entity_pages(engine, entities: entity_pages.Entities, out: Path, step,
                        figures_per_page: int) -> list[Path]:
    """The pages of each machine and model, and the page that lists them."""
    written = []
    index = entity_pages.by_test(entities)
    known: dict[tuple, list[dict]] = {}  # the computed maxima, each needed by a machine's and a model's page
    rows = entity_pages.FigureRows()  # and each figure's row, but for the cell naming the other one
    with Session(engine) as session:
        for entity in [*entities.machines.values(), *entities.models.values()]:
            pages = entity_pages.render_entity_pages(session, entity, entities, index, figures_per_page,
                                                       known, rows)
            for number, (name, content) in enumerate(pages, start=1):
                title = entity.name if number == 1 else f"{entity.name}: figures, page {number} of {len(pages)}"
                _write(out / name, render_page(title, [content], nav="index.html", footer=FOOTER))
                written.append(out / name)
                step()
    listing = entity_pages.render_list(entities, figures_per_page)
    _write(out / entity_pages.LIST_PAGE, render_page("Machines and models", [listing], nav="index.html",
                                                     footer=FOOTER))
    step()
    return written + [out / entity_pages.LIST_PAGE]


def _write_downloads(engine, out: Path) -> list[Path]:
    """The whole dataset: the accepted figures as CSV and as JSONL records, the rejections as JSONL. The figures
    are read once for both of their files (making a record costs more than writing it), and written to disk as
    they come rather than held whole (tens of MB each)."""
    figures = {"csv": out / DOWNLOADS["csv"], "jsonl": out / DOWNLOADS["jsonl"]}
    with ExitStack() as files:
        # a non-finite number, which no format can hold, ends a file: the records before it (the pages show such
        # a figure empty, as has_non_finite tells them)
        export_measurements(engine, {fmt: files.enter_context(atomic_file(path)) for fmt, path in figures.items()})
    with atomic_file(out / DOWNLOADS["rejections"]) as handle:
        try:
            export_records(engine, handle, "jsonl", rejections=True)
        except ExportError:
            pass
    return [*figures.values(), out / DOWNLOADS["rejections"]]
