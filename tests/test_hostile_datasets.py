"""The dataset readers, the repo_file and json_api kinds and `tpsdb load` against a hostile source (probe of
2026-12-06): whatever the bytes, a reader returns candidates (a malformed row a rejection naming the field) or
raises one of the errors the kinds turn into a clean `error:` line (ValueError, KeyError, TypeError), never a
RecursionError or an AttributeError (exit 4), and no figure is accepted from a malformed row."""

from __future__ import annotations

import json
import time
from datetime import date

import pytest

from conftest import run_cli
from fixture_server import FixtureServer
from refresh_helpers import dump, rows, server_env
from test_json_api_kind import MODELS, answer, point, served  # noqa: F401  (served: the stand-in API's fixture)
from test_linear_time import time_limit
from tpsdb import tokatlas
from tpsdb.readers import FileContext, _serving, names, reader
from tpsdb.readers._serving import Checkpoint
from tpsdb.record import validate

TODAY = date(2026, 12, 5)
PATHS = {"kyuz0": "docs/results.json", "lhl": "llm-bench/m/results.jsonl", "xiongjiedai": "4090_4_v3.ipynb",
         "lotto": "data/benchmarks.jsonl", "mlperf": "summary_results.json"}
CLEAN = (ValueError, KeyError, TypeError)  # what repo_file and json_api turn into PageFormatError
DEEP = 100_000


def ctx(name: str, siblings: dict | None = None) -> FileContext:
    path = PATHS.get(name, "api/answer")
    return FileContext(url=f"https://github.com/o/r/blob/{'0' * 40}/{path}", path=path, retrieved_at="2026-12-01",
                       published_at="2026-11-01", siblings=siblings or {})


HOSTILE = {
    "empty": b"",
    "not UTF-8": b"\xff\xfe\x00\x80",
    "BOM then []": b"\xef\xbb\xbf[]",
    "a list": b"[1, 2]",
    "a number": b"42",
    "a string": b'"x"',
    "null": b"null",
    "runs not a list": b'{"runs": 5}',
    "array nested 10^5 deep": b'{"runs": ' + b"[" * DEEP + b"]" * DEEP + b"}",
    "row nested 10^5 deep": b"[" + b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"]",
    "JSONL line nested 10^5 deep": b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"\n",
    "4,301-digit number": b'[{"tps_mean": 1' + b"0" * 4300 + b', "output_tok_s": 1' + b"0" * 4300 + b"}]",
    "rows of wrong member types": json.dumps([{
        "model": ["m"], "test": {"a": 1}, "tps_mean": {"a": 1}, "build": [1], "quant": ["q"], "engine": ["e"],
        "checkpoint_ref": {"a": 1}, "bench_raw": [1], "curve": {"a": 1}, "metrics": [1], "hardware": ["h"],
        "Performance_Units": "Tokens/s", "Accelerator": ["x"], "Software": {"a": 1}, "id": {"a": 1}}]).encode(),
    "notebook cells not a list": b'{"cells": 5}',
    "notebook with malformed outputs": json.dumps({"cells": [
        "a cell that is a string",
        {"cell_type": "code", "source": 5, "outputs": [5, {"text": {"a": 1}}, {"data": 5},
                                                        {"data": {"text/plain": 7}}, {"text": ["t/s", 5]}]},
        {"cell_type": "code", "source": ["!./main"], "outputs": {"a": 1}}]}).encode(),
}


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.parametrize("name", names())
def test_every_reader_reads_hostile_bytes_as_candidates_or_a_clean_error(name, case):
    sibling = {"llm-bench/m/system_info.json": b"[1]"} if name == "lhl" else {}  # a sibling that lies too
    try:
        found = reader(name).read(HOSTILE[case], ctx(name, sibling))
    except CLEAN:
        return
    # read: nothing from these bytes is a figure
    assert all(c.reasons or not validate(c.record, today=TODAY).accepted for c in found)


def test_a_notebook_that_is_not_an_object_is_named_as_such():
    with pytest.raises(ValueError, match="not a notebook"):
        reader("xiongjiedai").read(b"[]", ctx("xiongjiedai"))


def test_a_system_info_that_is_not_an_object_names_no_machine():
    line = json.dumps({"bench_raw": {"model_filename": "/m/Qwen3-32B-Q8_0.gguf", "n_prompt": 0, "n_gen": 128,
                                     "avg_ts": 10.5}})
    found = reader("lhl").read(line.encode(), ctx("lhl", {"llm-bench/m/system_info.json": b'["cpu"]'}))
    assert any(r.startswith("hardware.name: no system_info.json") for r in found[0].reasons)


def test_a_jsonl_line_that_is_not_an_object_fails_the_lhl_file_naming_the_line():
    with pytest.raises(ValueError, match="line 2: not a JSON object"):
        reader("lhl").read(b'{"a": 1}\n[1]\n', ctx("lhl"))


@pytest.mark.parametrize("name", ["lotto", "lhl"])
def test_a_line_separator_inside_a_json_string_does_not_cut_the_record(name):
    # JSONL lines end at "\n": U+2028 and U+2029 are legal raw inside a JSON string
    lines = [json.dumps({"checkpoint_ref": "a\u2028b\u2029c", "start_time": "x"}, ensure_ascii=False),
             json.dumps({"checkpoint_ref": "d"})]
    found = reader(name).read("\r\n".join(lines).encode(), ctx(name))
    assert len(found) == 2
    assert found[0].record["source"]["quote"] == lines[0]


def _lotto_line(**changes) -> str:
    row = {"schema_version": 2, "run_id": "r1", "date": "2026-07-01", "checkpoint_ref": "Mistral-7B-v0.3",
           "quant": "bf16", "engine": "vllm", "engine_version": "0.25.0", "tp": 2, "pp": 1, "concurrency": 8,
           "prompt_tokens": 512, "gen_tokens": 256, "output_tok_s": 312.4, "output_tps_kind": "aggregate_output"}
    row.update(changes)
    return json.dumps(row)


@pytest.fixture
def mistral(monkeypatch):
    monkeypatch.setitem(_serving.checkpoints(), "mistralai/mistral-7b-v0.3",
                        Checkpoint("mistralai/Mistral-7B-v0.3", "Mistral-7B-v0.3", "BF16", 7.25, None, 14.5))


def test_a_row_with_a_number_too_long_to_read_is_a_rejection_the_other_rows_stand(mistral):
    long = _lotto_line(run_id="r2").replace("312.4", "1" + "0" * 4300)
    good, bad = reader("lotto").read(f"{_lotto_line()}\n{long}\n".encode(), ctx("lotto"))
    assert good.reasons == [] and validate(good.record, today=TODAY).accepted
    assert bad.reasons == ["record: not a JSON object"]


@pytest.mark.parametrize("label", [["bf16"], {"a": "bf16"}, 16])
def test_a_quant_label_that_is_not_text_is_no_named_format(mistral, label):
    lotto = reader("lotto").read(_lotto_line(quant=label).encode(), ctx("lotto"))[0]
    assert any(r.startswith("quantization: not a named format") for r in lotto.reasons)
    row = {"id": "x", "model": {"hfId": "o/m"}, "engine": {"quantization": label, "engineName": ["vllm"]},
           "tokSOut": 5}
    local = reader("localmaxxing").read(json.dumps([row]).encode(), ctx("localmaxxing"))[0]
    assert any(r.startswith("quantization: not a named format") for r in local.reasons)


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e999", "-0.0", "0", "1" + "0" * 40])
def test_a_figure_that_is_no_finite_positive_number_is_never_accepted(mistral, value):
    line = _lotto_line().replace("312.4", value)
    found = reader("lotto").read(line.encode(), ctx("lotto"))[0]
    assert found.reasons or not validate(found.record, today=TODAY).accepted


# ------------------------------------------------------------------------------------------ relayed facts


def test_a_quote_of_long_blank_cells_is_read_in_linear_time():
    # "a | " and 4,000 blanks took 59 s of CPU before (the cells' lazy run and the blanks around them overlapped)
    quote = "; ".join(["a | " + " " * 50_000 + "x", "b" * 50_000, "llama 7B Q4_0 | tg128 | 171.19 ± 3.98"])
    start = time.process_time()
    with time_limit(5, "a hostile input"):
        rows = tokatlas._quoted_rows(quote)
    assert time.process_time() - start < 1
    assert [(shape.generated_tokens, value, sd) for shape, value, sd in rows] == [(128, 171.19, 3.98)]


# ------------------------------------------------------------------------------------------------ kyuz0
KYUZ0_RUN = {"model": "m-Q4_0.gguf", "model_clean": "m-Q4_0", "test": "tg128", "tps_mean": 100.5, "quant": "Q4_0",
             "params_b": 7, "file_size_gib": 3.5, "backend": "Vulkan", "ngl": 99, "fa": 1, "env": "vulkan",
             "build": {"number": 5000, "hash": "abcdef1"}}


@pytest.mark.parametrize("document", [
    {"runs": 5, "other": [KYUZ0_RUN]},  # read before: the first "[" after the key, another array's runs
    {"runs": {"a": KYUZ0_RUN}},
])
def test_kyuz0_reads_runs_only_from_the_top_level_runs_array(document):
    with pytest.raises(ValueError, match="runs: not a list at the top level"):
        reader("kyuz0").read(json.dumps(document).encode(), ctx("kyuz0"))


def test_kyuz0_a_runs_key_nested_elsewhere_is_not_the_runs():
    document = {"meta": {"runs": [KYUZ0_RUN]}, "runs": []}  # read before: the nested runs, as figures
    assert reader("kyuz0").read(json.dumps(document).encode(), ctx("kyuz0")) == []


def test_kyuz0_a_run_that_is_not_an_object_is_a_rejection_not_dropped():
    text = json.dumps({"runs": [5, KYUZ0_RUN]})
    bad, good = reader("kyuz0").read(text.encode(), ctx("kyuz0"))
    assert bad.reasons == ["record: not a JSON object"] and bad.record["source"]["quote"] == "5"
    assert good.reasons == [] and good.record["source"]["quote"] == json.dumps(KYUZ0_RUN)


def test_kyuz0_runs_given_twice_is_refused():
    text = '{"runs": [%s], "runs": []}' % json.dumps(KYUZ0_RUN)
    with pytest.raises(ValueError, match="runs: the key is given twice"):
        reader("kyuz0").read(text.encode(), ctx("kyuz0"))


# ------------------------------------------------------------------------------- repo_file: a lying listing
REPO, PATH = "someone/strix-bench", "docs/results.json"
A, B = "a" * 40, "b" * 40


def _commit(sha, day: str = "2026-01-05") -> dict:
    return {"sha": sha, "commit": {"committer": {"date": f"{day}T10:00:00Z"}}}


def _results(*tps: float) -> bytes:
    return json.dumps({"runs": [dict(KYUZ0_RUN, tps_mean=v) for v in tps]}).encode()


@pytest.fixture
def github(tmp_path, empty_db):
    """A stand-in GitHub (commits listing and raw files) and a repo_file source of kyuz0's format."""
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "strix.toml").write_text(
        f'key = "strix"\nurl = "https://github.com/{REPO}/blob/{A}/{PATH}"\nkind = "repo_file"\nrepo = "{REPO}"\n'
        f'path = "{PATH}"\nformat = "kyuz0"\n', encoding="utf-8")
    with FixtureServer(root=tmp_path / "no-fixtures") as server:
        def refresh() -> tuple[int, dict]:
            env = server_env(server, TPSDB_GITHUB_API_URL=server.base_url,
                             TPSDB_GITHUB_RAW_URL=server.base_url + "/raw", TPSDB_HTTP_MAX_ATTEMPTS="1",
                             TPSDB_HTTP_MAX_TOTAL_S="5")
            with time_limit(20, "a hostile input"):
                result = run_cli("refresh", "strix", "--format", "json", "--sources-dir", str(sources),
                                 db=empty_db, env=env, check=False)
            return result.returncode, json.loads(result.stdout)[0]
        yield server, refresh, empty_db


def _stored(db) -> int:
    return rows(db, "SELECT count(*) AS n FROM measurement")[0]["n"]


def test_repo_file_a_listed_commit_whose_file_is_gone_fails_the_source_storing_nothing(github):
    server, refresh, db = github
    server.override(f"/repos/{REPO}/commits", json.dumps([_commit(B, "2026-02-01"), _commit(A)]).encode())
    server.override(f"/raw/{REPO}/{A}/{PATH}", _results(10.0))  # B's file: 404
    code, summary = refresh()
    assert (code, summary["status"]) == (1, "failed") and B in summary["error"], summary
    assert _stored(db) == 0


@pytest.mark.parametrize("listing, says", [
    ({"message": "Not Found"}, "not a list of commits"),
    ([_commit("not-hex" * 6)], "not a list of commits"),
    ([_commit(A.upper())], "not a list of commits"),
    ([_commit(["a"])], "not a list of commits"),
    ([5], "not a list of commits"),
    ([], "no commit changed"),
])
def test_repo_file_a_listing_that_lies_fails_the_source_naming_it(github, listing, says):
    server, refresh, db = github
    server.override(f"/repos/{REPO}/commits", json.dumps(listing).encode())
    code, summary = refresh()
    assert (code, summary["status"]) == (1, "failed") and says in summary["error"], summary
    assert _stored(db) == 0


def test_repo_file_a_commit_listed_twice_is_one_version(github):
    server, refresh, db = github
    server.override(f"/repos/{REPO}/commits", json.dumps([_commit(A), _commit(A)]).encode())
    server.override(f"/raw/{REPO}/{A}/{PATH}", _results(10.0, 11.0))
    code, summary = refresh()
    assert (code, summary["status"]) == (1, "failed") and f"the commit {A} twice" in summary["error"], summary
    assert _stored(db) == 0


def test_repo_file_a_listing_whose_pages_cycle_ends_naming_the_cycle(github, monkeypatch):
    monkeypatch.setattr("tpsdb.kinds.repo_file.PER_PAGE", 1)
    server, refresh, db = github
    path = f"/repos/{REPO}/commits"
    back = {"Link": "<{base}" + path + f'?path={PATH}&per_page=1&page=2>; rel="next"'}
    # page 1 -> page 2 -> page 2 -> …: each page full, each naming a next page
    server._set(("GET", path, None, None), json.dumps([_commit(A)]).encode(), "application/json", back)
    server._set(("GET", path, None, "2"), json.dumps([_commit(B)]).encode(), "application/json", back)
    server.override(f"/raw/{REPO}/{A}/{PATH}", _results(10.0))
    server.override(f"/raw/{REPO}/{B}/{PATH}", _results(11.0))
    code, summary = refresh()
    assert (code, summary["status"]) == (1, "failed") and "twice" in summary["error"], summary
    assert _stored(db) == 0


def test_repo_file_a_listing_that_never_ends_is_cut_at_max_pages(github, monkeypatch):
    monkeypatch.setattr("tpsdb.kinds.repo_file.PER_PAGE", 1)
    monkeypatch.setattr("tpsdb.kinds.repo_file.MAX_PAGES", 2)
    server, refresh, db = github
    path = f"/repos/{REPO}/commits"
    for page, sha in ((None, A), ("2", B), ("3", "c" * 40)):  # each page full and naming the next
        following = {"Link": "<{base}" + path + f'?path={PATH}&per_page=1&page={int(page or 1) + 1}>; rel="next"'}
        server._set(("GET", path, None, page), json.dumps([_commit(sha)]).encode(), "application/json", following)
    code, summary = refresh()
    assert (code, summary["status"]) == (1, "failed") and "beyond 2 pages" in summary["error"], summary
    assert _stored(db) == 0


@pytest.mark.parametrize("commit", [["x"], {"committer": "x"}, {"committer": {"date": 5}},
                                    {"committer": {"date": "not a date at all"}}])
def test_repo_file_a_commit_of_the_wrong_shape_has_no_date_never_a_crash(github, commit):
    server, refresh, db = github
    server.override(f"/repos/{REPO}/commits", json.dumps([{"sha": A, "commit": commit}]).encode())
    server.override(f"/raw/{REPO}/{A}/{PATH}", _results(10.0))
    code, summary = refresh()
    assert (code, summary["status"]) == (0, "ok"), summary.get("error")
    assert rows(db, "SELECT published_at FROM measurement") == [{"published_at": None}]


# ----------------------------------------------------------------------------- json_api: an answer that lies
ANSWERS = [  # (what the API answers, what the failure says)
    (b'{"error": "rate limited"}', "not an array"),
    (b"5", "not an array"),
    (b'"x"', "not an array"),
    (b"\xff\xfe[]", "codec can't decode"),
    (b"[" * DEEP + b"]" * DEEP, "nested too deeply"),
    (b"[]", "holds no record"),
    (b"<html>502 Bad Gateway</html>", "not an array"),
]


def test_json_api_an_answer_that_is_not_the_array_fails_the_source_naming_it(served):
    # one stand-in for every answer (its shutdown takes half a second)
    db, api, refresh = served
    api.answers = {MODELS[0]: answer(point(4, 61.5, 240.25)), MODELS[1]: answer(point(8, 50.0, 200.0))}
    refresh()
    before = dump(db)
    for body, says in ANSWERS:
        api.answers[MODELS[0]] = body
        summary = refresh(check=False)
        assert summary["status"] == "failed" and says in summary["error"], (body[:30], summary.get("error"))
        assert dump(db) == before


# ------------------------------------------------------------------------------------ tpsdb load: the copies
def _seeded(tmp_path, copy: str, siblings: str = "", listed: str = "") -> tuple:
    """A repo_file source whose one [seed] copy is `copy` (under tmp_path/shared)."""
    sources, shared = tmp_path / "sources", tmp_path / "shared"
    sources.mkdir(exist_ok=True)
    shared.mkdir(exist_ok=True)
    (sources / "strix.toml").write_text(
        f'key = "strix"\nurl = "https://github.com/{REPO}/blob/{A}/{PATH}"\nkind = "repo_file"\nrepo = "{REPO}"\n'
        f'path = "{PATH}"\nformat = "kyuz0"\n{siblings}\n[seed]\nretrieved_at = "2026-12-01"\n'
        f'copies = [{{ file = "{copy}", commit = "{A}", date = "2026-01-05"{listed} }}]\n', encoding="utf-8")
    return sources, shared


def _load(db, sources, shared, **env):
    with time_limit(20, "a hostile input"):
        return run_cli("load", "strix", "--shared", str(shared), "--sources-dir", str(sources), db=db, check=False,
                       env=env)


@pytest.mark.parametrize("copy, listed, siblings, says", [
    ("../../etc/passwd", "", "", "seed.copies[1].file: not a path inside the shared folder"),
    ("/etc/passwd", "", "", "seed.copies[1].file: not a path inside the shared folder"),
    ("a/../../x.json", "", "", "seed.copies[1].file: not a path inside the shared folder"),
    ("r.json", ', siblings = { "docs/info.json" = "../../etc/passwd" }', 'siblings = ["docs/info.json"]',
     "seed.copies[1].siblings: not a table of repo path = copy path inside the shared folder"),
    ("r.json", "", 'siblings = ["../../../etc/passwd"]', "siblings: not a list of paths in the repository"),
])
def test_load_a_copy_path_that_escapes_the_shared_folder_is_refused_naming_the_field(tmp_path, empty_db, copy,
                                                                                      listed, siblings, says):
    sources, shared = _seeded(tmp_path, copy, siblings, listed)
    result = _load(empty_db, sources, shared)
    assert result.returncode == 2 and f"error: strix.toml: {says}" in result.stderr, result.stdout + result.stderr
    assert _stored(empty_db) == 0


def test_load_a_link_out_of_the_shared_folder_is_refused(tmp_path, empty_db):
    outside = tmp_path / "outside.json"
    outside.write_bytes(_results(10.0))  # a good file: read before, as if it were in the shared folder
    sources, shared = _seeded(tmp_path, "r.json")
    (shared / "r.json").symlink_to(outside)
    result = _load(empty_db, sources, shared)
    assert result.returncode == 1 and "outside the shared folder" in result.stdout, result.stdout
    assert _stored(empty_db) == 0


def test_load_a_link_inside_the_shared_folder_is_read(tmp_path, empty_db):
    sources, shared = _seeded(tmp_path, "r.json")
    (shared / "real.json").write_bytes(_results(10.0))
    (shared / "r.json").symlink_to(shared / "real.json")
    assert _load(empty_db, sources, shared).returncode == 0
    assert _stored(empty_db) == 1


def test_load_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, empty_db):
    import os

    sources, shared = _seeded(tmp_path, "r.json")
    os.mkfifo(shared / "r.json")  # read before: open() waited for a writer for ever
    result = _load(empty_db, sources, shared)
    assert result.returncode == 1 and "r.json: not a regular file" in result.stdout, result.stdout


def test_load_a_missing_copy_names_it(tmp_path, empty_db):
    sources, shared = _seeded(tmp_path, "gone.json")
    result = _load(empty_db, sources, shared)
    assert result.returncode == 1 and "gone.json: No such file or directory" in result.stdout, result.stdout


def test_load_a_copy_larger_than_an_answer_may_be_is_refused_unread(tmp_path, empty_db):
    sources, shared = _seeded(tmp_path, "r.json")
    with open(shared / "r.json", "wb") as handle:  # 8 GiB that take no disk (sparse): read before, whole
        handle.truncate(8 * 2**30)
    result = _load(empty_db, sources, shared, TPSDB_HTTP_MAX_BYTES=str(2**20))
    assert result.returncode == 1 and "8589934592 bytes, more than" in result.stdout, result.stdout
    assert _stored(empty_db) == 0


def test_lhl_a_file_that_starts_with_a_bom_is_read():
    line = json.dumps({"start_time": 1, "bench_raw": {"model_filename": "/m/Qwen3-32B-Q8_0.gguf", "n_prompt": 0,
                                                      "n_gen": 128, "avg_ts": 10.5}})
    (found,) = reader("lhl").read(b"\xef\xbb\xbf" + line.encode(), ctx("lhl"))  # read before: "Unexpected BOM"
    assert found.record["tokens_per_second"] == 10.5


def test_tokatlas_a_number_of_4301_digits_is_a_file_error_not_an_internal_one(tmp_path, empty_db):
    path = tmp_path / "peer.json"
    path.write_text('{"records": [{"id": "x", "source_url": "https://github.com/o/r/discussions/1", "quote": "q", '
                    '"tps": 1' + "0" * 4300 + "}]}", encoding="utf-8")
    result = run_cli("import", "tokatlas", str(path), db=empty_db, check=False)  # read before: exit 4
    assert result.returncode == 2 and "peer.json: not a JSON file (Exceeds the limit (4300 digits)" in result.stderr
    assert _stored(empty_db) == 0


def test_a_long_run_of_blanks_in_a_procedure_is_cleaned_in_linear_time():
    # the loopback --host option is dropped with the blanks before it; a run of blanks followed by no --host was
    # scanned again from each of its blanks: 40,000 took 2.3 s before (quadratic)
    row = {"id": "x", "model": {"hfId": "o/m"}, "engine": {"quantization": "q4_k_m", "engineName": "llama.cpp"},
           "tokSOut": 50.0, "notes": "llama-bench" + " " * 200_000 + "x --host 127.0.0.1 -np 1",
           "engineFlags": {"commandSnippet": "llama-server --host=localhost -np 1" + " " * 200_000 + "x"}}
    start = time.process_time()
    with time_limit(5, "a hostile input"):
        (found,) = reader("localmaxxing").read(json.dumps([row]).encode(), ctx("localmaxxing"))
    assert time.process_time() - start < 1
    assert found.record["software"]["options"]["command"] == "llama-server -np 1" + " " * 200_000 + "x"
    assert "--host" not in found.record["nature"]["procedure"]
