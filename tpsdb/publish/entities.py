"""A page per machine and per model on the static site (issue 20; as result sites show a page per system).

A machine's page: its memory and bandwidth with the citation, every accepted measured figure on it with its
conditions and source, the computed maximum of each model file (labelled calc., or why it is not computed), and the
other machines measured on the same file and test. A model's page: its parameters and files with their sources,
every figure of it on every machine, ranked within each file and test, each with the computed maximum.

Page names come from the names (`machine-nvidia-dgx-spark.html`), made unique by the row id when two names give
the same one. Everything from sources is escaped (Jinja2 autoescape); only http(s) URLs become links.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from jinja2 import Environment
from markupsafe import Markup, escape
from sqlalchemy import text
from sqlmodel import Session

from . import ceiling as ceiling_logic
from .render import is_web_url
from .tables import Table

_FIGURES = text("""
SELECT measurement_id, hardware, model, quantization, file_size_gb, software, software_version, phase,
       prompt_tokens, generated_tokens, context_depth, users, figure, tokens_per_second, stddev, source_url,
       COALESCE(source_title, source_url) AS source_label, retrieved_at, quote, via_title
FROM measurement_full
WHERE status = 'active' AND nature = 'measured' AND ABS(tokens_per_second) <= 1.7976931348623157e308
ORDER BY measurement_id
""")  # a non-finite figure (which no format can show) is never published: tables.FINITE

_MACHINES = text("""
SELECT id, name, vendor, memory_gb, memory_bandwidth_gbs, bandwidth_kind, bandwidth_source_url, bandwidth_quote,
       bandwidth_source_title, bandwidth_via_title, bandwidth_via_url, bandwidth_via_quote
FROM hardware ORDER BY name
""")

_MODELS = text("""
SELECT m.id, m.name, m.params_b, m.active_params_b, m.mixture_of_experts, m.active_params_source_url,
       m.active_params_quote
FROM model m ORDER BY m.name
""")

_FILES = text("""
SELECT mo.name AS model, f.quantization, f.size_bytes / 1000000000.0 AS file_size_gb, f.size_source_url,
       f.size_quote
FROM model_file f JOIN model mo ON mo.id = f.model_id ORDER BY mo.name, f.quantization, f.size_bytes
""")


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unnamed"


@dataclass
class Entity:
    kind: str  # machine or model
    name: str
    page: str
    facts: dict
    figures: list[dict] = field(default_factory=list)


@dataclass
class Entities:
    machines: dict[str, Entity]
    models: dict[str, Entity]

    def href(self, kind: str, name: str | None) -> str | None:
        found = (self.machines if kind == "machine" else self.models).get(name or "")
        return found.page if found else None


def _pages(rows, kind: str) -> dict[str, Entity]:
    taken: set[str] = set()
    out = {}
    for row in rows:
        page = f"{kind}-{slug(row['name'])}.html"
        if page in taken:
            page = f"{kind}-{slug(row['name'])}-{row['id']}.html"
        taken.add(page)
        out[row["name"]] = Entity(kind, row["name"], page, dict(row))
    return out


def collect(conn) -> Entities:
    """Every machine and model with at least one accepted measured figure, with its figures."""
    figures = [dict(r._mapping) for r in conn.execute(_FIGURES)]
    measured_on = {f["hardware"] for f in figures}
    measured_of = {f["model"] for f in figures}
    machines = _pages([r._mapping for r in conn.execute(_MACHINES) if r.name in measured_on], "machine")
    models = _pages([r._mapping for r in conn.execute(_MODELS) if r.name in measured_of], "model")
    files = defaultdict(list)
    for r in conn.execute(_FILES):
        files[r.model].append(dict(r._mapping))
    for name, entity in models.items():
        entity.facts["files"] = files.get(name, [])
    for f in figures:
        f["test"] = _test(f)
        machines[f["hardware"]].figures.append(f)
        models[f["model"]].figures.append(f)
    return Entities(machines, models)


def _test(f: dict) -> str:
    """The test a figure answers, in llama-bench's words: pp512, tg128, at a depth, with N users."""
    parts = []
    if f["prompt_tokens"] and f["phase"] != "generation":
        parts.append(f"pp{f['prompt_tokens']}")
    if f["generated_tokens"] and f["phase"] != "prompt":
        parts.append(f"tg{f['generated_tokens']}")
    parts.append(f["phase"])
    if f["context_depth"]:
        parts.append(f"at depth {f['context_depth']}")
    parts.append(f"{f['users']} user{'s' if f['users'] != 1 else ''} ({f['figure'].replace('_', ' ')})")
    return ", ".join(parts)


def _number(value) -> float:
    """A number to sort by: SQLite lets a column hold a text, which never compares with a number."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _rank_key(f: dict):
    return (str(f["model"]), str(f["quantization"] or ""), _number(f["file_size_gb"]), f["phase"] != "generation",
            _number(f["users"]), _number(f["context_depth"]), _number(f["generated_tokens"]),
            _number(f["prompt_tokens"]), -_number(f["tokens_per_second"]))


def _file(f: dict) -> tuple:
    return (f["model"], f["quantization"], round(f["file_size_gb"] or 0, 2))


def _same_test(f: dict) -> tuple:
    return (*_file(f), f["phase"], f["prompt_tokens"], f["generated_tokens"], f["context_depth"], f["users"],
            f["figure"])


# The rows the calculations look up (a machine, a model, its bandwidth…), kept for the session that renders the pages
# (its info): a site computes some 500 machine, model and format triples, each a few queries without them.
_LOOKUPS = "tpsdb.publish.entities: ceiling lookups"


def _calculations(session: Session, machine: str, model: str, formats: list[str],
                  known: dict[tuple, list[dict]] | None = None) -> list[dict]:
    """The computed maximum of each file of `model` on `machine` (or why not). `known` keeps them across pages:
    a machine's page and its model's page need the same ones, and each is a few queries."""
    known = {} if known is None else known
    out = []
    for quantization in formats:
        key = (machine, model, quantization)
        if key not in known:
            try:
                known[key] = [{"machine": machine, "model": model, "quantization": calc.quantization,
                               "file_size_gb": calc.file_size_gb, "tps": calc.per_user_tps,
                               "bandwidth": calc.bandwidth_gbs, "kind": calc.bandwidth_kind, "why": None}
                              for calc in ceiling_logic.compute(session, machine, model, quantization,
                                                                lookups=session.info.setdefault(_LOOKUPS, {}))]
            except ceiling_logic.CeilingError as error:
                known[key] = [{"machine": machine, "model": model, "quantization": quantization, "why": str(error)}]
        out += known[key]
    return out


def _best_per_machine(found: list[dict]) -> list[dict]:
    best: dict[str, dict] = {}
    for f in found:
        if f["hardware"] not in best or f["tokens_per_second"] > best[f["hardware"]]["tokens_per_second"]:
            best[f["hardware"]] = f
    return sorted(best.values(), key=lambda f: -f["tokens_per_second"])


def by_test(entities: Entities) -> dict[tuple, list[dict]]:
    """Every figure under its file and test (what _comparisons looks up, once for the whole site)."""
    index: dict[tuple, list[dict]] = defaultdict(list)
    for entity in entities.machines.values():
        for f in entity.figures:
            index[_same_test(f)].append(f)
    return index


def _comparisons(entity: Entity, everyone: dict[tuple, list[dict]]) -> list[dict]:
    """For each file and test of this page, the machines measured on the very same one, fastest first: on a
    machine's page the other machines (beside this one's best), on a model's page every machine (when two or more
    are)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    own_best: dict[tuple, dict] = {}  # this machine's fastest figure of each test, found in one pass over them
    if entity.kind == "machine":
        keys = [_same_test(f) for f in entity.figures]
        for key, f in zip(keys, entity.figures):
            if key not in own_best or f["tokens_per_second"] > own_best[key]["tokens_per_second"]:
                own_best[key] = f  # the first of equals, as max() picks
        for key in set(keys):
            others = [f for f in everyone.get(key, ()) if f["hardware"] != entity.name]
            if others:
                groups[key] = others
    else:
        for f in entity.figures:
            groups[_same_test(f)].append(f)
    rows: list[dict[str, Any]] = []
    for key, found in groups.items():
        ranked = _best_per_machine(found)
        if entity.kind == "machine":
            own = own_best[key]
            rows.append({"first": own, "own": own, "others": ranked})
        elif len(ranked) > 1:
            rows.append({"first": ranked[0], "own": None, "others": ranked})
    return sorted(rows, key=lambda r: _rank_key(r["first"]))


_FIGURE_LIST = """{% macro pager(where) %}{% if pages|length > 1 %}<nav class="pages" aria-label="Pages of figures, {{ where }}">{% if number > 1 %}<a href="{{ pages[number - 2] }}#figures" rel="prev">← Previous</a> · {% endif %}page {{ number }} of {{ pages|length }}:{% for p in pages %} {% if loop.index == number %}<strong aria-current="page">{{ loop.index }}</strong>{% else %}<a href="{{ p }}#figures">{{ loop.index }}</a>{% endif %}{% endfor %}{% if number < pages|length %} · <a href="{{ pages[number] }}#figures" rel="next">Next →</a>{% endif %}</nav>{% endif %}{% endmacro %}
<h2 id="figures">Every figure ({{ total }}){% if pages|length > 1 %}: {{ first }}–{{ last }} on this page{% endif %}</h2>
<p class="description">Ranked within each file and test, fastest first.{% if pages|length > 1 %} The {{ total }} figures are on {{ pages|length }} pages of at most {{ per_page }}; this is page {{ number }}, figures {{ first }} to {{ last }}.{% endif %}</p>
{{ pager("above the table") }}
<div class="scroll"><table class="tps">
<thead><tr><th scope="col">#</th><th scope="col">{% if e.kind == "machine" %}Model{% else %}Machine{% endif %}</th><th scope="col">Format (file GB)</th><th scope="col">Test</th><th scope="col" class="measured">tokens/s</th><th scope="col" class="calc" title="memory bandwidth ÷ bytes read per token, for one user">Max. (calc.)</th><th scope="col">Software</th><th scope="col">Source</th></tr></thead>
<tbody>
{{ rows }}</tbody></table></div>
{{ pager("below the table") }}
"""

_SUMMARY = """<h2 id="summary">Summary: {{ total }} figure{% if total != 1 %}s{% endif %} in {{ groups|length }} group{% if groups|length != 1 %}s{% endif %}</h2>
<p class="description">The figures grouped by {% if e.kind == "machine" %}model{% else %}machine{% endif %}, format, software version and test: how many, the best and the median (the lower middle figure, so always one real measurement). Each number links to its figure in <a href="#figures">the full list</a>{% if pages|length > 1 %} ({{ pages|length }} pages of at most {{ per_page }} figures){% endif %}, with its conditions, source, retrieval date and quote; its [n] is its source, listed under the table.</p>
{% if grouped|length > 1 %}<p class="entities">Jump to {% if e.kind == "machine" %}a model{% else %}a machine{% endif %}: {% for other, rows in grouped %}<a href="#group-{{ loop.index }}">{{ other }}</a> ({{ rows|sum(attribute="count") }}){% if not loop.last %} · {% endif %}{% endfor %}</p>{% endif %}
<div class="scroll"><table class="tps summary">
<thead><tr><th scope="col">Format (file GB)</th><th scope="col">Software</th><th scope="col">Test</th><th scope="col">Figures</th><th scope="col" class="measured">Best tokens/s</th><th scope="col" class="measured">Median tokens/s</th></tr></thead>
{% for other, rows in grouped %}<tbody id="group-{{ loop.index }}"><tr><th scope="rowgroup" colspan="6">{% if e.kind == "machine" %}{{ page_link("model", other) }}{% else %}{{ page_link("machine", other) }}{% endif %}</th></tr>
{% for g in rows %}<tr><td>{{ g.best.quantization }} ({{ "%.2f"|format(g.best.file_size_gb or 0) }})</td><td>{{ g.best.software }} {{ g.best.software_version }}</td><td>{{ g.best.test }}</td><td class="num">{{ g.count }}</td><td class="num measured">{{ figure_ref(g.best) }}</td><td class="num measured">{{ figure_ref(g.median) }}</td></tr>
{% endfor %}</tbody>{% endfor %}</table></div>
<p>Sources of the best and median figures:</p>
<ol class="footnotes">{% for s in sources %}<li id="source-{{ loop.index }}">{{ link(s.source_url, s.source_label) }}{% if s.via_title %} (relayed by {{ s.via_title }}){% endif %}</li>{% endfor %}</ol>
"""

_PAGE = """<section class="entity" id="{{ e.kind }}">
<h1>{{ e.name }}</h1>
<p class="description">{% if e.kind == "machine" %}Every accepted figure measured on this machine{% else %}Every accepted figure of this model, on every machine{% endif %}, with its conditions and source, and the computed maximum (<em>calc.</em>: memory bandwidth ÷ bytes read per token, a calculation, never a measurement). The figure's number (#) is its id: <code>tpsdb compare</code> and <code>tpsdb withdraw</code> take it.</p>
<h2>Facts</h2>
<dl class="fixed">
{% if e.kind == "machine" %}
{% if e.facts.vendor %}<dt>Vendor</dt><dd>{{ e.facts.vendor }}</dd>{% endif %}
{% if e.facts.memory_gb %}<dt>Memory</dt><dd>{{ "%g"|format(e.facts.memory_gb) }} GB</dd>{% endif %}
<dt>Memory bandwidth</dt><dd>{% if e.facts.memory_bandwidth_gbs %}{{ "%g"|format(e.facts.memory_bandwidth_gbs) }} GB/s ({{ e.facts.bandwidth_kind or "vendor" }})
{% if e.facts.bandwidth_source_url %}· {{ link(e.facts.bandwidth_source_url, e.facts.bandwidth_source_title or e.facts.bandwidth_source_url) }}{% endif %}
{% if e.facts.bandwidth_quote %}<br>quote: <code class="quote">{{ e.facts.bandwidth_quote }}</code>{% endif %}
{% if e.facts.bandwidth_via_title %}<br>relayed by {{ link(e.facts.bandwidth_via_url, e.facts.bandwidth_via_title) }}{% if e.facts.bandwidth_via_quote %}: <code class="quote">{{ e.facts.bandwidth_via_quote }}</code>{% endif %}{% endif %}
{% else %}unknown: no cited value, so no computed maximum{% endif %}</dd>
{% else %}
<dt>Parameters</dt><dd>{% if e.facts.params_b %}{{ "%g"|format(e.facts.params_b) }} B{% else %}unknown{% endif %}</dd>
{% if e.facts.mixture_of_experts or e.facts.active_params_b %}<dt>Mixture of experts</dt><dd>{% if e.facts.active_params_b %}{{ "%g"|format(e.facts.active_params_b) }} B active per token{% if e.facts.active_params_source_url %} · {{ link(e.facts.active_params_source_url, e.facts.active_params_source_url) }}{% endif %}{% if e.facts.active_params_quote %}<br>quote: <code class="quote">{{ e.facts.active_params_quote }}</code>{% endif %}{% else %}active parameters unknown{% endif %}</dd>{% endif %}
{% for f in e.facts.files %}<dt>{{ f.quantization }} file</dt><dd>{{ "%.2f"|format(f.file_size_gb) }} GB{% if f.size_source_url %} · {{ link(f.size_source_url, f.size_source_url) }}{% endif %}{% if f.size_quote %} (the cited size){% endif %}</dd>
{% endfor %}
{% endif %}
</dl>
{{ summary }}
{% if e.kind == "model" %}<h2>Compared on the same file and test</h2>
{% if comparisons %}<div class="scroll"><table class="tps">
<thead><tr><th scope="col">{% if e.kind == "machine" %}Model, format{% else %}Format{% endif %}</th><th scope="col">Test</th>{% if e.kind == "machine" %}<th scope="col" class="measured">Here (tokens/s)</th>{% endif %}<th scope="col">{% if e.kind == "machine" %}Other machines{% else %}Machines{% endif %}, fastest first (tokens/s)</th></tr></thead>
<tbody>
{% for c in comparisons %}<tr><td>{% if e.kind == "machine" %}{{ page_link("model", c.first.model) }}, {% endif %}{{ c.first.quantization }} ({{ "%.2f"|format(c.first.file_size_gb or 0) }} GB)</td><td>{{ c.first.test }}</td>{% if c.own %}<td class="num">{{ "%g"|format(c.own.tokens_per_second) }}</td>{% endif %}<td>{% for o in c.others %}{% if not loop.first %}; {% endif %}{{ page_link("machine", o.hardware) }} {{ "%g"|format(o.tokens_per_second) }}{% endfor %}</td></tr>
{% endfor %}</tbody></table></div>
{% else %}<p>{% if e.kind == "machine" %}No other machine has a figure on the same file and test yet.{% else %}No two machines have a figure on the same file and test yet.{% endif %}</p>{% endif %}
{% endif %}
<h2>Computed maximum (calc.)</h2>
{% if computed %}<div class="scroll"><table class="tps">
<thead><tr><th scope="col">{% if e.kind == "machine" %}Model{% else %}Machine{% endif %}</th><th scope="col">Format</th><th scope="col">File (GB)</th><th scope="col" class="calc">Max. tokens/s per user (calc.)</th><th scope="col">From</th></tr></thead>
<tbody>
{% for c in computed %}<tr><td>{% if e.kind == "machine" %}{{ page_link("model", c.model) }}{% else %}{{ page_link("machine", c.machine) }}{% endif %}</td><td>{{ c.quantization }}</td><td class="num">{{ "%.2f"|format(c.file_size_gb) }}</td><td class="calc num">{{ "%.2f"|format(c.tps) }}</td><td>{{ "%g"|format(c.bandwidth) }} GB/s ({{ c.kind }}) ÷ bytes read per token</td></tr>
{% endfor %}</tbody></table></div>{% else %}<p>Not computed for any file here.</p>{% endif %}
{% if not_computed %}<details class="notcomputed"><summary>Not computed for {{ not_computed|length }} {% if e.kind == "machine" %}model files{% else %}machines and files{% endif %}, and why</summary>
<ul>{% for c in not_computed %}<li>{% if e.kind == "machine" %}{{ c.model }}{% else %}{{ c.machine }}{% endif %} {{ c.quantization }}: {{ c.why }}</li>{% endfor %}</ul></details>{% endif %}
{% if e.kind == "machine" %}<h2>Compared on the same file and test</h2>
{% if comparisons %}<div class="scroll"><table class="tps">
<thead><tr><th scope="col">{% if e.kind == "machine" %}Model, format{% else %}Format{% endif %}</th><th scope="col">Test</th>{% if e.kind == "machine" %}<th scope="col" class="measured">Here (tokens/s)</th>{% endif %}<th scope="col">{% if e.kind == "machine" %}Other machines{% else %}Machines{% endif %}, fastest first (tokens/s)</th></tr></thead>
<tbody>
{% for c in comparisons %}<tr><td>{% if e.kind == "machine" %}{{ page_link("model", c.first.model) }}, {% endif %}{{ c.first.quantization }} ({{ "%.2f"|format(c.first.file_size_gb or 0) }} GB)</td><td>{{ c.first.test }}</td>{% if c.own %}<td class="num">{{ "%g"|format(c.own.tokens_per_second) }}</td>{% endif %}<td>{% for o in c.others %}{% if not loop.first %}; {% endif %}{{ page_link("machine", o.hardware) }} {{ "%g"|format(o.tokens_per_second) }}{% endfor %}</td></tr>
{% endfor %}</tbody></table></div>
{% else %}<p>{% if e.kind == "machine" %}No other machine has a figure on the same file and test yet.{% else %}No two machines have a figure on the same file and test yet.{% endif %}</p>{% endif %}
{% endif %}
{{ figure_list }}
<p class="downloads"><a href="index.html">All tables</a> · <a href="figures.html">all figures</a> · <a href="machines-and-models.html">every machine and model</a></p>
</section>
"""

_MORE = """<section class="entity" id="{{ e.kind }}">
<h1>{{ e.name }}: figures {{ first }} to {{ last }} of {{ total }}</h1>
<p class="description">Page {{ number }} of {{ pages|length }} of every accepted figure {% if e.kind == "machine" %}measured on this machine{% else %}of this model, on every machine{% endif %}, with its conditions, source and quote. <a href="{{ e.page }}">{{ e.name }}</a>'s first page has the facts, the summary of every figure, the computed maximum and the comparisons.</p>
{{ figure_list }}
<p class="downloads"><a href="index.html">All tables</a> · <a href="figures.html">all figures</a> · <a href="machines-and-models.html">every machine and model</a></p>
</section>
"""

_LIST = """<section class="entities">
<h1>Machines and models</h1>
<p class="description">A page for every machine and every model with an accepted figure: its figures with their conditions and sources, the computed maximum (calc.) and what it can be compared with.</p>
<h2>Machines ({{ machines|length }})</h2>
<ul class="entities">{% for e in machines %}<li><a href="{{ e.page }}">{{ e.name }}</a> · {{ e.figures|length }} figures{% set n = pages_of(e) %}{% if n > 1 %} on {{ n }} pages{% endif %}</li>{% endfor %}</ul>
<h2>Models ({{ models|length }})</h2>
<ul class="entities">{% for e in models %}<li><a href="{{ e.page }}">{{ e.name }}</a> · {{ e.figures|length }} figures{% set n = pages_of(e) %}{% if n > 1 %} on {{ n }} pages{% endif %}</li>{% endfor %}</ul>
</section>
"""

def as_text(value) -> Markup:
    """Text escaped for an element's content (never an attribute): only & and < can start markup there, so a
    quote's many " stay one byte instead of autoescape's five (&#34;): a JSON quote is 800 characters."""
    return Markup(str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


_env = Environment(autoescape=True)
_env.filters["as_text"] = as_text
_page = _env.from_string(_PAGE)
_more = _env.from_string(_MORE)
_figure_list = _env.from_string(_FIGURE_LIST)
_summary = _env.from_string(_SUMMARY)
_list = _env.from_string(_LIST)
LIST_PAGE = "machines-and-models.html"
# A page holds at most this many figures (about 1 MB at the seed's longest quotes): the AMD Radeon 8060S's 14,790
# figures made one page of 27 MB, which a browser chokes on. The rest are on numbered pages after the first.
FIGURES_PER_PAGE = 500


def figure_pages(entity: Entity, per_page: int = FIGURES_PER_PAGE) -> list[str]:
    """The files an entity's figures are listed on: its page (the path it always had), then `STEM.page-N.html`.
    A slug holds only [a-z0-9-], so no machine or model page can be named like another's numbered page."""
    if per_page < 1:
        raise ValueError(f"figures per page: {per_page} is not a positive number")
    count = max(1, -(-len(entity.figures) // per_page))
    stem = entity.page.removesuffix(".html")
    return [entity.page] + [f"{stem}.page-{n}.html" for n in range(2, count + 1)]


def _link(url, label) -> Markup:
    """A link to an http(s) address, else the label as text. Built with escape() in an f-string (each part escaped,
    then joined as plain text), not Markup.format: a big site makes a hundred thousand, and format is slow."""
    if is_web_url(url):
        return Markup(f'<a href="{escape(url)}">{escape(label or url)}</a>')
    return escape(label or url or "")


class FigureRows:
    """The rows of the figure lists, each figure's made once: every figure is listed on its machine's pages and on
    its model's, and the two rows differ only in the cell naming the other one (its source cell, with a quote of up
    to 800 characters, is the same). The markup is what a Jinja template with autoescape gave, byte for byte."""

    def __init__(self) -> None:
        self._parts: dict[int, tuple[str, str, str]] = {}

    def parts(self, f: dict) -> tuple[str, str, str]:
        """The row before the cell naming the machine or model, between it and the computed maximum's, and after.
        Kept until asked for the second time (its other page), then let go: the site's rows are tens of MB."""
        found = self._parts.pop(f["measurement_id"], None)
        if found is None:
            found = self._parts[f["measurement_id"]] = self._render(f)
        return found

    @staticmethod
    def _render(f: dict) -> tuple[str, str, str]:
        number = escape(f["measurement_id"])
        head = f'<tr id="figure-{number}"><td class="num">{number}</td><td>'
        spread = f' ± {escape("%g" % f["stddev"])}' if f["stddev"] else ""
        middle = (f'</td><td>{escape(f["quantization"])} ({escape("%.2f" % (f["file_size_gb"] or 0))})</td>'
                  f'<td>{escape(f["test"])}</td>'
                  f'<td class="num measured">{escape("%g" % f["tokens_per_second"])}{spread}</td>')
        quote = f["quote"]
        if len(quote) > 160:
            quoted = (f'<details><summary>quote ({len(quote)} characters)</summary>'
                      f'<code class="quote">{as_text(quote)}</code></details>')
        else:
            quoted = f'<br><code class="quote">{as_text(quote)}</code>'
        via = f' (relayed by {escape(f["via_title"])})' if f["via_title"] else ""
        tail = (f'<td>{escape(f["software"])} {escape(f["software_version"])}</td>'
                f'<td class="source">{_link(f["source_url"], f["source_label"])}{via}'
                f' · retrieved {escape(f["retrieved_at"])}{quoted}</td></tr>\n')
        return head, middle, tail

    def render(self, figures: list[dict], kind: str, page_link, ceiling_of) -> Markup:
        """The rows of `figures` on a `kind` (machine or model) page."""
        out = []
        for f in figures:
            head, middle, tail = self.parts(f)
            other = page_link("model", f["model"]) if kind == "machine" else page_link("machine", f["hardware"])
            m = ceiling_of(f)
            cell = ('<td class="calc num empty"></td>' if m is None
                    else f'<td class="calc num">{escape("%.2f" % m)}</td>')
            out.append(f"{head}{other}{middle}{cell}{tail}")
        return Markup("".join(out))


def _groups(entity: Entity) -> list[dict]:
    """The summary: the entity's figures grouped by the other entity (model or machine), file, software version
    and test, each with its count, best figure and median (the lower middle one, as the tables' `median` pick, so
    it is always one real measurement)."""
    found: dict[tuple, list[dict]] = defaultdict(list)
    for f in entity.figures:
        other = f["model"] if entity.kind == "machine" else f["hardware"]
        found[(other, *_same_test(f), f["software"], f["software_version"])].append(f)
    groups = []
    for figures in found.values():
        ranked = sorted(figures, key=lambda f: (_number(f["tokens_per_second"]), f["measurement_id"]))
        best = ranked[-1]
        groups.append({"other": best["model"] if entity.kind == "machine" else best["hardware"], "count": len(ranked),
                       "best": best, "median": ranked[(len(ranked) - 1) // 2]})

    def order(g: dict) -> tuple:
        f = g["best"]
        return (str(g["other"]), _rank_key(f)[1:-1], str(f["software"] or ""), str(f["software_version"] or ""))
    return sorted(groups, key=order)


def render_entity_pages(session: Session, entity: Entity, entities: Entities, everyone: dict[tuple, list[dict]],
                        per_page: int = FIGURES_PER_PAGE,
                        known: dict[tuple, list[dict]] | None = None,
                        rows: FigureRows | None = None) -> list[tuple[str, str]]:
    """The entity's pages as (file name, HTML section): the first (facts, summary, computed maximum, comparisons
    and the first `per_page` figures), then one per further `per_page` figures, each with links to all the others.
    Every figure is on exactly one of them, with its source and quote. `rows` keeps the figures' rows across
    entities (a figure is on its machine's pages and its model's)."""
    rows = FigureRows() if rows is None else rows
    links: dict[tuple[str, str], Markup] = {}

    def page_link(kind: str, name: str) -> Markup:
        if (kind, name) not in links:
            href = entities.href(kind, name)
            links[(kind, name)] = Markup(f'<a href="{escape(href)}">{escape(name)}</a>') if href else escape(name)
        return links[(kind, name)]

    if entity.kind == "machine":
        pairs = sorted({(f["model"], f["quantization"]) for f in entity.figures})
        calcs = [c for model in sorted({m for m, _ in pairs})
                 for c in _calculations(session, entity.name, model, sorted({q for m, q in pairs if m == model}),
                                        known)]
    else:
        pairs = sorted({(f["hardware"], f["quantization"]) for f in entity.figures})
        calcs = [c for machine in sorted({h for h, _ in pairs})
                 for c in _calculations(session, machine, entity.name, sorted({q for h, q in pairs if h == machine}),
                                        known)]
    maxima = {(c["machine"], c["model"], c["quantization"], round(c["file_size_gb"], 2)): c["tps"]
              for c in calcs if not c["why"]}

    def ceiling_of(f: dict) -> float | None:
        """A one-user generation figure's computed maximum (the aggregate of many users has its own, N times)."""
        if f["phase"] != "generation" or (f["users"] != 1 and f["figure"] != "per_user"):
            return None
        return maxima.get((f["hardware"], f["model"], f["quantization"], round(f["file_size_gb"] or 0, 2)))

    pages = figure_pages(entity, per_page)
    ranked = sorted(entity.figures, key=_rank_key)
    chunks = [ranked[i * per_page:(i + 1) * per_page] for i in range(len(pages))]
    where = {f["measurement_id"]: name for name, chunk in zip(pages, chunks) for f in chunk}

    groups = _groups(entity)
    sources: dict[str | None, int] = {}  # a footnote per source, numbered in the order the summary cites them
    cited: list[dict] = []
    for g in groups:
        for f in (g["best"], g["median"]):
            if f["source_url"] not in sources:
                sources[f["source_url"]] = len(sources) + 1
                cited.append(f)

    def figure_ref(f: dict):
        """A figure's number linking to its row (on whichever page holds it), and its source's footnote."""
        n = sources[f["source_url"]]
        return Markup(f'<a href="{escape(where[f["measurement_id"]])}#figure-{int(f["measurement_id"])}">'
                      f'{f["tokens_per_second"]:g}</a><sup class="fn"><a href="#source-{n}">[{n}]</a></sup>')

    common = {"e": entity, "link": _link, "page_link": page_link, "total": len(ranked), "pages": pages,
              "per_page": per_page}
    out = []
    for number, (name, chunk) in enumerate(zip(pages, chunks), start=1):
        first = (number - 1) * per_page + 1
        listed = Markup(_figure_list.render(**common, rows=rows.render(chunk, entity.kind, page_link, ceiling_of),
                                            number=number, first=first, last=first + len(chunk) - 1))
        if number == 1:
            grouped: dict[str, list[dict]] = defaultdict(list)  # already in order: a table body per model or machine
            for g in groups:
                grouped[g["other"]].append(g)
            summary = Markup(_summary.render(**common, groups=groups, grouped=list(grouped.items()), sources=cited,
                                             figure_ref=figure_ref))
            out.append((name, _page.render(**common, summary=summary, figure_list=listed,
                                           computed=[c for c in calcs if not c["why"]],
                                           not_computed=[c for c in calcs if c["why"]],
                                           comparisons=_comparisons(entity, everyone))))
        else:
            out.append((name, _more.render(**common, figure_list=listed, number=number, first=first,
                                           last=first + len(chunk) - 1)))
    return out


def render_list(entities: Entities, per_page: int = FIGURES_PER_PAGE) -> str:
    return _list.render(machines=list(entities.machines.values()), models=list(entities.models.values()),
                        pages_of=lambda e: len(figure_pages(e, per_page)))


def linked(table: Table, entities: Entities) -> Table:
    """A copy of a built table whose cells naming a machine or a model link to its page (HTML only)."""
    kinds = {"hardware": "machine", "model": "model"}
    rows = []
    for row in table.rows:
        new = dict(row)
        for key, kind in kinds.items():
            cell = row.get(key)
            if cell is not None and not cell.href and (href := entities.href(kind, cell.text)):
                new[key] = replace(cell, href=href)
        rows.append(new)
    return replace(table, rows=rows)
