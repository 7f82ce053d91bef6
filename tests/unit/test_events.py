"""events/: at least one sample event per function of template.yaml, each shaped as `sam local generate-event`
makes it and matching an event source of its function; local.invoke's placeholders and fresh HMAC headers."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest

from local.invoke import PLACEHOLDER, fill_event, function_code, functions_for_event
from local.template import load_template, parameters_with_defaults, render
from vaultcore.auth.hmac_scheme import parse_authorization, string_to_hash

ROOT = Path(__file__).resolve().parents[2]
EVENTS = sorted((ROOT / "events").glob("*.json"))
API_KEYS = ("resource", "path", "httpMethod", "headers", "multiValueHeaders", "queryStringParameters",
            "multiValueQueryStringParameters", "pathParameters", "stageVariables", "requestContext", "body",
            "isBase64Encoded")
CONTEXT_KEYS = ("accountId", "apiId", "stage", "requestId", "identity", "path", "resourcePath", "httpMethod")
# Public test card numbers only (the sandbox triggers and the reader vendors' documented test cards).
TEST_CARDS = {"4242424242424242", "4124939999999990", "4761739001010010", "4111111111111111"}
FAKE_DEMO = {
    "baseUrl": "http://127.0.0.1:3000", "environment": "cert",
    "partner": {"partnerId": "demo", "hmacKey": base64.b64encode(b"ab" * 32).decode(), "partnerKey": "pk-demo"},
    "keyPartner": {"partnerId": "demokey", "partnerKey": "pk-demokey", "hmacKey": "a2V5"},
    "account": {"account_id": "123456789012", "api_accesskey": "0" * 32},
    "checkout": {"account_id": "210987654321", "api_accesskey": "1" * 32, "fraud_client_id": "c" * 20},
    "proxyTokenizeConfig": {"configReferenceID": "11111111-2222-3333-4444-555555555555"},
    "proxyConfig": {"configReferenceID": "66666666-7777-8888-9999-000000000000"},
}


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _functions() -> list[str]:
    template = load_template()
    resources = render(template, parameters_with_defaults(template, {"Environment": "cert"}))
    return sorted(n for n, r in resources.items() if r["Type"] == "AWS::Serverless::Function")


def test_every_function_of_the_template_has_an_event():
    covered: dict[str, list[str]] = {}
    for path in EVENTS:
        for name in functions_for_event(_load(path)):
            covered.setdefault(name, []).append(path.name)
    missing = [f for f in _functions() if f not in covered]
    assert not missing, f"functions without a sample event in events/: {missing}"


def test_every_api_route_of_the_template_has_an_event():
    template = load_template()
    resources = render(template, parameters_with_defaults(template, {"Environment": "cert"}))
    routes = {(str(e["Properties"]["Method"]).upper(), e["Properties"]["Path"])
              for r in resources.values() if r["Type"] == "AWS::Serverless::Function"
              for e in (r["Properties"].get("Events") or {}).values() if e["Type"] == "Api"}
    sent = {(_load(p)["httpMethod"].upper(), _load(p)["resource"]) for p in EVENTS if "httpMethod" in _load(p)}
    missing = {r for r in routes if r not in sent and not (r[0] == "ANY" and any(s[1] == r[1] for s in sent))}
    assert not missing, f"routes without a sample event: {sorted(missing)}"


@pytest.mark.parametrize("path", EVENTS, ids=lambda p: p.name)
def test_each_event_belongs_to_exactly_one_function_whose_code_exists(path):
    matches = functions_for_event(_load(path))
    assert len(matches) == 1, f"{path.name} matches {matches}"
    directory, module, attribute, _ = function_code(matches[0])
    assert (directory / f"{module}.py").is_file() and attribute == "lambda_handler"


def _route_regex(resource: str) -> re.Pattern[str]:
    pattern = re.sub(r"\\\{(\w+)\\\+\\\}", r"(?P<\1>.+)", re.escape(resource))
    return re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", pattern) + "$")


@pytest.mark.parametrize("path", [p for p in EVENTS if "httpMethod" in _load(p)], ids=lambda p: p.name)
def test_api_events_are_rest_proxy_events_consistent_with_their_route(path):
    event = _load(path)
    assert all(k in event for k in API_KEYS), [k for k in API_KEYS if k not in event]
    ctx = event["requestContext"]
    assert all(k in ctx for k in CONTEXT_KEYS), [k for k in CONTEXT_KEYS if k not in ctx]
    assert ctx["resourcePath"] == event["resource"] and ctx["httpMethod"] == event["httpMethod"]
    assert ctx["stage"] == "cert" and ctx["path"] == f"/cert{event['path']}"
    m = _route_regex(event["resource"]).match(event["path"])
    assert m, f"{event['path']} is not a path of {event['resource']}"
    assert (event["pathParameters"] or {}) == m.groupdict()
    # multiValue* carry the same values, as API Gateway sends them
    assert {k: [v] for k, v in event["headers"].items()} == event["multiValueHeaders"]
    query = event["queryStringParameters"] or {}
    assert {k: [v] for k, v in query.items()} == (event["multiValueQueryStringParameters"] or {})
    assert event["isBase64Encoded"] is False and (event["body"] is None or isinstance(event["body"], str))
    if event["body"] and "json" in event["headers"].get("Content-Type", ""):
        json.loads(event["body"])  # valid JSON once placeholders are filled (they sit inside strings)
    if event["httpMethod"] == "GET":
        assert event["body"] is None


def test_the_sqs_and_stream_events_have_the_event_source_shapes():
    batch = _load(ROOT / "events" / "postback_batch.json")
    for record in batch["Records"]:
        assert record["eventSource"] == "aws:sqs" and record["eventSourceARN"].endswith(":PostbackFifoQueue.fifo")
        assert {"MessageGroupId", "MessageDeduplicationId", "SequenceNumber"} <= set(record["attributes"])  # FIFO
        assert {"messageId", "receiptHandle", "body", "attributes", "md5OfBody", "awsRegion"} <= set(record)
        message = json.loads(record["body"])
        assert {"delivery_id", "account_id", "transaction_id", "response"} <= set(message)
    stream = _load(ROOT / "events" / "postback_outbox_stream.json")
    for record in stream["Records"]:  # what the relay's event source mapping passes (its filter)
        from vaultcore.postback.relay import wanted

        assert record["eventSource"] == "aws:dynamodb" and "/stream/" in record["eventSourceARN"] and wanted(record)
        message = json.loads(record["dynamodb"]["NewImage"]["message"]["S"])
        assert {"delivery_id", "account_id", "transaction_id", "response"} <= set(message)


@pytest.mark.parametrize("path", EVENTS, ids=lambda p: p.name)
def test_events_hold_no_credentials_or_real_card_numbers(path):
    text = path.read_text()
    assert not re.search(r"(AKIA|ASIA)[A-Z0-9]{16}", text)
    assert "PRIVATE KEY" not in text and "Hmac username" not in text and "Basic " not in text
    for number in re.findall(r"(?<![0-9A-Fa-f])[0-9]{13,19}(?![0-9A-Fa-f])", text):
        digits = [int(d) for d in number[::-1]]
        luhn = sum(digits[0::2]) + sum(sum(divmod(2 * d, 10)) for d in digits[1::2])
        assert luhn % 10 != 0 or number in TEST_CARDS, f"{path.name}: {number} is not a public test card"
    for m in PLACEHOLDER.finditer(text):
        assert re.fullmatch(r"demo\.[\w.]+|uuid|now|hmac\.\w+|basic\.\w+", m.group(1)), m.group(0)


@pytest.mark.parametrize("path", EVENTS, ids=lambda p: p.name)
def test_fill_event_leaves_no_placeholder(path):
    filled = fill_event(_load(path), FAKE_DEMO)
    assert not PLACEHOLDER.search(json.dumps(filled))


def test_hmac_placeholder_becomes_a_fresh_header_keyed_with_the_issued_key_bytes():
    event = _load(ROOT / "events" / "partner_validate.json")
    first, second = fill_event(event, FAKE_DEMO), fill_event(event, FAKE_DEMO)
    header = first["headers"]["Authorization"]
    assert first["multiValueHeaders"]["Authorization"] == [header]
    creds = parse_authorization(header)
    assert creds.username == "demo" and creds.method == "HMAC"
    key = FAKE_DEMO["partner"]["hmacKey"].encode("ascii")  # as issued: never base64-decoded
    to_sign = string_to_hash(first["path"], creds.nonce, creds.timestamp, first["body"].encode())
    assert creds.response == hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    assert to_sign == (f"POST /api/partner/validate\n{creds.nonce}\n{creds.timestamp}\n\n"
                       f"{hashlib.sha256(first['body'].encode()).hexdigest()}")
    assert parse_authorization(second["headers"]["Authorization"]).nonce != creds.nonce  # one nonce per call


def test_the_signature_covers_the_filled_body_and_path():
    event = _load(ROOT / "events" / "proxy_tokenize.json")
    filled = fill_event(event, FAKE_DEMO)
    ref = FAKE_DEMO["proxyTokenizeConfig"]["configReferenceID"]
    assert filled["path"] == f"/api/v1/partners/demo/configurations/{quote(ref)}"
    assert filled["pathParameters"]["configReferenceID"] == ref
    creds = parse_authorization(filled["headers"]["Authorization"])
    key = FAKE_DEMO["partner"]["hmacKey"].encode("ascii")
    expected = hmac.new(key, string_to_hash(filled["path"], creds.nonce, creds.timestamp,
                                            filled["body"].encode()).encode(), hashlib.sha256).hexdigest()
    assert creds.response == expected


def test_basic_placeholder_and_a_captured_hmac_header_is_signed_again():
    event = _load(ROOT / "events" / "partner_validate_basic.json")
    filled = fill_event(event, FAKE_DEMO)
    assert filled["headers"]["Authorization"] == "Basic " + base64.b64encode(b"demokey:pk-demokey").decode()
    captured = fill_event(_load(ROOT / "events" / "partner_validate.json"), FAKE_DEMO)
    again = fill_event(captured, FAKE_DEMO)
    assert again["headers"]["Authorization"] != captured["headers"]["Authorization"]
    assert parse_authorization(again["headers"]["Authorization"]).username == "demo"


def test_sqs_digest_is_recomputed_and_unknown_placeholders_are_refused():
    batch = fill_event(_load(ROOT / "events" / "postback_batch.json"), FAKE_DEMO)
    for record in batch["Records"]:
        assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
        assert json.loads(record["body"])["account_id"] in ("123456789012", "210987654321")
    from local.invoke import UsageError

    with pytest.raises(UsageError):
        fill_event({"body": "{{demo.nothing.here}}"}, FAKE_DEMO)
    with pytest.raises(UsageError):
        fill_event({"body": "{{password}}"}, FAKE_DEMO)
    with pytest.raises(UsageError):  # hmac only as a whole header value
        fill_event({"body": "x {{hmac.partner}}"}, FAKE_DEMO)
