"""What a kind of source is: the interface the refresh engine calls, and the post every kind hands it.

The engine (tpsdb.refresh) knows only this interface: the lock, the per-source transaction, the archive of
snapshots, history (supersede, withdraw) and the run summaries are its own. A kind knows only itself: where its
pages are and how to ask for them (URLs, token, transport), how to turn stored pages into posts, and how to turn
one post into candidate records. docs/KINDS.md says what a new kind must implement.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from tpsdb.collect.completeness import Completeness
from tpsdb.collect.http import Cached, Fetched, FetchError, PoliteSession

if TYPE_CHECKING:
    from tpsdb.collect.extract import Candidate, PostContext
    from tpsdb.sources import SourceSpec


class KindSettingsError(ValueError):
    """A kind's settings (its environment variables) cannot be used: the run fails before anything is sent."""


@dataclass
class Post:
    """One item of a source, as read from its stored pages: the unit that is superseded or withdrawn."""

    external_id: str  # stable within the source: a comment's id; "op" for an opening post
    permalink: str  # the public address of the item (…#issuecomment-ID)
    kind: str  # "opening" | "comment" | "reply" | "file" | "record"
    parent_id: str | None
    author: str | None
    created_at: str | None  # ISO 8601 as given
    edited_at: str | None
    minimized: bool
    deleted: bool
    body: str  # what the figures are read from (HTML, Markdown, a file's text): its sha256 tells edits apart


class Archive(ABC):
    """What the engine offers a kind while it fetches: every response is handed to `on_response` (archived as a
    snapshot before anything reads it); `cached` gives the last good run's copy of a page (for a conditional
    request, and to go on from after a 304)."""

    @abstractmethod
    def on_response(self, fetched: Fetched) -> None: ...

    @abstractmethod
    def cached(self, url: str) -> Cached | None: ...


class SourceKind(ABC):
    """One kind of source (`kind = "…"` in a source file). An instance serves one source file for one run."""

    name: ClassVar[str]  # the `kind` value of source files
    # The largest answer (decoded bytes) this kind accepts; None: the HTTP layer's cap (TPSDB_HTTP_MAX_BYTES). A
    # kind passes it to `http.get(…, max_bytes=…)`.
    max_answer_bytes: ClassVar[int | None] = None

    def __init__(self, spec: SourceSpec):
        self.spec = spec
        self.secrets: list[str] = []  # what must never appear in a run's error message (a token)

    @classmethod
    def check(cls, spec: SourceSpec) -> str | None:
        """What is wrong with a source file of this kind (`url: not a …`), or None. No environment is read."""
        return None

    @abstractmethod
    def prepare(self) -> str:
        """Read the kind's settings (environment variables) for a refresh and return the transport this run uses
        (stored with the run: `read` gets it back, also at reparse). Raises KindSettingsError."""

    @abstractmethod
    def fetch(self, http: PoliteSession, archive: Archive, transport: str) -> None:
        """Walk the source's pages, conditionally where the archive has a copy, handing every response to
        `archive.on_response` in page order. Raises FetchError (or PageFormatError) on a fault."""

    def canonical(self, url: str) -> str:
        """The public address a fetched URL stands for (the same whatever server answered): the archive's key."""
        return url

    def page_key(self, fetched: Fetched) -> str:
        """A response's identity in the archive (default: its canonical URL)."""
        return self.canonical(fetched.url)

    @abstractmethod
    def read(self, pages: list[bytes], transport: str) -> tuple[list[tuple[int, Post]], Completeness]:
        """The posts of one run's stored pages, each with the index of the page it came from, and how the read
        compares with the counts the source states. Pure: no network, no database (reparse calls it too)."""

    @abstractmethod
    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        """The candidate records of one post (what the validator then accepts or rejects)."""


class OneFileKind(SourceKind):
    """A kind whose source is one file: `url` its public address, its bytes at `fetch_url` (default `url`),
    fetched conditionally over plain HTTP. A subclass checks its own further settings after `check`."""

    @classmethod
    def check(cls, spec: SourceSpec) -> str | None:
        for key in ("url", "fetch_url"):
            value = spec.url if key == "url" else spec.settings.get(key, spec.url)
            if not isinstance(value, str) or not value.startswith(("https://", "http://")):
                return f"{key}: not an http(s) URL"
        return None

    @property
    def fetch_url(self) -> str:
        return self.spec.settings.get("fetch_url", self.spec.url)

    def prepare(self) -> str:
        return "http"

    def fetch(self, http: PoliteSession, archive: Archive, transport: str) -> None:
        cached = archive.cached(self.fetch_url)
        fetched = http.get(self.fetch_url, etag=cached and cached.etag, last_modified=cached and cached.last_modified,
                           max_bytes=self.max_answer_bytes)
        archive.on_response(fetched)
        # A file is its 200 answer: 204 (no content), 206 (a part of it) and the like are not the file.
        if fetched.status not in (200, 304):
            raise FetchError(fetched.url, f"HTTP {fetched.status} is not the whole file (expected 200)", 1,
                             fetched.status)


Factory = Callable[["SourceSpec"], SourceKind]
