"""A polite, fault-tolerant HTTP session: the only place tpsdb talks to the network.

Every request carries a descriptive User-Agent and (connect, read) timeouts, requests are spaced by a pause,
validators turn re-fetches into cheap 304s, and transient failures (connection errors, timeouts, truncated
bodies, 429/5xx, GitHub rate limits) are retried with backoff, bounded in attempts and in total time.
A response is only ever returned whole: anything else ends as a FetchError.

Secrets (an Authorization header) never leave this module: they are not copied into Fetched, and
FetchError messages are built from plain strings with no chained exception that could hold the request.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import requests
from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_attempt, stop_before_delay

from tpsdb import __version__

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
        super().__init__(f"{method} {url}: {cause} (after {attempts} attempt{'s' if attempts != 1 else ''})")


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
        on_request: Callable[[str], None] | None = None,
    ):
        # Connecting should be quick even when producing the page is not.
        self.timeout = (min(timeout_s, 10.0), timeout_s)
        self.pause_s = pause_s
        self.max_attempts = max_attempts
        self.max_total_s = max_total_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.on_request = on_request
        self.requests_made = 0
        self.not_modified = 0
        self._session = requests.Session()
        self._session.headers["User-Agent"] = user_agent
        self._last_request_at: float | None = None
        self._rate_limited_until: float | None = None  # epoch seconds, from a response that used the last call

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> PoliteSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def get(
        self, url: str, *, etag: str | None = None, last_modified: str | None = None, headers: dict | None = None
    ) -> Fetched:
        headers = dict(headers or {})
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        return self._request("GET", url, headers, None)

    def post_json(self, url: str, payload: dict, *, headers: dict | None = None) -> Fetched:
        body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
        headers = {"Content-Type": "application/json", **(headers or {})}
        return self._request("POST", url, headers, body)

    # --- the retry loop -----------------------------------------------------------------------------------

    def _request(self, method: str, url: str, headers: dict, body: bytes | None) -> Fetched:
        secrets = [v for k, v in headers.items() if k.lower() == "authorization" and v]
        made_before = self.requests_made
        retrying = Retrying(
            retry=retry_if_exception_type(_Retryable),
            # stop_before_delay also stops when the next wait (a far rate-limit reset) would overrun the budget.
            stop=stop_after_attempt(self.max_attempts) | stop_before_delay(self.max_total_s),
            wait=self._wait,
        )
        try:
            return retrying(self._attempt, method, url, headers, body)
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

    def _attempt(self, method: str, url: str, headers: dict, body: bytes | None) -> Fetched:
        self._wait_for_turn(url)
        self.requests_made += 1
        if self.on_request:
            self.on_request(url)
        error, transient = None, True
        try:
            resp = self._session.request(method, url, headers=headers, data=body, timeout=self.timeout)
            content = resp.content  # reads the whole body: a connection cut mid-body raises here
        except TRANSIENT_ERRORS as exc:
            error = f"{type(exc).__name__}: {exc}"
        # Invalid URL, too many redirects, a header value http.client refuses (UnicodeError): retrying will
        # not help. The message may quote the Authorization header: _request redacts it.
        except (requests.RequestException, UnicodeError) as exc:
            error, transient = f"{type(exc).__name__}: {exc}", False
        finally:
            self._last_request_at = time.monotonic()
        # Raised here rather than in the except blocks: the requests exception holds the request's headers.
        if error is not None:
            raise _Retryable(error) if transient else FetchError(url, error, 1)

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
