"""`tpsdb query` on a real SQLite file: read-only, one statement, bounded in time and rows, and safe to print.

The defects are those of the reliability probe (D1, D6, D7, D19, D20; rows Q1–Q17 of its section 1.2).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from conftest import ROOT, SEED_MEASUREMENTS, run_cli
from tpsdb.cli import app

INFINITE = "with recursive r(n) as (select 1 union all select n+1 from r) select count(*) from r"
TEN_MILLION = ("with recursive r(n) as (select 1 union all select n+1 from r where n < 10000000) "
               "select n, 'some padding text' as pad from r")


@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    path = tmp_path_factory.mktemp("seeded") / "seeded.sqlite"
    run_cli("init", db=path)
    return path


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
