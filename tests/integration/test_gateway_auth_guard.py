"""Issue 27 items 3 and 4 in-process on moto: a gateway hash is accepted once and binds the whole request;
every gateway and iFrame API authentication failure counts in AuthenticationFailures (by API); a key being
guessed is slowed down for at most one window; and the alarm watches what the code emits.

Each test makes its own partner and account (fresh ids) and moves the platform's clock only inside a
``try/finally`` (vaultcore.clock), so the tests do not depend on their order or on the speed of the machine."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest

from local.template import load_template, parameters_with_defaults
from tests.helpers import admin, call
from vaultcore import clock
from vaultcore.gateway.accounts import HASH_FUTURE_SECONDS, HASH_WINDOW_SECONDS
from vaultcore.settings import settings

QSAPI = "/api/qsapi/3.8"
RSAPI = "/api/rsapi/v1/transactions"
VISA, OTHER_CARD = "4242424242424242", "5555555555554444"


def _digest(account_id: str, key: str, ts: int, values: list[str]) -> str:
    return hashlib.sha256(",".join([account_id, key, str(ts), *values]).encode()).hexdigest()


class Shop:
    def __init__(self, platform) -> None:
        status, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {"credit": True}})
        assert status == 201, account
        self.platform = platform
        self.account_id, self.key = account["account_id"], account["api_accesskey"]

    def signed(self, variables: dict, ts: int, names: list[str] | None = None) -> dict:
        names = sorted(variables) if names is None else names
        return {**variables, "account_id": self.account_id, "timestamp": str(ts), "hash_key": ",".join(names),
                "hash": _digest(self.account_id, self.key, ts, [variables.get(n, "") for n in names])}

    def qsapi(self, variables: dict) -> dict:
        status, _, body = call(self.platform, "GatewayFunction", "POST", QSAPI, json.dumps(variables),
                               {"Content-Type": "application/json"}, resource=QSAPI)
        assert status == 200, body
        return body

    def rsapi(self, variables: dict) -> dict:
        status, _, body = call(self.platform, "ReportingFunction", "POST", RSAPI, variables, resource=RSAPI)
        assert status == 200, body
        return body

    def keyed(self, **variables: str) -> dict:
        return self.qsapi({"account_id": self.account_id, "api_accesskey": self.key, **variables})


@pytest.fixture
def shop(platform) -> Shop:
    return Shop(platform)


SALE = {"transaction_type": "SALE", "tender_type": "CARD", "card_number": VISA, "card_expiration": "1230",
        "transaction_amount": "12.34"}


def _emf(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]


def _failures(out: str) -> list[tuple[str, str]]:
    """(Api, Cause) of each AuthenticationFailures data point in ``out``."""
    points = []
    for doc in _emf(out):
        if "AuthenticationFailures" in doc:
            values = doc["AuthenticationFailures"]
            points += [(doc["Api"], doc["Cause"])] * (len(values) if isinstance(values, list) else int(values))
    return points


# ------------------------------------------------------------------------------------ item 3: a hash works once
def test_a_captured_hash_works_once(shop, capsys):
    now = int(clock.now())
    earlier = shop.keyed(**SALE)  # another transaction of the account, for the REFUND below
    captured = shop.signed(SALE, now)
    first = shop.qsapi(captured)
    assert first["transaction_approved"] is True, first
    capsys.readouterr()
    replays = {
        "the same SALE": shop.qsapi(captured),
        "a CREDIT to another card": shop.qsapi({**captured, "transaction_type": "CREDIT", "card_number": OTHER_CARD,
                                                "transaction_amount": "9999.00"}),
        "a REFUND of another transaction": shop.qsapi({
            "account_id": shop.account_id, "timestamp": captured["timestamp"], "hash": captured["hash"],
            "transaction_type": "REFUND", "token_id": earlier["transaction_id"], "transaction_amount": "12.34"}),
    }
    read = shop.rsapi({"account_id": shop.account_id, "timestamp": captured["timestamp"], "hash": captured["hash"]})
    read_named = shop.rsapi({"account_id": shop.account_id, "timestamp": captured["timestamp"],
                             "hash": captured["hash"], "transaction_id": first["transaction_id"]})
    for name, answer in {**replays, "an RSAPI read": read, "an RSAPI read of the SALE": read_named}.items():
        assert (answer.get("error_code"), answer.get("error_message")) == (102, "Invalid account_id"), name
        assert "transaction" not in answer and "transactions" not in answer, name
    # each refusal counts as an authentication failure of its API (the identical replay: a used hash)
    points = _failures(capsys.readouterr().out)
    assert points[0] == ("qsapi", "nonce")
    assert [api for api, _ in points] == ["qsapi"] * 3 + ["rsapi"] * 2
    # the legitimate merchant is unaffected: a new hash (a new timestamp) works, once
    again = shop.signed(SALE, now - 1)
    assert shop.qsapi(again)["transaction_approved"] is True
    assert shop.qsapi(again)["error_code"] == 102


def test_a_hash_from_the_future_is_refused_outside_the_window(shop, frozen_clock):
    now = int(clock.now())  # standing still: "one second past the window" stays past it however slow the machine
    # the original accepted +-900 s: a hash made for later was good for about 30 minutes
    for ahead in (HASH_FUTURE_SECONDS + 1, 600, HASH_WINDOW_SECONDS):
        assert shop.qsapi(shop.signed(SALE, now + ahead))["error_code"] == 102, ahead
    assert shop.qsapi(shop.signed(SALE, now - HASH_WINDOW_SECONDS - 1))["error_code"] == 102
    # inside the window (a little clock drift either way): accepted, once
    ahead = shop.signed(SALE, now + HASH_FUTURE_SECONDS - 5)
    assert shop.qsapi(ahead)["transaction_approved"] is True
    # a used hash stays refused for as long as its timestamp would be accepted
    saved = clock.offset()
    try:
        clock.set_offset(saved + HASH_WINDOW_SECONDS - 30)
        assert shop.qsapi(ahead)["error_code"] == 102
    finally:
        clock.set_offset(saved)


def test_hash_key_variants(shop):
    now = int(clock.now())
    names = sorted(SALE)
    refused = {
        # the original's examples: a hash that names only the amount (or nothing) no longer authorizes a payment
        "only the amount": shop.signed(SALE, now, ["transaction_amount"]),
        "nothing": shop.signed(SALE, now - 1, []),
        "all but the card number": shop.signed(SALE, now - 2, [n for n in names if n != "card_number"]),
        "a name twice": shop.signed(SALE, now - 3, [*names, "card_number"]),
        "a credential": shop.signed({**SALE, "api_accesskey": shop.key}, now - 4, [*names, "api_accesskey"]),
        "an absent variable": shop.signed(SALE, now - 5, [*names, "zip"]),
        "the values in another order": {**shop.signed(SALE, now - 6, names),
                                        "hash_key": ",".join(reversed(names))},
    }
    for case, variables in refused.items():
        assert shop.qsapi(variables)["error_code"] == 102, case
    # any order of the names, the values in that order; every variable sent, those the original hashes too
    assert shop.qsapi(shop.signed(SALE, now - 7, list(reversed(names))))["transaction_approved"] is True
    described = {**SALE, "transaction_description": "Order 27", "currency": "USD"}
    assert shop.qsapi(shop.signed(described, now - 8))["transaction_approved"] is True
    # a hash that binds the amount cannot be reused for a CREDIT of that amount to another card
    credit = {"transaction_type": "CREDIT", "card_number": OTHER_CARD, "card_expiration": "1230",
              "transaction_amount": "12.34"}
    captured = shop.signed(SALE, now - 9, names)
    assert shop.qsapi({**captured, **credit, "hash_key": captured["hash_key"]})["error_code"] == 102


# ------------------------------------------------------------------ item 4: guessing is seen, and slowed down
def test_guessing_a_gateway_key_raises_the_alarm(shop, capsys):
    """The AuthFailureSpikeAlarm's metric, namespace and dimensions are those the gateway emits, and guessing a
    key on QSAPI and RSAPI, and Basic credentials on the iFrame API, reaches its threshold."""
    template = load_template()
    alarm = template["Resources"]["AuthFailureSpikeAlarm"]["Properties"]
    threshold = int(parameters_with_defaults(template)[alarm["Threshold"]["Ref"]])
    service = template["Globals"]["Function"]["Environment"]["Variables"]["METRICS_SERVICE"]
    assert alarm["Dimensions"] == [{"Name": "Service", "Value": service}]
    capsys.readouterr()
    guesses = 0
    while guesses < threshold:
        wrong = f"{guesses:032x}"
        shop.qsapi({**SALE, "account_id": shop.account_id, "api_accesskey": wrong})
        shop.rsapi({"account_id": shop.account_id, "api_accesskey": wrong})
        basic = base64.b64encode(f"{shop.account_id}:{wrong}".encode()).decode()
        status, _, body = call(shop.platform, "IframeFunction", "GET",
                               f"/api/v4/accounts/{shop.account_id}/payment-iframe", None,
                               {"Authorization": f"Basic {basic}"},
                               resource="/api/v4/accounts/{account_id}/payment-iframe",
                               path_params={"account_id": shop.account_id})
        assert (status, body["errCode"]) == (401, 1003)
        guesses += 3
    docs = [d for d in _emf(capsys.readouterr().out) if "AuthenticationFailures" in d]
    # what CloudWatch would sum for the alarm: the data points of every document published with its dimensions
    watched = [d for d in docs if any(dims == [x["Name"] for x in alarm["Dimensions"]]
                                      for directive in d["_aws"]["CloudWatchMetrics"]
                                      for dims in directive["Dimensions"]
                                      if {"Name": "AuthenticationFailures", "Unit": "Count"} in directive["Metrics"]
                                      and directive["Namespace"] == alarm["Namespace"])]
    assert watched == docs and all(d["Service"] == "vault-local" for d in docs)
    assert alarm["MetricName"] == "AuthenticationFailures" and alarm["Statistic"] == "Sum"
    assert sum(d["AuthenticationFailures"] for d in watched) >= threshold
    assert {d["Api"] for d in docs} == {"qsapi", "rsapi", "iframe"}
    assert {d["Cause"] for d in docs} <= {"access_key", "throttled"}
    # one API's figure on its own: the [Service, Api] dimension set
    assert all(["Service", "Api"] in directive["Dimensions"] for d in docs for directive in d["_aws"]["CloudWatchMetrics"]
               if {"Name": "AuthenticationFailures", "Unit": "Count"} in directive["Metrics"])


def test_a_guessed_key_is_slowed_down_for_one_window_at_most(shop, capsys):
    limit, window = settings().auth_failure_limit, settings().auth_failure_window_seconds
    saved = clock.offset()
    try:
        # the start of a window, so that the guesses below all fall in it whatever the time is
        clock.set_offset(saved + (window - clock.now() % window) + 1)
        assert shop.keyed(**SALE)["transaction_approved"] is True
        for i in range(limit):
            assert shop.qsapi({**SALE, "account_id": shop.account_id,
                               "api_accesskey": f"{i:032x}"})["error_code"] == 102
        capsys.readouterr()
        # the limit reached: the right key is refused too (a guesser cannot tell a right guess), as any hash
        assert shop.keyed(**SALE)["error_code"] == 102
        assert shop.qsapi(shop.signed(SALE, int(clock.now())))["error_code"] == 102
        assert _failures(capsys.readouterr().out) == [("qsapi", "throttled")] * 2
        # another account is not affected
        assert Shop(shop.platform).keyed(**SALE)["transaction_approved"] is True
        # at most one window later the right key works again
        clock.set_offset(clock.offset() + window)
        assert shop.keyed(**SALE)["transaction_approved"] is True
    finally:
        clock.set_offset(saved)


def _from(shop: Shop, source_ip: str, variables: dict) -> dict:
    """A QSAPI call from ``source_ip`` (API Gateway's requestContext.identity.sourceIp)."""
    from tests.helpers import api_event

    event = api_event("POST", QSAPI, json.dumps(variables), {"Content-Type": "application/json"}, resource=QSAPI)
    event["requestContext"]["identity"]["sourceIp"] = source_ip
    out = shop.platform.invoke("GatewayFunction", event)
    assert out["statusCode"] == 200, out
    return json.loads(out["body"])


def test_a_guesser_slows_down_only_itself_not_the_merchant_s_servers(shop):
    """The counts key on the account *from a source address*: a guesser at one address reaching the limit is
    refused there, the right key too, while the merchant's servers at their own addresses keep charging (a
    guesser must not be able to lock a merchant out, window after window, by knowing its account id)."""
    limit, window = settings().auth_failure_limit, settings().auth_failure_window_seconds
    saved = clock.offset()
    try:
        clock.set_offset(saved + (window - clock.now() % window) + 1)  # all in one window
        right = {**SALE, "account_id": shop.account_id, "api_accesskey": shop.key}
        for i in range(limit):
            assert _from(shop, "203.0.113.7", {**right, "api_accesskey": f"{i:032x}"})["error_code"] == 102
        assert _from(shop, "203.0.113.7", right)["error_code"] == 102  # the guesser's address: refused
        assert _from(shop, "198.51.100.20", right)["transaction_approved"] is True  # the merchant's: charges
        assert _from(shop, "198.51.100.20", {**right, "api_accesskey": "0" * 32})["error_code"] == 102
        assert _from(shop, "198.51.100.20", right)["transaction_approved"] is True  # one failure: not the limit
    finally:
        clock.set_offset(saved)


def test_failure_counts_are_retry_aware_and_bounded(platform, monkeypatch):
    """A retried write of the same failure (the SDK's, after a lost answer) counts once; an item holds at most
    the limit; its key is the credential's (spread), its TTL a window after the window's end."""
    from vaultcore.store import auth_failures
    from vaultcore.store.aws import dynamodb

    status, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}})
    assert status == 201
    credential, now = account["account_id"], clock.now()
    limit, window = settings().auth_failure_limit, settings().auth_failure_window_seconds
    calls: list[dict] = []
    real = dynamodb().update_item

    def twice(**kwargs):  # the answer lost: the same request sent again
        calls.append(kwargs)
        real(**kwargs)
        return real(**kwargs)

    client = dynamodb()
    with monkeypatch.context() as patched:
        patched.setattr(client, "update_item", twice)
        assert auth_failures.record_failure(credential, now) == 1
    assert len(calls) == 1
    counts = [auth_failures.record_failure(credential, now) for _ in range(limit + 3)]
    assert counts[-1] == limit and max(counts) == limit
    item = client.get_item(TableName=settings().nonces_table,
                           Key={"partnerId": {"S": f"authfail#{credential}"},
                                "nonce": {"S": f"w#{int(now // window)}"}})["Item"]
    assert len(item["writers"]["SS"]) == limit
    assert int(item["expiresAt"]["N"]) == (int(now // window) + 2) * window
    assert auth_failures.throttled(credential, now) is True


# ---------------------------------------------------------------------------------- item 5: STORE with tokens
def test_store_with_tokens_answers_a_documented_error(platform):
    """A STORE with bfid and vault tokens was HTTP 500 (an assertion in _store); it is error 217 now."""
    status, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "Store tokens", "apiSecurity": "hmac"})
    assert status == 201
    status, account = admin(platform, "POST", "/admin/v1/accounts", {
        "partnerId": partner["partnerId"], "options": {"tokenization": True, "token_payments": True}})
    assert status == 201, account
    shop = Shop.__new__(Shop)
    shop.platform, shop.account_id, shop.key = platform, account["account_id"], account["api_accesskey"]
    sale = shop.keyed(**SALE)
    assert sale["transaction_approved"] is True
    tokens = shop.rsapi({"account_id": shop.account_id, "api_accesskey": shop.key,
                         "transaction_id": sale["transaction_id"],
                         "include_fields": "bfid,vault_token_card_number,vault_token_card_expiration"})["transaction"]
    cases = [{"bfid": tokens["bfid"], "vault_token_card_number": tokens["vault_token_card_number"],
              "vault_token_card_expiration": tokens["vault_token_card_expiration"]},
             {"bfid": tokens["bfid"]},
             {"vault_token_card_number": tokens["vault_token_card_number"],
              "vault_token_card_expiration": tokens["vault_token_card_expiration"]}]
    for case in cases:
        status, _, body = call(platform, "GatewayFunction", "POST", QSAPI, json.dumps({
            "account_id": shop.account_id, "api_accesskey": shop.key, "transaction_type": "STORE", **case}),
            {"Content-Type": "application/json"}, resource=QSAPI)
        assert (status, body["error_code"], body["transaction_approved"]) == (200, 217, False), (case, body)
        assert "transaction_id" not in body


# --------------------------------------------------------------------------------------- item 5: HSTS everywhere
HSTS = "max-age=63072000; includeSubDomains"


def test_every_response_of_every_api_sets_hsts(shop, platform):
    from tests.helpers import api_event

    answers = {
        "QSAPI approved": call(platform, "GatewayFunction", "POST", QSAPI, json.dumps(
            {"account_id": shop.account_id, "api_accesskey": shop.key, **SALE}), resource=QSAPI),
        "QSAPI refused": call(platform, "GatewayFunction", "POST", QSAPI, "{}", resource=QSAPI),
        "RSAPI": call(platform, "ReportingFunction", "POST", RSAPI, {"account_id": shop.account_id,
                                                                     "api_accesskey": shop.key}, resource=RSAPI),
        "management": call(platform, "ManagementFunction", "GET", "/admin/v1/accounts/" + shop.account_id,
                           resource="/admin/v1/accounts/{account_id}", path_params={"account_id": shop.account_id}),
        "the card-entry frame": call(platform, "IframeFunction", "GET", "/iframe/v1/frame", None, None,
                                     query={"token": "x" * 40, "origin": "https://shop.example"},
                                     resource="/iframe/v1/frame"),
        "the frame's script": call(platform, "IframeFunction", "GET", "/iframe/v1/frame.js", resource="/iframe/v1/frame.js"),
        "the iFrame API refusal": call(platform, "IframeFunction", "GET",
                                       f"/api/v4/accounts/{shop.account_id}/payment-iframe",
                                       resource="/api/v4/accounts/{account_id}/payment-iframe",
                                       path_params={"account_id": shop.account_id}),
        "secure API refusal": call(platform, "PartnerValidateFunction", "POST", "/api/partner/validate", "{}"),
        "parser refusal": call(platform, "ParserFunction", "POST", "/api/decrypt/parser", "{}"),
        "collector": call(platform, "CollectorFunction", "POST", "/api/fraud/collect", "{}"),
        "checkout refusal": call(platform, "CheckoutFunction", "POST", "/payments", "{}", resource="/payments"),
    }
    for name, (status, headers, _body) in answers.items():
        assert headers.get("Strict-Transport-Security") == HSTS, (name, status, headers)
    unreadable = platform.invoke("GatewayFunction", {**api_event("POST", QSAPI, "x"), "isBase64Encoded": True,
                                                     "body": "!"})
    assert unreadable["headers"]["Strict-Transport-Security"] == HSTS


def test_hsts_replaces_a_proxy_targets_own_header():
    from vaultcore.api.handler import with_security_headers
    from vaultcore.proxy.service import TargetResponse

    event = TargetResponse(200, b"ok", {"strict-transport-security": "max-age=0", "X-Target": "1"}).to_event()
    headers = with_security_headers(event)["headers"]
    assert headers == {"Cache-Control": "no-store", "X-Target": "1", "Strict-Transport-Security": HSTS}


def test_failure_counts_never_change_an_answer_when_the_table_fails(shop, monkeypatch):
    """The counts are a guard, not a dependency: a Nonces table that cannot be read or written leaves the right
    key working and a wrong one refused with the same 102 (logged, not counted)."""
    from botocore.exceptions import ClientError

    from vaultcore.store import auth_failures
    from vaultcore.store.aws import dynamodb

    def broken(**_kwargs):
        raise ClientError({"Error": {"Code": "InternalServerError", "Message": "down"}}, "op")

    auth_failures._state.invalidate(shop.account_id)
    with monkeypatch.context() as patched:
        patched.setattr(dynamodb(), "get_item", broken)
        assert auth_failures.throttled(shop.account_id, clock.now()) is False
    with monkeypatch.context() as patched:
        patched.setattr(dynamodb(), "update_item", broken)
        assert auth_failures.record_failure(shop.account_id, clock.now()) == 0
        assert shop.qsapi({**SALE, "account_id": shop.account_id, "api_accesskey": "0" * 32})["error_code"] == 102
    assert shop.keyed(**SALE)["transaction_approved"] is True


def test_an_unknown_iframe_bearer_token_counts_as_an_iframe_authentication_failure(platform, capsys):
    capsys.readouterr()
    status, _, body = call(platform, "IframeFunction", "POST", "/iframe/v1/submit", json.dumps({}),
                           {"Authorization": "Bearer " + "x" * 43}, resource="/iframe/v1/submit")
    assert (status, body["errCode"]) == (401, 904)
    assert _failures(capsys.readouterr().out) == [("iframe", "bearer")]
