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
    ("0099", f"database is at revision 0099, newer than this tpsdb ({db.SCHEMA_REVISION}): upgrade tpsdb"),
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


def test_seed_is_deterministic_and_round_trips(tmp_path, seeded_db):
    seeded = seeded_db
    first, second = tmp_path / "a.sql", tmp_path / "b.sql"
    run_cli("export-seed", "--out", str(first), db=seeded)
    run_cli("export-seed", "--out", str(second), db=seeded)
    assert first.read_bytes() == second.read_bytes()
    assert first.read_bytes() == (ROOT / "data" / "seed.sql").read_bytes()


def test_a_seeded_number_is_the_one_its_literal_writes(tmp_path):
    """SQLite before 3.43 reads `146.619332` as 146.61933199999999: a figure from the seed then differed from the
    seed's text (it no longer dumped to the same bytes, and its quote no longer showed it). The loader binds each
    decimal literal as Python reads it; the text of a quoted string, numbers and marks included, stays as written."""
    numbers = [146.619332, 1.016069, 75.9114498002725, 1e-05, 2.5e+20, 0.1, 7.0]
    script = tmp_path / "seed.sql"
    script.write_text("-- a comment: 1.5; 'x'\n" + "".join(
        f"INSERT INTO t (id, x, y, s) VALUES ({i}, {x!r}, -{x!r}, 'avg_ts: {x!r}; ? it''s 3.5e2');\n"
        for i, x in enumerate(numbers)), encoding="utf-8")
    engine = db.make_engine(str(tmp_path / "t.sqlite"))
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, x REAL, y REAL, s TEXT)")
    assert db.load_seed(engine, script) == len(numbers)
    with engine.connect() as conn:
        stored = conn.exec_driver_sql("SELECT x, y, s FROM t ORDER BY id").all()
    engine.dispose()
    assert [(x, y) for x, y, _ in stored] == [(x, -x) for x in numbers]
    assert [s for _, _, s in stored] == [f"avg_ts: {x!r}; ? it's 3.5e2" for x in numbers]


def test_init_on_an_existing_database_keeps_its_data(seeded_db):
    path = seeded_db
    before = run_cli("export", db=path).stdout
    out = run_cli("init", db=path)
    assert "loaded" not in out.stderr
    assert run_cli("export", db=path).stdout == before
