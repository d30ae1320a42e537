"""Units and version names, parsed once: the validator (tpsdb.record), the store and the readers of tool output
(tpsdb.collect) all read sizes, parameter counts, builds and commits with these functions, so one text always gives
one number (D: `3.56 GiB` read by `ingest` and by `add` was 3.82 GB and 3.8225 GB, two model files).

Sizes are decimal GB; llama-bench prints binary units (GiB, MiB: `llama_model_size / 1024.0 / 1024.0 / 1024.0`) with
two decimals. One rounding for every size given with a unit: two decimals of GB, the precision of llama-bench's own
"3.56 GiB" (±5 MB), so that the same text in a tool's output and in a hand record gives one size. Whether two
sizes describe one file is another question, answered by tpsdb.files.
A number given without a unit is already in the field's unit and is never rounded. Parameter counts are billions.
"""

from __future__ import annotations

import re

from tpsdb.memo import short_text_memo

GIB_IN_GB = 1.073741824  # 2**30 / 10**9
MIB_IN_GB = 0.001048576  # 2**20 / 10**9

SIZE_UNITS = {"GB": 1.0, "G": 1.0, "GIB": GIB_IN_GB, "MB": 0.001, "MIB": MIB_IN_GB, "TB": 1000.0,
              "TIB": GIB_IN_GB * 1024}
PARAM_UNITS = {"B": 1.0, "M": 0.001, "K": 0.000001, "T": 1000.0}
SIZE_DECIMALS = 2  # GB: llama-bench's precision (its GiB with two decimals)
PARAM_DECIMALS = 9  # billions: a single parameter

# A number with thousands commas and its unit: "59.02 GiB", "116,830 M". Possessive: one pass, whatever the text.
_QUANTITY = re.compile(r"^\s*+([0-9][0-9,]*+(?:\.[0-9]++)?)\s*+([A-Za-z]*+)\s*+$")


def _quantity(text: str, units: dict[str, float], decimals: int) -> float | None:
    match = _QUANTITY.match(text)
    if not match:
        return None
    factor = units.get(match.group(2).upper())
    if factor is None:
        return None
    return round(float(match.group(1).replace(",", "")) * factor, decimals)


@short_text_memo
def size_gb(text: str) -> float | None:
    """Decimal GB from a size with its unit ("3.56 GiB" -> 3.82, "636.18 MiB" -> 0.67, "63.37 GB"); None when the
    text is not a number with a size unit."""
    return _quantity(text, SIZE_UNITS, SIZE_DECIMALS)


@short_text_memo
def params_b(text: str) -> float | None:
    """Billions of parameters from a count with its unit ("6.74 B", "68.03 M", "116,830 M"); None otherwise."""
    return _quantity(text, PARAM_UNITS, PARAM_DECIMALS)


def params_b_from_count(count: float) -> float:
    """Billions of parameters from a raw count (llama-bench's JSON `model_n_params`), as its markdown prints it
    ("%.2f B", or "%.2f M" below a billion), so that a model reads the same count from every format."""
    if count >= 1e9:
        return round(count / 1e9, 2)
    return round(round(count / 1e6, 2) / 1e3, PARAM_DECIMALS)


def bytes_of_gb(size_gb_value: float) -> int:
    """The size in bytes a model file row stores for a size in decimal GB."""
    return round(size_gb_value * 1e9)


# ------------------------------------------------------------------------------------------ builds and commits
# A commit: 7 to 40 hex digits (git's short form is 7 or more). A build number: llama.cpp's bNNNN, 3 to 6 digits.
COMMIT = re.compile(r"\b([0-9a-f]{7,40})\b")
BUILD_NUMBER = re.compile(r"\bb?(\d{3,6})\b")
_BUILD_ALONE = re.compile(r"(^|\s|\()b?\d{3,6}(\)|\s|$)")


def parse_version(version: str) -> tuple[int | None, str | None]:
    """Build number and commit from a llama.cpp-style version ("b6918 (2f68ce7cf)", "8e672efe", "4847")."""
    commit = COMMIT.search(version)
    rest = version.replace(commit.group(1), "") if commit else version
    number = BUILD_NUMBER.search(rest) if _BUILD_ALONE.search(rest) else None
    return (int(number.group(1)) if number else None, commit.group(1) if commit else None)
