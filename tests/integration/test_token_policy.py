"""Issue 27 in-process on moto: a tokenization's use policy, enforced by the tokens service on every path.

Actors: one tokenization partner with two merchant accounts (the shop and a sibling), a second partner with its own
account. Paths: gateway ``etoken=``, the ``bfid=`` read step, detokenize-only and reissue payments, ``token_id`` of
a STORE; the tokenization API's ``read``, ``detokenize`` and ``tokenize``; the proxy's detokenize (the service call
its action makes). Each test uses fresh partners, accounts and captures (independent of order and of the others)
and no wall clock: "after the hour" is the Tokens item gone (its TTL deletion), done here directly.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import admin
from tests.integration.test_iframe import CARD, Iframe, _tokens_items
from tests.integration.test_token_api import post
from vaultcore.gateway.errors import E
from vaultcore.tokens import service
from vaultcore.tokens.errors import PolicyRefused, TokenPermissionDenied, TokenServiceError
from vaultcore.tokens.policy import PARTNER, PROXY, gateway_actor

CVV_NAME = "vault_token_card_verification"


class World:
    """Partner P (HMAC, detokenize permission) with the shop and a sibling account; partner Q with its account."""

    def __init__(self, platform) -> None:
        self.platform = platform
        self.partner = self._partner("Policy P")
        self.other_partner = self._partner("Policy Q")
        self.shop = Iframe(platform, self.partner["partnerId"], options={"tokenization": True})
        self.sibling = Iframe(platform, self.partner["partnerId"], options={"tokenization": True})
        self.stranger = Iframe(platform, self.other_partner["partnerId"])

    def _partner(self, name: str) -> dict:
        status, partner = admin(self.platform, "POST", "/admin/v1/partners", {"name": name, "apiSecurity": "hmac"})
        assert status == 201, partner
        status, out = admin(self.platform, "PUT", f"/admin/v1/partners/{partner['partnerId']}/permissions",
                            {"detokenize": True})
        assert status == 200, out
        return partner

    def capture(self, custom_id: str, **card) -> str:
        """A card captured by the shop's payment iFrame: its eToken."""
        self.shop.configure()
        fields = {"paymentMethod": "CARD", "cardNumber": CARD, "cardExpiration": "12/30", "cardCvv": "123", **card}
        status, result = self.shop.submit(self.shop.instance(customId=custom_id)["bearerToken"], **fields)
        assert status == 200, result
        return result["eToken"]

    def api(self, path: str, body: dict, partner: dict | None = None):
        status, _, out = post(self.platform, partner or self.partner, path, body)
        return status, out


@pytest.fixture
def world(platform) -> World:
    return World(platform)


def _scope_items(etoken: str) -> list[dict]:
    """The Tokens items that hold the eToken's tokens (its scope's item)."""
    from vaultcore.tokens.bfid import peek_bfid_unverified

    partner_id, _ = peek_bfid_unverified(etoken)
    return [i for i in _tokens_items() if i.get("partnerId", {}).get("S") == partner_id
            and not i["bfid"]["S"].startswith("revoked#")]


def _delete_tokens_item(etoken: str) -> None:
    """What the table's TTL does after the hour: the Tokens item is gone (the scope record stays)."""
    import boto3

    from vaultcore.settings import settings as vault_settings

    for item in _scope_items(etoken):
        boto3.client("dynamodb", region_name="us-east-1").delete_item(TableName=vault_settings().tokens_table,
                                                                      Key={"bfid": item["bfid"]})


def _read_tokens(world: World, etoken: str) -> dict[str, str]:
    status, out = world.api("/api/tokenization/read", {"bfid": etoken})
    assert status == 200, out
    return {v["name"]: v["value"] for v in out["values"]}


# ------------------------------------------------------------------------------------- eToken: owner and uses


def test_a_sibling_account_cannot_charge_an_etoken_by_any_parameter(world):
    etoken = world.capture("o-1")
    assert world.sibling.pay(bfid=etoken)["error_code"] == E.READ_FAILED  # the answer of an unknown bfid
    assert world.sibling.pay(etoken=etoken, custom_id="o-1")["error_code"] == E.ETOKEN_FAILED
    assert world.stranger.pay(bfid=etoken)["error_code"] in (E.BFID_INVALID, E.NO_TOKENIZATION_PARTNER)
    sale = world.shop.pay(etoken=etoken, custom_id="o-1")  # the refusals consumed nothing
    assert sale["transaction_approved"] is True and sale["cvv2_response"] == "M", sale


def test_an_etoken_is_used_once_whatever_parameter_carries_it(world):
    first = world.capture("o-2")
    assert world.shop.pay(etoken=first, custom_id="o-2")["transaction_approved"] is True
    assert world.shop.pay(bfid=first)["error_code"] == E.ETOKEN_USED  # bfid= after etoken=
    second = world.capture("o-3")
    sale = world.shop.pay(bfid=second)  # bfid= first: this is the eToken's one use
    assert sale["transaction_approved"] is True and sale["cvv2_response"] == "M", sale
    assert world.shop.pay(etoken=second, custom_id="o-3")["error_code"] == E.ETOKEN_USED
    assert world.shop.pay(bfid=second)["error_code"] == E.ETOKEN_USED


def test_the_bfid_read_step_checks_the_tender_of_an_etoken_and_consumes_nothing_when_refused(world):
    etoken = world.capture("o-4")
    assert world.shop.pay(bfid=etoken, tender_type="ACH")["error_code"] in (E.TENDER_TYPE, E.PAYMENT_DATA)
    assert world.shop.pay(etoken=etoken, custom_id="o-5")["error_code"] == E.IFRAME_FIELD
    assert world.shop.pay(bfid=etoken)["transaction_approved"] is True


def test_ten_concurrent_uses_by_both_parameters_approve_exactly_one(world):
    from concurrent.futures import ThreadPoolExecutor

    etoken = world.capture("o-6")
    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda i: world.shop.pay(**({"bfid": etoken} if i % 2 else
                                                             {"etoken": etoken, "custom_id": "o-6"})), range(10)))
    assert sum(bool(a.get("transaction_approved")) for a in answers) == 1, answers
    assert {a["error_code"] for a in answers if not a.get("transaction_approved")} == {E.ETOKEN_USED}


def test_the_tokens_of_a_capture_are_its_accounts_through_every_path_and_for_good(world):
    etoken = world.capture("o-7")
    tokens = _read_tokens(world, etoken)  # the partner's one read: the card tokens, never the CVV's
    assert set(tokens) == {"vault_token_card_number", "vault_token_card_expiration"}
    assert CARD not in json.dumps(tokens)
    sale = world.shop.pay(etoken=etoken, custom_id="o-7")
    assert sale["transaction_approved"] is True
    # detokenize-only and reissue payments: the shop's, never the sibling's
    assert world.sibling.pay(bfid=etoken, **tokens)["error_code"] == E.POLICY_REFUSED
    assert world.sibling.pay(bfid=etoken, reissue="1", **tokens)["error_code"] == E.POLICY_REFUSED
    again = world.shop.pay(bfid=etoken, reissue="1", **tokens)
    assert again["transaction_approved"] is True and again["cvv2_response"] in (None, "P", "U"), again
    # the partner's detokenize (API and proxy) refuses an iFrame capture
    pairs = [{"name": n, "value": t} for n, t in tokens.items()]
    status, out = world.api("/api/tokenization/detokenize", {"bfid": etoken, "values": pairs})
    assert status == 403 and out["errCode"] in (3041, 3045), out
    status, out = world.api("/api/tokenization/batch/detokenize", {"items": [{"bfid": etoken, "values": pairs}]})
    assert status in (200, 403) and CARD not in json.dumps(out), out
    # the original's batch form: the whole batch is refused, naming the entry (issue 30)
    status, out = world.api("/api/tokenization/batch/detokenize", {"batches": [{"bfid": etoken, "values": pairs}]})
    assert (status, out["itemIndex"]) == (403, 0) and out["errCode"] in (3041, 3045), out
    assert CARD not in json.dumps(out)
    for actor in (PARTNER, PROXY, gateway_actor(world.sibling.account_id)):
        with pytest.raises(PolicyRefused):
            service.detokenize_pairs(world.partner["partnerId"], etoken, list(tokens.items()), actor=actor)
    # after the hour (the Tokens item gone) the binding holds: it is on the scope's durable record
    _delete_tokens_item(etoken)
    assert world.sibling.pay(bfid=etoken, **tokens)["error_code"] == E.POLICY_REFUSED
    with pytest.raises(PolicyRefused):
        service.detokenize_values(world.partner["partnerId"], etoken, tokens, actor=PROXY)
    assert world.shop.pay(bfid=etoken, **tokens)["transaction_approved"] is True
    # another partner: its bfid does not even verify
    assert world.stranger.pay(bfid=etoken, **tokens)["error_code"] in (E.BFID_INVALID, E.NO_TOKENIZATION_PARTNER)


def test_a_stored_etoken_pays_by_token_id_for_its_account_only(world):
    etoken = world.capture("o-8")
    stored = world.shop.pay(transaction_type="STORE", etoken=etoken, custom_id="o-8", transaction_amount="0.00")
    assert stored["transaction_approved"] is True, stored
    sale = world.shop.pay(token_id=stored["transaction_id"])
    assert sale["transaction_approved"] is True and sale["cvv2_response"] in (None, "P", "U"), sale
    assert world.sibling.pay(token_id=stored["transaction_id"])["transaction_approved"] is False
    assert world.shop.pay(bfid=etoken)["error_code"] == E.ETOKEN_USED  # the STORE was its one read


def test_a_gateway_capture_is_read_only_by_its_account(world):
    sale = world.shop.pay(card_number="4242424242424242", card_expiration="1230", card_verification="123")
    assert sale["transaction_approved"] is True, sale
    bfid = _postback_free_bfid(world, sale["transaction_id"])
    assert world.sibling.pay(bfid=bfid)["error_code"] == E.READ_FAILED
    assert world.shop.pay(bfid=bfid)["transaction_approved"] is True


def test_a_gateway_capture_stays_its_accounts_after_the_hour_on_every_path(world):
    """The binding is sealed in the bfid (version 5), so it holds once the Tokens item is gone, with no record."""
    from vaultcore.tokens.bfid import OWNER_VERSION, parse_bfid
    from vaultcore.tokens.keys import current_keys

    sale = world.shop.pay(card_number="4242424242424242", card_expiration="1230", card_verification="123")
    assert sale["transaction_approved"] is True, sale
    bfid = _postback_free_bfid(world, sale["transaction_id"])
    tokens = _stored_tokens(world, sale["transaction_id"])
    assert "4242424242424242" not in json.dumps(tokens)
    _delete_tokens_item(bfid)  # after the hour
    # the sibling account of the same partner: detokenize-only and reissue payments
    assert world.sibling.pay(bfid=bfid, **tokens)["error_code"] == E.POLICY_REFUSED
    assert world.sibling.pay(bfid=bfid, reissue="1", **tokens)["error_code"] == E.POLICY_REFUSED
    # the partner's detokenize, single and batch, and the proxy's action
    pairs = [{"name": n, "value": t} for n, t in tokens.items()]
    status, out = world.api("/api/tokenization/detokenize", {"bfid": bfid, "values": pairs})
    assert status == 403 and out["errCode"] in (3041, 3045), out
    status, out = world.api("/api/tokenization/batch/detokenize", {"items": [{"bfid": bfid, "values": pairs}]})
    assert status in (200, 403) and "4242424242424242" not in json.dumps(out), out
    status, out = world.api("/api/tokenization/batch/detokenize", {"batches": [{"bfid": bfid, "values": pairs}]})
    assert (status, out["itemIndex"]) == (403, 0) and "4242424242424242" not in json.dumps(out), out
    for actor in (PARTNER, PROXY, gateway_actor(world.sibling.account_id)):
        with pytest.raises(PolicyRefused):
            service.detokenize_pairs(world.partner["partnerId"], bfid, list(tokens.items()), actor=actor)
        with pytest.raises(PolicyRefused):
            service.read_stored_tokens(world.partner["partnerId"], bfid, actor=actor)
    # the owner still pays with its tokens, and its payment's own capture is bound to it again
    again = world.shop.pay(bfid=bfid, **tokens)
    assert again["transaction_approved"] is True and again["last4"] == "4242", again
    assert service.detokenize_pairs(world.partner["partnerId"], bfid, list(tokens.items()),
                                    actor=gateway_actor(world.shop.account_id))[0] == "4242424242424242"
    # the binding is the bfid's own (version 5), not a record's
    assert parse_bfid(current_keys(world.partner["partnerId"]).mac_key, bfid).version == OWNER_VERSION


def _stored_tokens(world: World, transaction_id: str) -> dict[str, str]:
    """The card tokens the gateway stored with a transaction (what RSAPI answers the merchant)."""
    from vaultcore.gateway import store

    item = store.get_transaction(world.shop.account_id, transaction_id, consistent=True)
    assert item is not None
    return {n: str(item[n]) for n in ("vault_token_card_number", "vault_token_card_expiration")}


def _postback_free_bfid(world: World, transaction_id: str) -> str:
    """The bfid the gateway stored with a transaction (what the merchant reads from RSAPI or its postback)."""
    from vaultcore.gateway import store

    item = store.get_transaction(world.shop.account_id, transaction_id, consistent=True)
    assert item is not None and item.get("bfid"), item
    return str(item["bfid"])


# ------------------------------------------------------------------------------------------------------ CVV


def test_after_the_authorization_no_path_turns_the_cvv_token_back_into_the_cvv(world):
    etoken = world.capture("c-1")
    [item] = _scope_items(etoken)
    cvv_token = item["t#" + CVV_NAME]["S"]  # what an attacker holding the table before the charge would have
    assert "cvv_salt" in item and not any(v.get("S") == "123" for k, v in item.items() if k != "t#" + CVV_NAME)
    assert world.shop.pay(etoken=etoken, custom_id="c-1")["cvv2_response"] == "M"
    [after] = _scope_items(etoken)
    assert "t#" + CVV_NAME not in after and "cvv_salt" not in after  # the per-capture salt is gone
    cvv = {CVV_NAME: cvv_token}
    pid = world.partner["partnerId"]
    # every path refuses it: token payments (with the card tokens, detokenize-only, reissue), the service for
    # every actor, the tokenization API, the proxy's service call
    tokens = {k[2:]: v["S"] for k, v in after.items() if k.startswith("t#")}
    for variables in ({**tokens, **cvv}, {**tokens, **cvv, "reissue": "1"}):
        answer = world.shop.pay(bfid=etoken, **variables)
        assert answer["error_code"] == E.CVV_TOKEN, answer
    for actor in (PARTNER, PROXY, gateway_actor(world.shop.account_id)):
        with pytest.raises(TokenServiceError) as err:
            service.detokenize_pairs(pid, etoken, list(cvv.items()), actor=actor)
        assert err.value.code == 3046
    status, out = world.api("/api/tokenization/detokenize", {"bfid": etoken, "values": [
        {"name": CVV_NAME, "value": cvv_token}]})
    assert status in (400, 403) and '"123"' not in json.dumps(out)  # a whole value: messageIds hold digits
    status, out = world.api("/api/tokenization/read", {"bfid": etoken})
    assert CVV_NAME not in json.dumps(out)
    with pytest.raises((TokenServiceError, TokenPermissionDenied)):
        service.gateway_read(pid, etoken, account_id=world.shop.account_id, reader="late", consume=True)


def test_read_never_returns_a_cvv_token(world):
    etoken = world.capture("c-2")
    tokens = _read_tokens(world, etoken)
    assert CVV_NAME not in tokens
    assert world.shop.pay(etoken=etoken, custom_id="c-2")["cvv2_response"] == "M"  # the CVV still reached the charge


def test_gateway_tokenize_calls_that_store_refuse_a_cvv(world):
    body = {"templateRef": "GATEWAY", "values": [{"name": "vault_token_card_number", "value": CARD},
                                                  {"name": CVV_NAME, "value": "123"}]}
    status, out = world.api("/api/tokenization/tokenize", body)
    assert status == 409 and out["errCode"] == 3046, out  # the tokenization API's "Invalid data"
    status, out = world.api("/api/tokenization/batch/tokenize", {"items": [body]})  # stores nothing: refused too
    assert status == 200 and out["items"][0]["errCode"] == 3046, out
    assert not any(CVV_NAME in json.dumps(i) for i in _tokens_items())


def test_a_proxy_configuration_cannot_detokenize_a_cvv(world):
    from vaultcore.proxy import errors as proxy_errors
    from vaultcore.proxy.manage import validate_for_partner

    document = {"proxy": {"authorization": {"type": "passthrough", "headerName": "X-Key"}, "method": "post",
                          "target": "https://processor.partner-api.com/pay"},
                "actions": [{"type": "tokenization", "method": "detokenize", "templateRef": "GATEWAY", "model": "sync",
                             "authorization": {"type": "passthrough"},
                             "substitutions": [{"transformationSource": "body", "transformationType": "jsonpath",
                                                "transformationPath": "$.cvv", "fieldName": CVV_NAME}]}]}
    with pytest.raises(proxy_errors.ProxyConfigError) as err:
        validate_for_partner(world.partner["partnerId"], document)
    assert "3046" in err.value.message or "CVV" in err.value.message


def test_the_proxy_detokenize_action_refuses_an_iframe_capture_and_forwards_nothing(world):
    from tests.integration.test_proxy import _call, _create, _doc, _gateway_action
    from tests.proxy_target import Target

    etoken = world.capture("x-1")
    tokens = _read_tokens(world, etoken)
    subs = [{"transformationSource": "body", "transformationType": "jsonpath", "transformationPath": "$.card",
             "fieldName": "vault_token_card_number"}]
    with Target() as target:
        ref = _create(world.platform, world.partner, _doc(target.url + "/echo", [_gateway_action("detokenize", subs)]))
        status, _, body = _call(world.platform, world.partner, ref,
                                json.dumps({"card": tokens["vault_token_card_number"]}), {"vault-id": etoken})
        assert status == 400 and body["code"] == 8103 and "3045" in body["message"], body
        assert not target.seen and CARD not in json.dumps(body)
