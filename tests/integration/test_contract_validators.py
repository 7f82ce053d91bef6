"""The validators accept exactly what the OpenAPI documents allow (docs/integrators/openapi.md).

Request bodies are generated from the documents' own schemas (``openapi/management.json``: the create and update
bodies; ``openapi/secure.json``: the tokenize body) by schemathesis' generators (positive mode: what the operation's
request body schema allows) and sent through the real handlers (in-process moto):

* a body the schema allows is accepted: no 400 and none of the body-shape codes (what the validator refuses
  for a member's type, length, pattern or presence). The rules a schema cannot state, written in the members'
  descriptions (a BDK that must exist, an https target the egress policy allows, the partner's own credentials in
  a proxy configuration, a template field's value rules), are met by fixing those members up after generation;
* the same body with one member broken (``null`` where the schema has no null, a wrong type, one character too
  long) is refused with the documented HTTP 400 and a documented code, and no error body echoes the member.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.core import NOT_SET

from tests.helpers import admin, call
from tests.spec_client import authorization

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("CONTRACT_EXAMPLES", "30"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def _document(api: str) -> dict[str, Any]:
    return json.loads((ROOT / "openapi" / f"{api}.json").read_text(encoding="utf-8"))


def _inline(schema: Any, components: dict[str, Any]) -> Any:
    """The schema with every ``#/components/schemas/...`` reference replaced by its target (none is recursive)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            target = _inline(components[schema["$ref"].rsplit("/", 1)[1]], components)
            rest = {k: _inline(v, components) for k, v in schema.items() if k != "$ref"}
            return {**target, **rest}
        return {k: _inline(v, components) for k, v in schema.items()
                if k not in ("description", "x-enum-descriptions", "example", "examples")}
    if isinstance(schema, list):
        return [_inline(v, components) for v in schema]
    return schema


MANAGEMENT = _document("management")
SECURE = _document("secure")
_LOADED = {api: schemathesis.openapi.from_path(ROOT / "openapi" / f"{api}.json") for api in ("management", "secure")}


def bodies(api: str, method: str, path: str) -> st.SearchStrategy[Any]:
    """The request bodies the document allows for one operation (schemathesis' generators, positive mode)."""
    # An operation whose body is optional may generate none: sent as {} (which its schema allows too).
    return _LOADED[api][path][method].as_strategy().map(lambda case: {} if case.body is NOT_SET else case.body)


def schema_of(document: dict[str, Any], name: str) -> dict[str, Any]:
    return _inline(document["components"]["schemas"][name], document["components"]["schemas"])


# ------------------------------------------------------------------------------------------------- the world
TEMPLATE = "CONTRACTS"  # the world partner's template: one card number field


@pytest.fixture
def world(platform):
    status, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "contracts", "apiSecurity": "hmac"})
    assert status == 201
    status, _ = admin(platform, "POST", "/admin/v1/bdks", {"scheme": "tdes", "bdkId": "contracts-bdk",
                                                          "bdk": "0123456789ABCDEFFEDCBA9876543210"})
    assert status == 201
    status, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}})
    assert status == 201
    status, _ = admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/devices",
                      {"serial": "CONTRACT-1", "deviceType": "terminal", "bdkId": "contracts-bdk"})
    assert status == 201
    status, _ = admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/templates",
                      {"templateRef": TEMPLATE, "fields": [{"name": "vault_token_card_number", "type": "card",
                                                            "format": "FIRST_SIX_LAST_FOUR"}]})
    assert status == 201
    return {"platform": platform, "partner": partner, "account": account}


# Each body: the operation, its schema, a fix-up for the rules a schema cannot state, and the codes that say "the
# body's shape was refused" (answered with HTTP 400).
def _fix_device(body: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    return {**body, "bdkId": "contracts-bdk"}


def _fix_account(body: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    out = dict(body)
    if out.get("partnerId") is not None:
        out["partnerId"] = world["partner"]["partnerId"]
    options = out.get("options") or {}
    if (options.get("tokenization") or options.get("token_payments")) and not out.get("partnerId"):
        out["partnerId"] = world["partner"]["partnerId"]
    if "partnerId" in out and out["partnerId"] is None:  # PATCH: no partner, so no option that needs one
        out["options"] = {**options, "tokenization": False, "token_payments": False}
    if out.get("postback_url") is not None:
        out["postback_url"] = "https://postbacks.example.com/hook"
    return out


_PATHS = {"jsonpath": "$.card.number", "xpath": "/card/number", "regex": "(?P<value>[0-9]{12,19})", "key": "X-Card"}


def _fix_place(place: dict[str, Any], sources: tuple[str, ...]) -> None:
    type_ = place.get("transformationType")
    if type_ == "key":
        place["transformationSource"] = "header"
    elif type_ in _PATHS:
        place["transformationSource"] = "body"
    if place.get("transformationSource") == "variable":  # set by no parser here: read a header instead
        place["transformationSource"], place["transformationType"] = "header", "key"
    place["transformationPath"] = _PATHS.get(place.get("transformationType", ""), "X-Card")


def _fix_auth(auth: dict[str, Any], world: dict[str, Any]) -> None:
    partner = world["partner"]
    if auth.get("type") == "basic":
        auth.update({"type": "hmac", "username": partner["partnerId"], "secret": partner["hmacKey"]})
        auth.pop("password", None)
    elif auth.get("type") == "hmac":
        auth.update({"username": partner["partnerId"], "secret": partner["hmacKey"]})
    elif auth.get("headerName") is not None:
        auth["headerName"] = "X-Target-Auth"


def _fix_proxy(body: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(body))
    out["proxy"]["target"] = "https://api.example.com/v1/payments"
    _fix_auth(out["proxy"]["authorization"], world)
    for masks in (out["proxy"].get("logSettings") or {}).values():
        for mask in masks:
            _fix_place(mask, ("body", "header", "query"))
            if mask["transformationSource"] == "variable":
                mask["transformationSource"] = "header"
    for group in ("actions", "responseActions"):
        seen: set[str] = set()
        kept = []
        for action in out.get(group) or []:
            if group == "responseActions" and action.get("type") != "tokenization":
                continue
            if action.get("type") == "tokenization":
                if action["method"] in seen:
                    continue
                seen.add(action["method"])
                action["templateRef"] = TEMPLATE
                for sub in action["substitutions"]:
                    sub["fieldName"] = "vault_token_card_number"
            _fix_auth(action["authorization"], world)
            for sub in action["substitutions"]:
                _fix_place(sub, ())
                if group == "responseActions" and sub["transformationSource"] == "query":
                    sub["transformationSource"], sub["transformationType"] = "header", "key"
                    sub["transformationPath"] = "X-Card"
                if action.get("type") == "parser":
                    sub["dataType"], sub["format"], sub["default"] = "string", "pan", None
            kinds = {s["transformationType"] == "regex" for s in action["substitutions"]
                     if s["transformationSource"] == "body"}
            if len(kinds) > 1:
                for s in action["substitutions"]:
                    if s["transformationSource"] == "body":
                        s["transformationType"], s["transformationPath"] = "jsonpath", _PATHS["jsonpath"]
            kept.append(action)
        if group in out:
            out[group] = kept
    return out


def _fix_template(body: dict[str, Any], world: dict[str, Any]) -> dict[str, Any]:
    fields, names = [], set()
    for field in body["fields"]:
        if field["name"] in names:
            continue
        names.add(field["name"])
        fields.append({"name": field["name"], "type": "field", "format": "NONE"})
    return {**body, "fields": fields}


BODIES = {
    # name: (method, path, schema, fix-up)
    "createPartner": ("POST", "/admin/v1/partners", "PartnerRequest", None),
    "rotatePartnerCredential": ("POST", "/admin/v1/partners/{partner_id}/rotate", "RotateRequest", None),
    "registerDevice": ("POST", "/admin/v1/partners/{partner_id}/devices", "DeviceRequest", _fix_device),
    "setDeviceStatus": ("PUT", "/admin/v1/partners/{partner_id}/devices/{serial}/status", "DeviceStatusRequest",
                        None),
    "createAccount": ("POST", "/admin/v1/accounts", "AccountRequest", _fix_account),
    "updateAccount": ("PATCH", "/admin/v1/accounts/{account_id}", "AccountPatch", _fix_account),
    "createTemplate": ("POST", "/admin/v1/partners/{partner_id}/templates", "TemplateRequest", _fix_template),
    "createProxyConfiguration": ("POST", "/admin/v1/partners/{partner_id}/proxy-configurations",
                                 "ProxyConfiguration", _fix_proxy),
    "redrivePostbacks": ("POST", "/admin/v1/postbacks/redrive", "RedriveRequest", None),
}


def _path(template: str, world: dict[str, Any]) -> str:
    return template.format(partner_id=world["partner"]["partnerId"], account_id=world["account"]["account_id"],
                           serial="CONTRACT-1")


def _send_admin(world: dict[str, Any], name: str, body: Any) -> tuple[int, Any]:
    method, path, _, _ = BODIES[name]
    return admin(world["platform"], method, _path(path, world), body)


# --------------------------------------------------------------------------------------- accepted as allowed
@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_body_the_document_allows_is_accepted(world, name):
    method, path, schema_name, fix = BODIES[name]

    @SETTINGS
    @given(body=bodies("management", method, path))
    def check(body):
        sent = fix(body, world) if fix else body
        status, payload = _send_admin(world, name, sent)
        assert status != 400 and status < 500, (sent, status, payload)

    check()


# ------------------------------------------------------------------------------------------- broken members
def _allows(schema: dict[str, Any], value: Any) -> bool:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema).is_valid(value)


def _breakages(schema: dict[str, Any]) -> list[tuple[str, str]]:
    """(member, how) pairs for the object schema's properties: null, a wrong type, too long."""
    out = []
    for member, sub in (schema.get("properties") or {}).items():
        if not _allows(sub, None):
            out.append((member, "null"))
        types = sub.get("type")
        if types is not None or "enum" in sub or "const" in sub:
            out.append((member, "wrong type"))
        if "maxLength" in sub:
            out.append((member, "too long"))
    return out


def _broken(sub: dict[str, Any], how: str) -> Any:
    if how == "null":
        return None
    if how == "too long":
        return "A" * (sub["maxLength"] + 1)
    for candidate in (12345, "12345", [1], {"a": 1}, True, 1.5):
        if not _allows(sub, candidate):
            return candidate
    raise AssertionError(f"no wrong type for {sub}")


MANAGEMENT_400_CODES = {400, 3050} | set(range(8200, 8300))


@pytest.mark.parametrize("name", sorted(BODIES))
def test_a_broken_member_is_refused_with_the_documented_400(world, name):
    method, path, schema_name, fix = BODIES[name]
    schema = schema_of(MANAGEMENT, schema_name)
    breakages = _breakages(schema)
    assert breakages

    @SETTINGS
    @given(body=bodies("management", method, path), breakage=st.sampled_from(breakages))
    def check(body, breakage):
        member, how = breakage
        sent = fix(body, world) if fix else dict(body)
        sent[member] = _broken(schema["properties"][member], how)
        status, payload = _send_admin(world, name, sent)
        assert status == 400 and payload["errCode"] in MANAGEMENT_400_CODES, (member, how, sent, status, payload)
        if how == "too long":
            assert sent[member] not in json.dumps(payload)

    check()


def test_the_issue_18_inputs_are_refused(world):
    """What schemathesis found (issue 18): a partnerId that is not a string, null in proxy configurations."""
    platform, partner = world["platform"], world["partner"]
    for partner_id in ({}, [], 123, True, None):
        body = {"name": "x", "apiSecurity": "hmac", "partnerId": partner_id}
        status, payload = admin(platform, "POST", "/admin/v1/partners", body)
        assert (status, payload["errCode"]) == (400, 400), (partner_id, payload)
    config = {"proxy": {"authorization": {"type": "passthrough"}, "method": "post",
                        "target": "https://api.example.com/v1"}, "actions": []}
    path = f"/admin/v1/partners/{partner['partnerId']}/proxy-configurations"
    status, _ = admin(platform, "POST", path, config)
    assert status == 201
    for broken in ({**config, "responseActions": None}, {**config, "proxy": {**config["proxy"], "logSettings": None}},
                   {**config, "proxy": {**config["proxy"], "logSettings": {"requestMasks": None}}},
                   {**config, "proxy": {**config["proxy"], "authorization": {"type": "passthrough",
                                                                             "headerName": None}}}):
        status, payload = admin(platform, "POST", path, broken)
        assert (status, payload["errCode"]) == (400, 8200), (broken, payload)
    status, listing = admin(platform, "GET", path)
    assert status == 200 and listing["configurations"]
    for view in listing["configurations"]:
        assert view["configuration"].get("responseActions", []) is not None
        assert view["configuration"]["proxy"].get("logSettings", {}) is not None


# ------------------------------------------------------------------------------------------ the tokenize body
TOKENIZE_SHAPE_CODES = {1001, 1002, 3000, 3020, 3021, 3022}


def _tokenize(world: dict[str, Any], body: dict[str, Any]) -> tuple[int, Any]:
    raw = json.dumps(body).encode()
    partner = world["partner"]
    headers = {"Authorization": authorization(partner["partnerId"], partner["hmacKey"],
                                              "/api/tokenization/tokenize", raw)}
    status, _, payload = call(world["platform"], "TokenizeFunction", "POST", "/api/tokenization/tokenize", raw,
                              headers)
    return status, payload


def _fix_tokenize(body: dict[str, Any]) -> dict[str, Any]:
    # The world partner's template and its field's value rule (secure.json TokenValue.value): a card number.
    return {**body, "templateRef": TEMPLATE, "values": [{"name": "vault_token_card_number",
                                                         "value": "4242424242424242"}]}


def test_a_tokenize_body_the_document_allows_is_accepted(world):
    @SETTINGS
    @given(body=bodies("secure", "POST", "/api/tokenization/tokenize"))
    def check(body):
        # as generated (templateRef and values of any allowed shape): no shape code
        status, payload = _tokenize(world, body)
        # values may be left out only when device headers fill the card fields (its description): 3020 without
        shape_codes = TOKENIZE_SHAPE_CODES - ({3020} if "values" not in body else set())
        assert status < 500 and (status == 200 or payload["errCode"] not in shape_codes), (body, payload)
        # with the rules the schema cannot state met (an existing template, valid values): tokenized
        sent = _fix_tokenize(body)
        status, payload = _tokenize(world, sent)
        assert status == 200, (sent, payload)
        if "reference" in sent:
            assert payload["reference"] == sent["reference"]

    check()


def test_a_broken_tokenize_member_is_refused_with_the_documented_status(world):
    schema = schema_of(SECURE, "TokenizeRequest")
    breakages = _breakages(schema)
    codes = {"reference": 1002, "templateRef": None, "values": 3020, "omit": 3022}

    @SETTINGS
    @given(body=bodies("secure", "POST", "/api/tokenization/tokenize"), breakage=st.sampled_from(breakages))
    def check(body, breakage):
        member, how = breakage
        sent = _fix_tokenize(body)
        sent[member] = _broken(schema["properties"][member], how)
        status, payload = _tokenize(world, sent)
        # 400 for a request the API cannot read; 409 ("Invalid data") for a templateRef no template has
        assert status == (409 if payload.get("errCode") == 3001 else 400), (member, how, sent, payload)
        expected = codes[member]
        if expected is None:  # templateRef: missing or not a string 3000, a string no template has 3001
            assert payload["errCode"] in (3000, 3001), (member, how, payload)
        else:
            assert payload["errCode"] == expected, (member, how, payload)
        assert "reference" not in payload or payload["reference"] == sent.get("reference")
        if how in ("too long", "wrong type"):
            assert json.dumps(sent[member]) not in json.dumps(payload.get("reference", ""))

    check()


def test_a_collector_report_with_numbers_outside_dynamodb_s_range_is_stored(world):
    """Issue 18: ``{"signals": {"screen": {"width": 1e-200}}}`` was a DynamoDB number underflow (HTTP 500). The
    collector stores its signals rounded to 6 decimal places, so any JSON number it accepts can be stored."""
    platform, account = world["platform"], world["account"]
    status, client = admin(platform, "POST", f"/admin/v1/accounts/{account['account_id']}/fraud-client")
    assert status == 201
    client_id = client["client_id"]
    for n, value in enumerate((1e-200, 5e-324, -1e-300, 1.0000000000000002, 1e308, 0.1 + 0.2)):
        body = {"dvci": f"dev{n}", "pid": f"page{n}", "signals": {"screen": {"width": value, "pixelRatio": value},
                                                                  "tzOffset": value,
                                                                  "hardwareConcurrency": value}}
        status, _, payload = call(platform, "CollectorFunction", "POST", f"/cdn/cs/{client_id}/collect",
                                  json.dumps(body), headers={"Content-Type": "text/plain"},
                                  resource="/cdn/cs/{client_id}/collect", path_params={"client_id": client_id})
        assert (status, payload) == (200, {"received": True, "reused": False}), (value, payload)
        status, report = admin(platform, "GET", f"/admin/v1/accounts/{account['account_id']}/fraud-client/"
                                                f"{client_id}/devices/dev{n}")
        assert status == 200
        stored = report["signals"]["screen"]["width"]
        assert stored == round(min(max(value, 0), 100000), 6), (value, stored)
