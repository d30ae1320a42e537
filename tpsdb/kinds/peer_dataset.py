"""`peer_dataset`: a data file another project publishes (one JSON file at a URL), each of its records relayed as
candidates naming the peer as `source.via`. One format so far, tokatlas (tpsdb.peers, `data/peers/tokatlas/`):
the records and their candidates are the importer's (`tpsdb import tokatlas`), read by the same code.

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
from tpsdb.collect.github import PageFormatError
from tpsdb.kinds.base import OneFileKind, Post

FORMATS = ("tokatlas",)  # tpsdb.peers.FORMATS, named here so that loading a source file imports no database code


class PeerDataset(OneFileKind):
    name = "peer_dataset"

    def __init__(self, spec):
        super().__init__(spec)
        self._threads: dict | None = None  # the source files beside this one, read once per run

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
        from tpsdb.peers import PeerFileError, parse_tokatlas, slots

        try:
            records = parse_tokatlas(pages[0], self.spec.url)
        except PeerFileError as error:
            raise PageFormatError(str(error)) from None
        if not records:
            return [], Completeness.of_file("the peer's file holds no records (emptied, or a placeholder): nothing "
                                            "is withdrawn on its word")
        record_slots, _ = slots(records)
        posts = [(0, Post(external_id=slot, permalink=f"{self.spec.url}#{slot}", kind="record", parent_id=None,
                          author=None, created_at=None, edited_at=None, minimized=False, deleted=False,
                          body=json.dumps(record, sort_keys=True, ensure_ascii=False)))
                 for record, slot in zip(records, record_slots)]
        return posts, Completeness.of_file(None)  # the whole file parsed: every record is read

    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        from tpsdb.peers import slotted_candidates
        from tpsdb.sources import load_sources

        if self._threads is None:
            self._threads = load_sources(self.spec.directory) if self.spec.directory else {}
        return slotted_candidates(json.loads(post.body), post.external_id, self._threads)[0]
