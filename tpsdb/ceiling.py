"""The computed maximum of a generation speed (the ceiling): the one home of its rule.

    max. (calc.) = memory bandwidth ÷ bytes read per token,   bytes read per token = file size × active share

Every path uses this module: the validator (tpsdb.record refuses a figure above it), the stored view
(`measurement_full.calc_ceiling_tps` and `ceiling_check`, whose SQL is generated here from the same rule, on the
active share the store keeps per figure in `measurement.read_share`), `tpsdb ceiling` (tpsdb.publish.ceiling), the
tables (tpsdb.publish.tables) and the Datasette descriptions (tpsdb/datasette/metadata.yml says the same words).
tests/test_ceiling_paths.py holds them equal on random facts.

The rules:
- bandwidth: the machine's cited value (the reference's `vendor` value, the maker's page; else its `relayed` one, a
  publication giving the maker's value: the reference keeps one per machine, the more preferred) before the value
  the figure's own source states (`stated`). A stated value never replaces a cited one.
- active share (the part of the file read per token): 1 for a dense model; for a mixture of experts, active ÷ total
  parameters from the record, else from the reference (`[[model]] active_params_b`), else from llama-bench's type
  label where it states it (`qwen3moe 30B.A3B`: 3 of 30 B). A model known to be a mixture of experts (flagged in
  the reference, or so named by its label: `moe`, `MoE`, `30B.A3B`) with none of these has an unknown share, never
  1: no ceiling, and its figures are not checked.
- file size: the size of the file the figure is on (tpsdb.files: the cited file when the rule says so).
- the check: only a measured, one-user generation figure is checked (an aggregate of N users may exceed one user's
  maximum); it is checked when the bandwidth, the size and the share are known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

# The verdicts of `ceiling_check`, spelled once (the view's SQL and the descriptions use these).
CHECKED = "checked"
NO_BANDWIDTH = "not checked: memory bandwidth unknown"
NO_SIZE = "not checked: file size unknown"
MOE_UNKNOWN = "not checked: mixture of experts whose active parameters are unknown"

# Bandwidth kinds in order of preference (models.BandwidthKind).
VENDOR, RELAYED, STATED = "vendor", "relayed", "stated"


@dataclass(frozen=True)
class ModelFacts:
    """What the database (the reference data) knows of a model: its parameters, whether it is a mixture of experts,
    and the sizes of its cited files as (quantization, GB) pairs (tpsdb.files)."""

    params_b: float | None = None
    active_params_b: float | None = None
    mixture_of_experts: bool | None = None
    cited_sizes: tuple[tuple[str, float], ...] = ()


def read_share(params_b: float | None, active_params_b: float | None) -> float:
    """The share of the file read per token: all of it for a dense model, the active share for a mixture of experts."""
    return active_params_b / params_b if params_b and active_params_b else 1.0


def ceiling_tokens_per_second(bandwidth_gbs: float, file_size_gb: float, params_b: float | None = None,
                              active_params_b: float | None = None) -> float:
    """The computed maximum of one user's generation speed: bandwidth / bytes read per token."""
    return bandwidth_gbs / (file_size_gb * read_share(params_b, active_params_b))


# llama-bench's type label names a mixture of experts: "qwen3moe 30B.A3B" (3 B active), "gpt-oss 120B MXFP4 MoE".
_ACTIVE_IN_LABEL = re.compile(r"(?<![A-Za-z0-9])(\d+(?:\.\d+)?)B[.\-_ ]A(\d+(?:\.\d+)?)B\b")
_MOE_IN_LABEL = re.compile(r"moe|\bMoE\b|(?<![A-Za-z0-9])\d+(?:\.\d+)?B[.\-_ ]A\d+(?:\.\d+)?B\b", re.I)


def _may_name_moe(text: str) -> bool:
    """A quick no for the usual text (a dense model's quote): what every _MOE_IN_LABEL match holds, lower-cased;
    substring tests cost a twentieth of the search."""
    t = text.lower()
    return "moe" in t or "b.a" in t or "b-a" in t or "b_a" in t or "b a" in t


def _label(text: str | None) -> tuple[tuple[float, float] | None, bool]:
    """What a label says: (total, active) where it states them, and whether it names a mixture of experts. Every
    active statement also names one, so a text _MOE_IN_LABEL does not match (the usual, dense case) costs one search."""
    if not text or not _may_name_moe(text) or not _MOE_IN_LABEL.search(text):
        return None, False
    match = _ACTIVE_IN_LABEL.search(text)
    return ((float(match.group(1)), float(match.group(2))) if match else None), True


_name_label = lru_cache(maxsize=4096)(_label)  # a model's name recurs in every figure of it


@dataclass(frozen=True)
class Share:
    """The active share of a model's file read per token, and where it comes from."""

    params_b: float | None
    active_params_b: float | None
    mixture_of_experts: bool
    origin: str  # "record", "reference", "label", "dense" or "unknown"

    @property
    def known(self) -> bool:
        return self.origin != "unknown"

    @property
    def value(self) -> float:
        return read_share(self.params_b, self.active_params_b)

    @property
    def stored(self) -> float | None:
        """As `measurement.read_share` keeps it: None when unknown."""
        return self.value if self.known else None


def active_share(name: str | None, params_b: float | None, active_params_b: float | None,
                 facts: ModelFacts | None, label: str | None = None) -> Share:
    """The share a mixture of experts reads per token (see the module's rules); `label` is the figure's quote."""
    if label is not None and _may_name_moe(label) and _MOE_IN_LABEL.search(label):
        return _active_share(name, params_b, active_params_b, facts, label)
    return _share_of_model(name, params_b, active_params_b, facts)  # the quote says nothing: one answer per model


def _active_share(name: str | None, params_b: float | None, active_params_b: float | None,
                  facts: ModelFacts | None, label: str | None = None) -> Share:
    if active_params_b and params_b:
        return Share(params_b, active_params_b, True, "record")
    facts = facts or _NO_FACTS
    total = params_b or facts.params_b
    if facts.active_params_b and total:
        return Share(total, facts.active_params_b, True, "reference")
    named, name_moe = _name_label(name)
    stated, label_moe = (None, False) if named else _label(label)
    if named or stated:
        total_b, active_b = named or stated
        return Share(total_b, active_b, True, "label")
    moe = bool(facts.mixture_of_experts or facts.active_params_b or active_params_b or name_moe or label_moe)
    return Share(total, None, moe, "unknown" if moe else "dense")


_NO_FACTS = ModelFacts()
_share_of_model = lru_cache(maxsize=4096)(_active_share)  # every figure of a model asks the same (a bulk add)


@dataclass(frozen=True)
class Bandwidth:
    gbs: float
    kind: str  # vendor, relayed or stated


def choose_bandwidth(cited_gbs: float | None, cited_kind: str | None, stated_gbs: float | None) -> Bandwidth | None:
    """The bandwidth a figure is read against: the machine's cited one (its kind as the reference gives it, vendor
    when it gives none), else the one the figure's source states."""
    if cited_gbs is not None and cited_gbs > 0:
        return Bandwidth(cited_gbs, cited_kind or VENDOR)
    if stated_gbs is not None and stated_gbs > 0:
        return Bandwidth(stated_gbs, STATED)
    return None


def is_checked_figure(nature: str | None, phase: str | None, figure: str | None, users: int | None) -> bool:
    """Only a measured one-user generation figure is held to the one-user maximum."""
    return nature == "measured" and phase == "generation" and (figure == "per_user" or users == 1)


@dataclass(frozen=True)
class Ceiling:
    value: float | None  # tokens/s per user; None when an input is unknown or the figure is no generation figure
    bandwidth: Bandwidth | None
    file_size_gb: float | None
    share: Share
    check: str | None  # one of the verdicts above; None for a figure that is not checked at all

    @property
    def read_gb(self) -> float | None:
        return self.file_size_gb * self.share.value if self.file_size_gb and self.share.known else None


def ceiling_of(bandwidth: Bandwidth | None, file_size_gb: float | None, share: Share, *,
               phase: str | None = "generation", nature: str | None = "measured", figure: str | None = "per_user",
               users: int | None = 1) -> Ceiling:
    """The maximum and the verdict for one figure (or, with the defaults, for one user generating on a file)."""
    value = None
    if phase == "generation" and bandwidth is not None and file_size_gb and file_size_gb > 0 and share.known:
        value = bandwidth.gbs / (file_size_gb * share.value)
    check = None
    if is_checked_figure(nature, phase, figure, users):
        check = (NO_BANDWIDTH if bandwidth is None else NO_SIZE if not (file_size_gb and file_size_gb > 0)
                 else MOE_UNKNOWN if not share.known else CHECKED)
    return Ceiling(value, bandwidth, file_size_gb, share, check)


# ----------------------------------------------------------------------------------- the same rule in SQL
def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def sql_bandwidth(cited: str, stated: str) -> str:
    """choose_bandwidth() in SQL."""
    return f"CASE WHEN {cited} > 0 THEN {cited} WHEN {stated} > 0 THEN {stated} END"


def sql_bandwidth_kind(cited: str, cited_kind: str, stated: str) -> str:
    return (f"CASE WHEN {cited} > 0 THEN COALESCE({cited_kind}, {_sql_text(VENDOR)}) "
            f"WHEN {stated} > 0 THEN {_sql_text(STATED)} END")


def sql_ceiling(bandwidth: str, size_gb: str, share: str, phase: str) -> str:
    """ceiling_of().value in SQL, on the stored share (NULL: unknown)."""
    return (f"CASE WHEN {phase} = 'generation' AND ({bandwidth}) IS NOT NULL AND {size_gb} > 0 "
            f"AND {share} IS NOT NULL THEN ({bandwidth}) / ({size_gb} * {share}) END")


def sql_check(bandwidth: str, size_gb: str, share: str, nature: str, phase: str, figure: str, users: str) -> str:
    """ceiling_of().check in SQL."""
    return (f"CASE WHEN NOT ({nature} = 'measured' AND {phase} = 'generation' "
            f"AND ({figure} = 'per_user' OR {users} = 1)) THEN NULL "
            f"WHEN ({bandwidth}) IS NULL THEN {_sql_text(NO_BANDWIDTH)} "
            f"WHEN NOT COALESCE({size_gb} > 0, FALSE) THEN {_sql_text(NO_SIZE)} "
            f"WHEN {share} IS NULL THEN {_sql_text(MOE_UNKNOWN)} "
            f"ELSE {_sql_text(CHECKED)} END")
