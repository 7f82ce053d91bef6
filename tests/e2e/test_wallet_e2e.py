"""Wallet payments and device collection over real HTTP against the local runner.

This module starts its own runner, pointed at a stand-in for the wallet vendor's merchant validation endpoint
(local/wallet_vendor.py on the test's own PKI: HTTPS that requires the merchant identity certificate) with
``--env``: WALLET_MERCHANT_VALIDATION_URL replaces the runner's own stand-in, and WALLET_MERCHANT_VALIDATION_CA_FILE
is the runner-only CA bundle the session code honours only with the runner's switch in cert. The documented
sandbox flow on the runner's own stand-in is tests/e2e/test_wallet_readme_e2e.py.
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from tests.e2e.http import admin, post_json, request
from tests.wallet_support import (
    GALA_DIR,
    GALA_MERCHANT_ID,
    MERCHANT_ID,
    SHOP_DOMAIN,
    MerchantValidationStub,
    Pki,
    gala_token,
    gala_wallet_body,
    new_merchant,
    wallet_body,
)
from vaultcore.wallet.errors import W

ROOT = Path(__file__).resolve().parents[2]
PAN = "4111111111111111"


class _Runner:
    def __init__(self, base_url: str, demo: dict, logs: list[Path]) -> None:
        self.base_url, self.demo, self._logs = base_url, demo, logs

    def logs(self) -> str:
        return "".join(p.read_text(errors="replace") for p in self._logs)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("wallet-pki"))


@pytest.fixture(scope="module")
def stub(pki):
    server = MerchantValidationStub(pki)
    yield server
    server.close()


@pytest.fixture(scope="module")
def wrunner(tmp_path_factory, pki, stub):
    from tests.e2e.runner_process import runner_process

    with runner_process(tmp_path_factory.mktemp("wallet-runner"),
                        "--env", f"WALLET_MERCHANT_VALIDATION_URL={stub.url}",
                        "--env", f"WALLET_MERCHANT_VALIDATION_CA_FILE={pki.server_ca_file}") as started:
        yield _Runner(started.base_url, started.demo, [started.stdout, started.stderr])


@pytest.fixture(scope="module")
def merchant():
    return new_merchant()


@pytest.fixture(scope="module")
def shop(wrunner, merchant, pki):
    """A gateway account with fraud scoring, its wallet (the test's own CA chain as trust root) and a client id."""
    status, account = admin(wrunner.base_url, "POST", "/admin/v1/accounts", {"options": {"fraud_scoring": True}})
    assert status == 201
    status, view = admin(wrunner.base_url, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet",
                         wallet_body(merchant, pki))
    assert status == 200, view
    status, client = admin(wrunner.base_url, "POST", f"/admin/v1/accounts/{account['account_id']}/fraud-client")
    assert status == 201
    return {**account, "client_id": client["client_id"]}


def apay_sale(wrunner, shop, token, amount="10.00", **extra):
    return post_json(wrunner.base_url + "/api/qsapi/3.8", {
        "account_id": shop["account_id"], "api_accesskey": shop["api_accesskey"], "response_format": "JSON",
        "transaction_type": "SALE", "tender_type": "APay", "transaction_amount": amount, "currency": "USD",
        "apay_payload": json.dumps(token), **extra})


def test_apay_sale_with_a_token_the_test_signed(wrunner, shop, merchant):
    token = merchant.token(amount=1000, pan=PAN)
    status, body = apay_sale(wrunner, shop, token)
    assert status == 200 and body["transaction_approved"] is True, body
    assert (body["tender_type"], body["card_brand"], body["last4"], body["card_expiration"]) == ("APay", "VISA", "1111", "1229")
    assert body["error_code"] == 0 and body["transaction_amount"] == 10.0
    # The same token again is a replay; a token for another amount is refused with 710.
    status, again = apay_sale(wrunner, shop, token)
    assert (again["error"], again["error_code"], again["transaction_approved"]) == (True, W.REPLAYED, False)
    status, wrong = apay_sale(wrunner, shop, merchant.token(amount=1000), amount="12.00")
    assert wrong["error_code"] == W.AMOUNT_MISMATCH
    # Stored without the device account number; the transaction detail shows the wallet's last four.
    status, detail = admin(wrunner.base_url, "GET",
                           f"/admin/v1/accounts/{shop['account_id']}/transactions/{body['transaction_id']}")
    assert status == 200 and detail["last4"] == "1111" and PAN not in json.dumps(detail)
    assert PAN not in wrunner.logs() and token["paymentData"]["data"][:40] not in wrunner.logs()


def test_apay_sale_on_an_account_configured_from_a_sec1_key(wrunner, merchant):
    """Issue acceptance over HTTP: the published fixture's merchant key as SEC1 PEM (``-----BEGIN EC PRIVATE
    KEY-----``, what ``openssl ecparam -genkey`` writes; tests/vectors/wallet_keys/) configures an account, and a
    token encrypted to that merchant's certificate pays through an APay SALE."""
    status, account = admin(wrunner.base_url, "POST", "/admin/v1/accounts", {})
    assert status == 201
    body = gala_wallet_body("sec1", merchant.chain, domain="gala-e2e.example.com")
    assert body["payment_processing_private_key"].startswith("-----BEGIN EC PRIVATE KEY-----")
    status, view = admin(wrunner.base_url, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet", body)
    assert status == 200, view
    assert view["merchant_identifier"] == GALA_MERCHANT_ID and "PRIVATE KEY" not in json.dumps(view)
    status, sale = apay_sale(wrunner, account, gala_token(merchant.chain, amount=1000))
    assert status == 200 and sale["transaction_approved"] is True, sale
    assert (sale["tender_type"], sale["last4"]) == ("APay", "1111")
    logs = wrunner.logs()
    key_lines = [line for line in (GALA_DIR / "gala-key.sec1.pem").read_text().splitlines() if "-----" not in line]
    assert not [line for line in key_lines if line in logs]


def test_apay_payload_as_base64_and_the_other_request_format(wrunner, shop, merchant):
    import base64

    b64 = base64.b64encode(json.dumps(merchant.token(amount=2550)).encode()).decode()
    status, body = post_json(wrunner.base_url + "/api/qsapi/3.8", {
        "account_id": shop["account_id"], "api_accesskey": shop["api_accesskey"], "transaction_type": "SALE",
        "tender_type": "APay", "transaction_amount": "25.50", "currency": "USD", "apay_payload": b64})
    assert body["transaction_approved"] is True, body
    creds = {"account_id": shop["account_id"], "api_accesskey": shop["api_accesskey"]}
    status, methods = post_json(wrunner.base_url + "/paymentMethods",
                                {**creds, "countryCode": "US", "amount": {"currency": "USD", "value": 1000},
                                 "channel": "Web"})
    assert status == 200 and "applepay" in [m["type"] for m in methods["paymentMethods"]]
    token = merchant.token(amount=1000)
    pay = {**creds, "amount": {"currency": "USD", "value": 1000}, "reference": "order-1",
           "paymentMethod": {"type": "applepay", "applePayToken": json.dumps(token)}}
    status, answer = post_json(wrunner.base_url + "/payments", pay)
    assert status == 200 and answer["resultCode"] == "Authorized", answer
    assert re.fullmatch(r"\d{12}", answer["pspReference"]) and answer["merchantReference"] == "order-1"
    status, answer = post_json(wrunner.base_url + "/payments", pay)  # the same token again
    assert answer["resultCode"] == "Refused" and answer["refusalReasonCode"] == str(W.REPLAYED)
    status, answer = post_json(wrunner.base_url + "/payments", {**pay, "api_accesskey": "0" * 32})
    assert status == 401


def test_wallet_session_against_the_stand_in(wrunner, shop, stub):
    status, body = post_json(wrunner.base_url + "/api/v1/wallet_pay/get_wallet_pay_session", {
        "account_id": shop["account_id"], "api_accesskey": shop["api_accesskey"], "display_name": "Example Shop",
        "referrer": f"https://{SHOP_DOMAIN}/cart", "merchant_id": MERCHANT_ID})
    assert status == 200, body
    assert body["merchantSessionIdentifier"].startswith("SSH") and body["domainName"] == SHOP_DOMAIN
    assert stub.requests[-1]["client_cn"] == f"Merchant ID: {MERCHANT_ID}"
    assert stub.requests[-1]["body"]["initiativeContext"] == SHOP_DOMAIN
    status, body = post_json(wrunner.base_url + "/api/v1/wallet_pay/get_wallet_pay_session", {
        "account_id": shop["account_id"], "api_accesskey": shop["api_accesskey"], "display_name": "Example Shop",
        "referrer": "https://attacker.example.net/", "merchant_id": MERCHANT_ID})
    assert (status, body["error_code"]) == (400, W.REFERRER)


def test_association_file_served_as_text_plain(wrunner, shop):
    content = "7B227073704964223A22...domain association\n"
    status, view = admin(wrunner.base_url, "PUT", f"/admin/v1/accounts/{shop['account_id']}/wallet/domain-association",
                         {"content": content})
    assert status == 200
    url = wrunner.base_url + view["path"]
    status, headers, data = request(url, method="GET", headers={"Host": SHOP_DOMAIN})
    assert (status, headers["content-type"], data.decode()) == (200, "text/plain", content)
    status, headers, _ = request(url, method="GET", headers={"Host": "unknown.example.org"})
    assert status == 404 and headers["content-type"] == "text/plain"


def test_collector_script_and_signals(wrunner, shop):
    base, client_id = wrunner.base_url, shop["client_id"]
    status, headers, script = request(f"{base}/cdn/cs/{client_id}.js", method="GET")
    assert status == 200 and headers["content-type"].startswith("application/javascript") and b"bcn" in script
    assert request(f"{base}/cdn/cs/00000000000000000000.js", method="GET")[0] == 404
    dvci = str(uuid.uuid4())
    report = {"dvci": dvci, "sid": "s1", "pid": "p1", "dvc": "a",
              "signals": {"userAgent": "e2e", "languages": ["en-US"], "timeZone": "UTC", "tzOffset": 0,
                          "screen": {"width": 800, "height": 600, "colorDepth": 24, "pixelRatio": 1},
                          "platform": "Linux", "canvasHash": "cd" * 32}}
    status, headers, data = request(f"{base}/cdn/cs/{client_id}/collect", json.dumps(report),
                                    headers={"Content-Type": "text/plain"})
    assert status == 200 and json.loads(data) == {"received": True, "reused": False}
    assert headers["access-control-allow-origin"] == "*"
    again = request(f"{base}/cdn/cs/{client_id}/collect", json.dumps({**report, "pid": "p2"}),
                    headers={"Content-Type": "text/plain"})
    assert json.loads(again[2])["reused"] is True
    status, stored = admin(base, "GET", f"/admin/v1/accounts/{shop['account_id']}/fraud-client/{client_id}/devices/{dvci}")
    assert status == 200 and stored["signals"]["canvasHash"] == "cd" * 32 and stored["reused"] is True
