"""Reading a GitHub issue or pull request over the REST API: the issue itself (`GET /repos/O/R/issues/N`), then its
comments (`GET /repos/O/R/issues/N/comments?per_page=100`), following each answer's `Link: <…>; rel="next"` to the
end. Every page is asked for conditionally (If-None-Match with the ETag of the last copy): a 304 costs no rate limit
and the chain goes on from the stored copy. Rate limits (X-RateLimit-Remaining/Reset, Retry-After) are the HTTP
layer's (tpsdb.collect.http).

The token goes only to the API's own origin (scheme, host, port): a next-page link elsewhere fails the read and
nothing of it is stored (requests drops the header on a redirect to another host, but a Link is a new request).
An answer that is not what the API gives (no JSON object, a comment id that is no number, a date that is none)
fails the read with a message naming the page and the field, never with a bare Python exception.

As for discussions, fetching and reading are separate: `fetch_issue_rest` only walks the pages and hands every
response to `on_response` before anything is read from it; `read_issue_rest` is a pure function of the stored bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from requests.utils import parse_header_links

from tpsdb.collect.completeness import Completeness, Count
from tpsdb.collect.github import PageFormatError
from tpsdb.collect.http import Cached, Fetched, FetchError, PoliteSession, check_same_origin

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
    """The rel="next" target of a Link header, made absolute against the URL it came with. A next link with no
    address is a FetchError (it would read the same page again)."""
    if not link_header:
        return None
    for link in parse_header_links(link_header):
        if "next" in (link.get("rel") or "").split():
            if not (link.get("url") or "").strip():
                raise FetchError(base, 'the Link header names a rel="next" page with no address', 1)
            return urljoin(base, link["url"].strip())
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
        # Every page goes with the token: only to the API's own origin, whatever a server (or the last run's
        # copy of a page) says comes next.
        check_same_origin(url, api_url, "the next page of comments (asked with the token)")
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
        except RecursionError:
            raise FetchError(url, "not a JSON answer GitHub gives: nested too deeply", 1) from None

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
        if url in seen:
            raise FetchError(url, "pagination loops back to a page already read", 0)
        if len(seen) >= MAX_PAGES:
            raise FetchError(url, f"pagination does not end: more than {MAX_PAGES} pages of comments", 0)
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
        if following and isinstance(stated, int) and stated >= 0 and read > stated + PER_PAGE:
            # Comments added while the pages are read may pass the count a little; a chain that goes on far past
            # it is no thread's pagination (and would only end in an incomplete read).
            raise FetchError(following, f"pagination goes on past the issue's count: {read} comments read, the "
                                        f"issue states {stated}", 0)
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
        raise PageFormatError(f"{where}: no pages")
    issue = _json(pages[0], f"{where}: the issue answer")
    if not isinstance(issue, dict):
        raise PageFormatError(f"{where}: the first page is not the issue (not a JSON object)")
    names = {"owner": re.escape(owner), "repo": re.escape(repo), "number": number}
    issue_link = re.compile(_ISSUE_PATH.format(**names) + "/?")
    comment_link = re.compile(_ISSUE_PATH.format(**names) + r"#issuecomment-(\d+)")
    base = source_url.rstrip("/")

    opening_url = issue.get("html_url")
    posts: dict[str, tuple[int, IssuePost]] = {"op": (0, IssuePost(
        external_id="op", permalink=opening_url if isinstance(opening_url, str) and issue_link.fullmatch(opening_url)
        else base, kind="opening", author=_login(issue), created_at=_when(issue, "created_at", f"{where}: the issue"),
        edited_at=None, body=_text(issue, "body", f"{where}: the issue")))}
    for index, page in enumerate(pages[1:], start=1):
        comments = _json(page, f"{where}: comment page {index}")
        if not isinstance(comments, list):
            raise PageFormatError(f"{where}: comment page {index} is not a list of comments")
        for position, comment in enumerate(comments, start=1):
            what = f"{where}: comment page {index}, item {position}"
            if not isinstance(comment, dict):
                raise PageFormatError(f"{what}: not a JSON object ({_shown(comment)})")
            comment_id = comment.get("id")
            if isinstance(comment_id, bool) or not isinstance(comment_id, int) or comment_id <= 0:
                raise PageFormatError(f"{what}: id: not a comment id (a positive whole number): {_shown(comment_id)}")
            external_id = str(comment_id)
            what = f"{where}: comment {external_id}"
            html_url = comment.get("html_url")
            match = comment_link.fullmatch(html_url) if isinstance(html_url, str) else None
            created, updated = _when(comment, "created_at", what), _when(comment, "updated_at", what)
            posts.setdefault(external_id, (index, IssuePost(
                external_id=external_id,
                permalink=html_url if match and match.group(1) == external_id else f"{base}#issuecomment-{external_id}",
                kind="comment", author=_login(comment), created_at=created,
                edited_at=updated if updated and updated != created else None, body=_text(comment, "body", what))))
    read = sum(post.kind == "comment" for _, post in posts.values())
    stated = issue.get("comments")
    hint = ("the comment pages hold fewer comments than the issue's `comments` count (a Link header missing?)"
            if isinstance(stated, int) and read < stated
            else "the comment pages hold more comments than the issue's `comments` count (a stale issue answer)")
    return list(posts.values()), Completeness([
        Count("comments", read, stated if isinstance(stated, int) and not isinstance(stated, bool) else None, hint)])


def _json(page: bytes, what: str):
    try:
        return json.loads(page)
    except ValueError as exc:
        raise PageFormatError(f"{what}: not JSON ({exc})") from None
    except RecursionError:
        raise PageFormatError(f"{what}: not JSON GitHub gives (nested too deeply)") from None


def _shown(value) -> str:
    text = json.dumps(value) if not isinstance(value, (bytes, bytearray)) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _text(item: dict, field: str, what: str) -> str:
    value = item.get(field)
    if value is not None and not isinstance(value, str):
        raise PageFormatError(f"{what}: {field}: not text ({_shown(value)})")
    return value or ""


def _when(item: dict, field: str, what: str) -> str | None:
    """An ISO 8601 date as GitHub writes it (2025-01-01T00:00:00Z), or None when absent."""
    value = item.get(field)
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise ValueError
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise PageFormatError(f"{what}: {field}: not a date ({_shown(value)})") from None
    return value


def _login(item: dict) -> str | None:
    user = item.get("user")
    login = user.get("login") if isinstance(user, dict) else None  # null user: a deleted account ("ghost")
    return login if isinstance(login, str) else None
