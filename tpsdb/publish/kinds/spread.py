"""Table 8 (`spread`): every qualifying figure for one model on one machine, highest first, with what differs
from the top one."""

from __future__ import annotations

import json
from typing import Mapping

from sqlalchemy import Connection

from ..definitions import Definition, Layout, TableKind
from ..tables import (
    CALC_NOTE,
    Column,
    Footnotes,
    Table,
    calc_cell,
    finish,
    fmt_concurrency,
    fmt_lengths,
    fmt_number,
    fmt_percent,
    fmt_software,
    held_fixed,
    measured_cell,
    ranked_figures,
    source_label,
    text_cell,
)


def _options(options_json: str | None) -> dict:
    try:
        options = json.loads(options_json or "{}")
    except json.JSONDecodeError:
        return {"options": options_json}
    return options if isinstance(options, dict) else {"options": options}


def options_differing(r: Mapping, top: Mapping) -> str:
    """The options of `r` that differ from those of `top` ("ngl=-1, threads=20"; "fa unset" when `r` lacks one)."""
    mine, theirs = _options(r["software_options"]), _options(top["software_options"])
    return ", ".join(f"{k}={mine[k]}" if k in mine else f"{k} unset"
                     for k in sorted(set(mine) | set(theirs)) if mine.get(k, object()) != theirs.get(k, object()))


_DIMENSIONS = (
    ("software", fmt_software),
    ("quantization", lambda r: r["quantization"]),
    ("lengths", fmt_lengths),
    ("concurrency", fmt_concurrency),
)


def build_spread(conn: Connection, d: Definition) -> Table:
    """Every qualifying figure for one model on one machine, highest first, with what differs from the top one. A
    figure several sources publish is one row citing each of them."""
    ranked, total = ranked_figures(conn, d)
    notes = Footnotes()
    columns = [Column("rank", "Rank"), Column("tokens_per_second", "Measured tokens/s", "measured"),
               Column("vs_top", "Share of #1 (calc.)", "calc", "this figure ÷ the highest"),
               Column("differs", "Differs from #1"),
               Column("software", "Software"), Column("quantization", "Quantization"), Column("lengths", "Lengths"),
               Column("concurrency", "Concurrency"), Column("source", "Source")]
    rows = []
    top = ranked[0][0] if ranked else None

    def conditions(copies):  # what a figure says, its sources being every copy's
        return {**{name: fn(copies[0]) for name, fn in _DIMENSIONS},
                "source": "; ".join(dict.fromkeys(source_label(c["source_title"], c["source_home_url"])
                                                  for c in copies))}

    top_says = conditions(ranked[0]) if ranked else {}
    for rank, copies in enumerate(ranked, 1):
        r = copies[0]
        says = conditions(copies)
        differs = [f"{name}: {text}" for name, text in says.items() if text != top_says[name]]
        if options := options_differing(r, top):
            differs.insert(1 if says["software"] != top_says["software"] else 0, f"options: {options}")
        cell = measured_cell(notes, r)
        cell.also = tuple(dict.fromkeys(n for n in (notes.measurement(c) for c in copies[1:]) if n != cell.footnote))
        rows.append({
            "rank": text_cell(rank),
            "tokens_per_second": cell,
            "vs_top": calc_cell(r["tokens_per_second"] / top["tokens_per_second"], fmt_percent,
                            f"{fmt_number(r['tokens_per_second'])} ÷ {fmt_number(top['tokens_per_second'])}"),
            "differs": text_cell("(the highest figure)" if rank == 1 else
                             ("; ".join(differs) or "nothing recorded: same conditions, another run")),
            "software": text_cell(fmt_software(r)),
            "quantization": text_cell(r["quantization"]),
            "lengths": text_cell(fmt_lengths(r)),
            "concurrency": text_cell(fmt_concurrency(r)),
            "source": text_cell(says["source"], href=r["source_home_url"], hint=" · ".join(
                dict.fromkeys(c["source_home_url"] for c in copies))),
        })
    table_notes = ["Every qualifying figure, highest first; no pick rule applies. \"Differs from #1\" lists the "
                   "recorded conditions in which a figure differs from the highest one. A figure published by several "
                   "sources (same conditions, same value) is one row citing each source.", CALC_NOTE]
    if total > len(rows):
        table_notes.append(f"Showing the {len(rows)} highest of {total} figures (limit = {d.limit}).")
    return finish(conn, d, columns, rows, held_fixed(conn, d, {}), table_notes, notes,
                   total=total if total > len(rows) else None)


KINDS = (
    TableKind("spread", 8, build_spread, Layout(
        required=("hardware", "model"), forbidden=(),
        keys=frozenset({"limit"}))),
)
