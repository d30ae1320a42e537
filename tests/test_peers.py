"""Issue 9, items 4-6: versions in build order, the tokatlas peer dataset, conformance per source."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tpsdb.cli
from conftest import ROOT, run_cli
from refresh_helpers import refresh, rows
from shared_data import TOKATLAS_JSON, need
from test_publish import SPARK, TG128, ULTRA, build, build_db, definition, rec

TOKATLAS = TOKATLAS_JSON


def tokatlas_bytes() -> bytes:
    return need(TOKATLAS).read_bytes()


OP_4167 = "https://github.com/ggml-org/llama.cpp/discussions/4167"
# A slice of the real file: two condensed rows of the 4167 opening post's scoreboard (M1, 7 GPU cores: Q8_0 and
# Q4_0), one whole row of it (M2 Ultra 86ed72d2 + FA, F16), a 15013 comment, a 27593 row with only a prompt
# figure, a row whose format is "as-published", and the two records that share the id
# lc-disc-4167-c18631101-code-off.
SLICE = [0, 1, 90, 1129, 1898, 785, 1866, 1872]
ALWAYS_MISSING = ["lengths.context_depth: missing", "model.file_size_gb: missing", "software.version: missing",
                  "concurrency.users: missing", "concurrency.figure: missing", "nature.procedure: missing",
                  "model.params_b: missing"]


def tokatlas_slice(tmp_path: Path, indexes=SLICE) -> Path:
    data = json.loads(tokatlas_bytes())
    path = tmp_path / "slice.json"
    path.write_text(json.dumps({"source": data["source"], "records": [data["records"][i] for i in indexes]}))
    return path


def import_file(db: Path, path: Path, fmt: str = "tokatlas"):
    return CliRunner().invoke(tpsdb.cli.app, ["import", fmt, str(path), "--db", str(db)])


# ------------------------------------------------------------------------------------------ 4. build order
def test_versions_in_build_order_through_a_commit_numbered_elsewhere(tmp_path):
    """A commit-only version takes the build number another version string gives the same commit; the post's date
    (here the reverse order) plays no part."""
    engine, _, _ = build_db(tmp_path, [
        rec(ULTRA, 94.27, version="aaaa1111", published="2023-11-22", comment=1),
        rec(ULTRA, 125.5, version="bbbb2222", published="2024-06-01", options={"fa": 1}, comment=2),
        rec(SPARK, 50.0, version="b3000 (aaaa1111)", comment=3),
        rec(SPARK, 51.0, version="b1000 (bbbb222)", comment=4),  # an abbreviated commit: the common prefix counts
    ])
    fixed = {k: v for k, v in TG128.items() if k != "quantization"} | {"hardware": ULTRA}
    table = build(engine, definition("versions", fixed, columns=["Q4_0"]))
    assert [r["version"].text for r in table.rows] == ["bbbb2222", "aaaa1111"]
    assert table.rows[1]["change_Q4_0"].text == "-24.9%"  # 94.27 / 125.5 - 1: the oldest build is the baseline
    assert any("build-number order" in n for n in table.notes)


def test_seed_versions_table_says_its_order_is_unknown(seeded_db):
    db = seeded_db
    out = run_cli("tables", "versions", db=db).stdout
    assert "order of these versions is unknown" in out and "vs oldest" not in out
    assert "| 8e672efe | ngl=99 |" in out


# ----------------------------------------------------------------------------------------- 5. the importer
def test_tokatlas_slice_exact_counts_and_reasons(empty_db, tmp_path):
    result = import_file(empty_db, tokatlas_slice(tmp_path))
    assert result.exit_code == 1, result.output
    assert "8 records, 13 figures (3 records read with their thread's protocol)" in result.output
    assert "1 ids occur more than once, every record kept (slots ~2, ~3…): lc-disc-4167-c18631101-code-off" in result.output
    assert "8 measurements added, 0 already stored; 5 rejections added, 0 already stored" in result.output

    accepted = rows(empty_db, "SELECT hardware, quantization, phase, tokens_per_second, software_version, "
                              "software_options, prompt_tokens, generated_tokens, users, figure, source_url, via_title, "
                              "context_depth, quote FROM measurement_full ORDER BY measurement_id")
    # The 15013 comment's row, read fully: its build (config=b06060 in tokatlas's notes), the llama-bench test of
    # its quoted rows (pp512 / tg128, depth 0, one user) and the thread's protocol (Llama 2 7B, its 3.79 GB file).
    comment = [r for r in accepted if r["source_url"].endswith("#discussioncomment-13963584")]
    assert [(r["phase"], r["software_version"], r["prompt_tokens"], r["generated_tokens"], r["context_depth"])
            for r in comment] == [("generation", "b6060", 0, 128, 0), ("prompt", "b6060", 512, 0, 0)]
    assert all(r["quote"].startswith("[tokatlas's rendering, not the post's text] ") for r in accepted)
    accepted = [r for r in accepted if r not in comment]
    assert [(r["hardware"], r["quantization"], r["phase"], r["tokens_per_second"]) for r in accepted] == [
        ("Apple M1 (7-core GPU)", "Q8_0", "prompt", 108.21), ("Apple M1 (7-core GPU)", "Q8_0", "generation", 7.92),
        ("Apple M1 (7-core GPU)", "Q4_0", "prompt", 107.81), ("Apple M1 (7-core GPU)", "Q4_0", "generation", 14.19),
        ("Apple M2 Ultra (76-core GPU)", "F16", "prompt", 1525.95),
        ("Apple M2 Ultra (76-core GPU)", "F16", "generation", 43.15)]
    # The protocol file fixes the scoreboard's conditions; the row's own commit and "+ FA" win, as in a direct scrape.
    assert {r["software_version"] for r in accepted[:4]} == {"8e672efe"}
    assert accepted[4]["software_version"] == "86ed72d2" and json.loads(accepted[4]["software_options"])["fa"] == 1
    assert all(r["source_url"] == OP_4167 and r["via_title"] == "tokatlas" and r["users"] == 1
               and r["figure"] == "per_user" for r in accepted)

    rejected = rows(empty_db, "SELECT slot, reasons, source_url FROM rejection ORDER BY id")
    reasons = {r["slot"]: json.loads(r["reasons"]) for r in rejected}
    assert sorted(reasons) == [
        "tokatlas:lc-disc-10879-c14995287-gptoss20bmxfp4moe-unknown:generation",
        "tokatlas:lc-disc-10879-c14995287-gptoss20bmxfp4moe-unknown:prompt",
        "tokatlas:lc-disc-27593-b2048-ub512:prompt",
        "tokatlas:lc-disc-4167-c18631101-code-off:generation",
        "tokatlas:lc-disc-4167-c18631101-code-off~2:generation",
    ]
    for slot, found in reasons.items():
        # the 10879 row quotes llama-bench rows: its lengths, depth and one user are read; its model is not known
        wanted = ALWAYS_MISSING[1:2] + ALWAYS_MISSING[-1:] if "10879" in slot else ALWAYS_MISSING
        assert set(wanted) <= set(found), slot
    assert 'quantization: not a named format ("as-published")' in reasons[
        "tokatlas:lc-disc-10879-c14995287-gptoss20bmxfp4moe-unknown:generation"]
    assert "lengths.generated_tokens: missing" not in reasons["tokatlas:lc-disc-27593-b2048-ub512:prompt"]
    assert any(r["source_url"].endswith("#discussioncomment-14995287") for r in rejected)
    # Importing again changes nothing.
    again = import_file(empty_db, tokatlas_slice(tmp_path))
    assert "0 measurements added, 8 already stored; 0 rejections added, 5 already stored" in again.output


def test_tokatlas_model_label_maps_through_the_protocol_alias_only_with_its_params(empty_db, tmp_path):
    data = json.loads(tokatlas_bytes())
    with_params = next(r for r in data["records"] if r["params"] == "6.74B" and "4167#" in r["source_url"])
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"records": [with_params, data["records"][1129]]}))
    assert import_file(empty_db, path).exit_code == 1
    models = [json.loads(r["candidate_json"])["model"]["name"]
              for r in rows(empty_db, "SELECT candidate_json FROM rejection ORDER BY id")]
    assert set(models) == {"Llama 2 7B"}
    # The 15013 row states no parameter count: the thread's protocol gives its model, parameters and file size.
    relayed = rows(empty_db, "SELECT model, params_b, file_size_gb FROM measurement_full")
    assert {(r["model"], r["params_b"], r["file_size_gb"]) for r in relayed} == {("Llama 2 7B", 6.74, 3.79)}


def test_tokatlas_bad_file_is_one_error_line_and_stores_nothing(empty_db, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"records": [{"id": "x", "source_url": "https://github.com/a/b/discussions/1"}]}')
    result = import_file(empty_db, bad)
    assert result.exit_code == 2
    assert f"error: {bad}: records[0]: quote: missing; nothing was stored" in result.output
    assert rows(empty_db, "SELECT COUNT(*) AS n FROM rejection")[0]["n"] == 0
    assert import_file(empty_db, bad, fmt="nope").exit_code == 2


def test_tokatlas_file_nested_too_deeply_is_one_error_line(empty_db, tmp_path):
    """Review 2026-12-01: it ended as an internal error (RecursionError, exit 4)."""
    deep = tmp_path / "deep.json"
    deep.write_text('{"records": [' + "[" * 100_000 + "]" * 100_000 + "]}", encoding="utf-8")
    result = import_file(empty_db, deep)
    assert result.exit_code == 2
    assert f"error: {deep}: nested too deeply" in result.output



def test_tokatlas_non_finite_figures_are_rejections(empty_db, tmp_path):
    """Python's JSON reader takes NaN and Infinity, and tokatlas writes some figures as strings ("1e999"): each such
    figure is kept as a rejection saying so, never stored as a figure."""
    path = tmp_path / "non-finite.json"
    url = f"{OP_4167}#discussioncomment-1"
    path.write_text('{"records": [{"id": "a", "source_url": "%s", "quote": "q", "tps": NaN, "pp_tps": Infinity},'
                    ' {"id": "b", "source_url": "%s", "quote": "q", "tps": "1e999", "pp_tps": "-inf"}]}'
                    % (url, url), encoding="utf-8")
    assert import_file(empty_db, path).exit_code == 1
    assert rows(empty_db, "SELECT COUNT(*) AS n FROM measurement")[0]["n"] == 0
    reasons = [r["reasons"] for r in rows(empty_db, "SELECT reasons FROM rejection")]
    assert len(reasons) == 4 and all("tokens_per_second: not a finite number" in r for r in reasons)


# ------------------------------------------------------------------ 5b. relayed facts: builds, twins (issue 18 #4)
T15013 = "https://github.com/ggml-org/llama.cpp/discussions/15013"


def relayed(n: int, day: str, build: str | None, thread: str = T15013, quote: str | None = None, **fields) -> dict:
    """A tokatlas record of comment n, as the real file writes them (a llama-bench row pair in the quote)."""
    return {"id": f"r{n}", "source_url": f"{thread}#discussioncomment-{n}", "date": day, "retrieved": "2026-09-27",
            "model": "llama 7B", "quant": "Q4_0", "params": None, "hardware": "GeForce RTX 4090",
            "backend": "llama.cpp (CUDA)", "tps": 180.5, "pp_tps": 9000.25, "pp_tokens": 512, "tg_tokens": 128,
            "quote": quote or "GeForce RTX 4090; llama 7B Q4_0 | pp512 | 9000.25 ± 1.00; llama 7B Q4_0 | tg128 | "
                              "180.50 ± 0.10",
            "notes": f"threads=8; config={build}" if build else "threads=8", **fields}


def write_records(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "records.json"
    path.write_text(json.dumps({"records": records}))
    return path


def test_relayed_build_is_checked_against_the_posts_date():
    from tpsdb.tokatlas import relayed_builds

    records = [relayed(1, "2025-08-02", "b06060"), relayed(2, "2025-08-05", "b06090"),
               relayed(3, "2025-08-20", "b06200"),
               relayed(4, "2025-08-21", "b00647"),  # far older than the thread's first month: tokatlas's stray number
               relayed(5, "2025-09-01", "b09999"),  # newer than any build relayed up to a month later
               relayed(6, "2025-09-02", "b2048-ub512"),  # a batch size, not a build
               relayed(7, "2025-09-03", "b06300", quote="GeForce RTX 4090; build: 1a2b3c4 (6310; llama 7B Q4_0 | "
                                                      "tg128 | 180.50 ± 0.10"),
               relayed(8, None, "b06300")]  # no date to check it by
    builds = relayed_builds(records)
    assert [b.version for b in builds] == ["b6060", "b6090", "b6200", None, None, None, "b6310 (1a2b3c4)", None]
    assert "far older than the builds the thread's first month ran (median b6145)" in builds[3].problem
    assert "newer than any build the relay records up to a month after" in builds[4].problem
    assert builds[5].stated is None and builds[5].problem is None
    assert builds[6].stated == "quote"  # the post's own build line, as relayed, before tokatlas's label
    assert "no date" in builds[7].problem


def test_relayed_row_read_fully_and_an_inconsistent_build_is_a_reason(empty_db, tmp_path):
    path = write_records(tmp_path, [relayed(1, "2025-08-02", "b06060"), relayed(2, "2025-08-05", "b06090"),
                                    relayed(3, "2025-08-21", "b00647")])
    assert import_file(empty_db, path).exit_code == 1
    accepted = rows(empty_db, "SELECT source_url, published_at, software_version, model, params_b, file_size_gb, "
                              "phase, prompt_tokens, generated_tokens, context_depth, users, figure, stddev, quote "
                              "FROM measurement_full ORDER BY measurement_id")
    assert [(r["source_url"][-2:], r["software_version"], r["phase"]) for r in accepted] == [
        ("-1", "b6060", "generation"), ("-1", "b6060", "prompt"), ("-2", "b6090", "generation"),
        ("-2", "b6090", "prompt")]
    first = accepted[0]
    assert (first["published_at"], first["model"], first["params_b"], first["file_size_gb"]) == (
        "2025-08-02", "Llama 2 7B", 6.74, 3.79)  # the thread's protocol: its model and the OP's file
    assert (first["prompt_tokens"], first["generated_tokens"], first["context_depth"], first["users"],
            first["figure"], first["stddev"]) == (0, 128, 0, 1, "per_user", 0.1)
    assert first["quote"].startswith("[tokatlas's rendering, not the post's text] GeForce RTX 4090; ")
    reasons = [json.loads(r["reasons"]) for r in rows(empty_db, "SELECT reasons FROM rejection")]
    assert len(reasons) == 2 and all("relayed build b647 set aside" in " ".join(r) for r in reasons)


def test_scoreboard_row_repeating_a_dated_comment_is_that_comments_figure(empty_db, tmp_path):
    data = json.loads(tokatlas_bytes())
    board = next(r for r in data["records"] if r["source_url"] == OP_4167 and r["hardware"] == "M5 Max (40 GPU)"
                 and r["quant"] == "Q4_0")
    comment = next(r for r in data["records"] if r["source_url"].endswith("-18152504") and r["quant"] == "Q4_0")
    assert import_file(empty_db, write_records(tmp_path, [board, comment])).exit_code == 1
    found = rows(empty_db, "SELECT hardware, source_url, published_at, software_version, tokens_per_second, quote "
                           "FROM measurement_full WHERE hardware LIKE '%40-core%' ORDER BY measurement_id")
    assert [(r["source_url"], r["published_at"], r["software_version"], r["tokens_per_second"]) for r in found] == [
        (comment["source_url"], "2026-08-25", "b10621", 3219.99), (comment["source_url"], "2026-08-25", "b10621",
                                                                   119.92)]
    assert found[0]["quote"].startswith("[tokatlas's rendering of the opening post's scoreboard row, which repeats "
                                        "the figures of comment 18152504; not the post's text] M5 Max (40 GPU)")
    # The comment's own record of the same figures is kept as a rejection saying so: the figure is stored once.
    assert rows(empty_db, "SELECT COUNT(*) AS n FROM measurement")[0]["n"] == 2
    repeated = [json.loads(r["reasons"]) for r in rows(empty_db, "SELECT reasons FROM rejection")]
    assert len(repeated) == 2 and all(r == ["source: the same figure as the opening post's scoreboard row (M5 Max "
                                            "(40 GPU)), stored once from that row with this comment's permalink, "
                                            "date and build"] for r in repeated)
    # Alone, the same row stays the opening post's, with the thread's 2023 build and date.
    alone = tmp_path / "alone"
    alone.mkdir()
    db = alone / "t.sqlite"
    run_cli("init", "--no-seed", db=db)
    assert import_file(db, write_records(alone, [board])).exit_code == 0
    assert {(r["source_url"], r["software_version"]) for r in rows(db, "SELECT * FROM measurement_full")} == {
        (OP_4167, "8e672efe")}


def test_whole_file_relay_counts():
    """Issue 18 item 4's counts, on the real file: builds per thread, and 75 of the 108 scoreboard rows."""
    from tpsdb.kinds import load_sources
    from tpsdb.tokatlas import parse_tokatlas, relay_context

    records = parse_tokatlas(need(TOKATLAS).read_bytes(), "tokatlas")
    contexts = relay_context(records, load_sources())
    noted = Counter(r["source_url"].split("#")[0].rsplit("/", 1)[1] for r in records
                    if re.search(r"config=b\d{5}(;|$)", r.get("notes") or ""))
    assert {t: noted[t] for t in ("15013", "10879", "15021", "23313")} == {
        "15013": 222, "10879": 699, "15021": 121, "23313": 142}
    board = [c for r, c in zip(records, contexts) if r["source_url"] == OP_4167]
    assert (len(board), sum(c.twin is not None for c in board)) == (108, 75)


# ------------------------------------------------------------------------------------- supersession
def test_direct_reading_supersedes_the_relayed_figure_with_history(tmp_path):
    from fixture_server import FixtureServer

    db = tmp_path / "t.sqlite"
    run_cli("init", "--no-seed", db=db)
    assert import_file(db, tokatlas_slice(tmp_path, [0, 1])).exit_code == 0
    relayed = rows(db, "SELECT id FROM measurement WHERE via_title = 'tokatlas' ORDER BY id")
    assert len(relayed) == 4
    with FixtureServer() as server:
        refresh(db, server, "llamacpp-4167")
    history = rows(db, "SELECT measurement_id, status, superseded_by_id FROM measurement_history "
                       "WHERE measurement_id IN (%s)" % ",".join(str(r["id"]) for r in relayed))
    assert {h["status"] for h in history} == {"superseded"}
    successors = rows(db, "SELECT m.supersedes_id, m.tokens_per_second, m.via_title, m.post_id "
                          "FROM measurement m WHERE m.supersedes_id IN (%s) ORDER BY m.supersedes_id"
                      % ",".join(str(r["id"]) for r in relayed))
    assert [s["tokens_per_second"] for s in successors] == [108.21, 7.92, 107.81, 14.19]
    assert all(s["via_title"] is None and s["post_id"] is not None for s in successors)
    # Importing the relay again after the direct reading leaves the direct figures in charge.
    assert import_file(db, tokatlas_slice(tmp_path, [0, 1])).exit_code == 0
    assert rows(db, "SELECT COUNT(*) AS n FROM measurement WHERE via_title = 'tokatlas' AND status = 'active'"
                )[0]["n"] == 0


# ------------------------------------------------------------------------------------------ 6. conformance
def test_conformance_view_and_table_per_source(empty_db, tmp_path):
    assert import_file(empty_db, tokatlas_slice(tmp_path)).exit_code == 1
    assert run_cli("add", str(ROOT / "data" / "curated" / "article.jsonl"), db=empty_db, check=False).returncode == 1
    view = {(r["relayed_by"], r["source_url"]): r for r in rows(empty_db, "SELECT * FROM source_conformance")}
    op = view[("tokatlas", OP_4167)]
    assert (op["figures_read"], op["accepted"], op["rejected"]) == (8, 6, 2)
    assert (op["commonest_missing"], op["commonest_missing_count"]) == ("concurrency.figure", 2)
    assert view[("tokatlas", "https://github.com/ggml-org/llama.cpp/discussions/15013")]["accepted"] == 2
    article = [r for (via, _), r in view.items() if via and via.startswith("Débit")]
    assert sum(r["figures_read"] for r in article) == 31
    out = run_cli("tables", "conformance", "--format", "json", db=empty_db).stdout
    table = json.loads(out)
    assert table["empty"] is False and any(row["relayed_by"]["text"] == "tokatlas" for row in table["rows"])



@pytest.mark.parametrize("member, value, says", [
    ("model", ["x"], "model: not text (list)"), ("model", {"a": 1}, "model: not text (dict)"),
    ("model", 5, "model: not text (int)"), ("tps", [1], "tps: not a number (list)"),
    ("tps", True, "tps: not a number (bool)")])
def test_l4_a_member_of_the_wrong_type_is_an_error_naming_the_record(empty_db, tmp_path, member, value, says):
    """Probe round 3, L4: a `model` that is no string ended `import tokatlas` with exit 4 (AttributeError)."""
    record = {"id": "x", "source_url": "https://github.com/a/b/discussions/1#discussioncomment-1", "quote": "1",
              "model": "m", "quant": "Q4_0", "tps": 1, member: value}
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"records": [record]}))
    result = import_file(empty_db, path)
    assert result.exit_code == 2, result.output
    assert f"records[0] (x): {says}; nothing was stored" in result.output
    assert rows(empty_db, "select count(*) n from rejection") == [{"n": 0}]
