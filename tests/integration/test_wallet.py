"""Wallet settings, token decryption service, wallet session (mutual TLS stand-in), association file,
the /paymentMethods format — in-process handlers on moto."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

from local.wallet_token_forge import make_merchant_keys, make_test_chain
from tests.helpers import admin, call
from tests.wallet_support import (
    GALA_DIR,
    GALA_MERCHANT_ID,
    GALA_PASSPHRASE,
    MERCHANT_ID,
    SHOP_DOMAIN,
    MerchantValidationStub,
    Pki,
    gala_certificate_pem,
    gala_key_fields,
    gala_token,
    gala_vector,
    gala_wallet_body,
    new_merchant,
    wallet_body,
)
from vaultcore.store.aws import dynamodb
from vaultcore.wallet.checkout_api import CHECKOUT_ERRORS
from vaultcore.wallet.errors import W, WalletError
from vaultcore.wallet.payments import decrypt_wallet_payment
from vaultcore.wallet.session import SESSION_ERRORS


@pytest.fixture
def merchant():
    return new_merchant()


@pytest.fixture
def account(platform):
    status, body = admin(platform, "POST", "/admin/v1/accounts", {"options": {"fraud_scoring": True}})
    assert status == 201, body
    return body


@pytest.fixture
def wallet_account(platform, account, merchant):
    status, body = admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet", wallet_body(merchant))
    assert status == 200, body
    return account


def refused(account_id: str, payload, amount="10.00", currency="USD") -> int:
    with pytest.raises(WalletError) as excinfo:
        decrypt_wallet_payment(account_id, payload, amount, currency)
    return excinfo.value.code


# ------------------------------------------------------------------------------------------------ settings


def test_wallet_settings_are_stored_wrapped_and_shown_without_private_keys(platform, account, merchant):
    path = f"/admin/v1/accounts/{account['account_id']}/wallet"
    assert admin(platform, "GET", path)[0] == 404
    status, view = admin(platform, "PUT", path, wallet_body(merchant, domains=["Shop.Example.com", "https://pay.example.com/x"]))
    assert status == 200
    assert view["domains"] == [SHOP_DOMAIN, "pay.example.com"] and view["verify_signature"] is True
    assert view["merchant_identifier"] == MERCHANT_ID and len(view["trust_roots"]) == 1
    assert "payment_processing_private_key" not in json.dumps(view) and "PRIVATE KEY" not in json.dumps(view)
    assert admin(platform, "GET", path)[1] == view
    # At rest: the Registry item holds no PEM key or certificate in clear, only the KMS envelope.
    items = dynamodb().scan(TableName="RegistryTable")["Items"]
    raw = json.dumps(items)
    assert "PRIVATE KEY" not in raw and merchant.cert_pem.decode().splitlines()[1] not in raw
    # A PUT without the keys keeps them (the operator changes domains without re-sending secrets).
    body = wallet_body(merchant, domains=["other.example.com"])
    for name in ("payment_processing_private_key", "payment_processing_certificate"):
        body.pop(name)
    status, view = admin(platform, "PUT", path, body)
    assert status == 200 and view["domains"] == ["other.example.com"]
    assert view["payment_processing_public_key_hash"]


@pytest.mark.parametrize(("changes", "fragment"), [
    ({"merchant_identifier": ""}, "merchant_identifier"),
    ({"payment_processing_private_key": None}, "payment_processing_private_key is required"),
    ({"payment_processing_private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"}, "readable"),
    ({"domains": ["not a domain"]}, "domains"),
    ({"domains": ["10.0.0.1"]}, "domains"),
    ({"verify_signature": "no"}, "boolean"),
    ({"trust_roots": ["nope"]}, "trust_roots"),
    ({"merchant_identifier": "merchant.com.other"}, "merchant identifier"),
    ({"merchant_identity_certificate": "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----"}, "go together"),
])
def test_wallet_settings_validation(platform, account, merchant, changes, fragment):
    status, body = admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet",
                         {k: v for k, v in wallet_body(merchant, **changes).items() if v is not None})
    assert status == 400 and fragment in body["errMessage"]


def test_certificate_must_hold_the_private_keys_public_key(platform, account, merchant):
    _, other_cert = make_merchant_keys(MERCHANT_ID)
    status, body = admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet",
                         wallet_body(merchant, payment_processing_certificate=other_cert.decode()))
    assert status == 400 and "public key" in body["errMessage"]


def test_a_domain_belongs_to_one_account_and_unknown_accounts_are_404(platform, wallet_account, merchant):
    _, other = admin(platform, "POST", "/admin/v1/accounts", {})
    status, body = admin(platform, "PUT", f"/admin/v1/accounts/{other['account_id']}/wallet", wallet_body(merchant))
    assert status == 409
    assert admin(platform, "PUT", "/admin/v1/accounts/999999999999/wallet", wallet_body(merchant))[0] == 404


def test_verify_signature_false_is_refused_outside_cert(platform, account, merchant, monkeypatch):
    from vaultcore.settings import reset_settings

    monkeypatch.setenv("ENVIRONMENT", "prod")
    reset_settings()
    status, body = admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet",
                         wallet_body(merchant, verify_signature=False))
    assert status == 400 and "certification environment" in body["errMessage"]


# ----------------------------------------------------------------------------------------- decryption


def test_a_valid_token_decrypts_once_in_every_payload_form(platform, wallet_account, merchant):
    account_id = wallet_account["account_id"]
    token = merchant.token(amount=1000)
    card = decrypt_wallet_payment(account_id, json.dumps(token), "10.00", "USD")
    assert (card.last4, card.expiry_mmyy, card.brand, card.eci) == ("1111", "1229", "Visa", "7")
    assert card.network == "Visa" and card.transaction_id == token["paymentData"]["header"]["transactionId"]
    assert refused(account_id, json.dumps(token)) == W.REPLAYED
    b64 = base64.b64encode(json.dumps(merchant.token(amount=250, full=False)).encode()).decode()
    assert decrypt_wallet_payment(account_id, b64, "2.50", "USD").last4 == "1111"


def test_each_refusal_has_its_code(platform, wallet_account, merchant):
    account_id = wallet_account["account_id"]
    assert refused(account_id, "") == W.PAYLOAD_MISSING
    assert refused(account_id, "{nope") == W.PAYLOAD_MALFORMED
    assert refused(account_id, json.dumps(merchant.token(amount=1000)), amount="10.01") == W.AMOUNT_MISMATCH
    assert refused(account_id, json.dumps(merchant.token(amount=1000)), currency="EUR") == W.CURRENCY_MISMATCH
    assert refused(account_id, json.dumps(merchant.token(chain=make_test_chain()))) == W.CHAIN_INVALID
    old = datetime.now(UTC) - timedelta(minutes=10)
    assert refused(account_id, json.dumps(merchant.token(signing_time=old))) == W.SIGNING_TIME
    tampered = merchant.token()
    tampered["paymentData"]["data"] = base64.b64encode(b"x" * 64).decode()
    assert refused(account_id, json.dumps(tampered)) == W.SIGNATURE_INVALID
    stranger = new_merchant()
    foreign = stranger.token(chain=merchant.chain)  # signed by the trusted chain, encrypted for another key
    assert refused(account_id, json.dumps(foreign)) == W.KEY_MISMATCH
    assert refused(account_id, json.dumps(merchant.token(expiration="200101"))) == W.CARD_EXPIRED
    v2 = merchant.token()
    v2["paymentData"]["version"] = "RSA_v1"
    assert refused(account_id, json.dumps(v2)) == W.UNSUPPORTED_VERSION
    # A refused token was not consumed: the same token with the right amount still pays once.
    token = merchant.token(amount=1000)
    assert refused(account_id, json.dumps(token), amount="9.99") == W.AMOUNT_MISMATCH
    assert decrypt_wallet_payment(account_id, json.dumps(token), "10.00", "USD").last4 == "1111"


def test_not_configured_and_trust_roots(platform, account, merchant):
    account_id = account["account_id"]
    assert refused(account_id, json.dumps(merchant.token())) == W.NOT_CONFIGURED
    body = wallet_body(merchant)
    body.pop("trust_roots")
    assert admin(platform, "PUT", f"/admin/v1/accounts/{account_id}/wallet", body)[0] == 200
    assert refused(account_id, json.dumps(merchant.token())) == W.NO_TRUST_ROOT
    # The stack-wide default applies to accounts without roots of their own.
    assert admin(platform, "GET", "/admin/v1/wallet/trust-roots")[0] == 404
    status, view = admin(platform, "PUT", "/admin/v1/wallet/trust-roots", {"trust_roots": [merchant.chain.root_pem.decode()]})
    assert status == 200 and len(view["trust_roots"]) == 1
    from vaultcore.cache import reset_container_caches as reset_caches

    reset_caches()
    assert decrypt_wallet_payment(account_id, json.dumps(merchant.token()), "10.00", "USD").last4 == "1111"


def test_signature_checks_are_skipped_only_when_turned_off_in_cert(platform, account, merchant):
    account_id = account["account_id"]
    admin(platform, "PUT", f"/admin/v1/accounts/{account_id}/wallet", wallet_body(merchant, verify_signature=False))
    untrusted = merchant.token(chain=make_test_chain(), signing_time=datetime.now(UTC) - timedelta(days=3))
    assert decrypt_wallet_payment(account_id, json.dumps(untrusted), "10.00", "USD").last4 == "1111"


# --------------------------------------------------------------------------------------------- session


@pytest.fixture
def pki(tmp_path):
    return Pki(tmp_path)


@pytest.fixture
def stub(pki):
    server = MerchantValidationStub(pki)
    yield server
    server.close()


def session_call(platform, body):
    return call(platform, "WalletSessionFunction", "POST", "/api/v1/wallet_pay/get_wallet_pay_session", body)


def test_wallet_session_through_mutual_tls(platform, account, merchant, pki, stub, monkeypatch):
    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_URL", stub.url)
    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_CA_FILE", str(pki.server_ca_file))
    account_id = account["account_id"]
    assert admin(platform, "PUT", f"/admin/v1/accounts/{account_id}/wallet", wallet_body(merchant, pki))[0] == 200
    creds = {"account_id": account_id, "api_accesskey": account["api_accesskey"]}
    status, _, body = session_call(platform, {**creds, "display_name": "Example Shop",
                                              "referrer": f"https://{SHOP_DOMAIN}/checkout", "merchant_id": MERCHANT_ID})
    assert status == 200, body
    assert body["merchantSessionIdentifier"].startswith("SSH") and body["domainName"] == SHOP_DOMAIN
    sent = stub.requests[-1]
    assert sent["body"] == {"merchantIdentifier": MERCHANT_ID, "displayName": "Example Shop", "initiative": "web",
                            "initiativeContext": SHOP_DOMAIN}
    assert sent["client_cn"] == f"Merchant ID: {MERCHANT_ID}" and sent["path"] == "/paymentservices/paymentSession"

    ok = {**creds, "display_name": "Example Shop", "referrer": SHOP_DOMAIN, "merchant_id": MERCHANT_ID}
    for changes, code, http in (({"referrer": "evil.example.net"}, W.REFERRER, 400),
                                ({"merchant_id": "merchant.com.other"}, W.MERCHANT_ID, 400),
                                ({"api_accesskey": "0" * 32}, 102, 401),
                                # gateway codes only (docs/integrators/wallets.md), never error_code 400
                                ({"display_name": ""}, 200, 400), ({"merchant_id": None}, 200, 400),
                                ({"display_name": "x" * 65}, 219, 400), ({"referrer": 7}, 219, 400),
                                ({"account_id": None}, 200, 401), ({"account_id": "12"}, 101, 401)):
        status, _, body = session_call(platform, {**ok, **changes})
        assert (status, body["error_code"]) == (http, code), (changes, body)
        assert code in SESSION_ERRORS and f"HTTP {http}" in SESSION_ERRORS[code]  # the documented pair
    for raw in ("[1, 2]", '"text"', "not json"):
        status, _, body = session_call(platform, raw)
        assert (status, body["error_code"], body["error"]) == (400, 100, True), (raw, body)
    # The vendor's failure is 719 (HTTP 502), never its body.
    stub.status = 500
    status, _, body = session_call(platform, ok)
    assert (status, body["error_code"]) == (502, W.VALIDATION_FAILED)


def test_wallet_session_gate_refusals_and_internal_errors_keep_their_statuses(platform, account, monkeypatch):
    # The input gate: error_code 100 with HTTP 400, like a body that is not one JSON object.
    status, _, body = session_call(platform, '{"a":' * 40 + "1" + "}" * 40)
    assert (status, body["error_code"], body["error"]) == (400, 100, True), body
    # A dependency failing while authenticating is error 1 (HTTP 500), not an authentication failure (401).
    from vaultcore.errors import DependencyError
    from vaultcore.gateway import accounts

    def unavailable(*_a, **_k):
        raise DependencyError("Internal error: a dependency is unavailable.")

    monkeypatch.setattr(accounts, "lookup_account", unavailable)
    status, _, body = session_call(platform, {"account_id": account["account_id"],
                                              "api_accesskey": account["api_accesskey"], "display_name": "Shop",
                                              "referrer": SHOP_DOMAIN, "merchant_id": MERCHANT_ID})
    assert (status, body["error_code"]) == (500, 1), body


def test_wallet_session_needs_the_identity_and_a_server_we_trust(platform, account, merchant, pki, stub, monkeypatch):
    account_id = account["account_id"]
    creds = {"account_id": account_id, "api_accesskey": account["api_accesskey"], "display_name": "Shop",
             "referrer": SHOP_DOMAIN, "merchant_id": MERCHANT_ID}
    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_URL", stub.url)
    admin(platform, "PUT", f"/admin/v1/accounts/{account_id}/wallet", wallet_body(merchant))
    status, _, body = session_call(platform, creds)
    assert (status, body["error_code"]) == (400, W.IDENTITY_MISSING)
    admin(platform, "PUT", f"/admin/v1/accounts/{account_id}/wallet", wallet_body(merchant, pki))
    # No CA override: the stand-in's certificate is not trusted, so the TLS handshake fails closed.
    monkeypatch.delenv("WALLET_MERCHANT_VALIDATION_CA_FILE", raising=False)
    status, _, body = session_call(platform, creds)
    assert (status, body["error_code"]) == (502, W.VALIDATION_FAILED) and not stub.requests
    # An internal URL is refused by the egress policy before any connection.
    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_URL", "https://169.254.169.254/latest")
    assert session_call(platform, creds)[2]["error_code"] == W.VALIDATION_FAILED


# ------------------------------------------------------------------------------------- association file


def test_association_file_is_served_as_text_for_the_owning_domain(platform, wallet_account):
    account_id = wallet_account["account_id"]
    content = "7B227073704964223A2242393935...\n"
    status, view = admin(platform, "PUT", f"/admin/v1/accounts/{account_id}/wallet/domain-association",
                         {"content": content})
    assert status == 200 and view["path"] == "/.well-known/apple-developer-merchantid-domain-association"
    out = platform.invoke("DomainAssociationFunction", {
        "resource": "/.well-known/{file}", "path": view["path"], "httpMethod": "GET",
        "headers": {"Host": SHOP_DOMAIN}, "pathParameters": {"file": "apple-developer-merchantid-domain-association"},
        "requestContext": {"requestId": "r"}, "body": None})
    assert out["statusCode"] == 200 and out["body"] == content and out["headers"]["Content-Type"] == "text/plain"
    for host, name in ((SHOP_DOMAIN, "other-file"), ("unknown.example.com", "apple-developer-merchantid-domain-association")):
        out = platform.invoke("DomainAssociationFunction", {
            "resource": "/.well-known/{file}", "path": f"/.well-known/{name}", "httpMethod": "GET",
            "headers": {"Host": host}, "pathParameters": {"file": name}, "requestContext": {}, "body": None})
        assert out["statusCode"] == 404 and out["headers"]["Content-Type"] == "text/plain"
    assert admin(platform, "PUT", f"/admin/v1/accounts/{account_id}/wallet/domain-association",
                 {"file_name": "../x", "content": "a"})[0] == 400


# ------------------------------------------------------------------------------------------ /paymentMethods


def test_payment_methods_lists_the_wallet_only_when_configured(platform, account, merchant):
    creds = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
    body = {**creds, "countryCode": "US", "amount": {"currency": "USD", "value": 1000}, "channel": "Web"}
    status, _, out = call(platform, "CheckoutFunction", "POST", "/paymentMethods", body)
    assert status == 200 and [m["type"] for m in out["paymentMethods"]] == ["scheme"]
    admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet", wallet_body(merchant))
    from vaultcore.cache import reset_container_caches as reset_caches

    reset_caches()
    status, _, out = call(platform, "CheckoutFunction", "POST", "/paymentMethods", body)
    assert [m["type"] for m in out["paymentMethods"]] == ["scheme", "applepay"]
    assert out["paymentMethods"][1]["configuration"]["merchantId"] == MERCHANT_ID
    # Header credentials work too; bad ones are 401, a bad channel 422.
    status, _, out = call(platform, "CheckoutFunction", "POST", "/paymentMethods", {"channel": "iOS"},
                          headers={"X-Account-Id": creds["account_id"], "X-Api-Accesskey": creds["api_accesskey"]})
    assert status == 200 and len(out["paymentMethods"]) == 2
    assert call(platform, "CheckoutFunction", "POST", "/paymentMethods", {**body, "api_accesskey": "x"})[0] == 401
    status, _, out = call(platform, "CheckoutFunction", "POST", "/paymentMethods", {**body, "channel": "Android"})
    assert status == 422 and out["errorType"] == "validation"


# ------------------------------------------------------------------------------------------ in the gateway


def qsapi(platform, account, **variables):
    body = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"], **variables}
    return call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", body)


def test_apay_sale_authorization_and_capture_through_the_gateway(platform, wallet_account, merchant):
    token = merchant.token(amount=1999)
    status, _, body = qsapi(platform, wallet_account, transaction_type="SALE", tender_type="APay",
                            transaction_amount="19.99", currency="USD", apay_payload=json.dumps(token))
    assert status == 200 and body["transaction_approved"] is True, body
    assert (body["tender_type"], body["card_brand"], body["last4"], body["card_expiration"], body["entry_mode"]) == (
        "APay", "VISA", "1111", "1229", "wallet")
    status, detail = admin(platform, "GET", f"/admin/v1/accounts/{wallet_account['account_id']}/transactions/"
                                            f"{body['transaction_id']}")
    assert detail["wallet_eci"] == "7" and detail["wallet_network"] == "Visa"
    assert "4111111111111111" not in json.dumps(detail) and "AOBiPO" not in json.dumps(detail)
    # Replay, then an authorization captured later like any card authorization.
    assert qsapi(platform, wallet_account, transaction_type="SALE", tender_type="APay", transaction_amount="19.99",
                 apay_payload=json.dumps(token))[2]["error_code"] == W.REPLAYED
    auth = qsapi(platform, wallet_account, transaction_type="AUTHORIZATION", tender_type="APay",
                 transaction_amount="5.00", apay_payload=json.dumps(merchant.token(amount=500)))[2]
    assert auth["transaction_approved"] is True
    capture = qsapi(platform, wallet_account, transaction_type="CAPTURE", token_id=auth["transaction_id"],
                    transaction_amount="5.00")[2]
    assert capture["transaction_approved"] is True and capture["tender_type"] == "APay"
    # A sandbox decline trigger inside a wallet token is declined like the card.
    declined = qsapi(platform, wallet_account, transaction_type="SALE", tender_type="APay", transaction_amount="1.00",
                     apay_payload=json.dumps(merchant.token(amount=100, pan="4000000000000002")))[2]
    assert (declined["transaction_approved"], declined["error_code"]) == (False, 500)
    # Card data with APay is refused; a missing payload is 702.
    assert qsapi(platform, wallet_account, transaction_type="SALE", tender_type="APay", transaction_amount="1.00",
                 card_number="4242424242424242")[2]["error_code"] == 217
    assert qsapi(platform, wallet_account, transaction_type="SALE", tender_type="APay",
                 transaction_amount="1.00")[2]["error_code"] == W.PAYLOAD_MISSING
    # Amount and currency are validated like any payment before the token is opened.
    assert qsapi(platform, wallet_account, transaction_type="SALE", tender_type="APay", transaction_amount="1.001",
                 apay_payload=json.dumps(merchant.token(amount=100)))[2]["error_code"] == 206
    assert qsapi(platform, wallet_account, transaction_type="SALE", tender_type="APay", transaction_amount="1.00",
                 currency="XYZ", apay_payload=json.dumps(merchant.token(amount=100)))[2]["error_code"] == 207


def test_signature_refusals_say_why_through_the_gateway(platform, wallet_account, merchant, vault_logs):
    """Issue 18: 707/708/709 keep their codes and HTTP 200, and error_message names the failed check."""
    from local.wallet_token_forge import sign_content
    from vaultcore.crypto.wallet_token import signed_content
    from vaultcore.wallet.errors import SIGNATURE_REFUSALS

    root = (merchant.chain.root_pem, merchant.chain.root_key_pem)  # the account's trust root
    expired_leaf = make_test_chain(root=root, leaf_valid_until=datetime.now(UTC) - timedelta(days=1))
    tampered = merchant.token(amount=100)
    content = signed_content(tampered)
    blob = sign_content(content, merchant.chain, datetime.now(UTC))
    tampered["paymentData"]["signature"] = base64.b64encode(blob[:-1] + bytes([blob[-1] ^ 0x01])).decode()
    cases = {
        "signer_expired": merchant.token(amount=100, chain=expired_leaf),
        "unknown_root": merchant.token(amount=100, chain=make_test_chain()),
        "signature_mismatch": tampered,
        "signing_time_too_old": merchant.token(amount=100, signing_time=datetime.now(UTC) - timedelta(minutes=10)),
    }
    messages = set()
    for detail, token in cases.items():
        status, _, body = qsapi(platform, wallet_account, transaction_type="SALE", tender_type="APay",
                                transaction_amount="1.00", currency="USD", apay_payload=json.dumps(token))
        code, message = SIGNATURE_REFUSALS[detail]
        assert status == 200 and (body["error_code"], body["error_message"]) == (code, message), (detail, body)
        messages.add(message)
    assert {SIGNATURE_REFUSALS[d][0] for d in cases} == {W.CHAIN_INVALID, W.SIGNATURE_INVALID, W.SIGNING_TIME}
    assert len(messages) == len(cases)
    # The two 708 causes no longer read alike, and the log names the cause (never the token).
    assert "expired" in SIGNATURE_REFUSALS["signer_expired"][1]
    assert "trust root" in SIGNATURE_REFUSALS["unknown_root"][1]
    logged = vault_logs.getvalue()
    assert "signer_expired" in logged and tampered["paymentData"]["signature"][:40] not in logged


def test_payments_format_authorized_and_refused(platform, wallet_account, merchant):
    creds = {"account_id": wallet_account["account_id"], "api_accesskey": wallet_account["api_accesskey"]}
    token = merchant.token(amount=1000)
    pay = {**creds, "amount": {"currency": "USD", "value": 1000}, "reference": "order-7",
           "paymentMethod": {"type": "applepay", "applePayToken": token}}
    status, _, body = call(platform, "CheckoutFunction", "POST", "/payments", pay)
    assert status == 200 and body["resultCode"] == "Authorized", body
    assert body["additionalData"]["cardSummary"] == "1111" and len(body["pspReference"]) == 12
    status, _, body = call(platform, "CheckoutFunction", "POST", "/payments", pay)
    assert (body["resultCode"], body["refusalReasonCode"]) == ("Refused", str(W.REPLAYED))
    status, _, body = call(platform, "CheckoutFunction", "POST", "/payments",
                           {**pay, "amount": {"currency": "USD", "value": 999},
                            "paymentMethod": {"type": "applepay", "applePayToken": json.dumps(merchant.token(amount=1000))}})
    assert (body["resultCode"], body["refusalReasonCode"]) == ("Refused", str(W.AMOUNT_MISMATCH))
    for broken in ({**pay, "amount": {"currency": "USD", "value": "10"}}, {**pay, "reference": ""},
                   {**pay, "paymentMethod": {"type": "scheme"}}):
        status, _, body = call(platform, "CheckoutFunction", "POST", "/payments", broken)
        assert status == 422 and body["errorType"] == "validation"
    assert call(platform, "CheckoutFunction", "POST", "/payments", {**pay, "api_accesskey": "f" * 32})[0] == 401


def _checkout_error(out, status: int, code: str, kind: str) -> None:
    assert out == {"status": status, "errorCode": code, "message": out["message"], "errorType": kind}, out
    assert CHECKOUT_ERRORS[code][0] == status  # the documented pair (docs/integrators/wallets.md)


def test_checkout_errors_are_always_in_the_checkout_format(platform, wallet_account, monkeypatch):
    creds = {"account_id": wallet_account["account_id"], "api_accesskey": wallet_account["api_accesskey"]}
    for path in ("/paymentMethods", "/payments"):
        # Not one JSON object: its own code 100 (HTTP 400), no longer the token's 702.
        for raw in ("[1]", "null", "not json"):
            status, _, out = call(platform, "CheckoutFunction", "POST", path, raw)
            _checkout_error(out, 400, "100", "validation")
        # Refused by the input gate: the same code, in this API's format (not the gateway error body).
        status, _, out = call(platform, "CheckoutFunction", "POST", path, "[" * 40 + "]" * 40)
        _checkout_error(out, 400, "100", "validation")
        assert "nested deeper" in out["message"]
    pay = {**creds, "amount": {"currency": "USD", "value": 100}, "reference": "r-1",
           "paymentMethod": {"type": "applepay", "applePayToken": ""}}
    _checkout_error(call(platform, "CheckoutFunction", "POST", "/payments", pay)[2], 422, "702", "validation")
    # An internal error is HTTP 500 "1" (errorType internal), never a 401 or the gateway body.
    from vaultcore.errors import DependencyError
    from vaultcore.gateway import accounts

    def unavailable(*_a, **_k):
        raise DependencyError("Internal error: a dependency is unavailable.")

    monkeypatch.setattr(accounts, "lookup_account", unavailable)
    status, _, out = call(platform, "CheckoutFunction", "POST", "/paymentMethods", creds)
    _checkout_error(out, 500, "1", "internal")
    monkeypatch.setattr("vaultcore.gateway.service.process", lambda *a, **k: 1 / 0)
    pay["paymentMethod"]["applePayToken"] = "e30="
    status, _, out = call(platform, "CheckoutFunction", "POST", "/payments", pay)
    _checkout_error(out, 500, "1", "internal")
    assert "Traceback" not in json.dumps(out) and "ZeroDivision" not in json.dumps(out)


# --------------------------------------------------------------- key material in the forms operators have
#
# The merchant key of the published wallet fixture (tests/vectors/applepay.json), as the openssl CLI writes it
# in each form (tests/vectors/wallet_keys/README.md). Not made by the project.

KEY_FORMS = ("sec1", "pkcs8", "pkcs8-encrypted", "sec1-encrypted", "pkcs12")


@pytest.fixture
def vault_logs():
    """Every record the platform logs during the test, raw (message and all record attributes, before the
    formatter's redaction: stricter than the written log line)."""
    import io
    import logging

    from vaultcore.logs import get_logger

    get_logger("tests")  # the "vault" logger is configured
    stream = io.StringIO()

    class Raw(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            stream.write(f"{record.getMessage()} {record.__dict__!r}\n")

    handler = Raw()
    logging.getLogger("vault").addHandler(handler)
    yield stream
    logging.getLogger("vault").removeHandler(handler)


def _key_lines() -> list[str]:
    """The base64 lines of every fixture key file and of the bundle: none may appear in an answer or a log."""
    lines = [line for f in GALA_DIR.glob("gala-key.*.pem") for line in f.read_text().splitlines()
             if line and not line.startswith(("-----", "Proc-Type", "DEK-Info"))]
    bundle = gala_key_fields("pkcs12")["payment_processing_pkcs12"]
    return lines + [bundle[i:i + 40] for i in range(0, len(bundle) - 40, 40)]


@pytest.mark.parametrize("form", KEY_FORMS)
def test_apay_sale_with_the_published_merchant_key_in_each_form(platform, account, form, vault_logs):
    """Issue acceptance: a wallet token decrypts through an APay SALE with an account configured from a SEC1
    key; the same with PKCS#8 (clear and encrypted) and PKCS#12."""
    chain = make_test_chain()
    status, view = admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet",
                         gala_wallet_body(form, chain))
    assert status == 200, view
    assert view["merchant_identifier"] == GALA_MERCHANT_ID and view["has_payment_processing_certificate"] is True
    # The vendor's publicKeyHash of this key, as printed in the fixture.
    assert view["payment_processing_public_key_hash"] == gala_vector()["public_key_hash_b64"]
    token = gala_token(chain, amount=1999)
    status, _, body = qsapi(platform, account, transaction_type="SALE", tender_type="APay",
                            transaction_amount="19.99", currency="USD", apay_payload=json.dumps(token))
    assert status == 200 and body["transaction_approved"] is True, body
    assert (body["tender_type"], body["last4"]) == ("APay", "1111")
    # Stored normalised (unencrypted PKCS#8 inside the KMS envelope): the vendor's own 2014 token opens with it.
    from vaultcore.crypto import wallet_token as wt
    from vaultcore.wallet import settings as ws

    secrets = ws.load_secrets(ws.get_wallet_settings(account["account_id"], fresh=True))
    assert secrets.payment_processing_private_key.startswith("-----BEGIN PRIVATE KEY-----")
    vendor = gala_vector()
    clear = wt.decrypt_ec_v1(vendor["payment_data"], secrets.payment_processing_private_key, GALA_MERCHANT_ID,
                             secrets.payment_processing_certificate)
    assert clear["applicationPrimaryAccountNumber"] == vendor["expected_fields"]["applicationPrimaryAccountNumber"]
    raw = json.dumps(dynamodb().scan(TableName="RegistryTable")["Items"])
    logs = vault_logs.getvalue()
    assert "wallet settings stored" in logs  # the capture sees the platform's log lines
    for line in _key_lines():
        assert line not in raw and line not in logs and line not in json.dumps(view)
    assert GALA_PASSPHRASE not in raw and GALA_PASSPHRASE not in logs


def test_certificate_as_base64_der_and_trust_roots_as_base64_der(platform, account):
    chain = make_test_chain()
    root_der = base64.b64encode(
        x509.load_pem_x509_certificate(chain.root_pem).public_bytes(Encoding.DER)).decode()
    status, view = admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet",
                         gala_wallet_body("sec1", chain, der_certificate=True, trust_roots=[root_der]))
    assert status == 200, view
    assert view["trust_roots"] == [{"sha256": x509.load_pem_x509_certificate(chain.root_pem)
                                    .fingerprint(hashes.SHA256()).hex()}]
    card = decrypt_wallet_payment(account["account_id"], json.dumps(gala_token(chain)), "10.00", "USD")
    assert card.last4 == "1111"


def _refusal(platform, account, body) -> str:
    status, answer = admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet", body)
    assert status == 400, answer
    message = answer["errMessage"]
    assert "-----" not in message and GALA_PASSPHRASE not in message
    assert not [line for line in _key_lines() if line[:16] in message]
    return message


def test_key_forms_are_refused_with_the_field_named_and_no_key_material(platform, account, vault_logs):
    chain = make_test_chain()
    pp = "payment_processing_private_key"
    encrypted = gala_key_fields("pkcs8-encrypted")[pp]
    # Encrypted without its passphrase; a wrong passphrase; a passphrase for a clear key.
    assert "is encrypted" in _refusal(platform, account, gala_wallet_body("pkcs8-encrypted", chain, **{
        f"{pp}_passphrase": None}))
    message = _refusal(platform, account, gala_wallet_body("pkcs8-encrypted", chain, **{f"{pp}_passphrase": "nope"}))
    assert f"{pp}_passphrase" in message and "wrong passphrase" in message
    message = _refusal(platform, account, gala_wallet_body("sec1-encrypted", chain, **{f"{pp}_passphrase": "nope"}))
    assert "wrong passphrase" in message
    assert "not encrypted" in _refusal(platform, account, gala_wallet_body("sec1", chain, **{
        f"{pp}_passphrase": GALA_PASSPHRASE}))
    # Unreadable key, truncated key, a certificate in the key field, a passphrase without a key.
    assert f"{pp} is not a readable private key" in _refusal(platform, account, gala_wallet_body(
        "sec1", chain, **{pp: encrypted.replace("ENCRYPTED PRIVATE KEY", "EC PRIVATE KEY")}))
    assert "readable" in _refusal(platform, account, gala_wallet_body("sec1", chain, **{pp: encrypted[:120]}))
    assert pp in _refusal(platform, account, gala_wallet_body("sec1", chain, **{pp: gala_certificate_pem()}))
    body = gala_wallet_body("sec1", chain, **{f"{pp}_passphrase": "x"})
    body.pop(pp)
    assert "without" in _refusal(platform, account, body)
    # PKCS#12: wrong passphrase, not base64, not a bundle, together with a key field.
    p12 = "payment_processing_pkcs12"
    message = _refusal(platform, account, gala_wallet_body("pkcs12", chain, **{f"{p12}_passphrase": "nope"}))
    assert p12 in message and "wrong passphrase" in message
    assert "base64" in _refusal(platform, account, gala_wallet_body("pkcs12", chain, **{p12: "not base64!"}))
    assert p12 in _refusal(platform, account, gala_wallet_body("pkcs12", chain, **{
        p12: base64.b64encode(b"0" * 64).decode()}))
    assert "either" in _refusal(platform, account, gala_wallet_body("pkcs12", chain, **gala_key_fields("sec1")))
    # The key must match its certificate; the payment processing key must be P-256.
    _, other_cert = make_merchant_keys(GALA_MERCHANT_ID)
    message = _refusal(platform, account, gala_wallet_body("sec1", chain,
                                                           payment_processing_certificate=other_cert.decode()))
    assert "payment_processing_certificate does not hold the public key of payment_processing_private_key" in message
    rsa_pem = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        Encoding.PEM, PrivateFormat.TraditionalOpenSSL, NoEncryption()).decode()
    assert "P-256" in _refusal(platform, account, gala_wallet_body("sec1", chain, **{pp: rsa_pem}))
    # Certificates and trust roots that cannot be read name their field.
    assert "payment_processing_certificate" in _refusal(platform, account, gala_wallet_body(
        "sec1", chain, payment_processing_certificate="bm90IGEgY2VydGlmaWNhdGU="))
    assert "trust_roots[1]" in _refusal(platform, account, gala_wallet_body(
        "sec1", chain, trust_roots=[chain.root_pem.decode(), "AAAA"]))
    logs = vault_logs.getvalue()
    assert "request refused" in logs  # the refusals were logged (code and status only)
    assert not [line for line in _key_lines() if line in logs] and GALA_PASSPHRASE not in logs
    # Nothing was stored by any of these refusals.
    assert admin(platform, "GET", f"/admin/v1/accounts/{account['account_id']}/wallet")[0] == 404


def test_identity_key_from_pkcs12_and_encrypted_pem(platform, account, merchant):
    """The merchant identity key and certificate in a PKCS#12 bundle (the fixture's, as openssl exported it),
    then as encrypted PKCS#8 with its certificate in base64 DER."""
    path = f"/admin/v1/accounts/{account['account_id']}/wallet"
    status, view = admin(platform, "PUT", path, wallet_body(merchant, **gala_key_fields("pkcs12", "merchant_identity")))
    assert status == 200, view
    assert view["merchant_identity_subject"].startswith("C=US,O=SeatGeek")
    secrets = _secrets(account)
    assert secrets.merchant_identity_private_key.startswith("-----BEGIN PRIVATE KEY-----")
    assert secrets.merchant_identity_certificate.count("BEGIN CERTIFICATE") == 1
    der = base64.b64encode((GALA_DIR / "gala-cert.der").read_bytes()).decode()
    body = wallet_body(merchant, **gala_key_fields("pkcs8-encrypted", "merchant_identity"),
                       merchant_identity_certificate=der)
    status, view = admin(platform, "PUT", path, body)
    assert status == 200, view
    assert _secrets(account).merchant_identity_private_key == secrets.merchant_identity_private_key
    # Mixed: a bundle for one role, a key and certificate of the other role's bundle do not cross over.
    message = _refusal(platform, account, wallet_body(merchant, **gala_key_fields("pkcs12", "merchant_identity"),
                                                      merchant_identity_certificate=gala_certificate_pem()))
    assert "merchant_identity_pkcs12" in message and "either" in message


def _secrets(account):
    from vaultcore.wallet import settings as ws

    return ws.load_secrets(ws.get_wallet_settings(account["account_id"], fresh=True))


def test_wallet_session_with_the_identity_given_as_pkcs12(platform, account, merchant, pki, stub, monkeypatch):
    """The normalised identity key works in the mutual TLS context of the session call."""
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, load_pem_private_key, pkcs12

    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_URL", stub.url)
    monkeypatch.setenv("WALLET_MERCHANT_VALIDATION_CA_FILE", str(pki.server_ca_file))
    bundle = pkcs12.serialize_key_and_certificates(
        b"identity", load_pem_private_key(pki.identity_key_pem.encode(), None),
        x509.load_pem_x509_certificate(pki.identity_cert_pem.encode()), None, BestAvailableEncryption(b"p12-pass"))
    body = wallet_body(merchant, merchant_identity_pkcs12=base64.b64encode(bundle).decode(),
                       merchant_identity_pkcs12_passphrase="p12-pass")
    assert admin(platform, "PUT", f"/admin/v1/accounts/{account['account_id']}/wallet", body)[0] == 200
    status, _, answer = session_call(platform, {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"], "display_name": "Shop",
        "referrer": SHOP_DOMAIN, "merchant_id": MERCHANT_ID})
    assert status == 200, answer
    assert stub.requests[-1]["client_cn"] == f"Merchant ID: {MERCHANT_ID}"
