"""The serving datasets as the seed loads them (each source's [seed] copies in ../shared, through its kind), checked
against the files re-read here with plain json, independently of the readers: every figure's quote is the exact
text of one record of its file, and its value, lengths and users are that record's. Skipped without ../shared."""

from __future__ import annotations

import json
import re
from datetime import date

import pytest

from conftest import ROOT
from tpsdb.kinds import kind_for, load_source
from tpsdb.readers import FileContext, reader
from tpsdb.record import validate

SHARED = ROOT.parent / "shared"
pytestmark = pytest.mark.skipif(not (SHARED / "datasets").is_dir(), reason="../shared/datasets is absent")
TODAY = date(2026, 12, 6)


def elements(text: str) -> dict[str, object]:
    """Each element of a JSON array, by its exact text (walked here with the json module alone)."""
    decoder, out, i = json.JSONDecoder(), {}, text.index("[") + 1
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "]":
            return out
        value, end = decoder.raw_decode(text, i)
        out[text[i:end]] = value
        i = end


def seeded(key: str) -> list[tuple[str, object]]:
    """(the copy's text, candidate) for every candidate a load of the source's [seed] copies stores."""
    spec = load_source(ROOT / "sources" / f"{key}.toml")
    kind = kind_for(spec)
    responses = kind.seed_responses(SHARED)
    posts, completeness = kind.read([r.body for r in responses], "seed")
    assert completeness.problem() is None
    texts = {r.url.split("#captured-")[0] + "@" + r.retrieved_at.date().isoformat(): r.body.decode()
             for r in responses}
    out = []
    for _, post in posts:
        for candidate in kind.candidates(post, None):
            source = candidate.record["source"]
            out.append((texts[f"{source['url']}@{source['retrieved_at']}"], candidate))
    return out


def test_inferencex_seed_figures_are_their_points():
    found = seeded("inferencex-benchmarks")
    slots = [c.slot for _, c in found]
    assert len(slots) == len(set(slots))  # a point in several captures is one figure
    checked, index = 0, {}
    for text, candidate in found:
        points = index.get(id(text)) or index.setdefault(id(text), elements(text))
        record = candidate.record
        point = points[record["source"]["quote"]]  # the exact text of one whole point of the answer
        metric = candidate.slot.rsplit(":", 1)[1]
        assert record["tokens_per_second"] == point["metrics"].get(metric)
        assert (record["lengths"]["prompt_tokens"], record["lengths"]["generated_tokens"]) == (point["isl"],
                                                                                              point["osl"])
        assert record["concurrency"]["users"] == point["conc"]
        checked += 1
    assert checked > 2000


def test_localmaxxing_seed_figures_are_their_rows():
    found = seeded("localmaxxing-benchmarks")
    text = found[0][0]
    rows_by_text: dict[str, object] = {}
    start = text.find('"rows": [')
    while start != -1:  # every preset's rows array
        rows_by_text.update(elements(text[start + len('"rows": '):]))
        start = text.find('"rows": [', start + 1)
    for _, candidate in found:
        record = candidate.record
        quote = record["source"]["quote"]
        # the exact text of one row, or its exact beginning up to a member naming the run's own loopback server
        row = rows_by_text.get(quote) or next(
            r for t, r in rows_by_text.items() if t.startswith(quote) and re.search("127.0.0.1|localhost", t))
        assert row["id"] == candidate.slot
        assert record["tokens_per_second"] == row["tokSOut"]
        assert (record["lengths"]["prompt_tokens"], record["lengths"]["generated_tokens"]) == (
            row["promptTokens"], row["outputTokens"])
    rows = {r["id"] for preset in json.loads(found[0][0])["presets"].values() for r in preset["rows"]}
    assert len(found) == len(rows)  # every distinct row, once


@pytest.mark.parametrize("name, path", [
    ("lotto", "lottolottolotto-4x3090-llm-benchmarks/data/benchmarks.jsonl"),
    ("mlperf", "mlperf-inference-summaries/v4.1_summary_results.json"),
    ("mlperf", "mlperf-inference-summaries/v5.1_summary_results.json"),
    ("mlperf", "mlperf-inference-summaries/v6.0_summary_results.json"),
])
def test_file_dataset_figures_are_their_records(name, path):
    text = (SHARED / "datasets" / path).read_text(encoding="utf-8")
    lines = text.splitlines()
    candidates = reader(name).read(text.encode(), FileContext(url="https://example.org/f", path=path,
                                                              retrieved_at="2026-12-01"))
    accepted = 0
    for candidate in candidates:
        record = candidate.record
        quote = record["source"]["quote"]
        assert quote in text
        if name == "lotto":
            # a whole line, or its exact beginning up to a member naming the run's own loopback server
            line = next(line for line in lines if line.startswith(quote))
            assert quote == line or "127.0.0.1" in line[len(quote):] or "localhost" in line[len(quote):]
            row = json.loads(line)
            values = {(row["concurrency"], row["output_tok_s"])} | {
                (p.get("concurrency", p.get("conc")), p.get("output_tok_s", p.get("out_tps")))
                for p in row.get("curve") or []}
            assert (record["concurrency"]["users"], record["tokens_per_second"]) in values
            assert (record["lengths"]["prompt_tokens"], record["lengths"]["generated_tokens"]) == (
                row["prompt_tokens"], row["gen_tokens"])
        else:
            row = json.loads(quote)
            assert row["Performance_Units"] == "Tokens/s" and record["tokens_per_second"] == row["Performance_Result"]
            assert record["lengths"]["prompt_tokens"] is None  # never invented
        accepted += not candidate.reasons and validate(record, today=TODAY).accepted
    assert name != "mlperf" or accepted == 0
