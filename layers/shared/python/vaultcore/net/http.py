"""Outbound HTTP client that enforces the egress policy (CWE-918, OWASP SSRF Prevention Cheat Sheet).

Used by the proxy (partner requests with clear card data to third-party targets) and the postback sender
(webhooks to merchant URLs). For every call :class:`SafeHttpClient`:

* validates the URL (:func:`~vaultcore.net.ssrf.validate_target_url`), resolves the host and checks *every*
  address (:func:`~vaultcore.net.ssrf.resolve_and_check`), then connects to a checked address itself. The
  name is never resolved again, so a rebinding DNS record cannot swap in an internal address between check
  and connect. The ``Host`` header, TLS SNI and certificate verification still use the host name: the
  connection opens its socket to the checked address and wraps it with ``server_hostname=host`` under an
  ``ssl.SSLContext`` that requires a valid certificate for that name (TLS 1.2 at least).
* never follows redirects: a 3xx is returned as an ordinary :class:`HttpResponse` and the caller treats it as
  the target's answer (a ``Location`` pointing at ``http://169.254.169.254/`` is therefore never fetched).
  Whoever wants to follow one must call :meth:`SafeHttpClient.send` again, which re-runs every check.
* bounds time: a connect timeout, a read timeout, and a hard wall-clock deadline (at most
  :data:`MAX_TOTAL_TIMEOUT` = 25 s, resolution included) enforced by a watchdog that shuts the socket down, so
  a target that drip-feeds one byte at a time cannot hold the Lambda past its budget.
* bounds size: the request body and the response body (read in chunks up to the cap; the connection is
  closed on excess, never drained). Responses are requested uncompressed (``Accept-Encoding: identity``)
  and never decoded here: no decompression bomb can expand past the cap.
* pools connections per ``(scheme, host, port, ip)`` in a bounded LRU, reused across warm invocations. A
  connection goes back to its pool only after its response was read to the end and did not ask to close.
* never retries: a request that carries card data must not be sent twice. Only when the TCP connect itself
  fails (nothing was sent) is the next checked address tried.

Response headers are returned raw (hop-by-hop headers included); the caller filters what it forwards.
Built on the standard library's ``http.client`` (no ``urllib3``: it costs tens of milliseconds to import, and
cold start matters). Request headers are written line by line: a name given several times goes out as several
lines, in order.

:class:`HttpResponse` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass costs
0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import contextvars
import http.client
import re
import select
import socket
import ssl
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from vaultcore.net.ssrf import (
    EgressConnectionError,
    EgressDenied,
    EgressError,
    EgressPolicy,
    ParsedTarget,
    resolve_and_check,
    validate_target_url,
)
from vaultcore.plain import Frozen, init

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
# Methods that frame an absent body with "Content-Length: 0" (RFC 9110 section 8.6: a user agent should send it
# when a method defines a meaning for content); the others send no framing header without a body.
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
#: Sent when the caller gives no User-Agent (some WAF rule sets refuse a request without one).
_DEFAULT_USER_AGENT = "vaultcore-egress/1"


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


class HttpResponse(Frozen):
    """A target's answer. ``headers`` keeps order and duplicates (``Set-Cookie``); names as sent.

    A 3xx is an ordinary response here: redirects are never followed (see the module docstring).
    """

    __slots__ = ("status", "headers", "body")
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def __init__(self, status: int, headers: tuple[tuple[str, str], ...], body: bytes) -> None:
        init(self, status=status, headers=headers, body=body)

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

# Socket timeouts bound each socket operation, not the whole call: a target sending one header byte every
# read_timeout - 1 seconds would never time out. The watchdog enforces the total: when it fires it shuts the
# connection's socket down, which wakes the blocked recv/send/handshake in the calling thread. It holds the socket
# itself (not the connection object): http.client hands a close-delimited response's socket over to the response
# and forgets it on the connection, and the watchdog must still reach it.
_ACTIVE_WATCHDOG: contextvars.ContextVar[_Watchdog | None] = contextvars.ContextVar(
    "vaultcore_egress_watchdog", default=None
)


class _Watchdog:
    __slots__ = ("_sock", "_lock", "_timer", "fired")

    def __init__(self, seconds: float) -> None:
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self.fired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def attach(self, sock: socket.socket) -> None:
        """Watch ``sock`` from now on (shut it down at once when the deadline has already passed)."""
        with self._lock:
            self._sock = sock
            if self.fired:
                self._shutdown(sock)

    def disarm(self) -> bool:
        """Stop watching (the socket will not be shut down after this); whether the deadline had fired."""
        with self._lock:
            self._sock = None
            return self.fired

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            if self._sock is not None:
                self._shutdown(self._sock)

    @staticmethod
    def _shutdown(sock: socket.socket) -> None:
        try:
            # socket.socket.shutdown, not SSLSocket.shutdown: the latter also drops the SSL object, which
            # the calling thread may be using at this very moment.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass


def _attach_watchdog(sock: socket.socket) -> None:
    watchdog = _ACTIVE_WATCHDOG.get()
    if watchdog is not None:
        watchdog.attach(sock)


# --------------------------------------------------------------------------------------------------------------
# Connections and pools
# --------------------------------------------------------------------------------------------------------------


class _ConnectFailed(Exception):
    """Internal: the TCP connect to the address failed (refused, unreachable): nothing was sent."""


def _open_socket(ip: str, port: int, timeout: float | None) -> socket.socket:
    """A TCP connection to the checked address (never a name), reported to the active watchdog."""
    try:
        sock = socket.create_connection((ip, port), timeout=timeout)
    except (TimeoutError, socket.gaierror):
        raise  # a connect timeout ends the call (socket-timeout); it does not move on to the next address
    except OSError as exc:
        raise _ConnectFailed() from exc
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        sock.close()
        raise
    _attach_watchdog(sock)
    return sock


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Plain HTTP to the checked address ``ip``; the caller writes the ``Host`` header (the name) itself."""

    def connect(self) -> None:
        self.sock = _open_socket(self.host, self.port, self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """TLS to the checked address ``ip``: SNI and certificate verification use ``server_hostname`` (the name)."""

    _context: ssl.SSLContext  # set by HTTPSConnection.__init__

    def __init__(self, ip: str, port: int, *, context: ssl.SSLContext, server_hostname: str) -> None:
        super().__init__(ip, port, context=context)
        self.server_hostname = server_hostname

    def connect(self) -> None:
        sock = self.sock = _open_socket(self.host, self.port, self.timeout)
        # The handshake runs after the wrapped socket is attached, so the watchdog can interrupt it too.
        tls = self._context.wrap_socket(sock, server_hostname=self.server_hostname, do_handshake_on_connect=False)
        self.sock = tls
        _attach_watchdog(tls)
        tls.do_handshake()


def _client_tls_context(ca_certs: str | None) -> ssl.SSLContext:
    """A verified client: TLS >= 1.2, a certificate chaining to the trust store and matching the host name (SAN)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_COMPRESSION | ssl.OP_NO_TICKET
    if sys.version_info >= (3, 13):  # what ssl.create_default_context sets from 3.13 on (urllib3 did the same)
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN | ssl.VERIFY_X509_STRICT
    context.verify_mode = ssl.CERT_REQUIRED
    context.check_hostname = True
    context.hostname_checks_common_name = False  # subjectAltName only
    context.set_alpn_protocols(["http/1.1"])
    if ca_certs:
        context.load_verify_locations(cafile=ca_certs)
    else:
        context.load_default_certs()
    return context


def _is_dropped(conn: http.client.HTTPConnection) -> bool:
    """An idle keep-alive connection the target closed (or wrote to unasked): not to be reused."""
    sock = conn.sock
    if sock is None:
        return True
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        return True  # decrypted bytes nobody asked for
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            poller.register(sock, select.POLLIN)
            return bool(poller.poll(0))
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


class _Pool:
    """Idle keep-alive connections to one ``(scheme, host, port, ip)``: at most ``maxsize`` kept, newest first.

    Never blocks: when every connection is busy a new one is opened, and one returned to a full (or closed)
    pool is closed."""

    __slots__ = ("_new", "_idle", "_lock", "_maxsize", "_closed")

    def __init__(self, new: Any, maxsize: int) -> None:
        self._new = new
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._maxsize = maxsize
        self._closed = False

    def get(self) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                new_conn: http.client.HTTPConnection = self._new()
                return new_conn
            if not _is_dropped(conn):
                return conn
            conn.close()

    def put(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._maxsize:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


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
        self._tls: ssl.SSLContext | None = None  # one per client, made at the first https call
        self._pools: OrderedDict[tuple[str, str, int, str], _Pool] = OrderedDict()
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
        header_lines = self._build_headers(target, headers)
        # Framing is the client's own (callers' Content-Length/Transfer-Encoding are dropped): the body's length,
        # and "0" for a POST/PUT/PATCH without one.
        if payload is not None:
            header_lines.append(("Content-Length", str(len(payload))))
        elif method in _BODY_METHODS:
            header_lines.append(("Content-Length", "0"))

        # Resolution is part of the budget. getaddrinfo has no timeout of its own; the VPC resolver answers
        # or fails within a few seconds.
        addresses = resolve_and_check(target.host, target.port, self.policy)
        if time.monotonic() >= deadline:
            raise EgressTimeout()

        last_error: EgressError = EgressConnectionError()
        for ip in addresses[: self._max_addresses]:
            try:
                return self._attempt(method, target, str(ip), header_lines, payload, deadline)
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
    def _build_headers(
        target: ParsedTarget, headers: Mapping[str, str] | Iterable[tuple[str, str]] | None
    ) -> list[tuple[str, str]]:
        # Host is the name, not the address we connect to: virtual hosting and the target's logs see the
        # configured URL.
        result = [("Host", target.host_header), ("Accept-Encoding", "identity")]
        has_user_agent = False
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
            lowered = name.lower()
            if lowered in _CLIENT_OWNED_HEADERS:
                continue
            has_user_agent = has_user_agent or lowered == "user-agent"
            result.append((name, value))  # one line per value, in order: repeated names stay repeated
        if not has_user_agent:
            result.append(("User-Agent", _DEFAULT_USER_AGENT))
        return result

    def _tls_context(self) -> ssl.SSLContext:
        context = self._tls
        if context is None:
            made = _client_tls_context(self._ca_certs)  # outside the lock: loading the trust store takes a while
            with self._lock:
                if self._tls is None:
                    self._tls = made
                context = self._tls
        return context

    def _pool(self, target: ParsedTarget, ip: str) -> _Pool:
        key = (target.scheme, target.host, target.port, ip)
        with self._lock:
            pool = self._pools.get(key)
            if pool is not None:
                self._pools.move_to_end(key)
                return pool
        port, host = target.port, target.host
        if target.scheme == "https":
            try:
                context = self._tls_context()
            except (OSError, ValueError):  # an unreadable ca_certs bundle (ssl.SSLError is an OSError)
                raise EgressConnectionError(reason="tls") from None

            def new() -> http.client.HTTPConnection:
                # SNI and the certificate check use the name, the socket goes to the checked address
                return _PinnedHTTPSConnection(ip, port, context=context, server_hostname=host)
        else:

            def new() -> http.client.HTTPConnection:
                return _PinnedHTTPConnection(ip, port)

        new_pool = _Pool(new, self._pool_maxsize)
        evicted: list[_Pool] = []
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
        headers: list[tuple[str, str]],
        body: bytes | None,
        deadline: float,
    ) -> HttpResponse:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise EgressTimeout()
        pool = self._pool(target, ip)
        connect_timeout = min(self.connect_timeout, remaining)
        read_timeout = min(self.read_timeout, remaining)
        conn = pool.get()
        watchdog = _Watchdog(remaining)
        token = _ACTIVE_WATCHDOG.set(watchdog)
        response: http.client.HTTPResponse | None = None
        reusable = False
        try:
            with watchdog:
                try:
                    # The connect timeout bounds the TCP connect, the TLS handshake and sending the request;
                    # the read timeout each wait for the response.
                    if conn.sock is None:
                        conn.timeout = connect_timeout
                        conn.connect()
                    else:
                        watchdog.attach(conn.sock)
                    sock = conn.sock
                    assert sock is not None
                    sock.settimeout(connect_timeout)
                    # Every header line is ours: no Host or Accept-Encoding added by http.client.
                    conn.putrequest(method, target.request_target, skip_host=True, skip_accept_encoding=True)
                    for name, value in headers:
                        conn.putheader(name, value)
                    conn.endheaders(body)
                    sock.settimeout(read_timeout)
                    response = conn.getresponse()
                    payload = self._read_capped(response)
                    fired = watchdog.disarm()
                except _ConnectFailed:
                    if watchdog.fired or time.monotonic() >= deadline:
                        raise EgressTimeout(reason="deadline") from None
                    raise _NextAddress() from None
                except (OSError, http.client.HTTPException) as exc:
                    if watchdog.fired or time.monotonic() >= deadline:
                        raise EgressTimeout(reason="deadline") from None
                    if isinstance(exc, TimeoutError):
                        raise EgressTimeout(reason="socket-timeout") from None
                    if isinstance(exc, ssl.SSLError):
                        raise EgressConnectionError(reason="tls") from None
                    if isinstance(exc, socket.gaierror):
                        raise EgressConnectionError(reason="connect") from None
                    raise EgressConnectionError(reason="io") from None
            if fired:
                # A close-delimited body ends with EOF, which is also what the watchdog's shutdown looks like:
                # never return a body the deadline may have truncated.
                raise EgressTimeout(reason="deadline")
            # Fully read (the response closed itself at the end of its body) and keep-alive: back to the pool.
            reusable = response.isclosed() and not response.will_close and conn.sock is not None
        finally:
            _ACTIVE_WATCHDOG.reset(token)
            if reusable:
                pool.put(conn)
            else:
                # Close, never drain: draining would read an oversized or endless body anyway.
                if response is not None:
                    response.close()
                conn.close()
        return HttpResponse(status=response.status, headers=tuple(response.getheaders()), body=payload)

    def _read_capped(self, response: http.client.HTTPResponse) -> bytes:
        cap = self.max_response_bytes
        declared = response.getheader("Content-Length")
        if declared is not None and declared.strip().isdigit() and int(declared) > cap:
            raise ResponseTooLarge()  # the caller closes the connection
        chunks: list[bytes] = []
        size = 0
        while True:
            # Ask for at most one byte past the cap: enough to know it was exceeded, never more. The response
            # undoes the chunked framing (never a content coding: the body is returned as sent).
            chunk = response.read(min(_CHUNK, cap + 1 - size))
            if not chunk:
                break
            size += len(chunk)
            if size > cap:
                raise ResponseTooLarge()  # the caller closes the connection
            chunks.append(chunk)
        if response.length:
            # EOF before the declared Content-Length (http.client returns the short body as if complete; a
            # truncated answer is a failed exchange, never the target's response).
            raise http.client.IncompleteRead(b"".join(chunks), response.length)
        return b"".join(chunks)


@lru_cache(maxsize=1)
def get_default_client() -> SafeHttpClient:
    """The process-wide client (policy from the environment), so pools survive across warm invocations.

    Created on first use, not at import time (STYLE.md pitfall 4). Tests call ``get_default_client.cache_clear()``.
    """
    return SafeHttpClient(EgressPolicy.from_env())
