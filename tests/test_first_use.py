"""What a new user meets first (issue 20, first-use review 2): the README's two set-up commands pass in order, and
`validate` gives a record the same answer whether or not a database was built."""

from __future__ import annotations

import os

from conftest import ROOT, run_cli, write_jsonl


def _above_the_reference_ceiling(record: dict) -> dict:
    """gpt-oss 120B MXFP4 on a DGX Spark at 99 t/s: above the 98.69 t/s computed from the reference data's
    273 GB/s and the model's 5.1 B active parameters."""
    record["tokens_per_second"] = 99
    record["source"]["quote"] = record["source"]["quote"].replace("59.02 ± 0.17", "99 ± 0.17")
    return record


def test_validate_answers_the_same_with_or_without_a_database(tmp_path, record):
    path = write_jsonl(tmp_path / "fast.jsonl", [_above_the_reference_ceiling(record)])
    built = tmp_path / "built.sqlite"
    run_cli("init", "--no-seed", db=built)
    run_cli("reference", *map(str, sorted((ROOT / "data" / "reference").glob("*.toml"))), db=built)
    answers = [run_cli("validate", str(path), db=where, check=False) for where in (built, tmp_path / "none.sqlite")]
    answers.append(run_cli("validate", str(path), check=False))  # the default database: none in the tests
    for answer in answers:
        assert answer.returncode == 1, answer.stderr
        assert "tokens_per_second: above_ceiling: 99 > 98.69" in answer.stdout
    assert len({answer.stdout for answer in answers}) == 1


def test_the_tests_never_read_the_checkouts_database():
    """`tpsdb init` (the README's first command) builds data/tpsdb.sqlite; the suite must not see it."""
    default = os.environ["TPSDB_DATABASE_URL"]
    assert not default.startswith(str(ROOT)) and not os.path.exists(default)
