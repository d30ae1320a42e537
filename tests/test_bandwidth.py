"""Cited bandwidths (issue 9, item 1; first-use findings 2 and 5): every bandwidth says its kind (vendor, relayed,
stated) and cites its own machine's source; a value a thread states never replaces the maker's; `ceiling` on the
default database answers the README's DGX Spark example."""

from __future__ import annotations

import copy
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import VALID_RECORD, write_jsonl
from tpsdb import cli

THREAD = "https://github.com/ggml-org/llama.cpp/discussions/4167"


def tpsdb(*args: str):
    return CliRunner().invoke(cli.app, list(args))


def _quant(value: str) -> list[str]:
    """`ceiling --quant` may have been renamed `--quantization`: use the name its help shows."""
    return ["--quantization" if "--quantization" in tpsdb("ceiling", "--help").output else "--quant", value]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, seeded_template):
    return Path(shutil.copy(seeded_template, tmp_path_factory.mktemp("bw") / "seeded.sqlite"))


def scoreboard_row(hardware: str, bandwidth: float, value: float) -> dict:
    """A 4167 scoreboard figure as the extractor makes it: the row's "BW [GB/s]" cell rides on the record."""
    record = copy.deepcopy(VALID_RECORD)
    record["source"].update(url=THREAD, published_at="2023-11-22",
                            quote=f"| {hardware.split(' (')[0].removeprefix('Apple ')} | {bandwidth:g} | 76 | "
                                  f"{value} |")
    record["hardware"] = {"name": hardware, "memory_bandwidth_gbs": bandwidth}
    record["model"] = {"name": "Llama 2 7B", "params_b": 6.74, "file_size_gb": 3.79}
    record["quantization"] = "Q4_0"
    record["software"] = {"name": "llama.cpp", "version": "8e672efe", "options": {"ngl": 99}}
    record["lengths"] = {"prompt_tokens": 0, "generated_tokens": 128, "context_depth": 0}
    record["nature"]["procedure"] = "llama-bench -p 512 -n 128 -ngl 99"
    record["tokens_per_second"] = value
    record.pop("stddev")
    return record


def test_ceiling_on_the_default_database_is_a_calculation_with_the_bandwidths_kind_and_source(seeded):
    result = tpsdb("ceiling", "--hardware", "NVIDIA DGX Spark", "--model", "Llama 2 7B", *_quant("Q4_0"),
                   "--db", str(seeded))
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("CALCULATION, not a measurement")
    assert "273 GB/s ÷ 3.79 GB" in out and "= 72.03 tokens/s per user" in out
    assert "memory bandwidth  273 GB/s   relayed:" in out
    assert ("via: Débit d'un LLM en tokens par seconde : les quatre conditions qui changent tout, mesurées sur seize "
            "machines") in out
    assert "si sa mémoire livre 273 gigaoctets par seconde" in out


def test_the_reference_records_each_kind_with_its_citation(seeded):
    with sqlite3.connect(seeded) as conn:
        rows = {name: (bw, kind, url, quote, via, via_quote) for name, bw, kind, url, quote, via, via_quote in
                conn.execute("select name, memory_bandwidth_gbs, bandwidth_kind, bandwidth_source_url, "
                             "bandwidth_quote, bandwidth_via_title, bandwidth_via_quote from hardware "
                             "where memory_bandwidth_gbs is not null")}
    assert rows["Apple M3 Max (40-core GPU)"][:3] == (400, "vendor", "https://support.apple.com./en-au/117737")
    assert rows["Apple M4 Pro (16-core GPU)"][:2] == (273, "vendor")
    assert rows["NVIDIA RTX PRO 6000 Blackwell"][:2] == (1792, "relayed")
    assert rows["NVIDIA RTX PRO 6000 Blackwell"][5] == ("NVIDIA, fiche RTX PRO 6000 Blackwell Workstation Edition : "
                                                        "96 Go GDDR7, 1 792 Go/s")
    assert rows["NVIDIA DGX Spark"][1] == "relayed" and rows["NVIDIA DGX Spark"][4].startswith("Débit d'un LLM")
    # Apple's values: its own page (vendor), or a publication reproducing its release (relayed, with that
    # publication's quote: data/reference/hardware-vendors.toml), never one without its citation
    apple = {k: v for k, v in rows.items() if k.startswith("Apple")}
    assert all((kind == "vendor" and url and quote) or (kind == "relayed" and via and via_quote)
               for _, kind, url, quote, via, via_quote in apple.values())
    assert rows["Apple M2"][:2] == (100, "relayed") and "100GB/s" in rows["Apple M2"][5]
    assert "Apple M1" not in rows and "Apple M4 Pro" not in rows  # no vendor page: never guessed


def test_each_machine_has_its_own_bandwidth_footnote_and_a_stated_value_never_replaces_the_makers(seeded, tmp_path):
    db = tmp_path / "board.sqlite"
    db.write_bytes(seeded.read_bytes())
    board = [scoreboard_row("Apple M2 Ultra (76-core GPU)", 800, 94.27),
             scoreboard_row("Apple M3 Ultra (80-core GPU)", 819, 92.14),
             scoreboard_row("Apple M2 Max (38-core GPU)", 400, 65.95)]  # no cited value for the 38-core GPU
    assert tpsdb("add", str(write_jsonl(tmp_path / "board.jsonl", board)), "--db", str(db)).exit_code == 0
    with sqlite3.connect(db) as conn:
        full = {h: (kind, url) for h, kind, url in conn.execute(
            "select hardware, bandwidth_kind, bandwidth_source_url from measurement_full where source_url = ?",
            (THREAD,))}
    assert full["Apple M2 Ultra (76-core GPU)"] == (
        "vendor", "https://www.apple.com/pt/newsroom/2023/06/apple-introduces-m2-ultra")
    assert full["Apple M3 Ultra (80-core GPU)"] == ("stated", THREAD)

    result = tpsdb("tables", "machines", "--db", str(db))
    assert result.exit_code == 0, result.output
    md = result.output
    notes = {n: text.replace("\\|", "|") for n, text in re.findall(r"^\[\^machines-(\d+)\]: (.*)$", md, re.M)}
    cells = dict(re.findall(r"^\| (Apple [^|]+?) \| ([^|]+) \|", md, re.M))
    cited = {}
    for machine, cell in cells.items():
        number = re.search(r"\[\^machines-(\d+)\]", cell).group(1)
        cited[machine] = notes[number]
        assert f"Memory bandwidth of {machine}:" in notes[number]  # its own machine, never another's
    assert len(set(cited.values())) == len(cited) >= 3  # one note per machine
    assert "vendor: stated by the maker's page" in cited["Apple M2 Ultra (76-core GPU)"]
    assert "apple-introduces-m2-ultra" in cited["Apple M2 Ultra (76-core GPU)"]
    assert cells["Apple M3 Ultra (80-core GPU)"].startswith("819 (stated)")
    assert "stated by a source that is not the maker" in cited["Apple M3 Ultra (80-core GPU)"]
    assert THREAD in cited["Apple M3 Ultra (80-core GPU)"] and "| M3 Ultra | 819 | 76 | 92.14 |" in \
        cited["Apple M3 Ultra (80-core GPU)"]
    assert "| M2 Max | 400 |" in cited["Apple M2 Max (38-core GPU)"]


def test_a_table_holding_the_file_size_fixed_holds_that_file_and_the_tool_sizes_that_describe_it(seeded, tmp_path):
    """tpsdb.files: llama-bench's 3.56 GiB (3.82 GB) is the cited 3.79 GB file (0.8 % apart), as the article's
    Table 1 reads it; 4.00 GB is another file, left out of the table and named in `tpsdb ceiling`'s note."""
    db = tmp_path / "sizes.sqlite"
    db.write_bytes(seeded.read_bytes())
    cited = scoreboard_row("Apple M2 Ultra (76-core GPU)", 800, 94.27)
    tool = copy.deepcopy(cited)  # llama-bench's own size of the file: 3.56 GiB = 3.82 GB
    tool["model"]["file_size_gb"] = "3.56 GiB"
    # a machine with a cited bandwidth and no figure of the seed's in Table 1 (where the latest figure is shown)
    tool["hardware"] = {"name": "Apple M2 Max"}
    tool["source"]["quote"] = "| llama 7B Q4_0 | 3.56 GiB | 6.74 B | Metal | 99 | tg128 | 63.17 ± 0.1 |"
    tool["tokens_per_second"] = 63.17
    other = copy.deepcopy(tool)
    other["model"]["file_size_gb"] = 4.0
    other["hardware"] = {"name": "Apple M3 Pro (18-core GPU)"}
    other["source"]["quote"] = "| llama 7B Q4_0 | 4.00 GB | 6.74 B | Metal | 99 | tg128 | 33.71 ± 0.1 |"
    other["tokens_per_second"] = 33.71
    assert tpsdb("add", str(write_jsonl(tmp_path / "s.jsonl", [cited, tool, other])), "--db", str(db)).exit_code == 0
    md = tpsdb("tables", "machines", "--db", str(db)).output
    # (relayed quotes in footnotes hold other numbers, such as 7883.82 t/s: the sizes are looked for as sizes)
    assert "Q4_0 file 3.79 GB" in md and "3.82 GB" not in md and "4.00 GB" not in md
    assert "94.27" in md and "63.17" in md and "33.71" not in md
    result = tpsdb("ceiling", "--hardware", "Apple M2 Max", "--model", "Llama 2 7B", *_quant("Q4_0"),
                   "--format", "json", "--db", str(db))
    assert result.exit_code == 0, result.output
    assert '"file_size_gb": 3.79' in result.output and result.output.count('"per_user_tps"') == 1
    # the tool's size of the same file, among the others the seed's figures state for it (3.83 GB)
    assert re.search(r"figures state (\d+\.\d+ GB, )*3\.82 GB(, \d+\.\d+ GB)* for it", result.output)
    assert "figures also record 4 GB" in result.output  # another file: named in the note, not computed
