"""`json_api`: a public JSON API that answers benchmark records (InferenceX `GET /api/v1/benchmarks?model=…`,
localmaxxing `GET /api/benchmarks`), read by a dataset reader (tpsdb.readers, by the source file's `format`).

One request per value of `queries` (`GET {url}?{query}={value}`: InferenceX answers one model per request), or one
request when the file lists none; each asked conditionally (ETag / Last-Modified). Each answer is one post, its
permalink the public address of the request: a point that changes between two answers is superseded, a point
gone from an answer is withdrawn (the read is complete only when every request was answered whole).

An answer that is not the JSON the reader expects (truncated, an HTML error page), that holds no record, or a
request that fails (an HTTP error, after the session's retries) fails the source: nothing is stored and nothing
withdrawn. The number of answers read against the number of requests is the read's stated count.

Settings of the source file: `format` (a dataset reader's name, required); `queries` (values) and `query` (the
parameter's name, default "model"); `fetch_url` where the API answers (default `url`: a test or a mirror points it
elsewhere; the records still cite `url`); `[seed]`: stored captures of the API's answers that `tpsdb load` reads
offline through this same kind, oldest first:
    copies = [{file = "<path under the shared folder>", date = "YYYY-MM-DD" (when it was captured),
               query = "<one of queries>" (default: the first), url = "<the API address it answers>" (default: the
               query's), what = "<what the capture is>"}, …]
The copies of one query make one post (its figures: the union by slot, a point cited by the oldest capture that
holds it, at that capture's date and address), as the answers of successive days would have.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timezone
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

from tpsdb.collect.completeness import Completeness, Count
from tpsdb.collect.extract import Candidate, PostContext
from tpsdb.collect.github import PageFormatError
from tpsdb.collect.http import Fetched, PoliteSession
from tpsdb.kinds._copies import SeedError, inside, read_copy
from tpsdb.kinds.base import Archive, Post, SourceKind
from tpsdb.readers import FileContext, reader

SETTINGS = {"format", "queries", "query", "fetch_url", "seed"}
SEED = "seed"  # the transport of a load from copies (tpsdb load), as the repo_file kind names it
_COPY_KEYS = {"file", "date", "query", "url", "what"}


class JsonApi(SourceKind):
    name = "json_api"

    @classmethod
    def check(cls, spec) -> str | None:
        for key in ("url", "fetch_url"):
            value = spec.url if key == "url" else spec.settings.get(key, spec.url)
            if not isinstance(value, str) or not value.startswith(("https://", "http://")):
                return f"{key}: not an http(s) URL"
            if urlsplit(value).query:
                return f"{key}: holds a query (the queries are the `queries` setting)"
        fmt = spec.settings.get("format")
        if not isinstance(fmt, str) or not fmt:
            return "format: missing (the name of a dataset reader)"
        try:
            reader(fmt)
        except KeyError as error:
            return f"format: {error.args[0]}"
        queries = spec.settings.get("queries", [])
        if not isinstance(queries, list) or not all(isinstance(q, str) and q for q in queries):
            return "queries: not a list of non-empty strings"
        if len(set(queries)) != len(queries):
            return "queries: a value is listed twice"
        if not isinstance(spec.settings.get("query", "model"), str):
            return "query: not a string"
        unknown = sorted(set(spec.settings) - SETTINGS)
        if unknown:
            return f"{unknown[0]}: not a setting of the json_api kind"
        return _check_seed(spec.settings.get("seed"), queries or [None])

    # ----------------------------------------------------------------------------------------------- fetch
    def prepare(self) -> str:
        return "http"

    @property
    def _fetch_base(self) -> str:
        return self.spec.settings.get("fetch_url", self.spec.url)

    def _queries(self) -> list[str | None]:
        return list(self.spec.settings.get("queries", [])) or [None]

    def _address(self, base: str, value: str | None) -> str:
        if value is None:
            return base
        return f"{base}?{urlencode({self.spec.settings.get('query', 'model'): value}, quote_via=quote)}"

    def fetch(self, http: PoliteSession, archive: Archive, transport: str) -> None:
        for value in self._queries():
            url = self._address(self._fetch_base, value)
            cached = archive.cached(url)
            archive.on_response(http.get(url, etag=cached and cached.etag,
                                         last_modified=cached and cached.last_modified,
                                         headers={"Accept": "application/json"}))

    def canonical(self, url: str) -> str:
        base = self._fetch_base
        return self.spec.url + url[len(base):] if url.startswith(base) else url

    # ------------------------------------------------------------------------------------------------ seed
    def seed_responses(self, shared: Path) -> list[Fetched]:
        """The [seed] copies as the responses a refresh would have archived, oldest first. Raises SeedError."""
        copies = (self.spec.settings.get("seed") or {}).get("copies")
        if not copies:
            raise SeedError(f"{self.spec.key}: its source file has no [seed] copies")
        out = []
        for copy in copies:
            body, where = read_copy(shared, copy["file"], self.spec.key)
            captured = datetime.combine(date.fromisoformat(copy["date"]), time(), timezone.utc)
            # each capture its own archive key: two captures of one address are two snapshots
            out.append(Fetched(url=f"{self._copy_url(copy)}#captured-{copy['date']}", status=200,
                               headers={"x-tpsdb-copy": str(where)}, body=body, retrieved_at=captured))
        return out

    def _copy_url(self, copy: dict) -> str:
        return copy.get("url") or self._address(self.spec.url, copy.get("query") or self._queries()[0])

    # ------------------------------------------------------------------------------------------------ read
    def read(self, pages: list[bytes], transport: str) -> tuple[list[tuple[int, Post]], Completeness]:
        queries = self._queries()
        if transport == SEED:
            copies = (self.spec.settings.get("seed") or {}).get("copies") or []
            sources = [(copy.get("query") or queries[0], self._copy_url(copy), copy["date"]) for copy in copies]
        else:
            sources = [(value, self._address(self.spec.url, value), None) for value in queries]
        if len(pages) != len(sources):
            raise PageFormatError(f"{self.spec.key}: {len(pages)} answers for {len(sources)} requests")
        self._candidates: dict[str, list[Candidate]] = {}
        bodies: dict[str | None, list[str]] = {}
        first_page: dict[str | None, int] = {}
        for index, (page, (value, url, captured)) in enumerate(zip(pages, sources)):
            try:
                text = page.decode("utf-8-sig")
                found = self._reader().read(page, self._file(url, captured))
            except (UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
                raise PageFormatError(f"{url}: not a {self.spec.settings['format']} answer ({error})") from None
            if not found:
                raise PageFormatError(f"{url}: the answer holds no record (an empty answer withdraws nothing)")
            held = self._candidates.setdefault(value or "answer", [])
            slots = {c.slot for c in held}
            held += [c for c in found if c.slot not in slots]  # a point the oldest capture holds is cited there
            bodies.setdefault(value, []).append(text)
            first_page.setdefault(value, index)
        posts = [(first_page[value], Post(
            external_id=value or "answer", permalink=self._address(self.spec.url, value), kind="file",
            parent_id=None, author=None, created_at=None, edited_at=None, minimized=False, deleted=False,
            body="\n".join(texts))) for value, texts in bodies.items()]
        # every request answered: the stated count is the number of requests (of queries, for a load)
        return posts, Completeness([Count("answers", len(posts), len(queries) if transport != SEED else len(posts),
                                          "a request went unanswered")])

    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        out = self._candidates.get(post.external_id, [])
        for candidate in out:  # read before the run's retrieval date was known (a capture keeps its own)
            source = candidate.record["source"]
            if not source.get("retrieved_at"):
                source["retrieved_at"] = ctx.retrieved_at
        return out

    def _reader(self):
        return reader(self.spec.settings["format"])

    def _file(self, url: str, captured: str | None) -> FileContext:
        return FileContext(url=url, path=urlsplit(url).path, retrieved_at=captured or "")


_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _check_seed(seed, queries: list) -> str | None:
    if seed is None:
        return None
    if not isinstance(seed, dict) or set(seed) - {"copies"}:
        return "seed: not a table of copies"
    copies = seed.get("copies")
    if not isinstance(copies, list) or not copies:
        return "seed.copies: not a list of copies"
    for number, copy in enumerate(copies, 1):
        where = f"seed.copies[{number}]"
        if not isinstance(copy, dict):
            return f"{where}: not a table"
        if set(copy) - _COPY_KEYS:
            return f"{where}.{sorted(set(copy) - _COPY_KEYS)[0]}: not a key of a copy"
        file = copy.get("file")
        if not isinstance(file, str) or not inside(file):
            return f"{where}.file: not a path inside the shared folder"
        if not isinstance(copy.get("date"), str) or not _DAY.match(copy["date"]):
            return f"{where}.date: not a YYYY-MM-DD date"
        if "query" in copy and copy["query"] not in queries:
            return f"{where}.query: not one of the source's queries"
        url = copy.get("url")
        if url is not None and (not isinstance(url, str) or not url.startswith("https://")):
            return f"{where}.url: not an https URL"
    dates = [copy["date"] for copy in copies]
    return None if dates == sorted(dates) else "seed.copies: not oldest first"
