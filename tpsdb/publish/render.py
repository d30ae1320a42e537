"""Writing a built table as Markdown, HTML, CSV or JSON.

Every format carries what the table holds fixed, its notes (pick rule, what calc. means, "no validated measurement"
when it is empty) and a footnote per measured cell with the source URL, retrieval date, procedure and quote.
Text that comes from sources (quotes, titles, names) is escaped: HTML through Jinja2's autoescape, Markdown by
putting quotes in code spans and escaping the characters that would make markup.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from jinja2 import Environment
from markupsafe import Markup

from ..output import spreadsheet_safe
from .quotes import is_table_row
from .tables import Cell, Footnote, Table

# After a quoted table row whose header line the source's snapshot does not give: never a guessed header.
ROW_NOTE = "(a row of the source's table)"

FORMATS = ("md", "html", "csv", "json")  # each is also its files' extension


def is_web_url(url: str | None) -> bool:
    """Only http(s) addresses become links: a `javascript:` URL in a reference file stays text."""
    return bool(url) and re.match(r"^https?://", url, re.I) is not None


def is_site_page(href: str | None) -> bool:
    """A page of the site itself (a machine's or a model's, tpsdb.publish.entities): a relative link."""
    return bool(href) and re.fullmatch(r"(machine|model)-[a-z0-9-]+\.html", href) is not None


# --------------------------------------------------------------------------------------------------- JSON
def _cell_json(cell: Cell) -> dict:
    data: dict[str, Any] = {"text": cell.text, "value": cell.value, "kind": cell.kind}
    for key in ("footnote", "href", "hint"):
        if getattr(cell, key) is not None:
            data[key] = getattr(cell, key)
    if cell.also:
        data["also_footnotes"] = list(cell.also)
    return data


def _footnote_json(f: Footnote) -> dict:
    return {k: v for k, v in f.__dict__.items() if v is not None}


def table_json(table: Table) -> dict:
    d = table.definition
    return {
        "name": d.name,
        "kind": d.kind,
        "title": d.title,
        "description": d.description,
        "pick": d.pick,
        "pick_text": d.pick_text,
        "held_fixed": dict(table.held_fixed),
        "columns": [{"key": c.key, "label": c.label, "kind": c.kind, "help": c.help} for c in table.columns],
        "rows": [{key: _cell_json(cell) for key, cell in row.items()} for row in table.rows],
        "total_rows": table.total_rows,
        "empty": table.empty,
        "notes": table.notes,
        "footnotes": [_footnote_json(f) for f in table.footnotes],
    }


def render_json(table: Table) -> str:
    return json.dumps(table_json(table), ensure_ascii=False, indent=1) + "\n"


# ---------------------------------------------------------------------------------------------------- CSV
def render_csv(table: Table) -> str:
    """One line per row. Numbers are plain (no %, no ×); every measured column is followed by its source URL and
    retrieval date, every reference column by its source URL; the held-fixed conditions close each line, so a row
    read alone still says what it is."""
    by_number = {f.number: f for f in table.footnotes}
    header: list[str] = []
    for c in table.columns:
        header.append(c.label)
        if c.kind == "measured":
            header += [f"{c.label} source URL", f"{c.label} retrieved"]
        elif c.kind == "reference":
            header.append(f"{c.label} source URL")
    header += [f"Held fixed: {name}" for name, _ in table.held_fixed]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([spreadsheet_safe(h) for h in header])
    for row in table.rows:
        line: list[Any] = []
        for c in table.columns:
            cell = row.get(c.key, Cell())
            cited = [by_number[n] for n in (cell.footnote, *cell.also) if n]  # a figure several sources publish
            if c.kind in ("measured", "reference"):
                line.append("" if cell.value is None else cell.value)
                line.append(" ; ".join(f.url for f in cited))
                if c.kind == "measured":
                    line.append(" ; ".join(f.retrieved_at or "" for f in cited))
            elif c.kind == "calc":
                line.append("" if cell.value is None else round(cell.value, 4))
            else:
                line.append(cell.text)
        line += [text for _, text in table.held_fixed]
        writer.writerow([spreadsheet_safe(cell) for cell in line])  # text from sources is never a formula
    return out.getvalue()


# ----------------------------------------------------------------------------------------------- Markdown
_MD_SPECIAL = re.compile(r"([\\|*\[\]`])")


def md_text(value: str) -> str:
    text = " ".join(str(value).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def md_code(value: str) -> str:
    """A code span that holds any text literally (quotes with backticks or HTML). Only for text outside tables:
    inside a table cell a `|` would still end the cell."""
    text = " ".join(str(value).split())
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_link(label: str, url: str | None) -> str:
    if is_web_url(url) and not re.search(r"[\s<>]", url):
        return f"[{md_text(label)}](<{url}>)"
    return md_text(label) + (f" ({md_text(url)})" if url else "")


def footnote_md(table: Table, f: Footnote) -> str:
    key = f"{table.definition.name}-{f.number}"
    if f.kind == "reference":
        return f"[^{key}]: {md_link(f.label, f.url)}"
    parts = [md_link(f.label, f.url)]
    if f.url and f.label != f.url:
        parts.append(md_text(f.url))
    if f.retrieved_at:
        parts.append(f"retrieved {f.retrieved_at}")
    if f.published_at:
        parts.append(f"published {f.published_at}")
    if f.author:
        parts.append(f"by {md_text(f.author)}")
    if f.via:
        parts.append(f"relayed by {md_text(f.via)}")
    if f.procedure:
        parts.append(f"procedure: {md_code(f.procedure)}")
    if f.quote_header:  # the line above the quoted row in the source, so its columns can be read
        parts.append(f"table header: {md_code(f.quote_header)}")
    if f.quote:
        parts.append(f"quote: {md_code(f.quote)}" + (f" {ROW_NOTE}" if is_table_row(f.quote) and not f.quote_header
                                                    else ""))
    return f"[^{key}]: " + " · ".join(parts)


def render_markdown(table: Table) -> str:
    d = table.definition
    lines = [f"## {md_text(d.title)}", ""]
    if d.description:
        lines += [md_text(d.description), ""]
    lines += ["**Held fixed**", ""]
    lines += [f"- {name}: {md_text(text)}" for name, text in table.held_fixed]
    lines.append("")
    lines.append("| " + " | ".join(md_text(c.label) for c in table.columns) + " |")
    lines.append("|" + "|".join("---:" if c.kind in ("measured", "calc", "reference") else "---"
                                for c in table.columns) + "|")
    for row in table.rows:
        cells = []
        for c in table.columns:
            cell = row.get(c.key, Cell())
            text = md_link(cell.text, cell.href) if (cell.href and cell.text) else md_text(cell.text)
            for number in (cell.footnote, *cell.also) if cell.footnote else ():
                text += f"[^{d.name}-{number}]"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines += [f"- {md_text(note)}" for note in table.notes]
    lines.append("")
    lines += [footnote_md(table, f) for f in table.footnotes]
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------------------------------- HTML
STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:80rem;padding:0 1rem;
color:#1d1d1f;line-height:1.45}
h1{font-size:1.5rem}h2{font-size:1.1rem;margin-top:1.6rem}
table.tps{border-collapse:collapse;margin:1rem 0;font-size:.9rem}
table.tps th,table.tps td{border:1px solid #d0d0d5;padding:.3rem .5rem;vertical-align:top;overflow-wrap:break-word}
table.tps td{min-width:3rem}
@media (max-width:40rem){body{margin:1rem auto}dl.fixed{grid-template-columns:1fr}dl.fixed dd{margin-bottom:.3rem}}
table.tps th{background:#f3f3f6;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.tps th.calc,table.tps td.calc{background:#fff8e6;font-style:italic}
table.tps th.measured{background:#e8f3ea}
td.empty{color:#999}
td div.why{white-space:normal;text-align:left;font-size:.8rem;color:#555;max-width:24rem}
sup.fn a{text-decoration:none;font-size:.75em;margin-left:.1em}
dl.fixed{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}
dl.fixed dt{font-weight:600}dl.fixed dd{margin:0}
p.empty{padding:.6rem;background:#fdecea;border-left:4px solid #c0392b}
ol.footnotes{font-size:.85rem}ol.footnotes code{white-space:pre-wrap;word-break:break-word}
figure.chart svg{max-width:100%;height:auto}
nav{margin-bottom:1rem}
div.scroll{overflow-x:auto;max-width:100%}
body:has(section.data){max-width:none}
table.data{font-size:.8rem}
table.data td{padding:.25rem .35rem}
table.data th{padding:0;white-space:nowrap}
table.data th button{font:inherit;font-weight:600;background:none;border:0;padding:.3rem .35rem;cursor:pointer;width:100%;text-align:left}
table.data th[aria-sort=ascending] button::after{content:" ▲"}table.data th[aria-sort=descending] button::after{content:" ▼"}
table.data tr.filters td{padding:.15rem}
table.data input{width:100%;min-width:2.5rem;box-sizing:border-box;font:inherit;font-size:.8rem}
table.data td{max-width:28rem;overflow-wrap:break-word}
p.pager button{font:inherit}
ol.footnotes,dl.fixed dd,td.source,p.download,ul.notes{overflow-wrap:anywhere}
code.quote{white-space:pre-wrap;overflow-wrap:anywhere}
section.entity td{max-width:32rem}
p.entities a{white-space:nowrap;line-height:1.8}
details.notcomputed{font-size:.85rem;margin:.5rem 0}
@media (max-width:40rem){table.tps{font-size:.8rem}h1{font-size:1.25rem}dl.fixed{grid-template-columns:1fr}dl.fixed dd{margin-bottom:.3rem}}
"""

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>{{ style }}</style>
</head>
<body>
{% if nav %}<nav><a href="{{ nav }}">← All tables</a></nav>{% endif %}
{% for t in tables %}{{ t }}{% endfor %}
{% if footer %}<footer><p>{{ footer }}</p></footer>{% endif %}
</body>
</html>
"""

_TABLE = """<section class="table" id="{{ d.name }}" data-kind="{{ d.kind }}">
<h1>{{ d.title }}</h1>
{% if d.description %}<p class="description">{{ d.description }}</p>{% endif %}
<h2>Held fixed</h2>
<dl class="fixed">
{% for name, text in table.held_fixed %}<dt>{{ name }}</dt><dd>{{ text }}</dd>
{% endfor %}</dl>
{% if table.empty %}<p class="empty">{{ table.notes[0] }}</p>{% endif %}
<div class="scroll"><table class="tps">
<thead><tr>{% for c in table.columns %}<th class="{{ c.kind }}" scope="col"{% if c.help %} title="{{ c.help }}"{% endif %}>{{ c.label }}</th>{% endfor %}</tr></thead>
<tbody>
{% for row in table.rows %}<tr>{% for c in table.columns %}{% set cell = row.get(c.key) %}{{ render_cell(c, cell) }}{% endfor %}</tr>
{% endfor %}</tbody>
</table></div>
{% if chart %}<figure class="chart">{{ chart }}<figcaption>{{ chart_caption }}</figcaption></figure>{% endif %}
<h2>Notes</h2>
<ul class="notes">{% for note in (table.notes[1:] if table.empty else table.notes) %}<li>{{ note }}</li>{% endfor %}</ul>
{% if table.footnotes %}<h2>Sources</h2>
<ol class="footnotes">
{% for f in table.footnotes %}<li id="{{ d.name }}-fn-{{ f.number }}" value="{{ f.number }}">
{% if is_web_url(f.url) %}<a href="{{ f.url }}">{{ f.label }}</a>{% else %}{{ f.label }}{% endif %}
{% if f.kind == "measurement" %}{% if f.url != f.label %} · <span class="url">{{ f.url }}</span>{% endif %}
{% if f.retrieved_at %} · retrieved {{ f.retrieved_at }}{% endif %}{% if f.published_at %} · published {{ f.published_at }}{% endif %}
{% if f.author %} · by {{ f.author }}{% endif %}{% if f.via %} · relayed by {{ f.via }}{% endif %}
{% if f.procedure %}<br>procedure: <code>{{ f.procedure }}</code>{% endif %}
{% if f.quote_header %}<br>table header: <code class="quote header">{{ f.quote_header }}</code>{% endif %}
{% if f.quote %}<br>quote: <code class="quote">{{ f.quote }}</code>{% if is_table_row(f.quote) and not f.quote_header %} {{ row_note }}{% endif %}{% endif %}{% endif %}
</li>
{% endfor %}</ol>{% endif %}
{% if downloads %}<p class="downloads">This table as {% for label, href in downloads %}<a href="{{ href }}">{{ label }}</a>{% if not loop.last %}, {% endif %}{% endfor %}.</p>{% endif %}
</section>
"""

_CELL = """{% if cell is none or (cell.text == "" and not cell.footnote) %}<td class="{{ c.kind }} empty"{% if cell and cell.hint %} title="{{ cell.hint }}"{% endif %}></td>{% else %}<td class="{{ c.kind }}{% if c.kind != 'text' %} num{% endif %}"{% if cell.hint %} title="{{ cell.hint }}"{% endif %}>{% if cell.href and (is_web_url(cell.href) or is_site_page(cell.href)) %}<a href="{{ cell.href }}">{{ cell.text }}</a>{% else %}{{ cell.text }}{% endif %}{% if cell.footnote %}<sup class="fn">{% for n in [cell.footnote] + cell.also|list %}{% if not loop.first %},{% endif %}<a href="#{{ name }}-fn-{{ n }}">{{ n }}</a>{% endfor %}</sup>{% endif %}</td>{% endif %}"""

_env = Environment(autoescape=True, trim_blocks=False, lstrip_blocks=False, keep_trailing_newline=True)
_env.globals["is_web_url"] = is_web_url
_env.globals["is_site_page"] = is_site_page
_env.globals["is_table_row"] = is_table_row
_env.globals["row_note"] = ROW_NOTE
_page_template = _env.from_string(_PAGE)
_table_template = _env.from_string(_TABLE)
_cell_template = _env.from_string(_CELL)


def _render_cell(name: str):
    def render(column, cell):
        return Markup(_cell_template.render(c=column, cell=cell, name=name))
    return render


def render_table_html(table: Table, chart_svg: str | None = None, chart_caption: str = "",
                      downloads: list[tuple[str, str]] | None = None) -> str:
    """The table as an HTML <section>. `chart_svg` is trusted markup (made by charts.py); everything else is escaped."""
    return _table_template.render(
        d=table.definition, table=table, render_cell=_render_cell(table.definition.name),
        chart=Markup(chart_svg) if chart_svg else None, chart_caption=chart_caption, downloads=downloads,
    )


def render_page(title: str, sections: list[str], nav: str | None = None, footer: str | None = None) -> str:
    return _page_template.render(title=title, style=Markup(STYLE), tables=[Markup(s) for s in sections], nav=nav,
                                 footer=footer)


def render_html(table: Table) -> str:
    return render_page(table.definition.title, [render_table_html(table)])


# ---------------------------------------------------------------------------------------------- dispatch
RENDERERS = {"md": render_markdown, "html": render_html, "csv": render_csv, "json": render_json}


def render(table: Table, fmt: str) -> str:
    return RENDERERS[fmt](table)


def render_many(tables: list[Table], fmt: str) -> str:
    """Several tables as one text for standard output: a JSON array, one HTML page, or Markdown/CSV one after another."""
    if fmt == "json":
        return json.dumps([table_json(t) for t in tables], ensure_ascii=False, indent=1) + "\n"
    if fmt == "html":
        title = tables[0].definition.title if len(tables) == 1 else "tpsdb tables"
        return render_page(title, [render_table_html(t) for t in tables])
    return "\n".join(render(t, fmt) for t in tables)
