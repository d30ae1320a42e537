"""Published tables, charts and the static site, built from the `measurement_full` view.

- definitions.py: the table definitions (tables/*.toml), one per published table;
- tables.py: one builder per table kind (SQL on the view; pick rules; calc. columns; footnotes);
- render.py: Markdown, HTML, CSV and JSON;
- charts.py: matplotlib charts as inline SVG;
- site.py: the static site (`tpsdb publish`);
- ceiling.py: the computed maximum of one model file on one machine (`tpsdb ceiling`).
"""

from .definitions import Definition, DefinitionError, load_definitions
from .tables import Table, build_table, build_tables

__all__ = ["Definition", "DefinitionError", "Table", "build_table", "build_tables", "load_definitions"]
