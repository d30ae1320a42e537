"""The schedules in deploy/: each runs `publish` after a refresh that changed the dataset, and only then."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from conftest import ROOT, run_cli
from test_publish import ULTRA, build_db, rec

SCRIPT = ROOT / "deploy" / "refresh-and-publish.sh"


def test_cron_and_systemd_run_the_script_that_republishes():
    assert "deploy/refresh-and-publish.sh" in (ROOT / "deploy" / "crontab").read_text()
    assert "ExecStart=/srv/tpsdb/deploy/refresh-and-publish.sh" in \
        (ROOT / "deploy" / "systemd" / "tpsdb-refresh.service").read_text()
    text = SCRIPT.read_text()
    assert text.index("refresh --due") < text.index("export-seed") < text.index("publish --out")


def test_github_actions_publishes_only_when_the_seed_changed():
    workflow = yaml.safe_load((ROOT / "deploy" / "github-actions-refresh.yml").read_text())
    steps = workflow["jobs"]["refresh"]["steps"]
    names = [s.get("name", "") for s in steps]
    publish = next(s for s in steps if "tpsdb publish" in s.get("run", ""))
    assert names.index("Refresh the due sources") < steps.index(publish)
    assert publish["if"] == "steps.seed.outputs.changed == 'true'"
    assert workflow["jobs"]["deploy-site"]["if"] == "needs.refresh.outputs.changed == 'true'"


def _run(folder: Path, db: Path) -> subprocess.CompletedProcess:
    (folder / "sources").mkdir(exist_ok=True)  # no source file: no source is due, nothing is fetched
    env = {**os.environ, "TPSDB_HOME": str(ROOT), "TPSDB": f"{sys.executable} -m tpsdb",
           "TPSDB_DATABASE_URL": str(db), "TPSDB_SITE": str(folder / "site"), "TPSDB_SEED": str(folder / "seed.sql"),
           "TPSDB_SOURCES_DIR": str(folder / "sources")}
    result = subprocess.run(["sh", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def test_script_republishes_after_a_change_and_not_otherwise(tmp_path):
    engine, db, _ = build_db(tmp_path, [rec(ULTRA, 94.27, comment=2)])
    engine.dispose()
    first = _run(tmp_path, db)
    assert "published" in first.stdout
    assert "1 validated measurements" in (tmp_path / "site" / "index.html").read_text()
    stamp = (tmp_path / "site" / "index.html").stat().st_mtime_ns
    again = _run(tmp_path, db)
    assert "unchanged" in again.stdout and (tmp_path / "site" / "index.html").stat().st_mtime_ns == stamp
    record = tmp_path / "new.json"
    record.write_text(json.dumps(rec(ULTRA, 66.0, quant="Q8_0", comment=3)))
    run_cli("add", str(record), db=db)
    changed = _run(tmp_path, db)
    assert "published" in changed.stdout
    assert "2 validated measurements" in (tmp_path / "site" / "index.html").read_text()
