"""Units are defined once, in tpsdb.units: the validator does not reach into a reader of tool output for them."""

import subprocess
import sys

import pytest

from conftest import ROOT
from tpsdb.collect import llamabench
from tpsdb.units import GIB_IN_GB, MIB_IN_GB


def test_the_validator_takes_its_units_without_importing_the_llama_bench_reader():
    code = "import sys, tpsdb.record; print('tpsdb.collect.llamabench' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "False"


def test_binary_sizes_convert_to_decimal_gb_with_the_shared_units():
    assert (GIB_IN_GB, MIB_IN_GB) == (2**30 / 10**9, 2**20 / 10**9)
    assert llamabench.parse_size_gb("3.56 GiB") == pytest.approx(3.56 * GIB_IN_GB, abs=0.005)
    assert llamabench.parse_size_gb("636.18 MiB") == pytest.approx(636.18 * MIB_IN_GB, abs=0.005)


def test_one_parser_for_every_reader_and_the_validator():
    """The same text gives the same number through llama-bench's reader, the JSON files' reader and a hand record
    (`3.56 GiB` was 3.82 GB via ingest and 3.8225 GB via add: two model files)."""
    from tpsdb import units
    from tpsdb.collect import benchfiles
    from tpsdb.record import validate

    record = {"model": {"name": "m", "params_b": "6.74 B", "file_size_gb": "3.56 GiB"}}
    outcome = validate(record)  # refused (the other fields are missing), but its model block is read
    sizes = {llamabench.parse_size_gb("3.56 GiB"), units.size_gb("3.56 GiB"), units.size_gb(" 3.56  gib ")}
    assert sizes == {3.82}
    assert not [r for r in outcome.reasons if r.startswith("model.")]
    assert llamabench.parse_params_b("68.03 M") == units.params_b("68.03 M") == 0.06803
    assert benchfiles._params_b(6738415616) == units.params_b("6.74 B") == 6.74
    assert benchfiles._params_b(68030000) == llamabench.parse_params_b("68.03 M")


def test_units_refuse_what_they_cannot_read():
    from tpsdb import units

    assert units.size_gb("59 gigs") is None and units.size_gb("3.5.6 GB") is None and units.size_gb("") is None
    assert units.params_b("6.74 GB") is None and units.size_gb("6.74 B") is None
    assert units.size_gb("1,024 MiB") == 1.07 and units.params_b("116,830 M") == 116.83


def test_builds_and_commits_are_parsed_in_one_place():
    from tpsdb import store, units

    assert store.parse_version is units.parse_version
    assert units.parse_version("b6918 (2f68ce7cf)") == (6918, "2f68ce7cf")
    assert units.parse_version("8e672efe") == (None, "8e672efe")
    assert units.parse_version("4847") == (4847, None)
