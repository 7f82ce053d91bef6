"""Issue 31 in-process on moto: merchants' API keys through the functions of template.yaml.

The key operations (ApiKeysFunction) with the account key and with keys; keys on the payment iFrame's operations
(IframeFunction, Basic and HMAC), on QSAPI (GatewayFunction) and RSAPI (ReportingFunction); the uniform failure of
an expired, disabled, unknown or wrongly used key, counted by cause; what is stored (the secret only wrapped).
"""

from __future__ import annotations

import base64
import json
import re

import pytest

from tests.helpers import admin, call
from vaultcore import clock
from vaultcore.auth.hmac_scheme import hmac_response, string_to_hash
from vaultcore.store import registry

KEYS = "/api/v4/accounts/{account_id}/api-keys"
KEY = KEYS + "/{resource_id}"
IFRAME = "/api/v4/accounts/{account_id}/payment-iframe"
CARD = "4242424242424242"


def _emf(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


PAYMENT = {"tender_type": "CARD", "card_number": CARD, "card_expiration": "1230", "card_verification": "123",
           "payment_type": "ECOMMERCE"}


class Merchant:
    def __init__(self, platform) -> None:
        self.platform = platform
        status, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {"credit": True}})
        assert status == 201, account
        self.account_id = account["account_id"]
        self.accesskey = account["api_accesskey"]
        self.auth = basic(self.account_id, self.accesskey)

    def keys(self, method: str, body=None, *, key_id: str | None = None, auth: str | None = None,
             account_id: str | None = None, query=None):
        account_id = account_id or self.account_id
        params = {"account_id": account_id}
        path = KEYS.replace("{account_id}", account_id)
        resource = KEYS
        if key_id is not None:
            params["resource_id"] = key_id
            path += "/" + key_id
            resource = KEY
        status, _, payload = call(self.platform, "ApiKeysFunction", method, path, body,
                                  {"Authorization": auth or self.auth}, resource=resource, path_params=params,
                                  query=query)
        return status, payload

    def create_key(self, auth: str | None = None, **members) -> dict:
        status, key = self.keys("POST", {"label": "Test server key", **members}, auth=auth)
        assert status == 201, key
        return key

    def iframes(self, auth: str, *, account_id: str | None = None, method: str = "GET", body=None):
        account_id = account_id or self.account_id
        return call(self.platform, "IframeFunction", method, IFRAME.replace("{account_id}", account_id), body,
                    {"Authorization": auth}, resource=IFRAME, path_params={"account_id": account_id})

    def qsapi(self, accesskey: str, **variables):
        status, _, body = call(self.platform, "GatewayFunction", "POST", "/api/qsapi/3.8",
                               json.dumps({"account_id": self.account_id, "api_accesskey": accesskey,
                                           "transaction_amount": "10.00", "currency": "USD", **variables}),
                               {"Content-Type": "application/json"}, resource="/api/qsapi/3.8")
        return status, body

    def rsapi(self, accesskey: str, **variables):
        status, _, body = call(self.platform, "ReportingFunction", "POST", "/api/rsapi/v1/report/transactions",
                               json.dumps({"account_id": self.account_id, "api_accesskey": accesskey, **variables}),
                               {"Content-Type": "application/json"}, resource="/api/rsapi/v1/report/transactions")
        return status, body


@pytest.fixture
def merchant(platform) -> Merchant:
    return Merchant(platform)


def test_create_answers_the_secret_once_and_stores_it_only_wrapped(merchant):
    key = merchant.create_key(scopes=["pcx:payments:read"], methods=["BASIC"], expiresIn="2 hours")
    assert re.fullmatch(r"api_[0-9a-f]{32}", key["id"]) and re.fullmatch(r"[0-9a-f]{32}", key["secret"])
    assert key["accounts"] == [merchant.account_id] and key["enabled"] is True and key["methods"] == ["BASIC"]
    assert set(key) == {"id", "label", "methods", "accounts", "scopes", "expiresAt", "enabled", "secret"}
    status, read = merchant.keys("GET", key_id=key["id"])
    assert status == 200 and read == {k: v for k, v in key.items() if k != "secret"}
    status, listed = merchant.keys("GET")
    assert status == 200 and listed == [read]
    # the secret is nowhere in the table in clear, only its KMS envelope
    items = [registry.get(f"APIKEY#{key['id']}", "KEY"),
             registry.get(f"ACCOUNT#{merchant.account_id}", f"APIKEY#{key['id']}")]
    assert all(key["secret"] not in json.dumps(i, default=str) for i in items)
    assert set(items[0]["secretWrapped"]) == {"k", "n", "c"} and "secretWrapped" not in items[1]


def test_validation_answers_the_original_violation_naming_the_member(merchant):
    cases = [({"scopes": ["pcx:payments:read"]}, "label"), ({"label": "ok label"}, "scopes"),
             ({"label": "x", "scopes": ["pcx:payments:read"]}, "label"),
             ({"label": "key", "scopes": ["pcx:nothing"]}, "scopes"),
             ({"label": "key", "scopes": ["pcx:payments:read"], "methods": ["SSH"]}, "methods"),
             ({"label": "key", "scopes": ["pcx:payments:read"], "expiresIn": "3 fortnights"}, "expiresIn"),
             ({"label": "key", "scopes": ["pcx:payments:read"], "expiresAt": "2001-01-01T00:00:00Z"}, "expiresAt"),
             ({"label": "key", "scopes": ["pcx:payments:read"], "accounts": ["12"]}, "accounts"),
             ({"label": "key", "scopes": ["pcx:payments:read"], "random": 1}, "random")]
    for body, member in cases:
        status, refused = merchant.keys("POST", body)
        assert status == 422 and refused["errorType"] == "invalid_request", (body, refused)
        assert refused["details"][0]["source"] == member, (body, refused)


def test_a_key_never_grants_more_than_the_key_that_creates_it(merchant, platform):
    creator = merchant.create_key(scopes=["pcx:api_key:*", "pcx:iframe:*"])
    auth = basic(creator["id"], creator["secret"])
    narrower = merchant.create_key(auth=auth, scopes=["pcx:iframe:read", "pcx:iframe:instance:*"])
    assert narrower["scopes"] == ["pcx:iframe:read", "pcx:iframe:instance:*"]
    status, refused = merchant.keys("POST", {"label": "wider", "scopes": ["pcx:payments:read"]}, auth=auth)
    assert status == 403 and refused["errorType"] == "authorization" and refused["errCode"] == 911
    assert "pcx:payments:read" in refused["value"]
    other = Merchant(platform)
    status, refused = merchant.keys("POST", {"label": "other", "scopes": ["pcx:iframe:read"],
                                             "accounts": [other.account_id]}, auth=auth)
    assert status == 403 and other.account_id in refused["value"]
    # a narrow key may neither widen itself nor touch a broader key
    status, refused = merchant.keys("PATCH", {"scopes": ["pcx:payments:*"]}, key_id=creator["id"], auth=auth)
    assert status == 403
    updater = merchant.create_key(scopes=["pcx:api_key:update", "pcx:api_key:delete"])
    narrow_auth = basic(updater["id"], updater["secret"])
    for method, body in (("PATCH", {"enabled": False}), ("DELETE", None)):
        status, refused = merchant.keys(method, body, key_id=creator["id"], auth=narrow_auth)
        assert status == 403 and "pcx:api_key:*" in refused["value"], (method, refused)
    # creating needs pcx:api_key:create itself
    status, refused = merchant.keys("POST", {"label": "any", "scopes": ["pcx:api_key:update"]}, auth=narrow_auth)
    assert status == 403 and "pcx:api_key:create" in refused["value"]


def test_a_key_of_exact_scope_works_and_a_missing_scope_is_403_named(merchant):
    reader = merchant.create_key(scopes=["pcx:iframe:read"], methods=["BASIC"])
    status, _, listed = merchant.iframes(basic(reader["id"], reader["secret"]))
    assert status == 200 and listed == []
    status, _, refused = merchant.iframes(basic(reader["id"], reader["secret"]), method="POST",
                                          body={"label": "Checkout", "allowedParentDomains": []})
    assert status == 403 and refused["errorType"] == "authorization" and "pcx:iframe:create" in refused["value"]


def test_expired_disabled_unknown_and_misused_keys_get_the_uniform_1003_counted_by_cause(merchant, capsys,
                                                                                         frozen_clock):
    key = merchant.create_key(scopes=["pcx:iframe:*"], methods=["HMAC"], expiresIn="1 hour")
    basic_only = merchant.create_key(scopes=["pcx:iframe:*"], methods=["BASIC"])
    good = basic(basic_only["id"], basic_only["secret"])
    assert merchant.iframes(good)[0] == 200
    cases = [(basic(key["id"], key["secret"]), "method"),  # HMAC only
             (basic(basic_only["id"], "0" * 32), "access_key"),
             (basic("api_" + "1" * 32, basic_only["secret"]), "unknown_key")]
    capsys.readouterr()
    for auth, cause in cases:
        status, _, refused = merchant.iframes(auth)
        assert status == 401 and refused["errorType"] == "authentication" and refused["errCode"] == 1003
        (doc,) = [d for d in _emf(capsys.readouterr().out) if "AuthenticationFailures" in d]
        assert (doc["AuthenticationFailures"], doc["Cause"], doc["Api"]) == (1, cause, "iframe")
    assert merchant.keys("PATCH", {"enabled": False}, key_id=basic_only["id"])[0] == 200
    capsys.readouterr()
    status, _, refused = merchant.iframes(good)
    assert status == 401 and refused["errCode"] == 1003
    (doc,) = [d for d in _emf(capsys.readouterr().out) if "AuthenticationFailures" in d]
    assert doc["Cause"] == "disabled"
    # re-enabled, then expired by the platform's clock (an hour and a second later)
    assert merchant.keys("PATCH", {"enabled": True, "expiresIn": "1 hour"}, key_id=basic_only["id"])[0] == 200
    assert merchant.iframes(good)[0] == 200
    clock.set_offset(3601)
    capsys.readouterr()
    status, _, refused = merchant.iframes(good)
    assert status == 401 and refused["errCode"] == 1003
    (doc,) = [d for d in _emf(capsys.readouterr().out) if "AuthenticationFailures" in d]
    assert doc["Cause"] == "expired"


def test_a_key_for_one_account_cannot_touch_another(merchant, platform):
    other = Merchant(platform)
    key = merchant.create_key(scopes=["pcx:iframe:*", "pcx:api_key:*", "pcx:payments:*"])
    auth = basic(key["id"], key["secret"])
    assert merchant.iframes(auth)[0] == 200
    status, _, refused = merchant.iframes(auth, account_id=other.account_id)
    assert status == 401 and refused["errCode"] == 1003
    status, refused = merchant.keys("GET", auth=auth, account_id=other.account_id)
    assert status == 401 and refused["errCode"] == 1003
    # QSAPI: the key on the other account's account_id is the uniform 102
    status, body = other.qsapi(f"{key['id']}:{key['secret']}", transaction_type="SALE", **PAYMENT)
    assert (status, body["error_code"]) == (200, 102)
    # and a key of another account is not found under this one's path
    status, missing = other.keys("GET", key_id=key["id"])
    assert status == 404 and missing["errorType"] == "not_found"


def test_hmac_keys_sign_method_path_and_body_and_use_each_nonce_once(merchant, platform, frozen_clock):
    key = merchant.create_key(scopes=["pcx:iframe:read"], methods=["HMAC"])
    path = IFRAME.replace("{account_id}", merchant.account_id)
    ts = int(clock.now())

    def header(nonce: str, verb: str = "GET", when: int = ts) -> str:
        response = hmac_response(key["secret"].encode(), string_to_hash(path, nonce, when, b"", verb))
        return f'Hmac username="{key["id"]}", nonce="{nonce}", timestamp="{when}", response="{response}"'

    assert merchant.iframes(header("n-1"))[0] == 200
    assert merchant.iframes(header("n-1"))[0] == 401  # the nonce again
    assert merchant.iframes(header("n-2", verb="POST"))[0] == 401  # signed for another method
    assert merchant.iframes(header("n-3", when=ts - 16 * 60))[0] == 401  # stale
    assert merchant.iframes(header("n-4"))[0] == 200


def test_qsapi_and_rsapi_take_a_key_with_the_transaction_types_scope(merchant):
    reader = merchant.create_key(scopes=["pcx:payments:read"], methods=["BASIC"])
    payer = merchant.create_key(scopes=["pcx:payments:create"], methods=["BASIC"])
    status, sale = merchant.qsapi(f"{payer['id']}:{payer['secret']}", transaction_type="SALE", **PAYMENT)
    assert status == 200 and sale["transaction_approved"] is True, sale
    tid = sale["transaction_id"]
    # pcx:payments:read reads the transaction and nothing else: 403, the gateway's body with error 103
    status, report = merchant.rsapi(f"{reader['id']}:{reader['secret']}", transaction_id=tid)
    assert status == 200 and report["transaction"]["transaction_id"] == tid, report
    for ttype, variables in (("SALE", PAYMENT), ("CREDIT", PAYMENT), ("REFUND", {"token_id": tid})):
        status, refused = merchant.qsapi(f"{reader['id']}:{reader['secret']}", transaction_type=ttype,
                                         **variables)
        assert (status, refused["error_code"], refused["error"]) == (403, 103, True), (ttype, refused)
        assert "pcx:payments:" in refused["error_message"]
    status, refused = merchant.rsapi(f"{payer['id']}:{payer['secret']}", transaction_id=tid)
    assert (status, refused["error_code"]) == (403, 103)
    status, refused = merchant.keys("POST", {"label": "more", "scopes": ["pcx:payments:read"]},
                                    auth=basic(reader["id"], reader["secret"]))
    assert status == 403 and "pcx:api_key:create" in refused["value"]
    # a wrong secret, and a key with hash authentication, are the uniform 102
    for accesskey, extra in ((f"{payer['id']}:{'0' * 32}", {}), (f"{payer['id']}:{payer['secret']}",
                                                                   {"timestamp": "1", "hash": "0" * 64})):
        status, refused = merchant.qsapi(accesskey, transaction_type="SALE", **PAYMENT, **extra)
        assert (status, refused["error_code"]) == (200, 102), refused
    # a key of pcx:payments:update refunds (5.00 of it), and the account's own access key keeps every scope
    updater = merchant.create_key(scopes=["pcx:payments:update"], methods=["ALL"])
    status, refund = merchant.qsapi(f"{updater['id']}:{updater['secret']}", transaction_type="REFUND",
                                    token_id=tid, transaction_amount="5.00")
    assert status == 200 and refund["transaction_approved"] is True, refund
    status, refund = merchant.qsapi(merchant.accesskey, transaction_type="REFUND", token_id=tid,
                                    transaction_amount="5.00")
    assert status == 200 and refund["transaction_approved"] is True, refund


def test_the_scope_catalog_and_deleting_a_key(merchant):
    status, _, scopes = call(merchant.platform, "ApiKeysFunction", "GET", "/api/v4/api-key-scopes", None,
                             {"Authorization": merchant.auth}, resource="/api/v4/api-key-scopes")
    assert status == 200 and len(scopes) == 37
    assert {"scope": "pcx:iframe:instance:read", "description": "View a secure iframe checkout instance details",
            "category": "Payment iFrame", "level": 2, "enabled": True} in scopes
    key = merchant.create_key(scopes=["pcx:iframe:read"])
    auth = basic(key["id"], key["secret"])
    status, _, refused = call(merchant.platform, "ApiKeysFunction", "GET", "/api/v4/api-key-scopes", None,
                              {"Authorization": auth}, resource="/api/v4/api-key-scopes")
    assert status == 403 and "pcx:api_key_scopes:read" in refused["value"]
    assert merchant.keys("DELETE", key_id=key["id"])[0] == 204
    assert merchant.iframes(auth)[0] == 401
    assert merchant.keys("GET", key_id=key["id"])[0] == 404
    assert merchant.keys("GET")[1] == []


def test_a_key_never_outlives_the_key_that_gives_it(merchant, frozen_clock):
    """Review of issue 31: an expiring key with pcx:api_key:* gave a key of no expiry (or extended its own): the
    expiry its issuer chose bounded nothing. A key may give (create, or PATCH to) an expiry no later than its own."""
    creator = merchant.create_key(scopes=["pcx:api_key:*", "pcx:payments:read"], expiresIn="1 hour")
    auth = basic(creator["id"], creator["secret"])
    for members in ({}, {"expiresIn": "2 hours"}, {"expiresAt": None}):
        status, refused = merchant.keys("POST", {"label": "outlives", "scopes": ["pcx:payments:read"], **members},
                                        auth=auth)
        assert status == 422 and refused["details"][0]["source"] == "expiresAt", (members, refused)
    child = merchant.create_key(auth=auth, scopes=["pcx:payments:read"], expiresIn="30 minutes")
    for key_id in (creator["id"], child["id"]):
        for members in ({"expiresAt": None}, {"expiresIn": "10 years"}):
            status, refused = merchant.keys("PATCH", members, key_id=key_id, auth=auth)
            assert status == 422 and refused["details"][0]["source"] == "expiresAt", (key_id, members, refused)
    assert merchant.keys("PATCH", {"expiresIn": "45 minutes"}, key_id=child["id"], auth=auth)[0] == 200
    assert merchant.keys("PATCH", {"label": "renamed"}, key_id=child["id"], auth=auth)[0] == 200
    status, read = merchant.keys("GET", key_id=creator["id"])
    assert status == 200 and read["expiresAt"] == creator["expiresAt"]
    # the account's own key gives any expiry, and a key without expiry gives any too
    assert merchant.keys("PATCH", {"expiresAt": None}, key_id=child["id"])[0] == 200


@pytest.mark.parametrize("label", ["4242424242424242", "4242 4242 4242 4242", "card 4242_4242_4242_4242"])
def test_a_key_label_never_holds_a_card_number(merchant, label):
    status, refused = merchant.keys("POST", {"label": label, "scopes": ["pcx:payments:read"]})
    assert status == 422 and refused["details"][0]["source"] == "label", refused
    assert "4242" not in json.dumps(refused)
    key = merchant.create_key(scopes=["pcx:payments:read"])
    status, refused = merchant.keys("PATCH", {"label": label}, key_id=key["id"])
    assert status == 422 and refused["details"][0]["source"] == "label", refused
    assert all(k["label"] != label for k in merchant.keys("GET")[1])
