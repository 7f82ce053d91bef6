"""AWS calls per warm request (issue 13 "Fewer AWS calls"), counted with botocore ``before-call`` event hooks on
every client the functions hold: partner/validate 1, device/validate 1 (the HMAC nonce; the device record is
cached like the parser's), parser 1 with HMAC and 0 with body credentials, tokenize <= 2, SALE <= 2. The same
counts are printed by bench/bench_cold_start.py for fresh python3.13 processes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.helpers import admin, api_event
from vaultcore.auth.hmac_scheme import build_hmac_header
from vaultcore.devices import simulator
from vaultcore.store.aws import client

CARD = simulator.Card(pan="4761739001010010", expiry="2512", name="SMITH/JOHN", cvv="123")
SERVICES = ("dynamodb", "kms", "sqs")


class Calls:
    def __init__(self) -> None:
        self.names: list[str] = []

    def hook(self, model: Any, **_kwargs: Any) -> None:
        self.names.append(f"{model.service_model.service_name}.{model.name}")

    def __enter__(self) -> Calls:
        for service in SERVICES:
            client(service).meta.events.register("before-call", self.hook, unique_id="test-aws-calls")
        return self

    def __exit__(self, *exc: object) -> None:
        for service in SERVICES:
            client(service).meta.events.unregister("before-call", unique_id="test-aws-calls")


def _warm_calls(platform, function: str, make_event: Callable[[], dict], warmups: int = 2, samples: int = 3
                ) -> list[list[str]]:
    """The calls of each of ``samples`` warm requests (after ``warmups`` that fill the per-container caches)."""
    for _ in range(warmups):
        out = platform.invoke(function, make_event())
        assert out["statusCode"] == 200, out
    seen = []
    for _ in range(samples):
        with Calls() as calls:
            out = platform.invoke(function, make_event())
        assert out["statusCode"] == 200, out
        seen.append(calls.names)
    return seen


@pytest.fixture
def stack(platform):
    _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "calls", "apiSecurity": "hmac"})
    _, key_partner = admin(platform, "POST", "/admin/v1/partners", {"name": "calls-key", "apiSecurity": "key"})
    admin(platform, "POST", "/admin/v1/bdks", {"bdk": simulator.DEFAULT_BDK["tdes"], "scheme": "tdes",
                                               "bdkId": "calls-tdes"})
    for p in (partner, key_partner):
        status, _ = admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/devices",
                          {"serial": "CALLS-T1", "deviceType": "terminal", "bdkId": "calls-tdes", "firmware": "1.0"})
        assert status == 201
    status, _ = admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/templates", {
        "templateRef": "CALLS", "name": "calls",
        "fields": [{"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
                   {"name": "vault_token_email", "type": "email", "format": "NONE"}]})
    assert status == 201
    status, account = admin(platform, "POST", "/admin/v1/accounts", {
        "partnerId": partner["partnerId"], "options": {"tokenization": True, "token_payments": True}})
    assert status == 201, account
    return {"partner": partner, "key_partner": key_partner, "account": account}


def _signed(partner: dict, path: str, body: dict) -> Callable[[], dict]:
    raw = json.dumps(body).encode()

    def make() -> dict:
        header = build_hmac_header(partner["partnerId"], partner["hmacKey"].encode(), path, raw)
        return api_event("POST", path, raw, {"Authorization": header})

    return make


def test_partner_validate_one_call(platform, stack):
    seen = _warm_calls(platform, "PartnerValidateFunction",
                       _signed(stack["partner"], "/api/partner/validate", {"reference": "c"}))
    assert seen == [["dynamodb.PutItem"]] * 3  # the nonce


def test_device_validate_one_call_with_the_device_cached(platform, stack):
    seen = _warm_calls(platform, "DeviceValidateFunction", _signed(
        stack["partner"], "/api/device/validate", {"serial": "CALLS-T1", "firmware": "1.0", "reference": "d"}))
    assert seen == [["dynamodb.PutItem"]] * 3  # the nonce only: no device read


def test_device_validate_sees_a_status_change_made_through_the_management_api(platform, stack):
    make = _signed(stack["partner"], "/api/device/validate", {"serial": "CALLS-T1", "reference": "d"})
    assert platform.invoke("DeviceValidateFunction", make())["statusCode"] == 200
    pid = stack["partner"]["partnerId"]
    status, _ = admin(platform, "PUT", f"/admin/v1/partners/{pid}/devices/CALLS-T1/status", {"status": "inactive"})
    assert status == 200
    out = platform.invoke("DeviceValidateFunction", make())
    assert (out["statusCode"], json.loads(out["body"])["errCode"]) == (409, 1203)


def test_parser_one_call_with_hmac_none_with_body_credentials(platform, stack):
    fields = simulator.terminal_payload(CARD, "track2", scheme="tdes")
    seen = _warm_calls(platform, "ParserFunction", _signed(stack["partner"], "/api/decrypt/parser",
                                                           {"deviceSerial": "CALLS-T1", **fields}))
    assert seen == [["dynamodb.PutItem"]] * 3
    kp = stack["key_partner"]
    body = {"partnerId": kp["partnerId"], "partnerKey": kp["partnerKey"], "deviceSerial": "CALLS-T1", **fields}
    seen = _warm_calls(platform, "ParserFunction", lambda: api_event("POST", "/api/decrypt/parser", body))
    assert seen == [[]] * 3


def test_tokenize_at_most_two_calls(platform, stack):
    seen = _warm_calls(platform, "TokenizeFunction", _signed(stack["partner"], "/api/tokenization/tokenize", {
        "templateRef": "CALLS", "values": [{"name": "vault_token_card_number", "value": "4242424242424242"},
                                           {"name": "vault_token_email", "value": "calls@example.org"}]}))
    assert all(len(names) <= 2 for names in seen), seen
    assert all("kms.Decrypt" not in names for names in seen), seen


def test_sale_at_most_two_calls(platform, stack):
    account = stack["account"]
    sale = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
            "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
            "card_expiration": "1230", "card_verification": "123", "transaction_amount": "10.00"}
    seen = _warm_calls(platform, "GatewayFunction", lambda: api_event("POST", "/api/qsapi/3.8", sale))
    assert all(len(names) <= 2 for names in seen), seen
