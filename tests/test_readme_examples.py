"""The README's examples are tests (issue 9, item 7; first-use finding 2), as sqlite-utils' test_docs.py does:
every `tpsdb …` line of the README's shell blocks runs, as written, against the default database the first set-up
command builds (`tpsdb init`, with the seed), and none may fail.

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


def readme_examples() -> list[str]:
    """Every command starting with `tpsdb ` inside the README's ``` blocks, in order, comments dropped, a line
    ending in a backslash joined with the next."""
    lines, inside, continued = [], False, False
    for line in README.read_text(encoding="utf-8").splitlines():
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
    assert examples[0] == "tpsdb init" and any(e.startswith("tpsdb ceiling") for e in examples)


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
    for example in readme_examples():  # in order: `tpsdb init` first builds the default database
        done = subprocess.run(["bash", "-c", example], cwd=folder, env=env, capture_output=True, text=True,
                              timeout=180)
        if done.returncode != 0:
            failures.append(f"{example}\n  exit {done.returncode}: {(done.stderr or done.stdout).strip()[-400:]}")
    assert not failures, "README examples that fail:\n" + "\n".join(failures)
