"""One consistent command line (issue 13 item 5; first-use review findings 7, 11-19): global --db and --version,
--format json on every data command, one name per concept, one table of exit codes, positions from 1,
re-addable rejections, labelled summary, reference --help. In process, with typer's runner."""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import write_jsonl
from tpsdb import cli

SPARK_TOML = """
[[hardware]]
name = "NVIDIA DGX Spark"
memory_bandwidth_gbs = 273
bandwidth_source_url = "https://vendor.example/dgx-spark"

[[model_file]]
model = "gpt-oss 120B"
quantization = "MXFP4"
file_size_gb = 63.37
size_source_url = "https://vendor.example/gpt-oss"
params_b = 116.83
active_params_b = 5.13
"""

NO_DEVICE_MD = """\
| model                          |       size |     params | backend    | ngl |          test |                  t/s |
| ------------------------------ | ---------: | ---------: | ---------- | --: | ------------: | -------------------: |
| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | CUDA       |  99 |         pp512 |     14000.00 ± 20.00 |
| llama 7B Q4_0                  |   3.56 GiB |     6.74 B | CUDA       |  99 |         tg128 |        180.00 ± 0.50 |
"""


def tpsdb(*args, input: str | None = None):
    """The command in this process: exit_code, stdout, stderr."""
    return CliRunner().invoke(cli.app, [str(a) for a in args], input=input)


def bad_copy(record: dict, **changes) -> dict:
    bad = copy.deepcopy(record)
    bad.update(changes)
    return bad


# ------------------------------------------------------------------------------------------- global options
def test_global_db_reaches_every_command_and_the_commands_own_db_wins(tmp_path, empty_db, record):
    path = write_jsonl(tmp_path / "in.jsonl", [record])
    assert tpsdb("--db", empty_db, "add", path).exit_code == 0
    assert json.loads(tpsdb("--db", empty_db, "export", "--format", "json").stdout)[0]["tokens_per_second"] == 59.02
    assert "measurements: 1 active" in tpsdb("--db", empty_db, "summary").stdout
    # a command of cli_publish too
    assert tpsdb("--db", empty_db, "tables", "machines", "--format", "json").exit_code == 0
    missing = tmp_path / "missing.sqlite"
    wins = tpsdb("--db", empty_db, "summary", "--db", missing)  # the command's own --db wins
    assert wins.exit_code == 2 and f"{missing} does not exist" in wins.stderr
    assert not missing.exists()
    no_global = tpsdb("--db", missing, "ceiling", "--hardware", "x", "--model", "y", "--quantization", "Q4_0")
    assert no_global.exit_code == 2 and f"{missing} does not exist" in no_global.stderr


def test_version():
    from importlib.metadata import version

    result = tpsdb("--version")
    assert result.exit_code == 0 and result.stdout == f"tpsdb {version('tpsdb')}\n"


def test_top_help_has_the_one_exit_code_table():
    text = tpsdb("--help").stdout
    for line in ("0  done", "1  some records rejected", "2  error, nothing stored", "3  busy", "4  internal error"):
        assert line in text
    assert "--db URL" in text and "--version" in text


# -------------------------------------------------------------------------------------- --format json
def test_format_json_on_every_data_command(tmp_path, empty_db, record):
    write = tpsdb("--db", empty_db, "add", write_jsonl(tmp_path / "in.jsonl", [record]))
    assert write.exit_code == 0
    jsonl = tpsdb("--db", empty_db, "export").stdout
    assert json.loads(tpsdb("--db", empty_db, "export", "--format", "json").stdout) == \
        [json.loads(line) for line in jsonl.splitlines()]
    sources = json.loads(tpsdb("--db", empty_db, "sources", "--format", "json").stdout)
    assert {s["key"] for s in sources} >= {"llamacpp-4167"}
    reparse = tpsdb("--db", empty_db, "reparse", "llamacpp-4167", "--format", "json")
    # never refreshed: nothing archived to re-read, which is no failure (the shipped disabled sources are such)
    assert reparse.exit_code == 0 and json.loads(reparse.stdout)[0]["status"] == "unchanged"
    assert json.loads(tpsdb("--db", empty_db, "query", "select 1 as n", "--format", "json").stdout) == [{"n": 1}]
    assert tpsdb("--db", empty_db, "reference", _toml(tmp_path, model_file=False)).exit_code == 0
    ceiling = tpsdb("--db", empty_db, "ceiling", "--hardware", "NVIDIA DGX Spark", "--model", "gpt-oss 120B",
                    "--quantization", "MXFP4", "--format", "json")
    assert ceiling.exit_code == 0 and json.loads(ceiling.stdout)
    for command in ("sources", "reparse", "refresh"):
        assert "--json" not in tpsdb(command, "--help").stdout  # one way to ask for JSON
        names = [] if command == "sources" else ["llamacpp-4167"]
        refused = tpsdb("--db", empty_db, command, "--format", "yaml", *names)
        assert refused.exit_code == 2 and "--format: 'yaml' is not one of table, json" in refused.stderr


def test_export_json_of_an_empty_database_is_an_empty_array(empty_db):
    assert json.loads(tpsdb("--db", empty_db, "export", "--format", "json").stdout) == []


def _toml(tmp_path: Path, model_file: bool = True) -> Path:
    """The DGX Spark's bandwidth, and the model file's size unless a record already gave it."""
    path = tmp_path / "spark.toml"
    path.write_text(SPARK_TOML if model_file else SPARK_TOML.split("[[model_file]]")[0], encoding="utf-8")
    return path


def test_ceiling_quantization_and_names_in_any_case(tmp_path, empty_db):
    tpsdb("--db", empty_db, "reference", _toml(tmp_path))
    first = tpsdb("--db", empty_db, "ceiling", "--hardware", "NVIDIA DGX Spark", "--model", "gpt-oss 120B",
                  "--quantization", "MXFP4", "--format", "json")
    assert first.exit_code == 0, first.output
    for hardware, model, option, quant in (("nvidia dgx spark", "GPT-OSS 120b", "--quantization", "mxfp4"),
                                           ("NVIDIA DGX Spark", "gpt-oss 120B", "--quant", "MXFP4")):  # old name
        again = tpsdb("--db", empty_db, "ceiling", "--hardware", hardware, "--model", model, option, quant,
                      "--format", "json")
        assert again.exit_code == 0 and again.stdout == first.stdout, again.output
    help_text = tpsdb("ceiling", "--help").stdout
    assert "--quantization" in help_text and "--quant " not in help_text
    missing = tpsdb("--db", empty_db, "ceiling", "--hardware", "x", "--model", "y")
    assert missing.exit_code == 2 and "--quantization" in missing.stderr


# ---------------------------------------------------------------------------------------------- exit codes
def test_exit_codes_of_add_ingest_and_validate(tmp_path, empty_db, record):
    good = write_jsonl(tmp_path / "good.jsonl", [record])
    mixed = write_jsonl(tmp_path / "mixed.jsonl", [record, bad_copy(record, quantization="4-bit")])
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(record) + "\n{not json\n", encoding="utf-8")
    for path, code in ((good, 0), (mixed, 1), (broken, 2)):
        assert tpsdb("validate", path, "--db", empty_db).exit_code == code
        assert tpsdb("add", path, "--db", empty_db).exit_code == code
    bench = Path(__file__).parent / "fixtures" / "benchfiles" / "rtx4090-llama2-7b.jsonl"
    ok = tpsdb("--db", empty_db, "ingest", bench, "--source-url", "https://example.org/ok",
               "--hardware", "NVIDIA GeForce RTX 4090")
    assert ok.exit_code == 0, ok.output
    no_device = tmp_path / "nohw.md"
    no_device.write_text(NO_DEVICE_MD, encoding="utf-8")
    some = tpsdb("--db", empty_db, "ingest", no_device, "--source-url", "https://example.org/nohw")
    assert some.exit_code == 1
    nothing = tmp_path / "notes.md"
    nothing.write_text("no benchmark here\n", encoding="utf-8")
    error = tpsdb("--db", empty_db, "ingest", nothing, "--source-url", "https://example.org/x")
    assert error.exit_code == 2 and "nothing was stored" in error.stderr


def test_an_internal_error_has_its_own_exit_code_4(empty_db, monkeypatch, capsys):
    def bug(engine):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "summary_text", bug)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--db", str(empty_db), "summary"])
    assert exit_.value.code == 4
    err = capsys.readouterr().err
    assert err.startswith("error: internal error (RuntimeError: a bug)") and "Traceback" not in err


# ------------------------------------------------------------------------------------------------ validate
def test_validate_reports_every_bad_line_from_1_and_goes_on(tmp_path, empty_db, record):
    second = bad_copy(record, quantization="4-bit")
    third = copy.deepcopy(record)
    third["software"].pop("version")
    lines = [json.dumps(record), "{not json", json.dumps(second), "", "42", json.dumps(third), "[1"]
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = tpsdb("validate", path, "--db", empty_db)
    assert result.exit_code == 2  # a line could not be read: 2, even with rejections
    assert result.stdout.splitlines() == [f'{path}:3: quantization: not a named format ("4-bit")',
                                          f"{path}:6: software.version: missing"]
    errors = result.stderr.splitlines()
    assert errors[:3] == [f"error: {path}:2: not JSON (Expecting property name enclosed in double quotes)",
                          f"error: {path}:5: not a JSON object",
                          f"error: {path}:7: not JSON (Expecting ',' delimiter)"] or \
        [e.split(" (")[0] for e in errors[:3]] == [f"error: {path}:2: not JSON", f"error: {path}:5: not a JSON object",
                                                   f"error: {path}:7: not JSON"]
    assert errors[-1] == "1 accepted, 2 rejected; 3 unreadable (lines or files)"
    # add refuses the file whole (one transaction), at its first unreadable line
    added = tpsdb("add", path, "--db", empty_db)
    assert added.exit_code == 2 and f"{path}:2: not JSON" in added.stderr and "nothing was stored" in added.stderr
    assert tpsdb("export", "--db", empty_db).stdout == ""


def test_validate_goes_on_past_a_broken_first_line_and_a_missing_file(tmp_path, empty_db, record):
    path = tmp_path / "first.jsonl"
    path.write_text("{oops\n" + json.dumps(bad_copy(record, quantization="4-bit")) + "\n", encoding="utf-8")
    document = tmp_path / "list.json"
    document.write_text(json.dumps([record, bad_copy(record, quantization="4-bit")], indent=1), encoding="utf-8")
    result = tpsdb("validate", path, tmp_path / "nope.jsonl", document, "--db", empty_db)
    assert result.exit_code == 2
    assert result.stdout.splitlines() == [f'{path}:2: quantization: not a named format ("4-bit")',
                                          f'{document}[2]: quantization: not a named format ("4-bit")']
    assert f"error: {path}:1: not JSON" in result.stderr
    assert f"error: {tmp_path / 'nope.jsonl'}: No such file or directory" in result.stderr


# ------------------------------------------------------------------------------------------------ export
def test_export_rejections_re_adds_to_the_same_rejections(tmp_path, empty_db, record):
    no_version = copy.deepcopy(record)
    no_version["software"].pop("version")
    rejected = [bad_copy(record, quantization="4-bit"), no_version, bad_copy(record, colour="blue")]
    assert tpsdb("add", write_jsonl(tmp_path / "in.jsonl", [record, *rejected]), "--db", empty_db).exit_code == 1
    exported = tpsdb("export", "--rejections", "--db", empty_db).stdout
    assert [json.loads(line) for line in exported.splitlines()] == rejected  # the candidates, not wrappers
    other = tmp_path / "other.sqlite"
    assert tpsdb("init", "--no-seed", "--db", other).exit_code == 0
    again = tpsdb("add", "-", "--db", other, input=exported)
    assert again.exit_code == 1 and "0 measurements added" in again.stdout and "3 rejections added" in again.stdout
    assert tpsdb("export", "--rejections", "--db", other).stdout == exported
    first_csv = tpsdb("export", "--rejections", "--format", "csv", "--db", empty_db).stdout
    assert tpsdb("export", "--rejections", "--format", "csv", "--db", other).stdout == first_csv
    rows = list(csv.DictReader(io.StringIO(first_csv)))
    assert [json.loads(r["reasons"]) for r in rows] == [['quantization: not a named format ("4-bit")'],
                                                        ["software.version: missing"],
                                                        ['record: unknown field "colour"']]
    assert rows[2]["colour"] == "blue" and rows[0]["colour"] == ""  # every candidate's keys have a column
    assert json.loads(tpsdb("export", "--rejections", "--format", "json", "--db", other).stdout) == rejected


# ------------------------------------------------------------------------------------- summary, reference
def test_summary_says_what_each_number_counts(tmp_path, empty_db, record):
    tpsdb("add", write_jsonl(tmp_path / "in.jsonl", [record]), "--db", empty_db)
    text = tpsdb("summary", "--db", empty_db).stdout
    assert "measurements: 1 active, 0 superseded, 0 withdrawn (figures that passed validation)" in text
    assert "sources in the database: 1 (0 with a source file in sources/, which `tpsdb sources` lists" in text
    assert "hardware: 1 machines (0 with a cited memory bandwidth)" in text


def test_reference_help_shows_the_toml_format():
    text = tpsdb("reference", "--help").stdout
    assert "[[hardware]]" in text and "[[model_file]]" in text
    for key in ("memory_bandwidth_gbs", "bandwidth_source_url", "file_size_gb", "size_source_url", "active_params_b"):
        assert key in text


def test_every_option_explains_its_default():
    text = " ".join(tpsdb("validate", "--help").stdout.split())
    assert "Default: $TPSDB_DATABASE_URL, else data/tpsdb.sqlite" in text
    assert "[default: jsonl]" in tpsdb("export", "--help").stdout


# -------------------------------------------------------------------------------------------------- ingest
def test_ingest_prints_each_rejection_with_a_hint_and_maps_the_model(tmp_path, empty_db):
    path = tmp_path / "nohw.md"
    path.write_text(NO_DEVICE_MD, encoding="utf-8")
    result = tpsdb("--db", empty_db, "ingest", path, "--source-url", "https://example.org/nohw")
    assert result.exit_code == 1
    reasons = [line for line in result.stdout.splitlines() if line.startswith(str(path))]
    assert len(reasons) == 2 and all("hardware.name: missing" in line for line in reasons)
    assert "hint: the file does not name the machine it ran on: pass --hardware NAME" in result.stderr
    named = tpsdb("--db", empty_db, "ingest", path, "--source-url", "https://example.org/named",
                  "--hardware", "NVIDIA GeForce RTX 4090", "--model", "Llama 2 7B")
    assert "hardware.name" not in named.stdout and "hint:" not in named.stderr
    stored = tpsdb("--db", empty_db, "query", "select distinct json_extract(candidate_json, '$.model.name') as m "
                   "from rejection_full where source_url = 'https://example.org/named'", "--format", "json")
    assert json.loads(stored.stdout) == [{"m": "Llama 2 7B"}]
