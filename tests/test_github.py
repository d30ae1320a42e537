"""Reading the three fixture discussions over HTML and GraphQL, from a local server, against thread.json."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from fixture_server import FIXTURES, Fault, FixtureServer
from tpsdb.collect.github import (
    Cached,
    PageFormatError,
    canonical_url,
    fetch_discussion_graphql,
    fetch_discussion_html,
    next_page_url,
    posts_from_graphql,
    posts_from_html,
    read_graphql_thread,
    read_html_thread,
)
from tpsdb.collect.completeness import Count
from tpsdb.collect.http import FetchError, PoliteSession

OWNER, REPO = "ggml-org", "llama.cpp"
NUMBERS = [4167, 15013, 16578]
TOKEN = "ghp_graphqlT0kenNeverShown"


def thread_dir(number: int) -> Path:
    return FIXTURES / OWNER / REPO / "discussions" / str(number)


def expected_posts(number: int) -> list[dict]:
    """thread.json flattened in page order: the opening post, then each comment followed by its replies."""
    thread = json.loads((thread_dir(number) / "thread.json").read_text())
    posts = [{**thread["op"], "id": "op", "kind": "opening", "parent": None}]
    for comment in thread["comments"]:
        posts.append({**comment, "id": str(comment["id"]), "kind": "comment", "parent": None})
        for reply in comment.get("replies", []):
            posts.append({**reply, "id": str(reply["id"]), "kind": "reply", "parent": str(comment["id"])})
    return posts


def decimals(text: str) -> set[str]:
    return set(re.findall(r"\d+\.\d+", text))


def text_of(body_html: str) -> str:
    return BeautifulSoup(body_html, "lxml").get_text()


@pytest.fixture(scope="module")
def server():
    with FixtureServer(token=TOKEN) as running:
        yield running


@pytest.fixture
def session():
    return PoliteSession(pause_s=0, backoff_s=0.01, max_backoff_s=0.05, timeout_s=5, max_attempts=3)


def read_html(server, session, number, **kwargs):
    responses = []
    pages = fetch_discussion_html(session, server.base_url, OWNER, REPO, number, on_response=responses.append,
                                  **kwargs)
    assert responses == pages  # every response went to on_response, in order
    return pages


def read_graphql(server, session, number):
    responses = []
    pages = fetch_discussion_graphql(session, server.api_url, TOKEN, OWNER, REPO, number,
                                     on_response=responses.append)
    assert responses == pages
    return pages


@pytest.mark.parametrize("number", NUMBERS)
def test_html_transport_reads_every_post_of_every_page(server, session, number):
    pages = read_html(server, session, number)
    posts = posts_from_html([page.body for page in pages], OWNER, REPO, number)

    expected = expected_posts(number)
    assert len(pages) == 1 + len(list((thread_dir(number) / "pages").glob("*.html")))
    assert [p.external_id for p in posts] == [e["id"] for e in expected]
    for post, want in zip(posts, expected):
        assert (post.kind, post.parent_id, post.author, post.created_at) == (
            want["kind"], want["parent"], want["author"], want["created_at"]), post.external_id
        assert (post.minimized, post.deleted, post.edited) == (
            want["minimized"], want["deleted"], want["edited_at"] is not None), post.external_id
        assert post.edited_at is None  # the page only shows an "edited" marker
        if want["deleted"]:
            assert post.body_html == ""
        else:  # every figure of the post's own text is in its body, and nothing more
            assert decimals(text_of(post.body_html)) == decimals(want["body_md"]), post.external_id


@pytest.mark.parametrize("number", NUMBERS)
def test_html_bodies_hold_neither_replies_nor_templates(server, session, number):
    posts = posts_from_html([p.body for p in read_html(server, session, number)], OWNER, REPO, number)
    by_id = {post.external_id: post for post in posts}
    for post in posts:
        assert "{{" not in post.body_html and "discussioncomment-" not in post.body_html
        assert post.created_at and "{{" not in post.created_at
    replies = [post for post in posts if post.kind == "reply"]
    assert replies
    for reply in replies:
        parent = by_id[reply.parent_id]
        assert reply.body_html not in parent.body_html
        assert text_of(reply.body_html).strip() not in text_of(parent.body_html)


def test_flags_of_minimized_deleted_and_edited_comments(server, session):
    posts = {p.external_id: p for p in posts_from_html(
        [p.body for p in read_html(server, session, 4167)], OWNER, REPO, 4167)}
    assert posts["15098985"].minimized and posts["15098985"].body_html  # minimized still counts, body kept
    assert posts["7663473"].deleted and posts["7663473"].author == "lindqvist-j"
    assert posts["7711079"].edited and not posts["7644774"].edited


@pytest.mark.parametrize("number", NUMBERS)
def test_graphql_transport_gives_the_same_posts(server, session, number):
    html_posts = posts_from_html([p.body for p in read_html(server, session, number)], OWNER, REPO, number)
    pages = read_graphql(server, session, number)
    graphql_posts = posts_from_graphql([p.body for p in pages], OWNER, REPO, number)

    assert len(pages) == len(list((thread_dir(number) / "graphql").glob("*.json")))
    assert len(graphql_posts) == len(html_posts)
    for from_api, from_page in zip(graphql_posts, html_posts):
        assert vars(from_api) | {"edited_at": None} == vars(from_page)  # identical, body HTML included
    expected = {e["id"]: e["edited_at"] for e in expected_posts(number)}
    assert {p.external_id: p.edited_at for p in graphql_posts} == expected


def test_graphql_requests_follow_end_cursor_with_token(server, session):
    before = len(server.requests)
    read_graphql(server, session, 4167)
    sent = server.requests[before:]
    variables = [json.loads(r.body)["variables"] for r in sent]
    cursors = [json.loads(p.read_bytes())["data"]["repository"]["discussion"]["comments"]["pageInfo"]["endCursor"]
               for p in sorted((thread_dir(4167) / "graphql").glob("*.json"))]
    assert [v["after"] for v in variables] == [None] + cursors[:-1]
    assert all(v == {"owner": OWNER, "name": REPO, "number": 4167, "after": v["after"]} for v in variables)
    assert all(r.auth and r.method == "POST" for r in sent)


def test_graphql_never_leaks_the_token(server, session):
    pages = read_graphql(server, session, 16578)
    assert all(TOKEN not in repr(page) for page in pages)
    with pytest.raises(FetchError) as refused:
        fetch_discussion_graphql(session, server.api_url, "bad-token", OWNER, REPO, 16578, on_response=print)
    assert "401" in str(refused.value) and "bad-token" not in str(refused.value)


def test_graphql_error_answer_is_a_fetch_error(server, session):
    responses = []
    with pytest.raises(FetchError, match="NOT_FOUND"):
        fetch_discussion_graphql(session, server.api_url, TOKEN, OWNER, REPO, 99999, on_response=responses.append)
    assert len(responses) == 1  # archived before it was read


@pytest.mark.parametrize("number", NUMBERS)
def test_permalinks_are_canonical_although_served_locally(server, session, number):
    pages = read_html(server, session, number)
    assert pages[0].url.startswith("http://127.0.0.1:")
    thread = f"https://github.com/{OWNER}/{REPO}/discussions/{number}"
    for post in posts_from_html([p.body for p in pages], OWNER, REPO, number):
        anchor = "" if post.kind == "opening" else f"#discussioncomment-{post.external_id}"
        assert post.permalink == thread + anchor
    assert canonical_url(pages[0].url, server.base_url) == thread


class SnapshotStore:
    """What the caller keeps: the last 200 answer of every URL, handed back as `previous`."""

    def __init__(self):
        self.last: dict[str, Cached] = {}

    def archive(self, fetched) -> None:
        if fetched.status == 200:
            digest = hashlib.sha256(fetched.body).hexdigest()
            self.last[fetched.url] = Cached(fetched.etag, fetched.last_modified, digest, fetched.body)

    def bodies(self, pages) -> list[bytes]:
        return [page.body if page.status == 200 else self.last[page.url].body for page in pages]


def fetch_into(store, server, session, number, **kwargs):
    return fetch_discussion_html(session, server.base_url, OWNER, REPO, number, on_response=store.archive,
                                 **kwargs)


def test_second_fetch_with_previous_gives_only_304s(server, session):
    store = SnapshotStore()
    first = fetch_into(store, server, session, 15013)
    second = fetch_into(store, server, session, 15013, previous=store.last.get)

    assert len(first) == 3 and [p.status for p in second] == [304] * 3
    assert [p.url for p in second] == [p.url for p in first]  # the chain continued from the cached bodies
    assert posts_from_html(store.bodies(second), OWNER, REPO, 15013) == posts_from_html(
        store.bodies(first), OWNER, REPO, 15013)


def test_edited_page_is_fetched_again_and_read_anew(session):
    with FixtureServer() as server:
        path = f"/{OWNER}/{REPO}/discussions/4167"
        store = SnapshotStore()
        fetch_into(store, server, session, 4167)
        server.override(path, server.body(path).replace(b"Two machines here.", b"Two machines here (edited)."))

        pages = fetch_into(store, server, session, 4167, previous=store.last.get)

        assert [p.status for p in pages] == [200, 304, 304]
        posts = {p.external_id: p for p in posts_from_html(store.bodies(pages), OWNER, REPO, 4167)}
        assert "Two machines here (edited)." in posts["7644774"].body_html


def test_fault_in_the_middle_of_the_chain_is_retried(session):
    with FixtureServer() as server:
        server.inject(f"/{OWNER}/{REPO}/discussions/4167/pages", [Fault("status", 502), Fault("truncate")])
        pages = read_html(server, session, 4167)
        assert [p.status for p in pages] == [200, 200, 200]
        assert len(posts_from_html([p.body for p in pages], OWNER, REPO, 4167)) == len(expected_posts(4167))


def test_next_page_url_is_absolute_unescaped_and_ends(server):
    page = (thread_dir(4167) / "page.html").read_bytes()
    url = next_page_url(page, server.base_url)
    assert url.startswith(f"{server.base_url}/{OWNER}/{REPO}/discussions/4167/pages?after=")
    assert url.endswith("&sort=old") and "&amp;" not in url
    assert next_page_url((thread_dir(4167) / "pages" / "2.html").read_bytes(), server.base_url) is None


def test_templates_are_not_data():
    page = (thread_dir(16578) / "page.html").read_bytes()
    fake = (b'<template><div class="discussions-timeline-scroll-target" id="discussioncomment-999">'
            b'<td class="comment-body">{{body}}</td></div>'
            b'<form action="/ggml-org/llama.cpp/discussions/16578/pages?after={{cursor}}"></form></template>')
    page = page.replace(b"</main>", fake + b"</main>")
    assert next_page_url(page, "https://github.com") is None
    ids = [p.external_id for p in posts_from_html([page], OWNER, REPO, 16578)]
    assert "999" not in ids and len(ids) == len(expected_posts(16578))


def test_page_without_opening_post_is_a_format_error():
    with pytest.raises(PageFormatError):
        posts_from_html([b"<html><body>Sign in to GitHub</body></html>"], OWNER, REPO, 4167)


def synthetic_post(element_id: str, author: str, body: str | None, *, edited=False, minimized=False,
                   replies: str = "") -> str:
    """A post with the hooks a real page has (header, permalink time, body, replies block), nothing else."""
    edit_marker = '<button><span class="Button-label">edited</span></button>' if edited else ""
    body_html = (f'<td class="comment-body">{body}</td>' if body is not None
                 else '<div class="timeline-comment-body"><p>This comment was deleted.</p></div>')
    if minimized:
        body_html = f'<details class="minimized-comment"><summary>minimized</summary>{body_html}</details>'
    replies_block = f'<div id="child-comments-{element_id}">{replies}</div>' if replies else ""
    return (f'<div class="discussions-timeline-scroll-target" id="{element_id}">'
            f'<span class="js-comment-edit-history">{edit_marker}</span>'
            f'<span class="Truncate-text">{author}</span>'
            f'<a id="{element_id}-permalink"><relative-time datetime="2026-01-0{len(author) % 9 + 1}T00:00:00Z">'
            f'</relative-time></a><table><tr>{body_html}</tr></table>{replies_block}</div>')


def test_flags_and_bodies_of_replies_stay_with_the_reply():
    reply = synthetic_post("discussioncomment-2", "replier", "<p>reply 2.5 t/s</p>", edited=True, minimized=True)
    parent = synthetic_post("discussioncomment-1", "parent", None, replies=reply)  # deleted, with a live reply
    page = f'<html><body>{synthetic_post("discussion-9", "op", "<p>opening</p>")}{parent}</body></html>'

    op, comment, answer = posts_from_html([page.encode()], OWNER, REPO, 1)

    assert (comment.kind, comment.author, comment.deleted, comment.body_html) == ("comment", "parent", True, "")
    assert not comment.edited and not comment.minimized
    assert (answer.kind, answer.parent_id, answer.author) == ("reply", "1", "replier")
    assert answer.edited and answer.minimized and answer.body_html == "<p>reply 2.5 t/s</p>"


# --- issue 14: a read states how complete it is ----------------------------------------------------------------
@pytest.mark.parametrize("number", NUMBERS)
def test_reads_of_the_fixture_threads_are_complete(server, session, number):
    expected = expected_posts(number)
    comments = sum(e["kind"] == "comment" for e in expected)
    html_posts, html_read = read_html_thread([p.body for p in read_html(server, session, number)], OWNER, REPO, number)
    graphql_posts, graphql_read = read_graphql_thread([p.body for p in read_graphql(server, session, number)],
                                                      OWNER, REPO, number)
    assert html_read.verified and graphql_read.verified and html_read.problem() is None
    assert html_read.counts[0] == Count("comments", comments, comments, html_read.counts[0].hint)
    assert graphql_read.counts[0].read == graphql_read.counts[0].stated == comments
    replies = {e["parent"] for e in expected if e["kind"] == "reply"}
    assert {c.what for c in graphql_read.counts[1:] if c.stated} == {f"replies to comment {p}" for p in replies}


@pytest.mark.parametrize("header, stated", [
    ("<span>1 comment</span><span>1 reply</span>", (1, 1)),
    ("<span>1,234 comments</span><span>&middot;</span><span>12,001 replies</span>", (1234, 12001)),
    ("<span>7 comments</span>", (7, None)),  # no reply count stated: none assumed
    ("<span>1.2k comments</span>", (None, None)),  # abbreviated: no exact count
])
def test_stated_counts_tolerate_singulars_and_thousands_separators(header, stated):
    opening = synthetic_post("discussion-9", "op", "<p>opening</p>")
    page = f'<html><body>{opening}<h2 id="discussion-comment-count">{header}</h2></body></html>'
    _, read = read_html_thread([page.encode()], OWNER, REPO, 9)
    assert tuple(c.stated for c in read.counts) == stated
    assert read.verified is False  # nothing of that was read


def test_a_page_without_a_count_header_states_nothing():
    _, read = read_html_thread([f"<html><body>{synthetic_post('discussion-9', 'op', 'x')}</body></html>".encode()],
                               OWNER, REPO, 9)
    assert read.unstated == ["comments", "replies"] and read.problem() is None and not read.verified


# --- probe 2: L2 (malformed answers give a message, not a bare exception); D1 (a "Load more" to another host) ----
@pytest.mark.parametrize("answer", [b"[]", b"5", b"[" * 200_000], ids=["list", "number", "nested"])
def test_l2_a_graphql_answer_that_is_no_object_is_a_fetch_error(session, answer):
    with FixtureServer(token=TOKEN) as own:
        own.override_graphql(4167, answer)
        with pytest.raises(FetchError, match="bad GraphQL answer for ggml-org/llama.cpp#4167"):
            fetch_discussion_graphql(session, own.api_url, TOKEN, OWNER, REPO, 4167, on_response=lambda f: None)


@pytest.mark.parametrize("broken", [
    lambda answer: answer["data"]["repository"]["discussion"]["comments"]["nodes"][0].pop("databaseId"),
    lambda answer: answer["data"]["repository"]["discussion"]["comments"].update(nodes=5),
    lambda answer: answer["data"]["repository"]["discussion"]["comments"]["nodes"].insert(0, "x"),
], ids=["no-database-id", "nodes-not-a-list", "node-not-an-object"])
def test_l2_a_graphql_answer_missing_a_field_is_a_page_format_error_naming_the_answer(server, session, broken):
    pages = [p.body for p in read_graphql(server, session, 16578)]
    answer = json.loads(pages[0])
    broken(answer)
    with pytest.raises(PageFormatError, match=r"ggml-org/llama.cpp#16578: GraphQL answer 1 is not what GitHub gives"):
        read_graphql_thread([json.dumps(answer).encode(), *pages[1:]], OWNER, REPO, 16578)


def test_d1_a_load_more_link_to_another_host_is_not_followed(session):
    with FixtureServer() as own:
        path = f"/{OWNER}/{REPO}/discussions/4167"
        page = own.body(path)
        foreign = re.sub(rb'action="[^"]*/discussions/4167/pages\?', b'action="http://127.0.0.2:9/x/discussions/4167/pages?',
                         page)
        assert foreign != page
        own.override(path, foreign)
        with pytest.raises(FetchError, match=r'the "Load more" page is on another host, 127.0.0.2'):
            fetch_discussion_html(session, own.base_url, OWNER, REPO, 4167, on_response=lambda f: None)
        assert [r.path for r in own.requests] == [path]
