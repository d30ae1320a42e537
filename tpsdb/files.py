"""Which model file a figure was measured on: the one rule that says whether two stated sizes describe one file.

A size is a fact stated by someone, not the file's name. A tool states the size it measures (llama-bench prints the
tensor data in GiB with two decimals: `3.56 GiB` = 3.82 GB for Llama 2 7B Q4_0); a reference cites the size of the
file on its host (`data/reference/model_files.toml`: 3.79 GB, the size the article's Table 1 gives, which treats the
llama-bench rows of discussions 4167 and 15013 as that file). Both sizes are kept: the figure's own on its
`model_file` row (`measurement_full.reported_file_size_gb`), the cited one on the cited row, which the figure's row
names (`model_file.same_file_id`, `measurement_full.file_size_gb`).

THE RULE. A figure's file is the reference's cited file of its model when
  1. the model is the same (the same name, after a source's aliases or `ingest --model`),
  2. the quantization is the same named format,
  3. the parameter count is the same (a figure stating another count than its model's is refused before it gets
     here: tpsdb.store's conflict rule), and
  4. the size the figure's source states is within SAME_FILE_TOLERANCE (2 %) of the cited size: a tool's size and a
     host's size of one file differ by what the tool does not count (the file's header and metadata) and by their
     roundings (3.82 against 3.79 GB is 0.8 %). The rule cannot see tensors: two conversions of one format whose
     sizes differ by less are taken for one file; a source that knows better states its size exactly, or names
     another model.
A source's protocol that states its files' sizes (4167: `[protocol.file_size_gb]` Q4_0 = 3.79) gives them to the
figures it fills, so those are on the cited file by rule 4 with no difference at all.
Otherwise the figure's size is its own file, and a table that holds the cited file fixed leaves it out; `ingest`
says so for each figure (tpsdb.ingest).
"""

from __future__ import annotations

from typing import Iterable

SAME_FILE_TOLERANCE = 0.02  # relative difference between a stated size and the cited size of the same file


def same_file(stated_gb: float | None, cited_gb: float | None) -> bool:
    """Rule 4: does a stated size describe the cited file (model, format and parameters being the same)?"""
    if not stated_gb or not cited_gb:
        return False
    return abs(stated_gb - cited_gb) <= SAME_FILE_TOLERANCE * cited_gb


def cited_file(stated_gb: float | None, quantization: str | None,
               cited: Iterable[tuple[str, float]]) -> float | None:
    """The cited size (of the model's cited files, as (quantization, size GB) pairs) that a figure's stated size
    describes, the nearest when several would; None when it describes none."""
    matches = [size for quant, size in cited if quant == quantization and same_file(stated_gb, size)]
    if not matches or stated_gb is None:
        return None
    return min(matches, key=lambda size: abs(size - stated_gb))


def file_size_read(stated_gb: float, quantization: str | None, cited: Iterable[tuple[str, float]]) -> float:
    """The size a figure's file is known by: the cited size when the rule says the figure is on the cited file,
    else the size its source states."""
    return cited_file(stated_gb, quantization, cited) or stated_gb
