"""The README's and docs/'s examples are tests (issue 9, item 7; issue 20), as sqlite-utils' test_docs.py does:
every `tpsdb …` line of their shell blocks runs, as written, against the default database the first set-up
command builds (`tpsdb init`, with the seed), and none may fail. The README comes first, then docs/*.md by name;
`tpsdb serve` is the one line left out (a server does not end: tests/test_serve.py runs it).

The README names two files a user brings (`my-figures.jsonl`, `results.sql`): the test puts a valid record and a
llama-bench SQL output there. `tpsdb refresh` reads the local copies of the threads (tests/fixtures) instead of
GitHub: no network in tests."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, VALID_RECORD, write_jsonl

README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]


def readme_examples(paths: list[Path] | None = None) -> list[str]:
    """Every command starting with `tpsdb ` inside the ``` blocks of the README and docs/*.md, in order, comments
    dropped, a line ending in a backslash joined with the next; `tpsdb serve` left out."""
    return [line for path in (paths or DOCS) for line in _examples(path) if not line.startswith("tpsdb serve")]


def _examples(path: Path) -> list[str]:
    lines: list[str] = []
    inside, continued = False, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            inside, continued = not inside, False
        elif inside and (continued or line.startswith("tpsdb ")):
            text = re.sub(r"\s+#\s.*$", "", line).strip()
            if continued:
                lines[-1] = lines[-1][:-1].rstrip() + " " + text
            else:
                lines.append(text)
            continued = lines[-1].endswith("\\")
    return lines


def test_the_readme_has_examples_to_run():
    examples = readme_examples()
    assert any(e.startswith("tpsdb ceiling") for e in examples) and any(e.startswith("tpsdb compare") for e in examples)
    docs = readme_examples(DOCS[1:])
    assert any(e.startswith("tpsdb query") for e in docs) and any(e.startswith("tpsdb tables") for e in docs)


def test_the_readme_starts_short():
    """Ten lines to start (issue 20): the two set-up commands first, then the commands that show the data, well
    under 150 lines in all; the reference lives in docs/."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 150
    assert text.index("pip install -q -e . && .venv/bin/tpsdb init") < text.index("tpsdb tables machines") \
        < text.index("tpsdb publish") < text.index("tpsdb ingest")
    for linked in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (ROOT / linked).is_file(), linked


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """A folder holding the files the examples name, and the environment: the default database is this folder's."""
    from fixture_server import FixtureServer
    from refresh_helpers import server_env

    folder = tmp_path_factory.mktemp("readme")
    write_jsonl(folder / "my-figures.jsonl", [VALID_RECORD])
    shutil.copy(ROOT / "tests" / "fixtures" / "benchfiles" / "a100x2-llama2-7b.sql", folder / "results.sql")
    bin_dir = str(Path(sys.executable).parent)  # where `tpsdb` is installed
    with FixtureServer() as server:
        env = {**os.environ, **server_env(server), "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
               "TPSDB_DATABASE_URL": str(folder / "tpsdb.sqlite")}
        yield folder, env


def test_every_readme_example_runs(workspace):
    folder, env = workspace
    failures = []
    init = subprocess.run(["tpsdb", "init"], cwd=folder, env=env, capture_output=True, text=True, timeout=180)
    assert init.returncode == 0, init.stderr  # the README's first set-up command builds the default database
    for example in readme_examples():
        done = subprocess.run(["bash", "-c", example], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=180)
        if done.returncode != 0:
            failures.append(f"{example}\n  exit {done.returncode}: {(done.stderr or done.stdout).strip()[-400:]}")
    assert not failures, "README examples that fail:\n" + "\n".join(failures)
