"""Reference data kept by hand in data/reference/*.toml: hardware (bandwidth with the page that states it) and
model files (sizes with their source). Loading is an upsert by name, so the files stay the one truth."""

from __future__ import annotations

import tomllib
from pathlib import Path

from sqlmodel import Session

from .models import Model
from .store import Store

HARDWARE_FIELDS = ("vendor", "memory_gb", "memory_bandwidth_gbs", "bandwidth_source_url", "bandwidth_quote",
                   "gpu_cores", "notes")


class ReferenceError(ValueError):
    pass


def load_reference(session: Session, path: Path) -> dict[str, int]:
    """Upsert the [[hardware]] and [[model_file]] entries of one TOML file. Returns counts by kind.

    Rows are found or created by the Store, as for every record, so a reference size and a record's size meet
    on the same model file; the reference then overwrites what it states."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ReferenceError(f"{path}: not valid TOML ({error})") from error
    store = Store(session)
    counts = {"hardware": 0, "model_file": 0}
    for index, entry in enumerate(data.get("hardware", [])):
        _upsert_hardware(store, entry, f"{path.name}: hardware[{index}]")
        counts["hardware"] += 1
    for index, entry in enumerate(data.get("model_file", [])):
        _upsert_model_file(store, entry, f"{path.name}: model_file[{index}]")
        counts["model_file"] += 1
    session.flush()
    return counts


def _upsert_hardware(store: Store, entry: dict, where: str) -> None:
    if not entry.get("name"):
        raise ReferenceError(f"{where}.name: missing")
    if entry.get("memory_bandwidth_gbs") is not None and not entry.get("bandwidth_source_url"):
        raise ReferenceError(f"{where}.bandwidth_source_url: missing (a bandwidth needs the page that states it)")
    row = store.hardware(entry["name"])
    for field in HARDWARE_FIELDS:
        if field in entry:
            setattr(row, field, entry[field])
    store.session.add(row)


def _upsert_model_file(store: Store, entry: dict, where: str) -> None:
    for field in ("model", "quantization", "file_size_gb", "size_source_url"):  # quote, notes: for the reader
        if entry.get(field) in (None, ""):
            raise ReferenceError(f"{where}.{field}: missing")
    model_file = store.model_file(entry["model"], entry.get("params_b"), entry.get("active_params_b"),
                                  entry["file_size_gb"], entry["quantization"], entry["size_source_url"])
    model = store.session.get(Model, model_file.model_id)
    for field in ("params_b", "active_params_b"):
        if entry.get(field) is not None:
            setattr(model, field, entry[field])
    store.session.add(model)
