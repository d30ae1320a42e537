"""The CLI as a user runs it: a subprocess on a real SQLite file."""

import copy
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest


from conftest import ROOT, run_cli, write_jsonl

COMMANDS = ["init", "summary", "export-seed", "reference", "validate", "add", "export", "query", "ingest", "refresh",
            "sources", "reparse"]  # tables, publish, ceiling: tests/test_publish.py


def many_records(record, n):
    out = []
    for i in range(n):
        r = copy.deepcopy(record)
        r["tokens_per_second"] = round(40 + i * 0.5, 2)
        r["source"]["quote"] = f"| gpt-oss 120B MXFP4 MoE | tg32 | {r['tokens_per_second']:.2f} ± 0.17 |"
        out.append(r)
    return out


def test_every_command_has_help():
    top = run_cli("--help", subprocess=True).stdout  # one real `python -m tpsdb`; the rest run in this process
    for command in COMMANDS:
        assert command in top
        result = run_cli(command, "--help")
        assert "Usage:" in result.stdout and len(result.stdout) > 200


def test_validate_exit_codes_and_reasons(tmp_path, record):
    good = write_jsonl(tmp_path / "good.jsonl", [record])
    assert run_cli("validate", str(good), "--db", str(tmp_path / "none.sqlite"), check=False).returncode == 0
    bad = copy.deepcopy(record)
    bad["quantization"] = "4-bit"
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [record, bad])
    result = run_cli("validate", str(mixed), check=False)
    assert result.returncode == 1
    assert result.stdout.strip() == f'{mixed}:2: quantization: not a named format ("4-bit")'


def test_unreadable_input_is_a_clear_error(tmp_path, empty_db):
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    result = run_cli("add", str(broken), db=empty_db, check=False)
    assert result.returncode == 2 and "broken.json" in result.stderr and "Traceback" not in result.stderr
    missing = run_cli("add", str(tmp_path / "nope.jsonl"), db=empty_db, check=False)
    assert missing.returncode == 2 and "nope.jsonl" in missing.stderr


def test_add_is_idempotent_and_keeps_rejections(tmp_path, empty_db, record):
    bad = copy.deepcopy(record)
    bad["software"].pop("version")
    path = write_jsonl(tmp_path / "in.jsonl", many_records(record, 3) + [bad])
    first = run_cli("add", str(path), db=empty_db, check=False)
    assert first.returncode == 1  # a rejection: as validate says (issue 13 item 5)
    assert "3 measurements added" in first.stdout and "1 rejections added" in first.stdout
    assert f"{path}:4: software.version: missing" in first.stdout
    dump_before = run_cli("export", db=empty_db).stdout
    second = run_cli("add", str(path), db=empty_db, check=False)
    assert second.returncode == 1
    second = second.stdout
    assert "0 measurements added, 3 already stored" in second and "0 rejections added, 1 already stored" in second
    assert run_cli("export", db=empty_db).stdout == dump_before
    rejections = [json.loads(line) for line in run_cli("export", "--rejections", db=empty_db).stdout.splitlines()]
    assert rejections == [bad]  # the candidate as given: `add` of it re-creates the rejection
    rows = json.loads(run_cli("query", "select reasons, source_url from rejection_full", "--format", "json",
                              db=empty_db).stdout)
    assert rows == [{"reasons": ["software.version: missing"], "source_url": record["source"]["url"]}]


def test_export_round_trip(tmp_path, empty_db, record):
    moe = copy.deepcopy(record)
    moe["model"]["active_params_b"] = 5.13
    moe["source"]["via"] = {"title": "An article", "publisher": "QDNA", "published_at": "2026-08-30", "url": None}
    moe["software"]["options"] = {"backend": "CUDA", "fa": 1, "ubatch": 2048, "dev": "CUDA0"}
    moe["tokens_per_second"] = 58.0
    moe["source"]["quote"] = "58.00"
    path = write_jsonl(tmp_path / "in.jsonl", many_records(record, 4) + [moe])
    run_cli("add", str(path), db=empty_db)
    first = run_cli("export", db=empty_db).stdout
    assert len(first.splitlines()) == 5
    (tmp_path / "export.jsonl").write_text(first, encoding="utf-8")
    other = tmp_path / "other.sqlite"
    run_cli("init", "--no-seed", db=other)
    run_cli("add", str(tmp_path / "export.jsonl"), db=other)
    assert run_cli("export", db=other).stdout == first
    csv_out = run_cli("export", "--format", "csv", db=other).stdout.splitlines()
    assert csv_out[0].startswith("source.url,source.retrieved_at") and len(csv_out) == 6


def test_query_is_read_only(tmp_path, empty_db, record):
    run_cli("add", str(write_jsonl(tmp_path / "in.jsonl", [record])), db=empty_db)
    digest = hashlib.sha256(empty_db.read_bytes()).hexdigest()
    for statement in ("delete from measurement", "drop view measurement_full", "insert into model (name) values ('x')",
                      "update hardware set name = 'y'"):
        result = run_cli("query", statement, db=empty_db, check=False)
        assert result.returncode == 2
        assert "read-only" in result.stderr and "Traceback" not in result.stderr
    assert hashlib.sha256(empty_db.read_bytes()).hexdigest() == digest
    table = run_cli("query", "select hardware, model, quantization, software_version, tokens_per_second "
                    "from measurement_full", db=empty_db).stdout
    assert "NVIDIA DGX Spark" in table and "b6918 (2f68ce7cf)" in table and "59.02" in table
    csv_out = run_cli("query", "select count(*) as n from measurement_full", "--format", "csv", db=empty_db).stdout
    assert csv_out.splitlines() == ["n", "1"]
    bad = run_cli("query", "select nope from measurement_full", db=empty_db, check=False)
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_commands_refuse_a_database_without_schema(tmp_path):
    result = run_cli("export", db=tmp_path / "fresh.sqlite", check=False)
    assert result.returncode == 2 and "tpsdb init" in result.stderr


def test_validate_and_add_use_the_reference_bandwidth_for_the_ceiling(tmp_path, record, seeded_db):
    seeded = seeded_db  # the seed holds Apple M2 Ultra (76-core GPU) at 800 GB/s, with its vendor page
    record["hardware"] = {"name": "Apple M2 Ultra (76-core GPU)"}
    record["model"] = {"name": "Llama 2 7B", "params_b": 6.74, "file_size_gb": 3.79}
    record["quantization"] = "Q4_0"
    record["tokens_per_second"] = 250.0  # above 800 / 3.79 = 211.1
    record["source"]["quote"] = "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | tg128 | 250.00 ± 0.5 |"
    path = write_jsonl(tmp_path / "fast.jsonl", [record])
    result = run_cli("validate", str(path), db=seeded, check=False)
    assert result.returncode == 1 and "tokens_per_second: above_ceiling: 250 > 211.08" in result.stdout
    # no database there: the reference data `init` loads gives the same answer (first-use review, M6)
    absent = run_cli("validate", str(path), "--db", str(tmp_path / "absent.sqlite"), check=False)
    assert absent.returncode == 1 and absent.stdout == result.stdout
    assert not (tmp_path / "absent.sqlite").exists()
    assert "1 rejections added" in run_cli("add", str(path), db=seeded, check=False).stdout


def records_for_bytes(record, size):
    """Enough records (as many_records gives them) to fill `size` bytes of JSONL."""
    return size // len(json.dumps(record)) + 1


def test_large_files_are_validated_in_worker_processes_with_the_same_results(tmp_path, empty_db, record):
    from tpsdb.bulk import PARALLEL_MIN_BYTES

    n = records_for_bytes(record, PARALLEL_MIN_BYTES) + 500
    records = many_records(record, n)
    bad = copy.deepcopy(record)
    bad["quantization"] = "4-bit"
    records.insert(n // 2, bad)
    path = write_jsonl(tmp_path / "big.jsonl", records)
    assert path.stat().st_size > PARALLEL_MIN_BYTES
    checked = run_cli("validate", str(path), db=empty_db, check=False)  # against the database add stores into
    assert checked.returncode == 1
    assert checked.stdout == f'{path}:{n // 2 + 1}: quantization: not a named format ("4-bit")\n'
    added = run_cli("add", str(path), db=empty_db, check=False, subprocess=True)  # its workers forked from a tpsdb
    assert added.returncode == 1
    out = added.stdout
    assert f"{n} measurements added" in out and "1 rejections added" in out
    as_array = tmp_path / "array.sqlite"  # the same records as one JSON document
    run_cli("init", "--no-seed", db=as_array)
    document = tmp_path / "big.json"
    document.write_text(json.dumps(records, indent=1), encoding="utf-8")
    assert run_cli("add", str(document), db=as_array, check=False).returncode == 1
    small = tmp_path / "small.sqlite"  # the same records one file at a time below the threshold: same export
    run_cli("init", "--no-seed", db=small)
    per_file = records_for_bytes(record, PARALLEL_MIN_BYTES) // 2
    for start in range(0, len(records), per_file):
        run_cli("add", str(write_jsonl(tmp_path / f"part{start}.jsonl", records[start:start + per_file])), db=small,
                check=False)
    for other in (as_array, small):
        assert run_cli("export", db=other).stdout == run_cli("export", db=empty_db).stdout
        assert run_cli("export", "--rejections", db=other).stdout == run_cli("export", "--rejections", db=empty_db).stdout


def test_a_broken_line_in_a_large_file_stores_nothing(tmp_path, empty_db, record):
    from tpsdb.bulk import PARALLEL_MIN_BYTES

    lines = [json.dumps(r) for r in many_records(record, records_for_bytes(record, PARALLEL_MIN_BYTES) + 10)]
    broken_at = len(lines) - 7
    lines[broken_at] = '{"source": '
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("add", str(path), db=empty_db, check=False)
    assert result.returncode == 2 and f"broken.jsonl:{broken_at + 1}: not JSON" in result.stderr
    assert run_cli("export", db=empty_db).stdout == ""
    lines[broken_at] = json.dumps(record)[:-1] + ', "note": "caf\xe9"}'
    path.write_bytes("\n".join(lines).encode("utf-8").replace(b"caf\xc3\xa9", b"caf\xe9"))  # Latin-1 on one line
    result = run_cli("add", str(path), db=empty_db, check=False)
    assert result.returncode == 2 and f"broken.jsonl:{broken_at + 1}: not UTF-8 text" in result.stderr
    assert run_cli("export", db=empty_db).stdout == ""


def test_record_files_in_every_layout(tmp_path, empty_db, record):
    quoted = copy.deepcopy(record)
    quoted["source"]["quote"] += " \u2028 \u2029 \x85"  # line separators inside a JSON string, written raw
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(record, indent=2), encoding="utf-8")
    raw = tmp_path / "raw.jsonl"
    raw.write_text("\n" + json.dumps(quoted, ensure_ascii=False) + "\r\n\n   \n" + json.dumps(record) + "\n",
                   encoding="utf-8")
    empty = tmp_path / "empty.jsonl"
    empty.write_text(" \n", encoding="utf-8")
    assert "1 measurements added" in run_cli("add", str(pretty), db=empty_db).stdout
    assert "1 measurements added, 1 already stored" in run_cli("add", str(raw), db=empty_db).stdout
    assert "0 measurements added" in run_cli("add", str(empty), db=empty_db).stdout
    exported = [json.loads(line) for line in run_cli("export", db=empty_db).stdout.split("\n") if line]
    assert [r["source"]["quote"] for r in exported] == [record["source"]["quote"], quoted["source"]["quote"]]


def test_killing_a_large_add_leaves_no_worker_behind_and_stores_nothing(tmp_path, empty_db, record):
    if not os.path.isdir("/proc/self"):
        pytest.skip("finds the workers through /proc")
    path = write_jsonl(tmp_path / "large.jsonl", many_records(record, 40_000))

    def processes_of_this_add() -> list[int]:
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                    if str(path).encode() in cmdline.read():
                        found.append(int(pid))
            except OSError:
                continue  # gone meanwhile
        return found

    add = subprocess.Popen([sys.executable, "-m", "tpsdb", "add", str(path), "--db", str(empty_db)], cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while len(processes_of_this_add()) < 3 and add.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert add.poll() is None, "the add ended before its workers could be seen"
    os.kill(add.pid, signal.SIGKILL)
    add.wait()
    deadline = time.monotonic() + 10
    while processes_of_this_add() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_of_this_add() == []
    assert run_cli("export", db=empty_db).stdout == ""


def test_commands_close_the_database_and_leave_no_write_ahead_log(tmp_path, record):
    path = tmp_path / "closed.sqlite"
    # Real processes: what matters is what their exit leaves behind.
    run_cli("init", "--no-seed", db=path, subprocess=True)
    run_cli("add", str(write_jsonl(tmp_path / "one.jsonl", [record])), db=path, subprocess=True)
    run_cli("summary", db=path, subprocess=True)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("closed.sqlite")) == ["closed.sqlite"]
