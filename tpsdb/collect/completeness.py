"""Whether a read of a thread is whole: what it read, against the counts its source states.

Every kind of source reports its counts here (a GitHub discussion: its comments and the replies of each comment;
a REST issue: the issue's `comments`; a file: whether it shows itself whole). Refresh withdraws by absence only from
a read whose every count is stated and agrees: a post missing from a short read was not read, it was not removed.
A file states no count, so the rule becomes: a file that cannot show it is whole (empty, cut mid-line, an error
page) is a short read, which fails and retires nothing (`Completeness.of_file`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Count:
    what: str  # "comments", "replies to comment 7644774": what was counted
    read: int  # distinct posts of that sort the read holds (deleted and minimized ones included)
    stated: int | None  # what the source says it holds; None: it does not say
    hint: str = ""  # what most likely cut the read short when the two differ


@dataclass
class Completeness:
    counts: list[Count] = field(default_factory=list)

    @property
    def short(self) -> list[Count]:
        """The counts the read does not agree with."""
        return [c for c in self.counts if c.stated is not None and c.read != c.stated]

    @property
    def unstated(self) -> list[str]:
        return [c.what for c in self.counts if c.stated is None]

    @property
    def verified(self) -> bool:
        """Every count stated and met: only then may a post's absence mean it was removed."""
        return bool(self.counts) and not self.unstated and not self.short

    @classmethod
    def of_file(cls, not_whole: str | None) -> Completeness:
        """One file's read: whole, or short for the reason given (then nothing of it may be stored)."""
        return cls([Count("whole file", 0 if not_whole else 1, 1, not_whole or "")])

    def problem(self) -> str | None:
        """`incomplete: read 40 of 59 comments; <why>`, or None when nothing stated disagrees."""
        short = self.short
        if not short:
            return None
        parts = [f"read {c.read} of {c.stated} {c.what}" + (f"; {c.hint}" if c.hint else "") for c in short[:3]]
        if len(short) > 3:
            parts.append(f"and {len(short) - 3} more counts disagree")
        return "incomplete: " + "; ".join(parts)


class IncompleteRead(ValueError):
    """A read that holds fewer (or more) posts than its source states: nothing of it may be stored."""
