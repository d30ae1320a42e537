"""Models and migrations agree; the seed is deterministic and loads back to the same bytes."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlmodel import SQLModel

from conftest import ROOT, run_cli
from tpsdb import db


def test_models_and_migrations_agree(tmp_path):
    engine = db.make_engine(str(tmp_path / "m.sqlite"))
    db.migrate(engine)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata)
    assert diff == []


def test_the_revision_every_command_expects_is_the_newest_migration(tmp_path):
    engine = db.make_engine(str(tmp_path / "r.sqlite"))
    assert db.current_revision(engine) is None
    db.migrate(engine)
    assert db.SCHEMA_REVISION == db.head_revision(engine) == db.current_revision(engine)


@pytest.mark.parametrize("revision, message", [
    ("0099", "database is at revision 0099, newer than this tpsdb (0003): upgrade tpsdb"),
    ("0000", "database is at revision '0000', which no tpsdb migration made"),
])
def test_d13_a_database_at_another_revision_is_refused_with_the_fix(tmp_path, revision, message):
    path = tmp_path / "old.sqlite"
    run_cli("init", "--no-seed", db=path)
    engine = db.make_engine(str(path))
    with engine.begin() as conn:
        conn.exec_driver_sql(f"UPDATE alembic_version SET version_num = '{revision}'")
    engine.dispose()
    before = path.read_bytes()
    for command in ("summary", "init"):  # init neither "upgrades" it nor crashes on the unknown revision
        result = run_cli(command, db=path, check=False)
        assert result.returncode == 2
        assert result.stderr == f"error: {path}: {message}" + result.stderr.split(message, 1)[1]
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert path.read_bytes() == before


def test_migrated_database_has_the_views(tmp_path):
    engine = db.make_engine(str(tmp_path / "v.sqlite"))
    db.migrate(engine)
    with engine.connect() as conn:
        views = {r[0] for r in conn.exec_driver_sql("select name from sqlite_master where type = 'view'")}
    assert {"measurement_full", "rejection_full", "measurement_history"} <= views


def test_seed_is_deterministic_and_round_trips(tmp_path):
    seeded = tmp_path / "seeded.sqlite"
    run_cli("init", db=seeded)
    first, second = tmp_path / "a.sql", tmp_path / "b.sql"
    run_cli("export-seed", "--out", str(first), db=seeded)
    run_cli("export-seed", "--out", str(second), db=seeded)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() == (ROOT / "data" / "seed.sql").read_bytes()


def test_init_on_an_existing_database_keeps_its_data(tmp_path):
    path = tmp_path / "keep.sqlite"
    run_cli("init", db=path)
    before = run_cli("export", db=path).stdout
    out = run_cli("init", db=path)
    assert "loaded" not in out.stderr
    assert run_cli("export", db=path).stdout == before
