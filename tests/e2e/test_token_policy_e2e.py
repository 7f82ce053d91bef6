"""Issue 27 over real HTTP against the runner: one use policy per tokenization, every path, every actor.

Two tokenization partners (P and Q) and three merchant accounts (P's shop and P's sibling, Q's account). The shop
captures cards through the payment iFrame's submission endpoint (the browser parts are
tests/e2e/test_iframe_browser.py); then every actor tries every path: the gateway's ``etoken`` and ``bfid`` read
steps, detokenize-only and reissue payments, the partner's ``read``, ``detokenize`` and ``tokenize``. Each refusal
is the documented code; afterwards no table holds a CVV token of a charged capture or a clear CVV or PAN.
Every test makes its own partners, accounts and captures (fresh ids; independent of order and of other files).
"""

from __future__ import annotations

import base64
import json

import pytest

from tests import spec_client
from tests.e2e.http import admin, post_json
from tests.helpers import readable_items

CARD = "4111111111111111"
CVV = "987"
CVV_NAME = "vault_token_card_verification"


class Account:
    def __init__(self, runner, partner: dict, **settings) -> None:
        status, account = admin(runner.base_url, "POST", "/admin/v1/accounts", {
            "partnerId": partner["partnerId"], "options": {"token_payments": True, "tokenization": True}, **settings})
        assert status == 201, account
        self.runner, self.id, self.key = runner, account["account_id"], account["api_accesskey"]

    def pay(self, **variables) -> dict:
        status, body = post_json(self.runner.base_url + "/api/qsapi/3.8", {
            "account_id": self.id, "api_accesskey": self.key, "transaction_type": "SALE", "tender_type": "CARD",
            "transaction_amount": "3.00", "currency": "USD", "payment_type": "ECOMMERCE", **variables})
        assert status == 200, body
        return body

    def instance(self, custom_id: str, parent: str = "https://shop.example") -> str:
        """A payment iFrame instance of this account for pages on ``parent``: its bearer token."""
        base = f"{self.runner.base_url}/api/v4/accounts/{self.id}/payment-iframe"
        basic = {"Authorization": "Basic " + base64.b64encode(f"{self.id}:{self.key}".encode()).decode()}
        status, config = post_json(base, {"label": "Checkout", "allowedParentDomains": [parent]}, basic)
        assert status == 201, config
        status, instance = post_json(f"{base}/{config['id']}/instance/init", {"label": "o", "customId": custom_id},
                                     basic)
        assert status == 201, instance
        return instance["bearerToken"]

    def capture(self, custom_id: str) -> str:
        """A card captured by this account's payment iFrame (its submission endpoint): the eToken."""
        status, result = post_json(self.runner.base_url + "/iframe/v1/submit", {
            "paymentMethod": "CARD", "cardNumber": CARD, "cardExpiration": "12/30", "cardCvv": CVV},
            {"Authorization": "Bearer " + self.instance(custom_id)})
        assert status == 200, result
        return result["eToken"]


class World:
    def __init__(self, runner, **shop_settings) -> None:
        self.runner = runner
        self.p, self.q = self._partner("Policy P"), self._partner("Policy Q")
        self.shop = Account(runner, self.p, **shop_settings)
        self.sibling, self.stranger = Account(runner, self.p), Account(runner, self.q)

    def _partner(self, name: str) -> dict:
        base = self.runner.base_url
        status, partner = admin(base, "POST", "/admin/v1/partners", {"name": name, "apiSecurity": "hmac"})
        assert status == 201, partner
        status, _ = admin(base, "PUT", f"/admin/v1/partners/{partner['partnerId']}/permissions", {"detokenize": True})
        assert status == 200
        return partner

    def api(self, path: str, payload: dict, partner: dict | None = None):
        partner = partner or self.p
        status, _, body = spec_client.signed_post(self.runner.base_url + path, partner["partnerId"],
                                                  partner["hmacKey"], payload)
        return status, body


@pytest.fixture
def world(runner) -> World:
    return World(runner)


def _tables(runner) -> list[dict]:
    import boto3

    ddb = boto3.client("dynamodb", endpoint_url=runner.demo["awsEndpoint"], region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    # deflated postback messages inflated (tests.helpers.readable_items): what they hold is scanned too
    return readable_items([i for t in ddb.list_tables()["TableNames"] for i in ddb.scan(TableName=t)["Items"]])


def test_a_sibling_a_stranger_and_a_second_use_are_refused_on_every_path(world):
    etoken = world.shop.capture("e2e-1")
    # the partner's one read: the card tokens, never the CVV's
    status, read = world.api("/api/tokenization/read", {"bfid": etoken})
    assert status == 200, read
    tokens = {v["name"]: v["value"] for v in read["values"]}
    assert set(tokens) == {"vault_token_card_number", "vault_token_card_expiration"}
    # another account of the same partner, by every gateway path
    assert world.sibling.pay(bfid=etoken)["error_code"] == 303
    assert world.sibling.pay(etoken=etoken, custom_id="e2e-1")["error_code"] == 306
    assert world.sibling.pay(bfid=etoken, **tokens)["error_code"] == 311
    assert world.sibling.pay(bfid=etoken, reissue="1", **tokens)["error_code"] == 311
    # another partner's account
    assert world.stranger.pay(bfid=etoken)["error_code"] == 302
    # the partner's detokenize of an iFrame capture
    pairs = [{"name": n, "value": t} for n, t in tokens.items()]
    status, out = world.api("/api/tokenization/detokenize", {"bfid": etoken, "values": pairs})
    assert status == 403 and out["errCode"] in (3041, 3045) and CARD not in json.dumps(out)
    # the shop: once, by either parameter, the CVV in that one authorization
    sale = world.shop.pay(bfid=etoken)
    assert sale["transaction_approved"] is True and sale["cvv2_response"] == "M", sale
    assert world.shop.pay(etoken=etoken, custom_id="e2e-1")["error_code"] == 309
    assert world.shop.pay(bfid=etoken)["error_code"] == 309
    # its tokens keep paying for the shop (no CVV), never for the sibling
    again = world.shop.pay(bfid=etoken, reissue="1", **tokens)
    assert again["transaction_approved"] is True and again.get("cvv2_response") != "M", again


def _refused_by_the_partner_api(world: World, bfid: str, tokens: dict[str, str]) -> None:
    """The partner's detokenize and batch/detokenize refuse a bound capture's tokens (3045), with no clear value."""
    pairs = [{"name": n, "value": t} for n, t in tokens.items()]
    status, out = world.api("/api/tokenization/detokenize", {"bfid": bfid, "values": pairs})
    assert status == 403 and out["errCode"] in (3041, 3045) and CARD not in json.dumps(out), out
    status, out = world.api("/api/tokenization/batch/detokenize", {"items": [{"bfid": bfid, "values": pairs}]})
    assert CARD not in json.dumps(out), out
    if status == 200:
        assert [i.get("errCode") in (3041, 3045) for i in out["items"]] == [True], out
    else:
        assert status == 403 and out["errCode"] in (3041, 3045), out


def test_an_etoken_and_a_gateway_capture_are_refused_by_batch_detokenize(world):
    etoken = world.shop.capture("e2e-b")
    status, read = world.api("/api/tokenization/read", {"bfid": etoken})
    assert status == 200, read
    _refused_by_the_partner_api(world, etoken, {v["name"]: v["value"] for v in read["values"]})
    # a gateway auto-tokenization (bfid version 5): its account's for good, by every actor and path
    sale = world.shop.pay(card_number=CARD, card_expiration="1230", card_verification=CVV)
    assert sale["transaction_approved"] is True, sale
    items = [i for i in _tables(world.runner) if i.get("transaction_id", {}).get("S") == sale["transaction_id"]
             and "bfid" in i]
    assert items, sale
    bfid = items[0]["bfid"]["S"]
    tokens = {k: items[0][k]["S"] for k in ("vault_token_card_number", "vault_token_card_expiration")}
    assert CARD not in json.dumps(tokens)
    assert world.sibling.pay(bfid=bfid)["error_code"] == 303
    assert world.sibling.pay(bfid=bfid, **tokens)["error_code"] == 311
    assert world.sibling.pay(bfid=bfid, reissue="1", **tokens)["error_code"] == 311
    assert world.stranger.pay(bfid=bfid, **tokens)["error_code"] == 302
    _refused_by_the_partner_api(world, bfid, tokens)
    # after the hour (the runner's clock moved on: its Tokens item has expired) the binding still holds
    clock = world.runner.base_url + "/_local/clock"
    assert post_json(clock, {"offsetSeconds": 3700})[0] == 200
    try:
        assert world.sibling.pay(bfid=bfid)["error_code"] == 303
        assert world.sibling.pay(bfid=bfid, **tokens)["error_code"] == 311
        assert world.sibling.pay(bfid=bfid, reissue="1", **tokens)["error_code"] == 311
        again = world.shop.pay(bfid=bfid, **tokens)
        assert again["transaction_approved"] is True and again["last4"] == CARD[-4:], again
    finally:
        assert post_json(clock, {"offsetSeconds": 0})[1] == {"offsetSeconds": 0.0}
    assert bfid.startswith("djUA")  # the binding is the bfid's own: format "v5" (key version 1)


def cvv_tokens_of(world: World) -> set[str]:
    """The CVV tokens the tables hold for partner P's captures not yet charged (taken before a charge)."""
    items = [i for i in _tables(world.runner) if "t#" + CVV_NAME in i and "gateway_read_by" not in i
             and i.get("partnerId", {}).get("S") == world.p["partnerId"]]
    return {i["t#" + CVV_NAME]["S"] for i in items}


def test_bfid_after_etoken_and_the_cvv_token_after_the_authorization(world):
    etoken = world.shop.capture("e2e-2")
    cvv_tokens = cvv_tokens_of(world)
    assert cvv_tokens
    assert world.shop.pay(etoken=etoken, custom_id="e2e-2")["cvv2_response"] == "M"
    assert world.shop.pay(bfid=etoken)["error_code"] == 309
    assert_cvv_tokens_refused(world, etoken, cvv_tokens)


def assert_cvv_tokens_refused(world: World, etoken: str, cvv_tokens: set[str]) -> None:
    """After the charge: the partner's read has no CVV token; each CVV token is refused by detokenize and by a
    payment of the stored tokens."""
    status, read = world.api("/api/tokenization/read", {"bfid": etoken})
    assert CVV_NAME not in json.dumps(read)
    for token in cvv_tokens:  # a CVV token taken from the table before the charge: every path refuses it
        status, out = world.api("/api/tokenization/detokenize", {"bfid": etoken, "values": [
            {"name": CVV_NAME, "value": token}]})
        assert status in (400, 403) and f'"{CVV}"' not in json.dumps(out)  # a whole value: messageIds hold digits
        answer = world.shop.pay(bfid=etoken, **_stored_tokens(world, etoken), **{CVV_NAME: token})
        assert answer["error_code"] == 310, answer


def _stored_tokens(world: World, etoken: str) -> dict:
    """The card tokens the gateway stored with the shop's transaction of this eToken (what RSAPI answers)."""
    items = [i for i in _tables(world.runner) if i.get("bfid", {}).get("S") == etoken and "last4" in i]
    assert items
    return {k: v["S"] for k, v in items[0].items() if k in ("vault_token_card_number", "vault_token_card_expiration")}


def test_gateway_tokenize_that_stores_refuses_a_cvv(world):
    status, out = world.api("/api/tokenization/tokenize", {"templateRef": "GATEWAY", "values": [
        {"name": "vault_token_card_number", "value": CARD}, {"name": CVV_NAME, "value": CVV}]})
    assert (status, out["errCode"]) == (409, 3046), out


def test_no_cvv_token_of_a_charged_capture_and_no_clear_cvv_or_pan_in_any_table(world):
    etoken = world.shop.capture("e2e-3")
    assert world.shop.pay(etoken=etoken, custom_id="e2e-3")["transaction_approved"] is True
    items = _tables(world.runner)
    charged = [i for i in items if "gateway_read_by" in i]
    assert charged and not any("t#" + CVV_NAME in i or "cvv_salt" in i for i in charged)
    text = json.dumps([{k: v for k, v in i.items() if k != "t#" + CVV_NAME} for i in items])  # a token may be "987"
    assert CARD not in text and f'"{CVV}"' not in text
