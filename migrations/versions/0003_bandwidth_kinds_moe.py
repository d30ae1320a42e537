"""bandwidth kinds (vendor, relayed, stated), mixture-of-experts facts, the cited file size; measurement_full
prefers the hardware's cited bandwidth over a figure's own and never computes a dense ceiling for a mixture of experts

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 13:00:00
"""
import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

# The bandwidth a figure is read against: the hardware's cited one (vendor, relayed, or stated in the reference),
# else the one the figure's own source states (the 4167 scoreboard's column). A stated value never replaces a cited
# one, and each keeps its own citation: the figure's post and quote for a value its source states.
_CITED = "h.memory_bandwidth_gbs IS NOT NULL"
_BANDWIDTH = f"CASE WHEN {_CITED} THEN h.memory_bandwidth_gbs ELSE m.hardware_bandwidth_gbs END"
# A model known to be a mixture of experts whose active share is unknown has no ceiling: it is never read as dense.
# Known: flagged in the reference, given active parameters, or named so by llama-bench's label ("qwen3moe",
# "MXFP4 MoE" in the quoted row).
_MOE_SHARE_UNKNOWN = """((mo.mixture_of_experts = TRUE OR mo.active_params_b IS NOT NULL
                  OR LOWER(mo.name) LIKE '%moe%' OR m.quote LIKE '%MoE%')
                 AND (mo.active_params_b IS NULL OR mo.params_b IS NULL OR mo.params_b = 0))"""
_ONE_USER_GENERATION = ("m.nature_kind = 'measured' AND m.phase = 'generation' "
                        "AND (m.figure = 'per_user' OR m.users = 1)")

MEASUREMENT_FULL = f"""
CREATE VIEW measurement_full AS
SELECT m.id AS measurement_id,
       m.status,
       h.name AS hardware,
       h.vendor AS hardware_vendor,
       {_BANDWIDTH} AS memory_bandwidth_gbs,
       CASE WHEN {_CITED} THEN h.bandwidth_kind WHEN m.hardware_bandwidth_gbs IS NOT NULL THEN 'stated' END
           AS bandwidth_kind,
       CASE WHEN {_CITED} THEN h.bandwidth_source_url WHEN m.hardware_bandwidth_gbs IS NOT NULL THEN m.source_url END
           AS bandwidth_source_url,
       CASE WHEN {_CITED} THEN h.bandwidth_quote WHEN m.hardware_bandwidth_gbs IS NOT NULL THEN m.quote END
           AS bandwidth_quote,
       CASE WHEN {_CITED} THEN h.bandwidth_source_title END AS bandwidth_source_title,
       CASE WHEN {_CITED} THEN h.bandwidth_via_title END AS bandwidth_via_title,
       CASE WHEN {_CITED} THEN h.bandwidth_via_url END AS bandwidth_via_url,
       CASE WHEN {_CITED} THEN h.bandwidth_via_quote END AS bandwidth_via_quote,
       h.memory_gb AS hardware_memory_gb,
       mo.name AS model,
       mo.params_b,
       mo.active_params_b,
       mo.mixture_of_experts,
       f.quantization,
       f.size_bytes / 1000000000.0 AS file_size_gb,
       f.size_source_url AS file_size_source_url,
       s.name AS software,
       s.version AS software_version,
       s.build_number,
       s.build_commit,
       m.software_options,
       m.phase,
       m.prompt_tokens,
       m.generated_tokens,
       m.context_depth,
       m.users,
       m.figure,
       m.nature_kind AS nature,
       m.procedure,
       m.formula,
       m.tokens_per_second,
       m.stddev,
       CASE WHEN m.phase = 'generation' AND {_BANDWIDTH} IS NOT NULL AND f.size_bytes > 0
                 AND NOT {_MOE_SHARE_UNKNOWN}
            THEN {_BANDWIDTH}
                 / (f.size_bytes / 1000000000.0
                    * COALESCE(mo.active_params_b / NULLIF(mo.params_b, 0), 1.0))
       END AS calc_ceiling_tps,
       CASE WHEN NOT ({_ONE_USER_GENERATION}) THEN NULL
            WHEN {_BANDWIDTH} IS NULL THEN 'not checked: memory bandwidth unknown'
            WHEN {_MOE_SHARE_UNKNOWN} THEN 'not checked: mixture of experts whose active parameters are unknown'
            ELSE 'checked'
       END AS ceiling_check,
       m.source_url,
       src.url AS source_home_url,
       src.title AS source_title,
       src.kind AS source_kind,
       p.permalink AS post_permalink,
       m.retrieved_at,
       m.published_at,
       m.author,
       m.quote,
       m.via_title,
       m.via_publisher,
       m.via_url,
       m.via_published_at,
       m.slot,
       m.supersedes_id,
       m.figure_key
FROM measurement m
JOIN hardware h ON h.id = m.hardware_id
JOIN model_file f ON f.id = m.model_file_id
JOIN model mo ON mo.id = f.model_id
JOIN software s ON s.id = m.software_id
JOIN source src ON src.id = m.source_id
LEFT JOIN post p ON p.id = m.post_id
"""

_HARDWARE_COLUMNS = (('bandwidth_kind', sa.String), ('bandwidth_source_title', sa.String),
                     ('bandwidth_via_title', sa.String), ('bandwidth_via_url', sa.String),
                     ('bandwidth_via_quote', sa.Text))
_MODEL_COLUMNS = (('mixture_of_experts', sa.Boolean), ('active_params_source_url', sa.String),
                  ('active_params_quote', sa.Text))
_KIND_CHECK = "bandwidth_kind IS NULL OR bandwidth_kind IN ('vendor', 'relayed', 'stated')"


def _old_view():
    """Revision 0001's view, for the downgrade."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location("_rev0001", Path(__file__).with_name("0001_initial_schema.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MEASUREMENT_FULL


def upgrade() -> None:
    op.execute("DROP VIEW IF EXISTS measurement_full")
    with op.batch_alter_table('hardware', schema=None) as batch_op:
        for name, kind in _HARDWARE_COLUMNS:
            batch_op.add_column(sa.Column(name, kind(), nullable=True))
        batch_op.create_check_constraint('ck_hardware_bandwidth_kind', _KIND_CHECK)
    with op.batch_alter_table('model', schema=None) as batch_op:
        for name, kind in _MODEL_COLUMNS:
            batch_op.add_column(sa.Column(name, kind(), nullable=True))
    with op.batch_alter_table('model_file', schema=None) as batch_op:
        batch_op.add_column(sa.Column('size_quote', sa.Text(), nullable=True))
    # Until now a hardware bandwidth was recorded only from the maker's page.
    op.execute("UPDATE hardware SET bandwidth_kind = 'vendor' WHERE memory_bandwidth_gbs IS NOT NULL")
    op.execute(MEASUREMENT_FULL)


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS measurement_full")
    with op.batch_alter_table('model_file', schema=None) as batch_op:
        batch_op.drop_column('size_quote')
    with op.batch_alter_table('model', schema=None) as batch_op:
        for name, _ in reversed(_MODEL_COLUMNS):
            batch_op.drop_column(name)
    with op.batch_alter_table('hardware', schema=None) as batch_op:
        batch_op.drop_constraint('ck_hardware_bandwidth_kind', type_='check')
        for name, _ in reversed(_HARDWARE_COLUMNS):
            batch_op.drop_column(name)
    op.execute(_old_view())
