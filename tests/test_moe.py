"""Mixture of experts (issue 9, item 2): the validator and `tpsdb ceiling` read the active share of the file (from
the record, else the reference data, else llama-bench's type label), a model known to be a mixture of experts whose
share is unknown is never checked as dense, and above_ceiling gives its numbers."""

from __future__ import annotations

import copy
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import VALID_RECORD, write_jsonl
from tpsdb import cli
from tpsdb.record import ModelFacts, active_share, validate

SPARK = {"NVIDIA DGX Spark": 273.0}.get


def tpsdb(*args: str):
    return CliRunner().invoke(cli.app, list(args))


@pytest.fixture(scope="module")
def seeded(tmp_path_factory, seeded_template):
    return Path(shutil.copy(seeded_template, tmp_path_factory.mktemp("moe") / "seeded.sqlite"))


def oss(value: float, name: str = "gpt-oss 120B", quote_model: str = "gpt-oss 120B MXFP4 MoE") -> dict:
    record = copy.deepcopy(VALID_RECORD)
    record["model"]["name"] = name
    record["tokens_per_second"] = value
    record["source"]["quote"] = f"| {quote_model} | 59.02 GiB | 116.83 B | CUDA | 99 | tg32 | {value} ± 0.17 |"
    return record


def test_the_real_gpt_oss_figures_are_accepted_with_the_reference_share(seeded, tmp_path):
    # the seed's own figures (59.02 t/s for gpt-oss 120B, 84.10 for gpt-oss 20B on the DGX Spark at 273 GB/s)
    with sqlite3.connect(seeded) as conn:
        rows = conn.execute("select model, tokens_per_second, calc_ceiling_tps, ceiling_check from measurement_full "
                            "where hardware = 'NVIDIA DGX Spark' and model like 'gpt-oss%' and phase = 'generation' "
                            "and users = 1 and figure = 'per_user'").fetchall()
        # none of the seed's gpt-oss figures is refused as above its ceiling (other models' may be: tokatlas relays
        # 4167 rows on a machine named "M2", whose 100 GB/s no 41.79 t/s on a 7.16 GB file can come from)
        assert conn.execute("select count(*) from rejection where reasons like '%above_ceiling%' "
                            "and json_extract(candidate_json, '$.model.name') like 'gpt-oss%'").fetchone() == (0,)
    assert rows and all(check == "checked" and ceiling > tps for _, tps, ceiling, check in rows)
    assert ("gpt-oss 120B", 59.02) in {(m, t) for m, t, _, _ in rows}
    # a record stating no active parameters validates against the database's (as `add` and `validate` both read it)
    path = write_jsonl(tmp_path / "oss.jsonl", [oss(59.02)])
    result = tpsdb("validate", str(path), "--db", str(seeded))
    assert result.exit_code == 0, result.output


def test_an_impossible_figure_is_refused_with_its_numbers(seeded, tmp_path):
    # 273 GB/s ÷ (63.37 GB × 5.1 / 116.83) = 98.69 t/s: 150 is impossible even for the mixture of experts
    path = write_jsonl(tmp_path / "fast.jsonl", [oss(150.0)])
    result = tpsdb("validate", str(path), "--db", str(seeded))
    assert result.exit_code == 1
    assert ("tokens_per_second: above_ceiling: 150 > 98.69, the maximum computed from 273 GB/s ÷ 2.7663 GB read "
            "per token (4.4% of the file: mixture of experts)") in result.output


def test_an_impossible_dense_figure_is_refused_with_its_numbers():
    record = oss(80.0, name="Llama 2 7B", quote_model="llama 7B Q4_0")
    record["model"].update(params_b=6.74, file_size_gb=3.79)
    record["quantization"] = "Q4_0"
    outcome = validate(record, bandwidth_of=SPARK)
    assert outcome.reasons == ["tokens_per_second: above_ceiling: 80 > 72.03, the maximum computed from 273 GB/s ÷ "
                               "3.79 GB read per token (dense: the whole file); for a mixture of experts set "
                               "model.active_params_b"]


def test_an_unknown_share_is_not_checked_as_dense_and_the_record_says_so():
    # a dense reading would give 273 ÷ 63.37 = 4.31 t/s and refuse the real 59.02
    facts = {"gpt-oss 120B": ModelFacts(116.83, None, True)}.get
    outcome = validate(oss(59.02), bandwidth_of=SPARK, model_of=facts)
    assert outcome.accepted
    assert outcome.notes == ["tokens_per_second: ceiling not checked: gpt-oss 120B is a mixture of experts whose "
                             "active parameters are unknown (set model.active_params_b)"]
    # known from llama-bench's label alone ("MXFP4 MoE"), with nothing in the database
    outcome = validate(oss(59.02), bandwidth_of=SPARK)
    assert outcome.accepted and outcome.notes


def test_the_share_comes_from_the_record_then_the_reference_then_the_label():
    assert active_share("m", 116.83, 5.13, ModelFacts(116.83, 5.1, True)).origin == "record"
    share = active_share("gpt-oss 120B", 116.83, None, ModelFacts(None, 5.1, True))
    assert (share.origin, share.active_params_b, share.params_b) == ("reference", 5.1, 116.83)
    share = active_share("qwen3moe 30B.A3B", 30.53, None, None)
    assert (share.origin, share.value) == ("label", pytest.approx(0.1))
    assert active_share("Llama 2 7B", 6.74, None, None).origin == "dense"
    assert not active_share("qwen3moe 235B", 235.0, None, None).known


def test_ceiling_refuses_a_mixture_of_experts_whose_share_is_unknown(tmp_path, empty_db):
    toml = tmp_path / "ref.toml"
    toml.write_text('[[hardware]]\nname = "NVIDIA DGX Spark"\nmemory_bandwidth_gbs = 273\n'
                    'bandwidth_source_url = "https://vendor.example/spark"\n'
                    '[[model]]\nname = "gpt-oss 120B"\nmixture_of_experts = true\n'
                    '[[model_file]]\nmodel = "gpt-oss 120B"\nquantization = "MXFP4"\nfile_size_gb = 63.37\n'
                    'size_source_url = "https://huggingface.co/x"\nparams_b = 116.83\n', encoding="utf-8")
    assert tpsdb("reference", str(toml), "--db", str(empty_db)).exit_code == 0
    result = tpsdb("ceiling", "--hardware", "NVIDIA DGX Spark", "--model", "gpt-oss 120B", *_quant("MXFP4"),
                   "--db", str(empty_db))
    assert result.exit_code == 2
    assert "gpt-oss 120B is a mixture of experts whose active parameters are unknown" in result.output
    assert "4.31" not in result.output


def test_ceiling_reads_the_reference_share_and_cites_it(seeded):
    result = tpsdb("ceiling", "--hardware", "NVIDIA DGX Spark", "--model", "gpt-oss 120B", *_quant("MXFP4"),
                   "--db", str(seeded))
    assert result.exit_code == 0, result.output
    assert "= 98.69 tokens/s per user" in result.output
    assert ("active share      source: https://github.com/openai/gpt-oss \"`gpt-oss-120b` — for production, general "
            "purpose, high reasoning use cases that fit into a single H100 GPU (117B parameters with 5.1B active "
            "parameters)\"") in result.output


def _quant(value: str) -> list[str]:
    """The option's name at the time of the test: `--quant` may have been renamed `--quantization`."""
    help_text = tpsdb("ceiling", "--help").output
    return ["--quantization" if "--quantization" in help_text else "--quant", value]
