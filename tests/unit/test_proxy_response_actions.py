"""Response actions and variables without AWS: configuration validation (responseActions, variable rules, limits),
the response as a message (JSON, XML, form, headers, no query string), the response phase with a simulated runner
(placeholders, 8117/8118, returned headers) and the log view of a response."""

from __future__ import annotations

import copy
import json

import pytest

from vaultcore.net.ssrf import EgressPolicy
from vaultcore.proxy import errors as E
from vaultcore.proxy import response_actions
from vaultcore.proxy.config import (
    MAX_DOCUMENT_BYTES,
    MAX_TOTAL_SUBSTITUTIONS,
    parse_document,
    public_document,
    stored_document,
)
from vaultcore.proxy.service import ActionRunner, _partner_headers
from vaultcore.proxy.transform import locate

STRICT = EgressPolicy()
PAN = "4761739001010010"


def _sub(type_: str, path: str, source: str = "body", field: str = "vault_token_card_number", **extra) -> dict:
    return {"transformationSource": source, "transformationType": type_, "transformationPath": path,
            "fieldName": field, **extra}


def _parser_sub(path: str, source: str = "variable", fmt: str = "pan", data_type: str = "string") -> dict:
    return {"transformationSource": source, "transformationType": "key" if source == "variable" else "jsonpath",
            "transformationPath": path, "dataType": data_type, "format": fmt}


def _action(method: str, subs: list[dict], template: str = "DEMO") -> dict:
    return {"type": "tokenization", "method": method, "templateRef": template, "model": "sync",
            "authorization": {"type": "passthrough"}, "substitutions": subs}


def _doc(actions=None, response_actions=None) -> dict:
    doc = {"proxy": {"authorization": {"type": "passthrough"}, "method": "post",
                     "target": "https://api.payments.example.com/v1"},
           "actions": actions or []}
    if response_actions is not None:
        doc["responseActions"] = response_actions
    return doc


def _refused(doc, match: str, code: int = E.CONFIG_INVALID) -> None:
    with pytest.raises(E.ProxyConfigError, match=match) as info:
        parse_document(doc, policy=STRICT)
    assert info.value.code == code and info.value.status == 400


# ------------------------------------------------------------------------------------------------ configuration


def test_response_actions_are_optional_and_compiled_with_their_phase():
    assert parse_document(_doc(), policy=STRICT).response_actions == ()
    # null is no value the document allows (issue 18: it was stored, and broke every listing): refused; a
    # configuration stored before reads it as absent
    with pytest.raises(E.ProxyConfigError, match="responseActions must be an array"):
        parse_document({**_doc(), "responseActions": None}, policy=STRICT)
    assert parse_document({**_doc(), "responseActions": None}, policy=STRICT, stored=True).response_actions == ()
    config = parse_document(_doc(response_actions=[
        _action("tokenize", [_sub("jsonpath", "$.card"), _sub("key", "X-Card", "header", required=True)]),
        _action("detokenize", [_sub("xpath", "/r/t/text()")])]), policy=STRICT)
    tok, detok = config.response_actions
    assert (tok.phase, tok.where, tok.unmatched_label(1)) == ("response", "responseActions[0]", "r0.1")
    assert tok.substitutions[1].required and tok.substitutions[1].path.key == "x-card"
    assert detok.writes_clear_data and config.all_actions == config.actions + config.response_actions


@pytest.mark.parametrize("response_actions, message", [
    ({}, r"^responseActions must be an array\.$"),
    ([_action("tokenize", [_sub("jsonpath", "$.a")])] * 3, r"^responseActions must have at most 2 entries\.$"),
    ([_action("tokenize", [_sub("jsonpath", "$.a")])] * 2,
     r"^responseActions: at most one 'tokenize' action \(one vault-id per response\)\.$"),
    ([{"type": "parser", "authorization": {"type": "passthrough"}, "substitutions": []}],
     r"^responseActions\[0\]\.type 'parser' is not allowed in responseActions"),
    ([{**_action("tokenize", [_sub("jsonpath", "$.a")]), "extra": 1}],
     r"^responseActions\[0\] has an unknown member 'extra'"),
    ([_action("tokenize", [])], r"^responseActions\[0\]\.substitutions must not be empty\.$"),
    ([_action("tokenize", [_sub("key", "pan", "query")])],
     r"^responseActions\[0\]\.substitutions\[0\]\.transformationSource 'query' is not available in a response"),
    ([_action("tokenize", [_sub("jsonpath", "$.a", "header")])],
     r"^responseActions\[0\]\.substitutions\[0\]: transformationType 'jsonpath' requires transformationSource "
     r"'body'\.$"),
    ([_action("tokenize", [_sub("key", "a", "body")])],
     r"^responseActions\[0\]\.substitutions\[0\]: transformationType 'key' requires transformationSource 'header' "
     r"or 'variable'\.$"),
    ([_action("tokenize", [_sub("key", "Set-Cookie", "header")])],
     r"^responseActions\[0\]\.substitutions\[0\]\.transformationPath names a response header a response action "
     r"may not rewrite"),
    ([_action("tokenize", [_sub("key", "vault-var-x", "header")])], r"may not rewrite"),
    ([_action("tokenize", [_sub("jsonpath", "$.a", required="yes")])],
     r"^responseActions\[0\]\.substitutions\[0\]\.required must be true or false\.$"),
    ([_action("tokenize", [_sub("jsonpath", "$.a"), _sub("regex", r"\d+")])],
     r"^responseActions\[0\]: body substitutions of one action must be all regex or all jsonpath/xpath"),
    ([_action("tokenize", [_sub("jsonpath", "$.a[?(@.b)]")])], r"does not compile as jsonpath"),
])
def test_response_action_errors_name_the_member(response_actions, message):
    code = E.CONFIG_PATH_INVALID if "compile" in message else E.CONFIG_INVALID
    _refused(_doc(response_actions=response_actions), message, code)


def test_a_response_tokenization_shares_the_request_tokenize_actions_template():
    actions = [_action("tokenize", [_sub("jsonpath", "$.a")], template="DEMO")]
    parse_document(_doc(actions, [_action("tokenize", [_sub("jsonpath", "$.b")], template="DEMO")]), policy=STRICT)
    _refused(_doc(actions, [_action("detokenize", [_sub("jsonpath", "$.b")], template="OTHER")]),
             r"^responseActions\[0\]\.templateRef must be actions\[0\]'s templateRef")
    # without a request tokenize action any template goes (the bfid is the request's vault-id or a new one)
    parse_document(_doc([], [_action("tokenize", [_sub("jsonpath", "$.b")], template="OTHER")]), policy=STRICT)


def _parser(subs: list[dict]) -> dict:
    return {"type": "parser", "authorization": {"type": "passthrough"}, "substitutions": subs}


def test_variables_are_set_by_a_parser_and_read_by_a_later_tokenize_action():
    config = parse_document(_doc([_parser([_parser_sub("Pan"), _parser_sub("$.card", source="body")]),
                                  _action("tokenize", [_sub("key", "pan", "variable")])],
                                 [_action("tokenize", [_sub("key", "PAN", "variable")])]), policy=STRICT)
    assert [s.path.key for s in config.actions[0].substitutions] == ["pan", None]  # names are case-insensitive
    assert config.actions[1].substitutions[0].path.source == "variable"
    assert config.response_actions[0].substitutions[0].path.key == "pan"


@pytest.mark.parametrize("doc, message", [
    (_doc([_action("tokenize", [_sub("key", "pan", "variable")])]),
     r"^actions\[0\]\.substitutions\[0\] reads variable 'pan', which no earlier parser action sets\.$"),
    (_doc([_action("tokenize", [_sub("key", "pan", "variable")]), _parser([_parser_sub("pan")])]),
     r"^actions\[0\]\.substitutions\[0\] reads variable 'pan', which no earlier parser action sets\.$"),
    (_doc([_parser([_parser_sub("pan")])], [_action("tokenize", [_sub("key", "other", "variable")])]),
     r"^responseActions\[0\]\.substitutions\[0\] reads variable 'other', which no earlier parser action sets"),
    (_doc([_parser([_parser_sub("pan")])], [_action("detokenize", [_sub("key", "pan", "variable")])]),
     r"^responseActions\[0\]\.substitutions\[0\]: a detokenize action may not use a variable"),
    (_doc([_parser([_parser_sub("pan")]), _action("tokenize", [_sub("key", "pan", "variable", required=True)])]),
     r"^actions\[1\]\.substitutions\[0\]\.required is not allowed on a variable"),
    (_doc([_parser([{**_parser_sub("pan"), "required": False}])]),
     r"^actions\[0\]\.substitutions\[0\]\.required is not allowed on a variable"),
    (_doc([_parser([_parser_sub("pan", fmt="cvv", data_type="boolean")])]),
     r"^actions\[0\]\.substitutions\[0\]\.dataType 'boolean' is not allowed for a variable"),
    (_doc([_parser([_parser_sub("1pan")])]), r"^actions\[0\]\.substitutions\[0\]\.transformationPath must be a "
                                             r"variable name"),
    (_doc([_parser([_parser_sub("p" * 65)])]), r"must be a variable name"),
    (_doc([_parser([{**_parser_sub("pan"), "transformationType": "jsonpath"}])]),
     r"transformationType 'jsonpath' requires transformationSource 'body'"),
    (_doc([_parser([_parser_sub(f"v{i}") for i in range(11)])]), r"^configuration uses 11 variables; at most 10\.$"),
])
def test_variable_rules(doc, message):
    _refused(doc, message)


def test_masks_cannot_name_a_variable():
    doc = _doc()
    doc["proxy"]["logSettings"] = {"requestMasks": [{"transformationSource": "variable", "transformationType": "key",
                                                     "transformationPath": "pan", "pattern": "all"}]}
    _refused(doc, r"requestMasks\[0\]\.transformationSource 'variable' is not allowed in a mask")


def test_overall_limits_apply_when_saving_not_to_stored_documents():
    subs = [_sub("jsonpath", f"$.a{i}") for i in range(50)]
    detok = [_action("detokenize", copy.deepcopy(subs))]
    parsers = [_parser([_parser_sub(f"$.p{j}_{i}", source="body") for i in range(50)]) for j in range(4)]
    doc = _doc(parsers, [_action("tokenize", subs)])
    _refused(doc, rf"^configuration has 250 substitutions in all \(actions and responseActions\); at most "
                  rf"{MAX_TOTAL_SUBSTITUTIONS}\.$")
    config = parse_document(stored_document(doc, lambda b: {"c": "x"}), policy=STRICT, stored=True)
    assert len(config.response_actions[0].substitutions) == 50  # a stored document keeps working
    # 10 actions of 50 substitutions with 500-character paths: over the document size (checked first)
    big = _doc([_parser([_parser_sub(f"$.{'q' * 500}{i}", source="body") for i in range(50)]) for _ in range(10)],
               detok)
    assert len(json.dumps(big)) > MAX_DOCUMENT_BYTES
    _refused(big, rf"^configuration must be at most {MAX_DOCUMENT_BYTES // 1024} KiB as JSON\.$")


def test_response_action_secrets_are_wrapped_and_redacted():
    doc = _doc(response_actions=[_action("tokenize", [_sub("jsonpath", "$.a")])])
    doc["responseActions"][0]["authorization"] = {"type": "hmac", "username": "p1", "secret": "s3cret"}
    wrapped = []
    stored = stored_document(doc, lambda b: wrapped.append(b) or {"c": "1"})
    assert wrapped == [b"s3cret"] and stored["responseActions"][0]["authorization"]["secret"] == {"$wrapped": {"c": "1"}}
    assert public_document(stored)["responseActions"][0]["authorization"]["secret"] == "[REDACTED]"
    assert parse_document(stored, policy=STRICT, stored=True).response_actions[0].authorization.wrapped == {"c": "1"}


# ------------------------------------------------------------------------------------------------ the response


def _config(response_actions, actions=None):
    return parse_document(_doc(actions, response_actions), policy=STRICT)


def _simulate(config, status: int, headers: list[tuple[str, str]], body: bytes, request_headers=None):
    runner = ActionRunner(config, "p1", request_headers or {}, simulate=True)
    message = response_actions.response_message(headers, body)
    response_actions.run(runner, message, status)
    return runner, message


def test_the_response_as_a_message_json_xml_form_and_headers():
    m = response_actions.response_message([("Content-Type", "application/problem+json"), ("X-A", "1"),
                                           ("x-a", "2")], json.dumps({"card": {"number": PAN}}).encode())
    assert m.body.kind == "json" and m.query == [] and m.query_form is False
    assert m.body.max_bytes == response_actions.RESPONSE_MAX_BYTES
    from vaultcore.proxy.transform import compile_path

    slots = locate(m, compile_path("body", "jsonpath", "$.card.number"))
    assert [s.value for s in slots] == [PAN]
    assert [s.value for s in locate(m, compile_path("header", "key", "X-A"))] == ["1", "2"]
    empty = response_actions.response_message([("content-type", "application/x-www-form-urlencoded")], b"")
    assert empty.body.kind == "none" and locate(empty, compile_path("body", "jsonpath", "$.pan")) == []
    xml = response_actions.response_message([("content-type", "text/xml")], f"<r><c>{PAN}</c></r>".encode())
    assert [s.value for s in locate(xml.body.parse() and xml, compile_path("body", "xpath", "/r/c/text()"))] == [PAN]


def test_simulated_response_actions_rewrite_json_xml_form_and_named_headers():
    config = _config([_action("tokenize", [_sub("jsonpath", "$.card.number"), _sub("key", "X-Card", "header")])])
    runner, message = _simulate(config, 200, [("Content-Type", "application/json"), ("X-Card", PAN),
                                              ("X-Card", PAN), ("Set-Cookie", "s=1"), ("X-Request-Id", "r1")],
                                json.dumps({"card": {"number": PAN}, "n": 1}).encode())
    assert json.loads(message.body.to_bytes()) == {"card": {"number": "{{token:vault_token_card_number}}"}, "n": 1}
    headers = _partner_headers(config, runner, message.headers.items())
    assert headers == {"Content-Type": "application/json", "X-Card": "{{token:vault_token_card_number}}, "
                                                                      "{{token:vault_token_card_number}}",
                       "X-Request-Id": "r1", "vault-id": "{{vault-id}}"}
    assert runner.response_outcomes[0]["substitutions"][0]["matches"] == 1 and PAN in runner.sensitive

    config = _config([_action("tokenize", [_sub("xpath", "//number/text()")])])
    _, message = _simulate(config, 200, [("content-type", "application/xml")],
                           f'<?xml version="1.0"?><r><number>{PAN}</number><x>1</x></r>'.encode())
    assert PAN not in message.body.to_bytes().decode() and b"<x>1</x>" in message.body.to_bytes()

    config = _config([_action("tokenize", [_sub("regex", r"card=(\d{16})")])])
    _, message = _simulate(config, 200, [("content-type", "text/plain")], f"ok card={PAN} end".encode())
    assert message.body.to_bytes() == b"ok card={{token:vault_token_card_number}} end"


@pytest.mark.parametrize("headers, body, inner", [
    ([("content-type", "application/json")], b'{"card": "4761739001010010"', 8100),
    ([("content-type", "text/html")], b"<html>4761739001010010</html>", 8107),
    ([], b'{"card": "4761739001010010"}', 8107),  # no Content-Type: not JSON
    ([("content-type", "application/xml")], b'<!DOCTYPE r [<!ENTITY x "y">]><r>&x;</r>', 8108),
    ([("content-type", "application/json")], b"[" * 40 + b"]" * 40, 8101),
])
def test_a_response_the_actions_cannot_read_is_8117(headers, body, inner):
    config = _config([_action("tokenize", [_sub("jsonpath", "$.card")])])
    with pytest.raises(E.ProxyError) as info:
        _simulate(config, 200, headers, body)
    assert info.value.code == E.RESPONSE_UNPROCESSABLE and f"(code {inner})" in info.value.message
    assert PAN not in info.value.message and "HTTP 200" in info.value.message


def test_a_binary_response_with_a_regex_action_is_8117_and_header_only_actions_do_not_read_the_body():
    config = _config([_action("tokenize", [_sub("regex", r"\d{16}")])])
    with pytest.raises(E.ProxyError) as info:
        _simulate(config, 200, [("content-type", "application/octet-stream")], b"\xff\xfe\x00")
    assert info.value.code == E.RESPONSE_UNPROCESSABLE
    config = _config([_action("tokenize", [_sub("key", "X-Card", "header")])])
    runner, message = _simulate(config, 200, [("content-type", "application/json"), ("X-Card", PAN)], b"{broken")
    assert message.body.to_bytes() == b"{broken" and message.headers["x-card"].startswith("{{token:")


def test_a_required_response_substitution_or_an_object_at_a_path_is_8118():
    config = _config([_action("tokenize", [_sub("jsonpath", "$.card", required=True)])])
    with pytest.raises(E.ProxyError) as info:
        _simulate(config, 201, [("content-type", "application/json")], b'{"other": 1}')
    assert info.value.code == E.RESPONSE_ACTION_FAILED and "responseActions[0].substitutions[0]" in info.value.message
    assert "HTTP 201; code 8115" in info.value.message
    config = _config([_action("tokenize", [_sub("jsonpath", "$.card")])])
    with pytest.raises(E.ProxyError) as info:
        _simulate(config, 200, [("content-type", "application/json")], b'{"card": {"n": 1}}')
    assert info.value.code == E.RESPONSE_ACTION_FAILED and "code 8106" in info.value.message


def test_variables_flow_from_a_parser_to_a_response_tokenize_and_only_tokens_are_returned():
    config = _config([_action("tokenize", [_sub("key", "pan", "variable")])],
                     [_parser([_parser_sub("pan"), _parser_sub("name", fmt="surname")])])
    runner = ActionRunner(config, "p1", {}, simulate=True)
    from vaultcore.proxy.transform import Body, Headers, Message

    request = Message(headers=Headers({}), query=[], body=Body(b"", "none"))
    runner.run(request)
    assert runner.variables == {"pan": "{{parser:pan}}", "name": "{{parser:surname}}"}
    assert runner.returned_variables() == {}  # clear values are never returned
    message = response_actions.response_message([("content-type", "application/json")], b"{}")
    response_actions.run(runner, message, 200)
    assert runner.variables["pan"] == "{{token:vault_token_card_number}}"
    assert runner.returned_variables() == {"vault-var-pan": "{{token:vault_token_card_number}}"}
    headers = _partner_headers(config, runner, message.headers.items())
    assert headers["vault-var-pan"] == "{{token:vault_token_card_number}}" and "vault-var-name" not in headers
    assert runner.unmatched == []
