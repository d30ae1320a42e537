"""The same code on PostgreSQL, through the database URL: a real server started for the session.

Skipped (with the reason) only where no PostgreSQL server binaries are installed.
"""

import glob
import os
import shutil
import socket
import subprocess
import tempfile

import pytest

from conftest import run_cli, write_jsonl
from fixture_server import FixtureServer
from refresh_helpers import server_env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres():
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not binaries:
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    bindir = os.path.dirname(binaries[-1])
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user and shutil.which("runuser") is None:
        pytest.skip("running as root without runuser: initdb refuses root")
    workdir = tempfile.mkdtemp(prefix="tpsdb-pg-")
    if as_user:
        shutil.chown(workdir, "postgres")
    port = _free_port()
    data = os.path.join(workdir, "data")
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres"], check=True,
                   capture_output=True)
    subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-l", os.path.join(workdir, "log"), "-w", "-o",
                              f"-p {port} -k {workdir} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                   check=True, capture_output=True)
    try:
        yield bindir, as_user, port
    finally:
        subprocess.run(as_user + [f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def pg_url(postgres, request):
    bindir, as_user, port = postgres
    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "")[:40]
    subprocess.run(as_user + [f"{bindir}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", name],
                   check=True, capture_output=True)
    return f"postgresql+psycopg://postgres@127.0.0.1:{port}/{name}"


def test_seed_loads_and_dumps_to_the_same_bytes(pg_url, tmp_path):
    run_cli("init", "--db", pg_url)
    sqlite = tmp_path / "same.sqlite"
    run_cli("init", db=sqlite)
    assert run_cli("export", "--db", pg_url).stdout == run_cli("export", db=sqlite).stdout
    run_cli("export-seed", "--out", str(tmp_path / "pg.sql"), "--db", pg_url)
    run_cli("export-seed", "--out", str(tmp_path / "lite.sql"), db=sqlite)
    assert (tmp_path / "pg.sql").read_bytes() == (tmp_path / "lite.sql").read_bytes()
    # Issue 9 item 6: the source_conformance view (migration 0002) counts the same on both databases.
    conformance = "select * from source_conformance order by coalesce(relayed_by, ''), coalesce(source_url, '')"
    assert (run_cli("query", conformance, "--format", "json", "--db", pg_url).stdout
            == run_cli("query", conformance, "--format", "json", db=sqlite).stdout)


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
