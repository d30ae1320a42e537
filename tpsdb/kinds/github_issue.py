"""`github_issue`: a GitHub issue or pull request (they share GitHub's issues API): the issue's own body (the
opening post) and its comments, read over the REST API (tpsdb.collect.github_rest). Figures are read from the
Markdown as written. Settings: TPSDB_GITHUB_API_URL (default https://api.github.com), the token of
TPSDB_GITHUB_TOKEN or GITHUB_TOKEN (optional: without one GitHub allows 60 requests an hour)."""

from __future__ import annotations

import re

from tpsdb.collect import github_rest
from tpsdb.collect.completeness import Completeness
from tpsdb.collect.extract import Candidate, PostContext, extract_text
from tpsdb.collect.http import PoliteSession
from tpsdb.kinds import _github
from tpsdb.kinds.base import Archive, Post


class GitHubIssue(_github.GitHubKind):
    name = "github_issue"
    URL = re.compile(r"^https://github\.com/([^/]+)/([^/]+)/(?:pull|issues)/(\d+)/?$")
    ADDRESS = "pull/N (or issues/N)"

    def prepare(self) -> str:
        self.read_token()
        return "rest"

    def canonical(self, url: str) -> str:
        return _github.rebase(url, _github.api_url(), _github.GITHUB_API)

    def fetch(self, http: PoliteSession, archive: Archive, transport: str) -> None:
        github_rest.fetch_issue_rest(http, _github.api_url(), self._token, *self.thread,
                                     on_response=archive.on_response, previous=archive.cached,
                                     public_to_served=lambda url: _github.rebase(url, _github.GITHUB_API,
                                                                                 _github.api_url()))

    def read(self, pages: list[bytes], transport: str) -> tuple[list[tuple[int, Post]], Completeness]:
        posts, completeness = github_rest.read_issue_rest(pages, *self.thread, self.spec.url)
        return [(index, Post(external_id=p.external_id, permalink=p.permalink, kind=p.kind, parent_id=None,
                             author=p.author, created_at=p.created_at, edited_at=p.edited_at, minimized=False,
                             deleted=False, body=p.body)) for index, p in posts], completeness

    def candidates(self, post: Post, ctx: PostContext) -> list[Candidate]:
        return extract_text(post.body, ctx)
