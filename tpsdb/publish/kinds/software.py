"""Table 5 (`software`): one model on one machine across programs, one row per program."""

from __future__ import annotations

from sqlalchemy import Connection

from ..definitions import Definition, Layout, TableKind
from ..tables import (
    Column,
    Footnotes,
    Table,
    common_notes,
    finish,
    fmt_lengths,
    fmt_options,
    held_fixed,
    measured_cell,
    pick_figures,
    text_cell,
)


def build_software(conn: Connection, d: Definition) -> Table:
    """One model on one machine across programs (llama.cpp, Ollama, vLLM, SGLang, MLX…): one row per program."""
    partition = ["software"] + ([] if "quantization" in d.fixed else ["quantization"])
    extra = {"software": tuple(d.rows)} if d.rows else None
    picked = pick_figures(conn, d, partition, extra=extra)
    if d.rows:
        position = {s: i for i, s in enumerate(d.rows)}
        picked.sort(key=lambda r: (position[r["software"]], -r["tokens_per_second"]))
        present = {r["software"] for r in picked}
        entries = [(r["software"], r) for r in picked] + [(s, None) for s in d.rows if s not in present]
        entries.sort(key=lambda e: position[e[0]])
    else:
        entries = [(r["software"], r) for r in sorted(picked, key=lambda r: (-r["tokens_per_second"], r["software"]))]
    notes = Footnotes()
    columns = [Column("software", "Software"), Column("version", "Version"), Column("options", "Options")]
    if "quantization" not in d.fixed:
        columns.append(Column("quantization", "Quantization"))
    columns += [Column("lengths", "Lengths"), Column("tokens_per_second", "Measured tokens/s", "measured"),
                Column("figures", "Qualifying figures")]
    rows = []
    for name, r in entries:
        row = {"software": text_cell(name), "version": text_cell(r["software_version"] if r else None),
               "options": text_cell(fmt_options(r["software_options"]) if r else None)}
        if "quantization" not in d.fixed:
            row["quantization"] = text_cell(r["quantization"] if r else None)
        row["lengths"] = text_cell(fmt_lengths(r) if r else None)
        row["tokens_per_second"] = measured_cell(notes, r)
        row["figures"] = text_cell(r["n_qualifying"] if r else 0)
        rows.append(row)
    varies = {"software": "one program per row (its version as picked)"}
    return finish(conn, d, columns, rows, held_fixed(conn, d, varies), common_notes(d, calc=False), notes)


KINDS = (
    TableKind("software", 5, build_software, Layout(
        required=("hardware", "model"), forbidden=("software", "software_version"),
        keys=frozenset({"rows"}))),
)
