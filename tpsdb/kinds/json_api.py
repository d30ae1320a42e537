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
elsewhere; the records still cite `url`); `seed` (the stored captures of the API's answers the offline seed build
reads, each with the date it was captured).
"""

from __future__ import annotations

from urllib.parse import quote, urlencode, urlsplit

from tpsdb.collect.completeness import Completeness, Count
from tpsdb.collect.extract import Candidate, PostContext
from tpsdb.collect.github import PageFormatError
from tpsdb.collect.http import PoliteSession
from tpsdb.kinds.base import Archive, Post, SourceKind
from tpsdb.readers import FileContext, reader

SETTINGS = {"format", "queries", "query", "fetch_url", "seed"}


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
        return f"{unknown[0]}: not a setting of the json_api kind" if unknown else None

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

    # ------------------------------------------------------------------------------------------------ read
    def read(self, pages: list[bytes], transport: str) -> tuple[list[tuple[int, Post]], Completeness]:
        queries = self._queries()
        posts = []
        for index, (page, value) in enumerate(zip(pages, queries)):
            permalink = self._address(self.spec.url, value)
            try:
                text = page.decode("utf-8-sig")
                found = self._reader().read(page, self._file(permalink, None))
            except (UnicodeDecodeError, ValueError) as error:
                raise PageFormatError(f"{permalink}: not a {self.spec.settings['format']} answer ({error})") from None
            if not found:
                raise PageFormatError(f"{permalink}: the answer holds no record (an empty answer withdraws nothing)")
            posts.append((index, Post(external_id=value or "answer", permalink=permalink, kind="file",
                                      parent_id=None, author=None, created_at=None, edited_at=None, minimized=False,
                                      deleted=False, body=text)))
        # every request answered, in order: the stated count is the number of requests
        return posts, Completeness([Count("answers", len(posts), len(queries),
                                          "a request went unanswered" if len(posts) < len(queries) else "")])

    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        return self._reader().read(post.body.encode("utf-8"), self._file(post.permalink, ctx.retrieved_at))

    def _reader(self):
        return reader(self.spec.settings["format"])

    def _file(self, url: str, retrieved_at: str | None) -> FileContext:
        return FileContext(url=url, path=urlsplit(url).path, retrieved_at=retrieved_at or "1970-01-01")
