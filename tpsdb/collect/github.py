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

from lxml import etree

from tpsdb.collect.completeness import Completeness, Count
from tpsdb.collect.extract import body_html_of, drop_element, parse_body, parse_page
from tpsdb.collect.http import Cached, Fetched, FetchError, PoliteSession, check_same_origin
from tpsdb.errors import PageFormatError  # re-exported: the class moved to tpsdb.errors

__all__ = [
    "Cached", "PageFormatError", "Post", "canonical_url", "discussion_url", "fetch_discussion_graphql",
    "fetch_discussion_html", "next_page_url", "posts_from_graphql", "posts_from_html", "read_graphql_thread",
    "read_html_thread",
]

GITHUB = "https://github.com"
MAX_PAGES = 1000  # a pagination chain longer than this is a loop, not a thread


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

    On 304 the chain goes on from the cached body (only its next-page link is read). A "Load more" link to another
    host than base_url's fails the read: its answer would be stored as this thread's page.
    """
    pages: list[Fetched] = []
    url: str | None = discussion_url(base_url, owner, repo, number)
    seen: set[str] = set()
    while url:
        if url in seen:
            raise FetchError(url, "pagination loops back to a page already read", 0)
        if len(pages) >= MAX_PAGES:
            raise FetchError(url, f"pagination does not end: more than {MAX_PAGES} pages", 0)
        seen.add(url)
        check_same_origin(url, base_url, 'the "Load more" page')
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


# Each pattern stops at the next tag or quote ([^<>]*+, [^"']*+), so a page of many "<form" or "<template" never
# closed costs one pass, not one pass per opening (D8).
_TEMPLATE_START = re.compile(rb"<template\b", re.I)
_TEMPLATE_END = re.compile(rb"</template\s*+>", re.I)
_FORM_TAG = re.compile(rb"<form\b[^<>]*+>", re.I)
_ACTION = re.compile(rb"""\baction=(["'])([^"']*+)\1""", re.I)
# The comments' "Load more" form; replies' own pagination (.../comments/ID/threads) is a different path.
_LOAD_MORE_PATH = re.compile(rb"/discussions/\d+/pages\?")


def _without_templates(page: bytes) -> bytes:
    """The page less its client-side <template> elements (placeholders, not data)."""
    kept, position = [], 0
    while (start := _TEMPLATE_START.search(page, position)) is not None:
        end = _TEMPLATE_END.search(page, start.end())
        if end is None:  # never closed: nothing after it is a template to drop
            break
        kept.append(page[position:start.start()])
        position = end.end()
    kept.append(page[position:])
    return b"".join(kept)


def next_page_url(page: bytes, base_url: str) -> str | None:
    """The "Load more" form's target (/OWNER/REPO/discussions/N/pages?after=CURSOR...), made absolute."""
    for form in _FORM_TAG.finditer(_without_templates(page)):
        action = _ACTION.search(form.group())
        if action and _LOAD_MORE_PATH.search(action.group(2)):
            return urljoin(base_url.rstrip("/") + "/", html.unescape(action.group(2).decode()))
    return None


_POST_ID = re.compile(r"^discussion(comment)?-(\d+)$")  # the opening post / a comment or reply
_REPLIES_BLOCK = re.compile(r"^child-comments-discussioncomment-(\d+)$")

_TEMPLATES = etree.XPath("//template")
# The posts and their permalink anchors, by their ids (one XPath on attribute values: no element is tested).
_POST_IDS = etree.XPath("//@id[starts-with(., 'discussion')]")
# class token -> (the tag it must have, or None; what it is to the post): td.comment-body, .Truncate-text, ...
_HOOKS = {"comment-body": ("td", "body"), "js-comment-edit-history": (None, "edit_history"),
          "minimized-comment": (None, "minimized"), "Truncate-text": (None, "truncate"), "author": ("a", "author")}


def posts_from_html(pages: list[bytes], owner: str, repo: str, number: int) -> list[Post]:
    """Every post of the thread: page 1 is the full page, the rest are the "Load more" fragments."""
    return [post for _, post in read_html_thread(pages, owner, repo, number)[0]]


def read_html_thread(pages: list[bytes], owner: str, repo: str,
                     number: int) -> tuple[list[tuple[int, Post]], Completeness]:
    """Every post of the thread with the index of the page it was read from, and how the read compares with
    the counts page 1 states ("21 comments · 2 replies")."""
    posts: dict[str, tuple[int, Post]] = {}
    stated: tuple[int | None, int | None] = (None, None)
    for index, page in enumerate(pages):
        found, counts = _html_page(page, owner, repo, number, first=index == 0)
        stated = counts if index == 0 else stated
        for post in found:
            posts.setdefault(post.external_id, (index, post))  # pages may overlap: the first reading wins
    read = list(posts.values())
    comments = sum(post.kind == "comment" for _, post in read)
    replies = sum(post.kind == "reply" for _, post in read)
    return read, Completeness([
        Count("comments", comments, stated[0],
              f'the page\'s "Load more" form was not found after page {len(pages)}' if comments < (stated[0] or 0)
              else "the page shows more comments than it states (a stale or changed page)"),
        Count("replies", replies, stated[1],
              "replies behind a comment's own \"Load more\" are not read" if replies < (stated[1] or 0)
              else "the page shows more replies than it states (a stale or changed page)"),
    ])


def posts_from_html_page(page: bytes, owner: str, repo: str, number: int, *, first: bool) -> list[Post]:
    """The posts of one page; the first page must hold the opening post."""
    return _html_page(page, owner, repo, number, first=first)[0]


def _html_page(page: bytes, owner: str, repo: str, number: int,
               *, first: bool) -> tuple[list[Post], tuple[int | None, int | None]]:
    """The posts of one page, and on the first page the (comments, replies) counts it states."""
    root = parse_page(page)
    found, counts = [], (None, None)
    if root is not None:
        for template in _TEMPLATES(root):  # client-side templates: {{placeholders}}, not data
            drop_element(template)
        ids = _POST_IDS(root)  # one pass over the page's ids serves both the posts and the count header
        found = _read_posts(ids, owner, repo, number)
        if first:
            counts = _stated_counts(ids)
    if first and not any(post.kind == "opening" for post in found):
        raise PageFormatError(f"{owner}/{repo}#{number}: page 1 has no opening post")
    return found, counts


_COUNT_HEADER = "discussion-comment-count"  # the header's id (one of _POST_IDS' answers: it starts with "discussion")
# "1 comment", "1,234 comments", "2 replies"; an abbreviated "1.2k" is no exact count, so it states nothing.
_STATED = {what: re.compile(rf"(?<![\w.,])(\d{{1,3}}(?:[,\u202f\u00a0 ]\d{{3}})*|\d+)\s+{what}\b", re.I)
           for what in ("comments?", "repl(?:y|ies)")}


def _stated_counts(ids: list) -> tuple[int | None, int | None]:
    """(comments, replies) as the page's count header states them (h2#discussion-comment-count:
    "21 comments · 2 replies"); None for a count it does not state. `ids`: the page's _POST_IDS, in document order
    (the first element with the header's id is the header)."""
    header = next((value.getparent() for value in ids if value == _COUNT_HEADER), None)
    if header is None:
        return None, None
    text = " ".join(header.itertext())
    found = [pattern.search(text) for pattern in _STATED.values()]
    return tuple(int(re.sub(r"\D", "", m.group(1))) if m else None for m in found)


class _Nearest:
    """The nearest ancestor of an element that passes a test, as the test's answer (None: no such ancestor).

    Remembered for every element passed on the way up: the posts of a page share most of their ancestors, so
    each step of the page's tree is climbed about once, not once per question.
    """

    def __init__(self, test: Callable):
        self.test = test
        self.known: dict = {}  # element -> the answer for the element itself or its nearest ancestor

    def __call__(self, el):
        known, test, path = self.known, self.test, []
        found = None
        for ancestor in el.iterancestors():
            if ancestor in known:
                found = known[ancestor]
                break
            found = test(ancestor)
            if found is not None:
                known[ancestor] = found
                break
            path.append(ancestor)
        for ancestor in path:
            known[ancestor] = found
        return found


def _replies_block(el) -> str | None:
    block = _REPLIES_BLOCK.match(el.get("id") or "")
    return block.group(1) if block else None


def _read_posts(ids: list, owner: str, repo: str, number: int) -> list[Post]:
    """The posts of a page from its _POST_IDS (the id attributes starting with "discussion", in document order)."""
    posts: dict = {}  # post element -> its own hooks ({"body": td, ...}: the first of each), in document order
    anchors: dict = {}  # "<post element id>-permalink" -> the elements with that id, in document order
    for value in ids:
        if _POST_ID.match(value):
            posts[value.getparent()] = {}
        elif value.endswith("-permalink"):
            anchors.setdefault(str(value), []).append(value.getparent())
    replies_block = _Nearest(_replies_block)
    found = []
    for el, own in posts.items():
        _own_hooks(el, own, posts)
        anchor = next((a for a in anchors.get(f"{el.get('id')}-permalink", ())  # the first inside the post
                       if any(above is el for above in a.iterancestors())), None)
        found.append(_post_from_element(el, own, anchor, replies_block(el), owner, repo, number))
    return found


def _own_hooks(post, own: dict, posts: dict) -> None:
    """The hooks the post element holds itself, in document order, the first of each kind: what is inside a reply
    nested in it is the reply's. Neither replies nor the body (the author's own HTML, whose classes GitHub
    strips) are searched: that leaves the post's header and frame, a few dozen elements."""
    walk = etree.iterwalk(post, events=("start",))  # in document order
    next(walk)  # the post element itself
    for _, el in walk:
        if el in posts:
            walk.skip_subtree()  # a reply: its hooks are its own
            continue
        classes = el.get("class")
        if classes and ("comment" in classes or "Truncate" in classes or "author" in classes):
            for token in classes.split():
                hook = _HOOKS.get(token)
                if hook is not None and (hook[0] is None or el.tag == hook[0]):
                    own.setdefault(hook[1], el)
            if own.get("body") is el:
                walk.skip_subtree()


def _post_from_element(el, own: dict, anchor, parent_id: str | None, owner: str, repo: str, number: int) -> Post:
    is_comment, database_id = _POST_ID.match(el.get("id")).groups()
    external_id = database_id if is_comment else "op"
    kind = "opening" if not is_comment else "reply" if parent_id else "comment"
    time_tag = next(anchor.iterdescendants("relative-time"), None) if anchor is not None else None
    author = own.get("truncate", own.get("author"))
    edit_history = own.get("edit_history")
    body = own.get("body")
    return Post(
        external_id=external_id,
        permalink=_permalink(owner, repo, number, external_id),
        kind=kind,
        parent_id=parent_id,
        author="".join(s.strip() for s in author.itertext()) if author is not None else None,
        created_at=time_tag.get("datetime") if time_tag is not None else None,
        edited=edit_history is not None and "edited" in "".join(edit_history.itertext()),
        edited_at=None,
        minimized="minimized" in own,
        deleted=body is None,  # a deleted comment keeps its header but has no body
        body_html=body_html_of(body) if body is not None else "",
    )


# --- GraphQL transport ------------------------------------------------------------------------------------

_FIELDS = "databaseId url author { login } createdAt lastEditedAt body bodyHTML"
_REPLIES = f"totalCount pageInfo {{ hasNextPage endCursor }} nodes {{ {_FIELDS} isMinimized deletedAt }}"
DISCUSSION_QUERY = f"""
query($owner: String!, $name: String!, $number: Int!, $after: String) {{
  repository(owner: $owner, name: $name) {{
    discussion(number: $number) {{
      {_FIELDS}
      comments(first: 100, after: $after) {{
        totalCount
        pageInfo {{ hasNextPage endCursor }}
        nodes {{
          id {_FIELDS} isMinimized deletedAt
          replies(first: 100) {{ {_REPLIES} }}
        }}
      }}
    }}
  }}
  rateLimit {{ cost remaining resetAt }}
}}
""".strip()
# The rest of the replies of one comment with more than 100 (its node id, from the discussion query).
REPLIES_QUERY = f"""
query($id: ID!, $after: String) {{
  node(id: $id) {{
    ... on DiscussionComment {{ databaseId replies(first: 100, after: $after) {{ {_REPLIES} }} }}
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
) -> list[Fetched]:
    """POST the discussion query, following comments' endCursor until hasNextPage is false, and, for a comment
    with more than 100 replies, the replies query, following its replies' endCursor the same way.

    No conditional requests here: GitHub's GraphQL endpoint has none, and all pages share one URL
    (Fetched.request_body tells them apart); the caller compares the bytes with its snapshots instead.
    """
    pages: list[Fetched] = []
    where = f"{owner}/{repo}#{number}"

    def post(query: str, variables: dict) -> dict:
        if len(pages) >= MAX_PAGES:
            raise FetchError(api_url, "pagination does not end", len(pages), method="POST")
        fetched = session.post_json(api_url, {"query": query, "variables": variables},
                                    headers={"Authorization": f"bearer {token}"})
        on_response(fetched)
        pages.append(fetched)
        try:
            answer = json.loads(fetched.body)
        except ValueError as exc:
            raise FetchError(api_url, f"bad GraphQL answer for {where}: {exc}", 1, method="POST") from None
        except RecursionError:
            raise FetchError(api_url, f"bad GraphQL answer for {where}: nested too deeply", 1, method="POST") from None
        if not isinstance(answer, dict):
            raise FetchError(api_url, f"bad GraphQL answer for {where}: not a JSON object", 1, method="POST")
        return answer

    after: str | None = None
    while True:
        answer = post(DISCUSSION_QUERY, {"owner": owner, "name": repo, "number": number, "after": after})
        try:
            comments = _discussion(answer, owner, repo, number)["comments"]
            for comment in comments["nodes"]:
                replies = comment.get("replies") or {}
                while (replies.get("pageInfo") or {}).get("hasNextPage"):
                    more = post(REPLIES_QUERY, {"id": comment["id"], "after": replies["pageInfo"]["endCursor"]})
                    replies = _replies_node(more, where)["replies"]
            if not comments["pageInfo"]["hasNextPage"]:
                return pages
            after = comments["pageInfo"]["endCursor"]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:  # ValueError: a PageFormatError
            raise FetchError(api_url, f"bad GraphQL answer for {where}: {exc}", 1, method="POST") from None


def _errors(answer: dict, where: str) -> None:
    if answer.get("errors"):
        messages = "; ".join(f"{e.get('type', 'ERROR')}: {e.get('message', '')}" for e in answer["errors"])
        raise PageFormatError(f"{where}: GraphQL errors: {messages}")


def _discussion(answer: dict, owner: str, repo: str, number: int) -> dict:
    _errors(answer, f"{owner}/{repo}#{number}")
    discussion = ((answer.get("data") or {}).get("repository") or {}).get("discussion")
    if not discussion:
        raise PageFormatError(f"{owner}/{repo}#{number}: no discussion in the GraphQL answer")
    return discussion


def _replies_node(answer: dict, where: str) -> dict:
    """The comment of a replies-query answer ({"databaseId", "replies"})."""
    _errors(answer, where)
    node = (answer.get("data") or {}).get("node")
    if not node or "replies" not in node:
        raise PageFormatError(f"{where}: no comment replies in the GraphQL answer")
    return node


def posts_from_graphql(pages: list[bytes], owner: str, repo: str, number: int) -> list[Post]:
    """Every post of the thread from the GraphQL answers, in the order the HTML pages show them."""
    return [post for _, post in read_graphql_thread(pages, owner, repo, number)[0]]


def read_graphql_thread(pages: list[bytes], owner: str, repo: str,
                        number: int) -> tuple[list[tuple[int, Post]], Completeness]:
    """Every post of the thread with the index of the answer it was read from (each discussion answer repeats
    the opening post: the first answer's wins; a replies answer adds to its comment's replies), and how the
    read compares with the answers' comments.totalCount and each comment's replies.totalCount."""
    where = f"{owner}/{repo}#{number}"
    posts: dict[str, tuple[int, Post]] = {}
    comments_stated: int | None = None
    replies_stated: dict[str, int | None] = {}  # comment id -> its replies.totalCount
    replies_read: dict[str, set[str]] = {}

    def add_replies(index: int, parent_id: str, replies: dict) -> None:
        replies_stated.setdefault(parent_id, replies.get("totalCount"))
        for reply in replies.get("nodes") or ():
            post = _post_from_node(reply, owner, repo, number, "reply", parent_id)
            replies_read.setdefault(parent_id, set()).add(post.external_id)
            posts.setdefault(post.external_id, (index, post))

    for index, page in enumerate(pages):
        try:
            answer = json.loads(page)
            if "node" in (answer.get("data") or {}):  # the rest of one comment's replies
                node = _replies_node(answer, where)
                add_replies(index, str(node["databaseId"]), node["replies"])
                continue
            discussion = _discussion(answer, owner, repo, number)
            if index == 0:
                posts["op"] = (index, _post_from_node(discussion, owner, repo, number, "opening", None))
                comments_stated = discussion["comments"].get("totalCount")
            for comment in discussion["comments"]["nodes"]:
                post = _post_from_node(comment, owner, repo, number, "comment", None)
                posts.setdefault(post.external_id, (index, post))
                add_replies(index, post.external_id, comment.get("replies") or {})
        except (ValueError, RecursionError, KeyError, TypeError, AttributeError) as exc:
            if isinstance(exc, PageFormatError):
                raise
            # A field missing or of another type than GitHub gives: name the answer and the field, not a traceback.
            problem = f"no field {exc}" if isinstance(exc, KeyError) else str(exc) or type(exc).__name__
            raise PageFormatError(f"{where}: GraphQL answer {index + 1} is not what GitHub gives ({problem})") \
                from None
    comments = sum(post.kind == "comment" for _, post in posts.values())
    counts = [Count("comments", comments, comments_stated,
                    "the GraphQL answers hold a different number of comment nodes than comments.totalCount")]
    counts += [Count(f"replies to comment {parent}", len(replies_read.get(parent, ())), stated,
                     "the GraphQL answers hold a different number of reply nodes than replies.totalCount")
               for parent, stated in replies_stated.items()]
    return list(posts.values()), Completeness(counts)


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
        body_html="" if deleted else body_html_of(parse_body(node.get("bodyHTML") or "")),
    )
