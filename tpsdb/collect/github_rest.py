"""Reading a GitHub issue or pull request over the REST API: the issue itself (`GET /repos/O/R/issues/N`), then its
comments (`GET /repos/O/R/issues/N/comments?per_page=100`), following each answer's `Link: <…>; rel="next"` to the
end. Every page is asked for conditionally (If-None-Match with the ETag of the last copy): a 304 costs no rate limit
and the chain goes on from the stored copy. Rate limits (X-RateLimit-Remaining/Reset, Retry-After) are the HTTP
layer's (tpsdb.collect.http).

As for discussions, fetching and reading are separate: `fetch_issue_rest` only walks the pages and hands every
response to `on_response` before anything is read from it; `read_issue_rest` is a pure function of the stored bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from requests.utils import parse_header_links

from tpsdb.collect.completeness import Completeness, Count
from tpsdb.collect.http import Cached, Fetched, FetchError, PoliteSession

GITHUB = "https://github.com"
GITHUB_API = "https://api.github.com"
PER_PAGE = 100  # GitHub's largest page
MAX_PAGES = 1000  # a pagination chain longer than this is a loop, not a thread
# GitHub's documented media type and API version for JSON answers whose `body` is the Markdown as written.
HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}


@dataclass
class IssuePost:
    external_id: str  # the comment's id; the issue itself: "op"
    permalink: str  # https://github.com/O/R/pull/N#issuecomment-ID (the issue itself: the issue's address)
    kind: str  # "opening" | "comment"
    author: str | None
    created_at: str | None
    edited_at: str | None  # updated_at, when it differs from created_at (comments only)
    body: str  # Markdown


def issue_api_url(api_url: str, owner: str, repo: str, number: int) -> str:
    return f"{api_url.rstrip('/')}/repos/{owner}/{repo}/issues/{number}"


def next_link(link_header: str | None, base: str) -> str | None:
    """The rel="next" target of a Link header, made absolute against the URL it came with."""
    if not link_header:
        return None
    for link in parse_header_links(link_header):
        if "next" in (link.get("rel") or "").split():
            return urljoin(base, link["url"])
    return None


def _page_after(url: str) -> str:
    """The same list URL one page further (`page=N+1`)."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query["page"] = str(int(query.get("page") or 1) + 1)
    return urlunsplit(parts._replace(query=urlencode(query)))


def fetch_issue_rest(session: PoliteSession, api_url: str, token: str | None, owner: str, repo: str, number: int,
                     *, on_response: Callable[[Fetched], None],
                     previous: Callable[[str], Cached | None] = lambda url: None,
                     public_to_served: Callable[[str], str] = lambda url: url) -> list[Fetched]:
    """GET the issue, then every page of its comments, each conditionally when a copy exists. `previous` gives the
    last copy of a URL; `public_to_served` turns a canonical address (Cached.following) into the URL to ask."""
    headers = dict(HEADERS)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    pages: list[Fetched] = []

    def get(url: str) -> tuple[Fetched, Cached | None, object]:
        cached = previous(url)
        fetched = session.get(url, etag=cached and cached.etag, last_modified=cached and cached.last_modified,
                              headers=headers)
        on_response(fetched)
        pages.append(fetched)
        if fetched.status == 304 and cached is None:
            raise FetchError(url, "304 Not Modified for a page never fetched", 1, 304)
        body = cached.body if fetched.status == 304 else fetched.body
        try:
            return fetched, cached, json.loads(body)
        except ValueError as exc:
            raise FetchError(url, f"not a JSON answer: {exc}", 1) from None

    issue_url = issue_api_url(api_url, owner, repo, number)
    _, _, issue = get(issue_url)
    if not isinstance(issue, dict) or issue.get("number") not in (number, None):
        raise FetchError(issue_url, f"not the answer for issue {owner}/{repo}#{number}", 1)
    stated = issue.get("comments")
    read = 0
    url: str | None = f"{issue_url}/comments?per_page={PER_PAGE}"
    seen: set[str] = set()
    guessed = False  # the URL was not given by a Link header: a 404 there ends the chain (the read is then short)
    while url:
        if url in seen or len(seen) >= MAX_PAGES:
            raise FetchError(url, "pagination loops back to a page already read", 0)
        seen.add(url)
        try:
            fetched, cached, comments = get(url)
        except FetchError as error:
            if guessed and error.status == 404:
                break
            raise
        if not isinstance(comments, list):
            raise FetchError(url, f"not a list of comments of {owner}/{repo}#{number}", 1)
        read += len(comments)
        following = next_link(fetched.headers.get("link"), url)
        guessed = following is None and fetched.status == 304 and isinstance(stated, int) and read < stated
        if guessed:
            # A 304 need not repeat the Link header, and the issue counts more comments than read so far: go on as
            # the last run went on from this page, or, when it ended here (comments added after a full page), one
            # page further.
            following = public_to_served(cached.following) if cached and cached.following else _page_after(url)
        url = following
    return pages


_ISSUE_PATH = r"https://github\.com/{owner}/{repo}/(?:pull|issues)/{number}"


def read_issue_rest(pages: list[bytes], owner: str, repo: str, number: int,
                    source_url: str) -> tuple[list[tuple[int, IssuePost]], Completeness]:
    """The issue (its opening post) and its comments, each with the index of the page it was read from, and how
    the read compares with the issue's `comments` count. Permalinks are the html_url GitHub gives when it is the
    public address of this issue's comment, else the source's URL with `#issuecomment-ID`."""
    where = f"{owner}/{repo}#{number}"
    if not pages:
        raise ValueError(f"{where}: no pages")
    issue = json.loads(pages[0])
    if not isinstance(issue, dict):
        raise ValueError(f"{where}: the first page is not the issue")
    names = {"owner": re.escape(owner), "repo": re.escape(repo), "number": number}
    issue_link = re.compile(_ISSUE_PATH.format(**names) + "/?")
    comment_link = re.compile(_ISSUE_PATH.format(**names) + r"#issuecomment-(\d+)")
    base = source_url.rstrip("/")

    opening_url = issue.get("html_url")
    posts: dict[str, tuple[int, IssuePost]] = {"op": (0, IssuePost(
        external_id="op", permalink=opening_url if isinstance(opening_url, str) and issue_link.fullmatch(opening_url)
        else base, kind="opening", author=_login(issue), created_at=issue.get("created_at"), edited_at=None,
        body=issue.get("body") or ""))}
    for index, page in enumerate(pages[1:], start=1):
        for comment in json.loads(page):
            external_id = str(comment["id"])
            html_url = comment.get("html_url")
            match = comment_link.fullmatch(html_url) if isinstance(html_url, str) else None
            created, updated = comment.get("created_at"), comment.get("updated_at")
            posts.setdefault(external_id, (index, IssuePost(
                external_id=external_id,
                permalink=html_url if match and match.group(1) == external_id else f"{base}#issuecomment-{external_id}",
                kind="comment", author=_login(comment), created_at=created,
                edited_at=updated if updated and updated != created else None, body=comment.get("body") or "")))
    read = sum(post.kind == "comment" for _, post in posts.values())
    stated = issue.get("comments")
    hint = ("the comment pages hold fewer comments than the issue's `comments` count (a Link header missing?)"
            if isinstance(stated, int) and read < stated
            else "the comment pages hold more comments than the issue's `comments` count (a stale issue answer)")
    return list(posts.values()), Completeness([
        Count("comments", read, stated if isinstance(stated, int) and not isinstance(stated, bool) else None, hint)])


def _login(item: dict) -> str | None:
    user = item.get("user")
    return user.get("login") if isinstance(user, dict) else None  # null user: a deleted account ("ghost")
