"""A polite, fault-tolerant HTTP session: the only place tpsdb talks to the network.

Every request carries a descriptive User-Agent and (connect, read) timeouts, requests are spaced by a pause,
validators turn re-fetches into cheap 304s, and transient failures (connection errors, timeouts, truncated
bodies, 429/5xx, GitHub rate limits) are retried with backoff, bounded in attempts and in total time.
A response is only ever returned whole: anything else ends as a FetchError.

No server can hold a request or flood memory: each answer is bounded in total time (`max_answer_s`, and what is
left of the request's `max_total_s`), not only per socket read, by a watchdog that cuts the connection at the
deadline (a server trickling one byte a second never trips a read timeout); and its body is read as a stream and
counted after decoding (gzip included), so an answer past `max_body_bytes` (a kind may ask for its own cap) fails
as soon as it passes it. A host that does not resolve, or a port where nothing listens, fails at once: retrying
will not make it answer.

Secrets (an Authorization header) never leave this module: they are not copied into Fetched, and
FetchError messages are built from plain strings with no chained exception that could hold the request.
"""

from __future__ import annotations

import json
import random
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.exceptions import NameResolutionError, NewConnectionError
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt, stop_before_delay

from tpsdb.version import __version__

PROJECT_URL = "https://github.com/tpsdb/tpsdb"
DEFAULT_USER_AGENT = f"tpsdb/{__version__} (+{PROJECT_URL}; speed-figure provenance tracker)"

TRANSIENT_ERRORS = (
    requests.ConnectionError,  # refused, reset, DNS
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,  # connection cut mid-body (also a short Content-Length body)
    requests.exceptions.ContentDecodingError,
)
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Response headers that are session state or credentials, not provenance: never kept in a Fetched.
PRIVATE_HEADERS = frozenset({"authorization", "set-cookie"})
# Clocks differ: wait this much past a rate limit's announced reset before trying again.
RESET_MARGIN_S = 1.0
# The largest answer (decoded) a kind gets unless it states its own cap: the largest page tpsdb reads is a few MB.
MAX_BODY_BYTES = 64 * 2**20
# One answer, from sending the request to its last byte; above the read timeout, so a slow start is no failure.
MAX_ANSWER_S = 30.0
_CHUNK = 64 * 1024


@dataclass
class Fetched:
    url: str  # URL actually requested (with query)
    status: int  # 200 or 304
    headers: dict[str, str]  # response headers, lower-case keys; never credentials
    body: bytes  # b"" on 304
    retrieved_at: datetime  # UTC, tz-aware
    request_body: bytes | None = None  # what a POST sent (all GraphQL pages share one URL; this tells them apart)

    @property
    def etag(self) -> str | None:
        return self.headers.get("etag")

    @property
    def last_modified(self) -> str | None:
        return self.headers.get("last-modified")


@dataclass
class Cached:
    """What the caller kept of the last snapshot of a URL: enough to ask for it conditionally and reuse it."""

    etag: str | None
    last_modified: str | None
    sha256: str
    body: bytes
    following: str | None = None  # the canonical address of the page that came next in that run, if any


class FetchError(Exception):
    """A request that could not be completed. The message names the URL, the cause and the attempts made."""

    def __init__(self, url: str, cause: str, attempts: int, status: int | None = None, method: str = "GET"):
        self.url, self.cause, self.attempts, self.status = url, cause, attempts, status
        # attempts 0: refused before anything was sent (a link to another host, a budget already spent)
        tried = f" (after {attempts} attempt{'s' if attempts != 1 else ''})" if attempts else " (not sent)"
        super().__init__(f"{method} {url}: {cause}{tried}")


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of a URL, the port made explicit: what a credential is bound to."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:  # a port that is no number
        port = None
    return scheme, (parts.hostname or "").lower(), port


def check_same_origin(url: str, allowed: str, what: str) -> None:
    """FetchError (naming the host) unless `url` is on the origin of `allowed` (scheme, host and port): a link a
    server hands out is followed with credentials, or stored as the source's pages, only on the source's own host."""
    if origin(url) != origin(allowed):
        def shown(o: tuple[str, str, int | None]) -> str:
            return f"{o[0]}://{o[1]}:{o[2]}"
        raise FetchError(url, f"refused: {what} is on another host, {origin(url)[1]} ({shown(origin(url))}); "
                              f"only {shown(origin(allowed))} is asked", 0)


class _Retryable(Exception):
    """A transient failure; `wait_s` is the wait the server asked for (Retry-After, rate-limit reset)."""

    def __init__(self, cause: str, wait_s: float | None = None, status: int | None = None):
        super().__init__(cause)
        self.cause, self.wait_s, self.status = cause, wait_s, status


class PoliteSession:
    def __init__(
        self,
        *,
        user_agent: str = DEFAULT_USER_AGENT,
        timeout_s: float = 20,
        pause_s: float = 1.0,
        max_attempts: int = 5,
        max_total_s: float = 120,
        backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        max_answer_s: float = MAX_ANSWER_S,
        max_body_bytes: int = MAX_BODY_BYTES,
        on_request: Callable[[str], None] | None = None,
    ):
        # Connecting should be quick even when producing the page is not.
        self.timeout = (min(timeout_s, 10.0), timeout_s)
        self.pause_s = pause_s
        self.max_attempts = max_attempts
        self.max_total_s = max_total_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_answer_s = max_answer_s
        self.max_body_bytes = max_body_bytes
        self.on_request = on_request
        self.requests_made = 0
        self.not_modified = 0
        self._session = requests.Session()
        self._session.headers["User-Agent"] = user_agent
        for prefix in ("http://", "https://"):
            self._session.mount(prefix, _WatchedAdapter())
        self._request_started = time.monotonic()
        self._last_request_at: float | None = None
        self._rate_limited_until: float | None = None  # epoch seconds, from a response that used the last call

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> PoliteSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None, headers: dict | None = None,
        max_bytes: int | None = None,
    ) -> Fetched:
        """GET one answer, whole. `max_bytes`: this answer's cap on its decoded size (default: the session's)."""
        headers = dict(headers or {})
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        return self._request("GET", url, headers, None, max_bytes)

    def post_json(self, url: str, payload: dict, *, headers: dict | None = None,
                  max_bytes: int | None = None) -> Fetched:
        body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
        headers = {"Content-Type": "application/json", **(headers or {})}
        return self._request("POST", url, headers, body, max_bytes)

    # --- the retry loop -----------------------------------------------------------------------------------

    def _request(self, method: str, url: str, headers: dict, body: bytes | None, max_bytes: int | None) -> Fetched:
        secrets = [v for k, v in headers.items() if k.lower() == "authorization" and v]
        made_before = self.requests_made
        self._request_started = time.monotonic()
        retrying = Retrying(
            retry=retry_if_exception_type(_Retryable),
            # stop_before_delay also stops when the next wait (a far rate-limit reset) would overrun the budget.
            stop=stop_after_attempt(self.max_attempts) | stop_before_delay(self.max_total_s),
            wait=self._wait,
        )
        try:
            return retrying(self._attempt, method, url, headers, body, max_bytes or self.max_body_bytes)
        except RetryError as gave_up:
            exc, attempts = gave_up.last_attempt.exception(), gave_up.last_attempt.attempt_number
            cause, status = exc.cause, exc.status
            if exc.wait_s is not None and attempts < self.max_attempts:
                cause += f" (server asks to wait {exc.wait_s:.0f} s: over the {self.max_total_s:g} s budget)"
        except FetchError as exc:
            cause, status = exc.cause, exc.status
        # Raised outside the except blocks so that no chained exception (holding the request and its
        # Authorization header) travels with the error.
        raise FetchError(url, redact(cause, secrets), self.requests_made - made_before, status, method)

    def _wait(self, retry_state) -> float:
        exc = retry_state.outcome.exception()
        if isinstance(exc, _Retryable) and exc.wait_s is not None:
            return exc.wait_s
        # Exponential backoff with full jitter, so that parallel clients do not retry in step.
        ceiling = min(self.max_backoff_s, self.backoff_s * 2 ** (retry_state.attempt_number - 1))
        return random.uniform(ceiling / 2, ceiling)

    def _attempt(self, method: str, url: str, headers: dict, body: bytes | None, max_bytes: int) -> Fetched:
        self._wait_for_turn(url)
        # This answer's time: its own bound, and no more than what is left of the request's budget.
        left = self.max_total_s - (time.monotonic() - self._request_started)
        seconds = min(self.max_answer_s, left)
        if seconds <= 0:
            raise FetchError(url, f"no time left of the {self.max_total_s:g} s budget", 0)
        self.requests_made += 1
        if self.on_request:
            self.on_request(url)
        error, transient, content, resp = None, True, b"", None
        with _Watch(seconds) as watch:
            try:
                resp = self._session.request(method, url, headers=headers, data=body, timeout=self.timeout,
                                             stream=True)
                if 200 <= resp.status_code < 300:  # other answers' bodies are not read: nothing uses them
                    content = _read_body(resp, max_bytes, watch)
            except _TooLarge as exc:
                error, transient = str(exc), False
            except TRANSIENT_ERRORS as exc:
                error = f"{type(exc).__name__}: {exc}"
                cause = _connect_failure(exc, url)
                if cause is not None:  # no such host, or nothing listening: another try will not change it
                    error, transient = cause, False
            # Invalid URL, too many redirects, a header value http.client refuses (UnicodeError): retrying will
            # not help. The message may quote the Authorization header: _request redacts it.
            except (requests.RequestException, UnicodeError) as exc:
                error, transient = f"{type(exc).__name__}: {exc}", False
            finally:
                if resp is not None:
                    resp.close()  # never drains what is left of an answer given up on
                self._last_request_at = time.monotonic()
            if watch.expired:  # whatever the cut connection raised, the cause is the deadline
                content, error, transient = b"", _too_slow(seconds, self.max_answer_s, self.max_total_s), True
        # Raised here rather than in the except blocks: the requests exception holds the request's headers.
        if error is not None:
            raise _Retryable(error) if transient else FetchError(url, error, 1)
        assert resp is not None

        now = time.time()
        resp_headers = {k.lower(): v for k, v in resp.headers.items() if k.lower() not in PRIVATE_HEADERS}
        rate_limit_wait = _rate_limit_wait(resp_headers, now)
        if rate_limit_wait is not None:  # the next request waits for the reset, whatever this answer was
            self._rate_limited_until = now + rate_limit_wait
        status = resp.status_code
        if status == 304:
            self.not_modified += 1
            return Fetched(url, 304, resp_headers, b"", datetime.now(UTC), body)
        if 200 <= status < 300:
            expected = resp_headers.get("content-length")
            # Belt and braces: urllib3 already checks, but a short body must never pass as data.
            encoded = "content-encoding" in resp_headers  # then Content-Length counts the encoded bytes
            if expected and expected.isdigit() and not encoded and int(expected) != len(content):
                raise _Retryable(f"truncated body: {len(content)} of {expected} bytes", status=status)
            return Fetched(url, status, resp_headers, content, datetime.now(UTC), body)

        retry_after = _retry_after(resp_headers.get("retry-after"), now)
        if status in RETRY_STATUSES or (status == 403 and (rate_limit_wait is not None or retry_after is not None)):
            # GitHub answers an exhausted rate limit with 403 or 429; its secondary limit with 403 + Retry-After.
            wait = retry_after if retry_after is not None else rate_limit_wait
            raise _Retryable(f"HTTP {status}", wait_s=wait, status=status)
        raise FetchError(url, f"HTTP {status}", 1, status)

    def _wait_for_turn(self, url: str) -> None:
        """Space requests by pause_s (counted from the end of the last one); wait out a known-exhausted rate limit."""
        if self._rate_limited_until is not None:
            wait = self._rate_limited_until - time.time()
            if wait > self.max_total_s:
                raise FetchError(url, f"rate limit exhausted for {wait:.0f} s more (over {self.max_total_s:g} s)", 0)
            self._rate_limited_until = None
            if wait > 0:
                time.sleep(wait)
        if self._last_request_at is not None:
            remaining = self.pause_s - (time.monotonic() - self._last_request_at)
            if remaining > 0:
                time.sleep(remaining)


class _TooLarge(Exception):
    """An answer larger than its cap: failed as soon as it passes it, never retried (it would be as large again)."""


def _read_body(resp: requests.Response, max_bytes: int, watch: _Watch) -> bytes:
    """The body, decoded, read as a stream: counted as it comes (a gzip bomb is stopped at the cap, not decoded
    whole first), and checked against the answer's deadline between pieces."""
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and "content-encoding" not in resp.headers and int(declared) > max_bytes:
        raise _TooLarge(f"answer too large: {int(declared)} bytes announced, over the cap of {max_bytes} bytes")
    chunks, size = [], 0
    for chunk in resp.iter_content(_CHUNK):
        size += len(chunk)
        if size > max_bytes:
            raise _TooLarge(f"answer too large: more than {max_bytes} bytes"
                            f"{' once decoded' if 'content-encoding' in resp.headers else ''} (the cap)")
        chunks.append(chunk)
        if watch.expired:
            break  # the caller names the deadline
    return b"".join(chunks)


def _too_slow(seconds: float, max_answer_s: float, max_total_s: float) -> str:
    what = (f"TPSDB_HTTP_MAX_ANSWER_S={max_answer_s:g}" if seconds >= max_answer_s
            else f"what was left of TPSDB_HTTP_MAX_TOTAL_S={max_total_s:g}")
    return f"the answer was not complete after {seconds:.3g} s ({what}): the server sends too slowly or not at all"


def _connect_failure(exc: Exception, url: str) -> str | None:
    """A plain cause for a connection that cannot be made (the host does not resolve, or refuses), else None."""
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    _, host, port = origin(url)
    if isinstance(reason, NameResolutionError):
        return f"cannot resolve the host {host} (no network, or no DNS?)"
    if isinstance(reason, NewConnectionError) and isinstance(
            reason.__cause__ or reason.__context__, ConnectionRefusedError):
        return f"connection refused by {host}:{port} (nothing listens there)"
    return None


# --- the answer's deadline ----------------------------------------------------------------------------------
# A read timeout bounds each socket read, so a server that sends a byte now and then holds a request for ever. The
# watchdog below bounds the whole answer: the connection pools of the session register each connection a request
# takes with the current attempt's watch (a thread-local: requests is synchronous), and at the deadline a timer
# thread shuts the sockets down, which ends any read blocked on them at once.

_current = threading.local()


class _Watch:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False
        self._connections: list = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tpsdb-http-deadline", daemon=True)

    def __enter__(self) -> _Watch:
        _current.watch = self
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        _current.watch = None
        self._done.set()
        self._thread.join()

    def add(self, connection) -> None:
        with self._lock:
            self._connections.append(connection)

    def _run(self) -> None:
        if self._done.wait(self.seconds):
            return
        self.expired = True
        # Again until the attempt ends: a connection still being made at the deadline gets its socket later.
        while True:
            with self._lock:
                for connection in self._connections:
                    _shut(connection)
            if self._done.wait(0.05):
                return


def _shut(connection) -> None:
    sock = getattr(connection, "sock", None)
    if sock is not None:
        try:  # the plain socket's shutdown, also for TLS: it acts on the descriptor, and leaves the SSL object be
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass


def _watched(pool_cls: type) -> type:
    class Watched(pool_cls):
        def _get_conn(self, timeout=None):
            connection = super()._get_conn(timeout)
            watch = getattr(_current, "watch", None)
            if watch is not None:
                watch.add(connection)
            return connection

    Watched.__name__ = f"Watched{pool_cls.__name__}"
    return Watched


_WATCHED_POOLS = {"http": _watched(urllib3.HTTPConnectionPool), "https": _watched(urllib3.HTTPSConnectionPool)}


class _WatchedAdapter(HTTPAdapter):
    """requests' adapter whose connection pools report their connections to the current attempt's watch."""

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def send(self, request, stream=False, timeout=None, verify=True, cert=None, proxies=None):
        response = super().send(request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)
        if response.is_redirect:
            # requests reads a redirect's body whole (decoded) before it follows it, to free the connection: a
            # 302 with a flood or a gzip bomb for a body would escape the size cap. Nothing uses that body: the
            # connection is closed instead, and the body counts as read and empty.
            response.raw.close()
            response._content, response._content_consumed = b"", True
        return response

    def proxy_manager_for(self, proxy, **proxy_kwargs):
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager


def _rate_limit_wait(headers: dict[str, str], now: float) -> float | None:
    """Seconds until GitHub's rate limit resets, when the response says no calls are left."""
    if headers.get("x-ratelimit-remaining") != "0":
        return None
    try:
        reset = float(headers["x-ratelimit-reset"])
    except (KeyError, ValueError):
        return None
    return max(0.0, reset - now) + RESET_MARGIN_S


def _retry_after(value: str | None, now: float) -> float | None:
    """Retry-After as seconds: either a number of seconds or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def redact(text: str, secrets) -> str:
    """text with every rendering of each secret replaced: raw, without its surrounding whitespace, escaped as
    repr() writes it (how requests quotes a refused header value: a trailing CR becomes the two characters
    backslash, r) and as JSON writes it. An Authorization value's token is redacted on its own too."""
    forms = set()
    for secret in secrets:
        _scheme, _, token = (secret or "").partition(" ")
        for value in (secret, token):
            if value and value.strip():
                forms |= {value, value.strip(), repr(value)[1:-1], json.dumps(value)[1:-1],
                          value.encode("unicode_escape").decode("ascii")}
    for form in sorted(forms, key=len, reverse=True):  # the longest first: "bearer X" before "X"
        text = text.replace(form, "[redacted]")
    return text
