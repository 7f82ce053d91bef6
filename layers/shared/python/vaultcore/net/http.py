"""Outbound HTTP client that enforces the egress policy (CWE-918, OWASP SSRF Prevention Cheat Sheet).

Used by the proxy (partner requests with clear card data to third-party targets) and the postback sender
(webhooks to merchant URLs). For every call :class:`SafeHttpClient`:

* validates the URL (:func:`~vaultcore.net.ssrf.validate_target_url`), resolves the host and checks *every*
  address (:func:`~vaultcore.net.ssrf.resolve_and_check`), then connects to a checked address itself. The
  name is never resolved again, so a rebinding DNS record cannot swap in an internal address between check
  and connect. The ``Host`` header, TLS SNI and certificate verification still use the host name
  (``HTTPSConnectionPool(ip, server_hostname=host, assert_hostname=host)``).
* never follows redirects: a 3xx is returned as an ordinary :class:`HttpResponse` and the caller treats it as
  the target's answer (a ``Location`` pointing at ``http://169.254.169.254/`` is therefore never fetched).
  Whoever wants to follow one must call :meth:`SafeHttpClient.send` again, which re-runs every check.
* bounds time: a connect timeout, a read timeout, and a hard wall-clock deadline (at most
  :data:`MAX_TOTAL_TIMEOUT` = 25 s, resolution included) enforced by a watchdog that shuts the socket down, so
  a target that drip-feeds one byte at a time cannot hold the Lambda past its budget.
* bounds size: the request body and the response body (read in chunks up to the cap; the connection is
  closed on excess, never drained). Responses are requested uncompressed (``Accept-Encoding: identity``)
  and never decoded here: no decompression bomb can expand past the cap.
* pools connections per ``(scheme, host, port, ip)`` in a bounded LRU, reused across warm invocations.

Response headers are returned raw (hop-by-hop headers included); the caller filters what it forwards.
``urllib3`` is imported on first use, not at import time: cold start matters.
"""

from __future__ import annotations

import contextvars
import re
import socket
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from vaultcore.net.ssrf import (
    EgressConnectionError,
    EgressDenied,
    EgressError,
    EgressPolicy,
    ParsedTarget,
    resolve_and_check,
    validate_target_url,
)

if TYPE_CHECKING:
    from urllib3 import BaseHTTPResponse, HTTPConnectionPool

__all__ = [
    "MAX_TOTAL_TIMEOUT",
    "EgressError",
    "EgressDenied",
    "EgressConnectionError",
    "EgressTimeout",
    "InvalidRequest",
    "RequestTooLarge",
    "ResponseTooLarge",
    "HttpResponse",
    "SafeHttpClient",
    "get_default_client",
]

#: Upper bound of one call, from resolution to the last body byte (API Gateway itself gives up at 29 s).
MAX_TOTAL_TIMEOUT = 25.0

_ALLOWED_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_BAD_VALUE = re.compile(r"[\r\n\x00]")
# Set by the client itself (Host, framing) or meaningless/harmful on a forwarded request (hop-by-hop,
# RFC 9110 section 7.6.1). Accept-Encoding is replaced by "identity": see the module docstring.
_CLIENT_OWNED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
        "expect",
        "accept-encoding",
    }
)
_CHUNK = 65536


class EgressTimeout(EgressError):
    """The target did not answer within the time budget."""

    default_message = "Target did not respond in time."


class InvalidRequest(EgressError, ValueError):
    """The outbound request itself is malformed (method, header name or value)."""

    default_message = "Outbound request is invalid."


class RequestTooLarge(InvalidRequest):
    """The outbound request body exceeds the client's cap."""

    default_message = "Outbound request body is too large."


class ResponseTooLarge(EgressError):
    """The target's response body exceeds the client's cap; the connection is closed, not drained."""

    default_message = "Target response is too large."


@dataclass(frozen=True)
class HttpResponse:
    """A target's answer. ``headers`` keeps order and duplicates (``Set-Cookie``); names as sent.

    A 3xx is an ordinary response here: redirects are never followed (see the module docstring).
    """

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str, default: str | None = None) -> str | None:
        """First value of header ``name`` (case-insensitive)."""
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return default

    @property
    def is_redirect(self) -> bool:
        return 300 <= self.status < 400


# --------------------------------------------------------------------------------------------------------------
# Wall-clock deadline
# --------------------------------------------------------------------------------------------------------------

# urllib3 timeouts bound each socket operation, not the whole call: a target sending one header byte every
# read_timeout - 1 seconds would never time out. The watchdog enforces the total: when it fires it shuts the
# connection's socket down, which wakes the blocked recv/handshake in the calling thread.
_ACTIVE_WATCHDOG: contextvars.ContextVar[_Watchdog | None] = contextvars.ContextVar(
    "vaultcore_egress_watchdog", default=None
)


class _Watchdog:
    __slots__ = ("_conn", "_lock", "_timer", "fired")

    def __init__(self, seconds: float) -> None:
        self._conn: Any = None
        self._lock = threading.Lock()
        self.fired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def attach(self, conn: Any) -> None:
        with self._lock:
            self._conn = conn
            if self.fired:
                self._shutdown(conn)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            if self._conn is not None:
                self._shutdown(self._conn)

    @staticmethod
    def _shutdown(conn: Any) -> None:
        sock = getattr(conn, "sock", None)
        if sock is None:
            return
        try:
            # socket.socket.shutdown, not SSLSocket.shutdown: the latter also drops the SSL object, which
            # the calling thread may be using at this very moment.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass


def _attach_watchdog(conn: Any) -> None:
    watchdog = _ACTIVE_WATCHDOG.get()
    if watchdog is not None:
        watchdog.attach(conn)


@lru_cache(maxsize=1)
def _pool_classes() -> tuple[type[HTTPConnectionPool], type[HTTPConnectionPool]]:
    """urllib3 pool classes whose connections report themselves to the active watchdog (lazy import)."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class _WatchedHTTPConnection(HTTPConnection):
        def connect(self) -> None:
            _attach_watchdog(self)
            super().connect()

        def request(self, *args: Any, **kwargs: Any) -> None:
            _attach_watchdog(self)
            super().request(*args, **kwargs)

    class _WatchedHTTPSConnection(HTTPSConnection):
        def connect(self) -> None:
            _attach_watchdog(self)
            super().connect()

        def request(self, *args: Any, **kwargs: Any) -> None:
            _attach_watchdog(self)
            super().request(*args, **kwargs)

    class _HTTPPool(HTTPConnectionPool):
        ConnectionCls = _WatchedHTTPConnection

    class _HTTPSPool(HTTPSConnectionPool):
        ConnectionCls = _WatchedHTTPSConnection

    return _HTTPPool, _HTTPSPool


class _NextAddress(Exception):
    """Internal: the connection to this address failed before anything was sent; try the next one."""


# --------------------------------------------------------------------------------------------------------------
# Client
# --------------------------------------------------------------------------------------------------------------


class SafeHttpClient:
    """HTTP client for attacker-influenced URLs. Thread-safe; keep one per process (see :func:`get_default_client`).

    ``policy`` defaults to the strict production policy; handlers pass ``EgressPolicy.from_env()`` so that
    the local runner can reach its stubs. ``ca_certs`` overrides the system trust store (tests).
    """

    def __init__(
        self,
        policy: EgressPolicy | None = None,
        *,
        connect_timeout: float = 5.0,
        read_timeout: float = 20.0,
        max_request_bytes: int = 1_048_576,
        max_response_bytes: int = 4_194_304,
        max_pools: int = 32,
        pool_maxsize: int = 4,
        max_addresses: int = 4,
        ca_certs: str | None = None,
    ) -> None:
        if connect_timeout <= 0 or read_timeout <= 0:
            raise ValueError("timeouts must be positive")
        if connect_timeout + read_timeout > MAX_TOTAL_TIMEOUT:
            raise ValueError(f"connect_timeout + read_timeout must not exceed {MAX_TOTAL_TIMEOUT} s")
        if max_request_bytes < 0 or max_response_bytes < 0 or max_pools < 1 or pool_maxsize < 1 or max_addresses < 1:
            raise ValueError("caps must be positive")
        self.policy = policy or EgressPolicy()
        self.connect_timeout = float(connect_timeout)
        self.read_timeout = float(read_timeout)
        self.max_request_bytes = max_request_bytes
        self.max_response_bytes = max_response_bytes
        self._max_pools = max_pools
        self._pool_maxsize = pool_maxsize
        self._max_addresses = max_addresses
        self._ca_certs = ca_certs
        self._pools: OrderedDict[tuple[str, str, int, str], HTTPConnectionPool] = OrderedDict()
        self._lock = threading.Lock()

    # -- public API ------------------------------------------------------------------------------------------

    def send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        body: bytes | str | None = None,
        timeout: float | None = None,
    ) -> HttpResponse:
        """Send one request and return the target's answer, whatever its status (3xx included).

        ``timeout`` is the total budget in seconds, capped at ``connect_timeout + read_timeout`` (<= 25 s).
        Raises :class:`EgressDenied`, :class:`EgressTimeout`, :class:`EgressConnectionError`,
        :class:`ResponseTooLarge`, :class:`RequestTooLarge` or :class:`InvalidRequest`.
        """
        started = time.monotonic()
        budget = self.connect_timeout + self.read_timeout
        if timeout is not None:
            if timeout <= 0:
                raise ValueError("timeout must be positive")
            budget = min(budget, float(timeout))
        deadline = started + budget

        method = method.upper() if isinstance(method, str) else ""
        if method not in _ALLOWED_METHODS:
            raise InvalidRequest("Outbound request method is not allowed.")
        target = validate_target_url(url, self.policy)
        payload = self._encode_body(body)
        header_dict = self._build_headers(target, headers)

        # Resolution is part of the budget. getaddrinfo has no timeout of its own; the VPC resolver answers
        # or fails within a few seconds.
        addresses = resolve_and_check(target.host, target.port, self.policy)
        if time.monotonic() >= deadline:
            raise EgressTimeout()

        last_error: EgressError = EgressConnectionError()
        for ip in addresses[: self._max_addresses]:
            try:
                return self._attempt(method, target, str(ip), header_dict, payload, deadline)
            except _NextAddress:
                last_error = EgressConnectionError(reason="connect")
                if time.monotonic() >= deadline:
                    raise EgressTimeout() from None
        raise last_error

    def close(self) -> None:
        """Close every pooled connection."""
        with self._lock:
            pools = list(self._pools.values())
            self._pools.clear()
        for pool in pools:
            pool.close()

    def __enter__(self) -> SafeHttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------------------------

    def _encode_body(self, body: bytes | str | None) -> bytes | None:
        if body is None:
            return None
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif not isinstance(body, bytes | bytearray | memoryview):
            raise InvalidRequest("Outbound request body must be bytes.")
        body = bytes(body)
        if len(body) > self.max_request_bytes:
            raise RequestTooLarge()
        return body

    @staticmethod
    def _build_headers(target: ParsedTarget, headers: Mapping[str, str] | Iterable[tuple[str, str]] | None) -> Any:
        from urllib3 import HTTPHeaderDict

        result = HTTPHeaderDict()
        # Host is the name, not the address we connect to: virtual hosting and the target's logs see the
        # configured URL.
        result.add("Host", target.host_header)
        result.add("Accept-Encoding", "identity")
        items = headers.items() if isinstance(headers, Mapping) else (headers or ())
        for name, value in items:
            if not isinstance(name, str) or not isinstance(value, str) or not _TOKEN.match(name):
                raise InvalidRequest("Outbound request header is invalid.")
            if _BAD_VALUE.search(value):
                # CR/LF in a value is request splitting (CWE-113).
                raise InvalidRequest("Outbound request header is invalid.")
            try:
                value.encode("latin-1")
            except UnicodeEncodeError:
                raise InvalidRequest("Outbound request header is invalid.") from None
            if name.lower() in _CLIENT_OWNED_HEADERS:
                continue
            result.add(name, value)
        return result

    def _pool(self, target: ParsedTarget, ip: str) -> HTTPConnectionPool:
        key = (target.scheme, target.host, target.port, ip)
        with self._lock:
            pool = self._pools.get(key)
            if pool is not None:
                self._pools.move_to_end(key)
                return pool
        http_pool, https_pool = _pool_classes()
        if target.scheme == "https":
            new_pool: HTTPConnectionPool = https_pool(
                ip,
                target.port,
                maxsize=self._pool_maxsize,
                block=False,
                retries=False,
                cert_reqs="CERT_REQUIRED",
                ca_certs=self._ca_certs,
                server_hostname=target.host,  # SNI for the name, not the address
                assert_hostname=target.host,  # certificate must match the name
                ssl_minimum_version=ssl.TLSVersion.TLSv1_2,
            )
        else:
            new_pool = http_pool(ip, target.port, maxsize=self._pool_maxsize, block=False, retries=False)
        evicted: list[HTTPConnectionPool] = []
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = self._pools[key] = new_pool
                while len(self._pools) > self._max_pools:
                    evicted.append(self._pools.popitem(last=False)[1])
            else:
                evicted.append(new_pool)
        for old in evicted:
            old.close()
        return pool

    def _attempt(
        self,
        method: str,
        target: ParsedTarget,
        ip: str,
        headers: Any,
        body: bytes | None,
        deadline: float,
    ) -> HttpResponse:
        from urllib3 import Timeout
        from urllib3 import exceptions as u3

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise EgressTimeout()
        pool = self._pool(target, ip)
        timeout = Timeout(connect=min(self.connect_timeout, remaining), read=min(self.read_timeout, remaining))
        watchdog = _Watchdog(remaining)
        token = _ACTIVE_WATCHDOG.set(watchdog)
        response: BaseHTTPResponse | None = None
        try:
            with watchdog:
                try:
                    response = pool.urlopen(
                        method,
                        target.request_target,
                        body=body,
                        headers=headers,
                        retries=False,  # no retries: a request with card data must not be sent twice
                        redirect=False,  # no redirects, ever (SSRF via Location)
                        assert_same_host=False,
                        timeout=timeout,
                        preload_content=False,
                        decode_content=False,
                        release_conn=False,
                    )
                    payload = self._read_capped(response, watchdog)
                except (u3.HTTPError, OSError) as exc:
                    if response is not None:
                        response.close()
                        response.release_conn()
                    if watchdog.fired or time.monotonic() >= deadline:
                        raise EgressTimeout(reason="deadline") from None
                    if isinstance(exc, u3.NewConnectionError) and not isinstance(exc, u3.NameResolutionError):
                        raise _NextAddress() from None
                    if isinstance(exc, u3.TimeoutError | TimeoutError):
                        raise EgressTimeout(reason="socket-timeout") from None
                    if isinstance(exc, u3.SSLError | ssl.SSLError):
                        raise EgressConnectionError(reason="tls") from None
                    raise EgressConnectionError(reason="io") from None
        finally:
            _ACTIVE_WATCHDOG.reset(token)
        return HttpResponse(status=response.status, headers=tuple(response.headers.items()), body=payload)

    def _read_capped(self, response: BaseHTTPResponse, watchdog: _Watchdog) -> bytes:
        cap = self.max_response_bytes
        declared = response.headers.get("Content-Length")
        if declared is not None and declared.strip().isdigit() and int(declared) > cap:
            self._abandon(response)
            raise ResponseTooLarge()
        chunks: list[bytes] = []
        size = 0
        while True:
            # Ask for at most one byte past the cap: enough to know it was exceeded, never more.
            chunk = response.read(min(_CHUNK, cap + 1 - size), decode_content=False)
            if not chunk:
                break
            size += len(chunk)
            if size > cap:
                self._abandon(response)
                raise ResponseTooLarge()
            chunks.append(chunk)
        if watchdog.fired:
            # A close-delimited body ends with EOF, which is also what the watchdog's shutdown looks like:
            # never return a body the deadline may have truncated.
            self._abandon(response)
            raise EgressTimeout(reason="deadline")
        response.release_conn()  # fully read: the connection goes back to the pool
        return b"".join(chunks)

    @staticmethod
    def _abandon(response: BaseHTTPResponse) -> None:
        # Close, never drain: draining would read the oversized body anyway. The pool replaces the connection.
        response.close()
        response.release_conn()


@lru_cache(maxsize=1)
def get_default_client() -> SafeHttpClient:
    """The process-wide client (policy from the environment), so pools survive across warm invocations.

    Created on first use, not at import time (STYLE.md pitfall 4). Tests call ``get_default_client.cache_clear()``.
    """
    return SafeHttpClient(EgressPolicy.from_env())
