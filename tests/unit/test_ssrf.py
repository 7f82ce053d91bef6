"""Egress policy (CWE-918): static URL checks and resolved-address checks."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from vaultcore.net.ssrf import (
    EgressConnectionError,
    EgressDenied,
    EgressPolicy,
    address_denial_reason,
    is_address_allowed,
    resolve_and_check,
    validate_target_url,
)

STRICT = EgressPolicy()
LOCAL = EgressPolicy(allow_http=True, allow_loopback=True)


def fake_getaddrinfo(mapping: dict[str, list[str]]):
    """A getaddrinfo answering from ``mapping`` (host -> addresses), like the system resolver would."""

    def _getaddrinfo(host, port, *args, **kwargs):
        if host not in mapping:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        result = []
        for address in mapping[host]:
            if ":" in address:
                result.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0)))
            else:
                result.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)))
        return result

    return _getaddrinfo


# ---------------------------------------------------------------------------------------------- static checks


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/",
        "https://169.254.169.254/latest/meta-data/",
        "https://0xa9fea9fe/",  # hex
        "https://0XA9FEA9FE/",
        "https://2852039166/",  # decimal
        "https://0251.0376.0251.0376/",  # octal
        "https://0xa9.0xfe.0xa9.0xfe/",
        "https://169.254.43518/",  # short form a.b.c
        "https://169.16689662/",  # short form a.b
        "https://127.1/",
        "https://[::ffff:169.254.169.254]/",  # IPv4-mapped IPv6
        "https://[::ffff:a9fe:a9fe]/",
        "https://[::1]/",
        "https://[fe80::1]/",
        "https://[fe80::1%25eth0]/",
        "https://[64:ff9b::a9fe:a9fe]/",  # NAT64
        "https://[2002:a9fe:a9fe::1]/",  # 6to4
        "https://100.64.0.1/",  # CGNAT
        "https://10.0.0.1/",
        "https://8.8.8.8/",  # public, but raw IP literals are refused as target
        "https://1.2.3.4:443/",
    ],
)
def test_ip_literals_in_any_form_are_refused(url):
    # Given a target URL whose host is an IP address in some spelling
    # When it is validated under the production policy
    # Then it is refused without resolving anything
    with pytest.raises(EgressDenied, match="Target"):
        validate_target_url(url, STRICT)


@pytest.mark.parametrize(
    "url",
    [
        "https://localhost/",
        "https://LOCALHOST./",
        "https://api.localhost/",
        "https://metadata.google.internal/computeMetadata/v1/",
        "https://ip-10-0-0-1.ec2.internal/",
        "https://printer.local/",
        "https://host.localdomain/",
        "https://router.home.arpa/",
        "https://1.0.0.127.in-addr.arpa/",
        "https://metadata/",  # single-label
        "https://instance-data/",
    ],
)
def test_internal_host_names_are_refused(url):
    with pytest.raises(EgressDenied, match="internal name"):
        validate_target_url(url, STRICT)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://api.partner.example.com/", "https"),
        ("ftp://api.partner.com/", "https"),
        ("file:///etc/passwd", "https"),
        ("gopher://api.partner.com/", "https"),
        ("https://user:pass@api.partner.com/", "credentials"),
        ("https://api.partner.com@169.254.169.254/", "credentials"),
        ("https:///path", "host"),
        ("https://api.partner.com\\@evil.com/", "forbidden characters"),
        ("https://api.partner.com/a b", "forbidden characters"),
        ("https://api.partner.com/\r\nX-Injected: 1", "forbidden characters"),
        ("https://ápi.partner.com/", "forbidden characters"),
        ("https://api%2epartner.com/", "not valid"),
        ("https://api.partner.com:0/", "port"),
        ("https://api.partner.com:99999/", "malformed"),
        ("https://[::1/", "malformed"),
        ("https://example.0x1/", "not valid"),
        ("", "required"),
        ("https://" + "a" * 2100 + ".com/", "too long"),
    ],
)
def test_malformed_or_unsafe_urls_are_refused(url, message):
    with pytest.raises(EgressDenied, match=message):
        validate_target_url(url, STRICT)


def test_public_host_name_is_accepted_and_canonicalised():
    target = validate_target_url("HTTPS://API.Partner.COM.:8443/v1/charge?x=1#frag", STRICT)
    assert (target.scheme, target.host, target.port) == ("https", "api.partner.com", 8443)
    assert target.request_target == "/v1/charge?x=1"  # the fragment is never sent
    assert target.host_header == "api.partner.com:8443"
    assert target.url == "https://api.partner.com:8443/v1/charge?x=1"
    assert not target.is_ip_literal


def test_default_port_and_path():
    target = validate_target_url("https://xn--bcher-kva.example.com", STRICT)
    assert target.port == 443
    assert target.request_target == "/"
    assert target.host_header == "xn--bcher-kva.example.com"


def test_allowed_ports_restrict_targets():
    policy = EgressPolicy(allowed_ports=frozenset({443}))
    validate_target_url("https://api.partner.com/", policy)
    with pytest.raises(EgressDenied, match="port"):
        validate_target_url("https://api.partner.com:8080/", policy)


def test_error_message_never_echoes_the_url():
    with pytest.raises(EgressDenied) as info:
        validate_target_url("https://4111111111111111.0x1/", STRICT)
    assert "4111" not in str(info.value)


def test_local_policy_allows_http_and_loopback_literals_only():
    # Given the local runner's policy
    assert validate_target_url("http://127.0.0.1:3001/stub", LOCAL).host == "127.0.0.1"
    assert validate_target_url("http://[::1]:3001/", LOCAL).host_header == "[::1]:3001"
    assert validate_target_url("http://localhost:3001/", LOCAL).host == "localhost"
    # Then still no metadata, private or disguised addresses
    for url in (
        "http://169.254.169.254/",
        "http://0xa9fea9fe/",
        "http://10.0.0.1/",
        "http://[::ffff:169.254.169.254]/",
    ):
        with pytest.raises(EgressDenied):
            validate_target_url(url, LOCAL)
    with pytest.raises(EgressDenied, match="internal name"):
        validate_target_url("http://metadata.google.internal/", LOCAL)


def test_from_env_only_exact_one_relaxes(monkeypatch):
    monkeypatch.delenv("VAULT_ALLOW_LOCAL_EGRESS", raising=False)
    assert EgressPolicy.from_env() == EgressPolicy()
    for value in ("true", "yes", "0", "", " 1"):
        monkeypatch.setenv("VAULT_ALLOW_LOCAL_EGRESS", value)
        assert EgressPolicy.from_env() == EgressPolicy()
    monkeypatch.setenv("VAULT_ALLOW_LOCAL_EGRESS", "1")
    assert EgressPolicy.from_env() == EgressPolicy(allow_http=True, allow_loopback=True, allow_private=False)


# ---------------------------------------------------------------------------------------------- address checks


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.255.255.254", "loopback"),
        ("::1", "loopback"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.169.254", "link-local"),
        ("169.254.170.2", "link-local"),  # ECS task metadata
        ("fd00:ec2::254", "link-local"),  # IMDS over IPv6
        ("fe80::1", "link-local"),
        ("100.64.0.1", "cgnat"),
        ("100.127.255.255", "cgnat"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("255.255.255.255", "reserved"),
        ("192.0.2.1", "documentation"),
        ("198.18.0.1", "benchmarking"),
        ("::ffff:169.254.169.254", "link-local"),  # IPv4-mapped
        ("::ffff:127.0.0.1", "loopback"),
        ("::a9fe:a9fe", "reserved"),  # IPv4-compatible
        ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of the metadata address
        ("64:ff9b::a00:1", "private"),
        ("64:ff9b:1::1", "nat64-local"),
        ("2002:a9fe:a9fe::1", "link-local"),  # 6to4 of the metadata address
        ("2002:7f00:1::1", "loopback"),
        ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "teredo"),
        ("2001:db8::1", "documentation"),
        ("fec0::1", "site-local"),
    ],
)
def test_non_public_addresses_are_refused(address, reason):
    assert address_denial_reason(ipaddress.ip_address(address), STRICT) == reason
    assert not is_address_allowed(ipaddress.ip_address(address), STRICT)


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700::1111", "64:ff9b::808:808", "2002:808:808::1"]
)
def test_public_addresses_are_allowed(address):
    assert is_address_allowed(ipaddress.ip_address(address), STRICT)


def test_allow_private_never_opens_metadata_loopback_or_cgnat():
    policy = EgressPolicy(allow_private=True)
    assert is_address_allowed(ipaddress.ip_address("10.0.0.5"), policy)
    assert is_address_allowed(ipaddress.ip_address("fd12::1"), policy)
    for address in ("169.254.169.254", "fd00:ec2::254", "127.0.0.1", "100.64.0.1", "::ffff:169.254.169.254"):
        assert not is_address_allowed(ipaddress.ip_address(address), policy)


def test_allow_loopback_opens_loopback_only():
    assert is_address_allowed(ipaddress.ip_address("127.0.0.1"), LOCAL)
    assert is_address_allowed(ipaddress.ip_address("::1"), LOCAL)
    assert not is_address_allowed(ipaddress.ip_address("169.254.169.254"), LOCAL)
    assert not is_address_allowed(ipaddress.ip_address("10.0.0.1"), LOCAL)


# ---------------------------------------------------------------------------------------------- resolution


def test_host_name_resolving_to_loopback_is_refused(monkeypatch):
    # Given a public-looking name whose DNS record points at 127.0.0.1
    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo({"evil.example.com": ["127.0.0.1"]}))
    # When it passes the static check but is resolved under the production policy
    target = validate_target_url("https://evil.example.com/", STRICT)
    # Then the resolved address is refused
    with pytest.raises(EgressDenied) as info:
        resolve_and_check(target.host, target.port, STRICT)
    assert info.value.reason == "loopback"
    assert "127" not in str(info.value)  # the internal address is not disclosed


@pytest.mark.parametrize(
    "addresses",
    [
        ["169.254.169.254"],
        ["::ffff:169.254.169.254"],
        ["100.64.0.1"],
        ["fe80::1%eth0"],
        ["::1"],
        ["93.184.216.34", "10.0.0.1"],  # one bad record among good ones refuses the name
        ["2606:4700::1111", "fd00:ec2::254"],
    ],
)
def test_every_resolved_address_must_be_public(monkeypatch, addresses):
    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo({"mixed.example.com": addresses}))
    with pytest.raises(EgressDenied):
        resolve_and_check("mixed.example.com", 443, STRICT)


def test_public_resolution_is_returned_in_order_without_duplicates(monkeypatch):
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        fake_getaddrinfo({"api.partner.com": ["93.184.216.34", "2606:4700::1111", "93.184.216.34"]}),
    )
    assert resolve_and_check("api.partner.com", 443, STRICT) == [
        ipaddress.ip_address("93.184.216.34"),
        ipaddress.ip_address("2606:4700::1111"),
    ]


def test_loopback_resolution_allowed_only_by_local_policy(monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo({"localhost": ["127.0.0.1", "::1"]}))
    assert [str(ip) for ip in resolve_and_check("localhost", 80, LOCAL)] == ["127.0.0.1", "::1"]
    with pytest.raises(EgressDenied):
        resolve_and_check("localhost", 80, STRICT)


def test_unresolvable_name_is_a_connection_error(monkeypatch):
    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo({}))
    with pytest.raises(EgressConnectionError, match="resolved"):
        resolve_and_check("nowhere.example.com", 443, STRICT)


def test_egress_denied_is_a_value_error():
    assert issubclass(EgressDenied, ValueError)
