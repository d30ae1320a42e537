"""Reading a GitHub discussion: its opening post, comments and replies, from the HTML pages or the GraphQL API.

Fetching and parsing are separate on purpose. `fetch_discussion_*` only walk the pagination chain and hand
every response to `on_response` before anything is read from it (the caller archives it as a snapshot);
`posts_from_*` are pure functions of those stored bytes, so a thread can be re-read later without the network.
Both transports give the same posts; permalinks are always the canonical https://github.com/... addresses,
whatever server (a mirror, a test server) the bytes came from.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from bs4.formatter import HTMLFormatter

from tpsdb.collect.http import Cached, Fetched, FetchError, PoliteSession

__all__ = [
    "Cached", "PageFormatError", "Post", "canonical_url", "discussion_url", "fetch_discussion_graphql",
    "fetch_discussion_html", "next_page_url", "normalize_body_html", "posts_from_graphql", "posts_from_html",
]

GITHUB = "https://github.com"
MAX_PAGES = 1000  # a pagination chain longer than this is a loop, not a thread


class PageFormatError(ValueError):
    """The bytes are not the discussion page (or API answer) they should be: a bad page, never data."""


@dataclass
class Post:
    external_id: str  # comment/reply database id ("7644774"); the opening post: "op"
    permalink: str  # canonical https://github.com/OWNER/REPO/discussions/N[#discussioncomment-ID]
    kind: str  # "opening" | "comment" | "reply"
    parent_id: str | None  # for replies: the parent comment's id
    author: str | None
    created_at: str | None  # ISO 8601 as given
    edited: bool
    edited_at: str | None  # only GraphQL gives it; the HTML page only shows an "edited" marker
    minimized: bool
    deleted: bool
    body_html: str  # the post's own body, without its nested replies; "" when deleted


def discussion_url(base_url: str, owner: str, repo: str, number: int) -> str:
    return f"{base_url.rstrip('/')}/{owner}/{repo}/discussions/{number}"


def canonical_url(fetched_url: str, base_url: str) -> str:
    """The public github.com address of a page fetched from base_url (a mirror or a test server)."""
    base = base_url.rstrip("/")
    return GITHUB + fetched_url[len(base):] if fetched_url.startswith(base) else fetched_url


def _permalink(owner: str, repo: str, number: int, external_id: str) -> str:
    url = discussion_url(GITHUB, owner, repo, number)
    return url if external_id == "op" else f"{url}#discussioncomment-{external_id}"


# --- HTML transport ---------------------------------------------------------------------------------------

def fetch_discussion_html(
    session: PoliteSession,
    base_url: str,
    owner: str,
    repo: str,
    number: int,
    *,
    on_response: Callable[[Fetched], None],
    previous: Callable[[str], Cached | None] = lambda url: None,
) -> list[Fetched]:
    """GET the discussion page, then every "Load more" page, each conditionally when a snapshot exists.

    On 304 the chain goes on from the cached body (only its next-page link is read).
    """
    pages: list[Fetched] = []
    url: str | None = discussion_url(base_url, owner, repo, number)
    seen: set[str] = set()
    while url:
        if url in seen or len(pages) >= MAX_PAGES:
            raise FetchError(url, "pagination loops back to a page already read", 0)
        seen.add(url)
        cached = previous(url)
        fetched = session.get(url, etag=cached and cached.etag, last_modified=cached and cached.last_modified)
        on_response(fetched)
        pages.append(fetched)
        if fetched.status == 304:
            if cached is None:
                raise FetchError(url, "304 Not Modified for a page never fetched", 1, 304)
            body = cached.body
        else:
            body = fetched.body
        url = next_page_url(body, base_url)
    return pages


_TEMPLATE = re.compile(rb"<template\b.*?</template\s*>", re.S | re.I)
# The comments' "Load more" form; replies' own pagination (.../comments/ID/threads) is a different path.
_LOAD_MORE = re.compile(rb"""<form\b[^>]*?\baction=["']([^"']*/discussions/\d+/pages\?[^"']*)["']""", re.I)


def next_page_url(page: bytes, base_url: str) -> str | None:
    """The "Load more" form's target (/OWNER/REPO/discussions/N/pages?after=CURSOR...), made absolute."""
    match = _LOAD_MORE.search(_TEMPLATE.sub(b"", page))
    if not match:
        return None
    return urljoin(base_url.rstrip("/") + "/", html.unescape(match.group(1).decode()))


_POST_ID = re.compile(r"^discussion(comment)?-(\d+)$")  # the opening post / a comment or reply
_REPLIES_BLOCK = re.compile(r"^child-comments-discussioncomment-(\d+)$")


class _AsServed(HTMLFormatter):
    """Serialize a body as GitHub wrote it: attributes in their order (bs4 sorts them by default)."""

    def __init__(self):
        super().__init__(entity_substitution=HTMLFormatter.REGISTRY["minimal"].entity_substitution,
                         void_element_close_prefix="")

    def attributes(self, tag: Tag):
        return list(tag.attrs.items())


_AS_SERVED = _AsServed()


def normalize_body_html(fragment: str) -> str:
    """One serialization for a body, whichever transport served it, so that its hash only changes on an edit.

    (Parsing lower-cases attribute names and re-escapes text; GraphQL's bodyHTML and the page's td.comment-body
    differ in such details only.)
    """
    body = BeautifulSoup(f"<body>{fragment}</body>", "lxml").body
    return body.decode_contents(formatter=_AS_SERVED).strip() if body else ""


def posts_from_html(pages: list[bytes], owner: str, repo: str, number: int) -> list[Post]:
    """Every post of the thread: page 1 is the full page, the rest are the "Load more" fragments."""
    posts: dict[str, Post] = {}
    for index, page in enumerate(pages):
        for post in posts_from_html_page(page, owner, repo, number, first=index == 0):
            posts.setdefault(post.external_id, post)  # pages may overlap: the first reading wins
    return list(posts.values())


def posts_from_html_page(page: bytes, owner: str, repo: str, number: int, *, first: bool) -> list[Post]:
    """The posts of one page; the first page must hold the opening post."""
    soup = BeautifulSoup(page, "lxml")
    for template in soup.find_all("template"):  # client-side templates: {{placeholders}}, not data
        template.decompose()
    found = [_post_from_element(el, owner, repo, number) for el in soup.find_all(id=_POST_ID)]
    if first and not any(post.kind == "opening" for post in found):
        raise PageFormatError(f"{owner}/{repo}#{number}: page 1 has no opening post")
    return found


def _post_from_element(el: Tag, owner: str, repo: str, number: int) -> Post:
    is_comment, database_id = _POST_ID.match(el["id"]).groups()
    external_id = database_id if is_comment else "op"
    replies_block = el.find_parent(id=_REPLIES_BLOCK)
    parent_id = _REPLIES_BLOCK.match(replies_block["id"]).group(1) if replies_block else None
    kind = "opening" if not is_comment else "reply" if parent_id else "comment"

    body = _own(el, "td.comment-body")
    author = _own(el, ".Truncate-text") or _own(el, "a.author")
    permalink_anchor = el.find(id=f"{el['id']}-permalink")
    time_tag = permalink_anchor.find("relative-time") if permalink_anchor else None
    edit_history = _own(el, ".js-comment-edit-history")
    return Post(
        external_id=external_id,
        permalink=_permalink(owner, repo, number, external_id),
        kind=kind,
        parent_id=parent_id,
        author=author.get_text(strip=True) if author else None,
        created_at=time_tag.get("datetime") if time_tag else None,
        edited=bool(edit_history and "edited" in edit_history.get_text()),
        edited_at=None,
        minimized=_own(el, ".minimized-comment") is not None,
        deleted=body is None,  # a deleted comment keeps its header but has no body
        body_html=normalize_body_html(body.decode_contents(formatter=_AS_SERVED)) if body else "",
    )


def _own(el: Tag, selector: str) -> Tag | None:
    """The first match that belongs to this post itself, not to a reply nested inside its element."""
    for tag in el.select(selector):
        if tag.find_parent(id=_POST_ID) is el:
            return tag
    return None


# --- GraphQL transport ------------------------------------------------------------------------------------

_FIELDS = "databaseId url author { login } createdAt lastEditedAt body bodyHTML"
DISCUSSION_QUERY = f"""
query($owner: String!, $name: String!, $number: Int!, $after: String) {{
  repository(owner: $owner, name: $name) {{
    discussion(number: $number) {{
      {_FIELDS}
      comments(first: 100, after: $after) {{
        pageInfo {{ hasNextPage endCursor }}
        nodes {{
          {_FIELDS} isMinimized deletedAt
          replies(first: 100) {{
            pageInfo {{ hasNextPage endCursor }}
            nodes {{ {_FIELDS} isMinimized deletedAt }}
          }}
        }}
      }}
    }}
  }}
  rateLimit {{ cost remaining resetAt }}
}}
""".strip()


def fetch_discussion_graphql(
    session: PoliteSession,
    api_url: str,
    token: str,
    owner: str,
    repo: str,
    number: int,
    *,
    on_response: Callable[[Fetched], None],
    previous: Callable[[str], Cached | None] = lambda url: None,
) -> list[Fetched]:
    """POST the discussion query, following comments' endCursor until hasNextPage is false.

    `previous` is accepted for symmetry with the HTML transport but not used: GitHub's GraphQL endpoint has
    no conditional requests, and all pages share one URL (Fetched.request_body tells them apart).
    """
    pages: list[Fetched] = []
    after: str | None = None
    while True:
        payload = {"query": DISCUSSION_QUERY, "variables": {"owner": owner, "name": repo, "number": number,
                                                            "after": after}}
        fetched = session.post_json(api_url, payload, headers={"Authorization": f"bearer {token}"})
        on_response(fetched)
        pages.append(fetched)
        if len(pages) >= MAX_PAGES:
            raise FetchError(api_url, "pagination does not end", len(pages), method="POST")
        try:
            comments = _discussion(json.loads(fetched.body), owner, repo, number)["comments"]
        except (ValueError, KeyError, TypeError) as exc:
            raise FetchError(api_url, f"bad GraphQL answer for {owner}/{repo}#{number}: {exc}", 1,
                             method="POST") from None
        if not comments["pageInfo"]["hasNextPage"]:
            return pages
        after = comments["pageInfo"]["endCursor"]


def _discussion(answer: dict, owner: str, repo: str, number: int) -> dict:
    if answer.get("errors"):
        messages = "; ".join(f"{e.get('type', 'ERROR')}: {e.get('message', '')}" for e in answer["errors"])
        raise PageFormatError(f"{owner}/{repo}#{number}: GraphQL errors: {messages}")
    discussion = ((answer.get("data") or {}).get("repository") or {}).get("discussion")
    if not discussion:
        raise PageFormatError(f"{owner}/{repo}#{number}: no discussion in the GraphQL answer")
    return discussion


def posts_from_graphql(pages: list[bytes], owner: str, repo: str, number: int) -> list[Post]:
    """Every post of the thread from the GraphQL answers, in the order the HTML pages show them."""
    posts: dict[str, Post] = {}
    for index, page in enumerate(pages):
        discussion = _discussion(json.loads(page), owner, repo, number)
        if index == 0:
            posts["op"] = _post_from_node(discussion, owner, repo, number, "opening", None)
        for comment in discussion["comments"]["nodes"]:
            post = _post_from_node(comment, owner, repo, number, "comment", None)
            posts.setdefault(post.external_id, post)
            replies = comment.get("replies") or {"nodes": [], "pageInfo": {}}
            if replies["pageInfo"].get("hasNextPage"):
                # Not followed (more than 100 replies to one comment); fail loudly rather than drop replies.
                raise PageFormatError(f"{post.permalink}: more than {len(replies['nodes'])} replies, not all read")
            for reply in replies["nodes"]:
                reply_post = _post_from_node(reply, owner, repo, number, "reply", post.external_id)
                posts.setdefault(reply_post.external_id, reply_post)
    return list(posts.values())


def _post_from_node(node: dict, owner: str, repo: str, number: int, kind: str, parent_id: str | None) -> Post:
    external_id = "op" if kind == "opening" else str(node["databaseId"])
    deleted = bool(node.get("deletedAt"))
    return Post(
        external_id=external_id,
        permalink=_permalink(owner, repo, number, external_id),
        kind=kind,
        parent_id=parent_id,
        author=(node.get("author") or {}).get("login"),  # null author: a deleted account ("ghost")
        created_at=node.get("createdAt"),
        edited=node.get("lastEditedAt") is not None,
        edited_at=node.get("lastEditedAt"),
        minimized=bool(node.get("isMinimized")),
        deleted=deleted,
        body_html="" if deleted else normalize_body_html(node.get("bodyHTML") or ""),
    )
