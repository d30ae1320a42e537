"""A real HTTP server on 127.0.0.1 that plays GitHub from the recorded fixtures, with faults on demand.

Serves every `tests/fixtures/github/**/routes.json`: GET by path (+ the `after` query), POST /graphql by
`variables.number` (a discussion query) or `variables.id` (a comment's replies query) + `variables.after`.
Responses carry an ETag (sha256 of the body) and Last-Modified, and conditional requests that match get 304.
Every request is recorded (the Authorization header only as a flag).

    with FixtureServer(token="t0ken") as server:
        server.inject("/ggml-org/llama.cpp/discussions/4167", [Fault("status", 502), Fault("reset")])
        server.override("/ggml-org/llama.cpp/discussions/4167", edited_page_bytes)
        ... PoliteSession().get(server.base_url + "/ggml-org/llama.cpp/discussions/4167") ...

or use the `fixture_server` pytest fixture. Faults are consumed one per matching request, in order; once a
queue is empty the route answers normally again.
"""

from __future__ import annotations

import hashlib
import json
import math
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "github"
# Fixed so that validators are stable from run to run; an override moves it forward.
FIXTURE_LAST_MODIFIED = datetime(2026, 9, 1, tzinfo=UTC).timestamp()


@dataclass
class Fault:
    """One misbehaviour, served instead of (or around) the normal answer.

    kind:  "status"      answer `status` (default 502) with a small JSON body
           "retry_after" answer `status` (default 429) with `Retry-After: <seconds>`
           "retry_after_date"  the same with Retry-After as an HTTP date
           "ratelimit"   answer `status` (default 403) with x-ratelimit-remaining 0, reset in `seconds`
           "last_call"   the normal answer, but with x-ratelimit-remaining 0, reset in `seconds`
           "reset"       close the connection with a TCP reset, before any response
           "truncate"    send the headers with the full Content-Length, then half the body, then close
           "cut"         the same with chunked transfer encoding (no Content-Length)
           "short_length"  announce a Content-Length of two thirds of the body, then send the whole body (the
                         client reads the part it was told of)
           "slow"        wait `seconds`, then answer normally
    """

    kind: str
    status: int | None = None
    seconds: float = 0.0


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case keys, without Authorization
    auth: bool  # whether an Authorization header was sent (its value is never kept)
    body: bytes


@dataclass
class _Route:
    body: bytes
    content_type: str
    last_modified: float = FIXTURE_LAST_MODIFIED
    headers: dict[str, str] = field(default_factory=dict)  # "{base}" stands for the server's base URL

    @property
    def etag(self) -> str:
        return '"' + hashlib.sha256(self.body).hexdigest() + '"'


# A route's key: GET (path, `after` or `page` query) or POST /graphql (discussion number or comment node id, after).
RouteKey = tuple[str, str, int | str | None, str | None]


@dataclass
class _Injection:
    path_prefix: str
    faults: list[Fault] = field(default_factory=list)


class FixtureServer:
    def __init__(self, root: Path = FIXTURES, *, token: str | None = None):
        self.token = token  # when set, POST /graphql requires "Authorization: bearer <token>"
        self.requests: list[Recorded] = []
        self._routes: dict[RouteKey, _Route] = {}
        self._injections: list[_Injection] = []
        self._lock = threading.Lock()
        for routes_file in sorted(root.glob("**/routes.json")):
            self._load(routes_file)
        self._httpd: ThreadingHTTPServer | None = None

    # --- lifecycle ----------------------------------------------------------------------------------------

    def start(self) -> FixtureServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True  # a "slow" handler must not hold up stop()
        self._httpd.fixture = self
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FixtureServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def api_url(self) -> str:
        return self.base_url + "/graphql"

    # --- hooks for tests ----------------------------------------------------------------------------------

    def inject(self, path_prefix: str, faults: list[Fault]) -> None:
        """Serve these faults, one per request whose path starts with path_prefix, then answer normally."""
        with self._lock:
            self._injections.append(_Injection(path_prefix, list(faults)))

    def override(self, path: str, body: bytes, *, after: str | None = None) -> None:
        """Serve new bytes for a GET route (or add one), as if the page had changed upstream."""
        self._set(("GET", path, None, after), body, "text/html; charset=utf-8")

    def body(self, path: str, *, after: str | None = None) -> bytes:
        return self._routes[("GET", path, None, after)].body

    def override_graphql(self, subject: int | str, body: bytes, *, after: str | None = None) -> None:
        """Answer the GraphQL query for this discussion number (or this comment node id: its replies) with
        new bytes, or add such an answer."""
        self._set(("POST", "/graphql", subject, after), body, "application/json; charset=utf-8")

    def graphql_body(self, subject: int | str, *, after: str | None = None) -> bytes:
        return self._routes[("POST", "/graphql", subject, after)].body

    def rest_issue(self, owner: str, repo: str, number: int, issue: dict, comments: list[dict], *,
                   per_page: int = 100, link_on_304: bool = True) -> None:
        """Answer GitHub's REST API for this issue: GET /repos/O/R/issues/N (the issue, its `comments` count set
        to len(comments) unless the issue gives one) and GET …/comments, `per_page` comments a page (whatever the
        client asks), each page but the last with `Link: <…page=K+1>; rel="next", <…>; rel="last"`. Called again,
        it replaces the answers (pages whose bytes change get a new ETag and date; pages past the end go)."""
        path = f"/repos/{owner}/{repo}/issues/{number}"
        self._set(("GET", path, None, None), json.dumps({"comments": len(comments), **issue}).encode(),
                  "application/json; charset=utf-8", _REST_HEADERS)
        chunks = [comments[i:i + per_page] for i in range(0, len(comments), per_page)] or [[]]
        for page, chunk in enumerate(chunks, start=1):
            headers = dict(_REST_HEADERS)
            if page < len(chunks):
                url = "{base}" + f"{path}/comments?per_page={per_page}&page="
                headers["Link"] = f'<{url}{page + 1}>; rel="next", <{url}{len(chunks)}>; rel="last"'
            self._set(("GET", f"{path}/comments", None, None if page == 1 else str(page)), json.dumps(chunk).encode(),
                      "application/json; charset=utf-8", headers, link_on_304=link_on_304)
        with self._lock:
            for key in [k for k in self._routes if k[1] == f"{path}/comments" and k[3] and int(k[3]) > len(chunks)]:
                del self._routes[key]

    def answer(self, path: str, body: bytes, headers: dict[str, str] | None = None, *, page: int | None = None,
               content_type: str = "application/json; charset=utf-8") -> None:
        """Answer GET `path` (with `?page=N` when page > 1) with these bytes and headers ("{base}" in a header
        stands for the server's base URL): a hand-made REST answer, such as a Link header of one's own."""
        self._set(("GET", path, None, str(page) if page and page > 1 else None), body, content_type, headers or {})

    def requests_to(self, path_prefix: str) -> list[Recorded]:
        return [r for r in self.requests if r.path.startswith(path_prefix)]

    # --- internals ----------------------------------------------------------------------------------------

    def _load(self, routes_file: Path) -> None:
        for route in json.loads(routes_file.read_text()):
            body = (routes_file.parent / route["file"]).read_bytes()
            if route["method"] == "GET":
                key = ("GET", route["path"], None, route.get("query", {}).get("after"))
            else:
                variables = route["variables"]
                key = ("POST", route["path"], variables.get("number", variables.get("id")), variables.get("after"))
            self._routes[key] = _Route(body, route["content_type"])

    def _set(self, key: RouteKey, body: bytes, content_type: str, headers: dict | None = None, *,
             link_on_304: bool = True) -> None:
        with self._lock:
            old = self._routes.get(key)
            if old is not None and old.body == body and headers is not None:
                old.headers = {**headers, "_link_on_304": str(link_on_304)}  # same bytes: same ETag and date
                return
            # Last-Modified has one-second resolution: make sure a change is always later than the old date.
            last_modified = max(time.time(), old.last_modified + 1) if old else time.time()
            self._routes[key] = _Route(body, old.content_type if old else content_type, last_modified,
                                       {**(headers or {}), "_link_on_304": str(link_on_304)})

    def _next_fault(self, path: str) -> Fault | None:
        with self._lock:
            for injection in self._injections:
                if path.startswith(injection.path_prefix) and injection.faults:
                    return injection.faults.pop(0)
        return None

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as GitHub does: the client must cope with reused connections

    def log_message(self, *args) -> None:  # quiet test output
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:  # the client gave up (timeout) or we cut the connection on purpose
            pass

    def finish(self) -> None:
        try:
            super().finish()
        except (OSError, ValueError):
            pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    @property
    def fixture(self) -> FixtureServer:
        return self.server.fixture

    def _serve(self) -> None:
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() != "authorization"}
        self.fixture._record(Recorded(self.command, url.path, query, headers, "Authorization" in self.headers, body))

        fault = self.fixture._next_fault(url.path)
        if fault and fault.kind == "slow":
            time.sleep(fault.seconds)
            fault = None
        if fault and fault.kind == "reset":
            # SO_LINGER 0 makes close() send a RST instead of a graceful FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if fault and fault.kind in ("status", "retry_after", "retry_after_date", "ratelimit"):
            return self._send_fault(fault)

        status, route, extra = self._resolve(url.path, query, body)
        if route is None:
            return self._send(status, extra.pop("body"), extra)
        extra.update({"ETag": route.etag, "Last-Modified": formatdate(route.last_modified, usegmt=True)})
        own = {k: v.replace("{base}", self.fixture.base_url) for k, v in route.headers.items() if k[0] != "_"}
        extra.update(own)
        if fault and fault.kind == "last_call":
            extra.update(_ratelimit_headers(fault.seconds))
        if self._not_modified(route):
            if route.headers.get("_link_on_304") == "False":
                extra.pop("Link", None)
            return self._send(304, b"", extra)
        if fault and fault.kind in ("truncate", "cut"):
            return self._send_cut(route, chunked=fault.kind == "cut")
        if fault and fault.kind == "short_length":
            self.send_response(200)
            self.send_header("Content-Type", route.content_type)
            self.send_header("Content-Length", str(len(route.body) * 2 // 3))
            self.end_headers()
            self.wfile.write(route.body)
            self.close_connection = True
            return
        self._send(200, route.body, {"Content-Type": route.content_type, **extra})

    def _resolve(self, path: str, query: dict, body: bytes) -> tuple[int, _Route | None, dict]:
        """The route for a request, or an error status with {"body": ...}."""
        routes = self.fixture._routes
        if self.command == "GET":
            page = query.get("page") if query.get("page") != "1" else None
            route = routes.get(("GET", path, None, query.get("after", page)))
            return (200, route, {}) if route else (404, None, {"body": b'{"message":"Not Found"}'})
        if path != "/graphql":
            return 404, None, {"body": b'{"message":"Not Found"}'}
        token = self.fixture.token
        scheme, _, given = self.headers.get("Authorization", "").partition(" ")
        if token is not None and (scheme.lower() != "bearer" or given != token):
            return 401, None, {"body": b'{"message":"Bad credentials"}'}
        variables = json.loads(body or b"{}").get("variables", {})
        subject = variables.get("number", variables.get("id"))
        route = routes.get(("POST", path, subject, variables.get("after")))
        if route:
            return 200, route, {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4990",
                                "x-ratelimit-reset": str(int(time.time()) + 3600)}
        not_found = {"data": {"repository": {"discussion": None}},
                     "errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a Discussion."}]}
        return 200, None, {"body": json.dumps(not_found).encode()}

    def _not_modified(self, route: _Route) -> bool:
        if_none_match = self.headers.get("If-None-Match")
        if if_none_match is not None:  # takes precedence over If-Modified-Since (RFC 9110)
            tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
            return "*" in tags or route.etag in tags
        if_modified_since = self.headers.get("If-Modified-Since")
        if if_modified_since:
            try:
                return int(route.last_modified) <= parsedate_to_datetime(if_modified_since).timestamp()
            except (TypeError, ValueError):
                return False
        return False

    def _send_fault(self, fault: Fault) -> None:
        headers: dict[str, str] = {"Content-Type": "application/json"}
        if fault.kind == "retry_after":
            headers["Retry-After"] = str(int(fault.seconds))
        elif fault.kind == "retry_after_date":
            headers["Retry-After"] = formatdate(time.time() + fault.seconds, usegmt=True)
        elif fault.kind == "ratelimit":
            headers.update(_ratelimit_headers(fault.seconds))
        default = {"status": 502, "retry_after": 429, "retry_after_date": 503, "ratelimit": 403}[fault.kind]
        self._send(fault.status or default, b'{"message":"injected fault"}', headers)

    def _send_cut(self, route: _Route, *, chunked: bool) -> None:
        half = route.body[: len(route.body) // 2]
        self.send_response(200)
        self.send_header("Content-Type", route.content_type)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(f"{len(route.body):x}\r\n".encode() + half)  # announces a chunk, sends half of it
        else:
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            self.wfile.write(half)
        self.wfile.flush()
        self.close_connection = True

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if status != 304:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if status != 304:
            self.wfile.write(body)


_REST_HEADERS = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4990", "x-ratelimit-resource": "core"}


def _ratelimit_headers(reset_in_s: float) -> dict[str, str]:
    return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0", "x-ratelimit-used": "5000",
            "x-ratelimit-reset": str(math.ceil(time.time() + reset_in_s))}


@pytest.fixture
def fixture_server():
    with FixtureServer() as server:
        yield server


# --- a hostile server ----------------------------------------------------------------------------------------

class HostileServer:
    """A server on 127.0.0.1 that answers every request (any path, GET or POST) with one misbehaviour, for the tests
    that every fetch path is bounded in time and size and keeps to its host:

        "hang"             read the request, never answer
        "trickle"          200, chunked, one byte every 50 ms, for ever
        "trickle_headers"  the status line, then the headers one byte every 50 ms, for ever
        "flood"            200, chunked, 64 KiB pieces without end
        "huge_length"      200 announcing a Content-Length of 10 GB, then bytes without end
        "gzip_bomb"        200, Content-Encoding: gzip, `bomb_mb` MB of blanks in a few KB
        "foreign_link"     a plausible answer (an issue, a page of comments with `Link: <foreign>; rel="next"`, a
                           discussion page whose "Load more" form points at the foreign host), the foreign host being
                           a second server on 127.0.0.2 that records who calls it
        "status_500", "status_429"   that status (429 with Retry-After: 1), every time
        "redirect_flood"   302 to /landed with a body without end; /landed answers 200 `landed`

    `requests` records (method, path, whether an Authorization header came); `foreign.requests` the same for the
    foreign host."""

    def __init__(self, mode: str, *, bomb_mb: int = 16, host: str = "127.0.0.1"):
        self.mode, self.bomb_mb, self.host = mode, bomb_mb, host
        self.requests: list[tuple[str, str, bool]] = []
        self.stopping = threading.Event()
        self.foreign: HostileServer | None = None
        self._httpd: ThreadingHTTPServer | None = None

    def __enter__(self) -> HostileServer:
        if self.mode == "foreign_link":
            self.foreign = HostileServer("status_500", host="127.0.0.2").__enter__()
        if self.mode == "gzip_bomb":
            self.gzip_bomb()  # made now, not while the client's deadline runs
        self._httpd = ThreadingHTTPServer((self.host, 0), _HostileHandler)
        self._httpd.daemon_threads = True
        self._httpd.hostile = self
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stopping.set()
        if self._httpd:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self.foreign:
            self.foreign.__exit__()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def gzip_bomb(self) -> bytes:
        return _gzip_bomb(self.bomb_mb)


_BOMBS: dict[int, bytes] = {}


def _gzip_bomb(megabytes: int) -> bytes:
    if megabytes not in _BOMBS:
        import zlib

        packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: the gzip container
        block = b" " * 2**20
        _BOMBS[megabytes] = b"".join(packer.compress(block) for _ in range(megabytes)) + packer.flush()
    return _BOMBS[megabytes]


class _HostileHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (OSError, ValueError):  # the client cut the connection: what every bounded client does here
            pass

    def finish(self) -> None:
        try:
            super().finish()
        except (OSError, ValueError):
            pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        server: HostileServer = self.server.hostile
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        server.requests.append((self.command, self.path, "Authorization" in self.headers))
        self.close_connection = True
        mode, stop = server.mode, server.stopping
        if mode == "hang":
            stop.wait(30)
        elif mode == "trickle_headers":
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            while not stop.is_set():
                self.wfile.write(b"X")
                self.wfile.flush()
                stop.wait(0.05)
        elif mode in ("trickle", "flood"):
            self._head(200, {"Transfer-Encoding": "chunked", "Content-Type": "application/json"})
            piece = b" " if mode == "trickle" else b" " * 65536
            while not stop.is_set():
                self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                self.wfile.flush()
                if mode == "trickle":
                    stop.wait(0.05)
        elif mode == "huge_length":
            self._head(200, {"Content-Length": str(10**10), "Content-Type": "application/json"})
            while not stop.is_set():
                self.wfile.write(b" " * 65536)
        elif mode == "gzip_bomb":
            bomb = server.gzip_bomb()
            self._head(200, {"Content-Encoding": "gzip", "Content-Length": str(len(bomb)),
                             "Content-Type": "application/json"})
            self.wfile.write(bomb)
        elif mode.startswith("status_"):
            status = int(mode.removeprefix("status_"))
            body = b'{"message":"hostile"}'
            self._head(status, {"Content-Length": str(len(body)), "Retry-After": "1"})
            self.wfile.write(body)
        elif mode == "foreign_link":
            self._foreign_link(server)
        elif mode == "redirect_flood":
            if self.path == "/landed":
                self._head(200, {"Content-Length": "6"})
                self.wfile.write(b"landed")
                return
            self._head(302, {"Location": "/landed", "Transfer-Encoding": "chunked"})
            while not stop.is_set():
                self.wfile.write(b"10000\r\n" + b" " * 65536 + b"\r\n")
        else:
            raise ValueError(f"unknown mode {mode!r}")

    def _foreign_link(self, server: HostileServer) -> None:
        foreign = server.foreign.base_url
        path = urlsplit(self.path).path
        headers = {"Content-Type": "application/json"}
        if path.rstrip("/").split("/")[-2:-1] == ["issues"]:  # …/issues/N: the issue, one comment announced
            number = int(path.rstrip("/").rsplit("/", 1)[1])
            body = json.dumps({"number": number, "comments": 1, "body": "", "created_at": "2025-01-01T00:00:00Z",
                               "html_url": f"https://github.com{path}"}).encode()
        elif "/discussions/" in path:  # a discussion page whose "Load more" goes to the foreign host
            headers["Content-Type"] = "text/html; charset=utf-8"
            body = (f'<html><body><form action="{foreign}{path}/pages?after=x"><button>Load more</button></form>'
                    "</body></html>").encode()
        else:  # a page of comments (or any other answer) that says the next page is on the foreign host
            headers["Link"] = f'<{foreign}/next?page=2>; rel="next"'
            body = b"[]"
        self._head(200, {**headers, "Content-Length": str(len(body))})
        self.wfile.write(body)

    def _head(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
