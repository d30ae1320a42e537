"""source_conformance counts each source once, then joins its commonest missing field (was: every figure joined to
every source's commonest field before counting: 0.5 s on the 31,000-row seed, past Datasette's time limit under load)

Revision ID: 0006_conformance
Revises: 0005_users
Create Date: 2026-12-06 01:50:00
"""
from alembic import op

revision = '0006_conformance'
down_revision = '0005_users'
branch_labels = None
depends_on = None

# The same rows and columns as 0002's view; only the order of the work changes (totals per source first).
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
totals AS (
    SELECT relayed_by, source_url, MAX(source_title) AS source_title, COUNT(*) AS figures_read,
           SUM(accepted) AS accepted
    FROM rows_read
    GROUP BY relayed_by, source_url
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
       t.source_title,
       t.figures_read,
       t.accepted,
       t.figures_read - t.accepted AS rejected,
       c.field AS commonest_missing,
       c.n AS commonest_missing_count
FROM totals t
LEFT JOIN commonest c ON c.rank = 1 AND c.source_url IS NOT DISTINCT FROM t.source_url
                      AND c.relayed_by IS NOT DISTINCT FROM t.relayed_by
"""

_DIALECT = {
    "sqlite": {"via": "json_extract(r.candidate_json, '$.source.via.title')",
               "reasons": "j.value", "unnest": ", json_each(x.reasons) j"},
    "postgresql": {"via": "(r.candidate_json::json #>> '{{source,via,title}}')",
                   "reasons": "j.value", "unnest": "CROSS JOIN LATERAL json_array_elements_text(x.reasons::json) j"},
}


def _create(template: str) -> None:
    dialect = op.get_bind().dialect.name
    sql = template.format(**_DIALECT.get(dialect, _DIALECT["postgresql"]))
    if dialect == "sqlite":  # SQLite spells the null-safe comparison IS
        sql = sql.replace("IS NOT DISTINCT FROM", "IS")
    op.execute("DROP VIEW IF EXISTS source_conformance")
    op.execute(sql)


def upgrade() -> None:
    _create(SOURCE_CONFORMANCE)


def downgrade() -> None:
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("m0002", Path(__file__).with_name("0002_source_conformance.py"))
    assert spec and spec.loader
    previous = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(previous)
    _create(previous.SOURCE_CONFORMANCE)
