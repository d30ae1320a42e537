"""Reference data kept by hand in data/reference/*.toml: hardware (bandwidth with the page that states it), model
files (sizes with their source) and models (a mixture of experts' active parameters with their source).

A bandwidth has a kind (models.BandwidthKind): `vendor` (the maker's page: bandwidth_source_url and bandwidth_quote),
`relayed` (a publication gives the maker's value: bandwidth_via_title and bandwidth_via_quote, and
bandwidth_source_title naming the maker's document where it does) or `stated` (a source that is not the maker:
bandwidth_source_url and bandwidth_quote). Each kind must carry its citation (a page's URL at least).

Each entry is checked as a record is: unknown keys, types, finite positive numbers, http(s) URLs, parameters in
billions and plausible file sizes (the record's own checks). An entry fills what the database leaves empty; a
value that differs from a stored one is refused, naming both, unless the caller asks to replace it (D17). A file
with any bad entry stores nothing.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from sqlmodel import Session, select

from . import config, db
from .models import BandwidthKind, Hardware, Model, ModelFile
from .record import (
    MAX_BANDWIDTH_GBS,
    MAX_GPU_CORES,
    MAX_MEMORY_GB,
    MAX_NAME_BYTES,
    MAX_PARAMS_B,
    MAX_SIZE_GB,
    is_http_url,
    named_quantization,
    storable,
    validate,
)
from .store import Store, conflict_reason, differs, model_facts


class ReferenceError(ValueError):
    pass


def _web_url(url: str) -> str:
    """The record's rule for a URL (record.is_http_url), so that a page cited here could be a record's source."""
    if not is_http_url(url):
        host = url.partition("://")[2].split("/", 1)[0]  # not urlsplit: it raises on "http://[::1"
        raise ValueError("an http(s) URL must not carry a user name or password" if "@" in host
                         else "not an http(s) URL")
    return url


def _format_name(value: str) -> str:
    name = named_quantization(value)
    if name is None:
        raise ValueError("not a named format")
    return name


def _name(value: str) -> str:
    """A name as a record's names are checked (record._check_name): one line, no control character, short enough
    for an index entry, storable by SQLite and PostgreSQL alike (L6: a terminal escape reached `ceiling`'s output)."""
    if not value.isprintable():
        raise ValueError("holds a control character" if any(ord(c) < 32 or 127 <= ord(c) < 160 for c in value)
                         else "holds a character that is not printable")
    if not storable(value, MAX_NAME_BYTES):
        raise ValueError(f"longer than {MAX_NAME_BYTES} bytes" if storable(value)
                         else "holds a lone surrogate (not Unicode text)")
    return value


def _storable_text(value: str) -> str:
    """Longer text (quotes, notes): anything both databases store (L5: a NUL failed on PostgreSQL)."""
    if not storable(value):
        raise ValueError("holds a NUL character" if "\x00" in value else "holds a lone surrogate (not Unicode text)")
    return value


# Bounds as a record's (tpsdb.record): nonsense such as a unit slip or an overflow is refused, naming the key (L5).
MIN_BANDWIDTH_GBS = 0.1  # a memory far slower than any computer's: a unit slip (TB/s read as GB/s...)
Text = Annotated[str, Field(min_length=1), AfterValidator(_name)]
Name = Annotated[str, AfterValidator(_name)]
Words = Annotated[str, AfterValidator(_storable_text)]
Count = Annotated[int, Field(gt=0, le=MAX_GPU_CORES)]
def _not_too_slow(value: float) -> float:
    if value < MIN_BANDWIDTH_GBS:
        raise ValueError(f"{value:g} is implausible (less than {MIN_BANDWIDTH_GBS:g})")
    return value


Bandwidth = Annotated[float, Field(gt=0, le=MAX_BANDWIDTH_GBS), AfterValidator(_not_too_slow)]
MemoryGb = Annotated[float, Field(gt=0, le=MAX_MEMORY_GB)]
SizeGb = Annotated[float, Field(gt=0, le=MAX_SIZE_GB)]
ParamsB = Annotated[float, Field(gt=0, le=MAX_PARAMS_B)]
WebUrl = Annotated[str, AfterValidator(_web_url)]


class _Entry(BaseModel):
    # strict: a string is not a number ("800" or "fast"), a number is not a name; TOML's nan and inf are refused
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class HardwareEntry(_Entry):
    name: Text
    vendor: Name | None = None
    memory_gb: MemoryGb | None = None
    memory_bandwidth_gbs: Bandwidth | None = None
    bandwidth_source_url: WebUrl | None = None
    bandwidth_quote: Words | None = None
    bandwidth_kind: Literal["vendor", "relayed", "stated"] | None = None  # vendor when given without a kind
    bandwidth_source_title: Name | None = None
    bandwidth_via_title: Name | None = None
    bandwidth_via_url: WebUrl | None = None
    bandwidth_via_quote: Words | None = None
    gpu_cores: Count | None = None
    notes: Words | None = None

    def citation_problems(self) -> list[str]:
        """What the bandwidth's kind requires and the entry lacks."""
        if self.memory_bandwidth_gbs is None:
            return []
        kind = self.kind
        needs = (("bandwidth_via_title", "bandwidth_via_quote") if kind == BandwidthKind.relayed
                 else ("bandwidth_source_url",))
        why = ("a relayed bandwidth needs the publication that relays it and its words" if kind == BandwidthKind.relayed
               else "a bandwidth needs the page that states it")
        return [f"{key}: missing ({why})" for key in needs if not getattr(self, key)]

    @property
    def kind(self) -> str:
        return self.bandwidth_kind or BandwidthKind.vendor.value


class ModelEntry(_Entry):
    """A model's facts that hold for all its files: whether it is a mixture of experts, and its active parameters
    with the page that states them."""

    name: Text
    mixture_of_experts: bool | None = None
    active_params_b: ParamsB | None = None
    active_params_source_url: WebUrl | None = None
    active_params_quote: Words | None = None
    notes: Words | None = None


class ModelFileEntry(_Entry):
    model: Text
    quantization: Annotated[str, AfterValidator(_format_name)]
    file_size_gb: SizeGb  # decimal GB
    size_source_url: WebUrl
    params_b: ParamsB | None = None  # billions
    active_params_b: ParamsB | None = None
    quote: Words | None = None  # quote, quote_from, notes: for the reader of the file
    quote_from: Words | None = None
    notes: Words | None = None


KINDS = {"hardware": HardwareEntry, "model_file": ModelFileEntry, "model": ModelEntry}


def load_reference(session: Session, path: Path, replace: bool = False) -> tuple[dict[str, int], list[str]]:
    """Store the [[hardware]] and [[model_file]] entries of one TOML file. Returns counts by kind, and the stored
    values replaced (only with `replace`), each as "where.key: new (was old)".

    Rows are found or created by the Store, as for every record, so a reference size and a record's size meet on
    the same model file. Raises ReferenceError (one line naming the file, entries and keys) when an entry is bad or
    states a value that differs from a stored one (unless `replace`); then nothing of the file is written.
    """
    entries = _entries(path)
    store = Store(session)
    problems, conflicts, stated_by_model = [], [], {}
    for where, entry in entries:
        problems += _implausible_for_stored_files(store, entry, where)
        problems += _active_above_total(store, entry, where, entries)
        conflicts += _stored_conflicts(store, entry, where)
        if isinstance(entry, ModelFileEntry):  # two entries of one file must agree on their model
            first = stated_by_model.setdefault(entry.model, (where, entry))
            for field in ("params_b", "active_params_b"):
                if differs(getattr(entry, field), getattr(first[1], field)):
                    problems.append(f"{where}.{field}: {getattr(entry, field):g} conflicts with "
                                    f"{getattr(first[1], field):g} in {first[0]} for {entry.model}")
    if problems or (conflicts and not replace):
        raise ReferenceError(f"{path}: " + "; ".join(problems + ([] if replace else conflicts)))
    counts = dict.fromkeys(KINDS, 0)
    for where, entry in entries:
        if isinstance(entry, HardwareEntry):
            _put_hardware(store, entry)
            counts["hardware"] += 1
        elif isinstance(entry, ModelEntry):
            _put_model(store, entry)
            counts["model"] += 1
        else:
            _put_model_file(store, entry)
            counts["model_file"] += 1
    # a model's facts or cited files changed: its figures' files and active shares follow (tpsdb.ceiling, files)
    store.refresh_ceiling_inputs(sorted({entry.name if isinstance(entry, ModelEntry) else entry.model
                                         for _, entry in entries if not isinstance(entry, HardwareEntry)}))
    session.flush()
    return counts, [_replaced(conflict) for conflict in conflicts]


def _entries(path: Path) -> list[tuple[str, HardwareEntry | ModelFileEntry | ModelEntry]]:
    """Every entry of the file, checked; ReferenceError listing every problem."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as error:
        raise ReferenceError(f"{path}: not valid TOML ({error})") from None
    except UnicodeDecodeError:
        raise ReferenceError(f"{path}: not UTF-8 text") from None
    problems, entries = [], []
    for kind, items in data.items():
        if kind not in KINDS:
            problems.append(f'unknown key "{kind}" (a reference file holds [[hardware]], [[model_file]] and '
                            '[[model]])')
        elif not (isinstance(items, list) and all(isinstance(item, dict) for item in items)):
            problems.append(f"{kind}: not a list of tables (write [[{kind}]])")
        else:
            for index, item in enumerate(items):
                where = f"{kind}[{index}]"
                try:
                    entries.append((where, KINDS[kind].model_validate(item)))
                except ValidationError as error:
                    problems += [f"{where}.{_why(e)}" for e in error.errors()]
    for where, entry in entries:
        problems += _model_problems(entry, where) if isinstance(entry, ModelFileEntry) else []
        if isinstance(entry, HardwareEntry):
            problems += [f"{where}.{problem}" for problem in entry.citation_problems()]
        if isinstance(entry, ModelEntry) and entry.active_params_b is not None and not (
                entry.active_params_source_url and entry.active_params_quote):
            problems.append(f"{where}.active_params_source_url: missing (active parameters need the page that states "
                            "them and its quote)")
    if problems:
        raise ReferenceError(f"{path}: " + "; ".join(problems))
    return entries


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, str) else str(value)


_WHY = {
    "missing": lambda value: "missing",
    "extra_forbidden": lambda value: "unknown key",
    "float_type": lambda value: f"not a number ({_shown(value)})",
    "int_type": lambda value: f"not a whole number ({_shown(value)})",
    "string_type": lambda value: f"not a string ({_shown(value)})",
    "finite_number": lambda value: f"not a finite number ({_shown(value)})",
    "greater_than": lambda value: f"not positive ({_shown(value)})",
    "string_too_short": lambda value: "empty",
}


def _why(error: dict) -> str:
    path = ".".join(str(part) for part in error["loc"])
    bounds = error.get("ctx", {})
    if error["type"] == "less_than_equal":
        return f"{path}: {_shown(error['input'])} is implausible (more than {bounds['le']:g})"
    why = _WHY.get(error["type"])
    if why:
        return f"{path}: {why(error['input'])}"
    message = str(error.get("ctx", {}).get("error", "")) or error["msg"].lower()
    return f"{path}: {message} ({_shown(error['input'])})"


def _model_problems(entry: ModelFileEntry, where: str) -> list[str]:
    """The record's own model checks (parameters in billions, a file size plausible for them, active ≤ total) on
    the model part of an entry; every other field of that stand-in record is absent, so its reasons are ignored."""
    model = {"name": entry.model, "params_b": entry.params_b, "active_params_b": entry.active_params_b,
             "file_size_gb": entry.file_size_gb}
    reasons = validate({"model": model}).reasons
    return [f"{where}.{reason.removeprefix('model.')}" for reason in reasons
            if reason.startswith("model.") and reason != "model.params_b: missing"]


def _implausible_for_stored_files(store: Store, entry, where: str) -> list[str]:
    """A parameter count must be plausible for every file already stored for its model (the record's check):
    6738 "billions" is as wrong for the stored 3.79 GB file as for a new 3790 GB one."""
    if not isinstance(entry, ModelFileEntry) or entry.params_b is None:
        return []
    sizes = store.session.exec(select(ModelFile.size_bytes).join(Model, Model.id == ModelFile.model_id)
                               .where(Model.name == entry.model)).all()
    for size in sorted({size for size in sizes if size}):
        if _model_problems(ModelFileEntry(**{**entry.model_dump(), "file_size_gb": size / 1e9}), where):
            return [f"{where}.params_b: {entry.params_b:g} B is implausible for the {size / 1e9:g} GB file already "
                    f"stored for {entry.model} (unit?)"]
    return []


def _active_above_total(store: Store, entry, where: str, entries: list) -> list[str]:
    """D8: active parameters are a part of the total, never more (100 of Llama 2 7B's 6.74 B made its ceiling 4.85
    t/s and refused valid figures). Each side is the entry's own, else another entry's of this file for the model,
    else the stored one; the error names the entry's field that breaks the rule."""
    if isinstance(entry, HardwareEntry) or (isinstance(entry, ModelFileEntry) and entry.params_b
                                            and entry.active_params_b):  # both its own: the record's check says it
        return []
    name = entry.name if isinstance(entry, ModelEntry) else entry.model
    row = store.session.exec(select(Model).where(Model.name == name)).first()
    given = [e for _, e in entries if not isinstance(e, HardwareEntry)
             and (e.name if isinstance(e, ModelEntry) else e.model) == name]

    def first(field: str) -> float | None:
        values = [getattr(e, field, None) for e in [entry, *given]] + [getattr(row, field, None)]
        return next((v for v in values if v), None)

    total, active = first("params_b"), first("active_params_b")
    if total is None or active is None or active <= total:
        return []
    if entry.active_params_b:
        field = "active_params_b"
    elif getattr(entry, "params_b", None) and not any(e.active_params_b for e in given):
        field = "params_b"  # a new total below the stored active count
    else:
        return []  # the entry of this file that states the active count is named
    return [f"{where}.{field}: {active:g} B active is more than the {total:g} B total parameters of {name}"]


def _stored_conflicts(store: Store, entry: HardwareEntry | ModelFileEntry, where: str) -> list[str]:
    """The entry's values that differ from stored ones, each naming both."""
    if isinstance(entry, HardwareEntry):
        row = store.session.exec(select(Hardware).where(Hardware.name == entry.name)).first()
        stated = entry.model_dump(exclude_unset=True, exclude={"name"})
        if entry.memory_bandwidth_gbs is not None:
            stated["bandwidth_kind"] = entry.kind
        return [] if row is None else _differences(where, row, stated, entry.name)
    if isinstance(entry, ModelEntry):
        row = store.session.exec(select(Model).where(Model.name == entry.name)).first()
        stated = entry.model_dump(exclude_unset=True, exclude={"name", "notes"})
        return [] if row is None else _differences(where, row, stated, entry.name)
    model = store.session.exec(select(Model).where(Model.name == entry.model)).first()
    if model is None:
        return []
    conflicts = _differences(where, model, entry.model_dump(include={"params_b", "active_params_b"}), entry.model)
    file_row = _stored_file(store, entry, model.id)
    if file_row is not None:
        conflicts += _differences(where, file_row, {"size_source_url": entry.size_source_url}, entry.model)
    return conflicts


def _replaced(conflict: str) -> str:
    """ "where.key: new conflicts with old already stored for NAME" said as a replacement."""
    field, rest = conflict.split(": ", 1)
    new, old = rest.split(" conflicts with ", 1)
    return f"{field}: {new} (was {old.rsplit(' already stored for ', 1)[0]})"


def _differences(where: str, row, stated: dict, name: str) -> list[str]:
    return [conflict_reason(f"{where}.{field}", value, getattr(row, field), name)
            for field, value in stated.items() if differs(value, getattr(row, field))]


def _stored_file(store: Store, entry: ModelFileEntry, model_id: int) -> ModelFile | None:
    return store.session.exec(select(ModelFile).where(
        ModelFile.model_id == model_id, ModelFile.quantization == entry.quantization,
        ModelFile.size_bytes == round(entry.file_size_gb * 1e9))).first()


def _put_hardware(store: Store, entry: HardwareEntry) -> None:
    row = store.hardware(entry.name)
    for field, value in entry.model_dump(exclude_unset=True, exclude={"name"}).items():
        setattr(row, field, value)
    if entry.memory_bandwidth_gbs is not None:
        row.bandwidth_kind = entry.kind
    store.session.add(row)


def _put_model(store: Store, entry: ModelEntry) -> None:
    row = store._get_or_create(Model, {"name": entry.name})
    for field, value in entry.model_dump(exclude_unset=True, exclude={"name", "notes"}).items():
        setattr(row, field, value)
    if entry.active_params_b is not None:
        row.mixture_of_experts = True
    store.session.add(row)


def _put_model_file(store: Store, entry: ModelFileEntry) -> None:
    model_file = store.model_file(entry.model, entry.params_b, entry.active_params_b, entry.file_size_gb,
                                  entry.quantization, entry.size_source_url)
    model_file.size_source_url = entry.size_source_url  # stated here: it fills, or replaces when asked
    model_file.size_quote = entry.quote  # marks the cited file: tpsdb.files says which stated sizes describe it
    store.forget_cited()
    model = store.session.get(Model, model_file.model_id)
    for field in ("params_b", "active_params_b"):
        if getattr(entry, field) is not None:
            setattr(model, field, getattr(entry, field))
    store.session.add_all([model, model_file])


# ------------------------------------------------------------------------- bandwidths for the ceiling check
def bandwidths(session: Session) -> dict[str, float]:
    """Hardware name -> memory bandwidth (GB/s), for the ceiling check of records (`add`, `validate`)."""
    rows = session.exec(select(Hardware.name, Hardware.memory_bandwidth_gbs)).all()
    return {name: bandwidth for name, bandwidth in rows if bandwidth}


def models(session: Session) -> dict:
    """Model name -> the facts the ceiling check needs (tpsdb.ceiling.ModelFacts), its cited file sizes included."""
    cited: dict[int, list[tuple[str, float]]] = {}
    for f in session.exec(select(ModelFile).where(ModelFile.size_quote.is_not(None), ModelFile.size_bytes > 0)):
        cited.setdefault(f.model_id, []).append((f.quantization, f.size_bytes / 1e9))
    return {row.name: model_facts(row, tuple(cited.get(row.id, ()))) for row in session.exec(select(Model))}


def reference_facts(folder: Path | None = None) -> tuple[dict[str, float], dict]:
    """The bandwidths and model facts of the reference data that `tpsdb init` loads (data/reference/*.toml), read
    without a database: what `validate` checks against when no database exists, so that a record is accepted or
    refused the same way whether or not a database was built (first-use review, M6)."""
    from .record import ModelFacts

    bandwidth_of: dict[str, float] = {}
    facts: dict[str, ModelFacts] = {}
    for path in sorted((folder or config.REFERENCE_DIR).glob("*.toml")):
        for _, entry in _entries(path):
            if isinstance(entry, HardwareEntry) and entry.memory_bandwidth_gbs:
                bandwidth_of[entry.name] = entry.memory_bandwidth_gbs
            elif isinstance(entry, ModelEntry):
                known = facts.get(entry.name) or ModelFacts()
                facts[entry.name] = ModelFacts(known.params_b, entry.active_params_b or known.active_params_b,
                                               True if entry.active_params_b else entry.mixture_of_experts)
            elif isinstance(entry, ModelFileEntry):
                known = facts.get(entry.model) or ModelFacts()
                facts[entry.model] = ModelFacts(known.params_b or entry.params_b,
                                                known.active_params_b or entry.active_params_b,
                                                known.mixture_of_experts)
    return bandwidth_of, facts


def stored_facts(url: str | None) -> tuple[dict[str, float], dict] | None:
    """The bandwidths and model facts of an existing database at `url` (None: the default one); None when there is
    none there. Never creates a database: `validate` only reads one when it exists."""
    url = config.database_url(url)
    path = db.sqlite_path(url)
    if url.startswith("sqlite") and not (path and Path(path).exists()):
        return None
    engine = db.make_engine(url)
    try:
        db.require_schema(engine)
    except db.DatabaseError:
        return None
    with Session(engine) as session:
        return bandwidths(session), models(session)
