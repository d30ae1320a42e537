"""The same code on PostgreSQL, through the database URL: a real server started for the session.

Skipped (with the reason) only where no PostgreSQL server binaries are installed. The server and the
database fixtures (`postgres`, `pg_url`) are in conftest.py: tests/test_hostile_records.py uses them too.
"""

import json
import os
import subprocess
import time

from conftest import SEED_MEASUREMENTS, run_cli, write_jsonl
from fixture_server import FixtureServer
from refresh_helpers import server_env
from test_query import peak_kb


def test_seed_loads_and_dumps_to_the_same_bytes(pg_seeded_url, tmp_path, seeded_db):
    pg_url = pg_seeded_url  # what `tpsdb init` builds on PostgreSQL (once for the session), copied
    sqlite = seeded_db  # what `tpsdb init` builds on SQLite (once for the run), copied
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


def test_d12_init_with_a_password_holding_at_and_percent(postgres):
    """A password with special characters must be %-escaped in the URL; Alembic's configparser used to choke on it.
    (The fixture's server trusts every login, so this checks the URL's way through tpsdb and Alembic.)"""
    bindir, as_user, port = postgres
    psql = as_user + [f"{bindir}/psql", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-v", "ON_ERROR_STOP=1"]
    subprocess.run(psql + ["-c", "CREATE ROLE tpsdb_at LOGIN PASSWORD 'p@ss%w0rd:/#'",
                           "-c", "CREATE DATABASE t_d12 OWNER tpsdb_at"], check=True, capture_output=True)
    url = f"postgresql+psycopg://tpsdb_at:p%40ss%25w0rd%3A%2F%23@127.0.0.1:{port}/t_d12"
    assert f"measurements: {SEED_MEASUREMENTS} active" in run_cli("init", "--db", url).stdout
    assert f"measurements: {SEED_MEASUREMENTS} active" in run_cli("summary", "--db", url).stdout
    missing = run_cli("summary", "--db", url.replace("/t_d12", "/t_nowhere"), check=False)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "p%40ss" not in missing.stderr
    assert "the database does not exist" in missing.stderr and "createdb t_nowhere" in missing.stderr

# ------------------------------------------------------------------------------------------- tpsdb query
def _psql(pg_url: str):
    import psycopg

    return psycopg.connect(pg_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True)


def _one_error_line(result) -> str:
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: query: "), result.stderr
    return lines[0]


def test_d1_the_text_cannot_end_the_read_only_transaction(pg_seeded_url):
    """PG2 and PG3: `commit; …` used to end the read-only transaction and delete or corrupt every figure."""
    pg_url = pg_seeded_url
    with _psql(pg_url) as conn:
        before = conn.execute("select count(*), sum(tokens_per_second) from measurement").fetchone()
    assert before[0] == SEED_MEASUREMENTS
    for statement in ("commit; delete from measurement",
                      "commit; drop view measurement_full; update measurement set tokens_per_second = 1; "
                      "select 'done'",
                      "select 1; delete from measurement",  # a reading first: still one statement only
                      "/* hidden */ commit",
                      "delete from measurement",
                      "with gone as (delete from measurement returning 1) select count(*) from gone",
                      "explain analyze delete from measurement",
                      "select set_config('transaction_read_only', 'off', true)",
                      "select nextval('measurement_id_seq')"):
        _one_error_line(run_cli("query", statement, "--db", pg_url, check=False))
    with _psql(pg_url) as conn:
        assert conn.execute("select count(*), sum(tokens_per_second) from measurement").fetchone() == before
        assert conn.execute("select count(*) from measurement_full").fetchone()[0] == SEED_MEASUREMENTS


def test_d7_an_endless_statement_stops_on_the_server_too(pg_url):
    """PG4: the statement stops at --timeout, and the server's backend stops with it."""
    infinite = "with recursive r(n) as (select 1 union all select n+1 from r) select count(*) from r"
    started = time.monotonic()
    result = run_cli("query", infinite, "--timeout", "1", "--db", pg_url, check=False)
    elapsed = time.monotonic() - started
    assert _one_error_line(result) == "error: query: stopped after 1 s (--timeout)"
    assert elapsed < 4, elapsed  # about 0.5 s of interpreter start-up on top
    with _psql(pg_url) as conn:
        running = conn.execute("select count(*) from pg_stat_activity where query like 'with recursive r(n)%' "
                               "and state = 'active'").fetchone()[0]
    assert running == 0


def test_d7_rows_are_streamed_and_limited_on_postgres(pg_url, tmp_path):
    """Q15 on PostgreSQL: ten million rows asked, five shown, memory flat, the cut said."""
    many = ("with recursive r(n) as (select 1 union all select n+1 from r where n < 10000000) "
            "select n, 'some padding text' as pad from r")
    result = run_cli("query", many, "--limit", "5", "--format", "csv", "--db", pg_url)
    assert result.stdout.splitlines() == ["n,pad"] + [f"{n},some padding text" for n in range(1, 6)]
    assert "first 5 rows" in result.stderr
    with open(tmp_path / "out.csv", "w") as out:  # the same without a limit: streamed to a file
        status, kb = peak_kb(["query", many.replace("10000000", "300000"), "--limit", "0", "--format", "csv",
                              "--timeout", "60", "--db", pg_url], out)
    assert status == 0
    with open(tmp_path / "out.csv") as written:
        assert sum(1 for _ in written) == 300_001
    assert kb < 130_000, kb  # about 70 MB whatever the number of rows
    empty = run_cli("query", "select 1 as number, 'x' as letter where false", "--db", pg_url)
    assert empty.stdout.split() == ["number", "letter", "------", "------", "(0", "rows)"]


def test_d23_copy_and_server_file_functions_are_refused(pg_url, tmp_path):
    """PG5: as a superuser, COPY … TO wrote a file on the server and pg_read_file read /etc/passwd."""
    target = tmp_path / "copy_out.txt"
    os.chmod(tmp_path, 0o777)  # the server (user postgres) could write here: the refusal is what stops it
    for statement in (f"COPY (select 'x') TO '{target}'", "copy measurement to stdout",
                      "select length(pg_read_file('/etc/passwd'))",
                      "select length(pg_catalog.\"pg_read_file\"('/etc/passwd'))",
                      f"select lo_export(1, '{target}')", "select pg_ls_dir('.')"):
        assert "refused" in _one_error_line(run_cli("query", statement, "--db", pg_url, check=False)), statement
    assert not target.exists()


def test_d20_escapes_and_statement_kinds_on_postgres(pg_url):
    table = run_cli("query", "select E'\\x1b]0;pwned\\x07' as title", "--db", pg_url).stdout
    assert "\x1b" not in table and "\\x1b]0;pwned\\x07" in table
    assert "on" in run_cli("query", "show transaction_read_only", "--db", pg_url).stdout
    assert "Result" in run_cli("query", "explain select 1", "--db", pg_url).stdout
    assert run_cli("query", "values (1, 'a')", "--format", "csv", "--db", pg_url).stdout == "column1,column2\n1,a\n"


# D6 (review 2026-12-01-reliability-probe-2, PG04–PG49): as a superuser these wrote server files, ran a shell
# command and deleted rows through dblink; the check read the text with regular expressions.
def test_d6_hidden_statements_and_functions_are_refused_and_run_nothing(pg_url, postgres, tmp_path):
    bindir, _, port = postgres
    run_cli("init", "--no-seed", "--db", pg_url)
    os.chmod(tmp_path, 0o777)  # the server (user postgres) could write here: the refusal is what stops it
    ran, copied = tmp_path / "PROGRAM_RAN", tmp_path / "copy_out.txt"
    database = pg_url.rsplit("/", 1)[1]
    with _psql(pg_url) as conn:
        conn.execute("create extension if not exists dblink")
        conn.execute("insert into model (name) values ('kept')")
    other = f"dbname={database} user=postgres host=127.0.0.1 port={port}"
    for statement in (
            f"/* /* */ select */ copy (select 1) to program 'touch {ran}'",  # PG05
            f"/* /* */ select */ copy (select 'pwned') to '{copied}'",  # PG04
            "/* /* */ select */ set default_transaction_read_only = off",  # PG06
            "/* /* */ select */ reset role", "/*/**/*/ commit",
            "select pg_read_file/**/('/etc/hostname')",  # PG30
            'select U&"\\0070g_read_file"(\'/etc/hostname\')',  # PG32
            "select U&\"!0070g_read_file\" UESCAPE '!' ('/etc/hostname')",
            "select lo_import/**/('/etc/hostname')",  # PG35
            f"select dblink_exec/**/('{other}', 'delete from model')",  # PG49
            f"select * from dblink/**/('{other}', 'select 1') as t(n int)",  # PG38
            "select query_to_xml('select pg_read'||'_file(''/etc/hostname'')', true, true, '')",  # PG39
            "select set_config('role', 'postgres', true), 1",
            "select $$ $$, pg_read_file('/etc/hostname')", "select e'\\'', pg_read_file('/etc/hostname')",
            "select 1 /* never closed", "select 'never closed"):
        line = _one_error_line(run_cli("query", statement, "--db", pg_url, check=False))
        assert "refused" in line, (statement, line)
    assert not ran.exists() and not copied.exists()
    with _psql(pg_url) as conn:
        assert conn.execute("select count(*) from model where name = 'kept'").fetchone()[0] == 1
    # what reads stays allowed: strings and comments that merely mention those words
    allowed = run_cli("query", "/* copy */ select 'pg_read_file(' as \"copy\", $t$ dblink $t$ as x",
                      "--format", "csv", "--db", pg_url)
    assert allowed.stdout.splitlines() == ["copy,x", "pg_read_file(, dblink "]


def test_d6_a_superuser_session_reads_as_pg_read_all_data(pg_url, tmp_path, monkeypatch):
    """The role is the guard: with the text check switched off (in-process), a COPY TO PROGRAM and pg_read_file
    written plainly are refused by the server's privileges, and the session is no superuser while the query runs."""
    from typer.testing import CliRunner

    import tpsdb.query
    from tpsdb.cli import app

    run_cli("init", "--no-seed", "--db", pg_url)
    who = run_cli("query", "select current_user as u, (select rolsuper from pg_roles where rolname = current_user) "
                  "as s", "--format", "csv", "--db", pg_url)
    assert who.stdout.splitlines() == ["u,s", "pg_read_all_data,False"]
    assert run_cli("query", "select count(*) as n from measurement_full", "--format", "csv",
                   "--db", pg_url).stdout.splitlines() == ["n", "0"]
    os.chmod(tmp_path, 0o777)
    ran = tmp_path / "PROGRAM_RAN"
    monkeypatch.setattr(tpsdb.query, "check_postgres_statement", lambda sql: None)
    # (set_config('role', …) could switch back, the session user being a superuser: the text check refuses it)
    for statement in (f"copy (select 1) to program 'touch {ran}'", "select pg_read_file('/etc/hostname')"):
        result = CliRunner().invoke(app, ["query", statement, "--db", pg_url])
        assert result.exit_code == 2, (statement, result.stdout)
        assert "permission denied" in result.stderr or "must be" in result.stderr, result.stderr
    assert not ran.exists()


def test_l9_a_postgres_serve_copy_is_removed_on_sigterm(pg_url, tmp_path):
    """Probe 2, L9: uvicorn re-raises SIGTERM after its shutdown, whose default action ended the process before
    the temporary folder was removed; `/tmp/tpsdb-serve-*/tpsdb.sqlite` (the data) stayed."""
    import signal
    import sys
    import urllib.request

    from conftest import ROOT, _free_port

    run_cli("init", "--no-seed", "--db", pg_url)
    port, temporary = _free_port(), tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(temporary)}
    with open(tmp_path / "serve.log", "w") as log:
        server = subprocess.Popen([sys.executable, "-m", "tpsdb", "--db", pg_url, "serve", "--port", str(port)],
                                  cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/tpsdb.json", timeout=2).read()
                break
            except OSError:
                time.sleep(0.3)
        assert [p.name[:12] for p in temporary.iterdir()] == ["tpsdb-serve-"]
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == -signal.SIGTERM  # still ends as a SIGTERM'd process
    finally:
        if server.poll() is None:
            server.kill()
    assert list(temporary.iterdir()) == []


def test_m3_json_columns_markdown_and_whole_cells_on_postgres(pg_url):
    """First use 2, M3 (issue 20 item 5) on PostgreSQL: JSON columns as JSON values, Markdown, nothing cut."""
    statement = ("select '[\"software.version: missing\"]'::text as reasons, '{\"a\": 1}'::json as j, "
                 f"'{'x' * 100}' as long_text")
    rows = json.loads(run_cli("query", statement, "--format", "json", "--db", pg_url).stdout)
    assert rows == [{"reasons": ["software.version: missing"], "j": {"a": 1}, "long_text": "x" * 100}]
    table = run_cli("query", statement, "--db", pg_url).stdout
    assert "x" * 100 in table and "…" not in table
    markdown = run_cli("query", "select 1 as n, 'a|b' as t", "--format", "md", "--db", pg_url).stdout
    assert markdown == "| n | t |\n| ---: | --- |\n| 1 | a\\|b |\n"


def test_d6_which_role_a_query_runs_as(pg_url):
    """A role that only reads runs as itself; one that may reach the server's files runs as pg_read_all_data if
    it is a member, and is refused otherwise (PostgreSQL's trust login: no passwords here)."""
    run_cli("init", "--no-seed", "--db", pg_url)
    with _psql(pg_url) as conn:  # roles belong to the cluster, which the session shares: names of this test's own
        for statement in ("create role d6_reader login", "grant pg_read_all_data to d6_reader",
                          "create role d6_program login", "grant pg_execute_server_program to d6_program",
                          "create role d6_both login",
                          "grant pg_execute_server_program, pg_read_all_data to d6_both",
                          "create role d6_under_superuser login", "grant postgres to d6_under_superuser"):
            conn.execute(statement)
    who = "select current_user as u, count(*) as n from measurement_full"

    def as_role(role: str):
        return run_cli("query", who, "--format", "csv", "--db", pg_url.replace("postgres@", f"{role}@"),
                       check=False)

    assert as_role("d6_reader").stdout.splitlines() == ["u,n", "d6_reader,0"]
    assert as_role("d6_both").stdout.splitlines() == ["u,n", "pg_read_all_data,0"]
    for role in ("d6_program", "d6_under_superuser"):
        line = _one_error_line(as_role(role))
        assert f"the role {role} is a superuser or may reach the server's files" in line, line
