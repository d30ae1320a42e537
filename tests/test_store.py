"""The bulk path of `tpsdb add` reads a JSON line straight into a record: it must store exactly what the dict
path stores, for accepted and rejected candidates alike."""

import copy
import json
from datetime import date

import pytest

from conftest import VALID_RECORD
from tpsdb.store import _options_json, canonical_json, prepare, prepare_json


def changed(change):
    record = copy.deepcopy(VALID_RECORD)
    change(record)
    return record


CANDIDATES = {
    "valid": VALID_RECORD,
    "size in GiB, params in M": changed(lambda r: r["model"].update(file_size_gb="59.02 GiB", params_b="116830 M")),
    "options unsorted and nested": changed(lambda r: r["software"].update(options={"z": 1, "a": {"y": 2, "b": [1]}})),
    "options 1, 1.0 and true": changed(lambda r: r["software"].update(options={"fa": True, "ngl": 1.0, "t": 1})),
    "lower-case format name": changed(lambda r: r.update(quantization="mxfp4")),
    "integral float as a count": changed(lambda r: r["lengths"].update(generated_tokens=32.0)),
    "relayed by an article": changed(lambda r: r["source"].update(
        via={"title": "An article", "publisher": "QDNA", "published_at": "2026-08-30", "url": None})),
    "computed maximum": changed(lambda r: r.update(nature={
        "kind": "computed", "formula": "bandwidth / bytes per token", "inputs": {"bandwidth_gbs": 273}})),
    "unknown field": changed(lambda r: r.update(extra=1)),
    "unknown nested field": changed(lambda r: r["model"].update(size="big")),
    "wrong type": changed(lambda r: r["lengths"].update(generated_tokens="many")),
    "missing version": changed(lambda r: r["software"].pop("version")),
    # (gpt-oss 120B is a mixture of experts: checked only with its active parameters)
    "above the ceiling": changed(lambda r: (r["hardware"].update(memory_bandwidth_gbs=1.0),
                                            r["model"].update(active_params_b=5.1))),
    "not an object": [VALID_RECORD],
    "a number": 42,
}
ACCEPTED = {"valid", "size in GiB, params in M", "options unsorted and nested", "options 1, 1.0 and true",
            "lower-case format name", "integral float as a count", "relayed by an article", "computed maximum"}


@pytest.mark.parametrize("name", CANDIDATES)
def test_a_json_line_is_prepared_as_its_dict_is(name):
    candidate = CANDIDATES[name]
    today = date(2026, 11, 30)
    prepared = prepare_json(json.dumps(candidate), today=today)
    assert prepared == prepare(candidate, today=today)
    assert (not prepared.reasons) == (name in ACCEPTED), prepared.reasons


def test_a_line_that_is_not_json_raises():
    with pytest.raises(json.JSONDecodeError):
        prepare_json('{"source": ')


@pytest.mark.parametrize("options", [{}, {"fa": 1}, {"fa": True}, {"fa": 1.0}, {"b": 2, "a": 1}, {"a": 1, "b": 2},
                                     {"x": [1, 2]}, {"x": {"z": 1, "y": 2}}, {"é": "ü"}])
def test_remembered_option_sets_are_spelled_as_canonical_json(options):
    assert _options_json(options) == canonical_json(options)
    assert _options_json(options) == canonical_json(options)  # the second time from memory
