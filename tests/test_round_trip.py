"""Issue 9: export → add into an empty database → export gives the same bytes, on the seed and on a database the
three fixture threads were refreshed into (the first-use review found `483 added; 198 rejections` there: the seed's
model row without a parameter count won over the records' own values)."""

from __future__ import annotations

from conftest import run_cli
from fixture_server import FixtureServer
from refresh_helpers import refresh


def round_trips(db, tmp_path) -> tuple[str, str, str]:
    """The export of `db`, the `add` of it into an empty database, and that database's export."""
    first = run_cli("export", db=db).stdout
    (tmp_path / "export.jsonl").write_text(first, encoding="utf-8")
    empty = tmp_path / "empty.sqlite"
    run_cli("init", "--no-seed", db=empty)
    added = run_cli("add", str(tmp_path / "export.jsonl"), db=empty)  # check: exit 0, every record accepted
    return first, added.stdout, run_cli("export", db=empty).stdout


def test_the_seed_round_trips_byte_for_byte(tmp_path, seeded_db):
    seeded = seeded_db
    first, added, second = round_trips(seeded, tmp_path)
    assert first and "0 rejections added" in added
    assert second == first


def test_a_refreshed_database_round_trips_byte_for_byte(tmp_path, seeded_db):
    db = seeded_db
    before = len(run_cli("export", db=db).stdout.splitlines())
    with FixtureServer() as server:
        refresh(db, server)
    first, added, second = round_trips(db, tmp_path)
    assert len(first.splitlines()) > before + 100  # the threads' comments were read
    assert "0 rejections added" in added, added[-500:]
    assert '"quote_header":"|' in first.replace(" ", "")  # a table row's header travels with its figure
    assert second == first
