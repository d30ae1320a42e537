"""Peer datasets: figures another project relayed from a source, imported as candidates naming the relay.

One format so far, tokatlas (`data/peers/tokatlas/README.md`): one JSON file whose records each carry a generation
figure (`tps`) and a prompt figure (`pp_tps`) read from a comment of a llama.cpp speed thread. Each figure becomes
a candidate record v1 with the comment's permalink as `source.url` and tokatlas as `source.via`. Only what a
record states is filled; tokatlas keeps no version, file size, context depth, concurrency or procedure, so those
candidates are kept as rejections naming the fields. The one exception is the 4167 opening post's scoreboard:
there the thread's protocol file fixes the conditions, and the scraper's own scoreboard reader
(`tpsdb.collect.extract`) applies it to the row, exactly as a direct scrape of the post would.

A relayed figure gives way to a direct reading: when the post it names has been read from the source itself
(`tpsdb refresh`), its relayed figures and rejections are marked superseded, and the direct figure of the same
place and conditions records which relayed one it supersedes (`supersede_relayed`).
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import or_, update
from sqlmodel import Session, col, select

from .collect import llamabench as lb
from .collect.extract import Candidate, PostContext, extract_text, model_name
from .collect.machines import canonical_hardware
from .kinds.peer_dataset import FORMATS as FORMATS  # what `tpsdb import` reads: the peer_dataset kind's formats
from .models import Measurement, Post, Rejection, Status
from .sources import SourceSpec
from .store import Provenance, Store, source_home

# The relay, as `source.via` names it on every imported figure.
TOKATLAS_VIA = {
    "title": "tokatlas",
    "publisher": "tokatlas (github.com/tokatlas/tokatlas.github.io)",
    "published_at": None,  # the data file states no publication date
    "url": "https://github.com/tokatlas/tokatlas.github.io/blob/12c6d709e0764f28551b652ebd8ce77040e68d75/"
           "data/raw/llamacpp_discussions.json",
}

# tokatlas keeps no context depth; the record format would read a missing depth as 0, so the importer names it.
DEPTH_MISSING = "lengths.context_depth: missing"
SLOT_PREFIX = "tokatlas:"

# The 4167 scoreboard as tokatlas condensed a row ("M1 (7 GPU), LLaMA 7B, Q8_0 PP   [t/s]: 108.21; Q8_0 TG ...")
# or quoted it whole ("Llama 2 7B; M2 Ultra 86ed72d2 + FA | 800 | 76 | 1525.95 | ...; M2 Ultra (76 GPU)").
_CONDENSED_ROW = re.compile(
    r"^(?P<chip>.+?) \((?P<cores>\d+) GPU\), [^,;]+, (?P<quant>\S+) PP\s+\[t/s\]: (?P<pp>[\d.]+); "
    r"(?P=quant) TG\s+\[t/s\]: (?P<tg>[\d.]+)$")
_WHOLE_ROW = re.compile(r"^[^;|]+; (?P<row>[^;]+(?:\|[^;]*){8}); [^;|]+$")
# The opening post's scoreboard header (sources/llamacpp-4167.toml: the three formats, PP and TG each).
_SCOREBOARD_HEADER = ["Chip", "BW [GB/s]", "GPU Cores", "F16 PP [t/s]", "F16 TG [t/s]", "Q8_0 PP [t/s]",
                      "Q8_0 TG [t/s]", "Q4_0 PP [t/s]", "Q4_0 TG [t/s]"]


class PeerFileError(ValueError):
    """A peer file that cannot be read as its format: refused whole, naming the file and the record."""


@dataclass
class ImportReport:
    records: int = 0
    figures: int = 0
    outcomes: Counter = field(default_factory=Counter)
    duplicate_ids: list[str] = field(default_factory=list)
    protocol_applied: int = 0
    superseded: int = 0


# ------------------------------------------------------------------------------------------------ reading
def read_tokatlas(path: Path) -> list[dict]:
    """The records of a tokatlas data file ({"source": …, "records": […]})."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PeerFileError(f"{path}: {error.strerror}") from None
    return parse_tokatlas(data, str(path))


def parse_tokatlas(data: bytes, where: str) -> list[dict]:
    """The records of a tokatlas file's bytes (`where` names the file in errors). The file states no record
    count: a whole file is complete by construction, as a truncated one is not JSON and is refused."""
    try:
        parsed = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
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


# ---------------------------------------------------------------------------------------------- candidates
def _number(value: Any) -> Any:
    """tokatlas writes some figures as strings ("73.6"): the number, or the value as given for the validator."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


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


def _scoreboard_candidates(record: dict, spec: SourceSpec, via: dict) -> list[Candidate] | None:
    """The figures of an opening-post scoreboard row, read by the scraper's scoreboard reader with the thread's
    protocol; None when the record is not such a row or when the reader does not find tokatlas's figures in it."""
    table = _scoreboard_table(record["quote"])
    if table is None:
        return None
    markdown, _ = table
    ctx = PostContext(permalink=spec.url, retrieved_at=record.get("retrieved"), published_at=record.get("date"),
                      author=None, protocol=spec.protocol)
    wanted = {"generation": _number(record.get("tps")), "prompt": _number(record.get("pp_tps"))}
    quant = lb.normalize_quant(str(record.get("quant") or ""))
    found = []
    for candidate in extract_text(markdown, ctx):
        r = candidate.record
        if r["quantization"] == quant and r["phase"] in wanted and r["tokens_per_second"] == wanted[r["phase"]]:
            r["source"]["quote"] = record["quote"]  # tokatlas's words are what this figure is read from
            r["source"]["via"] = dict(via)
            found.append(candidate)
    expected = sum(v is not None for v in wanted.values())
    return found if found and len(found) == expected else None


def _software(backend: Any) -> dict:
    """"llama.cpp (Metal)" -> llama.cpp with backend Metal; another program's name is not guessed."""
    text = str(backend or "").strip()
    match = re.match(r"^llama\.cpp(?:\s*\((?P<backend>[^)]+)\))?$", text)
    if not match:
        return {"name": None, "version": None, "options": {"backend": text} if text else {}}
    return {"name": "llama.cpp", "version": None,
            "options": {"backend": match["backend"]} if match["backend"] else {}}


def _relayed_candidates(record: dict, protocol: dict, via: dict) -> list[Candidate]:
    """One candidate per figure of a record, with only what tokatlas states."""
    label, quant = lb.split_model_label(f"{record.get('model') or ''} {record.get('quant') or ''}".strip())
    if quant is None:  # the label did not split: the model and the format as tokatlas printed them
        label = record.get("model")
        quant = lb.normalize_quant(str(record.get("quant") or "")) or record.get("quant")
    params = record.get("params")
    params_b = lb.parse_params_b(str(params).replace("B", " B")) if params else None
    hardware = record.get("hardware")
    base = {
        "source": {"url": record["source_url"], "retrieved_at": record.get("retrieved"),
                   "published_at": record.get("date"), "author": None, "quote": record["quote"], "via": dict(via)},
        "hardware": {"name": canonical_hardware(hardware) or hardware if isinstance(hardware, str) else None},
        "model": {"name": model_name(label, params_b, protocol), "params_b": params, "file_size_gb": None},
        "quantization": quant,
        "software": _software(record.get("backend")),
        "concurrency": {"users": None, "figure": None},
        "nature": {"kind": "measured", "procedure": None},
        "stddev": None,
    }
    figures = [("generation", record.get("tps"), (None, record.get("tg_tokens"))),
               ("prompt", record.get("pp_tps"), (record.get("pp_tokens"), 0 if record.get("pp_tokens") else None))]
    out = []
    for phase, value, (prompt, generated) in figures:
        if value is None:
            continue
        out.append(Candidate({**copy.deepcopy(base), "phase": phase, "tokens_per_second": _number(value),
                              "lengths": {"prompt_tokens": prompt, "generated_tokens": generated,
                                          "context_depth": None}}, phase, [DEPTH_MISSING]))
    if not out:  # a record with no figure at all is still kept, as a rejection saying so
        out.append(Candidate({**base, "phase": None, "tokens_per_second": None,
                              "lengths": {"prompt_tokens": None, "generated_tokens": None, "context_depth": None}},
                             "none", [DEPTH_MISSING]))
    return out


def tokatlas_candidates(record: dict, specs: dict[str, SourceSpec]) -> tuple[list[Candidate], bool]:
    """The candidates of one tokatlas record, and whether a thread's protocol filled them (the 4167 scoreboard)."""
    spec = next((s for s in specs.values() if s.url == record["source_url"]), None)
    if spec is not None and spec.protocol:
        found = _scoreboard_candidates(record, spec, TOKATLAS_VIA)
        if found:
            return found, True
    home = source_home(record["source_url"])
    thread = next((s for s in specs.values() if s.url == home), None)
    return _relayed_candidates(record, thread.protocol if thread else {}, TOKATLAS_VIA), False


def slotted_candidates(record: dict, slot: str, specs: dict[str, SourceSpec]) -> tuple[list[Candidate], bool]:
    """tokatlas_candidates, each slot prefixed with its record's slot in the file ("tokatlas:ID:generation"):
    what `tpsdb import tokatlas` and the peer_dataset kind both store."""
    candidates, protocol = tokatlas_candidates(record, specs)
    return [replace(c, slot=f"{slot}:{c.slot}") for c in candidates], protocol


# --------------------------------------------------------------------------------------------------- store
def import_tokatlas(session: Session, path: Path, specs: dict[str, SourceSpec], *, today=None) -> ImportReport:
    """Store every figure of a tokatlas file (accepted or rejected with reasons). The caller commits.

    Importing the same file twice changes nothing; a post already read directly keeps its direct figures."""
    records = read_tokatlas(path)
    record_slots, report_duplicates = slots(records)
    report = ImportReport(records=len(records), duplicate_ids=report_duplicates)
    store = Store(session, today=today)
    for record, slot in zip(records, record_slots):
        candidates, protocol = slotted_candidates(record, slot, specs)
        report.protocol_applied += protocol
        home = source_home(record["source_url"])
        kind = "github_discussion" if re.search(r"/discussions/\d+$", home) else "web"
        source = store.source_for(home, kind=kind)
        for candidate in candidates:
            provenance = Provenance(source=source, slot=candidate.slot, extra_reasons=candidate.reasons)
            report.outcomes[store.put(candidate.record, provenance).outcome] += 1
            report.figures += 1
    store.flush()
    report.superseded = supersede_relayed(session, sorted({r["source_url"] for r in records}))
    return report


# ------------------------------------------------------------------------------------------- supersession
_MATCH = ("hardware_id", "model_file_id", "phase", "prompt_tokens", "generated_tokens", "context_depth", "users",
          "figure")


def _relayed(column, direct_post_id: int):
    """Not read from the post itself: imported (no post) or relayed by a peer_dataset source (one of its records)."""
    return or_(column.is_(None), column != direct_post_id)


_RELAYED_REJECTION = col(Rejection.candidate_json).like('%"via":{%')  # canonical JSON: a relay's via is an object


def supersede_relayed(session: Session, permalinks: list[str] | None = None) -> int:
    """Relayed figures and rejections of posts that have been read directly give way to the direct reading.

    For each post (of `permalinks`, or all) with a direct reading, its active relayed measurements (those with a
    `via`, imported or stored by a peer_dataset refresh) and relayed rejections become superseded; a direct figure
    of the same conditions (and the first such relayed one, in id order) records it in `supersedes_id`, so
    `measurement_history` shows the relay that came before. Returns the number of relayed measurements superseded."""
    # Only the posts something relays: a refresh names every post it read (a peer file's ~2,000 records, which
    # nothing relays), and three statements per post is most of such a run.
    relayed_urls = select(Measurement.source_url).where(
        Measurement.via_title.is_not(None), Measurement.status == Status.active).union(
        select(Rejection.source_url).where(Rejection.status == Status.active, _RELAYED_REJECTION))
    posts = select(Post.permalink, Post.id).where(Post.status == Status.active,
                                                  col(Post.permalink).in_(relayed_urls))
    if permalinks is not None:
        posts = posts.where(col(Post.permalink).in_(permalinks))
    superseded = 0
    for permalink, post_id in session.exec(posts).all():
        relayed = session.exec(select(Measurement).where(
            Measurement.source_url == permalink, _relayed(Measurement.post_id, post_id),
            Measurement.via_title.is_not(None), Measurement.status == Status.active).order_by(Measurement.id)).all()
        direct = list(session.exec(select(Measurement).where(
            Measurement.post_id == post_id, Measurement.status == Status.active,
            Measurement.supersedes_id.is_(None)).order_by(Measurement.id)).all())
        for old in relayed:
            twin = next((m for m in direct if all(getattr(m, c) == getattr(old, c) for c in _MATCH)), None)
            if twin is not None:
                twin.supersedes_id = old.id
                direct.remove(twin)
                session.add(twin)
            old.status = Status.superseded
            session.add(old)
            superseded += 1
        session.execute(update(Rejection).where(
            Rejection.source_url == permalink, _relayed(Rejection.post_id, post_id),
            Rejection.status == Status.active, _RELAYED_REJECTION
        ).values(status=Status.superseded), execution_options={"synchronize_session": False})
    session.flush()
    return superseded
