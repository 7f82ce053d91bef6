"""Issue 19 in-process on moto: payment iFrame configurations, instances and submissions, and the gateway's
one-time read of an eToken (account and custom_id binding, the CVV destroyed, 10 concurrent SALEs -> one)."""

from __future__ import annotations

import base64
import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers import admin, call
from vaultcore.gateway.errors import E

BASE = "/api/v4/accounts/{account_id}/payment-iframe"
CARD = "4242424242424242"
SHOP = "https://shop.example"


class Iframe:
    """A merchant (its own partner, token payments on) and the browser side of its iframe."""

    def __init__(self, platform, partner_id: str | None = None, options: dict | None = None) -> None:
        self.platform = platform
        if partner_id is None:
            status, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "Iframe", "apiSecurity": "hmac"})
            assert status == 201
            partner_id = partner["partnerId"]
        status, account = admin(platform, "POST", "/admin/v1/accounts", {
            "partnerId": partner_id, "options": {"token_payments": True, **(options or {})}})
        assert status == 201, account
        self.partner_id = partner_id
        self.account_id = account["account_id"]
        self.creds = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
        self.basic = "Basic " + base64.b64encode(f"{self.account_id}:{account['api_accesskey']}".encode()).decode()

    def api(self, method: str, suffix: str = "", body=None, *, auth: str | None = None, account_id: str | None = None):
        account_id = account_id or self.account_id
        resource = BASE + suffix
        path = resource.replace("{account_id}", account_id)
        params = {"account_id": account_id}
        if "{id}" in suffix:
            params["id"] = self._id
            path = path.replace("{id}", self._id)
        if suffix.startswith("/{id}/instance/") and suffix != "/{id}/instance/init":
            params["instance_id"] = suffix.rsplit("/", 1)[1]
            resource = BASE + "/{id}/instance/{instance_id}"
        headers = {"Authorization": auth if auth is not None else self.basic}
        status, _, payload = call(self.platform, "IframeFunction", method, path, body, headers, resource=resource,
                                  path_params=params)
        return status, payload

    def configure(self, **members) -> dict:
        body = {"label": "Checkout", "allowedParentDomains": [SHOP], **members}
        status, config = self.api("POST", "", body)
        assert status == 201, config
        self._id = config["id"]
        return config

    def instance(self, **body) -> dict:
        status, out = self.api("POST", "/{id}/instance/init", {"label": "order 1", **body})
        assert status == 201, out
        return out

    def submit(self, token: str, **fields):
        status, _, payload = call(self.platform, "IframeFunction", "POST", "/iframe/v1/submit", fields,
                                  {"Authorization": "Bearer " + token}, resource="/iframe/v1/submit")
        return status, payload

    def frame(self, token: str, origin: str = SHOP):
        return call(self.platform, "IframeFunction", "GET", "/iframe/v1/frame", None, None,
                    query={"token": token, "origin": origin}, resource="/iframe/v1/frame")

    def pay(self, **variables) -> dict:
        status, _, body = call(self.platform, "GatewayFunction", "POST", "/api/qsapi/3.8",
                               json.dumps({**self.creds, "transaction_type": "SALE", "tender_type": "CARD",
                                           "transaction_amount": "10.00", "currency": "USD",
                                           "payment_type": "ECOMMERCE", **variables}),
                               {"Content-Type": "application/json"}, resource="/api/qsapi/3.8")
        assert status == 200, body
        return body


@pytest.fixture
def shop(platform) -> Iframe:
    return Iframe(platform)


def _card(**extra) -> dict:
    return {"paymentMethod": "CARD", "cardNumber": CARD, "cardExpiration": "12/30", "cardCvv": "123", **extra}


def _tokens_items() -> list[dict]:
    import boto3

    from vaultcore.settings import settings as vault_settings

    return boto3.client("dynamodb", region_name="us-east-1").scan(TableName=vault_settings().tokens_table)["Items"]


# ------------------------------------------------------------------------------------------------ configurations
def test_configurations_create_list_read_patch_delete(shop):
    config = shop.configure(allowedPaymentMethods=["CARD", "ACH"], timeout=300,
                            cardSettings={"cvv": "optional", "billingAddress": {"zip": "required"}})
    assert config["allowedParentDomains"] == [SHOP] and config["timeout"] == 300 and config["language"] == "ENGLISH"
    assert re.fullmatch(r"ifr_[0-9a-f]{32}", config["id"])
    # the original's one billingAddress setting, and ours per field as the extension member
    assert config["cardSettings"] == {"cvv": "optional", "billingAddress": "required", "contactInfo": "omit",
                                      "savePaymentOption": "omit"}
    assert config["billingAddressFields"] == {"address1": "omit", "address2": "omit", "city": "omit",
                                              "state": "omit", "zip": "required"}
    status, listed = shop.api("GET")
    assert status == 200 and [c["id"] for c in listed] == [config["id"]]  # the original's bare array
    status, patched = shop.api("PATCH", "/{id}", {"label": "New", "cardSettings": {"cvv": "omit"}})
    assert status == 201 and patched["label"] == "New" and patched["cardSettings"]["cvv"] == "omit"
    assert patched["billingAddressFields"]["zip"] == "required" and patched["timeout"] == 300
    assert shop.api("GET", "/{id}")[1]["label"] == "New"
    assert shop.api("DELETE", "/{id}")[0] == 204
    status, err = shop.api("GET", "/{id}")
    assert status == 404 and (err["errorType"], err["errorCode"], err["errCode"]) == ("not_found", "40005", 404), err


@pytest.mark.parametrize("domains", [["*"], ["*.com"], ["http://shop.example"], ["https://shop.example/path"],
                                     ["https://10.0.0.1"], ["localhost"], ["http://localhost"], "x",
                                     ["https://user@shop.example"], ["https://shop.example:99999"], ["ftp://a.b"],
                                     [f"https://s{i}.example" for i in range(11)], ["'self'"], ["https://*"]])
def test_allowed_parent_domains_are_strict_host_sources(shop, domains):
    status, err = shop.api("POST", "", {"label": "x", "allowedParentDomains": domains})
    assert status == 422 and err["errCode"] == 901 and err["errorType"] == "invalid_request", err
    assert [d["source"] for d in err["details"]] == ["allowedParentDomains"], err


def test_host_sources_are_normalised_and_local_ones_are_cert_only(shop, monkeypatch):
    config = shop.configure(allowedParentDomains=["Shop.Example", "*.shop.example:8443", "http://localhost:8080",
                                                  "http://127.0.0.1:3000", "https://shop.example"])
    assert config["allowedParentDomains"] == ["https://shop.example", "https://*.shop.example:8443",
                                              "http://localhost:8080", "http://127.0.0.1:3000"]
    from vaultcore.iframe import domains

    with pytest.raises(domains.DomainError):
        domains.normalise_source("http://localhost:8080", cert=False)
    assert domains.origin_allowed("https://a.shop.example:8443", config["allowedParentDomains"])
    assert not domains.origin_allowed("https://shop.example:8443", ["https://*.shop.example:8443"])
    assert not domains.origin_allowed("https://evil.example", config["allowedParentDomains"])
    assert not domains.origin_allowed("null", config["allowedParentDomains"])


def test_authentication_is_basic_and_uniform(shop):
    other = Iframe(shop.platform, shop.partner_id)
    for auth in ("", "Basic !!!", "Bearer x", "Basic " + base64.b64encode(b"123456789012:nope").decode(),
                 "Basic " + base64.b64encode(f"{shop.account_id}:wrong".encode()).decode()):
        status, err = shop.api("GET", auth=auth)
        trace = err.pop("traceId")  # the original's ApiViolation, the same for every cause but its trace id
        assert status == 401 and err == {"message": "Unauthenticated", "errorType": "authentication",
                                         "errorCode": "40002", "value": "Authorization", "source": "headers",
                                         "details": [], "errCode": 1003}, err
        assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", trace)
    status, err = shop.api("GET", account_id=other.account_id)  # the path names another account
    assert status == 401 and err["errCode"] == 1003


def test_v4_errors_are_the_originals_api_violation(shop):
    """Validation 422 with the member in details[], an unknown v4 path 404 not_found (any method), a body that is
    not JSON 400: every one an ApiViolation (the original's members), our errCode as the extension member."""
    status, err = shop.api("POST", "", {"label": "Checkout", "allowedParentDomains": [SHOP], "random": 1})
    assert status == 422 and err["details"] == [{"detail": "unknown member", "source": "random"}], err
    assert (err["message"], err["errorCode"], err["source"]) == ("Invalid Input", "40001", "request")
    for method in ("GET", "POST", "PUT"):
        status, _, err = call(shop.platform, "IframeFunction", method, "/api/v4/accounts/x/nothing-here", None,
                              None, resource="/api/v4/{proxy+}", path_params={"proxy": "accounts/x/nothing-here"})
        assert status == 404 and (err["errorType"], err["errorCode"], err["errCode"]) == ("not_found", "40005", 404)
    status, _, err = call(shop.platform, "IframeFunction", "POST", f"/api/v4/accounts/{shop.account_id}/payment-iframe",
                          "[1, 2]", {"Content-Type": "application/json", "Authorization": shop.basic}, resource=BASE,
                          path_params={"account_id": shop.account_id})
    assert status == 400 and (err["errorType"], err["errCode"]) == ("invalid_request", 400), err
    # the browser paths keep our body (checkout.js reads errCode)
    status, _, err = call(shop.platform, "IframeFunction", "POST", "/iframe/v1/submit", {}, {"Authorization": "x"},
                          resource="/iframe/v1/submit")
    assert status == 401 and err == {"success": False, "errCode": 904, "errMessage": err["errMessage"]}, err


def test_anti_fraud_needs_fraud_scoring_and_an_account_needs_a_partner(platform):
    shop = Iframe(platform)
    status, err = shop.api("POST", "", {"label": "x", "allowedParentDomains": [SHOP], "antiFraud": True})
    assert status == 422 and err["errCode"] == 903 and err["errorType"] == "invalid_request", err


# ------------------------------------------------------------------------------------------------ instances, page
def test_instance_token_page_headers_and_fields(shop):
    shop.configure(allowedPaymentMethods=["CARD", "ACH"])
    inst = shop.instance(customId="order-42", amount="19.99")
    # the original's IFrameCreateInstance, exactly: {id, bearerToken, transactionId} (our customId is transactionId)
    assert set(inst) == {"id", "bearerToken", "transactionId"} and re.fullmatch(r"ifri_[0-9a-f]{32}", inst["id"])
    assert inst["transactionId"] == "order-42" and re.fullmatch(r"ifb_[A-Za-z0-9_-]{43}", inst["bearerToken"])
    status, headers, html = shop.frame(inst["bearerToken"])
    assert status == 200
    csp = headers["Content-Security-Policy"]
    assert "frame-ancestors https://shop.example;" in csp and "default-src 'self'" in csp and "*" not in csp
    assert "script-src 'nonce-" in csp and "unsafe-inline" not in csp
    assert headers["X-Content-Type-Options"] == "nosniff" and headers["Referrer-Policy"] == "no-referrer"
    assert headers["Cache-Control"] == "no-store"
    for name in ("cardNumber", "cardExpiration", "cardCvv", "zip", "bankAccountNumber", "bankRoutingNumber",
                 "accountHolderName", "paymentMethod"):
        assert f'name="{name}"' in html, name
    nonce = csp.split("'nonce-")[1].split("'")[0]
    assert f'<script nonce="{nonce}" src="frame.js">' in html
    # the token's hash is stored, never the token
    import boto3

    from vaultcore.settings import settings as vault_settings

    items = boto3.client("dynamodb", region_name="us-east-1").scan(TableName=vault_settings().signals_table)["Items"]
    assert inst["bearerToken"] not in json.dumps(items)


def test_a_bad_token_or_a_disallowed_origin_gets_no_fields(shop):
    shop.configure()
    inst = shop.instance()
    _, headers, html = shop.frame("ifb_" + "A" * 43)
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"] and 'name="cardNumber"' not in html
    assert '"error": "TOKEN_INVALID"' in html and '"parentOrigin": null' in html
    _, headers, html = shop.frame(inst["bearerToken"], "https://evil.example")
    assert 'name="cardNumber"' not in html and '"error": "ORIGIN_NOT_ALLOWED"' in html
    assert "frame-ancestors https://shop.example;" in headers["Content-Security-Policy"]
    from vaultcore import clock

    clock.set_offset(901)  # the configuration's default timeout has passed
    _, headers, html = shop.frame(inst["bearerToken"])
    assert 'name="cardNumber"' not in html and '"error": "TOKEN_INVALID"' in html
    assert '"parentOrigin": "https://shop.example"' in html  # the error still reaches the merchant page
    status, err = shop.submit(inst["bearerToken"], **_card())
    assert status == 401 and err["errCode"] == 904


def test_submission_fields_are_checked_and_the_limit_holds(shop):
    shop.configure()
    inst = shop.instance()
    for fields, name in ((_card(cardNumber="4242424242424241"), "cardNumber"),
                         (_card(cardExpiration="01/20"), "cardExpiration"),
                         (_card(cardCvv="12"), "cardCvv"), (_card(zip="!"), "zip"), (_card(x="1"), "x"),
                         (_card(cardNumber="378282246310005", cardCvv="123"), "cardCvv")):
        status, err = shop.submit(inst["bearerToken"], **fields)
        assert status == 400 and err["errCode"] == 906 and err["errMessage"].startswith(name), err
        assert "4242" not in err["errMessage"]
    status, err = shop.submit(inst["bearerToken"], paymentMethod="ACH", bankAccountNumber="000123456789",
                              bankRoutingNumber="021000021", accountHolderName="Ann Lee")
    assert status == 403 and err["errCode"] == 907
    etokens = []
    for i in range(100):  # a hundred cards tried through one instance (card testing): SUBMISSION_LIMIT eTokens, then 905
        status, out = shop.submit(inst["bearerToken"], **_card(cardNumber="4000056655665556" if i % 2 else CARD))
        if status == 200:
            etokens.append(out["eToken"])
        else:
            assert status == 409 and out["errCode"] == 905, (i, out)
    assert len(etokens) == 3


def test_the_submission_counter_is_retry_aware(shop):
    from vaultcore.iframe import instances

    shop.configure()
    token = shop.instance()["bearerToken"]
    assert instances.take_submission(token, "w1") == 1
    assert instances.take_submission(token, "w1") == 1  # the same request again (an SDK retry): not counted twice
    assert instances.take_submission(token, "w2") == 2


# ------------------------------------------------------------------------------------------------ eToken read
def test_card_etoken_pays_once_and_the_cvv_is_destroyed(shop):
    shop.configure(cardSettings={"billingAddress": {"zip": "required", "address1": "optional"}})
    inst = shop.instance(customId="order-7")
    status, result = shop.submit(inst["bearerToken"], **_card(zip="94107", address1="1 Main St"))
    assert status == 200, result
    assert result["card"] == {"first1": "4", "last4": "4242", "expiration": "1230", "brand": "VISA"}
    assert result["customId"] == "order-7" and result["paymentMethod"] == "CARD" and "antiFraud" not in result
    etoken = result["eToken"]
    assert any("t#vault_token_card_verification" in i for i in _tokens_items())
    wrong = shop.pay(etoken=etoken, custom_id="order-8")
    assert wrong["error_code"] == E.IFRAME_FIELD and wrong["error_message"] == "Invalid custom_id"
    sale = shop.pay(etoken=etoken, custom_id="order-7")
    assert sale["transaction_approved"] is True and sale["last4"] == "4242" and sale["cvv2_response"] == "M", sale
    assert sale["custom_id"] == "order-7"
    assert not any("t#vault_token_card_verification" in i for i in _tokens_items())  # PCI DSS 3.3.1
    again = shop.pay(etoken=etoken, custom_id="order-7")
    assert again["error_code"] == E.ETOKEN_USED and again["transaction_approved"] is False
    assert CARD not in json.dumps(_tokens_items())


def test_another_accounts_etoken_is_refused_like_an_unknown_one(shop):
    shop.configure()
    status, result = shop.submit(shop.instance(customId="c1")["bearerToken"], **_card())
    assert status == 200
    other = Iframe(shop.platform, shop.partner_id)  # same partner: the binding refuses it
    assert other.pay(etoken=result["eToken"], custom_id="c1")["error_code"] == E.ETOKEN_FAILED
    assert shop.pay(etoken=result["eToken"], custom_id="c1")["transaction_approved"] is True


def test_ach_etoken_is_an_ach_sale(shop):
    shop.configure(allowedPaymentMethods=["ACH"])
    inst = shop.instance(customId="ach-1")
    status, err = shop.submit(inst["bearerToken"], paymentMethod="ACH", bankAccountNumber="000123456789",
                              bankRoutingNumber="021000022", accountHolderName="Ann Lee")
    assert status == 400 and err["errMessage"].startswith("bankRoutingNumber")
    status, result = shop.submit(inst["bearerToken"], paymentMethod="ACH", bankAccountNumber="000123456789",
                                 bankRoutingNumber="021000021", accountHolderName="Ann Lee")
    assert status == 200 and result["bank"] == {"last4": "6789"}, result
    assert shop.pay(etoken=result["eToken"], custom_id="ach-1")["error_code"] == E.TENDER_TYPE
    sale = shop.pay(etoken=result["eToken"], custom_id="ach-1", tender_type="ACH")
    assert sale["transaction_approved"] is True and sale["authorization_message"] == "PENDING", sale
    assert sale["tender_type"] == "ACH" and sale["last4"] == "6789"


def test_ten_concurrent_sales_with_one_etoken_approve_exactly_one(shop):
    shop.configure()
    status, result = shop.submit(shop.instance(customId="race")["bearerToken"], **_card())
    assert status == 200
    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda _: shop.pay(etoken=result["eToken"], custom_id="race"), range(10)))
    approved = [a for a in answers if a.get("transaction_approved")]
    assert len(approved) == 1, answers
    assert {a["error_code"] for a in answers if not a.get("transaction_approved")} == {E.ETOKEN_USED}


def test_the_read_is_retry_aware(shop):
    """The one read (tokens service, issue 27): its own retry passes (without the CVV: the first write removed it),
    another reader's is refused as used."""
    from vaultcore.tokens import service
    from vaultcore.tokens.errors import PolicyRefused

    shop.configure()
    status, result = shop.submit(shop.instance(customId="r")["bearerToken"], **_card())

    def read(reader: str):
        return service.gateway_read(shop.partner_id, result["eToken"], account_id=shop.account_id, reader=reader,
                                    custom_id="r", consume=True)

    first = read("writer-1")
    assert first.clear["vault_token_card_verification"] == "123" and "vault_token_card_verification" not in first.tokens
    again = read("writer-1")  # its own retry
    assert "vault_token_card_number" in again.tokens and "vault_token_card_verification" not in again.clear
    with pytest.raises(PolicyRefused) as err:
        read("writer-2")
    assert err.value.reason == "used" and err.value.code == 3045


def test_a_keyed_retry_after_an_unknown_outcome_pays_with_the_same_etoken(shop, monkeypatch):
    """The eToken's one read belongs to the idempotency key: when the first attempt's outcome was unknown (its
    transaction write could not be confirmed, the key stays held), the retry with the same key after the lock
    reads the eToken again and pays once; without the key's identity it would find the eToken used (309)."""
    from vaultcore import clock
    from vaultcore.gateway import store

    shop.configure()
    status, result = shop.submit(shop.instance(customId="k1")["bearerToken"], **_card())
    assert status == 200
    real = store.record_transaction
    monkeypatch.setattr(store, "record_transaction", lambda *a, **kw: store.Recorded.UNKNOWN)
    body = json.dumps({**shop.creds, "transaction_type": "SALE", "tender_type": "CARD", "transaction_amount": "10.00",
                       "currency": "USD", "payment_type": "ECOMMERCE", "etoken": result["eToken"], "custom_id": "k1"})
    headers = {"Content-Type": "application/json", "Idempotency-Key": "order-k1"}
    status, _, first = call(shop.platform, "GatewayFunction", "POST", "/api/qsapi/3.8", body, headers,
                            resource="/api/qsapi/3.8")
    assert status == 500 and "unknown" in first["error_message"]
    monkeypatch.setattr(store, "record_transaction", real)
    clock.set_offset(31)
    status, _, retry = call(shop.platform, "GatewayFunction", "POST", "/api/qsapi/3.8", body, headers,
                            resource="/api/qsapi/3.8")
    assert status == 200 and retry["transaction_approved"] is True and retry["last4"] == "4242", retry
    assert shop.pay(etoken=result["eToken"], custom_id="k1")["error_code"] == E.ETOKEN_USED  # another request


def test_the_partner_reads_an_iframe_bfid_once_independently_of_the_gateway(shop):
    """Issue 21: `read` fetches the tokens the iFrame stored, once; the gateway's own read of the eToken is
    another attribute and still pays."""
    from vaultcore.tokens import service
    from vaultcore.tokens.errors import TokenConflict

    shop.configure()
    status, result = shop.submit(shop.instance(customId="p1")["bearerToken"], **_card())
    assert status == 200
    tokens = service.read_tokens_once(shop.partner_id, result["eToken"], "read-1")
    assert "vault_token_card_number" in tokens and CARD not in json.dumps(tokens)
    with pytest.raises(TokenConflict) as second:
        service.read_tokens_once(shop.partner_id, result["eToken"], "read-2")
    assert second.value.code == 3018
    assert shop.pay(etoken=result["eToken"], custom_id="p1")["transaction_approved"] is True


# ------------------------------------------------------------------------------- the original's vocabulary (issue 30)
def _frame_fields(html: str) -> set[str]:
    return set(re.findall(r"<input [^>]*name=\"([A-Za-z0-9]+)\"", html))


def test_the_originals_full_create_body_and_its_limits(shop):
    config = shop.configure(label="L" * 100, language="SPANISH", timeout=1800, currency="USD",
                            allowedPaymentMethods=["CARD", "ACH"], allowedParentDomains=["tiredwindow.com"],
                            cardSettings={"cvv": "optional", "billingAddress": "required", "contactInfo": "optional",
                                          "savePaymentOption": "optional"},
                            achSettings={"savePaymentOption": "required"})
    assert (config["language"], config["timeout"], config["achSettings"]) == (
        "SPANISH", 1800, {"savePaymentOption": "required"})
    assert config["cardSettings"] == {"cvv": "optional", "billingAddress": "required", "contactInfo": "optional",
                                      "savePaymentOption": "optional"}
    assert config["billingAddressFields"] == {"address1": "required", "address2": "optional", "city": "required",
                                              "state": "required", "zip": "required"}
    assert shop.configure()["timeout"] == 300 and shop.configure(language="es")["language"] == "SPANISH"
    for member, value in (("label", "L" * 101), ("timeout", 59), ("timeout", 1801), ("language", "KLINGON"),
                          ("cardSettings", {"billingAddress": "sometimes"}), ("cardSettings", {"x": "omit"}),
                          ("achSettings", {"savePaymentOption": "always"})):
        status, err = shop.api("POST", "", {"label": "x", "allowedParentDomains": [SHOP], member: value})
        assert status == 422 and err["errCode"] == 901 and err["details"][0]["source"].startswith(member), err


@pytest.mark.parametrize("body", [{"clickToPaySettings": {"dpaName": "Shop"}},
                                  {"allowedPaymentMethods": ["CARD", "CLICK_TO_PAY"]}])
def test_click_to_pay_is_refused_with_the_originals_error(shop, body):
    status, err = shop.api("POST", "", {"label": "x", "allowedParentDomains": [SHOP], **body})
    assert status == 422 and err["errorType"] == "invalid_request" and "Click to Pay" in err["details"][0]["detail"] \
        or "CLICK_TO_PAY" in err["details"][0]["detail"], err


@pytest.mark.parametrize(("language", "lang", "label"), [("ENGLISH", "en", "Card number"),
                                                         ("SPANISH", "es", "Número de tarjeta"),
                                                         ("GERMAN", "en", "Card number"),
                                                         ("FRENCH", "en", "Card number"),
                                                         ("ITALIAN", "en", "Card number")])
def test_language_selects_the_frames_labels_falling_back_to_english(shop, language, lang, label):
    shop.configure(language=language)
    _, _, html = shop.frame(shop.instance()["bearerToken"])
    assert f'<html lang="{lang}">' in html and f">{label}</label>" in html
    assert f'"language": "{lang}"' in html  # frame.js's messages


@pytest.mark.parametrize(("card_settings", "shown", "hidden"), [
    ({"billingAddress": "omit", "contactInfo": "omit"}, set(), {"address1", "zip", "email", "phone"}),
    ({"billingAddress": "optional"}, {"address1", "address2", "city", "state", "zip"}, {"email"}),
    ({"billingAddress": "required", "contactInfo": "required"}, {"address1", "city", "state", "zip", "email", "phone"},
     set()),
])
def test_billing_address_and_contact_info_control_the_fields(shop, card_settings, shown, hidden):
    shop.configure(cardSettings=card_settings)
    fields = _frame_fields(shop.frame(shop.instance()["bearerToken"])[2])
    assert shown <= fields and not hidden & fields, fields


def test_contact_info_is_checked_and_returned_never_kept(shop):
    shop.configure(cardSettings={"contactInfo": "required", "billingAddress": "omit"})
    token = shop.instance(customId="contact-1")["bearerToken"]
    status, err = shop.submit(token, **_card())
    assert status == 400 and err["errMessage"].startswith("email"), err
    status, result = shop.submit(token, **_card(email="ann@shop.example", phone="+14441234321"))
    assert status == 200 and result["contact"] == {"email": "ann@shop.example", "phone": "+14441234321"}, result
    assert "ann@shop.example" not in json.dumps(_tokens_items())


def test_save_payment_option_stores_the_card_through_the_gateway(shop):
    shop.configure(cardSettings={"savePaymentOption": "optional"})
    status, result = shop.submit(shop.instance(customId="save-1")["bearerToken"], **_card(savePayment=True))
    assert status == 200 and re.fullmatch(r"[0-9]{12}", result["saved"]["token_id"]), result
    # the eToken pays now; the STORE's token_id pays later (the gateway's stored card), never with the CVV
    assert shop.pay(etoken=result["eToken"], custom_id="save-1")["transaction_approved"] is True
    later = shop.pay(token_id=result["saved"]["token_id"])
    assert later["transaction_approved"] is True and later["last4"] == "4242", later
    status, result = shop.submit(shop.instance()["bearerToken"], **_card())  # optional, not ticked: not saved
    assert status == 200 and "saved" not in result
    shop.configure(cardSettings={"savePaymentOption": "omit"})
    status, err = shop.submit(shop.instance()["bearerToken"], **_card(savePayment=True))
    assert status == 400 and err["errMessage"].startswith("savePayment"), err
    shop.configure(allowedPaymentMethods=["ACH"], achSettings={"savePaymentOption": "required"})
    status, result = shop.submit(shop.instance()["bearerToken"], paymentMethod="ACH", bankAccountNumber="000123456789",
                                 bankRoutingNumber="011000015", accountHolderName="Ann Lee")
    assert status == 200 and re.fullmatch(r"[0-9]{12}", result["saved"]["token_id"]), result


def test_save_payment_option_is_offered_in_the_frame(shop):
    shop.configure(allowedPaymentMethods=["CARD", "ACH"], cardSettings={"savePaymentOption": "optional"},
                   achSettings={"savePaymentOption": "required"})
    html = shop.frame(shop.instance()["bearerToken"])[2]
    assert 'type="checkbox" id="f-saveCARD" name="savePayment"' in html
    assert 'id="f-saveACH" data-required="true"' in html


def test_no_parent_domains_means_top_level_by_instance_only(shop):
    """Empty allowedParentDomains (the original allows it): frame-ancestors 'none' (embeddable nowhere, never
    '*'), no parent origin to post to, whatever origin is claimed; the page works top-level, with its own button,
    and the merchant's server reads the eToken from the instance."""
    config = shop.configure(allowedParentDomains=[])
    assert config["allowedParentDomains"] == []
    token = shop.instance()["bearerToken"]
    for origin in (SHOP, "https://evil.example", ""):
        status, headers, html = shop.frame(token, origin)
        assert status == 200 and "frame-ancestors 'none';" in headers["Content-Security-Policy"]
        assert '"parentOrigin": null' in html and '"standalone": true' in html and 'id="pay"' in html
        assert "*" not in headers["Content-Security-Policy"]
    framed = shop.configure()  # with domains: no button, the parent page submits
    assert framed["allowedParentDomains"] == [SHOP]
    assert 'id="pay"' not in shop.frame(shop.instance()["bearerToken"])[2]


def test_a_configuration_stored_before_the_originals_vocabulary_still_works(shop):
    """Configurations made before issue 30: a 20-hex id, language "en", billingAddress per field, no contactInfo,
    savePaymentOption or achSettings: read, listed, instantiated and rendered as they behaved."""
    from vaultcore.store import registry

    old_id = "0123456789abcdef0123"
    registry.put_new({"pk": f"IFRAMECONF#{shop.account_id}", "sk": "CONFIG#" + old_id, "accountId": shop.account_id,
                      "id": old_id, "config": {
                          "label": "Old", "language": "es", "timeout": 900, "currency": "USD",
                          "allowedPaymentMethods": ["CARD"], "allowedParentDomains": [SHOP],
                          "cardSettings": {"cvv": "required", "billingAddress": {
                              "address1": "omit", "address2": "omit", "city": "omit", "state": "omit",
                              "zip": "required"}}, "antiFraud": False}, "createdAt": 1, "updatedAt": 1})
    shop._id = old_id
    status, config = shop.api("GET", "/{id}")
    assert status == 201 and config["language"] == "SPANISH" and config["cardSettings"]["billingAddress"] == "required"
    assert config["cardSettings"]["savePaymentOption"] == "omit" and config["timeout"] == 900
    html = shop.frame(shop.instance()["bearerToken"])[2]
    assert '<html lang="es">' in html and _frame_fields(html) == {"cardNumber", "cardExpiration", "cardCvv", "zip"}


def test_the_list_is_a_bare_array_paged_with_the_originals_headers(shop):
    ids = [shop.configure(label=f"c{i}")["id"] for i in range(5)]
    path = BASE.replace("{account_id}", shop.account_id)

    def page(**query):
        status, headers, body = call(shop.platform, "IframeFunction", "GET", path, None,
                                     {"Authorization": shop.basic, "Host": "api.example.com"}, resource=BASE,
                                     path_params={"account_id": shop.account_id}, query=query)
        return status, headers, body

    status, headers, body = page()
    assert status == 200 and sorted(c["id"] for c in body) == sorted(ids)
    ids = [c["id"] for c in body]  # in creation order, ties (the same second) by id: a stable order for paging
    assert (headers["X-Total"], headers["X-Per-Page"], headers["X-Current_page"], headers["X-Last-Page"]) == (
        "5", "100", "1", "1")
    assert "X-Next-Page-Url" not in headers and "X-Prev-Page-Url" not in headers
    status, headers, body = page(page="2", limit="2")
    assert status == 200 and [c["id"] for c in body] == ids[2:4]
    assert (headers["X-Total"], headers["X-Per-Page"], headers["X-From"], headers["X-To"],
            headers["X-Total-In-This-Page"], headers["X-Last-Page"]) == ("5", "2", "3", "4", "2", "3")
    assert headers["X-Next-Page-Url"] == f"https://api.example.com{path}?page=3&limit=2"
    assert headers["X-Prev-Page-Url"] == f"https://api.example.com{path}?page=1&limit=2"
    assert "|label=2|active=1 " in headers["X-Links"]
    status, headers, body = page(page="9", limit="2")
    assert status == 200 and body == [] and headers["X-Total-In-This-Page"] == "0"
    for bad in ({"page": "0"}, {"limit": "101"}, {"limit": "x"}):
        status, _, err = page(**bad)
        assert status == 422 and err["details"][0]["source"] == next(iter(bad)), err


# ------------------------------------------------------------------------------------------ instances (issue 30)
def test_instance_init_takes_the_originals_members_and_get_reads_it_back(shop):
    shop.configure(allowedParentDomains=[], cardSettings={"billingAddress": "required", "contactInfo": "optional"})
    customer = {"name": "Jane Smith", "email": "jsmith@example.com", "phone": "+14441234321",
                "billingAddress": {"address1": "123 Plain St", "city": "Atlanta", "state": "GA", "zip": "90210",
                                   "country": "USA"}}
    inst = shop.instance(label="Card only iframe", reference="c73bcdcc-2669-4bf6-81d3-e4ae73fb11fd", tokens=[],
                         customer=customer, language="SPANISH", timeout=600, amount="27.98", currency="USD",
                         initializeTransaction=False)
    assert inst["transactionId"] == "c73bcdcc-2669-4bf6-81d3-e4ae73fb11fd"  # the reference fits custom_id
    status, view = shop.api("GET", "/{id}/instance/" + inst["id"])
    assert status == 201 and view == {"id": inst["id"], "label": "Card only iframe",
                                      "reference": "c73bcdcc-2669-4bf6-81d3-e4ae73fb11fd", "tokens": [],
                                      "customer": customer, "language": "SPANISH", "timeout": 600,
                                      "amount": "27.98", "currency": "USD"}, view
    # language and customer act: the frame is in Spanish, its fields filled in (the shopper may change them)
    html = shop.frame(inst["bearerToken"])[2]
    assert '<html lang="es">' in html and 'value="Atlanta"' in html and 'value="jsmith@example.com"' in html
    # top-level use: the merchant's server reads the eToken from the instance
    status, result = shop.submit(inst["bearerToken"], **_card(address1="123 Plain St", city="Atlanta", state="GA",
                                                              zip="90210"))
    assert status == 200, result
    assert shop.api("GET", "/{id}/instance/" + inst["id"])[1]["tokens"] == [result["eToken"]]
    assert shop.pay(etoken=result["eToken"], custom_id=inst["transactionId"])["transaction_approved"] is True


def test_instance_reads_are_the_accounts_and_refusals_are_422(shop):
    shop.configure()
    inst = shop.instance()
    assert re.fullmatch(r"ifr-[0-9a-f]{24}", inst["transactionId"])  # no reference, no customId: generated
    other = Iframe(shop.platform, shop.partner_id)
    other._id = shop._id
    for who, instance_id in ((other, inst["id"]), (shop, "ifri_" + "0" * 32), (shop, "nope")):
        status, err = who.api("GET", "/{id}/instance/" + instance_id)
        assert status in (401, 404) and err["errorType"] in ("not_found", "authentication"), err
    assert shop.instance(reference="has spaces in it")["transactionId"].startswith("ifr-")
    for member, value in (("tokens", ["ewog"]), ("language", "KLINGON"), ("timeout", 1801), ("currency", "XXX"),
                          ("initializeTransaction", "yes"), ("customer", {"phone": "12"}),
                          ("customer", {"billingAddress": {"city": "Atlanta"}}), ("label", "L" * 101),
                          ("reference", "")):
        status, err = shop.api("POST", "/{id}/instance/init", {"label": "o", member: value})
        assert status == 422 and err["errCode"] == 902 and err["details"][0]["source"].startswith(member), err
    assert shop.instance(timeout=60.0)["id"]  # the original types timeout as a number


def test_a_save_that_fails_in_the_store_leaves_the_submission_good(shop, monkeypatch):
    """savePaymentOption required, the gateway's STORE failing on DynamoDB: the eToken is made and counted, so the
    submission answers it, with saved null; the card pays with the eToken."""
    from vaultcore.errors import DependencyError
    from vaultcore.gateway import service

    def unavailable(account, variables):
        raise DependencyError("Internal error: transaction write failed.")  # what aws_errors raises

    monkeypatch.setattr(service, "store_for_account", unavailable)
    shop.configure(cardSettings={"savePaymentOption": "required"})
    status, result = shop.submit(shop.instance(customId="nosave")["bearerToken"], **_card())
    assert status == 200 and result["saved"] is None, result
    assert shop.pay(etoken=result["eToken"], custom_id="nosave")["transaction_approved"] is True
