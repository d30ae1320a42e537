"""a quoted table row keeps its table's header line (measurement.quote_header, rejection.quote_header), read when the
figure was extracted, so publishing never re-reads archived pages to find it; measurement_full and rejection_full
show it beside the quote

Revision ID: 0007_quoteheader
Revises: 0006_conformance
Create Date: 2026-12-06 03:00:00
"""
import importlib.util
from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = '0007_quoteheader'
down_revision = '0006_conformance'
branch_labels = None
depends_on = None


def _revision(file_name: str):
    spec = importlib.util.spec_from_file_location(f"_rev_{file_name[:4]}", Path(__file__).with_name(file_name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _with_header(view: str, table: str) -> str:
    """The view with `<table>.quote_header` right after its quote column (one place in each view)."""
    quote = f"       {table}.quote,\n"
    assert view.count(quote) == 1, f"the view has one {table}.quote column"
    return view.replace(quote, quote + f"       {table}.quote_header,\n")


def _measurement_full() -> str:
    return _revision("0004_ceiling_one_home.py")._view()


def _rejection_full() -> str:
    users = _revision("0005_users.py")
    dialect = op.get_bind().dialect.name
    return users.REJECTION_FULL.format(**{name: users._read(dialect, path) for name, path in users._PATHS.items()})


def upgrade() -> None:
    op.execute("DROP VIEW IF EXISTS measurement_full")
    op.execute("DROP VIEW IF EXISTS rejection_full")
    # Plain ADD COLUMN (nullable, no default): no batch copy of tables other tables and views point at.
    op.add_column('measurement', sa.Column('quote_header', sa.Text(), nullable=True))
    op.add_column('rejection', sa.Column('quote_header', sa.Text(), nullable=True))
    op.execute(_with_header(_measurement_full(), "m"))
    op.execute(_with_header(_rejection_full(), "r"))


def downgrade() -> None:
    op.execute("DROP VIEW IF EXISTS measurement_full")
    op.execute("DROP VIEW IF EXISTS rejection_full")
    for table in ("measurement", "rejection"):  # not a batch copy: measurement_history reads measurement
        op.execute(f"ALTER TABLE {table} DROP COLUMN quote_header")
    op.execute(_measurement_full())
    op.execute(_rejection_full())
