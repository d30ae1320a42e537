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
