"""Response actions over real HTTP (issue 15): the local runner in front, a loopback target behind that echoes
the card number it received (in the body, in an XML body, in a header). With a response action on that place the
partner receives a token, never the clear number; a second call detokenizes that token with the returned
vault-id and the target receives the original number. A response that is not valid JSON while JSON response
actions are configured gets 8117 and no clear value reaches the partner; no stored log holds a clear number.
Variables: a parser's decrypted PAN comes back to the partner as a token in vault-var-<name>."""

from __future__ import annotations

import json

import pytest

from tests.e2e.http import admin
from tests.e2e.test_proxy_e2e import CARD, Proxy, _error, _parser_action, _place, _token_action
from tests.proxy_target import Target
from vaultcore.devices import simulator

PAN = "4000056655665556"
PAN2 = "5555555555554444"
CLEAR = [PAN, PAN2, CARD.pan]
CARD_FIELD = "vault_token_card_number"


@pytest.fixture(scope="module")
def px(runner):
    with Target() as target:
        yield Proxy(runner, target)


def _sub(type_: str, path: str, source: str = "body", field: str = CARD_FIELD) -> dict:
    return {**_place(type_, path, source), "fieldName": field}


def _doc(px, target_path: str, actions: list[dict], response_actions: list[dict]) -> dict:
    doc = px.doc(target_path, actions)
    doc["responseActions"] = response_actions
    return doc


def _is_token_of(token: str, clear: str) -> bool:
    return token != clear and len(token) == len(clear) and token[:6] == clear[:6] and token[-4:] == clear[-4:]


def test_a_json_echo_reaches_the_partner_as_a_token_that_detokenizes_with_the_returned_vault_id(px):
    partner = px.hmac_partner
    card = [_sub("jsonpath", "$.card.number")]
    ref = px.create(partner, _doc(px, "/echo", [], [_token_action("tokenize", card)]))
    status, headers, data = px.call(partner, ref, json.dumps({"card": {"number": PAN}, "amount": 10}))
    assert status == 200, data
    assert json.loads(px.target.seen[-1]["body"])["card"]["number"] == PAN  # the target echoed the clear number
    assert PAN.encode() not in data
    answer = json.loads(data)
    token, vault_id = answer["card"]["number"], headers["vault-id"]
    assert _is_token_of(token, PAN) and answer["amount"] == 10

    detok = px.create(partner, px.doc("/echo", [_token_action("detokenize", card)]))
    status, _, data = px.call(partner, detok, json.dumps({"card": {"number": token}}), headers={"vault-id": vault_id})
    assert status == 200 and json.loads(px.target.seen[-1]["body"])["card"]["number"] == PAN
    log = px.logs(partner, ref)[0]
    assert log["responseActions"][0]["result"] == "tokenized 1 value(s)" and PAN not in json.dumps(log)


def test_an_xml_echo_with_xpath(px):
    partner = px.key_partner
    subs = [_sub("xpath", "/payment/card/number/text()"), _sub("xpath", "/payment/card/@email", field="vault_token_email")]
    ref = px.create(partner, _doc(px, "/echo", [], [_token_action("tokenize", subs)]))
    xml = (f'<?xml version="1.0" encoding="UTF-8"?><payment><card email="jo@example.com"><number>{PAN2}</number>'
           f'</card><amount>10.00</amount></payment>')
    status, headers, data = px.call(partner, ref, xml, content_type="application/xml")
    assert status == 200, data
    text = data.decode()
    assert PAN2 not in text and "jo@example.com" not in text and "<amount>10.00</amount>" in text
    token = text.split("<number>")[1].split("</number>")[0]
    email_token = text.split('email="')[1].split('"')[0]
    assert _is_token_of(token, PAN2) and headers["content-type"] == "application/xml"
    assert email_token != "jo@example.com" and "@" in email_token

    detok = px.create(partner, px.doc("/echo", [_token_action("detokenize", subs)]))
    status, _, _ = px.call(partner, detok, text, content_type="application/xml", headers={"vault-id": headers["vault-id"]})
    received = px.target.seen[-1]["body"].decode()
    assert status == 200 and f"<number>{PAN2}</number>" in received and 'email="jo@example.com"' in received


def test_a_header_echo(px):
    partner = px.hmac_partner
    header = [_sub("key", "X-Echo-Card", "header")]
    ref = px.create(partner, _doc(px, "/echo-headers", [], [_token_action("tokenize", header)]))
    status, headers, data = px.call(partner, ref, "{}", headers={"X-Echo-Card": PAN})
    assert status == 200 and px.target.seen[-1]["headers"]["x-echo-card"] == PAN
    token = headers["x-echo-card"]
    assert _is_token_of(token, PAN) and PAN not in json.dumps(headers)

    detok = px.create(partner, px.doc("/echo-headers", [_token_action("detokenize", header)]))
    status, headers, _ = px.call(partner, detok, "{}", headers={"X-Echo-Card": token, "vault-id": headers["vault-id"]})
    assert status == 200 and px.target.seen[-1]["headers"]["x-echo-card"] == PAN
    assert "x-echo-card" not in headers  # no response action names it here: not returned (safe headers only)


def test_a_response_that_is_not_valid_json_is_withheld_with_8117(px):
    partner = px.hmac_partner
    ref = px.create(partner, _doc(px, "/echo-truncated", [], [_token_action("tokenize", [_sub("jsonpath",
                                                                                              "$.card.number")])]))
    status, headers, data = px.call(partner, ref, json.dumps({"card": {"number": PAN}}))
    message = _error(status, data, 8117)
    assert "HTTP 200" in message and "its response was withheld" in message
    assert PAN.encode() not in data and PAN not in json.dumps(headers) and "vault-id" not in headers
    assert PAN.encode() in px.target.seen[-1]["body"]  # the target did receive the request
    log = px.logs(partner, ref)[0]
    assert log["error"]["code"] == 8117 and "bodyOmitted" in log["response"] and "body" not in log["response"]
    assert PAN not in json.dumps(log)


def test_a_parsed_card_comes_back_as_a_token_in_a_variable(px):
    partner = px.hmac_partner
    parser = _parser_action([
        {**_place("jsonpath", "$.card_number"), "dataType": "string", "format": "pan"},
        {**_place("key", "pan", "variable"), "dataType": "string", "format": "pan"}])
    ref = px.create(partner, _doc(px, "/echo-headers", [parser],
                                  [_token_action("tokenize", [_sub("key", "pan", "variable")])]))
    fields = simulator.terminal_payload(CARD, "keyed")
    dev = {"dev-device-serial": "DEMO-TERM-0001", "dev-device-type": "terminal",
           "dev-payload": fields["devicePayload"], "dev-ksn": fields["ksn"]}
    status, headers, data = px.call(partner, ref, json.dumps({"card_number": None}), headers=dev)
    assert status == 200, data
    assert json.loads(px.target.seen[-1]["body"]) == {"card_number": CARD.pan}  # the target got the clear PAN
    token = headers["vault-var-pan"]
    assert _is_token_of(token, CARD.pan) and CARD.pan not in json.dumps(headers) and data == b'{"ok": true}'
    # The partner never held the card number, yet can use it again: detokenize the token with the vault-id.
    detok = px.create(partner, px.doc("/echo", [_token_action("detokenize", [_sub("jsonpath", "$.pan")])]))
    status, _, _ = px.call(partner, detok, json.dumps({"pan": token}), headers={"vault-id": headers["vault-id"]})
    assert status == 200 and json.loads(px.target.seen[-1]["body"]) == {"pan": CARD.pan}


def test_dry_run_with_a_sample_response(px):
    partner = px.hmac_partner
    ref = px.create(partner, _doc(px, "/echo", [], [_token_action("tokenize", [_sub("jsonpath", "$.card")])]))
    before = len(px.target.seen)
    status, out = admin(px.base, "POST", f"/admin/v1/partners/{partner['partnerId']}/proxy-configurations/{ref}"
                                         f"/dry-run", {"body": {"card": PAN},
                                                       "response": {"status": 200, "body": {"card": PAN}}})
    assert status == 200 and len(px.target.seen) == before
    assert json.loads(out["response"]["body"]) == {"card": f"{{{{token:{CARD_FIELD}}}}}"}
    assert out["response"]["headers"]["vault-id"] == "{{vault-id}}" and "clearDataWarning" not in out["response"]


def test_no_clear_card_data_in_runner_output_or_stored_proxy_logs(px, runner):
    stored = json.dumps(px.logs(px.hmac_partner, all_pages=True) + px.logs(px.key_partner, all_pages=True))
    output = runner.logs()
    for value in CLEAR:
        assert value not in stored, value
        assert value not in output, value
