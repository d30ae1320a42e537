"""Issue 20: long work shows its progress on a terminal and nothing in a pipe (tpsdb/progress.py)."""

from __future__ import annotations

import io
import os
import pty
import subprocess
import sys

from conftest import ROOT, run_cli, write_jsonl
from tpsdb.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_in_a_pipe_and_one_rewritten_line_on_a_terminal(monkeypatch):
    monkeypatch.delenv("TPSDB_PROGRESS", raising=False)
    pipe = io.StringIO()
    with Progress("publish", stream=pipe) as meter:
        meter.update(1, 4)
        meter.update(4, 4)
    assert pipe.getvalue() == ""
    terminal = _Terminal()
    with Progress("publish", stream=terminal, interval=0) as meter:
        meter.update(1, 4)
        meter.update(4, 4)
    shown = terminal.getvalue()
    assert "\rpublish: 1/4 (25%)" in shown and "publish: 4/4 (100%)" in shown and "\n" not in shown
    assert shown.endswith("\r")  # cleared: what the command prints next starts on a clean line


def test_asked_for_in_a_log_it_writes_lines(monkeypatch):
    monkeypatch.setenv("TPSDB_PROGRESS", "1")
    log = io.StringIO()
    with Progress("add", stream=log, interval=0) as meter:
        meter.say("big.jsonl: 1000 records")
    assert log.getvalue() == "add: big.jsonl: 1000 records\n"


def test_publish_shows_progress_on_a_terminal_only(tmp_path, record):
    db = tmp_path / "db.sqlite"
    run_cli("init", "--no-seed", db=db)
    run_cli("add", str(write_jsonl(tmp_path / "r.jsonl", [record])), db=db)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TPSDB_PROGRESS", None)
    piped = subprocess.run([sys.executable, "-m", "tpsdb", "publish", "--out", str(tmp_path / "a"), "--db", str(db)],
                           capture_output=True, text=True, env=env, timeout=120)
    assert piped.returncode == 0 and piped.stderr.startswith("wrote ") and "publish:" not in piped.stderr
    leader, follower = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "tpsdb", "publish", "--out", str(tmp_path / "b"), "--db", str(db)],
                          stdout=subprocess.DEVNULL, stderr=follower, env=env) as process:
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            seen += chunk
        assert process.wait(timeout=120) == 0
    os.close(leader)
    text = seen.decode("utf-8", "replace")
    assert "\rpublish: " in text and "(100%)" in text and "wrote " in text
