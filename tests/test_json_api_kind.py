"""The `json_api` kind end to end: `tpsdb refresh` (the CLI, in process) against a local stand-in for the InferenceX
API on 127.0.0.1, answering one JSON array per `?model=` request as the real API does. The answers are built here
from a few points shaped like the real ones (never a copy of the shared files).

First refresh stores every figure with the point's exact text as its quote; the second is all 304; a changed
answer supersedes and withdraws; a truncated, empty or error answer fails the source and leaves the database as
it was."""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from conftest import run_cli
from refresh_helpers import dump, rows
from tpsdb.readers import _serving

API = "https://inferencex.semianalysis.com/api/v1/benchmarks"
MODELS = ["DeepSeek-R1-0528", "gpt-oss-120b"]
# A stand-in for a cited size (the test's own; the shipped reference holds none for this checkpoint).
CHECKPOINT = _serving.Checkpoint("deepseek-ai/DeepSeek-R1-0528", "DeepSeek-R1-0528", "FP8", 671.0, 37.0, 688.6)


def point(conc: int, per_user: float, per_gpu: float, *, date: str = "2026-05-20") -> dict:
    """A point as the API answers it (the fields the reader reads, and a few it does not)."""
    return {"hardware": "h200", "framework": "sglang", "model": "dsr1", "precision": "fp8", "spec_method": "none",
            "disagg": False, "is_multinode": False, "prefill_tp": 8, "prefill_ep": 1, "prefill_dp_attention": False,
            "prefill_num_workers": 0, "decode_tp": 8, "decode_ep": 1, "decode_dp_attention": False,
            "decode_num_workers": 0, "num_prefill_gpu": 8, "num_decode_gpu": 8, "isl": 1024, "osl": 1024,
            "conc": conc, "image": "lmsysorg/sglang:v0.5.12-cu130",
            "metrics": {"median_ttft": 0.1021, "median_intvty": per_user, "tput_per_gpu": per_gpu * 2.01,
                        "output_tput_per_gpu": per_gpu},
            "workers": None, "date": date,
            "run_url": "https://github.com/SemiAnalysisAI/InferenceX/actions/runs/26000000001/attempts/1"}


def answer(*points: dict) -> bytes:
    return json.dumps(list(points), indent=2).encode()  # pretty-printed, as the captures are


class StandIn:
    """The API on 127.0.0.1: `answers[model]` is the body for `?model=`; ETag and 304; faults on demand."""

    def __init__(self):
        self.answers: dict[str, bytes] = {}
        self.faults: list[str] = []  # "500", "truncate": one per request, in order
        self.requests: list[tuple[str, str | None]] = []  # (model, If-None-Match)
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                parts = urlsplit(self.path)
                model = parse_qs(parts.query).get("model", [""])[0]
                stand_in.requests.append((model, self.headers.get("If-None-Match")))
                fault = stand_in.faults.pop(0) if stand_in.faults else None
                body = stand_in.answers.get(model)
                if parts.path != "/api/v1/benchmarks" or body is None or fault == "500":
                    self._send(500 if fault == "500" else 404, b'{"error":"no"}')
                    return
                etag = '"' + hashlib.sha256(body).hexdigest() + '"'
                if self.headers.get("If-None-Match") == etag:
                    self._send(304, b"", etag)
                elif fault == "truncate":
                    self._send(200, body[: len(body) // 2], etag)  # a whole response of half an answer
                else:
                    self._send(200, body, etag)

            def _send(self, status, body, etag=None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if etag:
                    self.send_header("ETag", etag)
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/api/v1/benchmarks"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def served(empty_db, tmp_path, monkeypatch):
    monkeypatch.setitem(_serving.checkpoints(), CHECKPOINT.repo.lower(), CHECKPOINT)
    sources = tmp_path / "sources"
    sources.mkdir()
    with StandIn() as api:
        (sources / "inferencex.toml").write_text(
            f'key = "inferencex-test"\nurl = "{API}"\nkind = "json_api"\nformat = "inferencex"\n'
            f'queries = {json.dumps(MODELS)}\nfetch_url = "{api.base}"\n', encoding="utf-8")

        def refresh(check=True):
            env = {"TPSDB_HTTP_PAUSE_S": "0", "TPSDB_HTTP_BACKOFF_S": "0.01", "TPSDB_HTTP_MAX_ATTEMPTS": "2",
                   "TPSDB_HTTP_TIMEOUT_S": "5", "TPSDB_HTTP_MAX_TOTAL_S": "20"}
            result = run_cli("refresh", "inferencex-test", "--format", "json", "--sources-dir", str(sources),
                             db=empty_db, env=env, check=check)
            return json.loads(result.stdout)[0]

        yield empty_db, api, refresh


def figures(db) -> list[dict]:
    return rows(db, "SELECT tokens_per_second AS v, status, quote, source_url, users, figure FROM measurement "
                    "ORDER BY id")


def test_a_refresh_stores_each_point_quoted_exactly_then_answers_304(served):
    db, api, refresh = served
    first_points = [point(4, 61.5, 240.25), point(64, 23.75, 1400.5)]
    api.answers = {MODELS[0]: answer(*first_points), MODELS[1]: answer(point(4, 70.0, 300.0) | {"model": "x"})}
    summary = refresh()
    assert (summary["status"], summary["new"]) == ("ok", 4), summary
    stored = figures(db)
    assert sorted(f["v"] for f in stored) == [23.75, 61.5, 240.25, 1400.5]
    text = api.answers[MODELS[0]].decode()
    for f in stored:
        assert f["quote"] in text and f["quote"].startswith("{") and f["quote"].endswith("}")  # one whole point
        assert f["source_url"] == f"{API}?model=DeepSeek-R1-0528"
    assert {(f["users"], f["figure"]) for f in stored} == {(4, "per_user"), (4, "aggregate"), (64, "per_user"),
                                                          (64, "aggregate")}
    # the unknown model's point is kept as rejections naming why
    reasons = " ".join(r["reasons"] for r in rows(db, "SELECT reasons FROM rejection"))
    assert "no benchmark config 'x-fp8-h200-sglang'" in reasons

    before = dump(db)
    second = refresh()
    assert second["status"] == "unchanged" and second["not_modified"] == 2
    assert all(etag for _, etag in api.requests[-2:])  # asked conditionally
    assert dump(db) == before


def test_a_changed_answer_supersedes_and_retires_what_it_no_longer_holds(served):
    db, api, refresh = served
    api.answers = {MODELS[0]: answer(point(4, 61.5, 240.25), point(64, 23.75, 1400.5)),
                   MODELS[1]: answer(point(8, 50.0, 200.0))}
    refresh()
    api.answers[MODELS[0]] = answer(point(4, 62.0, 240.25))  # the conc-4 point re-measured, the conc-64 one gone
    summary = refresh()
    assert summary["status"] == "ok", summary
    status = {f["v"]: f["status"] for f in figures(db)}
    assert (status[61.5], status[62.0], status[240.25]) == ("superseded", "active", "active")
    assert status[23.75] != "active" and status[1400.5] != "active"  # gone from the answer: retired, kept


@pytest.mark.parametrize("fault", ["truncate", "empty", "500"])
def test_a_truncated_empty_or_failed_answer_fails_the_source_and_withdraws_nothing(served, fault):
    db, api, refresh = served
    api.answers = {MODELS[0]: answer(point(4, 61.5, 240.25)), MODELS[1]: answer(point(8, 50.0, 200.0))}
    refresh()
    before = dump(db)
    if fault == "empty":
        api.answers[MODELS[0]] = b"[]"
    else:
        api.answers[MODELS[0]] = answer(point(4, 61.5, 240.25), point(16, 40.0, 700.0))  # new bytes: no 304
        api.faults = [fault] * 2  # both attempts
    summary = refresh(check=False)
    assert summary["status"] == "failed", summary
    assert dump(db) == before
    assert all(f["status"] == "active" for f in figures(db))


def test_a_source_file_is_checked(tmp_path):
    from tpsdb.kinds import load_source
    from tpsdb.sources import SourceFileError

    bad = {"format": 'format = "nope"', "queries": "queries = [1]", "url": "",
           "seed": '[seed]\ncopies = [{file = "/etc/x", date = "2026-01-01"}]'}
    for what, line in bad.items():
        text = f'key = "k"\nurl = "{API}{"?model=x" if what == "url" else ""}"\nkind = "json_api"\n'
        text += ('format = "inferencex"\n' if what != "format" else "") + line + "\n"
        path = tmp_path / f"{what}.toml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(SourceFileError, match=what):
            load_source(path)
