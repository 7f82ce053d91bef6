"""Issue 12: no input makes any route answer 5xx or show an exception.

A property-based test sends generated bodies, headers and query strings to every route of template.yaml (read
by the local runner, invoked through the real handlers against moto) and asserts, for every answer:

* no 5xx;
* the API family's documented error shape when the answer is an error (secure/parser ``errCode``, proxy ``code``,
  gateway and wallet session ``error_code``, ``/paymentMethods``/``/payments`` ``errorCode``, management and
  collector ``errCode``);
* no exception text or stack trace in the body.

The inputs that once failed (tests/fuzz_corpus.json) are replayed first and must each be refused: a 4xx, or on
QSAPI and RSAPI (whose failures are all HTTP 200, docs/integrators/gateway.md) HTTP 200 with ``error_code`` 100.

``HYPOTHESIS_PROFILE=fuzz-large`` (``make fuzz``) runs many more examples than CI's default.
"""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import admin

CORPUS = Path(__file__).resolve().parents[1] / "fuzz_corpus.json"
settings.register_profile("fuzz-ci", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "25")), deadline=None,
                          suppress_health_check=list(HealthCheck), derandomize=True, database=None)
settings.register_profile("fuzz-large", max_examples=int(os.environ.get("FUZZ_EXAMPLES", "600")), deadline=None,
                          suppress_health_check=list(HealthCheck), database=None)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "fuzz-ci")

FAMILY = {  # logical function id -> API family (functions/<name>/app.py)
    "AuthDebugFunction": "secure", "DeviceValidateFunction": "secure", "ParserFunction": "secure",
    "PartnerValidateFunction": "secure", "TokenizeFunction": "tokenization", "ProxyFunction": "proxy",
    "GatewayFunction": "gateway", "ReportingFunction": "gateway", "CheckoutFunction": "checkout",
    "WalletDomainFunction": "wallet", "WalletSessionFunction": "wallet", "ManagementFunction": "admin",
    "CollectorFunction": "collector",
}
# What an exception leaking into a body looks like: a traceback, a frame, Python's own error names and messages.
LEAKS = re.compile(r"Traceback|File \"[^\"]*\", line \d+|\b(?:Key|Type|Value|Attribute|Index|Recursion|Name|Lookup|"
                   r"Runtime|Assertion|OS|Unicode(?:En|De)code|ZeroDivision|JSONDecode|ClientError|Botocore)Error\b|"
                   r"object has no attribute|NoneType|not subscriptable|unhashable type|Exception\(")
# authdebug echoes what it was sent (body, header, key): those members are the caller's text, not ours.
ECHOES = ("partnerId", "key", "authorizationHeader", "signatureSteps", "result")
# Management paths to aim at (the API's catch-all route hides them from the template).
ADMIN_PATHS = [
    ("POST", "/admin/v1/partners"), ("POST", "/admin/v1/bdks"), ("POST", "/admin/v1/accounts"),
    ("POST", "/admin/v1/partners/{pid}/devices"), ("POST", "/admin/v1/partners/{pid}/templates"),
    ("POST", "/admin/v1/partners/{pid}/proxy-configurations"), ("PATCH", "/admin/v1/accounts/{acct}"),
    ("PUT", "/admin/v1/accounts/{acct}/wallet"), ("POST", "/admin/v1/partners/{pid}/rotate"),
    ("GET", "/admin/v1/partners/{pid}/proxy-logs"), ("POST", "/admin/v1/partners/{pid}/proxy-configurations/dry-run"),
]


@pytest.fixture
def world(platform):
    """A partner of each security kind, a device, an account, and every route with concrete paths."""
    _, hmac_partner = admin(platform, "POST", "/admin/v1/partners", {"name": "fuzz", "apiSecurity": "hmac"})
    _, key_partner = admin(platform, "POST", "/admin/v1/partners", {"name": "fuzzkey", "apiSecurity": "key"})
    _, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}})
    values = {"pid": key_partner["partnerId"], "acct": account["account_id"], "partnerID": hmac_partner["partnerId"],
              "configReferenceID": "cfg1", "client_id": "fuzzclient", "proxy": "partners"}
    targets = []
    for route in platform.routes:
        if route.function not in FAMILY:
            continue
        if route.function == "ManagementFunction":
            targets += [(method, path.format(**values), route) for method, path in ADMIN_PATHS]
            continue
        path = re.sub(r"\{(\w+)\+?\}", lambda m: values.get(m.group(1), "x"), route.path)
        targets.append((route.method if route.method != "ANY" else "POST", path, route))
    return {"platform": platform, "targets": targets, "key_partner": key_partner, "account": account}


def invoke(world: dict, method: str, path: str, headers: list[tuple[str, str]], body: bytes,
           query: str = "") -> tuple[int, dict, str]:
    platform = world["platform"]
    matched = platform.match(method, path)
    assert matched and matched[0] is not None, (method, path)
    route, params = matched
    event = platform.api_event(method, path + (f"?{query}" if query else ""), headers, body, route, params,
                               "127.0.0.1")
    out = platform.invoke(route.function, event)
    text = out.get("body") or ""
    if out.get("isBase64Encoded"):
        text = base64.b64decode(text).decode("utf-8", "replace")
    return out["statusCode"], out.get("headers") or {}, text


def check_answer(function: str, status: int, text: str, where: Any) -> None:
    assert status < 500, (where, status, text[:300])
    if function in ("WalletDomainFunction",) or not text.strip().startswith(("{", "[")):
        assert not LEAKS.search(text), (where, text[:300])
        return
    payload = json.loads(text)
    ours = {k: v for k, v in payload.items() if k not in ECHOES} if function == "AuthDebugFunction" else payload
    assert not LEAKS.search(json.dumps(ours)), (where, text[:300])
    family = FAMILY[function]
    if not isinstance(payload, dict):
        return
    if family in ("secure", "tokenization") and payload.get("success") is False:
        assert isinstance(payload.get("errCode"), int) and isinstance(payload.get("errMessage"), str), where
        if family == "tokenization":  # the original's ErrorResponse: every error has its messageId
            assert isinstance(payload.get("messageId"), str), where
    elif family == "proxy" and status >= 400:
        assert set(payload) == {"success", "code", "message"} and payload["success"] is False, where
    elif family == "gateway" and payload.get("error") is True:
        assert isinstance(payload.get("error_code"), int) and payload["error_code"] > 0, where
    elif family == "wallet" and status >= 400:
        assert payload.get("error") is True and isinstance(payload.get("error_code"), int), where
    elif family == "checkout" and status >= 400:
        assert set(payload) == {"status", "errorCode", "message", "errorType"} and payload["status"] == status, where
        assert isinstance(payload["errorCode"], str), where
    elif family in ("admin", "collector") and status >= 400:
        assert payload.get("success") is False and isinstance(payload.get("errCode"), int), where


# -------------------------------------------------------------------------------------------------- corpus
def _corpus() -> list[dict]:
    return json.loads(CORPUS.read_text())["inputs"]


@pytest.mark.parametrize("case", _corpus(), ids=lambda c: c["id"])
def test_inputs_that_once_failed_now_get_a_4xx(world, case):
    values = {"pid": world["key_partner"]["partnerId"], "acct": world["account"]["account_id"]}
    body = case.get("body_text", "")
    if "body_repeat" in case:
        body = case["body_repeat"][0] * case["body_repeat"][2] + case["body_repeat"][1] * case["body_repeat"][2]
    if "body_json" in case:
        body = json.dumps(case["body_json"]).replace("@KEYPARTNER@", values["pid"])
    body = body.replace("@KEYPARTNER@", values["pid"]).replace("@ACCOUNT@", values["acct"])
    path = case["path"].format(**values)
    headers = [(k, v.replace("@KEYPARTNER@", values["pid"])) for k, v in case.get("headers", {}).items()]
    status, _, text = invoke(world, case["method"], path, [("content-type", "application/json")] + headers,
                             body.encode("utf-8", "surrogatepass"))
    route = world["platform"].match(case["method"], path)[0]
    check_answer(route.function, status, text, case["id"])
    if case.get("expect", "").startswith("200"):
        assert status == 200 and "privateKey header is not" in text, (case["id"], status, text[:300])
    elif FAMILY[route.function] == "gateway":  # QSAPI, RSAPI: a refusal is HTTP 200 with error_code 100
        assert (status, json.loads(text)["error_code"]) == (200, 100), (case["id"], status, text[:300])
    else:
        assert 400 <= status < 500, (case["id"], status, text[:300])


# ------------------------------------------------------------------------------------------- generation
_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False), _TEXT)
_JSON = st.recursive(_SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=5),
                                                      st.dictionaries(_TEXT, kids, max_size=5)), max_leaves=20)
# Names routes actually read, so generated objects reach validation beyond "unknown member".
_FIELDS = ["partnerId", "partnerKey", "reference", "serial", "firmware", "deviceType", "deviceSerial",
           "devicePayload", "ksn", "templateRef", "values", "name", "apiSecurity", "bdk", "scheme", "components",
           "account_id", "api_accesskey", "transaction_type", "tender_type", "card_number", "card_expiration",
           "transaction_amount", "bfid", "vault_token_card_number", "bank_account_number", "apay_payload",
           "merchant_identifier", "payment_processing_private_key", "domains", "options", "postback_url", "proxy",
           "actions", "fields", "amount", "paymentMethod", "countryCode", "channel", "display_name", "referrer",
           "merchant_id", "signals", "device_trans_id", "status", "kind"]
_OBJECTS = st.dictionaries(st.sampled_from(_FIELDS), _JSON, max_size=8)


def _with_lone_surrogate(value: Any) -> str:
    return json.dumps(value).replace('"', '"\\ud800', 1) if '"' in json.dumps(value) else '"\\udc00"'


_BODIES = st.one_of(
    _OBJECTS.map(json.dumps),
    _JSON.map(json.dumps),
    _OBJECTS.map(_with_lone_surrogate),
    st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.dictionaries(st.sampled_from(_FIELDS), _TEXT, max_size=6).map(
        lambda d: "&".join(f"{k}={v}" for k, v in d.items())),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
)
_HEADER_NAMES = st.sampled_from(["authorization", "content-type", "key", "privatekey", "publickey", "resource",
                                 "vault-id", "dev-device-serial", "dev-device-type", "dev-payload",
                                 "idempotency-key", "accept", "x-custom"])
_HEADER_VALUES = st.one_of(
    _TEXT,
    st.sampled_from(["Hmac username=\"p\", nonce=\"n\", timestamp=\"1\", response=\"00\"", "Basic !!!", "Basic Og==",
                     "application/json", "application/x-www-form-urlencoded", "application/xml", "text/plain",
                     "-----BEGIN PUBLIC KEY-----\\nMFkwEw==\\n-----END PUBLIC KEY-----", "\ud800", "x" * 9000]),
)
_HEADERS = st.lists(st.tuples(_HEADER_NAMES, _HEADER_VALUES), max_size=6)
_QUERY = st.lists(st.tuples(st.sampled_from(["item", "account_id", "limit", "nextToken", "configReferenceID", "q"]),
                            st.text(st.characters(codec="utf-8", exclude_characters="&=#%+"), max_size=20)),
                  max_size=4).map(lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))


@settings(settings.get_profile(PROFILE))
@given(data=st.data())
def test_no_route_answers_5xx_or_leaks_an_exception(world, data):
    credentials = {"partnerId": world["key_partner"]["partnerId"], "partnerKey": world["key_partner"]["partnerKey"],
                   "account_id": world["account"]["account_id"], "api_accesskey": world["account"]["api_accesskey"]}
    for method, path, route in world["targets"]:
        body = data.draw(_BODIES, label=f"body {path}")
        if data.draw(st.booleans(), label="authenticated"):
            # Half the objects carry real credentials, so routes are explored past authentication too.
            try:
                parsed = json.loads(body)
            except (ValueError, RecursionError):
                parsed = None
            if isinstance(parsed, dict):
                body = json.dumps({**parsed, **credentials})
        headers = data.draw(_HEADERS, label=f"headers {path}")
        query = data.draw(_QUERY, label=f"query {path}")
        status, _, text = invoke(world, method, path, headers, body.encode("utf-8", "surrogatepass"), query)
        check_answer(route.function, status, text, (method, path))
