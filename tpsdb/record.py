"""The record format v1 and the six-field validator.

Every path into the database (scraped, ingested, added by hand) goes through `validate()`. It never raises on bad
input: it returns the normalized record, or the list of reason codes. A reason code is `"<field path>: <reason>"`
and every cause is spelled by one function of `Reason` below, so the same cause always reads the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from datetime import date, datetime, timezone
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .collect.llamabench import GIB_IN_GB, MIB_IN_GB  # the units llama-bench prints, defined once
from .models import Figure, NatureKind, Phase


# Format names as the tools print them. A name matching none of these ("4-bit", "8 bits", "int4?") is refused:
# the bit count alone does not say which kernels and which bytes per weight were used.
_NAMED_QUANT = re.compile(
    r"""^(
        F16|F32|BF16|FP16|FP32|FP8|FP8_E4M3|FP8_E5M2|FP4|NVFP4|MXFP4|MXFP6|MXFP8|INT8|INT4|W8A8|W4A16|W8A16
        |Q[1-8]_[01]|Q[2-8]_K(_[SML]|_XL)?|IQ[1-4]_(XXS|XS|S|M|NL)|IQ4_NL|IQ4_XS|TQ[12]_0
        |AWQ|GPTQ|EXL2|EXL3|HQQ|BNB_NF4|NF4|MLX_4BIT|MLX_8BIT|MLX_3BIT|MLX_6BIT|DWQ
    )$""",
    re.X,
)


# Enum members as plain names: attribute access on an Enum class is slow, and these run once per record.
GENERATION, PROMPT, END_TO_END = Phase.generation, Phase.prompt, Phase.end_to_end
MEASURED, COMPUTED = NatureKind.measured, NatureKind.computed
PER_USER = Figure.per_user
WRITES_TOKENS = (GENERATION, END_TO_END)
READS_PROMPT = (PROMPT, END_TO_END)


class Reason:
    """The one place where rejection causes are spelled."""

    @staticmethod
    def missing(field: str) -> str:
        return f"{field}: missing"

    @staticmethod
    def unnamed_quant(value: str) -> str:
        return f'quantization: not a named format ("{value}")'

    @staticmethod
    def unknown_field(field: str) -> str:
        return f'record: unknown field "{field}"'

    @staticmethod
    def bad(field: str, why: str) -> str:
        return f"{field}: {why}"

    future = staticmethod(lambda field: f"{field}: in the future")
    above_ceiling = "tokens_per_second: above_ceiling"


@lru_cache(maxsize=1024)  # a file names a handful of formats, once per record
def named_quantization(value: str) -> str | None:
    """The canonical spelling of a quantization format name, or None when it is not a named format."""
    candidate = value.strip().upper().replace("-", "_").replace(" ", "_")
    return candidate if _NAMED_QUANT.match(candidate) else None


# ----------------------------------------------------------------------------------------------- the format (v1)
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Via(_Strict):
    title: str | None = None
    publisher: str | None = None
    published_at: date | None = None
    url: str | None = None


class SourceRef(_Strict):
    url: str | None = None
    retrieved_at: date | None = None
    published_at: date | None = None
    author: str | None = None
    quote: str | None = None
    via: Via | None = None


class HardwareRef(_Strict):
    name: str | None = None
    memory_bandwidth_gbs: float | None = None
    memory_gb: float | None = None
    gpu_cores: int | None = None


class ModelRef(_Strict):
    name: str | None = None
    params_b: float | str | None = None
    active_params_b: float | str | None = None
    file_size_gb: float | str | None = None


class SoftwareRef(_Strict):
    name: str | None = None
    version: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class Lengths(_Strict):
    prompt_tokens: int | None = None
    generated_tokens: int | None = None
    context_depth: int | None = 0


class Concurrency(_Strict):
    users: int | None = None
    figure: Figure | None = None


class Nature(_Strict):
    kind: NatureKind | None = None
    procedure: str | None = None
    formula: str | None = None
    inputs: dict[str, Any] | None = None


class Record(_Strict):
    source: SourceRef = Field(default_factory=SourceRef)
    hardware: HardwareRef = Field(default_factory=HardwareRef)
    model: ModelRef = Field(default_factory=ModelRef)
    quantization: str | None = None
    software: SoftwareRef = Field(default_factory=SoftwareRef)
    lengths: Lengths = Field(default_factory=Lengths)
    concurrency: Concurrency = Field(default_factory=Concurrency)
    nature: Nature = Field(default_factory=Nature)
    phase: Phase | None = None
    tokens_per_second: float | None = None
    stddev: float | None = None

    def to_json_dict(self) -> dict:
        """The record as exported: every key present, in the documented order, dates as ISO strings."""
        return self.model_dump(mode="json")

    def identity(self) -> bytes:
        """Canonical bytes of the figure without its retrieval date (re-reading a post another day is no change).

        model_dump_json's own serializer, called without the method's argument handling: it runs once per record
        of a bulk add, where that handling cost a fifth of the dump."""
        return self.__pydantic_serializer__.to_json(self, exclude=_NOT_IN_IDENTITY)


TOP_LEVEL_KEYS = frozenset(Record.model_fields)
_NOT_IN_IDENTITY = {"source": {"retrieved_at"}}


@dataclass
class Outcome:
    """What validation says of one candidate: the normalized record, or why not."""

    record: Record | None = None
    reasons: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return not self.reasons


# A lookup the validator may use for the ceiling check: hardware name -> memory bandwidth in GB/s, or None.
BandwidthLookup = Callable[[str], float | None]


# ------------------------------------------------------------------------------------------------------ units
_QUANTITY = re.compile(r"^\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")


_SIZE_UNITS = {"GB": 1.0, "G": 1.0, "GIB": GIB_IN_GB, "MB": 0.001, "MIB": MIB_IN_GB, "TB": 1000.0}
_PARAM_UNITS = {"B": 1.0, "M": 0.001, "K": 0.000001, "T": 1000.0}


def _quantity(value: str, field: str, reasons: list[str], units: dict[str, float], hint: str,
              ndigits: int) -> float | None:
    """A number written with its unit ("59.02 GiB", "116,830 M"), in the unit whose factor is 1."""
    match = _QUANTITY.match(value)
    if not match or match.group(2).upper() not in units:
        reasons.append(Reason.bad(field, f'unknown unit in "{value}" ({hint})'))
        return None
    return round(float(match.group(1).replace(",", "")) * units[match.group(2).upper()], ndigits)


def _size_gb(value: float | str, field: str, reasons: list[str]) -> float | None:
    """Decimal GB from a number (already GB) or a string with its unit: GB, GiB, MB, MiB."""
    if isinstance(value, (int, float)):
        return float(value)
    return _quantity(value, field, reasons, _SIZE_UNITS, "use GB, GiB, MB or MiB", 4)


def _params_b(value: float | str, field: str, reasons: list[str]) -> float | None:
    """Billions of parameters from a number (already B) or a string with its unit: B, M, K, T."""
    if isinstance(value, (int, float)):
        if value > 20_000:  # no model has 20 trillion parameters: this is a count in millions or units
            reasons.append(Reason.bad(field, f"{value:g} is not in billions (looks like millions or a raw count)"))
            return None
        return float(value)
    return _quantity(value, field, reasons, _PARAM_UNITS, "use B or M", 6)


# ------------------------------------------------------------------------------------------------ validation
def _pydantic_reasons(error: ValidationError) -> list[str]:
    reasons = []
    for item in error.errors():
        path = ".".join(str(p) for p in item["loc"])
        if item["type"] == "extra_forbidden":
            reasons.append(Reason.unknown_field(path))
        else:
            reasons.append(Reason.bad(path, item["msg"].lower()))
    return reasons


def _value_in_quote(value: float, quote: str) -> bool:
    """Does the quote show this number? Tolerates thousands separators and a decimal comma."""
    if f"{value:g}" in quote or f"{value:.2f}" in quote:  # the common case, without the regex
        return True
    for token in re.findall(r"\d[\d,. \u202f\u00a0]*", quote):
        token = token.strip(" .,\u202f\u00a0")
        candidates = {token.replace(",", "").replace(" ", "").replace("\u202f", "").replace("\u00a0", "")}
        if re.fullmatch(r"\d+,\d{1,2}", token):  # French decimal comma: "42,0"
            candidates.add(token.replace(",", "."))
        for c in candidates:
            try:
                if abs(float(c) - value) <= max(0.005, 1e-9 * value):
                    return True
            except ValueError:
                continue
    return False


def validate(
    data: Any,
    *,
    bandwidth_of: BandwidthLookup | None = None,
    today: date | None = None,
) -> Outcome:
    """Check one candidate against the record format and the six required fields."""
    if not isinstance(data, dict):
        return Outcome(reasons=[Reason.bad("record", "not a JSON object")])
    reasons = [Reason.unknown_field(k) for k in data if k not in TOP_LEVEL_KEYS]
    try:
        record = Record.model_validate({k: v for k, v in data.items() if k in TOP_LEVEL_KEYS})
    except ValidationError as error:
        return Outcome(reasons=reasons + _pydantic_reasons(error))
    return check_record(record, reasons, bandwidth_of=bandwidth_of, today=today)


def validate_well_formed_json(text: str | bytes, *, bandwidth_of: BandwidthLookup | None = None,
                              today: date | None = None) -> Outcome | None:
    """validate() of a JSON text whose structure is right; None when it is not (then use validate(json.loads)).

    Pydantic's JSON parser builds the record straight from the text, without the dict in between: the bulk path
    of `tpsdb add`, where parsing the JSON cost as much as validating it. A text it refuses (bad JSON, an unknown
    field, a wrong type) gets None rather than reasons, so that every reason is still spelled by validate().
    """
    try:
        record = Record.__pydantic_validator__.validate_json(text)  # model_validate_json without its wrapper
    except ValidationError:
        return None
    return check_record(record, [], bandwidth_of=bandwidth_of, today=today)


def check_record(record: Record, reasons: list[str], *, bandwidth_of: BandwidthLookup | None = None,
                 today: date | None = None) -> Outcome:
    """The six required fields, units and plausibility, on a record whose structure pydantic has accepted."""
    today = today or datetime.now(timezone.utc).date()
    _check_source(record, reasons, today)
    _check_hardware(record, reasons)
    _check_model(record, reasons)
    _check_quantization(record, reasons)
    _check_software(record, reasons)
    _check_lengths(record, reasons)
    _check_concurrency(record, reasons)
    _check_nature(record, reasons)
    _check_value(record, reasons)
    if not reasons:
        _check_ceiling(record, reasons, bandwidth_of)
    return Outcome(record=None if reasons else record, reasons=reasons)


_HTTP_URL = re.compile(r"^https?://[^\s/]+\.[^\s]+$")


def _check_source(r: Record, reasons: list[str], today: date) -> None:
    s = r.source
    if not s.url:
        reasons.append(Reason.missing("source.url"))
    elif not _HTTP_URL.match(s.url):
        reasons.append(Reason.bad("source.url", "not an http(s) URL"))
    if s.retrieved_at is None:
        reasons.append(Reason.missing("source.retrieved_at"))
    elif s.retrieved_at > today:
        reasons.append(Reason.future("source.retrieved_at"))
    if s.published_at and s.retrieved_at and s.published_at > s.retrieved_at:
        reasons.append(Reason.bad("source.published_at", "after the retrieval date"))
    if not (s.quote and s.quote.strip()):
        reasons.append(Reason.missing("source.quote"))
    elif r.tokens_per_second is not None and not _value_in_quote(r.tokens_per_second, s.quote):
        reasons.append(Reason.bad("source.quote", f"does not show the value {r.tokens_per_second:g}"))


def _check_hardware(r: Record, reasons: list[str]) -> None:
    if not (r.hardware.name and r.hardware.name.strip()):
        reasons.append(Reason.missing("hardware.name"))
    if r.hardware.memory_bandwidth_gbs is not None and r.hardware.memory_bandwidth_gbs <= 0:
        reasons.append(Reason.bad("hardware.memory_bandwidth_gbs", "not positive"))


_MODEL_QUANTITIES = (  # attribute, field path, unit conversion, required
    ("params_b", "model.params_b", _params_b, True),
    ("active_params_b", "model.active_params_b", _params_b, False),
    ("file_size_gb", "model.file_size_gb", _size_gb, True),
)


def _check_model(r: Record, reasons: list[str]) -> None:
    m = r.model
    if not (m.name and m.name.strip()):
        reasons.append(Reason.missing("model.name"))
    for attr, path, convert, required in _MODEL_QUANTITIES:
        value = getattr(m, attr)
        if value is None:
            if required:
                reasons.append(Reason.missing(path))
            continue
        number = convert(value, path, reasons)
        if number is None:
            setattr(m, attr, None)
            continue
        if number <= 0:
            reasons.append(Reason.bad(path, "not positive"))
        if value.__class__ is not float:  # setattr on a pydantic model is costly: only when the value changed
            setattr(m, attr, number)
    if isinstance(m.params_b, float) and isinstance(m.active_params_b, float) and m.active_params_b > m.params_b:
        reasons.append(Reason.bad("model.active_params_b", "larger than params_b"))
    if isinstance(m.params_b, float) and isinstance(m.file_size_gb, float) and m.params_b > 0:
        bytes_per_param = m.file_size_gb / m.params_b
        # F32 is 4 bytes per weight; the smallest formats are ~0.2. Outside that, a unit is wrong (MB for GB…).
        if not 0.1 <= bytes_per_param <= 4.6:
            reasons.append(
                Reason.bad("model.file_size_gb", f"{m.file_size_gb:g} GB for {m.params_b:g} B parameters is implausible (unit?)")
            )


def _check_quantization(r: Record, reasons: list[str]) -> None:
    if not (r.quantization and r.quantization.strip()):
        reasons.append(Reason.missing("quantization"))
        return
    name = named_quantization(r.quantization)
    if name is None:
        reasons.append(Reason.unnamed_quant(r.quantization))
    elif name != r.quantization:
        r.quantization = name


def _check_software(r: Record, reasons: list[str]) -> None:
    if not (r.software.name and r.software.name.strip()):
        reasons.append(Reason.missing("software.name"))
    if not (r.software.version and r.software.version.strip()):
        reasons.append(Reason.missing("software.version"))
    options = r.software.options
    if list(options) != sorted(options):  # one spelling per figure: keys sorted
        ordered = sorted(options.items())
        options.clear()  # in place: setattr on a pydantic model is costly
        options.update(ordered)


def _check_lengths(r: Record, reasons: list[str]) -> None:
    n = r.lengths
    if n.generated_tokens is None:
        reasons.append(Reason.missing("lengths.generated_tokens"))
    elif n.generated_tokens < 0:
        reasons.append(Reason.bad("lengths.generated_tokens", "negative"))
    elif r.phase in WRITES_TOKENS and n.generated_tokens == 0:
        reasons.append(Reason.bad("lengths.generated_tokens", f"0 for a {r.phase.value} figure"))
    if r.phase in READS_PROMPT:
        if n.prompt_tokens is None:
            reasons.append(Reason.missing("lengths.prompt_tokens"))
        elif n.prompt_tokens <= 0:
            reasons.append(Reason.bad("lengths.prompt_tokens", f"not positive for a {r.phase.value} figure"))
    if n.context_depth is None:
        n.context_depth = 0
    elif n.context_depth < 0:
        reasons.append(Reason.bad("lengths.context_depth", "negative"))


def _check_concurrency(r: Record, reasons: list[str]) -> None:
    c = r.concurrency
    if c.users is None:
        reasons.append(Reason.missing("concurrency.users"))
    elif c.users < 1:
        reasons.append(Reason.bad("concurrency.users", "less than 1"))
    if c.figure is None:
        reasons.append(Reason.missing("concurrency.figure"))


def _check_nature(r: Record, reasons: list[str]) -> None:
    n = r.nature
    if n.kind is None:
        reasons.append(Reason.missing("nature.kind"))
    elif n.kind is MEASURED and not (n.procedure and n.procedure.strip()):
        reasons.append(Reason.missing("nature.procedure"))
    elif n.kind is COMPUTED:
        if not (n.formula and n.formula.strip()):
            reasons.append(Reason.missing("nature.formula"))
        if not n.inputs:
            reasons.append(Reason.missing("nature.inputs"))


def _check_value(r: Record, reasons: list[str]) -> None:
    if r.phase is None:
        reasons.append(Reason.missing("phase"))
    if r.tokens_per_second is None:
        reasons.append(Reason.missing("tokens_per_second"))
    elif r.tokens_per_second <= 0:
        reasons.append(Reason.bad("tokens_per_second", "not positive"))
    if r.stddev is not None and r.stddev < 0:
        reasons.append(Reason.bad("stddev", "negative"))


def read_share(params_b: float | None, active_params_b: float | None) -> float:
    """The share of the file read per token: all of it for a dense model, the active share for a mixture of experts."""
    return active_params_b / params_b if params_b and active_params_b else 1.0


def ceiling_tokens_per_second(bandwidth_gbs: float, file_size_gb: float, params_b: float | None = None,
                              active_params_b: float | None = None) -> float:
    """The computed maximum of one user's generation speed: bandwidth / bytes read per token."""
    return bandwidth_gbs / (file_size_gb * read_share(params_b, active_params_b))


def _check_ceiling(r: Record, reasons: list[str], bandwidth_of: BandwidthLookup | None) -> None:
    if r.nature.kind is not MEASURED or r.phase is not GENERATION:
        return
    if r.concurrency.figure is not PER_USER and r.concurrency.users != 1:
        return
    bandwidth = r.hardware.memory_bandwidth_gbs or (bandwidth_of(r.hardware.name) if bandwidth_of else None)
    if not bandwidth:
        return
    ceiling = ceiling_tokens_per_second(bandwidth, r.model.file_size_gb, r.model.params_b, r.model.active_params_b)
    if r.tokens_per_second > ceiling:
        reasons.append(Reason.above_ceiling)


class RecordFileError(ValueError):
    """A file of records that is not JSON or JSONL: refused whole, with the line at fault (see tpsdb.bulk)."""
