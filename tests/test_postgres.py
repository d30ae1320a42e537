"""The same code on PostgreSQL, through the database URL: a real server started for the session.

Skipped (with the reason) only where no PostgreSQL server binaries are installed. The server and the
database fixtures (`postgres`, `pg_url`) are in conftest.py: tests/test_hostile_records.py uses them too.
"""

from conftest import run_cli, write_jsonl
from fixture_server import FixtureServer
from refresh_helpers import server_env


def test_seed_loads_and_dumps_to_the_same_bytes(pg_url, tmp_path):
    run_cli("init", "--db", pg_url)
    sqlite = tmp_path / "same.sqlite"
    run_cli("init", db=sqlite)
    assert run_cli("export", "--db", pg_url).stdout == run_cli("export", db=sqlite).stdout
    run_cli("export-seed", "--out", str(tmp_path / "pg.sql"), "--db", pg_url)
    run_cli("export-seed", "--out", str(tmp_path / "lite.sql"), db=sqlite)
    assert (tmp_path / "pg.sql").read_bytes() == (tmp_path / "lite.sql").read_bytes()


def test_add_query_and_read_only(pg_url, tmp_path, record):
    run_cli("init", "--no-seed", "--db", pg_url)
    path = write_jsonl(tmp_path / "r.jsonl", [record])
    assert "1 measurements added" in run_cli("add", str(path), "--db", pg_url).stdout
    assert "1 already stored" in run_cli("add", str(path), "--db", pg_url).stdout
    out = run_cli("query", "select hardware, tokens_per_second from measurement_full", "--format", "csv",
                  "--db", pg_url).stdout
    assert out.splitlines() == ["hardware,tokens_per_second", "NVIDIA DGX Spark,59.02"]
    refused = run_cli("query", "delete from measurement", "--db", pg_url, check=False)
    assert refused.returncode == 2 and "read-only" in refused.stderr
    assert "1 already stored" in run_cli("add", str(path), "--db", pg_url).stdout


def test_refresh_and_history_on_postgres(pg_url):
    run_cli("init", "--no-seed", "--db", pg_url)
    with FixtureServer() as server:
        env = server_env(server)
        first = run_cli("refresh", "llamacpp-16578", "--db", pg_url, env=env)
        assert "llamacpp-16578: ok" in first.stdout and "240 new" in first.stdout
        second = run_cli("refresh", "llamacpp-16578", "--db", pg_url, env=env)
        assert "unchanged" in second.stdout
        count = run_cli("query", "select count(*) as n from measurement_full where status = 'active'",
                        "--format", "csv", "--db", pg_url).stdout
        assert count.splitlines() == ["n", "240"]
