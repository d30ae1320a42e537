"""The history rules of stored figures: what a newer reading does to the rows an older one left.

- A post's figures that a new reading of the post no longer gives are retired: superseded when the post still
  stands (edited), withdrawn when it is gone (`retire`).
- A relayed figure gives way to a direct reading (`supersede_relayed`): a figure whose `source.via` names a relay
  (stored with `via_title`, whatever the relay) is superseded once the post it names has been read from the source
  itself, and the direct figure of the same place and conditions records which relayed one it supersedes.

Keyed by data (a figure's post, its `via`), never by a kind or a relay's name: the engine (tpsdb.refresh) and the
peer importer (tpsdb.peers) both call these."""

from __future__ import annotations

from typing import cast

from sqlalchemy import CursorResult, or_, update
from sqlmodel import Session, col, select

from .models import Measurement, Post, Rejection, Status

__all__ = ["retire", "supersede_refusals_now_accepted", "supersede_relayed"]


def retire(session: Session, post_id: int, keep_figures: set[str], keep_rejections: set[str], status: Status) -> int:
    """Mark a post's active figures and rejections that are no longer read from it. Returns figures retired."""
    plain = {"synchronize_session": False}  # one statement each; no loaded object reads these statuses again
    retired = cast(CursorResult, session.execute(update(Measurement).where(
        Measurement.post_id == post_id, Measurement.status == Status.active,
        col(Measurement.figure_key).not_in(keep_figures)).values(status=status), execution_options=plain))
    session.execute(update(Rejection).where(
        Rejection.post_id == post_id, Rejection.status == Status.active,
        col(Rejection.candidate_key).not_in(keep_rejections)).values(status=status), execution_options=plain)
    return retired.rowcount


def supersede_refusals_now_accepted(session: Session) -> int:
    """A record refused only for exceeding the computed maximum (a check against the reference's bandwidth) and
    accepted since, once the reference changed and the record was added again, is no longer a rejection: it is
    superseded, so it is never both refused and shown. The same figure is the same source address, quote and value;
    a refusal with any other reason was about the record itself and stays. Returns the rejections superseded."""
    accepted = select(Measurement.id).where(
        Measurement.status == Status.active, Measurement.source_url == Rejection.source_url,
        Measurement.quote == Rejection.quote, Measurement.tokens_per_second == Rejection.tokens_per_second)
    result = cast(CursorResult, session.execute(update(Rejection).where(
        Rejection.status == Status.active, col(Rejection.reasons).like('["tokens_per_second: above_ceiling%'),
        col(Rejection.reasons).not_like('%", "%'), accepted.exists()).values(status=Status.superseded),
        execution_options={"synchronize_session": False}))
    return result.rowcount


# The conditions a direct figure must share with a relayed one to be recorded as its successor.
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
    relayed_figures = select(Measurement.source_url).where(
        Measurement.via_title.is_not(None), Measurement.status == Status.active)
    relayed_rejections = select(Rejection.source_url).where(Rejection.status == Status.active, _RELAYED_REJECTION)
    if permalinks is not None:  # asked of the named posts only: SQLite would otherwise match the LIKE on every
        # rejection for each source a `tpsdb load` stores (a tenth of the seed load); source_url is indexed there
        relayed_figures = relayed_figures.where(col(Measurement.source_url).in_(permalinks))
        relayed_rejections = relayed_rejections.where(col(Rejection.source_url).in_(permalinks))
    posts = select(Post.permalink, Post.id).where(Post.status == Status.active,
                                                  col(Post.permalink).in_(relayed_figures.union(relayed_rejections)))
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
