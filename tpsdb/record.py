"""The record format v1 and the six-field validator.

Every path into the database (scraped, ingested, added by hand) goes through `validate()`. It never raises on bad
input: it returns the normalized record, or the list of reason codes. A reason code is `"<field path>: <reason>"`
and every cause is spelled by one function of `Reason` below, so the same cause always reads the same.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from operator import attrgetter
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Annotated, Any, Callable

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from .ceiling import (  # noqa: F401  (ModelFacts, Share, read_share, ceiling_tokens_per_second: re-exported)
    MOE_UNKNOWN,
    ModelFacts,
    Share,
    active_share,
    ceiling_of,
    ceiling_tokens_per_second,
    choose_bandwidth,
    is_checked_figure,
    read_share,
)
from .config import REFERENCE_DIR
from .files import file_size_read
from .rowmap import gb_to_bytes
from . import units
from .units import GIB_IN_GB, MIB_IN_GB  # noqa: F401  re-exported for the tests and callers
from .vocab import Figure, NatureKind, Phase


# Format names as the tools print them. A name matching none of these ("4-bit", "8 bits", "int4?") is refused:
# the bit count alone does not say which kernels and which bytes per weight were used.
# llama.cpp's own names come from data/reference/names/quant_types.toml (ggml types and llama file types, read
# from llama.cpp's sources); the pattern holds the other tools' formats.
_NAMED_QUANT = re.compile(
    r"""^(
        FP16|FP32|FP8|FP8_E4M3|FP8_E5M2|FP4|NVFP4|MXFP4|MXFP6|MXFP8|INT8|INT4|W8A8|W4A16|W8A16
        |Q[2-8]_K_XL
        |AWQ|GPTQ|EXL2|EXL3|HQQ|BNB_NF4|NF4|MLX_4BIT|MLX_8BIT|MLX_3BIT|MLX_6BIT|DWQ
    )$""",
    re.X,
)
_QUANT_TYPES = tomllib.loads((REFERENCE_DIR / "names" / "quant_types.toml").read_text(encoding="utf-8"))
LLAMA_CPP_QUANTS = frozenset(_QUANT_TYPES["ggml_types"]) | frozenset(_QUANT_TYPES["llama_ftypes"])
# Named formats of llama.cpp's forks and of GGUF publishers (ik_llama.cpp's types, Unsloth's "UD-" labels), by the
# key named_quantization compares ("UD-Q4_K_XL" -> "UD_Q4_K_XL") -> their own spelling.
_OTHER_GGUF_QUANTS = {name.upper().replace("-", "_"): name for key in ("ik_llama_ftypes", "ik_llama_types",
                                                                       "unsloth_dynamic")
                      for name in _QUANT_TYPES.get(key, ())}
_UD_AFTER = re.compile(r"^(?P<quant>\S+?)\s*\(UD\)$", re.I)  # "Q4_K_XL (UD)" is Unsloth's "UD-Q4_K_XL"


# Bounds that catch nonsense (a unit slip, a raw count, an overflow) and that no real figure comes near. Counts stay
# within PostgreSQL's 32-bit INTEGER columns (SQLite's are 64-bit); names and URLs within a PostgreSQL index entry.
MAX_TOKENS_PER_SECOND = 1e7  # tokens/s (and its stddev): the largest aggregates published are near 10^5
MAX_TOKENS = 10**9  # prompt, generated tokens and context depth
MAX_USERS = 10**6
MAX_GPU_CORES = 10**6
MAX_PARAMS_B = 20_000  # no model has 20 trillion parameters: a larger figure is a count in millions or units
MAX_SIZE_GB = 1e5  # a model file
MAX_MEMORY_GB = 1e6  # a machine (a rack counts)
MAX_BANDWIDTH_GBS = 1e7
EARLIEST_DATE = date(1990, 1, 1)
MAX_DEPTH = 10  # levels of JSON in a record (the format itself uses 3): bounds software.options and nature.inputs
MAX_NAME_BYTES = 500  # names, versions, authors: unique columns are indexed, and an index entry is ~2.7 kB on PostgreSQL
MAX_URL_BYTES = 2000


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
    not_finite = staticmethod(lambda field: f"{field}: not a finite number")
    above_ceiling = "tokens_per_second: above_ceiling"

    @staticmethod
    def above(value: float, ceiling: float, bandwidth: float, read_gb: float, share: float) -> str:
        """above_ceiling with its numbers: the value, the maximum and the inputs it was computed from."""
        read = f"{read_gb:g} GB read per token" + (f" ({share:.1%} of the file: mixture of experts)" if share < 1
                                                    else " (dense: the whole file)")
        return (f"{Reason.above_ceiling}: {value:g} > {ceiling:.2f}, the maximum computed from {bandwidth:g} GB/s "
                f"÷ {read}" + ("" if share < 1 else "; for a mixture of experts set model.active_params_b"))


@lru_cache(maxsize=1024)  # a file names a handful of formats, once per record
def named_quantization(value: str) -> str | None:
    """The canonical spelling of a quantization format name, or None when it is not a named format."""
    ud = _UD_AFTER.match(value.strip())
    if ud:
        value = "UD-" + ud["quant"]
    candidate = value.strip().upper().replace("-", "_").replace(" ", "_")
    if candidate in _OTHER_GGUF_QUANTS:
        return _OTHER_GGUF_QUANTS[candidate]
    return candidate if candidate in LLAMA_CPP_QUANTS or _NAMED_QUANT.match(candidate) else None


# ----------------------------------------------------------------------------------------------- the format (v1)
class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


# Numbers are JSON numbers: not `true`, not "59.02" (strict mode).
Number = Annotated[float | None, Field(strict=True)]


def _whole_number(value: Any) -> Any:
    kind = value.__class__
    if kind is bool or kind is str:
        raise PydanticCustomError("int_type", "input should be a valid integer")
    if kind is float and not abs(value) <= 1e15:  # 1e20 tokens: pydantic's own words would be about parsing
        raise PydanticCustomError("int_range", "not a plausible count")
    return value


# Counts are whole JSON numbers: 32 or 32.0, not 32.5, `true` or "32".
Count = Annotated[int | None, BeforeValidator(_whole_number)]


def _not_a_number(value: Any) -> Any:
    """A date is written "YYYY-MM-DD": pydantic would read a number as a Unix time (0 is 1970-01-01)."""
    if isinstance(value, (int, float)):
        raise PydanticCustomError("date_type", "not a date (write YYYY-MM-DD)")
    return value


Day = Annotated[date | None, BeforeValidator(_not_a_number)]


def _number_or_text(value: Any) -> float | int | str | None:
    """A quantity: a finite number in the field's unit, or a string with its unit ("59.02 GiB"), checked later."""
    kind = value.__class__
    if value is None or kind is str or (kind is float and math.isfinite(value)):
        return value
    if kind is int:
        if abs(value) > MAX_PARAMS_B * 1e6:  # beyond any unit slip (and float() of a huge int would raise)
            raise PydanticCustomError("number_too_large", "not a plausible number (too large)")
        return value
    if kind is float:
        raise PydanticCustomError("finite_number", "not a finite number")
    raise PydanticCustomError("quantity_type", "not a number or a string with its unit")


Quantity = Annotated[float | str | None, PlainValidator(_number_or_text)]


class Via(_Strict):
    title: str | None = None
    publisher: str | None = None
    published_at: Day = None
    url: str | None = None


class SourceRef(_Strict):
    url: str | None = None
    retrieved_at: Day = None
    published_at: Day = None
    author: str | None = None
    quote: str | None = None
    # The header line of the table the quoted row is from ("| model | size | … | t/s |"): optional, set by the
    # readers of tables so a footnote can say which column holds the figure. Not part of the figure's identity.
    quote_header: str | None = None
    via: Via | None = None

    @field_validator("via")
    @classmethod
    def _no_empty_via(cls, via: Via | None) -> Via | None:
        # A block of nulls says nothing, and the store keeps it as four NULLs that read back as `via: null`: one
        # spelling, so the figure's identity is the same before and after a round trip through the database.
        if via is not None and via.title is None and via.publisher is None and via.published_at is None \
                and via.url is None:
            return None
        return via


class HardwareRef(_Strict):
    name: str | None = None
    memory_bandwidth_gbs: Number = None
    memory_gb: Number = None
    gpu_cores: Count = None


class ModelRef(_Strict):
    name: str | None = None
    params_b: Quantity = None
    active_params_b: Quantity = None
    file_size_gb: Quantity = None


class SoftwareRef(_Strict):
    name: str | None = None
    version: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)


class Lengths(_Strict):
    prompt_tokens: Count = None
    generated_tokens: Count = None
    context_depth: Count = 0


class Concurrency(_Strict):
    users: Count = None
    figure: Figure | None = None


class Nature(_Strict):
    kind: NatureKind | None = None
    procedure: str | None = None
    formula: str | None = None
    inputs: dict[str, Any] | None = None

    @field_validator("inputs")
    @classmethod
    def _no_empty_inputs(cls, inputs: dict[str, Any] | None) -> dict[str, Any] | None:
        return inputs or None  # `{}` is kept as NULL and reads back as null: one spelling (see SourceRef.via)


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
    tokens_per_second: Number = None
    stddev: Number = None

    def to_json_dict(self) -> dict:
        """The record as exported: every key present, in the documented order, dates as ISO strings;
        `source.quote_header` only where the figure has one (records written before it existed read the same)."""
        if self.source.quote_header is None:
            return self.model_dump(mode="json", exclude=_NO_QUOTE_HEADER)
        return self.model_dump(mode="json")

    def identity(self) -> bytes:
        """Canonical bytes of the figure without its retrieval date (re-reading a post another day is no change).

        model_dump_json's own serializer, called without the method's argument handling: it runs once per record
        of a bulk add, where that handling cost a fifth of the dump."""
        return self.__pydantic_serializer__.to_json(self, exclude=_NOT_IN_IDENTITY)


TOP_LEVEL_KEYS = frozenset(Record.model_fields)
_NO_QUOTE_HEADER = {"source": {"quote_header"}}
_NOT_IN_IDENTITY = {"source": {"retrieved_at", "quote_header"}}


@dataclass
class Outcome:
    """What validation says of one candidate: the normalized record, or why not; `notes` say what was not checked."""

    record: Record | None = None
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    share: Share | None = None  # of an accepted record: the active share read per token (tpsdb.ceiling)

    @property
    def accepted(self) -> bool:
        return not self.reasons


# A lookup the validator may use for the ceiling check: hardware name -> memory bandwidth in GB/s, or None.
BandwidthLookup = Callable[[str], float | None]


# model name -> its stored facts, or None
ModelLookup = Callable[[str], ModelFacts | None]


# ------------------------------------------------------------------------------------------------------ units
def _quantity(value: str, field: str, reasons: list[str], parse: Callable[[str], float | None],
              hint: str) -> float | None:
    """A number written with its unit ("59.02 GiB", "116,830 M"), read by tpsdb.units (the readers' parser too)."""
    number = parse(value)
    if number is None:
        reasons.append(Reason.bad(field, f'unknown unit in "{value}" ({hint})'))
    return number


def _size_gb(value: float | str, field: str, reasons: list[str]) -> float | None:
    """Decimal GB from a number (already GB) or a string with its unit: GB, GiB, MB, MiB."""
    if isinstance(value, (int, float)):
        return float(value)
    return _quantity(value, field, reasons, units.size_gb, "use GB, GiB, MB or MiB")


def _params_b(value: float | str, field: str, reasons: list[str]) -> float | None:
    """Billions of parameters from a number (already B) or a string with its unit: B, M, K, T."""
    if isinstance(value, (int, float)):
        if value > MAX_PARAMS_B:
            reasons.append(Reason.bad(field, f"{value:g} is not in billions (looks like millions or a raw count)"))
            return None
        return float(value)
    return _quantity(value, field, reasons, units.params_b, "use B or M")


_MODEL_LIMITS = {"model.params_b": MAX_PARAMS_B, "model.active_params_b": MAX_PARAMS_B,
                 "model.file_size_gb": MAX_SIZE_GB}


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


# A number as written in a quote: a run of digits with points, commas and (before three digits) spaces, which
# _readings() takes apart; an exponent. It starts at no letter, digit or point, so "tg32", "b6918" and the "5" or
# "9.02" inside "59.02" are not numbers of the quote.
_NUMBER_RUN = re.compile(r"(?<![A-Za-z0-9_.,])\d(?:[\d.,]|[ \u202f\u00a0](?=\d))*(?:[eE][+-]?\d+)?")
_SPACES = re.compile(r"[ \u202f\u00a0]+")
_PLAIN = re.compile(r"\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")
_THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")  # 1,311.72
# The look-behinds let a match start only where a number starts, so even a search stays one pass (D8).
_THOUSANDS_DECIMAL_COMMA = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{3})++,\d++")  # 1.311,72
_DECIMAL_COMMA = re.compile(r"(?<![\d,])\d++,\d{1,2}")  # 42,0
_SPACED_THOUSANDS = re.compile(r"\d{1,3}(?: \d{3})+(?:[.,]\d+)?")  # 1 311.72, 1 311,72
# A size or a parameter count ("59.02 GiB", "116.83 B"): a number of the quote, but never the speed.
_SIZE_UNIT_AFTER = re.compile(r"(?<!\s)\s*+(?:[KMGT]i?B|B)\b")


def _readings(word: str) -> list[str]:
    """The numbers one space-free piece of a run stands for, as decimal text."""
    word = word.rstrip(".,")  # the end of a sentence
    if _PLAIN.fullmatch(word):
        return [word]
    if _THOUSANDS.fullmatch(word):
        return [word.replace(",", "")]
    if _THOUSANDS_DECIMAL_COMMA.fullmatch(word):
        return [word.replace(".", "").replace(",", ".")]
    if _DECIMAL_COMMA.fullmatch(word):
        return [word.replace(",", ".")]
    return [piece for piece in word.split(",") if _PLAIN.fullmatch(piece)]  # a list: "1,2,4,8"


def quote_numbers(quote: str) -> list[str]:
    """The numbers a quote shows, as decimal text, leaving out sizes and parameter counts.

    A space separates numbers ("| 512 | 32 |", "32 512-token prompts"), except that digits grouped by thousands
    ("1 311.72") are also read as one number."""
    numbers = []
    for match in _NUMBER_RUN.finditer(quote):
        if _SIZE_UNIT_AFTER.match(quote, match.end()):
            continue
        run = match.group().rstrip(" .,")
        words = _SPACES.split(run)
        for word in words:
            numbers += _readings(word)
        if len(words) > 1 and _SPACED_THOUSANDS.fullmatch(" ".join(words)):
            numbers.append("".join(words).replace(",", "."))
    return numbers


def _written_alone(text: str, quote: str) -> bool:
    """Is this text in the quote as a number of its own (a quicker answer than quote_numbers for the usual case)?
    False when unsure: "59.02 5 GB" (a run of numbers before a unit) is left to quote_numbers."""
    start = quote.find(text)
    while start != -1:
        end = start + len(text)
        before, after, next_after = quote[start - 1:start], quote[end:end + 1], quote[end + 1:end + 2]
        if not (before and before.isascii() and (before.isalnum() or before in "_.,")) \
                and not after.isdigit() and not (after in ".,eE \u202f\u00a0" and after and next_after.isdigit()) \
                and not _SIZE_UNIT_AFTER.match(quote, end):
            return True
        start = quote.find(text, start + 1)
    return False


def _value_in_quote(value: float, quote: str) -> bool:
    """Does the quote show this number? The value is one of the quote's numbers, or one of them rounded to the
    value's decimals (the quote shows 59.0249, the record says 59.02)."""
    if not math.isfinite(value):
        return False
    text = repr(float(value))
    if _written_alone(text[:-2] if text.endswith(".0") else text, quote):
        return True
    wanted = Decimal(repr(float(value))).normalize()
    places = max(0, -wanted.as_tuple().exponent)
    half_unit = Decimal(5).scaleb(-places - 1)
    for text in quote_numbers(quote):
        shown = Decimal(text)
        if shown == wanted or (-shown.as_tuple().exponent > places and abs(shown - wanted) <= half_unit):
            return True
    return False


# ------------------------------------------------------------------------------------------ storable text
# A NUL character: PostgreSQL refuses it in text, SQLite stores it. A lone surrogate: not Unicode text, so
# neither database (nor the terminal) takes it. Either, anywhere in a record, is refused with its field named.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # in a name: a terminal escape, a line break…
MAX_QUOTE_HEADER = 2000  # characters of source.quote_header: a table's header line, never a page


def quote_header_problem(header: str) -> str | None:
    """Why a text cannot be a quoted row's table header (one line of text, bounded), or None when it can."""
    if len(header) > MAX_QUOTE_HEADER:
        return f"longer than {MAX_QUOTE_HEADER} characters"
    if not header.strip():
        return "empty"
    if len(header.splitlines()) > 1:  # \n, \r and every other break Python reads, U+2028 and U+2029 included
        return "more than one line"
    if _CONTROL.search(header.replace("\t", " ")):
        return "holds a control character"
    return None


def storable(text: str, max_bytes: int | None = None) -> bool:
    """Text that SQLite and PostgreSQL store alike (and, with max_bytes, small enough for an index entry)."""
    if _UNSTORABLE.search(text):
        return False
    return max_bytes is None or len(text) <= max_bytes // 4 or len(text.encode()) <= max_bytes


def _unstorable_text(text: str) -> str:
    return "holds a NUL character" if "\x00" in text else "holds a lone surrogate (not Unicode text)"


def _clean_text(text: str) -> bool:
    return "\x00" not in text if text.isascii() else not _UNSTORABLE.search(text)


def _clean(value: dict | list, depth: int) -> bool:
    """No reason of content_reasons() in this container: the quick answer, run on every record."""
    if depth > MAX_DEPTH:
        return False
    search = _UNSTORABLE.search
    for key, item in (value.items() if value.__class__ is dict else enumerate(value)):
        kind = item.__class__
        # _clean_text(), written out: this loop runs over every key and value of every record
        if key.__class__ is str and not (key.isascii() and "\x00" not in key) and search(key):
            return False
        if kind is str:
            if not (item.isascii() and "\x00" not in item) and search(item):
                return False
        elif kind is float:
            if item - item != 0:  # NaN or an infinity
                return False
        elif (kind is dict or kind is list) and not _clean(item, depth + 1):
            return False
    return True


def content_reasons(value: Any, path: str, reasons: list[str], depth: int = 1) -> list[str]:
    """What no database could store alike, anywhere in a JSON value: a NUL or a lone surrogate in a string or a
    key, a number that is not finite, nesting deeper than MAX_DEPTH. Never recurses deeper than MAX_DEPTH."""
    kind = value.__class__
    if kind is str:
        if _UNSTORABLE.search(value):
            reasons.append(Reason.bad(path, _unstorable_text(value)))
    elif kind is float:
        if not math.isfinite(value):
            reasons.append(Reason.not_finite(path))
    elif kind is dict or kind is list:
        if depth > MAX_DEPTH:
            reasons.append(Reason.bad(path, f"nested deeper than {MAX_DEPTH} levels"))
            return reasons
        prefix = f"{path}." if path != "record" else ""
        for key, item in (value.items() if kind is dict else enumerate(value)):
            if key.__class__ is str and _UNSTORABLE.search(key):
                reasons.append(Reason.bad(path, f"a key {_unstorable_text(key)}"))
                continue
            content_reasons(item, f"{prefix}{key}", reasons, depth + 1)
    return reasons


def validate(
    data: Any,
    *,
    bandwidth_of: BandwidthLookup | None = None,
    model_of: ModelLookup | None = None,
    today: date | None = None,
) -> Outcome:
    """Check one candidate against the record format and the six required fields."""
    if not isinstance(data, dict):
        return Outcome(reasons=[Reason.bad("record", "not a JSON object")])
    if not _clean(data, 1):  # these reasons alone: others would quote the text that cannot be stored
        return Outcome(reasons=content_reasons(data, "record", []))
    reasons = [Reason.unknown_field(k) for k in data if k not in TOP_LEVEL_KEYS]
    try:
        record = Record.model_validate({k: v for k, v in data.items() if k in TOP_LEVEL_KEYS})
    except ValidationError as error:
        return Outcome(reasons=reasons + _pydantic_reasons(error))
    return check_record(record, reasons, bandwidth_of=bandwidth_of, model_of=model_of, today=today)


def validate_well_formed_json(text: str | bytes, *, bandwidth_of: BandwidthLookup | None = None,
                              model_of: ModelLookup | None = None, today: date | None = None) -> Outcome | None:
    """validate() of a JSON text when it holds an accepted record; None otherwise (then use validate(json.loads)).

    Pydantic's JSON parser builds the record straight from the text, without the dict in between: the bulk path
    of `tpsdb add`, where parsing the JSON cost as much as validating it. A text it refuses (bad JSON, an unknown
    field, a wrong type, a rejected record) gets None rather than reasons, so that every reason is spelled by
    validate(), the same as for the record in a JSON list. So does a text holding the escape \\u0000, which
    pydantic would read as the NUL character that validate() refuses.
    """
    if (b"\\u0000" if text.__class__ is bytes else "\\u0000") in text:
        return None
    try:
        record = Record.__pydantic_validator__.validate_json(text)  # model_validate_json without its wrapper
    except ValidationError:
        return None
    outcome = check_record(record, [], bandwidth_of=bandwidth_of, model_of=model_of, today=today)
    # a refused record goes through validate() too: its reasons are those of the same record in a JSON list
    return outcome if outcome.accepted else None


def check_record(record: Record, reasons: list[str], *, bandwidth_of: BandwidthLookup | None = None,
                 model_of: ModelLookup | None = None, today: date | None = None) -> Outcome:
    """The six required fields, units and plausibility, on a record whose structure pydantic has accepted."""
    today = today or datetime.now(timezone.utc).date()
    _check_names(record, reasons)
    _check_source(record, reasons, today)
    _check_hardware(record, reasons)
    _check_model(record, reasons)
    _check_quantization(record, reasons)
    _check_software(record, reasons)
    _check_lengths(record, reasons)
    _check_concurrency(record, reasons)
    _check_nature(record, reasons)
    _check_value(record, reasons)
    notes: list[str] = []
    share = _check_ceiling(record, reasons, bandwidth_of, model_of, notes) if not reasons else None
    if reasons:
        return Outcome(reasons=reasons, notes=notes)
    return Outcome(record=record, reasons=reasons, notes=notes, share=share)


# http(s), any case; a host with a dot and no user:password@; nothing blank or invisible anywhere (a trailing
# newline included: fullmatch, and isprintable() for the controls \S lets through).
# Possessive, and the host's dot checked apart: one pass over the text, however it is built (D8).
_HTTP_URL = re.compile(r"https?://([^\s/?#@]++)(?:[/?#]\S*+)?", re.IGNORECASE)


def is_http_url(url: str) -> bool:
    """An http(s) URL that can be stored and shown as a link: the rule for every URL field of a record."""
    match = _HTTP_URL.fullmatch(url)
    return (match is not None and "." in match.group(1)[1:-1] and url.isprintable()
            and storable(url, MAX_URL_BYTES))


def _check_url(url: str | None, field: str, reasons: list[str]) -> None:
    if url is not None and not is_http_url(url):
        reasons.append(Reason.bad(field, "not an http(s) URL" if not _credentials(url) else "holds a user:password@"))


def _credentials(url: str) -> bool:
    return bool(re.match(r"(?i)https?://[^/?#]*@", url))


def _check_date(day: date | None, field: str, reasons: list[str], today: date) -> None:
    if day is None:
        return
    if day > today:
        reasons.append(Reason.future(field))
    elif day < EARLIEST_DATE:
        reasons.append(Reason.bad(field, f"before {EARLIEST_DATE.isoformat()}"))


# Single-line text fields: no control character (a terminal escape, a line break), and short enough for an index.
_NAME_FIELDS = (("hardware", "name"), ("model", "name"), ("software", "name"), ("software", "version"),
                ("source", "author"))
_VIA_NAME_FIELDS = ("title", "publisher")


def _check_name(text: str | None, field: str, reasons: list[str]) -> None:
    if text is None or (text.isascii() and text.isprintable() and len(text) <= MAX_NAME_BYTES):  # the usual case
        return
    if _CONTROL.search(text):
        reasons.append(Reason.bad(field, "holds a control character"))
    elif not storable(text, MAX_NAME_BYTES):
        reasons.append(Reason.bad(field, f"longer than {MAX_NAME_BYTES} bytes"))


_NAMES_OF = attrgetter(*(f"{block}.{attr}" for block, attr in _NAME_FIELDS))  # all five in one call (C)
_NAME_PATHS = tuple(f"{block}.{attr}" for block, attr in _NAME_FIELDS)


def _check_names(r: Record, reasons: list[str]) -> None:
    for text, path in zip(_NAMES_OF(r), _NAME_PATHS):
        if text is not None and not (text.isascii() and text.isprintable() and len(text) <= MAX_NAME_BYTES):
            _check_name(text, path, reasons)  # the usual case (above) written out: it runs five times per record
    if r.source.via is not None:
        for attr in _VIA_NAME_FIELDS:
            _check_name(getattr(r.source.via, attr), f"source.via.{attr}", reasons)


def _check_range(value: float | None, field: str, reasons: list[str], highest: float, *,
                 lowest: float = 0, zero_ok: bool = False) -> bool:
    """A number within (lowest, highest], or [lowest, highest] when zero_ok; says whether it was."""
    if value is None:
        return True
    if value < lowest or (value == lowest and not zero_ok):
        reasons.append(Reason.bad(field, "negative" if value < 0 and zero_ok else "not positive"))
    elif value > highest:
        reasons.append(Reason.bad(field, f"{value:g} is implausible (more than {highest:g})"))
    else:
        return True
    return False


def _check_source(r: Record, reasons: list[str], today: date) -> None:
    s = r.source
    if not s.url:
        reasons.append(Reason.missing("source.url"))
    else:
        _check_url(s.url, "source.url", reasons)
    if s.retrieved_at is None:
        reasons.append(Reason.missing("source.retrieved_at"))
    _check_date(s.retrieved_at, "source.retrieved_at", reasons, today)
    _check_date(s.published_at, "source.published_at", reasons, today)
    if s.published_at and s.retrieved_at and s.published_at > s.retrieved_at and s.retrieved_at <= today:
        reasons.append(Reason.bad("source.published_at", "after the retrieval date"))
    if s.via is not None:
        _check_url(s.via.url, "source.via.url", reasons)
        _check_date(s.via.published_at, "source.via.published_at", reasons, today)
    if s.quote_header is not None and (problem := quote_header_problem(s.quote_header)):
        reasons.append(Reason.bad("source.quote_header", problem))
    if not (s.quote and s.quote.strip()):
        reasons.append(Reason.missing("source.quote"))
    elif r.tokens_per_second is not None and not _value_in_quote(r.tokens_per_second, s.quote):
        reasons.append(Reason.bad("source.quote", f"does not show the value {r.tokens_per_second:g}"))


def _check_hardware(r: Record, reasons: list[str]) -> None:
    h = r.hardware
    if not (h.name and h.name.strip()):
        reasons.append(Reason.missing("hardware.name"))
    _check_range(h.memory_bandwidth_gbs, "hardware.memory_bandwidth_gbs", reasons, MAX_BANDWIDTH_GBS)
    _check_range(h.memory_gb, "hardware.memory_gb", reasons, MAX_MEMORY_GB)
    _check_range(h.gpu_cores, "hardware.gpu_cores", reasons, MAX_GPU_CORES)


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
        if not _check_range(number, path, reasons, _MODEL_LIMITS[path]):
            setattr(m, attr, None)  # no plausibility verdict on a number already refused
            continue
        if attr == "file_size_gb":  # what the store's bytes column keeps, so that export gives this value back
            number = gb_to_bytes(number) / 1e9
        if value.__class__ is not float or number != value:  # setattr on a pydantic model is costly: only when
            setattr(m, attr, number)                           # the value changed
    if isinstance(m.params_b, float) and isinstance(m.active_params_b, float) and m.active_params_b > m.params_b:
        reasons.append(Reason.bad("model.active_params_b", "larger than params_b"))
    if isinstance(m.params_b, float) and isinstance(m.file_size_gb, float) and m.params_b > 0:
        # F32 is 4 bytes per weight; the smallest formats are ~0.2. Outside that, a unit is wrong (MB for GB…).
        if not _plausible_bytes_per_param(m.file_size_gb, m.params_b):
            if m.params_b >= 1000 and _plausible_bytes_per_param(m.file_size_gb, m.params_b / 1000):
                # a trillion parameters or more in a file this small: the count is in millions (6738 for 6.74 B)
                reasons.append(Reason.bad("model.params_b", f"{m.params_b:g} is not in billions for a "
                                          f"{m.file_size_gb:g} GB file (looks like millions)"))
            else:
                reasons.append(Reason.bad("model.file_size_gb", f"{m.file_size_gb:g} GB for {m.params_b:g} B "
                                          "parameters is implausible (unit?)"))


def _plausible_bytes_per_param(file_size_gb: float, params_b: float) -> bool:
    return 0.1 <= file_size_gb / params_b <= 4.6


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
    if options:
        unstorable = [] if _clean(options, 3) else content_reasons(options, "software.options", [], depth=3)
        reasons += unstorable
        if not unstorable:
            _sort_keys(options)


def _sort_keys(value: dict | list) -> None:
    """Every dict's keys sorted, at every level, in place (setattr on a pydantic model is costly): one spelling
    per figure, and the one the store's JSON columns keep (rowmap.canonical_json), so the identity of a figure
    read back from the database is the identity it was stored with. Only on a value content_reasons accepts (its
    depth is bounded)."""
    for item in (value.values() if isinstance(value, dict) else value):
        if item.__class__ is dict or item.__class__ is list:
            _sort_keys(item)
    if isinstance(value, dict) and list(value) != sorted(value):
        ordered = sorted(value.items())
        value.clear()
        value.update(ordered)


def _check_lengths(r: Record, reasons: list[str]) -> None:
    n = r.lengths
    if n.generated_tokens is None:
        reasons.append(Reason.missing("lengths.generated_tokens"))
    elif (_check_range(n.generated_tokens, "lengths.generated_tokens", reasons, MAX_TOKENS, zero_ok=True)
          and r.phase in WRITES_TOKENS and n.generated_tokens == 0):
        reasons.append(Reason.bad("lengths.generated_tokens", f"0 for a {r.phase.value} figure"))
    reads_prompt = r.phase in READS_PROMPT
    if reads_prompt and n.prompt_tokens is None:
        reasons.append(Reason.missing("lengths.prompt_tokens"))
    elif reads_prompt and n.prompt_tokens <= 0:
        reasons.append(Reason.bad("lengths.prompt_tokens", f"not positive for a {r.phase.value} figure"))
    else:  # the range: 0 only where no prompt is read
        _check_range(n.prompt_tokens, "lengths.prompt_tokens", reasons, MAX_TOKENS, zero_ok=True)
    if n.context_depth is None:
        n.context_depth = 0
    else:
        _check_range(n.context_depth, "lengths.context_depth", reasons, MAX_TOKENS, zero_ok=True)


def _check_concurrency(r: Record, reasons: list[str]) -> None:
    c = r.concurrency
    if c.users is None:
        reasons.append(Reason.missing("concurrency.users"))
    elif c.users < 1:
        reasons.append(Reason.bad("concurrency.users", "less than 1"))
    else:
        _check_range(c.users, "concurrency.users", reasons, MAX_USERS)
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
    if n.inputs:
        unstorable = [] if _clean(n.inputs, 3) else content_reasons(n.inputs, "nature.inputs", [], depth=3)
        reasons += unstorable
        if not unstorable:
            _sort_keys(n.inputs)


def _check_value(r: Record, reasons: list[str]) -> None:
    if r.phase is None:
        reasons.append(Reason.missing("phase"))
    if r.tokens_per_second is None:
        reasons.append(Reason.missing("tokens_per_second"))
    else:
        _check_range(r.tokens_per_second, "tokens_per_second", reasons, MAX_TOKENS_PER_SECOND)
    _check_range(r.stddev, "stddev", reasons, MAX_TOKENS_PER_SECOND, zero_ok=True)


def _check_ceiling(r: Record, reasons: list[str], bandwidth_of: BandwidthLookup | None,
                   model_of: ModelLookup | None = None, notes: list[str] | None = None) -> Share:
    """A measured one-user generation figure above its computed maximum (tpsdb.ceiling) is refused, with the
    numbers; `notes` says when it could not be checked (a mixture of experts whose active share is unknown).
    Returns the active share, which the store keeps with the figure."""
    m = r.model
    facts = model_of(m.name) if model_of else None
    share = active_share(m.name, m.params_b, m.active_params_b, facts, r.source.quote)
    if not is_checked_figure(r.nature.kind, r.phase, r.concurrency.figure, r.concurrency.users):
        return share
    bandwidth = choose_bandwidth(bandwidth_of(r.hardware.name) if bandwidth_of else None, None,
                                 r.hardware.memory_bandwidth_gbs)
    if bandwidth is None:  # not checked (ceiling_of's verdict: NO_BANDWIDTH); the usual case of a bulk add
        return share
    size = file_size_read(m.file_size_gb, r.quantization, facts.cited_sizes) if facts else m.file_size_gb
    ceiling = ceiling_of(bandwidth, size, share)
    if ceiling.check == MOE_UNKNOWN and notes is not None:
        notes.append(f"tokens_per_second: ceiling not checked: {m.name} is a mixture of experts whose active "
                     "parameters are unknown (set model.active_params_b)")
    if ceiling.value is not None and bandwidth is not None and r.tokens_per_second > ceiling.value:
        reasons.append(Reason.above(r.tokens_per_second, ceiling.value, bandwidth.gbs, round(size * share.value, 4),
                                    share.value))
    return share


class RecordFileError(ValueError):
    """A file of records that is not JSON or JSONL: refused whole, with the line at fault (see tpsdb.bulk)."""
