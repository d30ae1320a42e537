"""The vocabularies of tpsdb, spelled once: the values a phase, a concurrency figure, a nature, a status, a
bandwidth kind and a source's kind may take.

The record format (tpsdb.record), the tables and their CHECK constraints (tpsdb.models), the table definitions
(tpsdb.publish.definitions) and the reference (tpsdb.reference) take them from here; tests/test_vocab.py holds the
Datasette descriptions (tpsdb/datasette/metadata.yml) and the source kinds' registry to them.
"""

from __future__ import annotations

from enum import StrEnum


class Phase(StrEnum):
    """What a figure times: reading the prompt, writing tokens, or the whole request."""

    generation = "generation"
    prompt = "prompt"
    end_to_end = "end_to_end"


class Figure(StrEnum):
    """Whose speed a figure is when several users run at once."""

    per_user = "per_user"  # what one user sees
    aggregate = "aggregate"  # the sum over all users


class NatureKind(StrEnum):
    measured = "measured"  # timed, with its procedure
    computed = "computed"  # from other figures, with its formula and inputs


class Status(StrEnum):
    active = "active"
    superseded = "superseded"
    withdrawn = "withdrawn"


class BandwidthKind(StrEnum):
    """Who states a machine's memory bandwidth, in order of preference (a less preferred value never replaces a
    more preferred one)."""

    vendor = "vendor"  # the maker's own page, read by us
    relayed = "relayed"  # a publication gives the maker's value and names the maker's document (kept as `via`)
    stated = "stated"  # a source states it (a thread's post, a benchmark's table), not the maker


class SourceType(StrEnum):
    """`source.kind`: the kind of source file that reads it (tpsdb.kinds, by name), or how else it came in."""

    github_discussion = "github_discussion"
    github_issue = "github_issue"
    file = "file"
    json_api = "json_api"
    peer_dataset = "peer_dataset"
    repo_file = "repo_file"
    benchmark_file = "benchmark_file"  # output files given to `tpsdb ingest`
    web = "web"  # a page a peer dataset cites, read by no kind


def values(vocabulary: type[StrEnum]) -> tuple[str, ...]:
    """The allowed values, in their declared order."""
    return tuple(member.value for member in vocabulary)


def sql_in(column: str, vocabulary: type[StrEnum]) -> str:
    """An SQL condition that the column holds one of the values (a CHECK constraint, a view's filter)."""
    return f"{column} IN ({', '.join(repr(v) for v in values(vocabulary))})"
