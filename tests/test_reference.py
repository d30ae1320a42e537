"""`tpsdb reference`: every entry is checked like a record, a stored value is never replaced silently, and a bad
file stores nothing (D17, probe rows X1–X6)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from tpsdb import cli

SHIPPED = [str(p) for p in sorted((ROOT / "data" / "reference").glob("*.toml"))]


def tpsdb(*args: str):
    return CliRunner().invoke(cli.app, list(args))


def reference_rows(db: Path) -> str:
    """What the reference tables hold, as one digest."""
    with sqlite3.connect(db) as conn:
        text = repr([conn.execute(f"select * from {t} order by id").fetchall() for t in ("hardware", "model", "model_file")])
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def loaded(empty_db) -> Path:
    """The empty database with the shipped reference files (Llama 2 7B files, vendor pages)."""
    result = tpsdb("reference", *SHIPPED, "--db", str(empty_db))
    assert result.exit_code == 0, result.output
    return empty_db


SPARK = 'name = "NVIDIA DGX Spark"\n'
SPEC = 'bandwidth_source_url = "https://www.nvidia.com/en-us/products/workstations/dgx-spark/"\n'
LLAMA_Q4 = 'model = "Llama 2 7B"\nquantization = "Q4_0"\nsize_source_url = "https://huggingface.co/x"\n'

BAD = {  # probe row: (file body, the error's text after "error: FILE: ")
    "X1 a string bandwidth": (f'[[hardware]]\n{SPARK}memory_bandwidth_gbs = "fast"\n{SPEC}',
                              'hardware[0].memory_bandwidth_gbs: not a number ("fast")'),
    "X2 nan bandwidth": (f"[[hardware]]\n{SPARK}memory_bandwidth_gbs = nan\n{SPEC}",
                         "hardware[0].memory_bandwidth_gbs: not a finite number (nan)"),
    "X3 negative bandwidth": (f"[[hardware]]\n{SPARK}memory_bandwidth_gbs = -500\n{SPEC}",
                              "hardware[0].memory_bandwidth_gbs: not positive (-500)"),
    "X3 javascript URL": (f'[[hardware]]\n{SPARK}memory_bandwidth_gbs = 273\nbandwidth_source_url = "javascript:alert(1)"\n',
                          'hardware[0].bandwidth_source_url: not an http(s) URL ("javascript:alert(1)")'),
    "URL with credentials": (f'[[hardware]]\n{SPARK}memory_bandwidth_gbs = 273\n'
                             'bandwidth_source_url = "https://user:pass@evil.example/x"\n',
                             "hardware[0].bandwidth_source_url: an http(s) URL must not carry a user name or password"),
    "URL with a space or a broken host": (f'[[hardware]]\n{SPARK}memory_bandwidth_gbs = 273\n'
                                         'bandwidth_source_url = "http://[::1 x"\n',
                                         'hardware[0].bandwidth_source_url: not an http(s) URL'),
    "X4 a string size": (f'[[model_file]]\n{LLAMA_Q4}file_size_gb = "big"\n',
                         'model_file[0].file_size_gb: not a number ("big")'),
    "X5 params in millions": (f"[[model_file]]\n{LLAMA_Q4}file_size_gb = 3790\nparams_b = 6738\n",
                              "model_file[0].params_b: 6738 B is implausible for the 3.79 GB file already stored "
                              "for Llama 2 7B (unit?)"),
    "X5 size in MB": (f"[[model_file]]\n{LLAMA_Q4}file_size_gb = 3790\nparams_b = 6.74\n",
                      "model_file[0].file_size_gb: "),  # the record's wording
    "X6 a number as a name": ("[[hardware]]\nname = 5\n", "hardware[0].name: not a string (5)"),
    "unknown key": (f'[[hardware]]\n{SPARK}colour = "green"\n', "hardware[0].colour: unknown key"),
    "unknown table": (f"[[hardwares]]\n{SPARK}", 'unknown key "hardwares"'),
    "unnamed format": ('[[model_file]]\nmodel = "M"\nquantization = "4-bit"\nfile_size_gb = 4.0\n'
                       'size_source_url = "https://huggingface.co/x"\n', 'model_file[0].quantization: not a named format'),
    "bandwidth without its page": (f"[[hardware]]\n{SPARK}memory_bandwidth_gbs = 273\n",
                                   "hardware[0].bandwidth_source_url: missing"),
    # issue 21 D8: more active parameters than the total (Llama 2 7B's ceiling fell from 72.03 to 4.85 t/s)
    "D8 active above the total": (f"[[model_file]]\n{LLAMA_Q4}file_size_gb = 3.79\nparams_b = 6.74\n"
                                  '[[model]]\nname = "Llama 2 7B"\nactive_params_b = 100\n'
                                  'active_params_source_url = "https://example.org/card"\n'
                                  'active_params_quote = "100B active"\n',
                                  "model[0].active_params_b: 100 B active is more than the 6.74 B total parameters "
                                  "of Llama 2 7B"),
    # L5: the bounds a record has
    "L5 a bandwidth of 1e308": (f"[[hardware]]\n{SPARK}memory_bandwidth_gbs = 1e308\n{SPEC}",
                                "hardware[0].memory_bandwidth_gbs: 1e+308 is implausible (more than 1e+07)"),
    "L5 a bandwidth of 1e-300": (f"[[hardware]]\n{SPARK}memory_bandwidth_gbs = 1e-300\n{SPEC}",
                                 "hardware[0].memory_bandwidth_gbs: 1e-300 is implausible (less than 0.1)"),
    "L5 gpu cores past any integer column": (f"[[hardware]]\n{SPARK}gpu_cores = 100000000000000000000\n",
                                             "hardware[0].gpu_cores: 100000000000000000000 is implausible "
                                             "(more than 1e+06)"),
    "L5 gpu cores past PostgreSQL's integer": (f"[[hardware]]\n{SPARK}gpu_cores = 4611686018427387904\n",
                                               "hardware[0].gpu_cores: 4611686018427387904 is implausible"),
    "L5 a NUL in a name": ('[[hardware]]\nname = "Spark\\u0000"\n', "hardware[0].name: holds a control character"),
    "L5 a NUL in a quote": (f'[[hardware]]\n{SPARK}memory_bandwidth_gbs = 273\n{SPEC}bandwidth_quote = "a\\u0000b"\n',
                            "hardware[0].bandwidth_quote: holds a NUL character"),
    "L5 a file size past any file": (f"[[model_file]]\n{LLAMA_Q4}file_size_gb = 1e9\n",
                                     "model_file[0].file_size_gb: 1000000000.0 is implausible (more than 100000)"),
    # L6: a terminal escape in a name reached `tpsdb ceiling`'s output
    "L6 a control character in a name": ('[[hardware]]\nname = "Esc \\u001b]0;pwned\\u0007 name"\n',
                                         "hardware[0].name: holds a control character"),
}


@pytest.mark.parametrize("case", BAD)
def test_d17_a_bad_entry_is_one_error_line_and_stores_nothing(tmp_path, loaded, case):
    body, why = BAD[case]
    good = tmp_path / "good.toml"  # loaded in the same command, before the bad file: rolled back too
    good.write_text('[[hardware]]\nname = "Some new machine"\nmemory_gb = 64\n', encoding="utf-8")
    path = tmp_path / "bad.toml"
    path.write_text(body, encoding="utf-8")
    before = reference_rows(loaded)
    result = tpsdb("reference", str(good), str(path), "--db", str(loaded))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[-1].startswith(f"error: {path}: {why}"), result.stderr
    assert lines[-1].endswith("nothing was stored") and "Traceback" not in result.output
    assert reference_rows(loaded) == before


def test_a_file_that_cannot_be_read_is_one_error_line_and_stores_nothing(tmp_path, loaded):
    good = tmp_path / "good.toml"
    good.write_text('[[hardware]]\nname = "Some new machine"\n', encoding="utf-8")
    before = reference_rows(loaded)
    result = tpsdb("reference", str(good), str(tmp_path / "nope.toml"), "--db", str(loaded))
    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"error: {tmp_path / 'nope.toml'}: No such file or directory; nothing was stored"
    assert reference_rows(loaded) == before


def test_d17_a_stored_value_is_never_replaced_silently(tmp_path, loaded):
    path = tmp_path / "spark.toml"
    # (the shipped reference already gives the DGX Spark its relayed 273 GB/s)
    path.write_text(f"[[hardware]]\n{SPARK}memory_gb = 128\n\n"
                    f"[[model_file]]\n{LLAMA_Q4.replace('https://huggingface.co/x', 'https://huggingface.co/ggml-org/Llama-2-7B-GGUF')}"
                    "file_size_gb = 3.79\nparams_b = 6.74\n", encoding="utf-8")
    assert tpsdb("reference", str(path), "--db", str(loaded)).exit_code == 0  # fills empty fields
    assert tpsdb("reference", str(path), "--db", str(loaded)).exit_code == 0  # the same values again: no change
    before = reference_rows(loaded)
    path.write_text(path.read_text().replace("memory_gb = 128", "memory_gb = 96").replace("6.74", "7.0"))
    result = tpsdb("reference", str(path), "--db", str(loaded))
    assert result.exit_code == 2
    assert result.stderr == (f"error: {path}: hardware[0].memory_gb: 96 conflicts with 128 already stored for "
                             "NVIDIA DGX Spark; model_file[0].params_b: 7 conflicts with 6.74 already stored for "
                             "Llama 2 7B; nothing was stored\n")
    assert reference_rows(loaded) == before
    replaced = tpsdb("reference", str(path), "--replace", "--db", str(loaded))
    assert replaced.exit_code == 0
    assert f"{path}: replaced hardware[0].memory_gb: 96 (was 128)" in replaced.stderr
    assert f"{path}: replaced model_file[0].params_b: 7 (was 6.74)" in replaced.stderr
    with sqlite3.connect(loaded) as conn:
        assert conn.execute("select params_b from model where name = 'Llama 2 7B'").fetchall() == [(7.0,)]


def test_d17_a_reference_value_conflicting_with_a_record_is_refused(tmp_path, empty_db, record):
    from conftest import write_jsonl

    assert tpsdb("add", str(write_jsonl(tmp_path / "r.jsonl", [record])), "--db", str(empty_db)).exit_code == 0
    path = tmp_path / "oss.toml"
    path.write_text('[[model_file]]\nmodel = "gpt-oss 120B"\nquantization = "MXFP4"\nfile_size_gb = 63.37\n'
                    'size_source_url = "https://huggingface.co/ggml-org/gpt-oss-120b-GGUF"\nparams_b = 120\n',
                    encoding="utf-8")
    result = tpsdb("reference", str(path), "--db", str(empty_db))
    assert result.exit_code == 2
    assert "model_file[0].params_b: 120 conflicts with 116.83 already stored for gpt-oss 120B" in result.stderr
    assert "model_file[0].size_source_url: https://huggingface.co/ggml-org/gpt-oss-120b-GGUF conflicts with " \
           "https://github.com/ggml-org/llama.cpp/discussions/16578 already stored" in result.stderr


def test_the_shipped_reference_files_load_into_the_seeded_database(seeded_db):
    seeded = seeded_db
    before = reference_rows(seeded)
    result = tpsdb("reference", *SHIPPED, "--db", str(seeded))
    assert result.exit_code == 0, result.output
    assert reference_rows(seeded) == before  # the seed was built from them: nothing differs
