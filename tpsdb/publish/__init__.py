"""Published tables, charts and the static site, built from the `measurement_full` view.

- definitions.py: the table definitions (tables/*.toml), one per published table, and the registry of kinds;
- tables.py: what every kind shares (the result types, formats, SQL on the view, pick rules, footnotes, what is held
  fixed) and `build_table`;
- kinds/: one module per table kind (machines and ceiling, quantization, versions, software, concurrency, sources,
  spread, conformance), each with its builder and layout, found by discovery;
- render.py: Markdown, HTML, CSV and JSON;
- charts.py: matplotlib charts as inline SVG;
- site.py: the static site (`tpsdb publish`);
- ceiling.py: the computed maximum of one model file on one machine (`tpsdb ceiling`).
"""

from . import kinds  # noqa: F401  (registers every table kind before a definition is loaded)
from .definitions import Definition, DefinitionError, load_definitions
from .tables import Table, build_table, build_tables

__all__ = ["Definition", "DefinitionError", "Table", "build_table", "build_tables", "load_definitions"]
