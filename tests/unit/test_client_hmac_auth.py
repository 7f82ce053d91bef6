"""clients/python/vault_hmac_auth.py (issue 22): the integrators' ``httpx.Auth`` for the HMAC scheme.

Checked against the recipes of docs/integrators/authentication.md (the openssl one and the standard-library one, "The
HMAC scheme"), against the platform's verifier (``vaultcore.auth``), and on the bytes httpx really sends for JSON,
form, raw and streamed bodies. The end-to-end use with generated clients is tests/e2e/test_generated_clients_e2e.py.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "clients" / "python"))
from vault_hmac_auth import VaultHmacAuth, hmac_authorization, string_to_sign  # noqa: E402

KEY = "Y2RmYzIzZWMyMDYyZmQ5ZTMzMTE3NTQ5ZWMzZjk1NjUzNTIyY2RjYzc0ZTlkMzE5ODBkMWY5NmUyMmRlNWU0Yg=="  # as issued
HEADER = re.compile(r'Hmac username="demo", nonce="([0-9a-f]{32})", timestamp="([0-9]+)", response="([0-9a-f]{64})"')


def _readme_stdlib(partner_id: str, hmac_key: str, path: str, body: bytes, nonce: str, ts: int) -> str:
    """The standard-library example of docs/integrators/authentication.md, with the nonce and timestamp given."""
    to_sign = f"POST {path}\n{nonce}\n{ts}\n\n{hashlib.sha256(body).hexdigest()}"
    response = hmac.new(hmac_key.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
    return f'Hmac username="{partner_id}", nonce="{nonce}", timestamp="{ts}", response="{response}"'


def test_the_header_is_the_readmes_standard_library_example() -> None:
    body = json.dumps({"reference": "py-1"}).encode()
    got = hmac_authorization("demo", KEY, "/api/partner/validate", body, nonce="ab" * 16, timestamp=1795317291)
    assert got == _readme_stdlib("demo", KEY, "/api/partner/validate", body, "ab" * 16, 1795317291)
    assert string_to_sign("/p", "n", 1, b"") == ("POST /p\nn\n1\n\n"
                                                  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")


def test_the_header_is_the_readmes_openssl_recipe() -> None:
    if subprocess.run(["which", "openssl"], capture_output=True).returncode != 0:
        pytest.skip("openssl is not installed")
    body, nonce, ts = '{"reference": "openssl-1"}', "0123456789abcdef" * 2, 1795317291
    body_hash = subprocess.run(["openssl", "dgst", "-sha256", "-r"], input=body.encode(), capture_output=True,
                               check=True).stdout.split()[0].decode()
    to_sign = f"POST /api/partner/validate\n{nonce}\n{ts}\n\n{body_hash}"
    response = subprocess.run(["openssl", "dgst", "-sha256", "-hmac", KEY, "-r"], input=to_sign.encode(),
                              capture_output=True, check=True).stdout.split()[0].decode()
    assert hmac_authorization("demo", KEY, "/api/partner/validate", body.encode(), nonce=nonce,
                              timestamp=ts).endswith(f'response="{response}"')


def test_the_platforms_verifier_accepts_it() -> None:
    from vaultcore.auth.hmac_scheme import build_hmac_header, parse_authorization

    body = b'{"values": [1, 2]}'
    header = hmac_authorization("demo", KEY, "/api/tokenization/tokenize", body, nonce="n-1", timestamp=1700000000)
    assert header == build_hmac_header("demo", KEY.encode(), "/api/tokenization/tokenize", body, nonce="n-1",
                                       timestamp=1700000000)
    creds = parse_authorization(header)
    assert (creds.username, creds.nonce, str(creds.timestamp)) == ("demo", "n-1", "1700000000")
    # the query string is not part of the canonical resource
    assert header == hmac_authorization("demo", KEY, "/api/tokenization/tokenize?omit=1", body, nonce="n-1",
                                        timestamp=1700000000)


def _sent(**request: object) -> tuple[httpx.Request, str]:
    """One request through the auth, captured as sent; the header checked against the bytes on the wire."""
    seen: list[httpx.Request] = []

    def handler(req: httpx.Request) -> httpx.Response:
        req.read()
        seen.append(req)
        return httpx.Response(200, json={"success": True})

    with httpx.Client(transport=httpx.MockTransport(handler), auth=VaultHmacAuth("demo", KEY)) as client:
        assert client.post("http://vault.test/api/partner/validate?omit=1", **request).status_code == 200  # type: ignore[arg-type]
    [req] = seen
    m = HEADER.fullmatch(req.headers["Authorization"])
    assert m, req.headers["Authorization"]
    nonce, ts, _response = m.groups()
    assert req.headers["Authorization"] == _readme_stdlib("demo", KEY, "/api/partner/validate", req.content, nonce,
                                                          int(ts))
    return req, nonce


def test_the_auth_signs_the_exact_bytes_httpx_sends() -> None:
    as_json, n1 = _sent(json={"reference": "r", "amount": 1.5, "name": "é"})
    assert json.loads(as_json.content) == {"reference": "r", "amount": 1.5, "name": "é"}
    as_form, n2 = _sent(data={"account_id": "1", "x": "a b&c"})
    assert as_form.content == b"account_id=1&x=a+b%26c"
    raw, n3 = _sent(content=b'{"reference":  "spaces kept"}')
    assert raw.content == b'{"reference":  "spaces kept"}'

    def chunks() -> Iterator[bytes]:
        yield b'{"reference": '
        yield b'"streamed"}'

    streamed, n4 = _sent(content=chunks())
    assert streamed.content == b'{"reference": "streamed"}'
    empty, n5 = _sent()
    assert empty.content == b""
    assert len({n1, n2, n3, n4, n5}) == 5  # a fresh nonce per request


def test_the_pool_manager_wrapper_signs_what_it_passes_on() -> None:
    """openapi-generator's python clients: JSON text and URL-form fields are signed as the bytes passed to urllib3."""
    from vault_hmac_auth import VaultHmacPoolManager

    calls: list[tuple[str, str, bytes | None, dict[str, str]]] = []

    class Pool:
        def request(self, method: str, url: str, body: bytes | None = None, headers: dict[str, str] | None = None,
                    **kwargs: object) -> str:
            calls.append((method, url, body, dict(headers or {})))
            return "answer"

        def clear(self) -> str:
            return "cleared"

    pool = VaultHmacPoolManager(Pool(), "demo", KEY)
    assert pool.request("POST", "http://vault.test/api/partner/validate?x=1", body='{"reference": "r"}',
                        headers={"Content-Type": "application/json"}, preload_content=False) == "answer"
    assert pool.request("POST", "http://vault.test/api/qsapi/3.8", fields=[("a", "1 2"), ("b", "&")],
                        encode_multipart=False, headers={}) == "answer"
    assert pool.clear() == "cleared"
    for (_method, url, body, headers), path in zip(calls, ("/api/partner/validate", "/api/qsapi/3.8"), strict=True):
        m = HEADER.fullmatch(headers["Authorization"])
        assert m, headers
        assert headers["Authorization"] == _readme_stdlib("demo", KEY, path, body or b"", m.group(1), int(m.group(2)))
    assert calls[1][2] == b"a=1+2&b=%26" and calls[1][3]["Content-Type"] == "application/x-www-form-urlencoded"
    with pytest.raises(ValueError):
        pool.request("POST", "http://vault.test/x", fields=[("a", "1")])
