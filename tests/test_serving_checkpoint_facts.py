"""The checkpoint facts shipped in data/reference/datasets-b-*.toml: every [[model_file]] is one the serving readers
can find (its size_source_url a Hugging Face repository page, or one file of it) and carries its citation, so that an
entry is never silently ignored or uncited."""

from __future__ import annotations

import tomllib

import pytest

from tpsdb.config import REFERENCE_DIR
from tpsdb.readers._serving import _HF_REPO, checkpoints
from tpsdb.record import named_quantization
from tpsdb.reference import ModelFileEntry

ENTRIES = [(path.name, k, entry) for path in sorted(REFERENCE_DIR.glob("datasets-b-*.toml"))
           for k, entry in enumerate(tomllib.loads(path.read_text(encoding="utf-8")).get("model_file", []))]


@pytest.mark.parametrize("name, k, entry", ENTRIES, ids=[f"{n}[{k}]" for n, k, _ in ENTRIES])
def test_each_checkpoint_fact_is_found_by_the_readers_and_cited(name, k, entry):
    ModelFileEntry.model_validate(entry)  # the reference loader's own checks (types, units, a named format)
    match = _HF_REPO.match(entry["size_source_url"])
    assert match, f"{name} model_file[{k}]: size_source_url is not a Hugging Face repository page"
    key = match.group(1) + (f"/{match.group(2)}" if match.group(2) else "")
    found = checkpoints()[key.lower()]
    assert (found.file_size_gb, found.params_b) == (entry["file_size_gb"], entry.get("params_b"))
    assert found.quantization == named_quantization(entry["quantization"])
    assert entry.get("quote") and entry.get("quote_from"), f"{name} model_file[{k}]: no quote or page read"
