"""`peer_dataset`: a data file another project publishes (one JSON file at a URL), each of its records relayed as
candidates naming the peer as `source.via`. One format so far, tokatlas (tpsdb.tokatlas, `../shared/peers/tokatlas/`):
the records and their candidates are the importer's (`tpsdb import tokatlas`), read by the same code, each record
in the context of the whole file (its post's build checked against the other posts' dated builds).

Each record is one post (its slot in the file, "tokatlas:ID"): a record whose content changes has its figures
superseded, a record gone from the file is withdrawn. The file states no record count, but a whole-file read is
complete by construction (a truncated JSON file does not parse, and the run fails): absence withdraws. A file with
no record at all cannot show it is whole (an emptied or placeholder file, not a peer retracting everything): it
fails the run and withdraws nothing.

Settings of the source file: `format` (required: "tokatlas"); `fetch_url` where the bytes are (default `url`; for
a file on GitHub, its raw.githubusercontent.com address at a pinned commit). The threads' protocols (the 4167
scoreboard's conditions) are those of the source files beside this one."""

from __future__ import annotations

import json

from tpsdb.collect.completeness import Completeness
from tpsdb.collect.extract import Candidate, PostContext
from tpsdb.errors import PageFormatError, PeerFileError
from tpsdb.kinds.base import OneFileKind, Post
from tpsdb.tokatlas import FORMATS, RelayContext, parse_tokatlas, relay_context, slots, slotted_candidates

_CONTEXT = "tpsdb_relay_context"  # the key of a post body that holds its record's context, not a record field


class PeerDataset(OneFileKind):
    name = "peer_dataset"

    def __init__(self, spec):
        super().__init__(spec)
        self._threads: dict | None = None  # the source files beside this one, read once per run
        self._contexts: dict[str, RelayContext] = {}  # each record's place in the file read (by its slot)

    @classmethod
    def check(cls, spec) -> str | None:
        problem = super().check(spec)
        if problem:
            return problem
        fmt = spec.settings.get("format")
        if fmt not in FORMATS:
            return f"format: {fmt!r} is not one of {', '.join(FORMATS)}" if fmt else "format: missing"
        unknown = sorted(set(spec.settings) - {"fetch_url", "format"})
        return f"{unknown[0]}: not a setting of the peer_dataset kind" if unknown else None

    def read(self, pages: list[bytes], transport: str) -> tuple[list[tuple[int, Post]], Completeness]:
        try:
            records = parse_tokatlas(pages[0], self.spec.url)
        except PeerFileError as error:
            raise PageFormatError(str(error)) from None
        if not records:
            return [], Completeness.of_file("the peer's file holds no records (emptied, or a placeholder): nothing "
                                            "is withdrawn on its word")
        record_slots, _ = slots(records)
        self._contexts = dict(zip(record_slots, relay_context(records, self._sources())))
        # A post's body is its record and what the file says of it: a record whose build another record now
        # contradicts (or whose comment twin changed) reads as changed, and its figures are derived again.
        posts = [(0, Post(external_id=slot, permalink=f"{self.spec.url}#{slot}", kind="record", parent_id=None,
                          author=None, created_at=None, edited_at=None, minimized=False, deleted=False,
                          body=json.dumps({**record, _CONTEXT: self._contexts[slot].digest()}, sort_keys=True,
                                          ensure_ascii=False)))
                 for record, slot in zip(records, record_slots)]
        return posts, Completeness.of_file(None)  # the whole file parsed: every record is read

    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        record = json.loads(post.body)
        record.pop(_CONTEXT, None)
        return slotted_candidates(record, post.external_id, self._sources(), self._contexts.get(post.external_id))[0]

    def _sources(self) -> dict:
        """The source files beside this one (the threads' protocols), read once per run."""
        if self._threads is None:
            from tpsdb.kinds import load_sources  # the package's loader: imported when a run reads its records

            self._threads = load_sources(self.spec.directory) if self.spec.directory else {}
        return self._threads
