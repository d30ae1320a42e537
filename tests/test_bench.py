"""Every benchmark of bench/ runs once, on tiny inputs, so that none can rot unseen (issue 17: bench/parse.py had
crashed on the `file` source since that kind was added). Each is run as a user runs it, as its own process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from shared_data import DGX_SPARK_MD, TOKATLAS_JSON, need

# (script and its tiny arguments, a line its output must hold)
# The benches that read files of the shared data folder (../shared) in place: skipped when it is absent.
NEEDS_SHARED = {"ingest_scale": [DGX_SPARK_MD], "refresh": [DGX_SPARK_MD, TOKATLAS_JSON]}
BENCHES = {
    "ingest": (["ingest.py", "40", "1"], "add ÷ raw baseline:"),
    "ingest_scale": (["ingest_scale.py", "1"], "copies"),
    "parse": (["parse.py", "1"], "speed / reference speed"),
    "publish": (["publish.py", "50"], "N =        50: build"),
    "refresh": (["refresh.py", "1", "file"], "file              http    no-change refresh"),
}


def test_every_bench_script_is_covered():
    assert {p.stem for p in (ROOT / "bench").glob("*.py")} == set(BENCHES)


@pytest.mark.parametrize("name", BENCHES)
def test_the_bench_runs_on_tiny_inputs(name):
    for path in NEEDS_SHARED.get(name, []):
        need(path)
    args, expected = BENCHES[name]
    result = subprocess.run([sys.executable, str(ROOT / "bench" / args[0]), *args[1:]], cwd=ROOT,
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    assert expected in result.stdout, result.stdout[-2000:]
