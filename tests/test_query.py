"""`tpsdb query` on a real SQLite file: read-only, one statement, bounded in time and rows, and safe to print.

The defects are those of the reliability probe (D1, D6, D7, D19, D20; rows Q1–Q17 of its section 1.2).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT, SEED_MEASUREMENTS
from tpsdb.cli import app

INFINITE = "with recursive r(n) as (select 1 union all select n+1 from r) select count(*) from r"
TEN_MILLION = ("with recursive r(n) as (select 1 union all select n+1 from r where n < 10000000) "
               "select n, 'some padding text' as pad from r")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, seeded_template):
    return Path(shutil.copy(seeded_template, tmp_path_factory.mktemp("seeded") / "seeded.sqlite"))


@pytest.fixture
def db(seeded, tmp_path):
    """A copy of the seeded database (WAL mode, like every tpsdb database), alone in its folder."""
    folder = tmp_path / "db"
    folder.mkdir()
    path = folder / "tpsdb.sqlite"
    shutil.copy(seeded, path)
    return path


def query(*args: str):
    return CliRunner().invoke(app, ["query", *args])


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_refused(result, *words: str) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: query: "), result.stderr
    for word in words:
        assert word in lines[0]


@pytest.mark.parametrize("statement", [
    "drop table measurement", "insert into model (name) values ('x')", "update measurement set tokens_per_second = 1",
    "delete from measurement",  # Q1
    "PRAGMA writable_schema=ON",  # Q2
    "PRAGMA user_version=5", "ANALYZE", "REINDEX",  # Q4
    "PRAGMA wal_checkpoint(TRUNCATE)", "PRAGMA optimize",  # Q5
    "select load_extension('nothing.so')",  # Q10
    "select 1; drop table measurement", "select 1; select 2",  # Q11
    "with x as (select 1) delete from measurement",  # Q12
    "create temp table t as select * from measurement",  # Q13
    "commit", "begin", "savepoint a", "detach main",
])
def test_q_anything_but_reading_is_refused(db, statement):
    before = digest(db)
    assert_refused(query(statement, "--db", str(db)))
    assert digest(db) == before
    assert os.listdir(db.parent) == [db.name]


def test_q3_journal_mode_change_is_refused_in_words(db):
    result = query("PRAGMA journal_mode=DELETE", "--db", str(db))
    assert_refused(result, "refused", "PRAGMA journal_mode=DELETE", "read-only")
    assert "disk I/O" not in result.stderr


def test_d6a_vacuum_into_writes_no_file(db, tmp_path):
    target = tmp_path / "copy.sqlite"
    assert_refused(query(f"VACUUM INTO '{target}'", "--db", str(db)), "refused", "VACUUM INTO")
    assert not target.exists()
    empty = tmp_path / "empty-file"  # Q9: an existing empty file is not filled either
    empty.touch()
    assert_refused(query(f"VACUUM INTO '{empty}'", "--db", str(db)))
    assert empty.stat().st_size == 0


def test_d6b_attach_creates_no_file(db, tmp_path):
    target = tmp_path / "new-file"
    assert_refused(query(f"ATTACH DATABASE '{target}' AS x", "--db", str(db)), "refused", "ATTACH")
    assert_refused(query(f"ATTACH '{target}' AS x; create table x.t(a)", "--db", str(db)))  # Q7
    assert not target.exists()


@pytest.mark.parametrize("name", ["a#b.sqlite", "a?mode=rwc.sqlite", "a%23b.sqlite"])
def test_d6c_a_hash_or_question_mark_in_the_path_opens_that_file(seeded, tmp_path, name):
    path = tmp_path / name
    shutil.copy(seeded, path)
    result = query("select count(*) as n from measurement", "--format", "csv", "--db", str(path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["n", str(SEED_MEASUREMENTS)]
    assert_refused(query("create table pwned(a)", "--db", str(path)))
    assert sorted(os.listdir(tmp_path)) == [name]  # no file `a` was created beside it


def test_d6c_a_missing_database_is_not_created(tmp_path):
    path = tmp_path / "missing.sqlite"
    assert_refused(query("select 1", "--db", str(path)), str(path))
    assert not path.exists()


def test_reading_statements_and_table_functions_answer(db):
    for statement, expected in [("pragma table_info(measurement)", "tokens_per_second"),
                                ("select name from pragma_table_info('measurement')", "tokens_per_second"),
                                ("select key from json_each('{\"backend\": 1}')", "backend"),
                                ("explain select 1", "Init"), ("pragma journal_mode", "wal")]:
        result = query(statement, "--db", str(db))
        assert result.exit_code == 0 and expected in result.stdout, (statement, result.stdout, result.stderr)


def test_d7_an_endless_statement_stops_at_the_timeout(db):
    started = time.monotonic()
    result = query(INFINITE, "--timeout", "1", "--db", str(db))
    elapsed = time.monotonic() - started
    assert_refused(result)
    assert result.stderr == "error: query: stopped after 1 s (--timeout)\n"
    assert elapsed < 2.5, elapsed


def test_d7_rows_are_limited_and_the_cut_is_said(db):
    result = query(TEN_MILLION, "--limit", "5", "--format", "csv", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["n,pad"] + [f"{n},some padding text" for n in range(1, 6)]
    assert "first 5 rows" in result.stderr and "--limit 0" in result.stderr
    exact = query("select 1 as n union all select 2", "--limit", "2", "--db", str(db))
    assert exact.stderr == "" and "(2 rows)" in exact.stdout  # exactly the limit: nothing was cut
    assert_refused(query("select 1", "--limit", "-1", "--db", str(db)))
    assert_refused(query("select 1", "--timeout", "0", "--db", str(db)))


# A small Python between the test and the command: on Linux a child's peak memory starts from its parent's
# (fork, then exec, keep the high-water mark), and the test process may be large by now.
_LAUNCHER = """import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss, file=sys.stderr)
"""


def peak_kb(args: list[str], out) -> tuple[int, int]:
    """Exit status and peak resident memory (KB) of `python -m tpsdb ARGS` writing to `out`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", _LAUNCHER, sys.executable, "-m", "tpsdb", *args], stdout=out,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, timeout=300)
    status, kb = result.stderr.split()[-2:]
    return int(status), int(kb)


def test_d7_rows_are_streamed_so_memory_stays_flat(db, tmp_path):
    """Q15: a million rows with no limit go out as they come; the old code held them all (fetchall)."""
    million = TEN_MILLION.replace("10000000", "1000000")
    with open(tmp_path / "all.csv", "w") as out:
        status, kb = peak_kb(["query", million, "--limit", "0", "--format", "csv", "--timeout", "60",
                              "--db", str(db)], out)
    assert status == 0
    with open(tmp_path / "all.csv") as written:
        assert sum(1 for _ in written) == 1_000_001
    assert kb < 120_000, kb  # about 60 MB, as for `select 1`; holding the rows took hundreds of MB


def test_d19_query_leaves_no_side_files(db):
    assert os.listdir(db.parent) == [db.name]
    for args in (["select count(*) from measurement_full"], [INFINITE, "--timeout", "0.2"], [TEN_MILLION, "--limit", "3"],
                 ["delete from measurement"]):
        query(*args, "--db", str(db))
        assert os.listdir(db.parent) == [db.name], args


def test_d19_query_reads_a_database_on_read_only_media(db):
    """The folder is bind-mounted read-only in a user namespace: SQLite cannot create the -wal/-shm of the WAL
    database there, and the query still answers (as immutable) without writing anything."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    folder = str(db.parent)
    script = ('mount --bind -o ro "$1" "$1" && ! touch "$1/probe" 2>/dev/null && shift && exec "$@"')
    command = ["unshare", "-rm", "sh", "-c", script, "sh", folder, sys.executable, "-m", "tpsdb", "query",
               "select count(*) as n from measurement", "--format", "csv", "--db", str(db)]
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"user namespaces unavailable: {probe.stderr.decode().strip()}")
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["n", str(SEED_MEASUREMENTS)]
    assert os.listdir(folder) == [db.name]


def test_d20_the_table_shows_control_characters_escaped(db):
    statement = "select char(27) || ']0;pwned' || char(7) as title, 'a' || char(10) || 'b' as two_lines"
    table = query(statement, "--db", str(db))
    assert table.exit_code == 0
    assert "\x1b" not in table.stdout and "\x07" not in table.stdout
    assert "\\x1b]0;pwned\\x07" in table.stdout and "a\\nb" in table.stdout
    header = query("select 1 as \"\x1b[2J\"", "--db", str(db))
    assert "\x1b" not in header.stdout and "\\x1b[2J" in header.stdout
    data = query(statement, "--format", "csv", "--db", str(db))  # csv and json stay the data itself
    assert "\x1b]0;pwned\x07" in data.stdout
    assert '"\\u001b]0;pwned\\u0007"' in query(statement, "--format", "json", "--db", str(db)).stdout


def test_output_formats_are_unchanged(db):
    statement = "select hardware, tokens_per_second from measurement_full order by measurement_id limit 2"
    as_json = query(statement, "--format", "json", "--db", str(db)).stdout
    assert as_json.startswith('[\n {\n  "hardware": ') and as_json.endswith("\n }\n]\n")
    assert query("select 1 where 0", "--format", "json", "--db", str(db)).stdout == "[]\n"
    table = query(statement, "--db", str(db)).stdout.splitlines()
    assert table[0].split() == ["hardware", "tokens_per_second"] and table[-1] == "(2 rows)"


# ------------------------------------------------------------------------ review 2026-12-01 (probe 2), first use 2
def test_d9_a_slow_single_step_does_not_outrun_the_timeout(db):
    """D9: the progress handler ran every 10,000 steps, and one step of randomblob(1e8) takes ~0.2 s: `--timeout
    1` on 120 such rows ran 20.6 s. The interrupt now comes at the deadline. (A process of its own: where a step
    outlasts the interrupt, the command ends its process, which must not be the test's.)"""
    slow = ("with recursive r(n) as (select 1 union all select n+1 from r where n < 120) "
            "select sum(length(randomblob(100000000))) from r")
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tpsdb", "query", slow, "--timeout", "0.5", "--db", str(db)],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            timeout=120)
    elapsed = time.monotonic() - started
    assert (result.returncode, result.stderr) == (2, "error: query: stopped after 0.5 s (--timeout)\n")
    assert elapsed < 6, elapsed  # 0.5 s, a step, and ~1-2 s of interpreter start-up on a busy machine; was ~20 s


def test_d9_a_step_that_ignores_the_interrupt_is_stopped_hard(db, tmp_path):
    """One randomblob(4e8) is one step of a second or more, which no interrupt shortens: the command ends its
    process overrun_grace() after the timeout, with the same error line, and leaves no half --out file."""
    out = tmp_path / "out.csv"
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tpsdb", "query", "select length(randomblob(400000000)) as n",
                             "--timeout", "0.1", "--format", "csv", "--out", str(out), "--db", str(db)],
                            capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            timeout=60)
    elapsed = time.monotonic() - started
    assert (result.returncode, result.stderr) == (2, "error: query: stopped after 0.1 s (--timeout)\n")
    assert os.listdir(tmp_path) == ["db"] and elapsed < 5, elapsed  # ~1 s of interpreter start-up on top


@pytest.mark.parametrize("sql, overran", [
    ("select length(randomblob(200000000))", True),
    ("with recursive r(n) as (select 1 union all select n+1 from r) select count(*) from r", False)])
def test_d9_the_watchdog_calls_the_hard_stop_only_while_sqlite_overruns(monkeypatch, sql, overran):
    """One randomblob(2e8) is one step (~0.3 s or more) that no interrupt shortens: with a 10 ms timeout and a
    20 ms grace the hard stop is called; a statement that stops at the interrupt never calls it."""
    import sqlite3

    import tpsdb.query

    monkeypatch.setattr(tpsdb.query, "overrun_grace", lambda timeout: 0.02)
    conn = sqlite3.connect(":memory:")
    calls: list[float] = []
    watchdog = tpsdb.query._Watchdog(conn, 0.01, lambda: calls.append(time.monotonic()))
    watchdog.start()
    try:
        watchdog.call(lambda: conn.execute(sql).fetchall())
    except sqlite3.OperationalError as error:
        assert str(error) == "interrupted"
    time.sleep(0.1)
    watchdog.stop()
    conn.close()
    assert bool(calls) == overran


def test_l7_fts3_tokenizer_is_refused(db):
    """L7: it returned a pointer into the process's memory, and its two-argument form registers a tokenizer."""
    for statement in ("select fts3_tokenizer('simple')", "select FTS3_TOKENIZER('simple', x'4141414141414141')"):
        assert_refused(query(statement, "--db", str(db)), "refused: fts3_tokenizer()")


LONG = "https://github.com/ggml-org/llama.cpp/blob/4c7e9893c4ca8eec1a2bd3a5d2a4c9f6e0b1c2d3/docs/a-long-file-name.md"


def test_m3_table_cells_are_whole_unless_max_width_is_asked(db):
    """First use 2, M3: every cell was cut at 60 characters, so a URL copied from the table was broken."""
    statement = f"select '{LONG}' as source_url, 1 as n union all select 'short', 2"
    table = query(statement, "--db", str(db))
    assert table.exit_code == 0 and LONG in table.stdout.splitlines()[2] and "…" not in table.stdout
    cut = query(statement, "--max-width", "20", "--db", str(db)).stdout.splitlines()
    assert cut[2].startswith(LONG[:19] + "…") and len(cut[1].split()[0]) == 20
    assert_refused(query(statement, "--max-width", "-1", "--db", str(db)), "--max-width")


def test_m3_markdown_table(db):
    statement = "select 'a|b' as name, 59.02 as tps, '<b>x</b>' || char(10) || 'y' as note, null as empty"
    result = query(statement, "--format", "md", "--db", str(db))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["| name | tps | note | empty |", "| --- | ---: | --- | --- |",
                                          "| a\\|b | 59.02 | \\<b>x\\</b>\\\\ny |  |"]
    assert query("select 1 as n where 0", "--format", "md", "--db", str(db)).stdout == "| n |\n| --- |\n"


def test_m3_json_columns_are_json_values(db):
    """M3: `reasons` came out as a string holding JSON inside the JSON."""
    statement = ("select reasons, candidate_json, '[not json' as reasons_text from rejection_full "
                 "order by rejection_id limit 1")
    row = json.loads(query(statement, "--format", "json", "--db", str(db)).stdout)[0]
    assert isinstance(row["reasons"], list) and all(isinstance(r, str) for r in row["reasons"])
    assert isinstance(row["candidate_json"], dict) and row["reasons_text"] == "[not json"
    broken = query("select '[not json' as reasons", "--format", "json", "--db", str(db)).stdout
    assert json.loads(broken) == [{"reasons": "[not json"}]  # text that only looks like JSON stays text
    csv_out = query("select reasons from rejection_full order by rejection_id limit 1", "--format", "csv",
                    "--db", str(db)).stdout
    assert csv_out.splitlines()[1].startswith('"[')  # csv keeps the stored text


def test_json_columns_are_every_json_text_column_of_the_schema():
    from sqlmodel import SQLModel

    import tpsdb.models  # noqa: F401 (the tables)
    from tpsdb.query import JSON_COLUMNS

    described = {column.name for table in SQLModel.metadata.tables.values() for column in table.columns
                 if column.name.endswith("_json") or "JSON" in str(column.comment or "") or "JSON" in (column.doc or "")}
    fields = {name for model in SQLModel.__subclasses__() for name, field in getattr(model, "model_fields", {}).items()
              if (field.description or "").startswith("JSON")}
    assert described | fields <= JSON_COLUMNS and {"reasons", "candidate_json"} <= JSON_COLUMNS


def test_out_writes_the_file_whole_or_not_at_all(db, tmp_path):
    target = tmp_path / "rows.md"
    result = query("select 1 as n", "--format", "md", "--out", str(target), "--db", str(db))
    assert result.exit_code == 0 and result.stdout == "" and target.read_text() == "| n |\n| ---: |\n| 1 |\n"
    failed = query("select nope", "--out", str(tmp_path / "never.csv"), "--db", str(db))
    assert failed.exit_code == 2 and sorted(os.listdir(tmp_path)) == ["db", "rows.md"]
    missing = query("select 1", "--out", str(tmp_path / "no" / "such.csv"), "--db", str(db))
    assert missing.exit_code == 2 and "No such file or directory" in missing.stderr


# D6 (probe 2): the PostgreSQL statement check, without a server (tests/test_postgres.py runs them on one).
@pytest.mark.parametrize("statement, refused", [
    ("/* /* */ select */ copy (select 1) to program 'touch x'", "COPY"),
    ("/*/**/*/ commit", "COMMIT"), ("((/* a */ (set role postgres)))", "SET"),
    ("select pg_read_file/**/('/etc/hostname')", "pg_read_file()"),
    ('select "pg_read_file"(\'/x\')', "pg_read_file()"),
    ("select pg_catalog . PG_READ_FILE ('/x')", "pg_read_file()"),
    ('select U&"\\0070g_read_file"(\'/x\')', "pg_read_file()"),
    ('select u&"\\+000070g_read_file"(\'/x\')', "pg_read_file()"),
    ("select U&\"!0070g_read_file\" /* c */ UESCAPE '!' ('/x')", "pg_read_file()"),
    ("select DbLink_Exec('', 'delete from measurement')", "dblink_exec()"),
    ("select query_to_xml('select 1', true, true, '')", "query_to_xml()"),
    ("select set_config('role', 'postgres', true)", "set_config()"),
    ("select e'\\'', lo_import('/x')", "lo_import()"), ("select $a$ $b$ $a$, pg_ls_dir('.')", "pg_ls_dir()"),
    ("select 'it''s', ts_stat('select 1')", "ts_stat()"),
    ("select 1 /* open", "inside a /* comment */"), ("select $x$ open", "$x$-quoted"),
    ("select 'open", "quoted string"), ('select "open', "quoted name"),
])
def test_d6_the_postgres_check_reads_text_as_postgresql_does(statement, refused):
    from tpsdb.query import QueryError, check_postgres_statement

    with pytest.raises(QueryError) as caught:
        check_postgres_statement(statement)
    message = str(caught.value)
    assert message.startswith("query: refused: ") and refused in message, message


def test_d6_reading_statements_pass_the_postgres_check():
    from tpsdb.query import check_postgres_statement

    for statement in ("select 'pg_read_file(' as x -- dblink(", "(select 1) union (select 2)",
                      "with t as (select $1::int) table t", "select $tag$ copy $tag$ , e'\\\\' , U&'\\0041'",
                      "explain select 1", "show search_path", "values (1)", "select a$b from t",
                      "/* select */ select 1 /* nested /* comment */ set_config( */",
                      'select "PG_READ_FILE"(1)'):  # quoted, the case is kept: a function PostgreSQL does not have
        check_postgres_statement(statement)
