"""Table 9 (`conformance`): what each source gives: figures read, accepted, rejected, and the field most often
missing (the source_conformance view)."""

from __future__ import annotations

from sqlalchemy import Connection, text

from ..definitions import Definition, Layout, TableKind
from ..tables import (
    CALC_NOTE,
    NO_MEASUREMENT,
    Column,
    Table,
    calc_cell,
    fmt_percent,
    text_cell,
)


def build_conformance(conn: Connection, d: Definition) -> Table:
    """What each source gives: figures read, accepted, rejected, and the field most often missing (the
    source_conformance view). A relayed figure counts for its relay and the source it names."""
    rows_read = list(conn.execute(text(
        "SELECT * FROM source_conformance ORDER BY relayed_by IS NOT NULL, relayed_by, figures_read DESC, "
        "source_url")).mappings())
    total = len(rows_read)
    if d.limit:
        rows_read = rows_read[: d.limit]
    columns = [Column("relayed_by", "Relayed by"), Column("source", "Source"),
               Column("read", "Figures read", "count"), Column("accepted", "Accepted", "count"),
               Column("rejected", "Rejected", "count"), Column("share", "Accepted share (calc.)", "calc"),
               Column("missing", "Commonest missing field"), Column("missing_n", "Figures missing it", "count")]
    rows = []
    for r in rows_read:
        rows.append({
            "relayed_by": text_cell(r["relayed_by"] or "(read directly)"),
            "source": text_cell(r["source_title"] or r["source_url"] or "(no source URL)", href=r["source_url"]),
            "read": text_cell(r["figures_read"], kind="count"), "accepted": text_cell(r["accepted"], kind="count"),
            "rejected": text_cell(r["rejected"], kind="count"),
            "share": calc_cell(r["accepted"] / r["figures_read"] if r["figures_read"] else None, fmt_percent,
                           f"{r['accepted']} ÷ {r['figures_read']}"),
            "missing": text_cell(r["commonest_missing"]), "missing_n": text_cell(r["commonest_missing_count"], kind="count"),
        })
    fixed = [("Figures", "every active figure of the database, accepted (a measurement) or rejected (kept with its "
                         "reasons); superseded and withdrawn ones are history and not counted"),
             ("Source", "the publication a figure was read from; a relayed figure (source.via) counts under its "
                        "relay and the source it names")]
    notes = ["\"Commonest missing field\" is the field whose reason \"FIELD: missing\" is most frequent among the "
             "source's rejections (ties: the first by name).", CALC_NOTE]
    if total > len(rows):
        notes.append(f"Showing {len(rows)} of {total} sources (limit = {d.limit}).")
    if not rows:
        notes.insert(0, f"{NO_MEASUREMENT} No source has been read yet: `tpsdb refresh` or `tpsdb add` would fill it.")
    return Table(definition=d, columns=columns, rows=rows, held_fixed=fixed, notes=notes, footnotes=[],
                 total_rows=total if total > len(rows) else None)


KINDS = (
    TableKind("conformance", 9, build_conformance, Layout(
        required=(), forbidden=(),
        keys=frozenset({"limit"}))),
)
