"""What the serving-benchmark readers share (InferenceX, LottoLottoLotto, localmaxxing, MLPerf): the exact text of
each JSON record of a file (its quote), the cited facts about the checkpoints they ran (parameters, file size,
named format), and the record they build.

A figure's quote is the record's text as it stands in the file: for a JSON array, one element's characters from
its opening brace to its closing one (pretty-printed or not); for JSONL, one line. The checkpoint facts are the
`[[model_file]]` entries of data/reference/datasets-b-*.toml whose `size_source_url` is a Hugging Face repository
page: the repository id (`org/name`) is the key a reader looks a checkpoint up by. A checkpoint with no entry has
no file size, and its figures are rejections naming it: nothing is guessed.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tpsdb.collect.extract import Candidate, PostContext, new_record
from tpsdb.config import REFERENCE_DIR
from tpsdb.readers import FileContext
from tpsdb.readers._common import jsonl_lines, raw_decode
from tpsdb.record import named_quantization

_DECODER = json.JSONDecoder()  # for text already read whole (a row's quote); a file's text goes through raw_decode
_BLANK = re.compile(r"[ \t\n\r]*")


class JsonShapeError(ValueError):
    """A file that is not the JSON its reader expects (named with the path into it and the position)."""


def _skip(text: str, i: int) -> int:
    match = _BLANK.match(text, i)  # the pattern matches the empty string: never None
    return match.end() if match else i


def json_items(text: str, path: tuple[str, ...] = ()) -> Iterator[tuple[Any, str]]:
    """Each element of the array at `path` ("*" for every key of an object) with its exact text in `text`.

    `path` () is the top-level array; ("presets", "*", "rows") the `rows` array of every preset. The elements are
    decoded once each; the objects on the way are walked key by key without decoding what is not on the path."""
    yield from _walk(text, _skip(text, 0), path, "$")


def _walk(text: str, i: int, path: tuple[str, ...], where: str) -> Iterator[tuple[Any, str]]:
    if not path:
        if text[i:i + 1] != "[":
            raise JsonShapeError(f"{where}: not an array (at character {i})")
        i = _skip(text, i + 1)
        if text[i:i + 1] == "]":
            return
        while True:
            try:
                value, end = raw_decode(text, i, where)
            except ValueError as error:
                raise JsonShapeError(f"{where}: {error}") from None
            yield value, text[i:end]
            i = _skip(text, end)
            if text[i:i + 1] == ",":
                i = _skip(text, i + 1)
            elif text[i:i + 1] == "]":
                return
            else:
                raise JsonShapeError(f"{where}: the array does not go on at character {i} (truncated?)")
    head, rest = path[0], path[1:]
    if text[i:i + 1] != "{":
        raise JsonShapeError(f"{where}: not an object (at character {i})")
    i = _skip(text, i + 1)
    if text[i:i + 1] == "}":
        return
    while True:
        try:
            key, end = raw_decode(text, i, where)
        except ValueError as error:
            raise JsonShapeError(f"{where}: {error}") from None
        i = _skip(text, end)
        if not isinstance(key, str) or text[i:i + 1] != ":":
            raise JsonShapeError(f"{where}: not an object key at character {i}")
        i = _skip(text, i + 1)
        if head in ("*", key):
            yield from _walk(text, i, rest, f"{where}.{key}")
        try:
            _, end = raw_decode(text, i, f"{where}.{key}")  # the value, to go past it
        except ValueError as error:
            raise JsonShapeError(f"{where}.{key}: {error}") from None
        i = _skip(text, end)
        if text[i:i + 1] == ",":
            i = _skip(text, i + 1)
        elif text[i:i + 1] == "}":
            return
        else:
            raise JsonShapeError(f"{where}: the object does not go on at character {i} (truncated?)")


def jsonl_items(text: str) -> Iterator[tuple[int, Any, str]]:
    """Each non-blank line of a JSONL text: (line number from 1, its value or None when not JSON, its text)."""
    for number, line in enumerate(jsonl_lines(text), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, a number of over 4,300 digits, too deep: not a record
            value = None
        yield number, value, line


# ---------------------------------------------------------------------------------------- checkpoint facts
@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint's cited facts (one [[model_file]] entry of data/reference/datasets-b-*.toml)."""

    repo: str  # Hugging Face repository id (with "/<file>" for one file of it), as the entry's page spells it
    model: str  # the model's name in tpsdb
    quantization: str  # its named format
    params_b: float | None
    active_params_b: float | None
    file_size_gb: float


# a repository page, or one file of it (a GGUF repository holds one file per format)
_HF_REPO = re.compile(r"^https://huggingface\.co/([^/?#]+/[^/?#]+)(?:/(?:blob|resolve)/[^/?#]+/([^?#]+))?/?$")


@lru_cache(maxsize=1)
def checkpoints() -> dict[str, Checkpoint]:
    """Lower-case Hugging Face repository id -> its cited facts."""
    found: dict[str, Checkpoint] = {}
    for path in sorted(REFERENCE_DIR.glob("datasets-b-*.toml")):
        for entry in tomllib.loads(path.read_text(encoding="utf-8")).get("model_file", []):
            match = _HF_REPO.match(entry.get("size_source_url", ""))
            if match:
                key = match.group(1) + (f"/{match.group(2)}" if match.group(2) else "")
                found[key.lower()] = Checkpoint(
                    match.group(1), entry["model"], named_quantization(entry["quantization"]) or entry["quantization"],
                    entry.get("params_b"), entry.get("active_params_b"), entry["file_size_gb"])
    return found


def checkpoint(repo: str | None, file: str | None = None) -> Checkpoint | None:
    """The cited facts of a checkpoint: a repository, or one file of it (`file`, for a GGUF repository)."""
    if not repo:
        return None
    return checkpoints().get(f"{repo}/{file}".lower() if file else repo.lower())


@lru_cache(maxsize=1)
def _names() -> dict:
    path = REFERENCE_DIR / "names" / "datasets-b-serving.toml"
    return tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def names(table: str) -> dict:
    """One table of data/reference/names/datasets-b-serving.toml (format labels, hardware codes, checkpoints)."""
    return _names().get(table, {})


def quant_format(label: str | None) -> str | None:
    """The named format a source's label stands for ([formats] of the names file), or None when unknown (or when
    the row gives a list or an object where the label should be)."""
    if not label or not isinstance(label, str):
        return None
    known = names("quant_labels")
    named = known.get(label.lower())
    return named_quantization(named) if named else named_quantization(label)


# ------------------------------------------------------------------------------------------------- records
def context(ctx: FileContext, author: str | None = None, published_at: str | None = None) -> PostContext:
    """The PostContext a record of this file cites."""
    return PostContext(permalink=ctx.url, retrieved_at=ctx.retrieved_at,
                       published_at=published_at or ctx.published_at, author=author, protocol={})


def model_block(found: Checkpoint | None, name: str | None = None) -> dict:
    if found is None:
        return {"name": name, "params_b": None, "file_size_gb": None}
    block: dict = {"name": found.model, "params_b": found.params_b, "file_size_gb": found.file_size_gb}
    if found.active_params_b:
        block["active_params_b"] = found.active_params_b
    return block


# A benchmark's own server on the loopback address (`vllm serve --host 127.0.0.1`, `http://127.0.0.1:8080`): the
# row's launch details, not its figure. The seed keeps no loopback address (a test server's would look the same), so a
# quote stops before the member that names one, and a procedure drops it.
_LOCAL_HOST = re.compile(r"127\.0\.0\.1|localhost")
# The blanks before `--host` go with it; a match starts only where a run of blanks does ((?<!\s)), else a long run
# with no --host after it was scanned again from each of its blanks (quadratic: 40,000 blanks took 2.3 s).
_HOST_OPTION = re.compile(r"(?<!\s)\s*--host[ =](?:127\.0\.0\.1|localhost)\b"
                          r"|https?://(?:127\.0\.0\.1|localhost)(?::\d+)?/?")


def quote_without_local_host(quote: str, value: Any) -> str:
    """The quote, or where it names a local host, the exact part of it before the top-level member that does, or
    else the part after it, whichever still shows the figure's value (when the row states one) and names no local
    host (else the whole quote)."""
    found = _LOCAL_HOST.search(quote)
    if found is None:
        return quote
    member = _member_around(quote, found.start())
    if member is None:
        return quote
    numbers = _spellings(value)
    before, after = quote[:member[0]], quote[member[1]:]
    for part in (before, after):
        # a row that states no value (a rejection) only needs a part of itself that names no host
        if (not numbers or any(n in part for n in numbers)) and not _LOCAL_HOST.search(part):
            return part
    return quote


def _spellings(value: Any) -> tuple[str, ...]:
    """How a JSON file may write the figure's value (68.0 is written 68), or () for no value."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return ()
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return (f"{value}", f"{int(value)}")
    return (f"{value}",)


def _member_around(text: str, at: int) -> tuple[int, int] | None:
    """For the top-level member of the JSON object `text` that holds position `at`: where the text before it ends
    (its leading comma) and where the text after it starts (the next member's key). None when `text` is no object,
    or the member is the first or the last one (the part on that side would hold the braces alone)."""
    i = _skip(text, 0)
    if not text.startswith("{", i):
        return None
    i, comma = i + 1, None
    try:
        while True:
            _, i = _DECODER.raw_decode(text, _skip(text, i))  # the key
            i = _skip(text, i)
            if not text.startswith(":", i):
                return None
            _, i = _DECODER.raw_decode(text, _skip(text, i + 1))  # the value
            i = _skip(text, i)
            if not text.startswith(",", i):
                return None
            if at < i:
                return (comma, _skip(text, i + 1)) if comma is not None else None
            comma, i = i, i + 1
    except (json.JSONDecodeError, RecursionError):
        return None


def _without_host_options(value: Any, depth: int = 0) -> Any:
    """Options with every loopback host option or address taken out of their texts (nested tables too)."""
    if isinstance(value, str):
        return _HOST_OPTION.sub("", value)
    if isinstance(value, dict) and depth < 8:
        return {k: _without_host_options(v, depth + 1) for k, v in value.items()}
    return value


def candidate(ctx: FileContext, quote: str, slot: str, reasons: list[str], *, software: str | None,
              published_at: str | None = None, author: str | None = None, **fields: Any) -> Candidate:
    """A candidate record (record format v1) naming the software its row ran."""
    quote = quote_without_local_host(quote, fields.get("value"))
    if isinstance(fields.get("procedure"), str):
        fields["procedure"] = _HOST_OPTION.sub("", fields["procedure"])
    if isinstance(fields.get("options"), dict):
        fields["options"] = _without_host_options(fields["options"])
    return Candidate(new_record(context(ctx, author, published_at), quote, software=software, **fields), slot, reasons)


def day(value: Any) -> str | None:
    """The YYYY-MM-DD of a date or timestamp string, or None."""
    if isinstance(value, str) and re.match(r"\d{4}-\d{2}-\d{2}", value):
        return value[:10]
    return None


def number(value: Any) -> float | None:
    """A JSON number (not a boolean), as a float; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def count(value: Any) -> int | None:
    """A whole JSON number (not a boolean), as an int; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None
