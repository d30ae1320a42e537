"""What a database holds, as the few labelled lines `tpsdb init` and `tpsdb summary` print."""

from __future__ import annotations

import json
from collections import Counter

from sqlalchemy import func
from sqlmodel import Session, select

from . import db
from .models import Hardware, Measurement, Model, ModelFile, Rejection, Source, Status


def summary_text(engine) -> str:
    """Each line says what it counts: `tpsdb sources` lists only the sources with a file in sources/, while the
    database also holds the sources of added records and ingested files."""
    with Session(engine) as s:
        def count(model, *where) -> int:
            return s.exec(select(func.count()).select_from(model).where(*where)).one()

        by_status = dict(s.exec(select(Measurement.status, func.count()).group_by(Measurement.status)).all())
        reasons: Counter = Counter()
        for text in s.exec(select(Rejection.reasons).where(Rejection.status == Status.active)).all():
            reasons.update(json.loads(text))
        lines = [
            f"database: {engine.url.render_as_string(hide_password=True)} (schema {db.current_revision(engine)})",
            f"measurements: {by_status.get('active', 0)} active, {by_status.get('superseded', 0)} superseded, "
            f"{by_status.get('withdrawn', 0)} withdrawn (figures that passed validation)",
            f"rejections: {count(Rejection, Rejection.status == Status.active)} active (candidates refused, kept "
            "with their reasons)",
            f"sources in the database: {count(Source)} ({count(Source, Source.key.is_not(None))} with a source file "
            "in sources/, which `tpsdb sources` lists and `tpsdb refresh` reads)",
            f"hardware: {count(Hardware)} machines "
            f"({count(Hardware, Hardware.memory_bandwidth_gbs.is_not(None))} with a cited memory bandwidth)",
            f"models: {count(Model)}; model files (a model in one quantization and size): {count(ModelFile)}",
        ]
        if reasons:
            lines.append("commonest rejection reasons (rejections giving each):")
            lines += [f"  {n:6d}  {reason}" for reason, n in reasons.most_common(8)]
    return "\n".join(lines)
