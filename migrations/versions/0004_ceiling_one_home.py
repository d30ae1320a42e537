"""the ceiling has one home (tpsdb.ceiling): measurement_full's calc_ceiling_tps and ceiling_check are generated from
its rule on the active share the store keeps per figure (measurement.read_share, read_share_origin), and a figure's
file is the cited file its stated size describes (model_file.same_file_id, tpsdb.files): file_size_gb is that file's,
reported_file_size_gb the figure's own

Revision ID: 0004_ceiling
Revises: 0003
Create Date: 2026-12-06 00:40:00
"""
import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = '0004_ceiling'
down_revision = '0003'
branch_labels = None
depends_on = None


def _revision(file_name: str):
    spec = importlib.util.spec_from_file_location(f"_rev_{file_name[:4]}", Path(__file__).with_name(file_name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _view() -> str:
    """Revision 0003's view with the ceiling columns of tpsdb.ceiling and the file's identity of tpsdb.files."""
    from tpsdb import ceiling

    old = _revision("0003_bandwidth_kinds_moe.py").MEASUREMENT_FULL
    bandwidth = ceiling.sql_bandwidth("h.memory_bandwidth_gbs", "m.hardware_bandwidth_gbs")
    kind = ceiling.sql_bandwidth_kind("h.memory_bandwidth_gbs", "h.bandwidth_kind", "m.hardware_bandwidth_gbs")
    size = "(COALESCE(c.size_bytes, f.size_bytes) / 1000000000.0)"
    # A figure stored before the store kept its share (an older seed) gets the share of its model's facts; a model
    # known to be a mixture of experts without them has none (never read as dense).
    share = ("(CASE WHEN m.read_share_origin IS NOT NULL THEN m.read_share "
             "WHEN mo.active_params_b > 0 AND mo.params_b > 0 THEN mo.active_params_b / mo.params_b "
             "WHEN mo.mixture_of_experts = TRUE THEN NULL ELSE 1.0 END)")
    start, end = old.index("       CASE WHEN m.phase = 'generation'"), old.index("       m.source_url,")
    view = (old[:start]
            + f"       {share} AS read_share,\n"
            + "       m.read_share_origin,\n"
            + f"       {ceiling.sql_ceiling(bandwidth, size, share, 'm.phase')} AS calc_ceiling_tps,\n"
            + f"       {ceiling.sql_check(bandwidth, size, share, 'm.nature_kind', 'm.phase', 'm.figure', 'm.users')}"
            + " AS ceiling_check,\n"
            + old[end:])
    cited = "CASE WHEN h.memory_bandwidth_gbs IS NOT NULL THEN h.memory_bandwidth_gbs ELSE m.hardware_bandwidth_gbs END"
    view = view.replace(f"{cited} AS memory_bandwidth_gbs", f"{bandwidth} AS memory_bandwidth_gbs")
    old_kind = view[view.index("       CASE WHEN h.memory_bandwidth_gbs IS NOT NULL THEN h.bandwidth_kind"):
                    view.index("AS bandwidth_kind,")]
    view = view.replace(old_kind, f"       {kind}\n           ")
    view = view.replace("       f.size_bytes / 1000000000.0 AS file_size_gb,\n       f.size_source_url AS file_size_source_url,",
                        f"       {size} AS file_size_gb,\n"
                        "       COALESCE(c.size_source_url, f.size_source_url) AS file_size_source_url,\n"
                        "       f.size_bytes / 1000000000.0 AS reported_file_size_gb,")
    view = view.replace("JOIN model_file f ON f.id = m.model_file_id\n",
                        "JOIN model_file f ON f.id = m.model_file_id\nLEFT JOIN model_file c ON c.id = f.same_file_id\n")
    assert view.count("calc_ceiling_tps") == 1 and "reported_file_size_gb" in view and "model_file c" in view
    return view


def _fill(conn) -> None:
    """The figures already stored get their share, and their files the cited file they describe, by the rules the
    store applies to a new figure (tpsdb.ceiling, tpsdb.files). Plain SQL on the columns this revision knows: the
    table classes of a later tpsdb may hold columns this database does not have yet."""
    from tpsdb.ceiling import ModelFacts, active_share
    from tpsdb.files import cited_file

    files = conn.execute(sa.text("SELECT id, model_id, quantization, size_bytes, size_quote FROM model_file")).all()
    cited: dict = {}
    for _, model_id, quant, size, quote in files:
        if quote and size:
            cited.setdefault(model_id, []).append((quant, size / 1e9))
    ids = {(model_id, quant, size): file_id for file_id, model_id, quant, size, _ in files}
    for file_id, model_id, quant, size, quote in files:
        size_gb = cited_file(size / 1e9 if size else None, quant, cited.get(model_id, ()))
        target = None if quote or size_gb is None else ids.get((model_id, quant, round(size_gb * 1e9)))
        if target is not None and target != file_id:
            conn.execute(sa.text("UPDATE model_file SET same_file_id = :t WHERE id = :i"), {"t": target, "i": file_id})
    figures = conn.execute(sa.text(
        "SELECT m.id, mo.name, mo.params_b, mo.active_params_b, mo.mixture_of_experts, m.quote FROM measurement m "
        "JOIN model_file f ON f.id = m.model_file_id JOIN model mo ON mo.id = f.model_id")).all()
    for figure_id, name, params, active, moe, quote in figures:
        share = active_share(name, None, None, ModelFacts(params, active, None if moe is None else bool(moe)), quote)
        conn.execute(sa.text("UPDATE measurement SET read_share = :s, read_share_origin = :o WHERE id = :i"),
                     {"s": share.stored, "o": share.origin, "i": figure_id})


def upgrade() -> None:
    op.execute("DROP VIEW IF EXISTS measurement_full")
    with op.batch_alter_table('measurement', schema=None) as batch_op:
        batch_op.add_column(sa.Column('read_share', sa.Float(), nullable=True))
        batch_op.add_column(sa.Column('read_share_origin', sa.String(), nullable=True))
    # A plain ADD COLUMN with its reference: a batch copy of model_file would drop a table measurement points at.
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE model_file ADD COLUMN same_file_id INTEGER REFERENCES model_file (id)")
    else:
        op.add_column('model_file', sa.Column('same_file_id', sa.Integer(), nullable=True))
        op.create_foreign_key('fk_model_file_same_file_id', 'model_file', 'model_file', ['same_file_id'], ['id'])
    _fill(op.get_bind())
    op.execute(_view())


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS measurement_full")
    if op.get_bind().dialect.name == "sqlite":
        op.execute("PRAGMA foreign_keys = OFF")  # the batch copy of model_file drops a table measurement points at
        with op.batch_alter_table('model_file', schema=None) as batch_op:
            batch_op.drop_column('same_file_id')  # its unnamed reference goes with it
        op.execute("PRAGMA foreign_keys = ON")
    else:
        op.drop_constraint('fk_model_file_same_file_id', 'model_file', type_='foreignkey')
        op.drop_column('model_file', 'same_file_id')
    for column in ('read_share_origin', 'read_share'):  # not a batch copy: measurement_history reads measurement
        op.execute(f"ALTER TABLE measurement DROP COLUMN {column}")
    op.execute(_revision("0003_bandwidth_kinds_moe.py").MEASUREMENT_FULL)
