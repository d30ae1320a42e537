"""Peer datasets: figures another project relayed from a source, imported as candidates naming the relay.

One format so far, tokatlas (tpsdb.tokatlas reads it): each record's figures become candidate records v1 with the
post's permalink as `source.url` and tokatlas as `source.via`; what a record does not state is left unknown, and
the validator keeps such figures as rejections naming the fields.

A relayed figure gives way to a direct reading: when the post it names has been read from the source itself
(`tpsdb refresh`), its relayed figures and rejections are marked superseded (tpsdb.history.supersede_relayed).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from sqlmodel import Session

from .errors import PeerFileError
from .history import supersede_relayed
from .sources import SourceSpec
from .store import Provenance, Store, source_home
from .tokatlas import FORMATS, TOKATLAS_VIA, read_tokatlas, relay_context, slots, slotted_candidates
from .vocab import SourceType

__all__ = ["FORMATS", "TOKATLAS_VIA", "ImportReport", "PeerFileError", "import_tokatlas"]


@dataclass
class ImportReport:
    records: int = 0
    figures: int = 0
    outcomes: Counter = field(default_factory=Counter)
    duplicate_ids: list[str] = field(default_factory=list)
    protocol_applied: int = 0
    superseded: int = 0
    builds: int = 0  # records whose post's build the relay states and which is consistent with its date
    builds_set_aside: int = 0  # stated builds set aside (not consistent with the post's date)
    comment_twins: int = 0  # scoreboard rows read as the dated comment whose figures they repeat


def import_tokatlas(session: Session, path: Path, specs: dict[str, SourceSpec], *, today=None) -> ImportReport:
    """Store every figure of a tokatlas file (accepted or rejected with reasons). The caller commits.

    Importing the same file twice changes nothing; a post already read directly keeps its direct figures."""
    records = read_tokatlas(path)
    record_slots, report_duplicates = slots(records)
    contexts = relay_context(records, specs)
    report = ImportReport(records=len(records), duplicate_ids=report_duplicates)
    store = Store(session, today=today)
    for record, slot, context in zip(records, record_slots, contexts):
        candidates, protocol = slotted_candidates(record, slot, specs, context)
        report.protocol_applied += protocol
        report.builds += context.build.version is not None
        report.builds_set_aside += context.build.problem is not None
        report.comment_twins += context.twin is not None
        for candidate in candidates:
            url = candidate.record["source"]["url"]  # a scoreboard row repeating a comment is the comment's
            home = source_home(url)
            kind = (SourceType.github_discussion if re.search(r"/discussions/\d+$", home) else SourceType.web).value
            provenance = Provenance(source=store.source_for(home, kind=kind), slot=candidate.slot,
                                    extra_reasons=candidate.reasons)
            report.outcomes[store.put(candidate.record, provenance).outcome] += 1
            report.figures += 1
    store.flush()
    report.superseded = supersede_relayed(session, sorted({r["source_url"] for r in records}))
    return report
