"""``allowedParentDomains``: host sources as CSP ``frame-ancestors`` takes them, and the parent-origin check.

An entry is ``[scheme "://"] host [":" port]`` (CSP Level 3 ``host-source`` without a path): the host is a DNS
name, optionally with a leading ``*.`` (any subdomain, never the name itself), the port digits or ``*``. Entries
are normalised to lower case with an explicit scheme (``https`` when none is given), so the CSP built from them
is exactly what was validated. Refused: a bare ``*`` or ``*.tld`` wildcard (at least two labels after ``*.``),
IP addresses, ``localhost``, paths, queries, user info, schemes other than ``https``, more than
:data:`MAX_DOMAINS` entries. The certification environment also accepts ``http://localhost:<port>`` and
``http://127.0.0.1:<port>`` (the port required) so that a merchant can test on a laptop; production accepts
``https`` sources only.
"""

from __future__ import annotations

import re

__all__ = ["MAX_DOMAINS", "DomainError", "normalise_source", "normalise_sources", "origin_allowed", "parse_origin"]

MAX_DOMAINS = 10
_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_SOURCE = re.compile(rf"(?:(?P<scheme>[a-z][a-z0-9+.-]*)://)?(?P<host>(?:\*\.)?{_LABEL}(?:\.{_LABEL})*)"
                     r"(?::(?P<port>\*|[0-9]{1,5}))?")
_LOCAL_HOSTS = ("localhost", "127.0.0.1")
_LOCAL = re.compile(r"http://(localhost|127\.0\.0\.1):([0-9]{1,5})")
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<host>[a-z0-9.-]{1,253}|\[[0-9a-f:.]+\])(?::(?P<port>[0-9]{1,5}))?")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class DomainError(ValueError):
    """An entry is not an accepted host source; the message says which rule (never echoes more than the index)."""


def _port_ok(port: str | None) -> bool:
    return port is None or port == "*" or 1 <= int(port) <= 65535


def normalise_source(entry: object, *, cert: bool) -> str:
    """The canonical form of one entry (``scheme://host[:port]``), or :class:`DomainError`."""
    if not isinstance(entry, str) or not 1 <= len(entry) <= 253:
        raise DomainError("must be a string of 1 to 253 characters")
    text = entry.strip().lower()
    local = _LOCAL.fullmatch(text)
    if local:
        if not cert:
            raise DomainError("http://localhost and http://127.0.0.1 are accepted in the certification environment "
                              "only")
        if not 1 <= int(local.group(2)) <= 65535:
            raise DomainError("the port must be 1-65535")
        return text
    m = _SOURCE.fullmatch(text)
    if m is None:
        raise DomainError("must be a host source: [https://]host[:port], the host optionally starting with *.")
    scheme, host, port = m.group("scheme") or "https", m.group("host"), m.group("port")
    if scheme != "https":
        raise DomainError("the scheme must be https (http only for localhost and 127.0.0.1 with a port, in the "
                          "certification environment)")
    labels = host.split(".")
    if host.startswith("*.") and len(labels) < 3:
        raise DomainError("a wildcard needs at least two labels after *. (e.g. *.shop.example)")
    if len(labels) < 2 or host in _LOCAL_HOSTS or labels[-1].isdigit() or host.endswith(".localhost"):
        raise DomainError("must be a public DNS name (no IP address, no localhost, no single-label name)")
    if not _port_ok(port):
        raise DomainError("the port must be 1-65535 or *")
    return f"{scheme}://{host}" + (f":{port}" if port else "")


def normalise_sources(value: object, *, cert: bool) -> list[str]:
    """The validated, normalised, de-duplicated list (order kept); :class:`DomainError` names the bad index."""
    # Empty is allowed (the original's rule): the frame is then embeddable nowhere (frame-ancestors 'none') and
    # used top-level by its instance only; an empty list never widens anything to '*'.
    if not isinstance(value, list) or not 0 <= len(value) <= MAX_DOMAINS:
        raise DomainError(f"must be a list of 0 to {MAX_DOMAINS} host sources")
    out: list[str] = []
    for i, entry in enumerate(value):
        try:
            source = normalise_source(entry, cert=cert)
        except DomainError as exc:
            raise DomainError(f"[{i}] {exc}") from None
        if source not in out:
            out.append(source)
    return out


def parse_origin(origin: object) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of a serialised origin (``https://shop.example:8443``), or None."""
    if not isinstance(origin, str) or len(origin) > 300:
        return None
    m = _ORIGIN.fullmatch(origin)
    if m is None:
        return None
    scheme = m.group("scheme")
    port = int(m.group("port")) if m.group("port") else _DEFAULT_PORTS[scheme]
    return scheme, m.group("host"), port


def _matches(source: str, scheme: str, host: str, port: int) -> bool:
    s_scheme, _, rest = source.partition("://")
    s_host, _, s_port = rest.partition(":")
    if s_scheme != scheme:
        return False
    if s_host.startswith("*."):
        if not host.endswith(s_host[1:]) or host == s_host[2:]:
            return False
    elif s_host != host:
        return False
    if s_port == "*":
        return True
    return (int(s_port) if s_port else _DEFAULT_PORTS[s_scheme]) == port


def origin_allowed(origin: object, sources: list[str]) -> bool:
    """Whether a parent origin (as the browser serialises it) matches one of the normalised ``sources``, with
    CSP's host-source matching (a wildcard matches subdomains only; a missing port is the scheme's default)."""
    parsed = parse_origin(origin)
    if parsed is None or origin != (f"{parsed[0]}://{parsed[1]}" + ("" if parsed[2] == _DEFAULT_PORTS[parsed[0]]
                                                                     else f":{parsed[2]}")):
        return False  # only the browser's own serialisation (lower case, no default port) is accepted
    return any(_matches(source, *parsed) for source in sources)
