"""Storing candidates (as measurements or rejections) and reading them back as records.

`Store.put()` is the one door into the measurement and rejection tables: `tpsdb add`, `tpsdb ingest` and the
refresh all go through it, so validation, natural keys and idempotence are the same for every path.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Iterator, NamedTuple

from pydantic import ValidationError
from sqlalchemy import Engine, update
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, select

from .ceiling import ModelFacts, Share, active_share
from .files import SAME_FILE_TOLERANCE, cited_file
from .models import (
    Hardware,
    Measurement,
    Model,
    ModelFile,
    Post,
    Rejection,
    Snapshot,
    Software,
    Source,
    Status,
    Withdrawal,
)
from .record import (
    MAX_URL_BYTES,
    Outcome,
    Record,
    is_http_url,
    quote_header_problem,
    storable,
    validate,
    validate_well_formed_json,
)
from .rowmap import (  # noqa: F401  (canonical_json, options_json: re-exported)
    MEASUREMENT_COLUMNS,
    canonical_json,
    columns_of,
    gb_to_bytes,
    options_json,
    record_from,
    refs_of,
)
from .units import parse_version  # noqa: F401  (re-exported: callers import it from here)

_CANONICAL_ASCII = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def natural_key(data: Any) -> str:
    """The identity of a figure or candidate: its content without the retrieval date and the quote's table header.

    Re-reading an unchanged post on another day must find the same key, so `source.retrieved_at` is left out; the
    header (how a footnote presents the quote) is left out too, so a figure read before it was kept is the same.
    """
    if isinstance(data, dict) and isinstance(data.get("source"), dict):
        data = {**data, "source": {k: v for k, v in data["source"].items() if k not in _NOT_IN_KEY}}
    return hashlib.sha256(canonical_json(data).encode("utf-8", "surrogatepass")).hexdigest()  # a lone surrogate too


def source_home(url: str) -> str:
    """The publication a figure's URL belongs to: the URL without its #fragment."""
    return url.split("#", 1)[0]


_NOT_IN_KEY = ("retrieved_at", "quote_header")
BATCH = 5000


ACTIVE = Status.active.value


@dataclass
class PutResult:
    # "accepted", "accepted_unchanged" (already stored), "accepted_withdrawn" (valid, but its user withdrew it:
    # it stays withdrawn, see WITHDRAWN_EARLIER), "rejected", "rejected_unchanged"
    outcome: str
    key: str
    reasons: list[str] = field(default_factory=list)
    refs: tuple | None = None  # accepted: what names its hardware, model file and software (see Prepared.refs)
    withdrawn: str | None = None  # accepted_withdrawn: which figure, which withdrawal, when and why


# A figure its user withdrew (`tpsdb withdraw`, a row in `withdrawal`) is not brought back by reading the same record
# again (add, ingest, a refresh or reparse): the withdrawal is the user's decision about that figure, and only a
# figure retired by its source (an edit, a post gone) comes back when the source shows it again.
WITHDRAWN_EARLIER = "accepted_withdrawn"


@dataclass
class Provenance:
    """Where a candidate was read, when it came from a fetched source rather than a file of records."""

    source: Source | None = None
    post: Post | None = None
    snapshot_id: int | None = None
    slot: str | None = None
    extra_reasons: list[str] = field(default_factory=list)


def archive_snapshot(session: Session, *, source_id: int, fetched_url: str, canonical_url: str, body: bytes,
                     retrieved_at, **http) -> Snapshot:
    """These bytes as fetched from this URL, stored once, before anything is parsed from them (raw first).

    `http`: http_status, etag, last_modified, content_type, page_index when the bytes came over HTTP.
    """
    sha = hashlib.sha256(body).hexdigest()
    snapshot = session.exec(select(Snapshot).where(Snapshot.source_id == source_id,
                                                   Snapshot.fetched_url == fetched_url, Snapshot.sha256 == sha)).first()
    if snapshot is None:
        snapshot = Snapshot(source_id=source_id, fetched_url=fetched_url, canonical_url=canonical_url, sha256=sha,
                            body=body, retrieved_at=retrieved_at, **http)
        session.add(snapshot)
        session.flush()
    return snapshot


_NO_PROVENANCE = Provenance()  # never mutated


class Prepared(NamedTuple):
    """A candidate after validation: everything the database needs that can be computed without it, so that
    validation may run in another process than the writes (see `tpsdb add`, and tpsdb.bulk, which sends it as a
    plain tuple)."""

    key: str
    reasons: list[str]  # empty when accepted
    columns: tuple  # the row's own columns, in MEASUREMENT_COLUMNS or REJECTION_COLUMNS order
    # accepted: what names its hardware, model file and software, as three tuples (one cache key each), in the
    # order of tpsdb.rowmap.REFS
    refs: tuple | None = None


def prepare(candidate: Any, *, bandwidth_of=None, model_of=None, today: date | None = None,
            extra_reasons: list[str] | tuple = ()) -> Prepared:
    outcome: Outcome = validate(candidate, bandwidth_of=bandwidth_of, model_of=model_of, today=today)
    reasons = [*extra_reasons, *outcome.reasons]
    if reasons:
        return Prepared(natural_key(candidate), reasons, _rejection_columns(candidate, reasons))
    return _accepted(outcome.record, outcome.share)


def prepare_json(text: str | bytes, *, bandwidth_of=None, model_of=None, today: date | None = None) -> Prepared:
    """prepare() of one JSON text (a line of a JSONL file). pydantic parses an accepted record from the text;
    any other text takes the path of prepare(json.loads(text)), which names every reason.

    Raises json.JSONDecodeError when the text is not JSON, UnicodeDecodeError when bytes are not UTF-8.
    """
    outcome = validate_well_formed_json(text, bandwidth_of=bandwidth_of, model_of=model_of, today=today)
    if outcome is not None:  # accepted: a refused text gets None
        return _accepted(outcome.record, outcome.share)
    candidate = json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
    return prepare(candidate, bandwidth_of=bandwidth_of, model_of=model_of, today=today)


def _accepted(r: Record, share: Share | None) -> Prepared:
    columns = (*columns_of(r), share.stored if share is not None else None,
               share.origin if share is not None else None)
    return Prepared(hashlib.sha256(r.identity()).hexdigest(), [], columns, refs_of(r))


# A figure's own columns: tpsdb.rowmap.MEASUREMENT_COLUMNS (record fields, then derived ones).
REJECTION_COLUMNS = ("source_url", "candidate_json", "reasons", "quote", "tokens_per_second", "quote_header")
# Columns that the database side adds: identity, references and provenance.
MEASUREMENT_LINKS = ("figure_key", "slot", "hardware_id", "model_file_id", "software_id", "source_id", "post_id",
                     "snapshot_id", "status", "supersedes_id")
REJECTION_LINKS = ("candidate_key", "slot", "source_id", "post_id", "snapshot_id", "status")


def _rejection_columns(candidate: Any, reasons: list[str]) -> tuple:
    source_block = candidate.get("source") if isinstance(candidate, dict) else None
    url = source_block.get("url") if isinstance(source_block, dict) else None
    quote = source_block.get("quote") if isinstance(source_block, dict) else None
    header = source_block.get("quote_header") if isinstance(source_block, dict) else None
    value = candidate.get("tokens_per_second") if isinstance(candidate, dict) else None
    candidate_json = canonical_json(candidate)
    if not storable(candidate_json):  # a lone surrogate: kept as the JSON escape it was given as
        candidate_json = _CANONICAL_ASCII.encode(candidate)
    # The columns copied out of the candidate: what both databases store alike (finite, no NUL or lone surrogate;
    # source_url is indexed, so within an index entry), else NULL.
    return (
        url if isinstance(url, str) and storable(url, MAX_URL_BYTES) else None,
        candidate_json,
        json.dumps(reasons, ensure_ascii=False),
        quote if isinstance(quote, str) and storable(quote) else None,
        _finite(value),
        header if isinstance(header, str) and not quote_header_problem(header) and storable(header) else None,
    )


def _finite(value: Any) -> float | None:
    if value.__class__ not in (int, float):
        return None
    number = float(value) if abs(value) < 1e308 else math.inf  # float() of a larger int would raise
    return number if math.isfinite(number) else None


class KnownKeys:
    """The natural keys of one table (figure_key or candidate_key) this store has asked about: (id, status) of each,
    id None while the row waits in the queue, status None when not stored.

    A key is looked up when first asked (one indexed SELECT): a refresh or `load` puts a few hundred figures per
    source, and loading every stored key for each source made a seed load cost sources x rows. Once a store has
    asked about LOAD_ALL_AFTER keys (a bulk add), it loads the whole table once instead of asking per record.
    """

    LOAD_ALL_AFTER = 2000

    def __init__(self, session: Session, model_cls, key_column: str):
        self.session, self.model_cls, self.key_column = session, model_cls, key_column
        self._keys: dict[str, tuple[int | None, str | None]] = {}
        self._all = False
        self._sql = f"SELECT id, status FROM {model_cls.__tablename__} WHERE {key_column} = "

    def get(self, key: str) -> tuple[int | None, str] | None:
        state = self._keys.get(key)
        if state is None and not self._all:
            if len(self._keys) >= self.LOAD_ALL_AFTER:
                self._load_all()
                state = self._keys.get(key)
            else:
                row = self._lookup(key)
                state = self._keys[key] = (row[0], row[1]) if row else (None, None)
        if state is None or state[1] is None:
            return None
        return state

    def _lookup(self, key: str) -> tuple | None:
        """One key's row, straight through the driver's cursor (SQLAlchemy's statement handling would cost more
        than the indexed SELECT itself, asked once per record), in the session's transaction."""
        conn = self.session.connection()
        marker = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        cursor = conn.connection.cursor()
        try:
            cursor.execute(self._sql + marker, (key,))
            return cursor.fetchone()
        finally:
            cursor.close()

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __setitem__(self, key: str, state: tuple[int | None, str]) -> None:
        self._keys[key] = state

    def _load_all(self) -> None:
        """Every stored key; what this store queued or changed (not all of it flushed yet) stays as it says."""
        column = getattr(self.model_cls, self.key_column)
        rows = self.session.exec(select(column, self.model_cls.id, self.model_cls.status)).all()
        mine = {k: v for k, v in self._keys.items() if v[1] is not None}
        self._keys = {k: (i, st) for k, i, st in rows}
        self._keys.update(mine)
        self._all = True


class Store:
    """Reference lookups are cached per session: a bulk add resolves each hardware or model once."""

    def __init__(self, session: Session, today: date | None = None):
        self.session = session
        self.today = today
        self._pending: dict[type, list[tuple]] = {}
        self._rows: dict[type, dict[tuple, Any]] = {}
        self._known_keys: dict[type, KnownKeys] = {}
        self._source_ids: dict[str, int] = {}
        self._hardware_ids: dict[tuple, int] = {}
        self._file_ids: dict[tuple, int] = {}
        self._software_ids: dict[tuple, int] = {}
        self._cited: dict[int | None, tuple[tuple[str, float], ...]] = {}
        self._facts_filled: set[str] = set()  # models whose facts a figure filled: their figures' shares follow
        self._pending_count = 0

    # ----------------------------------------------------------------------------------------- references
    def _get_or_create(self, model_cls, lookup: dict, defaults: dict | None = None):
        """The row whose columns have these values (its natural key), created when missing.

        The first call for a table loads all its rows: reference tables are small, and a bulk add creates
        hundreds of references, which cost a SELECT each before.
        """
        rows = self._table(model_cls, tuple(lookup))
        key = tuple(lookup.values())
        row = rows.get(key)
        if row is None:
            row = rows[key] = model_cls(**lookup, **(defaults or {}))
            self.session.add(row)
            self.session.flush()
        return row

    def _table(self, model_cls, key_columns: tuple[str, ...]) -> dict[tuple, Any]:
        """All rows of a reference table by their natural key, loaded on first use."""
        rows = self._rows.get(model_cls)
        if rows is None:
            rows = self._rows[model_cls] = {
                tuple(getattr(row, column) for column in key_columns): row
                for row in self.session.exec(select(model_cls))
            }
        return rows

    def source_for(self, url: str, **defaults) -> Source:
        return self._get_or_create(Source, {"url": source_home(url)}, defaults)

    def _source_id(self, url: str) -> int:
        home = source_home(url)
        source_id = self._source_ids.get(home)
        if source_id is None:
            source_id = self._source_ids[home] = self.source_for(home).id
        return source_id

    def _ids(self, refs: tuple, size_source_url: str) -> tuple[int, int, int]:
        """hardware, model file and software ids of a figure (see Prepared.refs); figures share them, so cache."""
        hardware, model_file, software = refs
        hardware_id = self._hardware_ids.get(hardware)
        if hardware_id is None:
            hardware_id = self._hardware_ids[hardware] = self.hardware(*hardware).id
        file_id = self._file_ids.get(model_file)
        if file_id is None:
            row = self.model_file(*model_file, size_source_url)  # type: ignore[call-arg]  # mypy miscounts a star
            file_id = self._file_ids[model_file] = row.id
        software_id = self._software_ids.get(software)
        if software_id is None:
            software_id = self._software_ids[software] = self.software(*software).id
        return hardware_id, file_id, software_id

    def conflicts(self, refs: tuple) -> list[str]:
        """Why a figure's hardware and model facts (see Prepared.refs) cannot be stored: each one that differs
        from the value already stored for its hardware or model, naming both. [] when they agree or fill empty
        fields; a figure is refused rather than have a stated fact dropped or a stored one replaced (D11)."""
        hardware, model_file, _ = refs
        reasons = []
        if hardware not in self._hardware_ids:  # a cached one was checked (stored facts only ever get filled)
            name, memory_gb, gpu_cores = hardware
            reasons += self._differences(Hardware, "hardware", name, {"memory_gb": memory_gb, "gpu_cores": gpu_cores})
        if model_file not in self._file_ids:
            name, params_b, active_params_b = model_file[:3]
            reasons += self._differences(Model, "model", name,
                                         {"params_b": params_b, "active_params_b": active_params_b})
        return reasons

    def _differences(self, model_cls, prefix: str, name: str, stated: dict) -> list[str]:
        row = self._table(model_cls, ("name",)).get((name,))
        if row is None:
            return []
        return [conflict_reason(f"{prefix}.{field}", value, getattr(row, field), name)
                for field, value in stated.items() if differs(value, getattr(row, field))]

    def hardware(self, name: str, memory_gb: float | None = None, gpu_cores: int | None = None) -> Hardware:
        row = self._get_or_create(Hardware, {"name": name})
        # A record fills what is still empty; a different stored value was refused by conflicts().
        if row.memory_gb is None and memory_gb is not None:
            row.memory_gb = memory_gb
        if row.gpu_cores is None and gpu_cores is not None:
            row.gpu_cores = gpu_cores
        return row

    def bandwidth_of(self, name: str) -> float | None:
        row = self._table(Hardware, ("name",)).get((name,))
        return row.memory_bandwidth_gbs if row else None

    def model_of(self, name: str) -> ModelFacts | None:
        row = self._table(Model, ("name",)).get((name,))
        return model_facts(row, self.cited_sizes(row.id)) if row else None

    def _files(self) -> dict[tuple, ModelFile]:
        return self._table(ModelFile, ("model_id", "quantization", "size_bytes"))

    def cited_sizes(self, model_id: int | None) -> tuple[tuple[str, float], ...]:
        """(quantization, GB) of the model's files whose size the reference cites (tpsdb.files); remembered per
        model (every figure asks) until forget_cited() (the reference marks a file cited)."""
        sizes = self._cited.get(model_id)
        if sizes is None:
            sizes = self._cited[model_id] = tuple((f.quantization, f.size_bytes / 1e9) for f in self._files().values()
                                                  if f.model_id == model_id and f.size_quote and f.size_bytes)
        return sizes

    def forget_cited(self) -> None:
        self._cited.clear()

    def cited_row(self, model_id: int, quantization: str, size_gb: float | None) -> ModelFile | None:
        """The cited file a stated size of this model and format describes (tpsdb.files' rule), or None."""
        size = cited_file(size_gb, quantization, self.cited_sizes(model_id))
        return None if size is None else self._files().get((model_id, quantization, round(size * 1e9)))

    def link_to_cited(self, row: ModelFile) -> None:
        """Point a file row at the cited file it describes (or at none, when it is cited itself or describes none)."""
        cited = None if row.size_quote else self.cited_row(row.model_id, row.quantization,
                                                           row.size_bytes / 1e9 if row.size_bytes else None)
        same_file_id = cited.id if cited is not None and cited.id != row.id else None
        if row.same_file_id != same_file_id:
            row.same_file_id = same_file_id
            self.session.add(row)

    def model_file(self, name: str, params_b: float, active_params_b: float | None, file_size_gb: float,
                   quantization: str, size_source_url: str | None) -> ModelFile:
        model = self._get_or_create(Model, {"name": name},
                                    {"params_b": params_b, "active_params_b": active_params_b})
        # What a figure states fills an empty field (a seeded model without its parameter count); a different
        # stored value was refused by conflicts().
        if model.params_b is None and params_b is not None:
            model.params_b = params_b
            self._facts_filled.add(name)
        if model.active_params_b is None and active_params_b is not None:
            model.active_params_b = active_params_b
            self._facts_filled.add(name)
        size_bytes = gb_to_bytes(file_size_gb)
        known = (model.id, quantization, size_bytes) in self._files()
        row = self._get_or_create(
            ModelFile, {"model_id": model.id, "quantization": quantization, "size_bytes": size_bytes},
            {"size_source_url": size_source_url},
        )
        if not known:
            self.link_to_cited(row)
        return row

    def refresh_ceiling_inputs(self, model_names: list[str]) -> int:
        """After the reference changed these models' facts or files: point their files at the cited ones again
        (tpsdb.files) and recompute the active share of their figures (tpsdb.ceiling). Returns the figures changed."""
        self.session.flush()
        self.forget_cited()
        models = [row for name in model_names if (row := self._table(Model, ("name",)).get((name,))) is not None]
        for f in list(self._files().values()):
            if any(f.model_id == mo.id for mo in models):
                self.link_to_cited(f)
        self.session.flush()
        changed = 0
        for model in models:
            facts = model_facts(model)
            rows = self.session.exec(
                select(Measurement.id, Measurement.quote, Measurement.read_share, Measurement.read_share_origin)
                .join(ModelFile, ModelFile.id == Measurement.model_file_id)
                .where(ModelFile.model_id == model.id)).all()
            for measurement_id, quote, stored, origin in rows:
                share = active_share(model.name, None, None, facts, quote)
                if differs(share.stored, stored) or (share.stored is None) != (stored is None):
                    self.session.execute(update(Measurement).where(Measurement.id == measurement_id)
                                         .values(read_share=share.stored, read_share_origin=share.origin))
                    changed += 1
        return changed

    def file_note(self, refs: tuple) -> str | None:
        """Why a stored figure misses the tables that hold its model's cited file fixed, or None when it does not:
        its stated size describes another file than the one the reference cites (tpsdb.files); it says where such a
        figure shows instead. The one wording `ingest` prints (tpsdb.ingest)."""
        _, (name, _, _, size_gb, quantization), _ = refs
        model = self._table(Model, ("name",)).get((name,))
        if model is None:
            return None
        cited = [size for quant, size in self.cited_sizes(model.id) if quant == quantization]
        if not cited or self.cited_row(model.id, quantization, size_gb) is not None or size_gb in cited:
            return None
        return (f"{name} {quantization} {size_gb:g} GB is not the file the reference cites "
                f"({', '.join(f'{c:g} GB' for c in cited)}; sizes more than {SAME_FILE_TOLERANCE:.0%} apart are "
                "other files: tpsdb.files), so the tables that hold that file fixed leave this figure out; it shows in "
                "`tpsdb compare`, on the site's machine and model pages and in figures.html")

    def software(self, name: str, version: str) -> Software:
        number, commit = parse_version(version)
        return self._get_or_create(Software, {"name": name, "version": version},
                                   {"build_number": number, "build_commit": commit})

    # ----------------------------------------------------------------------------------------------- put
    def _known(self, model_cls, key_column: str) -> KnownKeys:
        """The natural keys of a table, as stored and as queued by this store (see KnownKeys)."""
        known = self._known_keys.get(model_cls)
        if known is None:
            known = self._known_keys[model_cls] = KnownKeys(self.session, model_cls, key_column)
        return known

    def put(self, candidate: Any, provenance: Provenance | None = None) -> PutResult:
        """Validate one candidate and queue it as a measurement or a rejection; putting it again is a no-op.

        Rows are written in batches by `flush()` (called every BATCH rows and by the caller at the end).
        """
        provenance = provenance or Provenance()
        prepared = prepare(candidate, bandwidth_of=self.bandwidth_of, model_of=self.model_of, today=self.today,
                           extra_reasons=provenance.extra_reasons)
        return self.put_prepared(prepared, provenance)

    def put_prepared(self, prepared: Prepared, provenance: Provenance | None = None) -> PutResult:
        if not prepared.reasons and prepared.key not in self._known(Measurement, "figure_key"):
            conflicts = self.conflicts(prepared.refs)
            if conflicts:
                prepared = _refused(prepared, conflicts)
        outcome = self._queue(prepared, provenance or _NO_PROVENANCE)
        return PutResult(outcome, prepared.key, prepared.reasons, None if prepared.reasons else prepared.refs,
                         self._withdrawn_text(prepared.key) if outcome == WITHDRAWN_EARLIER else None)

    def _withdrawal(self, measurement_id: int) -> Withdrawal | None:
        """The user's withdrawal of this figure (the latest, should there be several), or None."""
        return self.session.exec(select(Withdrawal).where(Withdrawal.measurement_id == measurement_id)
                                 .order_by(Withdrawal.id.desc())).first()

    def _withdrawn_text(self, key: str) -> str:
        state = self._known(Measurement, "figure_key").get(key)
        withdrawal = self._withdrawal(state[0]) if state and state[0] else None
        if withdrawal is None:  # cannot be: the outcome said there is one
            return "withdrawn earlier"
        return (f"figure {withdrawal.measurement_id} was withdrawn on {withdrawal.withdrawn_at} (withdrawal "
                f"{withdrawal.id}: {withdrawal.why})")

    def _queue(self, prepared: Prepared, p: Provenance) -> str:
        """Queue the row of a new figure or rejection; says which of the outcomes of PutResult it was."""
        key = prepared.key
        if prepared.reasons:
            model_cls, key_column, kind = Rejection, "candidate_key", "rejected"
        else:
            model_cls, key_column, kind = Measurement, "figure_key", "accepted"
        known = self._known(model_cls, key_column)
        state = known.get(key)
        if state is not None:
            row_id, status = state
            if status == ACTIVE:
                return f"{kind}_unchanged"
            self.flush()
            row_id = row_id or self.session.exec(
                select(model_cls.id).where(getattr(model_cls, key_column) == key)).one()
            if model_cls is Measurement and self._withdrawal(row_id) is not None:
                known[key] = (row_id, status)
                return WITHDRAWN_EARLIER  # its user withdrew it: reading it again does not undo that
            # A figure that comes back (an upstream edit undone, a post shown again) is live again, under its old id.
            self.session.execute(update(model_cls).where(model_cls.id == row_id).values(status=ACTIVE))
            known[key] = (row_id, ACTIVE)
            return kind
        row = self._rejection_row(prepared, p) if prepared.reasons else self._measurement_row(prepared, p)
        self._pending.setdefault(model_cls, []).append(row)
        self._pending_count += 1
        known[key] = (None, ACTIVE)
        if self._pending_count >= BATCH:
            self.flush()
        return kind

    def flush(self) -> None:
        """Write the queued rows (one executemany per table)."""
        self.session.flush()
        self._pending_count = 0
        for model_cls, columns in ((Measurement, MEASUREMENT_LINKS + MEASUREMENT_COLUMNS),
                                   (Rejection, REJECTION_LINKS + REJECTION_COLUMNS)):
            rows = self._pending.pop(model_cls, [])
            if rows:
                self._insert(model_cls.__tablename__, columns, rows)
        if self._facts_filled:  # a figure stated what its model lacked: the figures stored before follow it
            names, self._facts_filled = sorted(self._facts_filled), set()
            self.refresh_ceiling_inputs(names)

    def _insert(self, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
        """One executemany straight to the driver: SQLAlchemy's per-row parameter processing would cost a third
        of a bulk add. Rows hold driver-ready values (str, int, float, None; dates as ISO strings)."""
        conn = self.session.connection()
        marker = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join([marker] * len(columns))})"
        conn.exec_driver_sql(sql, rows)

    def _measurement_row(self, prepared: Prepared, p: Provenance) -> tuple:
        url = prepared.columns[0]
        hardware_id, model_file_id, software_id = self._ids(prepared.refs, url)
        source_id = p.source.id if p.source else self._source_id(url)
        return (prepared.key, p.slot, hardware_id, model_file_id, software_id, source_id,
                p.post.id if p.post else None, p.snapshot_id, ACTIVE, None, *prepared.columns)

    def _rejection_row(self, prepared: Prepared, p: Provenance) -> tuple:
        url = prepared.columns[0]
        url_ok = isinstance(url, str) and is_http_url(url)
        source_id = p.source.id if p.source else (self._source_id(url) if url_ok else None)
        return (prepared.key, p.slot, source_id, p.post.id if p.post else None,
                p.snapshot_id, ACTIVE, *prepared.columns)


def model_facts(row: Model, cited_sizes: tuple[tuple[str, float], ...] = ()) -> ModelFacts:
    """What the ceiling check needs of a stored model (see tpsdb.ceiling.active_share, tpsdb.files)."""
    return ModelFacts(row.params_b, row.active_params_b, row.mixture_of_experts, cited_sizes)


def differs(stated: Any, stored: Any) -> bool:
    """A stated value that would replace a different stored one (an empty side never conflicts)."""
    if stated is None or stored is None:
        return False
    if isinstance(stated, (int, float)) and isinstance(stored, (int, float)):
        return not math.isclose(stated, stored, rel_tol=1e-9)
    return stated != stored


def conflict_reason(field: str, stated: Any, stored: Any, name: str) -> str:
    show = lambda v: f"{v:g}" if isinstance(v, float) else str(v)
    return f"{field}: {show(stated)} conflicts with {show(stored)} already stored for {name}"


def _refused(prepared: Prepared, reasons: list[str]) -> Prepared:
    """An accepted figure turned into a rejection: the record as validated, kept with the reasons."""
    candidate = _record_of(prepared)
    return Prepared(natural_key(candidate), reasons, _rejection_columns(candidate, reasons))


def _record_of(prepared: Prepared) -> dict:
    """The record (v1) an accepted Prepared holds, as export would write it."""
    columns = dict(zip(MEASUREMENT_COLUMNS, prepared.columns))
    return Record.model_validate(record_from(columns, prepared.refs)).to_json_dict()


# ------------------------------------------------------------------------------------------------- locking
class Busy(Exception):
    """Another writer held the database for longer than the caller would wait."""


WRITE_LOCK_KEY = zlib.crc32(b"tpsdb-add")  # PostgreSQL advisory lock of the writers of records and references


def lock_for_writing(session: Session, timeout_s: float) -> None:
    """Take the database's write lock before anything is read, waiting up to timeout_s for another writer.

    What a writer reads first (the stored keys, the reference rows) must not change before it writes: two adds
    that both read "not stored yet" would insert the same rows twice (D14). On SQLite, BEGIN IMMEDIATE takes the
    write lock at once; on PostgreSQL, a transaction-scoped advisory lock, released at commit or rollback.
    Raises Busy when the lock is not had in time.
    """
    conn = session.connection()
    try:
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {int(timeout_s * 1000)}")
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({WRITE_LOCK_KEY})")
            conn.exec_driver_sql("SET LOCAL lock_timeout = 0")  # the writes themselves wait as before
    except OperationalError as error:
        busy = "locked" in str(error.orig) or getattr(error.orig, "sqlstate", None) == "55P03"
        if busy:
            raise Busy(f"the database is busy: another process is writing to it (waited {timeout_s:g} s; "
                       "try again when it ends)") from None
        raise


# --------------------------------------------------------------------------------------------------- export
def measurement_record(m: Measurement, h: Hardware, f: ModelFile, mo: Model, s: Software) -> dict:
    """A stored measurement as a record v1, the inverse of Store.put (tpsdb.rowmap)."""
    columns = {column: getattr(m, column) for column in MEASUREMENT_COLUMNS}
    fields = record_from(columns, ((h.name, h.memory_gb, h.gpu_cores),
                                   (mo.name, mo.params_b, mo.active_params_b, f.size_bytes, f.quantization),
                                   (s.name, s.version)), converted_refs=True)
    try:
        return Record.model_validate(fields).to_json_dict()
    except ValidationError as error:  # a row an older tpsdb let in (an inf speed, D3): no record may carry it
        where = ".".join(map(str, error.errors()[0]["loc"]))
        raise StoredRecordError(m.source_url, f"{where}: {error.errors()[0]['msg'].lower()}") from None


class StoredRecordError(ValueError):
    """A stored row that is no valid record any more; `url` is its source, for the message."""

    def __init__(self, url: str, reason: str, number: int | None = None):
        super().__init__(reason)
        self.url, self.reason, self.number = url, reason, number


def iter_measurement_records(engine: Engine, include_inactive: bool = False) -> Iterator[dict]:
    with Session(engine) as session:
        statement = (
            select(Measurement, Hardware, ModelFile, Model, Software)
            .join(Hardware, Hardware.id == Measurement.hardware_id)
            .join(ModelFile, ModelFile.id == Measurement.model_file_id)
            .join(Model, Model.id == ModelFile.model_id)
            .join(Software, Software.id == Measurement.software_id)
            .order_by(Measurement.id)
        )
        if not include_inactive:
            statement = statement.where(Measurement.status == Status.active)
        for number, row in enumerate(session.exec(statement), 1):
            try:
                yield measurement_record(*row)
            except StoredRecordError as error:
                error.number = number  # the place in the export, for the message
                raise


def iter_rejections(engine: Engine) -> Iterator[dict]:
    with Session(engine) as session:
        for r in session.exec(select(Rejection).where(Rejection.status == Status.active).order_by(Rejection.id)):
            yield {"candidate": json.loads(r.candidate_json), "reasons": json.loads(r.reasons)}
