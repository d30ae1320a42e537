"""Reference data kept by hand in data/reference/*.toml: hardware (bandwidth with the page that states it) and
model files (sizes with their source). Loading is an upsert by name, so the files stay the one truth."""

from __future__ import annotations

import tomllib
from pathlib import Path

from sqlmodel import Session, select

from .models import Hardware, Model, ModelFile

HARDWARE_FIELDS = ("vendor", "memory_gb", "memory_bandwidth_gbs", "bandwidth_source_url", "bandwidth_quote",
                   "gpu_cores", "notes")


class ReferenceError(ValueError):
    pass


def load_reference(session: Session, path: Path) -> dict[str, int]:
    """Upsert the [[hardware]] and [[model_file]] entries of one TOML file. Returns counts by kind."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ReferenceError(f"{path}: not valid TOML ({error})") from error
    counts = {"hardware": 0, "model_file": 0}
    for index, entry in enumerate(data.get("hardware", [])):
        _upsert_hardware(session, entry, f"{path.name}: hardware[{index}]")
        counts["hardware"] += 1
    for index, entry in enumerate(data.get("model_file", [])):
        _upsert_model_file(session, entry, f"{path.name}: model_file[{index}]")
        counts["model_file"] += 1
    return counts


def _upsert_hardware(session: Session, entry: dict, where: str) -> None:
    if not entry.get("name"):
        raise ReferenceError(f"{where}.name: missing")
    if entry.get("memory_bandwidth_gbs") is not None and not entry.get("bandwidth_source_url"):
        raise ReferenceError(f"{where}.bandwidth_source_url: missing (a bandwidth needs the page that states it)")
    row = session.exec(select(Hardware).where(Hardware.name == entry["name"])).first() or Hardware(name=entry["name"])
    for field in HARDWARE_FIELDS:
        if field in entry:
            setattr(row, field, entry[field])
    session.add(row)
    session.flush()


def _upsert_model_file(session: Session, entry: dict, where: str) -> None:
    for field in ("model", "quantization", "file_size_gb", "size_source_url"):  # quote, notes: for the reader
        if entry.get(field) in (None, ""):
            raise ReferenceError(f"{where}.{field}: missing")
    model = session.exec(select(Model).where(Model.name == entry["model"])).first()
    if model is None:
        model = Model(name=entry["model"])
    for field in ("params_b", "active_params_b"):
        if entry.get(field) is not None:
            setattr(model, field, entry[field])
    session.add(model)
    session.flush()
    size_bytes = round(entry["file_size_gb"] * 1e9)
    exists = session.exec(
        select(ModelFile).where(ModelFile.model_id == model.id, ModelFile.quantization == entry["quantization"],
                                ModelFile.size_bytes == size_bytes)
    ).first()
    if exists is None:
        session.add(ModelFile(model_id=model.id, quantization=entry["quantization"], size_bytes=size_bytes,
                              size_source_url=entry["size_source_url"]))
        session.flush()
