"""Table 6 (`concurrency`): one user, then N: per-user and aggregate figures, the per-user share and the gain."""

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
    fmt_calc,
    fmt_number,
    fmt_ratio,
    fmt_software,
    held_fixed,
    listing,
    measured_cell,
    pick_figures,
    text_cell,
)


def build_concurrency(conn: Connection, d: Definition) -> Table:
    """One user, then N: per-user and aggregate figures as measured, the per-user share and the gain (calc.)."""
    extra = {"users": tuple(d.rows)} if d.rows else None
    picked = pick_figures(conn, d, ["users", "figure"], extra=extra)
    cells: dict[int, dict[str, Mapping]] = {}
    for r in picked:
        cells.setdefault(r["users"], {})[r["figure"]] = r
    user_counts = list(d.rows) if d.rows else sorted(cells)
    single = cells.get(1, {})
    reference = single.get("aggregate") or single.get("per_user")
    notes = Footnotes()
    columns = [Column("users", "Users"),
               Column("per_user", "Per user tokens/s", "measured"),
               Column("aggregate", "Aggregate tokens/s", "measured"),
               Column("per_user_calc", "Per user = aggregate ÷ users (calc.)", "calc"),
               Column("gain", "Aggregate gain over 1 user (calc.)", "calc",
                      "aggregate figure ÷ the one-user figure"),
               Column("software", "Software")]
    rows, series = [], []
    for n in user_counts:
        by_f = cells.get(n, {})
        agg, per = by_f.get("aggregate"), by_f.get("per_user")
        if n == 1:  # one user: what that user sees is the whole output, so each figure is also the other
            per, agg = per or agg, agg or per
        row = {"users": text_cell(n), "per_user": measured_cell(notes, per), "aggregate": measured_cell(notes, agg)}
        share = agg["tokens_per_second"] / n if agg else None
        row["per_user_calc"] = calc_cell(share, fmt_calc, f"{fmt_number(agg['tokens_per_second']) if agg else ''} ÷ {n}")
        gain = agg["tokens_per_second"] / reference["tokens_per_second"] if (agg and reference) else None
        row["gain"] = calc_cell(gain, fmt_ratio, f"{fmt_number(agg['tokens_per_second']) if agg else ''} ÷ "
                                             f"{fmt_number(reference['tokens_per_second']) if reference else ''}")
        row["software"] = text_cell(", ".join(dict.fromkeys(fmt_software(r) for r in by_f.values())) or None)
        rows.append(row)
        series.append({"users": n, "aggregate": agg["tokens_per_second"] if agg else None,
                       "per_user": per["tokens_per_second"] if per else None, "per_user_calc": share})
    table_notes = common_notes(d)
    table_notes.append("The gain divides each aggregate figure by the one-user figure of the same conditions (the "
                       "aggregate at 1 user when there is one, else the per-user figure at 1 user); with one user the "
                       "two are the same quantity.")
    if reference is None:
        table_notes.append("No one-user figure qualifies, so no gain can be computed.")
    missing = [str(n) for n in user_counts if n != 1 and "per_user" not in cells.get(n, {})]
    if missing:
        table_notes.append(f"Per user tokens/s (measured) is empty at {', '.join(missing)} users: no source measured "
                           "what one user sees there (llama-batched-bench reports the aggregate only); a per-user "
                           "figure, e.g. from a serving benchmark, would fill it. The calc. column divides the "
                           "aggregate instead. At one user the two figures are the same.")
    varies = {"concurrency": "one number of concurrent users per row; per-user and aggregate figures in their own "
                             "columns"}
    chart = {"type": "concurrency", "series": series,
             "title": f"{listing(d.fixed['model'])} on {listing(d.fixed['hardware'])}: aggregate vs per user"}
    return finish(conn, d, columns, rows, held_fixed(conn, d, varies), table_notes, notes, chart)


KINDS = (
    TableKind("concurrency", 6, build_concurrency, Layout(
        required=("hardware", "model"), forbidden=("users", "figure"),
        keys=frozenset({"rows"}), row_type=int)),
)
