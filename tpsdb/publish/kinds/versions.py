"""Table 4 (`versions`): one machine and model file across the versions (and speed-changing options) of one
program, oldest first when the build numbers say which is oldest."""

from __future__ import annotations

from typing import Mapping

from sqlalchemy import Connection, text

from ..definitions import Definition, DefinitionError, Layout, TableKind
from ..tables import (
    Column,
    Footnotes,
    Table,
    calc_cell,
    common_notes,
    finish,
    fmt_change,
    fmt_number,
    fmt_options,
    held_fixed,
    iso_date,
    listing,
    measured_cell,
    pick_figures,
    text_cell,
)


def build_versions(conn: Connection, d: Definition) -> Table:
    """One machine and model file across the versions (and speed-changing options) of one program, oldest first."""
    formats = list(d.columns) if d.columns else [d.fixed["quantization"]]
    formats = [f for v in formats for f in (v if isinstance(v, tuple) else (v,))]
    extra = {"quantization": tuple(formats)} if d.columns else {}
    if d.rows:
        extra["software_version"] = tuple(d.rows)
    picked = pick_figures(conn, d, ["software_version", "software_options", "quantization"], extra=extra,
                     windows={"first_seen": "MIN(COALESCE(published_at, retrieved_at))"})
    groups: dict[tuple[str, str], dict[str, Mapping]] = {}
    for r in picked:
        groups.setdefault((r["software_version"], r["software_options"]), {})[r["quantization"]] = r

    def first_seen(key):
        return min(iso_date(r["first_seen"]) or "" for r in groups[key].values())

    numbers = _build_numbers(conn)

    def build(key):
        r = next(iter(groups[key].values()))
        return r["build_number"] if r["build_number"] is not None else numbers(r["build_commit"])

    keys = list(groups)
    ordered = True
    if d.rows:
        position = {v: i for i, v in enumerate(d.rows)}
        keys.sort(key=lambda k: (position[k[0]], k[1]))
        keys += [(v, None) for v in d.rows if not any(k[0] == v for k in keys)]
        order_note = "Rows are in the order the definition lists the versions."
    elif all(build(k) is not None for k in keys):
        keys.sort(key=lambda k: (build(k), k[0], k[1]))
        order_note = "Rows are in build-number order (oldest first)."
    else:
        # A post's date says when a figure was published, not when its build was made (the 4167 scoreboard gives
        # four builds the date of the opening post): without build numbers the order is unknown, and said so.
        ordered = False
        keys.sort(key=lambda k: (k[0], k[1] or ""))
        unnumbered = ", ".join(sorted({k[0] for k in keys if build(k) is None}))
        order_note = (f"The order of these versions is unknown (no known build number for {unnumbered}): rows "
                      "are listed by version name and no change against an oldest version is computed. "
                      "\"First figure\" is the date of the first published figure, not of the build.")
    notes = Footnotes()
    columns = [Column("version", "Version"), Column("options", "Options"), Column("first_seen", "First figure")]
    columns += [Column(f"tps_{q}", f"{q} tokens/s", "measured") for q in formats]
    if ordered:
        columns += [Column(f"change_{q}", f"{q} vs oldest (calc.)", "calc", "change from the first row with a figure")
                    for q in formats]
    rows = []
    oldest: dict[str, float] = {}
    for key in keys:
        by_q = groups.get(key, {})
        row = {"version": text_cell(key[0]), "options": text_cell(fmt_options(key[1]) if key[1] else None),
               "first_seen": text_cell(first_seen(key) if by_q else None)}
        for q in formats:
            row[f"tps_{q}"] = measured_cell(notes, by_q.get(q))
        for q in formats if ordered else ():
            r = by_q.get(q)
            value = None
            if r is not None:
                oldest.setdefault(q, r["tokens_per_second"])
                value = r["tokens_per_second"] / oldest[q] - 1
            row[f"change_{q}"] = calc_cell(value, fmt_change, f"{fmt_number(r['tokens_per_second']) if r else ''} ÷ "
                                                          f"{fmt_number(oldest.get(q))} − 1")
        rows.append(row)
    varies = {"software": f"{listing(d.fixed['software'])}, one version (and set of options) per row"}
    if d.columns:
        varies["quantization"] = f"one format per column: {', '.join(formats)}"
    table_notes = common_notes(d) + [order_note]
    return finish(conn, d, columns, rows, held_fixed(conn, d, varies), table_notes, notes)


def _build_numbers(conn: Connection):
    """A lookup: commit -> the build number another version string of the database gives it ("b1569 (8e672efe)"),
    or None. Commits are compared on their common prefix (posts abbreviate them to 7-9 characters)."""
    known = conn.execute(text("SELECT DISTINCT build_commit, build_number FROM software "
                              "WHERE build_commit IS NOT NULL AND build_number IS NOT NULL")).all()

    def number(commit: str | None) -> int | None:
        if not commit:
            return None
        found = {n for c, n in known if c.startswith(commit) or commit.startswith(c)}
        return found.pop() if len(found) == 1 else None
    return number


def _columns_or_quantization(fixed: dict, columns: tuple, where: str) -> None:
    """A versions table compares one format (fixed.quantization) or several (columns), never both nor neither."""
    if columns and "quantization" in fixed:
        raise DefinitionError(f"{where}: give either fixed.quantization or columns, not both")
    if not columns and "quantization" not in fixed:
        raise DefinitionError(f"{where}: a versions table needs fixed.quantization or columns")


KINDS = (
    TableKind("versions", 4, build_versions, Layout(
        required=("hardware", "model", "software"), forbidden=("software_version",),
        keys=frozenset({"rows", "columns"}), check=_columns_or_quantization)),
)
