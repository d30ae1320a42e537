"""Table 7 (`sources`): every source that measured one machine, with one example figure each."""

from __future__ import annotations

from sqlalchemy import Connection

from ..definitions import TIES_TEXT, Definition, Layout, TableKind
from ..tables import (
    Column,
    Footnotes,
    Table,
    finish,
    fmt_concurrency,
    fmt_lengths,
    fmt_software,
    held_fixed,
    listing,
    measured_cell,
    pick_figures,
    source_label,
    text_cell,
)


def build_sources(conn: Connection, d: Definition) -> Table:
    """Every source that measured one machine (within the fixed conditions), with one example figure each."""
    picked = pick_figures(conn, d, ["source_home_url"])
    picked.sort(key=lambda r: (-r["n_qualifying"], r["source_home_url"]))
    total = len(picked)
    if d.limit:
        picked = picked[: d.limit]
    notes = Footnotes()
    columns = [Column("source", "Source"), Column("figures", "Figures"),
               Column("example", "Example tokens/s", "measured"), Column("model", "Model"),
               Column("quantization", "Quantization"), Column("software", "Software"), Column("lengths", "Lengths"),
               Column("concurrency", "Concurrency")]
    rows = []
    for r in picked:
        rows.append({
            "source": text_cell(source_label(r["source_title"], r["source_home_url"]), href=r["source_home_url"],
                            hint=r["source_home_url"]),
            "figures": text_cell(r["n_qualifying"]),
            "example": measured_cell(notes, r),
            "model": text_cell(r["model"]),
            "quantization": text_cell(r["quantization"]),
            "software": text_cell(fmt_software(r)),
            "lengths": text_cell(fmt_lengths(r)),
            "concurrency": text_cell(fmt_concurrency(r)),
        })
    varies = {"model": listing(d.fixed["model"]) if "model" in d.fixed else "varies (shown per row)"}
    table_notes = [f"One row per source; the example is {d.pick_text} among that source's qualifying figures "
                   f"(pick = \"{d.pick}\"). {TIES_TEXT} \"Figures\" counts them."]
    if d.pick_reason:
        table_notes[0] += f" Why: {d.pick_reason}"
    if total > len(rows):
        table_notes.append(f"Showing the {len(rows)} sources with the most figures, of {total}.")
    return finish(conn, d, columns, rows, held_fixed(conn, d, varies), table_notes, notes,
                   total=total if total > len(rows) else None)


KINDS = (
    TableKind("sources", 7, build_sources, Layout(
        required=("hardware",), forbidden=(),
        keys=frozenset({"limit"}))),
)
