"""The figures of the kyuz0, lhl and XiongjieDai datasets, loaded from ../shared through `tpsdb load` (the seed
path), checked against the files re-read here INDEPENDENTLY of the readers (plain json and regular expressions):
every accepted figure's quote is an exact substring of the file version it cites (of one cell's output text for a
notebook), and its value and lengths are the record's. A sample of the sources keeps it quick (the whole seed
takes a minute to load): 3 of kyuz0's 19 versions, 2 of lhl's 15 files, 4 of XiongjieDai's 80 notebooks (a
llama-bench one, a multi-GPU one, a Mac one and a `./main` one). Skipped without ../shared."""

from __future__ import annotations

import json
import re
import tomllib
from urllib.parse import unquote

import pytest

from conftest import ROOT, run_cli
from refresh_helpers import rows
from shared_data import SHARED, need

SAMPLE = {
    "kyuz0-strix-halo-results": slice(0, None, 8),  # versions 1, 9 and 17 of 19: the same runs repeat across them
    "lhl-strix-halo-llama-2-7b-q4-0": None,
    "lhl-strix-halo-gpt-oss-20b-f16": None,  # its system_info.json names an engineering sample CPU
    "xiongjiedai-llama-3-gaming-gpus-4090-4-v3": None,
    "xiongjiedai-llama-3-professional-gpus-h100-pcie-v3": None,
    "xiongjiedai-llama-3-mac-m2ultra-192gb": None,
    "xiongjiedai-llama-2-gaming-gpus-4090-v2": None,
}


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    need(SHARED / "datasets")
    tmp = tmp_path_factory.mktemp("seeded")
    sources = tmp / "sources"
    sources.mkdir()
    specs = {}
    for key, versions in SAMPLE.items():
        spec = tomllib.loads((ROOT / "sources" / f"{key}.toml").read_text(encoding="utf-8"))
        if versions is not None:
            spec["seed"]["copies"] = spec["seed"]["copies"][versions]
        specs[key] = spec
        (sources / f"{key}.toml").write_text(_toml(spec), encoding="utf-8")
    db = tmp / "db.sqlite"
    run_cli("init", "--no-seed", db=db)
    result = run_cli("load", *SAMPLE, "--shared", str(SHARED), "--sources-dir", str(sources), "--format", "json",
                     db=db)
    assert all(s["status"] == "ok" for s in json.loads(result.stdout)), result.stdout
    figures = rows(db, "SELECT m.source_url, m.quote, m.tokens_per_second, m.prompt_tokens, m.generated_tokens, "
                       "m.context_depth, m.slot, s.key FROM measurement m JOIN source s ON s.id = m.source_id "
                       "WHERE m.status = 'active'")
    return specs, figures


def _toml(spec: dict) -> str:
    """A source file from its table (the few value types source files use)."""
    def value(v):
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{ " + ", ".join(f"{json.dumps(k)} = {value(x)}" for k, x in v.items()) + " }"
        return json.dumps(v)
    top = "\n".join(f"{k} = {value(v)}" for k, v in spec.items() if k not in ("seed", "protocol"))
    return top + "\n[seed]\n" + "\n".join(f"{k} = {value(v)}" for k, v in spec["seed"].items()) + "\n"


def _copy_text(spec: dict, url: str) -> str:
    """The text of the copy of the file version a figure cites (its blob URL names the commit)."""
    commit = re.search(r"/blob/([0-9a-f]{40})/", url).group(1)
    assert unquote(url).endswith("/" + spec["path"]), url
    copy = next(c for c in spec["seed"]["copies"] if c["commit"] == commit)
    return (SHARED / copy["file"]).read_text(encoding="utf-8")


_TEST = re.compile(r"^(pp|tg)\s*(\d+)(?:\+tg(\d+))?(?: @ d(\d+))?$")


def _lengths(test: str) -> tuple[int, int, int]:
    kind, n, then, depth = _TEST.match(test.strip()).groups()
    if then:  # pp512+tg128: the prompt, then the generation
        return int(n), int(then), int(depth or 0)
    return (int(n), 0, int(depth or 0)) if kind == "pp" else (0, int(n), int(depth or 0))


def _measured(figure: dict) -> tuple:
    return (figure["tokens_per_second"], figure["prompt_tokens"], figure["generated_tokens"],
            figure["context_depth"])


def test_every_sampled_dataset_gives_figures(loaded):
    _, figures = loaded
    by_key = {key: sum(f["key"] == key for f in figures) for key in SAMPLE}
    assert all(by_key.values()), by_key
    assert by_key["kyuz0-strix-halo-results"] > 1000


def test_kyuz0_quotes_are_runs_of_the_cited_version_with_their_values(loaded):
    specs, figures = loaded
    spec = specs["kyuz0-strix-halo-results"]
    texts: dict[str, tuple[str, list]] = {}
    for figure in (f for f in figures if f["key"] == "kyuz0-strix-halo-results"):
        if figure["source_url"] not in texts:
            text = _copy_text(spec, figure["source_url"])
            texts[figure["source_url"]] = text, [json.dumps(r, sort_keys=True) for r in json.loads(text)["runs"]]
        text, runs = texts[figure["source_url"]]
        assert figure["quote"] in text
        run = json.loads(figure["quote"])
        assert json.dumps(run, sort_keys=True) in runs
        assert _measured(figure) == (run["tps_mean"], *_lengths(run["test"]))
        assert not run["error"] and not run.get("rpc")


def test_a_run_repeated_by_later_versions_is_cited_once_at_the_first(loaded):
    specs, figures = loaded
    spec = specs["kyuz0-strix-halo-results"]
    quotes = [f["quote"] for f in figures if f["key"] == "kyuz0-strix-halo-results"]
    identities = [(r["model"], r["env"], r["fa"], r.get("context"), r["test"], r["tps_mean"], r["build"]["number"])
                  for r in map(json.loads, quotes)]
    assert len(identities) == len(set(identities))  # no run twice
    first, *later = [_copy_text(spec, f"https://github.com/{spec['repo']}/blob/{c['commit']}/{spec['path']}")
                     for c in spec["seed"]["copies"]]
    cited_later = [f for f in figures if f["key"] == "kyuz0-strix-halo-results"
                   and spec["seed"]["copies"][0]["commit"] not in f["source_url"]]
    assert all(f["quote"] not in first for f in cited_later)  # a run the first version has is cited there


def test_lhl_quotes_are_llama_bench_records_of_the_file_with_their_values(loaded):
    specs, figures = loaded
    for key in ("lhl-strix-halo-llama-2-7b-q4-0", "lhl-strix-halo-gpt-oss-20b-f16"):
        text = _copy_text(specs[key], specs[key]["url"])
        by_record = {}  # each line by its record (the record alone says which line it is: its test time, samples)
        for line in text.splitlines():
            raw = json.loads(line)["bench_raw"]
            if raw:
                by_record[json.dumps(raw, sort_keys=True)] = line
        mine = [f for f in figures if f["key"] == key]
        assert mine
        for figure in mine:
            raw = json.loads(figure["quote"])
            assert figure["quote"] in by_record[json.dumps(raw, sort_keys=True)]
            assert _measured(figure) == (raw["avg_ts"], raw["n_prompt"], raw["n_gen"], raw["n_depth"])
            assert "RPC" not in raw["backends"]


_ROW_VALUE = re.compile(r"\|\s*([\d.]+) ± [\d.]+ \|\s*$")
_TIMING = re.compile(r"(prompt eval|eval) time =\s*[\d.]+ ms /\s*(\d+) (tokens|runs).*?([\d.]+) tokens per second")


def test_xiongjiedai_quotes_are_in_one_cells_output_with_their_values(loaded):
    specs, figures = loaded
    for key in [k for k in SAMPLE if k.startswith("xiongjiedai-")]:
        notebook = json.loads(_copy_text(specs[key], specs[key]["url"]))
        outputs = ["".join("".join(o.get("text") or (o.get("data") or {}).get("text/plain") or "")
                           for o in cell.get("outputs", [])) for cell in notebook["cells"]]
        mine = [f for f in figures if f["key"] == key]
        assert mine, key
        for figure in mine:
            assert any(figure["quote"] in output for output in outputs), figure["quote"]
            row = _ROW_VALUE.search(figure["quote"])
            if row:  # a llama-bench row: | model | size | params | backend | ngl | test | t/s |
                test = [c.strip() for c in figure["quote"].strip("|").split("|")][-2]
                assert _measured(figure) == (float(row.group(1)), *_lengths(test))
                continue
            phase, count, _, value = _TIMING.search(figure["quote"]).groups()
            assert figure["tokens_per_second"] == float(value)
            assert (figure["prompt_tokens"] if phase == "prompt eval" else figure["generated_tokens"]) == int(count)
