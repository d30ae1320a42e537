"""Table 3 (`quantization`): formats side by side on each machine, with speed-ups and size ratios (calc.)."""

from __future__ import annotations

from typing import Mapping

from sqlalchemy import Connection

from ..definitions import Definition, Layout, TableKind
from ..tables import (
    Column,
    Footnotes,
    Table,
    calc_cell,
    common_notes,
    finish,
    fmt_number,
    fmt_ratio,
    fmt_software,
    held_fixed,
    listing,
    measured_cell,
    pick_figures,
    text_cell,
)


def build_quantization(conn: Connection, d: Definition) -> Table:
    """Formats side by side: one row per machine, one measured column per format, speed-ups and size ratios (calc.)."""
    formats, base = list(d.columns), d.baseline
    picked = pick_figures(conn, d, ["hardware", "quantization"], extra={"quantization": tuple(formats)})
    cells: dict[str, dict[str, Mapping]] = {}
    for r in picked:
        cells.setdefault(r["hardware"], {})[r["quantization"]] = r
    if d.rows:
        names = list(d.rows)
    else:
        def order(h: str):
            b = cells[h].get(base)
            return (b is None, -(b["tokens_per_second"] if b else 0), h)
        names = sorted(cells, key=order)
    others = [q for q in formats if q != base]
    notes = Footnotes()
    columns = [Column("hardware", "Hardware")]
    columns += [Column(f"tps_{q}", f"{q} tokens/s", "measured") for q in formats]
    columns += [Column(f"speedup_{q}", f"{q} speed ÷ {base} (calc.)", "calc", f"measured {q} ÷ measured {base}")
                for q in others]
    columns += [Column(f"size_{q}", f"{base} size ÷ {q} size (calc.)", "calc", "file sizes of the measured files")
                for q in others]
    columns.append(Column("software", "Software"))
    rows, chart_rows = [], []
    ideal: dict[str, float] = {}  # the file-size ratio the chart marks (the files are held fixed: one per format)
    for name in names:
        by_q = cells.get(name, {})
        row = {"hardware": text_cell(name)}
        for q in formats:
            row[f"tps_{q}"] = measured_cell(notes, by_q.get(q))
        b = by_q.get(base)
        speedups = {}
        for q in others:
            o = by_q.get(q)
            value = o["tokens_per_second"] / b["tokens_per_second"] if (o and b) else None
            speedups[q] = value
            row[f"speedup_{q}"] = calc_cell(value, fmt_ratio, f"{fmt_number(o['tokens_per_second']) if o else ''} ÷ "
                                                          f"{fmt_number(b['tokens_per_second']) if b else ''}")
        for q in others:
            o = by_q.get(q)
            value = b["file_size_gb"] / o["file_size_gb"] if (o and b and o["file_size_gb"]) else None
            if value is not None:
                ideal.setdefault(q, value)
            row[f"size_{q}"] = calc_cell(value, fmt_ratio, f"{fmt_number(b['file_size_gb']) if b else ''} GB ÷ "
                                                       f"{fmt_number(o['file_size_gb']) if o else ''} GB")
        row["software"] = text_cell(", ".join(dict.fromkeys(fmt_software(r) for r in by_q.values())) or None)
        rows.append(row)
        if any(v is not None for v in speedups.values()):
            chart_rows.append({"label": name, "speedups": speedups})
    varies = {"quantization": f"one format per column: {', '.join(formats)} (ratios relative to {base})",
              "hardware": listing(d.fixed["hardware"]) if "hardware" in d.fixed else "one machine per row"}
    table_notes = common_notes(d)
    table_notes.append("Each cell is picked on its own; when the software version is not held fixed, the footnotes "
                       "say which version each figure comes from.")
    chart = {"type": "speedup", "rows": chart_rows, "formats": others, "baseline": base, "ideal": ideal,
             "title": f"{listing(d.fixed['model'])}: generation speed-up over {base} (calc.)"}
    return finish(conn, d, columns, rows, held_fixed(conn, d, varies), table_notes, notes, chart)


KINDS = (
    TableKind("quantization", 3, build_quantization, Layout(
        required=("model",), forbidden=("quantization",),
        keys=frozenset({"rows", "columns", "baseline"}), default_columns=("F16", "Q8_0", "Q4_0"), baseline=True)),
)
