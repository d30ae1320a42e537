"""The site's data pages: every accepted figure (figures.html) and every rejection with its reasons
(rejections.html), sortable, filterable and paged in the browser without a server.

Each page carries its rows inline as JSON (a browser opening the page from file:// may not fetch a second file),
column by column, every text column dictionary-coded: a machine, model or source title is written once and each
row holds its index. The table is drawn by a small plain script (no library, no build step): 100 rows a page, one filter box per
column, a click on a header sorts. Source text is only ever set as text (textContent), and a link only ever points
to an http(s) address, so hostile text from a source stays inert.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from jinja2 import Environment
from markupsafe import Markup

from .render import render_page


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: str = "text"  # text (dictionary-coded), num, link (text that links to the row's permalink)
    help: str = ""
    json_list: bool = False  # a JSON list of text, shown joined by "; "
    digits: int | None = None  # decimals a number is always shown with (95.00 next to 81.11, never 95)


@dataclass(frozen=True)
class DataPage:
    name: str
    title: str
    intro: str
    sql: str
    columns: tuple[Column, ...]
    # The query's last column is the row's permalink: the `link` column's text links to it.


FIGURES = DataPage(
    name="figures",
    title="All accepted figures",
    intro="Every current, validated figure with its conditions. Click a header to sort; type in the boxes under "
          "the headers to filter (numbers accept >, <, >= and <=, e.g. >50); the address keeps the filters and "
          "the sort, to share or bookmark. Each source cell links to the figure's own address; each machine and "
          "model to its page.",
    sql="""SELECT measurement_id, hardware, model, quantization, software, software_version, phase, prompt_tokens,
                  generated_tokens, context_depth, users, figure, nature, tokens_per_second, memory_bandwidth_gbs,
                  COALESCE(source_title, source_home_url), retrieved_at, source_url
           FROM measurement_full WHERE status = 'active' ORDER BY measurement_id""",
    columns=(Column("id", "#", "num"), Column("hardware", "Hardware"), Column("model", "Model"),
             Column("quantization", "Quant."), Column("software", "Software"), Column("version", "Version"),
             Column("phase", "Phase"), Column("prompt", "Prompt", "num", "prompt tokens"),
             Column("generated", "Gen.", "num", "generated tokens"),
             Column("depth", "Depth", "num", "context depth: tokens already in the context"),
             Column("users", "Users", "num", "concurrent users"),
             Column("figure", "Figure", help="per_user: what one user sees; aggregate: the sum over users"),
             Column("nature", "Nature"), Column("tps", "tokens/s", "num", digits=2),
             Column("bandwidth", "GB/s", "num", "memory bandwidth of the machine"),
             Column("source", "Source", "link"), Column("retrieved", "Retrieved")),
)

REJECTIONS = DataPage(
    name="rejections",
    title="Rejected figures and why",
    intro="Every current figure read from a source but refused, with the reasons: each names the condition that "
          "is missing or wrong. Click a header to sort; type in the boxes under the headers to filter. Each source "
          "cell links to the post the figure was read from.",
    sql="""SELECT rejection_id, tokens_per_second,
reasons,
                  COALESCE(source_title, source_url), quote, COALESCE(post_permalink, source_url)
           FROM rejection_full WHERE status = 'active' ORDER BY rejection_id""",
    columns=(Column("id", "#", "num"), Column("tps", "tokens/s", "num", digits=2), Column("reasons", "Reasons", json_list=True),
             Column("source", "Source", "link"), Column("quote", "Quote")),
)

DATA_PAGES = (FIGURES, REJECTIONS)

_SCRIPT = r"""
(function () {
  var data = JSON.parse(document.getElementById("rows").textContent);
  var cols = data.columns, strings = data.strings, values = data.values, PAGE = 100, entityPages = data.pages || {};
  var linkAt = cols.length;  // the last column of values: each row's permalink
  var rows = new Array(data.count);  // a row is its number: its values are values[column][row]
  for (var r = 0; r < rows.length; r++) rows[r] = r;
  var table = document.getElementById("data"), body = table.tBodies[0];
  var status = document.getElementById("status"), sortCol = -1, sortDir = 1, page = 0, shown = rows;
  function value(row, i) { var v = values[i][row]; return strings[i] === null || v === null ? v : strings[i][v]; }
  function short(t) {  // an address as link text: its host and its end, not 100 characters
    var m = /^https?:\/\/([^\/]+)(.*)$/i.exec(t);
    if (!m) return t;
    return m[2].length > 28 ? m[1] + "/…" + m[2].slice(-24) : m[1] + m[2];
  }
  function num(v, c) { return v === null ? "" : c.digits !== null ? v.toFixed(c.digits) : String(v); }
  function test(expr, isNum) {
    expr = expr.trim().toLowerCase();
    var m = isNum && /^(>=|<=|>|<|=)\s*(-?[\d.]+)$/.exec(expr);
    if (m) {
      var x = parseFloat(m[2]);
      return function (v) { return v !== null && (m[1] === ">" ? v > x : m[1] === "<" ? v < x :
        m[1] === ">=" ? v >= x : m[1] === "<=" ? v <= x : v === x); };
    }
    return function (v) { return v !== null && (isNum ? String(v) : v).toLowerCase().indexOf(expr) >= 0; };
  }
  // The filters and the sort live in the address (#hardware=M2&tps=>50&sort=tps&dir=desc), so a filtered view can
  // be shared or bookmarked; the fragment is never sent to a server and works from file://.
  var boxes = table.querySelectorAll("thead input");
  function remember() {
    var params = new URLSearchParams();
    boxes.forEach(function (box, i) { if (box.value.trim()) params.set(cols[i].key, box.value.trim()); });
    if (sortCol >= 0) { params.set("sort", cols[sortCol].key); params.set("dir", sortDir > 0 ? "asc" : "desc"); }
    var hash = params.toString();
    if (("#" + hash) !== location.hash && !(hash === "" && location.hash === ""))
      history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search);
  }
  function recall() {
    var params = new URLSearchParams(location.hash.slice(1));
    boxes.forEach(function (box, i) { box.value = params.get(cols[i].key) || ""; });
    sortCol = -1;
    cols.forEach(function (c, i) { if (c.key === params.get("sort")) sortCol = i; });
    sortDir = params.get("dir") === "asc" ? 1 : -1;
    table.querySelectorAll("thead th").forEach(function (th, j) {
      th.setAttribute("aria-sort", j === sortCol ? (sortDir > 0 ? "ascending" : "descending") : "none"); });
  }
  function refilter() {
    var tests = [];
    table.querySelectorAll("thead input").forEach(function (box, i) {
      if (box.value.trim()) tests.push([i, test(box.value, cols[i].kind === "num")]);
    });
    shown = tests.length ? rows.filter(function (row) {
      return tests.every(function (t) { return t[1](value(row, t[0])); });
    }) : rows.slice();
    if (sortCol >= 0) resort(); else { page = 0; draw(); }
  }
  function resort() {
    var i = sortCol, keyed = shown.map(function (row) { return [value(row, i), row]; });
    keyed.sort(function (a, b) {
      if (a[0] === b[0]) return 0; if (a[0] === null) return 1; if (b[0] === null) return -1;
      return (a[0] < b[0] ? -1 : 1) * sortDir;
    });
    shown = keyed.map(function (k) { return k[1]; }); page = 0; draw();
  }
  function draw() {
    var pages = Math.max(1, Math.ceil(shown.length / PAGE)); page = Math.min(page, pages - 1);
    var fragment = document.createDocumentFragment();
    shown.slice(page * PAGE, page * PAGE + PAGE).forEach(function (row) {
      var tr = document.createElement("tr");
      cols.forEach(function (c, i) {
        var td = document.createElement("td"), v = value(row, i);
        if (c.kind === "num") { td.className = "num"; td.textContent = num(v, c); }
        else if (c.kind === "link") {
          var url = value(row, linkAt);
          if (/^https?:\/\//i.test(url)) { var a = document.createElement("a"); a.href = url;
            a.textContent = short(v || url); a.title = url; td.appendChild(a); } else td.textContent = v || "";
        } else if (entityPages[i] && values[i][row] !== null && entityPages[i][values[i][row]]) {
          var p = document.createElement("a"); p.href = entityPages[i][values[i][row]]; p.textContent = v; td.appendChild(p);
        } else { td.textContent = v === null ? "" : v; if (v && v.length > 60) td.title = v; }
        tr.appendChild(td);
      });
      fragment.appendChild(tr);
    });
    body.replaceChildren(fragment);
    status.textContent = shown.length ? "Rows " + (page * PAGE + 1) + "–" + Math.min(shown.length, page * PAGE + PAGE) +
      " of " + shown.length + (shown.length < rows.length ? " (filtered from " + rows.length + ")" : "") +
      "; page " + (page + 1) + " of " + pages : "No row matches the filters (" + rows.length + " in all).";
    document.getElementById("prev").disabled = page === 0;
    document.getElementById("next").disabled = page >= pages - 1;
    remember();
  }
  table.querySelectorAll("thead th button").forEach(function (button, i) {
    button.addEventListener("click", function () {
      sortDir = sortCol === i ? -sortDir : (cols[i].kind === "num" ? -1 : 1); sortCol = i;
      table.querySelectorAll("thead th").forEach(function (th, j) {
        th.setAttribute("aria-sort", j === i ? (sortDir > 0 ? "ascending" : "descending") : "none"); });
      resort();
    });
  });
  var timer;
  table.querySelectorAll("thead input").forEach(function (box) {
    box.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(refilter, 150); });
  });
  document.getElementById("prev").addEventListener("click", function () { page--; draw(); });
  document.getElementById("next").addEventListener("click", function () { page++; draw(); });
  window.addEventListener("hashchange", function () { recall(); refilter(); });
  recall();
  if (location.hash.length > 1) refilter(); else draw();
})();
"""

_BODY = """<section class="data" id="{{ page.name }}">
<h1>{{ page.title }}</h1>
<p class="description">{{ page.intro }}</p>
{% if not count %}<p class="empty">{{ empty }}</p>{% endif %}
<p class="pager"><button type="button" id="prev">← Previous</button> <button type="button" id="next">Next →</button> <span id="status" role="status">{{ count }} rows (the table needs JavaScript)</span></p>
<div class="scroll"><table class="tps data" id="data">
<thead><tr>{% for c in page.columns %}<th scope="col" class="{{ c.kind }}" aria-sort="none"{% if c.help %} title="{{ c.help }}"{% endif %}><button type="button">{{ c.label }}</button></th>{% endfor %}</tr>
<tr class="filters">{% for c in page.columns %}<td><input type="search" aria-label="Filter {{ c.label }}" placeholder="filter"></td>{% endfor %}</tr></thead>
<tbody></tbody>
</table></div>
<p class="downloads">The same data: <a href="index.html">the tables</a>; for SQL, <code>tpsdb serve</code> (Datasette) or <code>tpsdb query</code>.</p>
</section>
<script type="application/json" id="rows">{{ rows_json }}</script>
<script>{{ script }}</script>
"""

_template = Environment(autoescape=True).from_string(_BODY)

EMPTY = {
    "figures": "No accepted figure yet: a figure is accepted once its source states all six conditions (hardware, "
               "model file and quantization, software and version, lengths, concurrency, nature). Add records with "
               "`tpsdb add`, or refresh a source with `tpsdb refresh`.",
    "rejections": "No rejected figure: every figure read so far stated all six conditions.",
}


# The columns whose text names a machine or a model: their cells link to its page on the site.
_ENTITY_COLUMNS = {"hardware": "machine", "model": "model"}


def page_rows(conn, page: DataPage, entities=None) -> tuple[int, str]:
    """The page's rows as its inline JSON, and how many there are.

    The JSON is column by column: `values` holds one list per column (the shown ones, then the permalinks) and
    `strings` each text column's distinct texts, so a machine or source title is written once and each row holds
    its index. Coding a column whole runs in C (dict.fromkeys, map): a page of a million figures is a few seconds,
    not the twenty a per-value Python loop took."""
    cursor = conn.connection.cursor()  # the driver's own cursor: no per-row result object in between
    try:
        cursor.execute(page.sql)
        rows = cursor.fetchall()
    finally:
        cursor.close()
    columns = list(page.columns) + [Column("url", "", "link")]
    by_column = list(zip(*rows)) if rows else [()] * len(columns)
    strings: list[list[str] | None] = []
    values: list[list] = []
    for column, column_values in zip(columns, by_column):
        if column.kind == "num":
            strings.append(None)
            values.append(_numbers(column_values))
        else:
            texts, codes = _coded(column_values, _joined if column.json_list else str)
            strings.append(texts)
            values.append(codes)
    data = {"columns": [{"key": c.key, "label": c.label, "kind": c.kind, "digits": c.digits} for c in page.columns],
            "count": len(rows), "strings": strings, "values": values}
    if entities is not None:  # per linked column: its texts' pages, in the order of its strings (null: no page)
        data["pages"] = {str(i): [entities.href(_ENTITY_COLUMNS[c.key], name) for name in strings[i] or []]
                         for i, c in enumerate(page.columns) if c.key in _ENTITY_COLUMNS}
    # Inside <script>: no "</script>" or "<!--" may appear, so every < is escaped (JSON reads \u003c as <).
    encoded = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    return len(rows), encoded


def _coded(column: tuple, label) -> tuple[list[str], list[int | None]]:
    """A text column as its distinct texts (in order of first use) and each row's index into them (None stays)."""
    index = dict.fromkeys(column)
    index.pop(None, None)
    for number, value in enumerate(index):
        index[value] = number
    return [label(value) for value in index], list(map(index.get, column))


def _joined(value) -> str:
    """A JSON list of texts (a rejection's reasons) shown joined by "; "; anything else as it is."""
    try:
        return "; ".join(map(str, json.loads(value)))
    except (TypeError, ValueError):
        return str(value)


_NUMERIC = {int, float, type(None)}


def _numbers(column: tuple) -> list:
    """A numeric column as JSON can hold it: an infinity, a NaN or a text (SQLite lets a column hold any) shows as
    empty. The usual column, finite numbers only, is checked in C: its types, and that its sum is finite."""
    if set(map(type, column)) <= _NUMERIC and math.isfinite(sum(filter(None, column))):
        return list(column)
    return [v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None
            for v in column]


def render_data_page(conn, page: DataPage, footer: str, entities=None) -> tuple[int, str]:
    """The page's HTML and its row count; with `entities` (tpsdb.publish.entities), machine and model cells link to
    their pages."""
    count, rows_json = page_rows(conn, page, entities)
    body = _template.render(page=page, count=count, empty=EMPTY[page.name], rows_json=Markup(rows_json),
                            script=Markup(_SCRIPT))
    return count, render_page(page.title, [body], nav="index.html", footer=footer)

