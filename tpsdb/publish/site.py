"""The static site: an index, one page per table (with its chart inlined as SVG) and each table as CSV, JSON and
Markdown beside its page. Every link is relative and nothing is fetched, so the pages work from file:// as well as
from any static web server."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment
from sqlalchemy import text

from .charts import chart_svg
from .definitions import Definition
from .render import render_csv, render_json, render_markdown, render_page, render_table_html
from .tables import Table, build_table

_INDEX = """<section class="index">
<h1>{{ title }}</h1>
<p>Inference speed figures (tokens per second), each shown with the conditions it was measured under and its source.
{{ measured }} validated measurements in the database. Computed values are marked <em>calc.</em> and never fill a
measured cell.</p>
<table class="tps">
<thead><tr><th>Table</th><th>Kind</th><th>What it shows</th><th class="measured">Measured cells</th><th>Data</th></tr></thead>
<tbody>
{% for t in tables %}<tr>
<td><a href="{{ t.definition.name }}.html">{{ t.definition.title }}</a></td>
<td>{{ t.definition.kind }}</td>
<td>{{ t.definition.description }}</td>
<td class="num">{% if t.empty %}none yet{% else %}{{ t.measured_cells }}{% endif %}</td>
<td><a href="{{ t.definition.name }}.csv">CSV</a> · <a href="{{ t.definition.name }}.json">JSON</a> · <a href="{{ t.definition.name }}.md">Markdown</a></td>
</tr>
{% endfor %}</tbody>
</table>
</section>
"""

_index_template = Environment(autoescape=True).from_string(_INDEX)
FOOTER = "Made by tpsdb publish. Every measured cell links to its source; calc. marks a computation."


def _write(path: Path, content: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(content, encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a page


def write_table_files(table: Table, out: Path) -> list[Path]:
    """The table's page (with its chart) and its CSV, JSON and Markdown files."""
    name = table.definition.name
    svg, caption = chart_svg(table.chart)
    downloads = [("CSV", f"{name}.csv"), ("JSON", f"{name}.json"), ("Markdown", f"{name}.md")]
    section = render_table_html(table, svg, caption, downloads)
    written = []
    for filename, content in ((f"{name}.html", render_page(table.definition.title, [section], nav="index.html",
                                                            footer=FOOTER)),
                              (f"{name}.csv", render_csv(table)),
                              (f"{name}.json", render_json(table)),
                              (f"{name}.md", render_markdown(table))):
        _write(out / filename, content)
        written.append(out / filename)
    return written


def publish_site(engine, definitions: list[Definition], out: Path, title: str = "tpsdb: LLM inference speed") -> list[Path]:
    """Write the whole site under `out` and return the files written, index.html first."""
    out.mkdir(parents=True, exist_ok=True)
    with engine.connect() as conn:  # the count and the tables from one view of the data
        tables = [build_table(conn, d) for d in definitions]
        measured = conn.execute(text("SELECT COUNT(*) FROM measurement WHERE status = 'active' "
                                     "AND nature_kind = 'measured'")).scalar_one()
    written = []
    for table in tables:
        written += write_table_files(table, out)
    index = render_page(title, [_index_template.render(title=title, tables=tables, measured=measured)],
                        footer=FOOTER)
    _write(out / "index.html", index)
    return [out / "index.html"] + written

