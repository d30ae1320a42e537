"""Tables 1 and 2: one model file, one test, many machines (`machines`), and the same with the computed
maximum and the share of it reached (`ceiling`)."""

from __future__ import annotations

from collections import Counter
from typing import Mapping

from sqlalchemy import Connection

from ...ceiling import ModelFacts, active_share, ceiling_of, choose_bandwidth
from ..definitions import Definition, Layout, TableKind
from ..tables import (
    Column,
    Footnotes,
    Table,
    bandwidth_cell,
    calc_cell,
    common_notes,
    finish,
    fmt_calc,
    fmt_number,
    fmt_percent,
    fmt_software,
    hardware_facts,
    held_fixed,
    listing,
    measured_cell,
    pick_figures,
    read_model_files,
    text_cell,
)


def _file_ceiling(machine: Mapping | None, model_file: Mapping | None):
    """tpsdb.ceiling's maximum for one user generating on this file on this machine (no figure of its own)."""
    bandwidth = choose_bandwidth(machine["memory_bandwidth_gbs"] if machine else None,
                                 machine["bandwidth_kind"] if machine else None, None)
    if model_file is None:
        return ceiling_of(bandwidth, None, active_share(None, None, None, None))
    facts = ModelFacts(model_file["params_b"], model_file["active_params_b"], model_file["mixture_of_experts"])
    share = active_share(model_file["model"], None, None, facts)
    return ceiling_of(bandwidth, model_file["size_bytes"] / 1e9, share)


def build_machines(conn: Connection, d: Definition) -> Table:
    """One model file, one test: one row per machine with its memory bandwidth and the figure picked for it.

    The ceiling kind adds the computed maximum (bandwidth ÷ bytes read per token) and the share of it reached.
    """
    ceiling = d.kind == "ceiling"
    picked = {r["hardware"]: r for r in pick_figures(conn, d, ["hardware"])}
    notes = Footnotes()
    if d.rows:
        names = list(d.rows)
    else:
        names = sorted(picked, key=lambda h: (-picked[h]["tokens_per_second"], h))
    facts = hardware_facts(conn, [n for n in names if n not in picked])
    model_files = read_model_files(conn, d.fixed["model"], d.fixed["quantization"])
    files = [r for r in model_files if r["size_bytes"]]
    only_file = files[0] if len(files) == 1 else None

    columns = [Column("hardware", "Hardware"),
               Column("bandwidth_gbs", "Memory bandwidth (GB/s)", "reference",
                      "vendor (the maker's page), relayed (the maker's value as a publication gives it) or stated "
                      "(by a source that is not the maker): each machine's footnote says which and cites it"),
               Column("tokens_per_second", "Measured tokens/s", "measured")]
    if ceiling:
        columns += [Column("ceiling_tps", "Max. tokens/s (calc.)", "calc",
                           "memory bandwidth ÷ bytes read per token (file size × active share)"),
                    Column("share", "Share of max. reached (calc.)", "calc", "measured ÷ max.")]
    columns += [Column("software", "Software"), Column("figures", "Qualifying figures")]

    rows, points, reads = [], [], Counter()
    for name in names:
        r = picked.get(name)
        if r is not None:  # the view's ceiling columns: tpsdb.ceiling's rule on the figure's stored facts
            bandwidth, cited = r["memory_bandwidth_gbs"], r
            size, share, max_tps = r["file_size_gb"], r["read_share"], r["calc_ceiling_tps"]
        else:  # a machine without a figure: the same rule on the machine's and the file's facts
            fact = facts.get(name)
            cited = fact
            size = only_file["size_bytes"] / 1e9 if only_file else None
            computed = _file_ceiling(fact, only_file)
            bandwidth = computed.bandwidth.gbs if computed.bandwidth else None
            share, max_tps = computed.share.stored, computed.value
        if d.require_bandwidth and bandwidth is None:
            continue
        row = {"hardware": text_cell(name, hint=None if (r or name in facts) else "not in the database"),
               "bandwidth_gbs": bandwidth_cell(notes, name, bandwidth, cited),
               "tokens_per_second": measured_cell(notes, r)}
        if ceiling:
            formula = (f"{fmt_number(bandwidth)} GB/s ÷ {fmt_number(size)} GB" if share == 1.0 else
                       f"{fmt_number(bandwidth)} GB/s ÷ ({fmt_number(size)} GB × {share:.4f} active share)"
                       if share is not None else "the active share of this mixture of experts is unknown")
            row["ceiling_tps"] = calc_cell(max_tps, fmt_calc, f"{formula} = {fmt_calc(max_tps)} tokens/s")
            reached = r["tokens_per_second"] / max_tps if (r is not None and max_tps) else None
            row["share"] = calc_cell(reached, fmt_percent,
                                 f"{fmt_number(r['tokens_per_second']) if r else ''} ÷ {fmt_calc(max_tps)}")
            if size and share is not None:
                reads[round(size * share, 4)] += 1
        row["software"] = text_cell(fmt_software(r) if r else None)
        row["figures"] = text_cell(r["n_qualifying"] if r else 0)
        rows.append(row)
        if r is not None and bandwidth:
            points.append({"label": name, "bandwidth_gbs": bandwidth, "tokens_per_second": r["tokens_per_second"],
                           "bandwidth_kind": r["bandwidth_kind"] or "vendor"})
            if not ceiling and size and share is not None:
                reads[round(size * share, 4)] += 1

    table_notes = common_notes(d, calc=ceiling)
    if ceiling:
        table_notes.append("Max. (calc.) = memory bandwidth ÷ bytes read per token. A dense model reads its whole "
                           "file per token; a mixture-of-experts model about its active share (active ÷ total "
                           "parameters) of it. It is a ceiling never reached, not a prediction.")
    table_notes.append("Memory bandwidths are of three kinds, each cited in its machine's own footnote: vendor (the "
                       "maker's page), relayed (the maker's value as a publication gives it, marked \"relayed\") and "
                       "stated (by a source that is not the maker, such as a thread's table, marked \"stated\"). A "
                       "maker's value is preferred, then a relayed one, then a stated one.")
    if d.require_bandwidth:
        table_notes.append("Machines whose memory bandwidth has no cited source are left out (require_bandwidth).")
    read_gb = reads.most_common(1)[0][0] if reads else None
    chart = {"type": "bandwidth", "points": points, "read_gb": read_gb,
             "title": f"{listing(d.fixed['model'])} {listing(d.fixed['quantization'])}: measured vs memory bandwidth"}
    varies = {"hardware": "one machine per row"}
    return finish(conn, d, columns, rows, held_fixed(conn, d, varies, model_files), table_notes, notes, chart)


KINDS = (
    TableKind("machines", 1, build_machines, Layout(
        required=("model", "quantization"), forbidden=("hardware",),
        keys=frozenset({"rows", "require_bandwidth"}))),
    TableKind("ceiling", 2, build_machines, Layout(
        required=("model", "quantization"), forbidden=("hardware",),
        keys=frozenset({"rows", "require_bandwidth"}))),
)
