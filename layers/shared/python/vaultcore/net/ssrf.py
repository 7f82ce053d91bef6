"""Egress policy against server-side request forgery (CWE-918).

The proxy forwards partner requests carrying clear card data to a configured ``target``, and the postback
sender calls merchant URLs. Both are attacker-influenced URLs fetched from inside our network, so every
outbound call goes through two checks, following the OWASP *Server-Side Request Forgery Prevention Cheat
Sheet*:

1. :func:`validate_target_url` -- static, at configuration time and again before each call: scheme (https
   only unless the local runner allows http), no userinfo, a host name in canonical ASCII form, no raw IP
   literal in *any* spelling (``2852039166``, ``0xa9fea9fe``, ``0251.0376.0251.0376``, ``169.254.43518``,
   ``[::ffff:169.254.169.254]``), no internal names (``localhost``, ``*.internal``, ``*.local``,
   single-label names, ...). The original service forbids ``localhost``, raw IP addresses and internal host
   names as ``target``.
2. :func:`resolve_and_check` -- dynamic, at call time: resolve the name and require *every* resolved address
   to be public. A text check of the URL cannot see where a name points (STYLE.md pitfall 8); checking only
   the first address lets a name with one public and one internal record through. The caller must then
   connect to one of the returned addresses -- never resolve again -- so a short-TTL record cannot change
   between the check and the connection (DNS rebinding). :class:`vaultcore.net.http.SafeHttpClient` does so.

The local runner alone sets ``VAULT_ALLOW_LOCAL_EGRESS=1`` (:meth:`EgressPolicy.from_env`), which allows
plain http and loopback targets so that end-to-end tests can use a local stub. Nothing else relaxes the
policy; link-local (instance metadata ``169.254.169.254`` / ``fd00:ec2::254``) is never allowed.

Error messages are fixed strings: they never echo the URL (which a caller controls and which may carry
secrets) nor the resolved address (which would disclose internal DNS). ``EgressDenied.reason`` is a short
category for the internal log.

:class:`EgressPolicy`, :class:`ParsedTarget` are written by hand for a measured cold start reason
(:mod:`vaultcore.plain`: a dataclass costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms;
docs/design/benchmarks.md).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from typing import TypeAlias
from urllib.parse import urlsplit

from vaultcore.lazy_re import lazy
from vaultcore.plain import Frozen, init

__all__ = [
    "LOCAL_EGRESS_ENV",
    "EgressError",
    "EgressDenied",
    "EgressConnectionError",
    "EgressPolicy",
    "ParsedTarget",
    "IPAddress",
    "validate_target_url",
    "resolve_and_check",
    "address_denial_reason",
    "is_address_allowed",
]

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address

#: Set to ``1`` by the local runner only; never present in the deployed template.
LOCAL_EGRESS_ENV = "VAULT_ALLOW_LOCAL_EGRESS"

_MAX_URL_LENGTH = 2048
_MAX_HOST_LENGTH = 253
_DEFAULT_PORTS = {"http": 80, "https": 443}


class EgressError(Exception):
    """Base class of every outbound-call failure. ``str(exc)`` is safe to return to the caller."""

    default_message = "Outbound request failed."

    def __init__(self, message: str | None = None, *, reason: str | None = None) -> None:
        self.message = message or self.default_message
        #: Short category for the internal log (never a URL, never an address).
        self.reason = reason
        super().__init__(self.message)


class EgressDenied(EgressError, ValueError):
    """The target is refused by the egress policy (CWE-918). Configuration code may catch ``ValueError``."""

    default_message = "Target is not allowed."


class EgressConnectionError(EgressError):
    """The target could not be resolved or reached (DNS failure, refused connection, TLS failure)."""

    default_message = "Target could not be reached."


class EgressPolicy(Frozen):
    """What outbound calls may reach. The default is the production policy: https to public addresses only.

    ``allow_private`` (RFC 1918 / unique-local addresses) exists for explicit test or VPC wiring; it never
    opens link-local, instance metadata, loopback or CGNAT space. ``allowed_ports``, when set, is the only
    set of ports a target may use.
    """

    __slots__ = ("allow_http", "allow_loopback", "allow_private", "allowed_ports")
    allow_http: bool
    allow_loopback: bool
    allow_private: bool
    allowed_ports: frozenset[int] | None

    def __init__(self, allow_http: bool = False, allow_loopback: bool = False, allow_private: bool = False,
                 allowed_ports: frozenset[int] | None = None) -> None:
        init(self, allow_http=allow_http, allow_loopback=allow_loopback, allow_private=allow_private,
             allowed_ports=allowed_ports)

    @classmethod
    def from_env(cls) -> EgressPolicy:
        """Production policy, or the local runner's policy when ``VAULT_ALLOW_LOCAL_EGRESS`` is exactly ``1``.

        Read at call time, never at import time (STYLE.md pitfall 4). Only the exact value ``1`` counts, so a
        stray ``true``/``0``/empty value keeps the strict policy (fail closed).
        """
        local = os.environ.get(LOCAL_EGRESS_ENV, "") == "1"
        return cls(allow_http=local, allow_loopback=local)


class ParsedTarget(Frozen):
    """A target URL that passed :func:`validate_target_url`.

    ``host`` is lower-case ASCII without a trailing dot, IPv6 literals without brackets; ``port`` is the
    effective port; ``request_target`` is the path and query sent on the request line (the fragment is
    dropped: it is never sent on the wire).
    """

    __slots__ = ("scheme", "host", "port", "request_target", "is_ip_literal")
    scheme: str
    host: str
    port: int
    request_target: str
    is_ip_literal: bool

    def __init__(self, scheme: str, host: str, port: int, request_target: str, is_ip_literal: bool = False) -> None:
        init(self, scheme=scheme, host=host, port=port, request_target=request_target, is_ip_literal=is_ip_literal)

    @property
    def host_header(self) -> str:
        """Value of the ``Host`` header (and the name TLS verifies), with the port when not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        """The canonical URL, as it will be requested."""
        return f"{self.scheme}://{self.host_header}{self.request_target}"


# --------------------------------------------------------------------------------------------------------------
# Static URL checks
# --------------------------------------------------------------------------------------------------------------

# Control characters, whitespace and backslashes are refused outright: browsers, urllib and urllib3 disagree
# on how to read them (``https://good.com\@evil``), and such disagreements are how SSRF filters get bypassed.
_FORBIDDEN_URL_CHARS = lazy(r"[\x00-\x20\x7f\\]")
_LABEL = lazy(r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$")
# WHATWG URL standard: a host whose last label is numeric ("1", "0x1f", "0x") is an IPv4 address, however
# many labels it has. getaddrinfo/inet_aton accept the same legacy forms (decimal, octal, hex, short).
_NUMERIC_LABEL = lazy(r"^(?:0x[0-9a-f]*|[0-9]+)$")
_DEC = lazy(r"^[0-9]+$")
_OCT = lazy(r"^[0-7]+$")
_HEX = lazy(r"^[0-9a-f]*$")

# Names that point inside a network by convention or by standard (RFC 6761, RFC 6762, RFC 8375, cloud DNS).
_INTERNAL_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "ip6-localhost",
        "ip6-loopback",
        "broadcasthost",
        "metadata.google.internal",
        "instance-data.ec2.internal",
    }
)
_INTERNAL_SUFFIXES = (
    ".localhost",
    ".local",
    ".localdomain",
    ".internal",
    ".intranet",
    ".corp",
    ".home",
    ".lan",
    ".home.arpa",
    ".arpa",
    ".test",
    ".invalid",
    ".example",
)


def _parse_legacy_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """Parse the IPv4 forms resolvers accept: ``a.b.c.d``, ``a.b.c``, ``a.b``, ``a``, each part decimal,
    octal (leading 0) or hex (0x). Returns ``None`` when the text is not such a form."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        # int() alone would accept "1_0", " 1" and "+1": validate the digits first.
        if part.startswith("0x"):
            digits = part[2:]
            if not _HEX.match(digits):
                return None
            values.append(int(digits, 16) if digits else 0)
        elif len(part) > 1 and part.startswith("0"):
            if not _OCT.match(part):
                return None
            values.append(int(part, 8))
        elif _DEC.match(part):
            values.append(int(part))
        else:
            return None
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = last
    for i, v in enumerate(head):
        number += v << (8 * (3 - i))
    return ipaddress.IPv4Address(number)


def _unwrap_literal(ip: IPAddress) -> IPAddress:
    embedded = _embedded_ipv4(ip) if isinstance(ip, ipaddress.IPv6Address) else None
    return embedded if embedded is not None else ip


def validate_target_url(url: str, policy: EgressPolicy | None = None) -> ParsedTarget:
    """Check a target URL without resolving it (configuration time and before each call).

    Raises :class:`EgressDenied` with a fixed message. A URL that passes may still be refused by
    :func:`resolve_and_check` at call time, where the name's addresses are known.
    """
    policy = policy or EgressPolicy()
    if not isinstance(url, str) or not url:
        raise EgressDenied("Target URL is required.", reason="empty")
    if len(url) > _MAX_URL_LENGTH:
        raise EgressDenied("Target URL is too long.", reason="too-long")
    if _FORBIDDEN_URL_CHARS.search(url) or not url.isascii():
        raise EgressDenied("Target URL contains forbidden characters.", reason="characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise EgressDenied("Target URL is malformed.", reason="malformed") from None

    scheme = parts.scheme.lower()
    allowed_schemes = ("https", "http") if policy.allow_http else ("https",)
    if scheme not in allowed_schemes:
        raise EgressDenied("Target URL must use https.", reason="scheme")
    # Userinfo is refused: it has no use for a target and is the classic filter-confusion vector
    # (``https://trusted.com@evil.com``); credentials belong in configured headers.
    if "@" in parts.netloc:
        raise EgressDenied("Target URL must not contain credentials.", reason="userinfo")
    raw_host = parts.hostname
    if not raw_host:
        raise EgressDenied("Target URL must name a host.", reason="no-host")
    if port is None:
        port = _DEFAULT_PORTS[scheme]
    if not 1 <= port <= 65535:
        raise EgressDenied("Target port is not allowed.", reason="port")
    if policy.allowed_ports is not None and port not in policy.allowed_ports:
        raise EgressDenied("Target port is not allowed.", reason="port")

    host, literal = _check_host(raw_host, bracketed=parts.netloc.startswith("["), policy=policy)

    request_target = parts.path or "/"
    if not request_target.startswith("/"):
        raise EgressDenied("Target URL is malformed.", reason="malformed")
    if parts.query:
        request_target = f"{request_target}?{parts.query}"
    return ParsedTarget(scheme=scheme, host=host, port=port, request_target=request_target, is_ip_literal=literal)


def _check_host(host: str, *, bracketed: bool, policy: EgressPolicy) -> tuple[str, bool]:
    """Return the canonical host and whether it is an IP literal, or raise :class:`EgressDenied`."""
    if bracketed:
        # Zone identifiers ("%25eth0") only make sense for link-local addresses, which are refused anyway.
        try:
            ip: IPAddress = ipaddress.IPv6Address(host)
        except ValueError:
            raise EgressDenied("Target URL is malformed.", reason="malformed") from None
        return _check_literal(ip, policy), True

    host = host[:-1] if host.endswith(".") else host
    if not host or len(host) > _MAX_HOST_LENGTH:
        raise EgressDenied("Target host is not valid.", reason="host")
    labels = host.split(".")
    if _NUMERIC_LABEL.match(labels[-1]):
        legacy = _parse_legacy_ipv4(host)
        if legacy is None:
            raise EgressDenied("Target host is not valid.", reason="host")
        return _check_literal(legacy, policy), True
    # Only LDH labels: "%", "[", unicode and friends are how parsers are made to disagree. IDNs must be
    # configured in their punycode ("xn--") form, so no Unicode normalisation (e.g. full-width digits
    # folding to "127.0.0.1") happens between this check and the resolver.
    if not all(_LABEL.match(label) for label in labels):
        raise EgressDenied("Target host is not valid.", reason="host")

    loopback_name = host == "localhost" or host.endswith(".localhost")
    if loopback_name and policy.allow_loopback:
        # Allowed for the local runner; resolve_and_check still requires the addresses to be loopback.
        return host, False
    if host in _INTERNAL_NAMES or host.endswith(_INTERNAL_SUFFIXES):
        raise EgressDenied("Target host is an internal name.", reason="internal-name")
    if len(labels) < 2:
        # Single-label names ("metadata", "redis", "instance-data") resolve through search domains to
        # internal services; a public target always has a registrable domain.
        raise EgressDenied("Target host is an internal name.", reason="internal-name")
    return host, False


def _check_literal(ip: IPAddress, policy: EgressPolicy) -> str:
    # The original forbids raw IP addresses as target; the only exception is a loopback literal for the
    # local runner (http://127.0.0.1:PORT stubs).
    if policy.allow_loopback and _unwrap_literal(ip).is_loopback:
        return str(ip)
    raise EgressDenied("Target must be a host name, not an IP address.", reason="ip-literal")


# --------------------------------------------------------------------------------------------------------------
# Address checks
# --------------------------------------------------------------------------------------------------------------

_V4_BLOCKS = tuple(
    (ipaddress.IPv4Network(net), reason)
    for net, reason in (
        ("127.0.0.0/8", "loopback"),
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "cgnat"),
        ("169.254.0.0/16", "link-local"),  # instance metadata, ECS task metadata, VPC DNS
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "reserved"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),  # includes 255.255.255.255
    )
)
_V6_BLOCKS = tuple(
    (ipaddress.IPv6Network(net), reason)
    for net, reason in (
        ("::1/128", "loopback"),
        ("::/128", "unspecified"),
        ("::/96", "reserved"),  # IPv4-compatible (deprecated); stdlib calls ::a9fe:a9fe "global"
        ("::ffff:0:0:0/96", "reserved"),  # IPv4-translated (SIIT)
        ("64:ff9b:1::/48", "nat64-local"),
        ("100::/64", "reserved"),  # discard-only
        ("2001::/32", "teredo"),
        ("2001:db8::/32", "documentation"),
        ("3fff::/20", "documentation"),
        ("fd00:ec2::/32", "link-local"),  # AWS IMDS / DNS over IPv6 (fd00:ec2::254): never, even if private ok
        ("fc00::/7", "private"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_NAT64_WKP = ipaddress.IPv6Network("64:ff9b::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for when the network delivers it to IPv4 (mapped, NAT64, 6to4)."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in _NAT64_WKP:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.sixtofour


def address_denial_reason(ip: IPAddress, policy: EgressPolicy | None = None) -> str | None:
    """Why ``ip`` may not be contacted under ``policy`` (a short category), or ``None`` when it may.

    Explicit tables come first because the stdlib's ``is_global``/``is_private`` changed across patch
    releases and calls some embedding forms (``::a9fe:a9fe``, ``64:ff9b::a9fe:a9fe``) global.
    """
    policy = policy or EgressPolicy()
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            ip = ipaddress.IPv6Address(str(ip).split("%", 1)[0])
        embedded = _embedded_ipv4(ip)
        if embedded is not None:
            # ::ffff:169.254.169.254, 64:ff9b::a9fe:a9fe and 2002:a9fe:a9fe:: all reach 169.254.169.254.
            return address_denial_reason(embedded, policy)
        table: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str], ...] = _V6_BLOCKS
    else:
        table = _V4_BLOCKS
    for network, reason in table:
        if ip in network:
            if reason == "loopback" and policy.allow_loopback:
                return None
            if reason == "private" and policy.allow_private:
                return None
            return reason
    # Catch-all for anything the tables miss (new IANA special-purpose blocks).
    if ip.is_multicast or ip.is_reserved or ip.is_unspecified or ip.is_link_local:
        return "reserved"
    if not ip.is_global:
        return "non-global"
    return None


def is_address_allowed(ip: IPAddress, policy: EgressPolicy | None = None) -> bool:
    """True when ``ip`` is a public address, or loopback/private explicitly allowed by ``policy``."""
    return address_denial_reason(ip, policy) is None


def resolve_and_check(host: str, port: int, policy: EgressPolicy | None = None) -> list[IPAddress]:
    """Resolve ``host`` and return its addresses, in resolver order, if *every* one is allowed.

    One internal address among public ones refuses the whole name: an attacker controls which record a
    later resolution returns. The caller must connect to one of the returned addresses and must not resolve
    the name again (DNS rebinding, OWASP SSRF cheat sheet).

    Raises :class:`EgressDenied` (an address is not allowed) or :class:`EgressConnectionError` (the name
    does not resolve).
    """
    policy = policy or EgressPolicy()
    try:
        infos = socket.getaddrinfo(host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        raise EgressConnectionError("Target host could not be resolved.", reason="dns") from None
    addresses: list[IPAddress] = []
    for family, _type, _proto, _canon, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            raise EgressDenied("Target address is not allowed.", reason="family")
        try:
            ip = ipaddress.ip_address(sockaddr[0])
        except ValueError:
            # Fail closed on anything we cannot classify.
            raise EgressDenied("Target address is not allowed.", reason="unparsable") from None
        reason = address_denial_reason(ip, policy)
        if reason is not None:
            raise EgressDenied("Target address is not allowed.", reason=reason)
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise EgressConnectionError("Target host could not be resolved.", reason="dns")
    return addresses
