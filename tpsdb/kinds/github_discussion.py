"""`github_discussion`: a GitHub discussion (opening post, comments, replies), from its HTML pages, or from the
GraphQL API when a token is set (tpsdb.collect.github does the reading)."""

from __future__ import annotations

import hashlib
import re

from tpsdb.collect import github
from tpsdb.collect.completeness import Completeness
from tpsdb.collect.extract import Candidate, PostContext, extract_post
from tpsdb.collect.http import Fetched, PoliteSession
from tpsdb.kinds import _github
from tpsdb.kinds.base import Archive, Post

# The canonical address of GraphQL answers, whoever served them: all pages share it, the query tells them apart.
GITHUB_GRAPHQL = _github.GITHUB_API + "/graphql"


class GitHubDiscussion(_github.GitHubKind):
    name = "github_discussion"
    URL = re.compile(r"^https://github\.com/([^/]+)/([^/]+)/discussions/(\d+)/?$")
    ADDRESS = "discussions/N"

    def prepare(self) -> str:
        self._web = _github.web_url()
        return "graphql" if self.read_token() else "html"

    def canonical(self, url: str) -> str:
        return github.canonical_url(url, _github.web_url())

    def page_key(self, fetched: Fetched) -> str:
        if fetched.request_body:  # GraphQL: one URL for every page
            return f"{GITHUB_GRAPHQL}#{hashlib.sha256(fetched.request_body).hexdigest()[:16]}"
        return self.canonical(fetched.url)

    def fetch(self, http: PoliteSession, archive: Archive, transport: str) -> None:
        if transport == "graphql":
            github.fetch_discussion_graphql(http, _github.graphql_url(), self._token, *self.thread,
                                            on_response=archive.on_response)
        else:
            github.fetch_discussion_html(http, self._web, *self.thread, on_response=archive.on_response,
                                         previous=archive.cached)

    def read(self, pages: list[bytes], transport: str) -> tuple[list[tuple[int, Post]], Completeness]:
        read = github.read_graphql_thread if transport == "graphql" else github.read_html_thread
        posts, completeness = read(pages, *self.thread)
        return [(index, _post(p)) for index, p in posts], completeness

    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        return extract_post(post.body, ctx)


def _post(p: github.Post) -> Post:
    return Post(external_id=p.external_id, permalink=p.permalink, kind=p.kind, parent_id=p.parent_id,
                author=p.author, created_at=p.created_at, edited_at=p.edited_at, minimized=p.minimized,
                deleted=p.deleted, body=p.body_html)
