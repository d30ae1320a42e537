"""The wheel works without the checkout: `pip install .` into a new venv, then `tpsdb init && tpsdb tables` in an
empty folder outside it (issue 13, item 6).

The wheel is built once for the module, offline (no build isolation: setuptools comes from the test extra), and
installed into a venv that borrows this venv's installed dependencies through a .pth file instead of downloading
them. Marked `packaging` (`-m "not packaging"` leaves these out of a quick run).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.packaging

# What a build reads from the checkout; the copy keeps the build's by-products (build/, *.egg-info) out of it.
BUILD_INPUTS = ("pyproject.toml", "README.md", "tpsdb", "migrations", "sources", "tables", "data")
NOT_BUILD_INPUTS = shutil.ignore_patterns("__pycache__", "*.sqlite*", "*.lock", "*.egg-info")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=NOT_BUILD_INPUTS)
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(out), str(source)], check=True, capture_output=True, text=True, timeout=300)
    return next(out.glob("tpsdb-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A new venv (outside the checkout) holding the wheel; its dependencies are this venv's, by a .pth file."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "_tpsdb_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, text=True, timeout=300)
    return venv


def run_installed(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "TPSDB_DATABASE_URL")}
    return subprocess.run([str(venv / "bin" / "tpsdb"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_wheel_holds_every_module_and_the_project_folders(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(path.relative_to(ROOT)) for path in (ROOT / "tpsdb").rglob("*.py")}
    assert modules - names == set(), "a package missing from [tool.setuptools] packages in pyproject.toml"
    for folder in ("migrations", "sources", "tables", "data/reference"):
        shipped = {str(path.relative_to(ROOT)) for path in (ROOT / folder).rglob("*")
                   if path.is_file() and "__pycache__" not in path.parts}
        assert {f"tpsdb/_bundled/{name}" for name in shipped} - names == set()
    assert "tpsdb/_bundled/data/seed.sql" in names
    assert not any(name.endswith(".sqlite") for name in names)


def test_installed_tpsdb_inits_and_builds_tables_in_an_empty_folder(installed, tmp_path):
    folder = tmp_path / "empty"
    folder.mkdir()
    where = run_installed(installed, "--help", cwd=folder)
    assert where.returncode == 0, where.stderr
    located = subprocess.run([str(installed / "bin" / "python"), "-c", "import tpsdb.config as c; "
                              "print(c.IN_CHECKOUT, c.MIGRATIONS_DIR)"], cwd=folder, capture_output=True, text=True)
    in_checkout, migrations = located.stdout.split()
    assert in_checkout == "False" and Path(migrations).is_relative_to(installed), located.stdout

    init = run_installed(installed, "init", cwd=folder)
    assert init.returncode == 0, init.stderr
    assert "loaded seed.sql" in init.stderr and "measurements:" in init.stdout
    assert (folder / "tpsdb.sqlite").is_file()  # the installed default: ./tpsdb.sqlite
    tables = run_installed(installed, "tables", cwd=folder)
    assert tables.returncode == 0, tables.stderr
    assert tables.stdout.startswith("## Table 1.") and "| " in tables.stdout
    assert sorted(p.name for p in folder.iterdir()) == ["tpsdb.sqlite"]
