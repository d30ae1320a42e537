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
