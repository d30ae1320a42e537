"""The tokatlas format: a peer's JSON file of figures read from llama.cpp's speed threads, as relayed facts.

One file (`../shared/peers/tokatlas/README.md` describes it): `{"source": …, "records": […]}`, each record one row
of a post as tokatlas condensed it: the machine, the model label, a generation figure (`tps`) and a prompt figure
(`pp_tps`), the post's permalink and date, a `quote` (tokatlas's rendering of the llama-bench rows, never the
post's own text) and `notes`, where tokatlas writes the post's build number (`config=b06060`, zero-padded).

What a record says is read fully, as what the relay states about the post:
- the build: the `build:` line inside the quote, else the notes' `config=bNNNNN`, kept only when it is consistent
  with the post's date (`relayed_builds`): llama.cpp numbers its builds by commit count, so a build far older than
  the ones the thread's first month ran, or newer than any the relay records up to a month later, is not the
  post's build (tokatlas's labels include a batch size, `config=b2048-ub512`, and stray numbers): it is set aside,
  and the figure keeps the reason;
- the test (`pp512`, `tg128`, `tg128 @ d4096`) of the quoted llama-bench row: the lengths, depth included, and the
  tool (llama-bench: one user, the per-user figure);
- the thread's protocol (sources/*.toml): the model its alias names, with the parameter count and the file size
  the protocol cites, applied only to the formats it lists and to a record that gives no other parameter count.
  tokatlas drops llama-bench's params and size columns, so a relayed row cannot tell the thread's Llama 2 7B from
  another model llama-bench also labels "llama 7B": the thread's prescription decides, as it does for the 4167
  scoreboard. Threads without a source file (10879, 15021, 23313: no stored copy of their opening post to cite)
  get no protocol, and their rows stay rejections naming the model's parameters and file size.

The 4167 opening post's scoreboard rows are read with the thread's protocol by the scraper's scoreboard reader. A
row whose figures repeat a dated comment of the thread (tokatlas relays both) is that comment's figure: it takes
the comment's permalink, date and build, never the opening post's (`comment_twins`); the comment's own record of
the same figures is then kept as a rejection saying so (the figure is stored once).

Every relayed quote says that it is tokatlas's rendering, not the post's text."""

from __future__ import annotations

import copy
import json
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from .collect import llamabench as lb
from .collect.extract import Candidate, PostContext, extract_text, model_name
from .collect.machines import canonical_hardware
from .errors import PeerFileError
from .sources import SourceSpec

__all__ = ["FORMATS", "TOKATLAS_VIA", "RelayContext", "candidates", "parse_tokatlas", "read_tokatlas",
           "relay_context", "relayed_builds", "slots", "slotted_candidates"]

FORMATS = ("tokatlas",)  # what `tpsdb import` and the peer_dataset kind read

# The relay, as `source.via` names it on every imported figure.
TOKATLAS_VIA = {
    "title": "tokatlas",
    "publisher": "tokatlas (github.com/tokatlas/tokatlas.github.io)",
    "published_at": None,  # the data file states no publication date
    "url": "https://github.com/tokatlas/tokatlas.github.io/blob/12c6d709e0764f28551b652ebd8ce77040e68d75/"
           "data/raw/llamacpp_discussions.json",
}

# tokatlas keeps no context depth; a record whose quoted test does not give it is a rejection naming it.
DEPTH_MISSING = "lengths.context_depth: missing"
# A comment's figures that the opening post's scoreboard repeats are stored once, from the scoreboard row (which
# names the chip's GPU cores and bandwidth) with the comment's permalink, date and build: the comment's own record
# of them is kept as a rejection saying so, never counted twice.
REPEATED = ("source: the same figure as the opening post's scoreboard row ({}), stored once from that row with "
            "this comment's permalink, date and build")
SLOT_PREFIX = "tokatlas:"
# What every relayed quote starts with: the words are tokatlas's, not the post's.
RELAY_MARK = "[tokatlas's rendering, not the post's text] "
TWIN_MARK = ("[tokatlas's rendering of the opening post's scoreboard row, which repeats the figures of comment {}; "
             "not the post's text] ")

# A build's consistency with its post's date (see relayed_builds): how far a build may fall below the median build
# of a thread's first month (people run builds a few weeks or months old, never a year or more older than the
# thread's first posts), and how far above the newest build the relay records up to a month after the post.
OLDER_SLACK = 1000
NEWER_SLACK = 500
WINDOW = timedelta(days=31)

# The 4167 scoreboard as tokatlas condensed a row ("M1 (7 GPU), LLaMA 7B, Q8_0 PP   [t/s]: 108.21; Q8_0 TG ...")
# or quoted it whole ("Llama 2 7B; M2 Ultra 86ed72d2 + FA | 800 | 76 | 1525.95 | ...; M2 Ultra (76 GPU)").
_CONDENSED_ROW = re.compile(
    r"^(?P<chip>.+?) \((?P<cores>\d+) GPU\), [^,;]+, (?P<quant>\S+) PP\s+\[t/s\]: (?P<pp>[\d.]+); "
    r"(?P=quant) TG\s+\[t/s\]: (?P<tg>[\d.]+)$")
_WHOLE_ROW = re.compile(r"^[^;|]+; (?P<row>[^;]+(?:\|[^;]*){8}); [^;|]+$")
# The opening post's scoreboard header (sources/llamacpp-4167.toml: the three formats, PP and TG each).
_SCOREBOARD_HEADER = ["Chip", "BW [GB/s]", "GPU Cores", "F16 PP [t/s]", "F16 TG [t/s]", "Q8_0 PP [t/s]",
                      "Q8_0 TG [t/s]", "Q4_0 PP [t/s]", "Q4_0 TG [t/s]"]
# One llama-bench row as tokatlas renders it inside a quote: "llama 7B Q4_0 | tg128 | 171.19 ± 3.98". A cell
# starts and ends with a non-blank, so that no blank can go either to the cell or to the blanks around it: with
# `[^|;]+?\s*` a part of "a | " and 4,000 blanks took a minute (cubic backtracking; probe of 2026-12-06).
_QUOTED_ROW = re.compile(r"^\s*(?P<label>[^|;\s](?:[^|;]*[^|;\s])?)\s*\|\s*(?P<test>[^|;\s](?:[^|;]*[^|;\s])?)\s*\|"
                         r"\s*(?P<value>[\d.,]+)(?:\s*(?:±|\+)\s*(?P<sd>[\d.,]+))?\s*$")
# The post's build as tokatlas notes it: exactly five digits, zero-padded ("config=b2048-ub512" is a batch size).
_NOTES_BUILD = re.compile(r"(?:^|;)\s*config=b(?P<number>\d{5})\s*(?:;|$)")
# A `build:` line inside the quote ("build: 48d22e2 (10360"; tokatlas may cut the closing parenthesis).
_QUOTE_BUILD = re.compile(r"\bbuild:?\s+(?P<commit>[0-9a-f]{6,40})\s*\((?P<number>\d{1,6})\b")
_NOTES_OPTIONS = re.compile(r"\b(?P<key>fa|ngl)=(?P<value>\d+)\b")
_THREAD = re.compile(r"/discussions/(?P<number>\d+)")


# ------------------------------------------------------------------------------------------------ reading
def read_tokatlas(path: Path) -> list[dict]:
    """The records of a tokatlas data file ({"source": …, "records": […]})."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PeerFileError(f"{path}: {error.strerror}") from None
    return parse_tokatlas(data, str(path))


# The members of a record read as text, and those read as numbers (a number may be written as a string).
_TEXT_FIELDS = ("model", "quant", "hardware", "backend", "notes", "params", "date", "retrieved")
_NUMBER_FIELDS = ("tps", "pp_tps", "pp_tokens", "tg_tokens")


def parse_tokatlas(data: bytes, where: str) -> list[dict]:
    """The records of a tokatlas file's bytes (`where` names the file in errors). The file states no record
    count: a whole file is complete by construction, as a truncated one is not JSON and is refused."""
    try:
        parsed = json.loads(data)
    except ValueError as error:  # not UTF-8, not JSON, or a number of more than 4,300 digits (int's limit)
        raise PeerFileError(f"{where}: not a JSON file ({error})") from None
    except RecursionError:  # a document nested deeper than Python's JSON reader follows
        raise PeerFileError(f"{where}: nested too deeply (not a tokatlas data file)") from None
    records = parsed.get("records") if isinstance(parsed, dict) else None
    if not isinstance(records, list):
        raise PeerFileError(f'{where}: no "records" list (not a tokatlas data file)')
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise PeerFileError(f"{where}: records[{index}]: not a JSON object")
        for key in ("id", "source_url", "quote"):
            if not isinstance(record.get(key), str) or not record[key]:
                raise PeerFileError(f"{where}: records[{index}]: {key}: missing")
        for key in _TEXT_FIELDS:  # read as text below: another type is a broken file, named, not an internal error
            if record.get(key) is not None and not isinstance(record[key], str):
                raise PeerFileError(f"{where}: records[{index}] ({record['id']}): {key}: not text "
                                    f"({type(record[key]).__name__})")
        for key in _NUMBER_FIELDS:
            value = record.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float, str))):
                raise PeerFileError(f"{where}: records[{index}] ({record['id']}): {key}: not a number "
                                    f"({type(value).__name__})")
    return records


def slots(records: list[dict]) -> tuple[list[str], list[str]]:
    """A stable slot per record ("tokatlas:ID"; the second record with the same id gets "tokatlas:ID~2"), and the
    ids that occur more than once: tokatlas gives seven ids to two different records each, and both are kept."""
    seen: Counter = Counter()
    out = []
    for record in records:
        seen[record["id"]] += 1
        n = seen[record["id"]]
        out.append(f"{SLOT_PREFIX}{record['id']}" + (f"~{n}" if n > 1 else ""))
    return out, sorted(k for k, n in seen.items() if n > 1)


# ------------------------------------------------------------------------------------------------- builds
@dataclass(frozen=True)
class RelayedBuild:
    """The build tokatlas relays for a record's post: its version, or why a stated one was set aside."""

    version: str | None = None  # "b6060", "b10360 (48d22e2)"
    number: int | None = None
    stated: str | None = None  # where it was read: "notes" or "quote"
    problem: str | None = None  # a reason code when a stated build is not the post's

    @property
    def reasons(self) -> list[str]:
        return [self.problem] if self.problem else []


def _date(value: Any) -> date | None:
    try:
        return date.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _thread(url: str) -> str:
    match = _THREAD.search(url)
    return match["number"] if match else url.split("#", 1)[0]


def stated_build(record: dict) -> tuple[int, str | None, str] | None:
    """(number, commit, where) of the build a record states: the quote's `build:` line (the post's own words, as
    relayed), else the notes' `config=bNNNNN`."""
    quoted = _QUOTE_BUILD.search(record["quote"])
    if quoted:
        return int(quoted["number"]), quoted["commit"], "quote"
    notes = record.get("notes")
    noted = _NOTES_BUILD.search(notes) if isinstance(notes, str) else None
    return (int(noted["number"]), None, "notes") if noted else None


def relayed_builds(records: list[dict]) -> list[RelayedBuild]:
    """The build of each record's post, checked against the post's date with the dated builds of the other posts
    the file relays (llama.cpp's build numbers increase with time):

    - older: more than OLDER_SLACK below the median build of the thread's other posts of its first month;
    - newer: more than NEWER_SLACK above every build the file's other posts record up to WINDOW after the post;
    - a record without a date cannot be checked.
    A build that fails is set aside with the reason; the record's figures then have no version."""
    stated = [stated_build(r) for r in records]
    dated = [(_date(r.get("date")), found[0], _thread(r["source_url"]), r["source_url"])
             for r, found in zip(records, stated) if found and _date(r.get("date"))]
    first_day: dict[str, date] = {}
    for day, _, thread, _ in dated:
        if day is not None and (thread not in first_day or day < first_day[thread]):
            first_day[thread] = day
    first_month: dict[str, dict[str, int]] = defaultdict(dict)  # thread -> post -> its build
    for day, number, thread, url in dated:
        if day is not None and day <= first_day[thread] + WINDOW:
            first_month[thread].setdefault(url, number)
    by_day = sorted((day, number, url) for day, number, _, url in dated if day is not None)
    out = []
    for record, found in zip(records, stated):
        if found is None:
            out.append(RelayedBuild())
            continue
        number, commit, where = found
        label = f"b{number}"
        day = _date(record.get("date"))
        problem = None
        if day is None:
            problem = f"software.version: relayed build {label} set aside: the record has no date to check it by"
        else:
            url, thread = record["source_url"], _thread(record["source_url"])
            firsts = [n for u, n in first_month[thread].items() if u != url]
            later = [n for d, n, u in by_day if u != url and d <= day + WINDOW]
            if firsts and number < statistics.median(firsts) - OLDER_SLACK:
                problem = (f"software.version: relayed build {label} set aside: far older than the builds the "
                           f"thread's first month ran (median b{statistics.median(firsts):.0f}), so not the "
                           f"build of a post of {day.isoformat()}")
            elif later and number > max(later) + NEWER_SLACK:
                problem = (f"software.version: relayed build {label} set aside: newer than any build the relay "
                           f"records up to a month after the post's date {day.isoformat()} (b{max(later)})")
        if problem:
            out.append(RelayedBuild(number=number, stated=where, problem=problem))
        else:
            out.append(RelayedBuild(lb.format_version(number, commit), number, where))
    return out


# ------------------------------------------------------------------------------------ the whole file's context
@dataclass
class RelayContext:
    """What a record means in its file: its post's build, and for a 4167 scoreboard row the comment it repeats."""

    build: RelayedBuild = field(default_factory=RelayedBuild)
    twin: dict | None = None  # the comment record whose figures a scoreboard row repeats
    twin_build: RelayedBuild = field(default_factory=RelayedBuild)
    repeated_by: str | None = None  # a comment's record: the scoreboard row (its chip) that repeats its figures

    def digest(self) -> dict:
        """What the context decides, as plain data (a change of it is a change of the record's reading)."""
        return {"build": self.build.version, "set_aside": self.build.problem,
                "twin": self.twin["source_url"] if self.twin else None, "twin_build": self.twin_build.version,
                "repeated_by": self.repeated_by}


def _number(value: Any) -> Any:
    """tokatlas writes some figures as strings ("73.6"): the number, or the value as given for the validator."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _figures(record: dict) -> tuple[str | None, Any, Any]:
    return lb.normalize_quant(str(record.get("quant") or "")), _number(record.get("tps")), \
        _number(record.get("pp_tps"))


def comment_twins(records: list[dict], specs: dict[str, SourceSpec]) -> dict[int, int]:
    """Scoreboard row (index) -> the comment record (index) whose figures it repeats: same thread, same format,
    the same generation and prompt figures, dated. Only threads whose opening post has a protocol (the scoreboard)
    are looked at."""
    boards = {s.url for s in specs.values() if s.protocol}
    comments: dict[tuple, list[int]] = defaultdict(list)
    for i, record in enumerate(records):
        home, _, fragment = record["source_url"].partition("#")
        if fragment and home in boards and _date(record.get("date")):
            comments[(home, *_figures(record))].append(i)
    twins = {}
    for i, record in enumerate(records):
        if record["source_url"] not in boards or _scoreboard_table(record["quote"]) is None:
            continue
        key = (record["source_url"], *_figures(record))
        if key[2] is None and key[3] is None:
            continue
        # Figures found in several comments are the earliest one's (a later comment quoting them repeats them);
        # two comments of the same first day leave the row the opening post's.
        found = sorted(comments.get(key, []), key=lambda j: records[j]["date"])
        first = [j for j in found if records[j]["date"] == records[found[0]]["date"]] if found else []
        if first and len({records[j]["source_url"] for j in first}) == 1:
            twins[i] = first[0]
    return twins


def relay_context(records: list[dict], specs: dict[str, SourceSpec]) -> list[RelayContext]:
    """The context of every record of a file, in order (read once per file)."""
    builds = relayed_builds(records)
    twins = comment_twins(records, specs)
    out = [RelayContext(build=b) for b in builds]
    for i, j in twins.items():
        out[i].twin, out[i].twin_build = records[j], builds[j]
        out[j].repeated_by = str(records[i].get("hardware") or "")
    return out


# ---------------------------------------------------------------------------------------------- candidates
def _scoreboard_table(quote: str) -> tuple[str, str | None] | None:
    """The Markdown scoreboard (header and the one row) a 4167 opening-post record stands for, and its format."""
    condensed = _CONDENSED_ROW.match(quote)
    if condensed:
        quant = condensed["quant"]
        header = ["Chip", "GPU Cores", f"{quant} PP [t/s]", f"{quant} TG [t/s]"]
        cells = [condensed["chip"], condensed["cores"], condensed["pp"], condensed["tg"]]
    else:
        whole = _WHOLE_ROW.match(quote)
        if not whole:
            return None
        header, cells, quant = _SCOREBOARD_HEADER, [c.strip() for c in whole["row"].split("|")], None
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header), "| " + " | ".join(cells) + " |"]
    return "\n".join(lines), quant


def _scoreboard_candidates(record: dict, spec: SourceSpec, via: dict,
                           context: RelayContext) -> list[Candidate] | None:
    """The figures of an opening-post scoreboard row, read by the scraper's scoreboard reader with the thread's
    protocol; None when the record is not such a row or when the reader does not find tokatlas's figures in it.

    A row that repeats a dated comment is that comment's figure: its permalink, date and build."""
    table = _scoreboard_table(record["quote"])
    if table is None:
        return None
    markdown, _ = table
    protocol, permalink, published, mark, reasons = spec.protocol, spec.url, record.get("date"), RELAY_MARK, []
    twin = context.twin
    if twin is not None:
        protocol = {k: v for k, v in spec.protocol.items() if k not in ("version", "version_source")}
        if context.twin_build.version:
            protocol["version"] = context.twin_build.version
        permalink, published = twin["source_url"], twin.get("date")
        mark = TWIN_MARK.format(permalink.rpartition("-")[2])
        reasons = context.twin_build.reasons
    ctx = PostContext(permalink=permalink, retrieved_at=record.get("retrieved"), published_at=published,
                      author=None, protocol=protocol)
    quant, tps, pp_tps = _figures(record)
    wanted = {"generation": tps, "prompt": pp_tps}
    found = []
    for candidate in extract_text(markdown, ctx):
        r = candidate.record
        if r["quantization"] == quant and r["phase"] in wanted and r["tokens_per_second"] == wanted[r["phase"]]:
            r["source"]["quote"] = mark + record["quote"]
            r["source"].pop("quote_header", None)  # the header of tpsdb's rebuilt table, not of tokatlas's quote
            r["source"]["via"] = dict(via)
            found.append(replace(candidate, reasons=candidate.reasons + reasons))
    expected = sum(v is not None for v in wanted.values())
    return found if found and len(found) == expected else None


def _software(backend: Any, version: str | None, notes: Any) -> dict:
    """"llama.cpp (Metal)" -> llama.cpp with backend Metal (and the fa/ngl tokatlas notes); another program's name
    is not guessed."""
    text = str(backend or "").strip()
    match = re.match(r"^llama\.cpp(?:\s*\((?P<backend>[^)]+)\))?$", text)
    if not match:
        return {"name": None, "version": None, "options": {"backend": text} if text else {}}
    options: dict[str, Any] = {"backend": match["backend"]} if match["backend"] else {}
    if isinstance(notes, str):
        options.update({m["key"]: int(m["value"]) for m in _NOTES_OPTIONS.finditer(notes)})
    return {"name": "llama.cpp", "version": version, "options": options}


def _quoted_rows(quote: str) -> list[tuple[lb.TestShape, float, float | None]]:
    """The llama-bench rows tokatlas renders in a quote: (test, t/s, stddev) each."""
    rows = []
    for part in quote.split(";"):
        match = _QUOTED_ROW.match(part)
        shape = lb.parse_test(match["test"]) if match else None
        value = lb.parse_value(match["value"]) if match else None
        if match and shape and value:
            sd = lb.parse_value(match["sd"]) if match["sd"] else None
            rows.append((shape, value[0], sd[0] if sd else None))
    return rows


def _protocol_model(label: str | None, quant: str | None, params: Any, protocol: dict) -> dict:
    """The model of a relayed row: the protocol's model (with its cited parameter count and file size) when the
    label is the protocol's alias, the format one it lists, and the record states no other parameter count."""
    params_b = lb.parse_params_b(str(params).replace("B", " B")) if params else None
    aliased = label is not None and label.lower() in {k.lower() for k in protocol.get("model_aliases") or {}}
    listed = quant in (protocol.get("quantizations") or [])
    if aliased and listed and params_b is None and protocol.get("params_b"):
        params_b = protocol["params_b"]
        size = (protocol.get("file_size_gb") or {}).get(quant)
        return {"name": model_name(label, params_b, protocol), "params_b": params_b, "file_size_gb": size}
    return {"name": model_name(label, params_b, protocol), "params_b": params if params else None,
            "file_size_gb": None}


def _relayed_candidates(record: dict, protocol: dict, via: dict, build: RelayedBuild) -> list[Candidate]:
    """One candidate per figure of a comment's record: what tokatlas states of it, read fully."""
    label, quant = lb.split_model_label(f"{record.get('model') or ''} {record.get('quant') or ''}".strip())
    if quant is None:  # the label did not split: the model and the format as tokatlas printed them
        label = record.get("model")
        quant = lb.normalize_quant(str(record.get("quant") or "")) or record.get("quant")
    hardware = record.get("hardware")
    base = {
        "source": {"url": record["source_url"], "retrieved_at": record.get("retrieved"),
                   "published_at": record.get("date"), "author": None, "quote": RELAY_MARK + record["quote"],
                   "via": dict(via)},
        "hardware": {"name": canonical_hardware(hardware) or hardware if isinstance(hardware, str) else None},
        "model": _protocol_model(label, quant, record.get("params"), protocol),
        "quantization": quant,
        "software": _software(record.get("backend"), build.version, record.get("notes")),
        "concurrency": {"users": None, "figure": None},
        "nature": {"kind": "measured", "procedure": None},
        "stddev": None,
    }
    rows = _quoted_rows(record["quote"])
    tool = protocol.get("command") if protocol.get("tool") == lb.LLAMA_BENCH else None
    figures = [("generation", record.get("tps"), (None, record.get("tg_tokens"))),
               ("prompt", record.get("pp_tps"), (record.get("pp_tokens"), 0 if record.get("pp_tokens") else None))]
    out = []
    for phase, value, (prompt, generated) in figures:
        if value is None:
            continue
        value = _number(value)
        row = next((r for r in rows if r[0].phase == phase and r[1] == value), None)
        fields = copy.deepcopy(base)
        reasons = list(build.reasons)
        lengths: dict[str, Any]
        if row is not None:  # a llama-bench row: its test gives the lengths; llama-bench runs one user
            shape, _, stddev = row
            lengths = {"prompt_tokens": shape.prompt_tokens, "generated_tokens": shape.generated_tokens,
                       "context_depth": shape.context_depth}
            fields.update(concurrency={"users": 1, "figure": "per_user"}, stddev=stddev,
                          nature={"kind": "measured", "procedure": tool or lb.LLAMA_BENCH})
        else:
            lengths = {"prompt_tokens": prompt, "generated_tokens": generated, "context_depth": None}
            reasons.append(DEPTH_MISSING)
        out.append(Candidate({**fields, "phase": phase, "tokens_per_second": value, "lengths": lengths}, phase,
                             reasons))
    if not out:  # a record with no figure at all is still kept, as a rejection saying so
        out.append(Candidate({**base, "phase": None, "tokens_per_second": None,
                              "lengths": {"prompt_tokens": None, "generated_tokens": None, "context_depth": None}},
                             "none", [DEPTH_MISSING, *build.reasons]))
    return out


def candidates(record: dict, specs: dict[str, SourceSpec],
               context: RelayContext | None = None) -> tuple[list[Candidate], bool]:
    """The candidates of one tokatlas record, and whether a thread's protocol filled them (the 4167 scoreboard).

    `context`: the record's place in its file (relay_context); without it, the record is read alone (no build
    check against the other posts, no comment twin)."""
    context = context or RelayContext(build=_unchecked_build(record))
    spec = next((s for s in specs.values() if s.url == record["source_url"]), None)
    if spec is not None and spec.protocol:
        found = _scoreboard_candidates(record, spec, TOKATLAS_VIA, context)
        if found:
            return found, True
    home = record["source_url"].split("#", 1)[0]
    thread = next((s for s in specs.values() if s.url == home), None)
    found = _relayed_candidates(record, thread.protocol if thread else {}, TOKATLAS_VIA, context.build)
    if context.repeated_by is not None:
        found = [replace(c, reasons=[*c.reasons, REPEATED.format(context.repeated_by)]) for c in found]
    return found, False


def _unchecked_build(record: dict) -> RelayedBuild:
    found = stated_build(record)
    if found is None:
        return RelayedBuild()
    number, commit, where = found
    return RelayedBuild(lb.format_version(number, commit), number, where)


def slotted_candidates(record: dict, slot: str, specs: dict[str, SourceSpec],
                       context: RelayContext | None = None) -> tuple[list[Candidate], bool]:
    """candidates, each slot prefixed with its record's slot in the file ("tokatlas:ID:generation"): what
    `tpsdb import tokatlas` and the peer_dataset kind both store."""
    found, protocol = candidates(record, specs, context)
    return [replace(c, slot=f"{slot}:{c.slot}") for c in found], protocol
