"""rejection_full names what was refused (hardware, model, quantization, software, version, phase, read from the
candidate as given), and a figure withdrawn by its user keeps why and when (the withdrawal table)

Revision ID: 0005_users
Revises: 0004_ceiling
Create Date: 2026-12-06 00:30:00
"""
import sqlalchemy as sa
import sqlmodel
from alembic import op

revision = '0005_users'
down_revision = '0004_ceiling'
branch_labels = None
depends_on = None

# A reader asks "which RTX 5090 figures were refused, and why" without json_extract (first-use review, M4). The
# candidate is kept as it was given, so a field is read where the record format puts it, and is empty where the
# candidate had none (or gave something other than text there).
REJECTION_FULL = """
CREATE VIEW rejection_full AS
SELECT r.id AS rejection_id,
       r.status,
       {hardware} AS hardware,
       {model} AS model,
       {quantization} AS quantization,
       {software} AS software,
       {version} AS software_version,
       {phase} AS phase,
       r.tokens_per_second,
       r.reasons,
       r.source_url,
       src.title AS source_title,
       p.permalink AS post_permalink,
       r.quote,
       r.slot,
       r.candidate_json
FROM rejection r
LEFT JOIN source src ON src.id = r.source_id
LEFT JOIN post p ON p.id = r.post_id
"""

_PATHS = {"hardware": ("hardware", "name"), "model": ("model", "name"), "quantization": ("quantization",),
          "software": ("software", "name"), "version": ("software", "version"), "phase": ("phase",)}


def _read(dialect: str, path: tuple[str, ...]) -> str:
    if dialect == "sqlite":  # json_extract gives a nested object as its text: keep text only
        expression = f"json_extract(r.candidate_json, '$.{'.'.join(path)}')"
        return f"CASE WHEN json_type(r.candidate_json, '$.{'.'.join(path)}') = 'text' THEN {expression} END"
    json_path = "{" + ",".join(path) + "}"
    return (f"CASE WHEN json_typeof(r.candidate_json::json #> '{json_path}') = 'string' "
            f"THEN r.candidate_json::json #>> '{json_path}' END")


OLD_REJECTION_FULL = """
CREATE VIEW rejection_full AS
SELECT r.id AS rejection_id,
       r.status,
       r.reasons,
       r.tokens_per_second,
       r.source_url,
       src.title AS source_title,
       p.permalink AS post_permalink,
       r.quote,
       r.slot,
       r.candidate_json
FROM rejection r
LEFT JOIN source src ON src.id = r.source_id
LEFT JOIN post p ON p.id = r.post_id
"""


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.execute("DROP VIEW IF EXISTS rejection_full")
    op.execute(REJECTION_FULL.format(**{name: _read(dialect, path) for name, path in _PATHS.items()}))
    op.create_table('withdrawal',
                    sa.Column('id', sa.Integer(), nullable=False),
                    sa.Column('measurement_id', sa.Integer(), nullable=False),
                    sa.Column('why', sa.Text(), nullable=False),
                    sa.Column('withdrawn_at', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
                    sa.ForeignKeyConstraint(['measurement_id'], ['measurement.id']),
                    sa.PrimaryKeyConstraint('id'))
    op.create_index('ix_withdrawal_measurement_id', 'withdrawal', ['measurement_id'])


def downgrade() -> None:
    op.drop_index('ix_withdrawal_measurement_id', table_name='withdrawal')
    op.drop_table('withdrawal')
    op.execute("DROP VIEW IF EXISTS rejection_full")
    op.execute(OLD_REJECTION_FULL)
