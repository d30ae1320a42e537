"""Issue 9, items 4-6: versions in build order, the tokatlas peer dataset, conformance per source."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import tpsdb.cli
from conftest import ROOT, run_cli
from refresh_helpers import refresh, rows
from shared_data import TOKATLAS_JSON, need
from test_publish import SPARK, TG128, ULTRA, build, build_db, definition, rec

TOKATLAS = TOKATLAS_JSON
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
    data = json.loads(need(TOKATLAS).read_bytes())
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


def test_seed_versions_table_says_its_order_is_unknown(tmp_path):
    db = tmp_path / "seed.sqlite"
    run_cli("init", db=db)
    out = run_cli("tables", "versions", db=db).stdout
    assert "order of these versions is unknown" in out and "vs oldest" not in out
    assert "| 8e672efe | ngl=99 |" in out


# ----------------------------------------------------------------------------------------- 5. the importer
def test_tokatlas_slice_exact_counts_and_reasons(empty_db, tmp_path):
    result = import_file(empty_db, tokatlas_slice(tmp_path))
    assert result.exit_code == 1, result.output
    assert "8 records, 13 figures (3 records read with their thread's protocol)" in result.output
    assert "1 ids occur more than once, every record kept (slots ~2, ~3…): lc-disc-4167-c18631101-code-off" in result.output
    assert "6 measurements added, 0 already stored; 7 rejections added, 0 already stored" in result.output

    accepted = rows(empty_db, "SELECT hardware, quantization, phase, tokens_per_second, software_version, "
                              "software_options, prompt_tokens, generated_tokens, users, figure, source_url, via_title "
                              "FROM measurement_full ORDER BY measurement_id")
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
        "tokatlas:lc-disc-15013-c13963584-llama7b-Q4_0:generation",
        "tokatlas:lc-disc-15013-c13963584-llama7b-Q4_0:prompt",
        "tokatlas:lc-disc-27593-b2048-ub512:prompt",
        "tokatlas:lc-disc-4167-c18631101-code-off:generation",
        "tokatlas:lc-disc-4167-c18631101-code-off~2:generation",
    ]
    for slot, found in reasons.items():
        assert set(ALWAYS_MISSING) <= set(found), slot
    assert 'quantization: not a named format ("as-published")' in reasons[
        "tokatlas:lc-disc-10879-c14995287-gptoss20bmxfp4moe-unknown:generation"]
    assert "lengths.generated_tokens: missing" not in reasons["tokatlas:lc-disc-27593-b2048-ub512:prompt"]
    assert rejected[0]["source_url"].endswith("#discussioncomment-13963584")
    # Importing again changes nothing.
    again = import_file(empty_db, tokatlas_slice(tmp_path))
    assert "0 measurements added, 6 already stored; 0 rejections added, 7 already stored" in again.output


def test_tokatlas_model_label_maps_through_the_protocol_alias_only_with_its_params(empty_db, tmp_path):
    data = json.loads(need(TOKATLAS).read_bytes())
    with_params = next(r for r in data["records"] if r["params"] == "6.74B" and "4167#" in r["source_url"])
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"records": [with_params, data["records"][1129]]}))
    assert import_file(empty_db, path).exit_code == 1
    models = [json.loads(r["candidate_json"])["model"]["name"]
              for r in rows(empty_db, "SELECT candidate_json FROM rejection ORDER BY id")]
    assert models[0] == "Llama 2 7B" and models[-1] == "llama 7B"  # 15013 row: no params, no alias


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
    assert view[("tokatlas", "https://github.com/ggml-org/llama.cpp/discussions/15013")]["rejected"] == 2
    article = [r for (via, _), r in view.items() if via and via.startswith("Débit")]
    assert sum(r["figures_read"] for r in article) == 31
    out = run_cli("tables", "conformance", "--format", "json", db=empty_db).stdout
    table = json.loads(out)
    assert table["empty"] is False and any(row["relayed_by"]["text"] == "tokatlas" for row in table["rows"])

