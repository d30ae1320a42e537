"""source_conformance view: what each source gives (figures read, accepted, rejected, commonest missing field)

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01 12:00:00
"""
from alembic import op


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

# One row per source: a figure read directly counts for its source (the thread, the file), a relayed one for the
# publication that relayed it (`via`) and the source it names. Active rows only: a superseded figure is history.
# The two dialects differ only in how a JSON value is read (`{via}`) and how a JSON list is unnested (`{reasons}`).
SOURCE_CONFORMANCE = """
CREATE VIEW source_conformance AS
WITH rows_read AS (
    SELECT m.via_title AS relayed_by, src.url AS source_url, src.title AS source_title, 1 AS accepted,
           NULL AS reasons
    FROM measurement m JOIN source src ON src.id = m.source_id
    WHERE m.status = 'active'
    UNION ALL
    SELECT {via} AS relayed_by, src.url, src.title, 0, r.reasons
    FROM rejection r LEFT JOIN source src ON src.id = r.source_id
    WHERE r.status = 'active'
),
missing AS (
    SELECT relayed_by, source_url, SUBSTR(reason, 1, LENGTH(reason) - LENGTH(': missing')) AS field,
           COUNT(*) AS n
    FROM (SELECT relayed_by, source_url, {reasons} AS reason FROM rows_read x {unnest}
          WHERE x.reasons IS NOT NULL) exploded
    WHERE reason LIKE '%: missing'
    GROUP BY relayed_by, source_url, SUBSTR(reason, 1, LENGTH(reason) - LENGTH(': missing'))
),
commonest AS (
    SELECT relayed_by, source_url, field, n,
           ROW_NUMBER() OVER (PARTITION BY relayed_by, source_url ORDER BY n DESC, field ASC) AS rank
    FROM missing
)
SELECT t.relayed_by,
       t.source_url,
       MAX(t.source_title) AS source_title,
       COUNT(*) AS figures_read,
       SUM(t.accepted) AS accepted,
       COUNT(*) - SUM(t.accepted) AS rejected,
       c.field AS commonest_missing,
       c.n AS commonest_missing_count
FROM rows_read t
LEFT JOIN commonest c ON c.rank = 1 AND c.source_url IS NOT DISTINCT FROM t.source_url
                      AND c.relayed_by IS NOT DISTINCT FROM t.relayed_by
GROUP BY t.relayed_by, t.source_url, c.field, c.n
"""

_DIALECT = {
    "sqlite": {"via": "json_extract(r.candidate_json, '$.source.via.title')",
               "reasons": "j.value", "unnest": ", json_each(x.reasons) j"},
    "postgresql": {"via": "(r.candidate_json::json #>> '{{source,via,title}}')",
                   "reasons": "j.value", "unnest": "CROSS JOIN LATERAL json_array_elements_text(x.reasons::json) j"},
}


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    parts = _DIALECT.get(dialect, _DIALECT["postgresql"])
    sql = SOURCE_CONFORMANCE.format(**parts)
    if dialect == "sqlite":  # SQLite spells the null-safe comparison IS
        sql = sql.replace("IS NOT DISTINCT FROM", "IS")
    op.execute(sql)


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS source_conformance")
