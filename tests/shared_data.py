"""The shared data folder (../shared beside the project): the real files some tests read in place, never copied
into the project. A test that needs one skips when the folder is absent (the project runs without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import ROOT

SHARED = ROOT.parent / "shared"
DGX_SPARK_MD = SHARED / "sources-extracts" / "llama.cpp-benches-dgx-spark.md"  # llama.cpp benches/dgx-spark.md
TOKATLAS_JSON = SHARED / "peers" / "tokatlas" / "llamacpp_discussions.json"  # tokatlas data/raw/…


def need(path: Path) -> Path:
    """The path, or skip the test when the shared folder does not hold it."""
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared data folder ../shared is not beside the project)")
    return path


def text_or_empty(path: Path) -> str:
    """The file's text, or "" when absent (for module-level constants; the tests that need it call `need`)."""
    return path.read_text(encoding="utf-8") if path.exists() else ""
