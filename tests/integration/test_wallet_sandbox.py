"""The wallet sandbox's artefacts through the platform's handlers (in-process, moto): its settings body configures
an account, its token pays once, and its merchant identity gets a session from the runner's stand-in — which the
session function trusts only as the runner sets it up (not with ENVIRONMENT=prod)."""

from __future__ import annotations

import json
import os

import pytest

from local.wallet_sandbox import ensure_sandbox, make_token, settings_body
from local.wallet_vendor import VendorStandIn, make_server_pki
from tests.helpers import admin, call
from vaultcore.wallet.errors import W, WalletError
from vaultcore.wallet.payments import decrypt_wallet_payment


@pytest.fixture
def sandbox(tmp_path):
    return ensure_sandbox(tmp_path / "wallet-sandbox")[0]


@pytest.fixture
def configured(platform, sandbox):
    status, account = admin(platform, "POST", "/admin/v1/accounts", {})
    assert status == 201
    status, view = admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet", settings_body(sandbox))
    assert status == 200, view
    assert view["trust_roots"] and "PRIVATE KEY" not in json.dumps(view)
    return account


@pytest.fixture
def stand_in(tmp_path, sandbox):
    server = VendorStandIn(make_server_pki(tmp_path / "wallet-vendor"), sandbox.file("root-ca.pem"))
    yield server
    server.close()


def test_a_sandbox_token_pays_once_on_an_account_configured_by_the_sandbox(configured, sandbox):
    token = make_token(sandbox, "10.00", "USD", "4111111111111111")
    card = decrypt_wallet_payment(configured["account_id"], json.dumps(token), "10.00", "USD")
    assert (card.last4, card.brand) == ("1111", "Visa")
    with pytest.raises(WalletError) as excinfo:
        decrypt_wallet_payment(configured["account_id"], json.dumps(token), "10.00", "USD")
    assert excinfo.value.code == W.REPLAYED


def _session(platform, account):
    return call(platform, "WalletSessionFunction", "POST", "/api/v1/wallet_pay/get_wallet_pay_session", {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"], "display_name": "Demo shop",
        "referrer": "https://shop.example.com/checkout", "merchant_id": "merchant.com.example.shop"})


def test_the_session_function_trusts_the_stand_in_only_as_the_runner_sets_it(platform, configured, stand_in,
                                                                            monkeypatch):
    from vaultcore.settings import reset_settings

    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_URL", stand_in.url)
    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_CA_FILE", str(stand_in.server_pki.ca_file))
    assert os.environ["VAULT_ALLOW_LOCAL_EGRESS"] == "1"  # the runner's platform sets it
    status, _, body = _session(platform, configured)
    assert status == 200 and body["domainName"] == "shop.example.com", body
    assert stand_in.requests[-1]["client_merchant_id"] == "merchant.com.example.shop"
    # The same variables in prod: the bundle is ignored, the handshake fails closed, nothing reaches the stand-in.
    monkeypatch.setenv("ENVIRONMENT", "prod")
    reset_settings()
    status, _, body = _session(platform, configured)
    assert (status, body["error_code"]) == (502, W.VALIDATION_FAILED) and len(stand_in.requests) == 1
