"""Response actions in-process on moto (docs/integrators/proxy.md, "Response actions"): what the target sends back is tokenized (or
detokenized) before it reaches the partner; a response the actions cannot read is withheld (8117), a failing
response action too (8118); the stored log never holds the clear value. Over real HTTP with the local runner:
tests/e2e/test_proxy_response_e2e.py."""

from __future__ import annotations

import base64
import json
import re

import pytest

from tests.helpers import admin, call
from tests.proxy_target import Target
from vaultcore.auth.hmac_scheme import build_hmac_header

PAN = "4000056655665556"
PAN2 = "5555555555554444"


@pytest.fixture
def partner(platform):
    status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Response Co", "apiSecurity": "hmac"})
    assert status == 201
    status, body = admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/templates",
                         {"templateRef": "DEMO", "name": "demo",
                          "fields": [{"name": "vault_token_card_number", "type": "card",
                                      "format": "FIRST_SIX_LAST_FOUR"},
                                     {"name": "vault_token_email", "type": "email", "format": "NONE"}]})
    assert status == 201, body
    return p


@pytest.fixture
def target():
    with Target() as t:
        yield t


def _sub(type_: str, path: str, source: str = "body", field: str = "vault_token_card_number", **extra) -> dict:
    return {"transformationSource": source, "transformationType": type_, "transformationPath": path,
            "fieldName": field, **extra}


def _action(method: str, subs: list[dict], template: str = "DEMO") -> dict:
    return {"type": "tokenization", "method": method, "templateRef": template,
            "authorization": {"type": "passthrough"}, "substitutions": subs}


def _doc(url: str, actions=None, response_actions=None, log_settings=None) -> dict:
    proxy = {"authorization": {"type": "passthrough", "headerName": "X-Key"}, "method": "post", "target": url}
    if log_settings:
        proxy["logSettings"] = log_settings
    doc = {"proxy": proxy, "actions": actions or []}
    if response_actions is not None:
        doc["responseActions"] = response_actions
    return doc


def _create(platform, partner, doc) -> str:
    status, body = admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/proxy-configurations", doc)
    assert status == 201, body
    return body["configReferenceID"]


def _call(platform, partner, ref, body: str = "{}", headers=None, content_type: str = "application/json"):
    path = f"/api/v1/partners/{partner['partnerId']}/configurations/{ref}"
    auth = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), path, body.encode())
    return call(platform, "ProxyFunction", "POST", path, body,
                {"Authorization": auth, "X-Key": "k", "Content-Type": content_type, **(headers or {})},
                path_params={"partnerID": partner["partnerId"], "configReferenceID": ref})


def _raw(platform, partner, ref, body: str, headers=None, content_type: str = "application/json") -> dict:
    from tests.helpers import api_event

    path = f"/api/v1/partners/{partner['partnerId']}/configurations/{ref}"
    auth = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), path, body.encode())
    return platform.invoke("ProxyFunction", api_event(
        "POST", path, body, {"Authorization": auth, "X-Key": "k", "Content-Type": content_type, **(headers or {})},
        path_params={"partnerID": partner["partnerId"], "configReferenceID": ref}))


def _last_log(platform, partner) -> dict:
    return admin(platform, "GET", f"/admin/v1/partners/{partner['partnerId']}/proxy-logs")[1]["logs"][0]


def test_a_json_echo_is_tokenized_and_the_token_detokenizes_with_the_returned_vault_id(platform, partner, target):
    card = [_sub("jsonpath", "$.card.number")]
    ref = _create(platform, partner, _doc(target.url + "/echo", response_actions=[_action("tokenize", card)]))
    status, headers, body = _call(platform, partner, ref, json.dumps({"card": {"number": PAN}, "amount": 7}))
    assert status == 200, body
    assert json.loads(target.seen[-1]["body"])["card"]["number"] == PAN  # the target got (and echoed) the clear PAN
    token, vault_id = body["card"]["number"], headers["vault-id"]
    assert token != PAN and token[:6] == PAN[:6] and token[-4:] == PAN[-4:] and body["amount"] == 7
    log = _last_log(platform, partner)
    assert PAN not in json.dumps(log)
    # logged as returned to the partner: the token, where the log's scrubbers may mask more of it (a token that
    # happens to pass the Luhn check is masked like a PAN; a run of digits equal to a clear value the exchange
    # handled is masked wherever it appears) — but never anything but the token's own characters or '*'
    logged = json.loads(log["response"]["body"])["card"]["number"]
    assert len(logged) == len(token) and all(c in (t, "*") for c, t in zip(logged, token, strict=True)), logged
    assert logged != PAN and logged.count("*") < len(token)
    assert log["responseActions"][0]["substitutions"][0]["matches"] == 1 and log["responseActions"][0]["bfid"] == "new"
    assert log["durationsMs"]["response"] >= 0 and log["vaultIdIssued"] is True

    # A second call detokenizes that token with the returned vault-id: the target receives the original number.
    detok = _create(platform, partner, _doc(target.url + "/echo", actions=[_action("detokenize", card)]))
    status, _, body = _call(platform, partner, detok, json.dumps({"card": {"number": token}}),
                            {"vault-id": vault_id})
    assert status == 200 and json.loads(target.seen[-1]["body"])["card"]["number"] == PAN


def test_an_echo_of_a_detokenized_value_gets_back_the_token_sent_under_the_same_vault_id(platform, partner, target):
    card = [_sub("jsonpath", "$.card.number")]
    tok = _create(platform, partner, _doc(target.url + "/echo", actions=[_action("tokenize", card)]))
    _, headers, _ = _call(platform, partner, tok, json.dumps({"card": {"number": PAN}}))
    vault_id, token = headers["vault-id"], json.loads(target.seen[-1]["body"])["card"]["number"]
    both = _create(platform, partner, _doc(target.url + "/echo", actions=[_action("detokenize", card)],
                                           response_actions=[_action("tokenize", card)]))
    status, headers, body = _call(platform, partner, both, json.dumps({"card": {"number": token}}),
                                  {"vault-id": vault_id})
    assert status == 200 and json.loads(target.seen[-1]["body"])["card"]["number"] == PAN
    # the same value in the same field under the same bfid: the very token the partner sent; the bfid already
    # vouches for it, so the vault-id comes back unchanged
    assert body["card"]["number"] == token and headers["vault-id"] == vault_id
    assert _last_log(platform, partner)["responseActions"][0]["bfid"] == "extended: the request's vault-id"
    # A new value under the same vault-id: an extended vault-id that vouches for both tokens.
    echo_other = _create(platform, partner, _doc(target.url + "/echo",
                                                 response_actions=[_action("tokenize", card)]))
    status, headers, body = _call(platform, partner, echo_other, json.dumps({"card": {"number": PAN2}}),
                                  {"vault-id": vault_id})
    extended, token2 = headers["vault-id"], body["card"]["number"]
    assert status == 200 and extended != vault_id and len(extended) > len(vault_id)
    detok = _create(platform, partner, _doc(target.url + "/echo", actions=[_action("detokenize", [
        _sub("jsonpath", "$.a"), _sub("jsonpath", "$.b")])]))
    status, _, _ = _call(platform, partner, detok, json.dumps({"a": token, "b": token2}), {"vault-id": extended})
    assert status == 200 and json.loads(target.seen[-1]["body"]) == {"a": PAN, "b": PAN2}
    # A vault-id that does not verify (or names another template) is not extended: a new bfid is issued.
    status, headers, body = _call(platform, partner, echo_other, json.dumps({"card": {"number": PAN2}}),
                                  {"vault-id": "x" * 64})
    assert status == 200 and headers["vault-id"] != "x" * 64 and body["card"]["number"] != PAN2
    assert _last_log(platform, partner)["responseActions"][0]["bfid"].startswith("new: the request's vault-id could "
                                                                                 "not be extended (code 3010)")


def test_request_and_response_tokenize_share_one_vault_id(platform, partner, target):
    ref = _create(platform, partner, _doc(target.url + "/echo",
                                          actions=[_action("tokenize", [_sub("jsonpath", "$.a")])],
                                          response_actions=[_action("tokenize", [_sub("jsonpath", "$.b")])]))
    status, headers, body = _call(platform, partner, ref, json.dumps({"a": PAN, "b": PAN2}))
    assert status == 200
    sent = json.loads(target.seen[-1]["body"])
    assert sent["a"] != PAN and sent["b"] == PAN2 and body["a"] == sent["a"] and body["b"] != PAN2
    detok = _create(platform, partner, _doc(target.url + "/echo", actions=[_action("detokenize", [
        _sub("jsonpath", "$.a"), _sub("jsonpath", "$.b")])]))
    status, _, _ = _call(platform, partner, detok, json.dumps(body), {"vault-id": headers["vault-id"]})
    assert status == 200 and json.loads(target.seen[-1]["body"]) == {"a": PAN, "b": PAN2}


def test_xml_form_and_header_responses(platform, partner, target):
    xml_ref = _create(platform, partner, _doc(target.url + "/echo", response_actions=[_action("tokenize", [
        _sub("xpath", "/r/card/text()"), _sub("xpath", "/r/card/@email", field="vault_token_email")])]))
    xml = f'<?xml version="1.0"?><r><card email="jo@example.com">{PAN}</card><n>1</n></r>'
    out = _raw(platform, partner, xml_ref, xml, content_type="application/xml")
    assert out["statusCode"] == 200 and out["headers"]["vault-id"]
    assert PAN not in out["body"] and "jo@example.com" not in out["body"] and "<n>1</n>" in out["body"]
    assert out["headers"]["Content-Type"] == "application/xml"

    form_ref = _create(platform, partner, _doc(target.url + "/echo", response_actions=[_action("tokenize", [
        _sub("jsonpath", "$.pan")])]))
    out = _raw(platform, partner, form_ref, f"pan={PAN}&x=1", content_type="application/x-www-form-urlencoded")
    assert out["statusCode"] == 200 and PAN not in out["body"] and out["body"].endswith("&x=1")

    header_ref = _create(platform, partner, _doc(target.url + "/echo-headers", response_actions=[_action(
        "tokenize", [_sub("key", "X-Echo-Card", source="header")])]))
    status, headers, body = _call(platform, partner, header_ref, "{}", {"X-Echo-Card": PAN})
    assert status == 200 and target.seen[-1]["headers"]["x-echo-card"] == PAN and body == {"ok": True}
    token = headers["X-Echo-Card"]  # a header a response substitution names is returned to the partner
    assert token != PAN and token[-4:] == PAN[-4:] and headers["vault-id"]
    assert PAN not in json.dumps(_last_log(platform, partner))
    # Without a response action naming it, that header is not returned at all (only the safe headers are).
    plain = _create(platform, partner, _doc(target.url + "/echo-headers"))
    _, headers, _ = _call(platform, partner, plain, "{}", {"X-Echo-Card": PAN})
    assert "X-Echo-Card" not in headers and "x-echo-card" not in headers


@pytest.mark.parametrize("path, content_type, code", [
    ("/echo-truncated", "application/json", 8117),  # JSON that does not parse (and holds the clear number)
    ("/echo-html", "application/json", 8117),  # an HTML page where a JSON response was configured
])
def test_a_response_the_actions_cannot_read_is_withheld(platform, partner, target, path, content_type, code):
    ref = _create(platform, partner, _doc(target.url + path, response_actions=[_action("tokenize", [
        _sub("jsonpath", "$.card")])]))
    out = _raw(platform, partner, ref, json.dumps({"card": PAN}), content_type=content_type)
    body = json.loads(out["body"])
    assert (out["statusCode"], body["success"], body["code"]) == (400, False, code)
    assert "The target received the request; its response was withheld." in body["message"]
    assert PAN not in out["body"] and "vault-id" not in out["headers"]
    assert len(target.seen) == 1 and PAN.encode() in target.seen[-1]["body"]  # the target did get the request
    log = _last_log(platform, partner)
    assert log["error"]["code"] == code and log["outcome"] == "error" and log["status"] == 400
    assert log["response"]["bodyOmitted"].startswith("not stored: the response actions could not process")
    assert "body" not in log["response"] and log["response"]["bodyBytes"] > 0
    assert PAN not in json.dumps(log)


def test_a_failing_response_action_is_8118(platform, partner, target):
    ref = _create(platform, partner, _doc(target.url + "/echo", response_actions=[_action("tokenize", [
        _sub("jsonpath", "$.card"), _sub("jsonpath", "$.must", required=True)])]))
    status, headers, body = _call(platform, partner, ref, json.dumps({"card": PAN}))
    assert (status, body["code"]) == (400, 8118) and "responseActions[0].substitutions[1]" in body["message"]
    assert "code 8115)" in body["message"] and "vault-id" not in headers
    log = _last_log(platform, partner)
    assert log["unmatched"] == ["r0.1"] and log["error"]["code"] == 8118
    assert json.loads(log["response"]["body"])["card"] == "400005******5556" and PAN not in json.dumps(log)
    # a value the template cannot tokenize (not a card number): the tokenization code in the message
    status, _, body = _call(platform, partner, ref, json.dumps({"card": "4000056655665557", "must": 1}))
    assert (status, body["code"]) == (400, 8118) and "(code 3003)" in body["message"]


def test_unmatched_response_substitutions_and_an_empty_body(platform, partner, target):
    ref = _create(platform, partner, _doc(target.url + "/echo", response_actions=[_action("tokenize", [
        _sub("jsonpath", "$.card"), _sub("key", "X-Absent", source="header")])]))
    status, headers, body = _call(platform, partner, ref, json.dumps({"other": 1}))
    assert status == 200 and body == {"other": 1} and headers["vault-unmatched"] == "r0.0, r0.1"
    assert "vault-id" not in headers  # nothing tokenized: no bfid
    status, headers, body = _call(platform, partner, ref, "")  # an empty answer has nothing to address
    assert status == 200 and not body


def test_a_response_detokenize_returns_clear_values_to_the_partner(platform, partner, target):
    card = [_sub("jsonpath", "$.card")]
    ref = _create(platform, partner, _doc(target.url + "/echo", actions=[_action("tokenize", card)],
                                          response_actions=[_action("detokenize", card)]))
    status, headers, body = _call(platform, partner, ref, json.dumps({"card": PAN}))
    assert status == 200 and json.loads(target.seen[-1]["body"])["card"] != PAN and body["card"] == PAN
    log = _last_log(platform, partner)
    assert json.loads(log["response"]["body"])["card"] == "400005******5556" and PAN not in json.dumps(log)


def test_the_dry_run_shows_what_the_partner_would_receive(platform, partner, target):
    ref = _create(platform, partner, _doc(target.url + "/echo", response_actions=[_action("tokenize", [
        _sub("jsonpath", "$.card"), _sub("key", "X-Card", source="header")])]))
    url = f"/admin/v1/partners/{partner['partnerId']}/proxy-configurations/{ref}/dry-run"
    sample = {"body": {"x": 1}, "response": {"status": 201, "headers": {"X-Card": PAN, "X-Other": "o"},
                                             "body": {"card": PAN, "leak": PAN2}}}
    status, out = admin(platform, "POST", url, sample)
    assert status == 200 and out["forwarded"] is False and len(target.seen) == 0
    preview = out["response"]
    assert preview["status"] == 201 and preview["headers"]["X-Card"] == "{{token:vault_token_card_number}}"
    assert preview["headers"]["vault-id"] == "{{vault-id}}" and "X-Other" not in preview["headers"]
    body = json.loads(preview["body"])
    assert body["card"] == "{{token:vault_token_card_number}}" and body["leak"] == "555555******4444"
    assert "clearDataWarning" in preview  # PAN2 would reach the partner in clear: shown masked, and flagged
    assert out["responseActions"][0]["substitutions"][0]["matches"] == 1
    assert out["responseActions"][0]["result"].startswith("would tokenize 2 value(s)")
    # no sample response: the response actions are not run, and the dry run says so
    status, out = admin(platform, "POST", url, {"body": {"x": 1}})
    assert status == 200 and out["responseActions"] == [] and "no sample target response" in out["response"]["note"]
    # a sample response the actions cannot read: 8117
    status, out = admin(platform, "POST", url, {"response": {"headers": {"content-type": "application/json"},
                                                             "body": "{broken"}})
    assert status == 200 and out["error"]["code"] == 8117


def test_a_token_store_outage_in_the_response_phase_is_8001_and_the_log_masks_the_response(platform, partner, target,
                                                                                            monkeypatch):
    from vaultcore.errors import DependencyError
    from vaultcore.store import tokens as token_store

    def down(*args, **kwargs):
        raise DependencyError()

    ref = _create(platform, partner, _doc(target.url + "/echo", response_actions=[_action("tokenize", [
        _sub("jsonpath", "$.card")])]))
    monkeypatch.setattr(token_store, "put_tokens", down)
    status, _, body = _call(platform, partner, ref, json.dumps({"card": PAN, "copy": f"x{PAN}x"}))
    assert (status, body["code"]) == (500, 8001) and PAN not in json.dumps(body)
    log = _last_log(platform, partner)
    assert log["error"]["code"] == 8001 and json.loads(log["response"]["body"])["card"] == "400005******5556"
    assert PAN not in json.dumps(log)


@pytest.mark.parametrize("body, content_type", [
    ('{"order": 7, "vault_token_card_verification": "834", "cvv": "4321"}', "application/json"),
    ("order=7&vault_token_card_verification=834&cvv=4321", "application/x-www-form-urlencoded"),
    ("<o><n>7</n><vault_token_card_verification>834</vault_token_card_verification><cvv>4321</cvv></o>",
     "application/xml"),
])
def test_a_cvv_or_its_token_sent_through_the_proxy_is_never_kept_in_its_log(platform, partner, target, body,
                                                                            content_type):
    """No action names them and no mask is configured: the built-in scrubber still masks a CVV-named member, in
    clear or tokenized, in the stored request and in the echoed response (PCI DSS 3.3.1)."""
    ref = _create(platform, partner, _doc(target.url + "/echo"))
    status, _, _ = _call(platform, partner, ref, body, content_type=content_type)
    assert status == 200
    assert "834" in str(target.seen[-1]["body"])  # forwarded as sent: no action names it
    log = _last_log(platform, partner)
    # the stored bodies hold no id or duration: a digit run is looked for there, bounded by non-digits
    bodies = log["request"]["body"] + "\n" + log["response"]["body"]
    assert not re.search(r"(?<!\d)(834|4321)(?!\d)", bodies), bodies
    assert bodies.count("[REDACTED]") == 4, bodies
