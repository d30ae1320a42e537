"""Compatibility: the tool-output readers that were here are modules of tpsdb.collect.tools now, one per shape.

Kept only for the names other modules still import from here (tpsdb.collect.benchfiles takes `quant_in_name`);
new code imports from tpsdb.collect.tools.
"""

from __future__ import annotations

from tpsdb.collect.tools import quant_in_name, tool_figures

__all__ = ["quant_in_name", "tool_figures"]
