"""The runner's stand-in for the wallet vendor (local/wallet_vendor.py) and the runner-only trust of it.

- mutual TLS: no client certificate, or one another CA issued, and there is no session (nothing is answered);
  the sandbox's merchant identity certificate gets the vendor's merchant session object;
- the runner hook points the wallet session function at the stand-in unless ``--env`` names another URL;
- vaultcore.wallet.session honours the stand-in's CA bundle (WALLET_MERCHANT_VALIDATION_CA_FILE) only with the
  runner's switch (VAULT_ALLOW_LOCAL_EGRESS=1) in the certification environment: with ENVIRONMENT=prod or without
  the switch it is ignored, so the platform's own session call to the stand-in fails closed (719).
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
import time
from types import SimpleNamespace

import pytest

from local import wallet_vendor
from local.wallet_sandbox import ensure_sandbox
from local.wallet_token_forge import make_merchant_keys, new_root
from local.wallet_vendor import SESSION_PATH, VendorStandIn, make_server_pki
from vaultcore.wallet import session
from vaultcore.wallet.errors import W, WalletError

MERCHANT = "merchant.com.example.shop"
BODY = {"merchantIdentifier": MERCHANT, "displayName": "Demo shop", "initiative": "web",
        "initiativeContext": "shop.example.com"}


@pytest.fixture
def sandbox(tmp_path):
    return ensure_sandbox(tmp_path / "wallet-sandbox")[0]


@pytest.fixture
def stand_in(tmp_path, sandbox):
    server = VendorStandIn(make_server_pki(tmp_path / "wallet-vendor"), sandbox.file("root-ca.pem"))
    yield server
    server.close()


@pytest.fixture(autouse=True)
def _cold_contexts():
    from vaultcore.settings import reset_settings

    session._contexts.reset()
    yield
    session._contexts.reset()
    reset_settings()  # the tests change ENVIRONMENT


def _post(stand_in, body, cert=None, key=None, path=SESSION_PATH):
    context = ssl.create_default_context(cafile=str(stand_in.server_pki.ca_file))
    if cert:
        context.load_cert_chain(cert, key)
    conn = http.client.HTTPSConnection("localhost", stand_in.port, context=context, timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def _refusals_counted(stand_in, at_least: int, within_s: float = 5.0) -> int:
    """The stand-in's refusal count once it reaches ``at_least`` (or the deadline passes).

    The client can see the TLS alert before the server's request thread has counted the refusal (with TLS 1.3 the
    client's handshake completes first and the server verifies the certificate after), so the count is awaited."""
    deadline = time.monotonic() + within_s
    while stand_in.refused < at_least and time.monotonic() < deadline:
        time.sleep(0.01)
    return stand_in.refused


def test_a_client_without_a_certificate_gets_no_session(stand_in):
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        _post(stand_in, BODY)
    assert _refusals_counted(stand_in, 1) >= 1
    assert stand_in.requests == []


def test_a_client_certificate_from_another_ca_gets_no_session(stand_in, tmp_path):
    key_pem, cert_pem = make_merchant_keys(MERCHANT, issuer=new_root("Not the sandbox"), client_auth=True)
    (tmp_path / "k.pem").write_bytes(key_pem)
    (tmp_path / "c.pem").write_bytes(cert_pem)
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        _post(stand_in, BODY, tmp_path / "c.pem", tmp_path / "k.pem")
    assert stand_in.requests == []


def test_the_merchant_identity_gets_the_vendors_session_object(stand_in, sandbox):
    identity = (sandbox.file("merchant-identity.pem"), sandbox.file("merchant-identity-key.pem"))
    status, answer = _post(stand_in, BODY, *identity)
    assert status == 200
    assert {"epochTimestamp", "expiresAt", "merchantSessionIdentifier", "nonce", "merchantIdentifier", "domainName",
            "displayName", "signature"} <= set(answer)
    assert answer["domainName"] == "shop.example.com" and answer["displayName"] == "Demo shop"
    assert answer["expiresAt"] - answer["epochTimestamp"] == 3_600_000
    assert answer["merchantSessionIdentifier"].startswith("SSH")
    assert stand_in.requests[-1]["client_merchant_id"] == MERCHANT
    # The vendor refuses a request for another merchant than the certificate's, and other paths.
    assert _post(stand_in, {**BODY, "merchantIdentifier": "merchant.com.other"}, *identity)[0] == 400
    assert _post(stand_in, {**BODY, "initiativeContext": ""}, *identity)[0] == 400
    assert _post(stand_in, BODY, *identity, path="/other")[0] == 404


def test_a_new_sandbox_root_is_picked_up_without_a_restart(stand_in, sandbox):
    old_identity = (sandbox.read("merchant-identity.pem"), sandbox.read("merchant-identity-key.pem"))
    sandbox.file("root-ca.pem").unlink()
    renewed, made = ensure_sandbox(sandbox.directory)
    assert "merchant-identity.pem" in made
    status, _ = _post(stand_in, BODY, renewed.file("merchant-identity.pem"), renewed.file("merchant-identity-key.pem"))
    assert status == 200
    old = sandbox.directory / "old"
    old.mkdir()
    (old / "c.pem").write_bytes(old_identity[0])
    (old / "k.pem").write_bytes(old_identity[1])
    with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
        _post(stand_in, BODY, old / "c.pem", old / "k.pem")


# ------------------------------------------------------------------------------------------------ runner hook


def test_the_runner_hook_points_the_session_function_at_the_stand_in(tmp_path, monkeypatch):
    for name in (wallet_vendor.URL_ENV, wallet_vendor.CA_ENV):
        monkeypatch.setenv(name, "unset")  # restored after the test, whatever the hook writes
    platform = SimpleNamespace(state_dir=tmp_path, env_overrides={"OTHER": "1"})
    info = wallet_vendor.start(platform)
    try:
        assert os.environ[wallet_vendor.URL_ENV] == info["url"] == platform.wallet_vendor.url
        assert info["url"].startswith("https://localhost:") and info["url"].endswith(SESSION_PATH)
        assert os.environ[wallet_vendor.CA_ENV] == info["serverCaFile"] == str(tmp_path / "wallet-vendor" / "server-ca.pem")
        assert info["clientCaFile"] == str(tmp_path / "wallet-sandbox" / "root-ca.pem")
        assert platform.env_overrides["OTHER"] == "1" and platform.env_overrides[wallet_vendor.URL_ENV] == info["url"]
    finally:
        platform.wallet_vendor.close()
    # An operator's --env override of the URL wins: no stand-in.
    overridden = SimpleNamespace(state_dir=tmp_path, env_overrides={wallet_vendor.URL_ENV: "https://vendor.example"})
    assert wallet_vendor.start(overridden) is None and not hasattr(overridden, "wallet_vendor")


# ------------------------------------------------------------------------------ runner-only trust of the stand-in


@pytest.mark.parametrize(("switch", "environment", "honoured"), [
    ("1", "cert", True), ("1", " CERT ", True), ("1", "prod", False), (None, "cert", False), ("0", "cert", False),
    ("true", "cert", False), ("", "cert", False), (None, "prod", False),
])
def test_the_ca_bundle_is_honoured_only_by_the_runner_in_cert(monkeypatch, switch, environment, honoured):
    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_CA_FILE", "/tmp/stand-in-ca.pem")
    monkeypatch.setenv("ENVIRONMENT", environment)
    if switch is None:
        monkeypatch.delenv("VAULT_ALLOW_LOCAL_EGRESS", raising=False)
    else:
        monkeypatch.setenv("VAULT_ALLOW_LOCAL_EGRESS", switch)
    assert session.runner_ca_file() == ("/tmp/stand-in-ca.pem" if honoured else None)


def _session_call(stand_in, sandbox):
    return session.request_session(stand_in.url, BODY, sandbox.read("merchant-identity.pem").decode(),
                                   sandbox.read("merchant-identity-key.pem").decode())


def test_the_session_call_reaches_the_stand_in_only_as_the_runner_makes_it(monkeypatch, stand_in, sandbox):
    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_CA_FILE", str(stand_in.server_pki.ca_file))
    monkeypatch.setenv("VAULT_ALLOW_LOCAL_EGRESS", "1")
    monkeypatch.setenv("ENVIRONMENT", "cert")
    answer = _session_call(stand_in, sandbox)
    assert answer["domainName"] == "shop.example.com" and len(stand_in.requests) == 1
    # prod: the same variables, yet the bundle is ignored; the system store does not know the stand-in's CA, so the
    # TLS handshake fails and nothing is sent.
    monkeypatch.setenv("ENVIRONMENT", "prod")
    with pytest.raises(WalletError) as excinfo:
        _session_call(stand_in, sandbox)
    assert (excinfo.value.code, excinfo.value.status) == (W.VALIDATION_FAILED, 502)
    assert len(stand_in.requests) == 1
    # Without the runner's switch neither loopback egress nor the bundle is allowed.
    monkeypatch.setenv("ENVIRONMENT", "cert")
    monkeypatch.delenv("VAULT_ALLOW_LOCAL_EGRESS")
    with pytest.raises(WalletError):
        _session_call(stand_in, sandbox)
    assert len(stand_in.requests) == 1
