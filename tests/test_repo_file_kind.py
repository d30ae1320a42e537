"""The `repo_file` kind against a real local server standing in for GitHub (REST commits listing + raw contents):
every version of the file is read, a run repeated by a later version stays ONE figure cited at the commit where it
first appears, a second refresh is answered 304, and `tpsdb load` of the same versions from copies stores the
same figures (a refresh after it adds none)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from fixture_server import FixtureServer
from refresh_helpers import rows, server_env

REPO, PATH = "someone/strix-bench", "docs/results.json"
A, B = "a" * 40, "b" * 40
KEY = "strix-results"


def run(model: str, test: str, tps: float, **extra) -> dict:
    """A run as kyuz0's results.json writes it."""
    return {"model": model, "model_clean": model, "env": "rocm-7_2", "fa": True, "context": "default",
            "test": test, "tps_mean": tps, "tps_std": 0.1, "error": False, "error_type": None, "backend": "ROCm",
            "ngl": 99, "mmap": 0, "params_b": 6.74, "file_size_gib": 3.56, "quant": "Q4_0", "rpc": False,
            "build": {"hash": "0253fb21f", "number": "9187"}, **extra}


def results(*runs: dict) -> bytes:
    return json.dumps({"meta": {"notes": "t/s"}, "runs": list(runs)}, indent=2).encode()


V1 = results(run("llama-2-7b.Q4_0", "pp512", 1500.5), run("llama-2-7b.Q4_0", "tg128", 50.25),
             run("llama-2-7b.Q4_0", "tg128", 40.0, rpc=True))
V2 = results(run("llama-2-7b.Q4_0", "pp512", 1500.5), run("llama-2-7b.Q4_0", "tg128", 50.25),
             run("llama-2-7b.Q4_0", "tg128", 40.0, rpc=True), run("llama-2-7b.Q4_0", "pp2048 @ d4096", 900.0))


def commit(sha: str, day: str) -> dict:
    return {"sha": sha, "commit": {"committer": {"date": f"{day}T10:00:00Z"}}}


def source_file(copies: str = "") -> str:
    text = (f'key = "{KEY}"\nurl = "https://github.com/{REPO}/blob/{A}/{PATH}"\nkind = "repo_file"\n'
            f'repo = "{REPO}"\npath = "{PATH}"\nformat = "kyuz0"\n')
    return text + (f'\n[seed]\nretrieved_at = "2026-12-01"\ncopies = [{copies}]\n' if copies else "")


@pytest.fixture
def served(tmp_path, empty_db):
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / f"{KEY}.toml").write_text(source_file(), encoding="utf-8")
    with FixtureServer(root=tmp_path / "no-fixtures") as server:
        server.override(f"/repos/{REPO}/commits", json.dumps([commit(A, "2026-01-05")]).encode())
        server.override(f"/raw/{REPO}/{A}/{PATH}", V1)
        yield empty_db, server, sources


def _refresh(db, server, sources) -> dict:
    return json.loads(run_cli(
        "refresh", KEY, "--format", "json", "--sources-dir", str(sources), db=db,
        env=server_env(server, TPSDB_GITHUB_API_URL=server.base_url, TPSDB_GITHUB_RAW_URL=server.base_url + "/raw",
                       TPSDB_HTTP_MAX_ATTEMPTS="2")).stdout)[0]


def _figures(db) -> list[dict]:
    return rows(db, "SELECT source_url, published_at, tokens_per_second, prompt_tokens, context_depth, quote "
                    "FROM measurement WHERE status = 'active' ORDER BY tokens_per_second")


def test_every_version_is_read_and_a_repeated_run_is_one_figure_cited_where_it_first_appears(served):
    db, server, sources = served
    first = _refresh(db, server, sources)
    assert (first["status"], first["new"], first["rejected"]) == ("ok", 2, 1)  # the RPC run is a rejection
    assert rows(db, "SELECT reasons FROM rejection")[0]["reasons"].count("RPC run") == 1

    again = _refresh(db, server, sources)
    assert again["status"] == "unchanged" and again["not_modified"] == again["requests"] == 2  # listing + file

    server.override(f"/repos/{REPO}/commits", json.dumps([commit(B, "2026-02-07"), commit(A, "2026-01-05")]).encode())
    server.override(f"/raw/{REPO}/{B}/{PATH}", V2)
    second = _refresh(db, server, sources)
    assert (second["status"], second["new"], second["changed"], second["withdrawn"]) == ("ok", 1, 0, 0)
    figures = _figures(db)
    assert [f["tokens_per_second"] for f in figures] == [50.25, 900.0, 1500.5]  # three runs, none twice
    cited = {f["tokens_per_second"]: (f["source_url"], str(f["published_at"])[:10]) for f in figures}
    assert cited[1500.5] == (f"https://github.com/{REPO}/blob/{A}/{PATH}", "2026-01-05")
    assert cited[900.0] == (f"https://github.com/{REPO}/blob/{B}/{PATH}", "2026-02-07")
    deep = next(f for f in figures if f["tokens_per_second"] == 900.0)
    assert (deep["prompt_tokens"], deep["context_depth"]) == (2048, 4096)
    assert deep["quote"] in V2.decode() and deep["quote"].startswith("{") and '"tps_mean": 900.0' in deep["quote"]
    assert len(rows(db, "SELECT id FROM rejection WHERE status = 'active'")) == 1  # the RPC run, once


def test_load_from_copies_stores_what_a_refresh_of_the_same_versions_stores(served, tmp_path):
    db, server, sources = served
    shared = tmp_path / "shared"
    (shared / "copies").mkdir(parents=True)
    (shared / "copies" / "v1.json").write_bytes(V1)
    (shared / "copies" / "v2.json").write_bytes(V2)
    copies = (f'{{ file = "copies/v1.json", commit = "{A}", date = "2026-01-05" }}, '
              f'{{ file = "copies/v2.json", commit = "{B}", date = "2026-02-07" }}')
    (sources / f"{KEY}.toml").write_text(source_file(copies), encoding="utf-8")
    loaded = json.loads(run_cli("load", "--seeded", "--shared", str(shared), "--format", "json",
                                "--sources-dir", str(sources), db=db).stdout)[0]
    assert (loaded["status"], loaded["transport"], loaded["new"], loaded["rejected"]) == ("ok", "seed", 3, 1)
    before = _figures(db)
    server.override(f"/repos/{REPO}/commits", json.dumps([commit(B, "2026-02-07"), commit(A, "2026-01-05")]).encode())
    server.override(f"/raw/{REPO}/{B}/{PATH}", V2)
    refreshed = _refresh(db, server, sources)
    assert (refreshed["status"], refreshed["new"], refreshed["changed"], refreshed["withdrawn"]) == ("ok", 0, 0, 0)
    assert _figures(db) == before


def test_a_missing_copy_fails_the_load_and_stores_nothing(served, tmp_path):
    db, _, sources = served
    copies = f'{{ file = "copies/gone.json", commit = "{A}", date = "2026-01-05" }}'
    (sources / f"{KEY}.toml").write_text(source_file(copies), encoding="utf-8")
    result = run_cli("load", KEY, "--shared", str(tmp_path), "--sources-dir", str(sources), db=db, check=False)
    assert result.returncode == 1 and "gone.json" in result.stdout
    assert rows(db, "SELECT count(*) AS n FROM measurement")[0]["n"] == 0


@pytest.mark.parametrize("setting, problem", [
    ('repo = "no-slash"', "repo: not OWNER/NAME"),
    ('format = "nope"', "format: 'nope' is not one of"),
    ('siblings = "x"', "siblings: not a list of paths"),
])
def test_bad_settings_are_refused_naming_the_field(tmp_path, setting, problem):
    from tpsdb.sources import SourceFileError, load_source

    name = setting.split(" = ")[0]
    lines = [line for line in source_file().splitlines() if not line.startswith(name + " =")] + [setting]
    path = tmp_path / "s.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SourceFileError, match=problem):
        load_source(path)
