"""The API contracts over HTTP (docs/integrators/openapi.md): the runner serves the OpenAPI documents and their
reference pages, and every response the suite receives is validated against its document by the shared client
(tests/e2e/contract.py). These tests prove the validation runs — on every API, on success and error answers — and
that it would catch a response that broke its contract. Named ``zz`` to run after the other suites, so that the
last test also sees what they were checked on."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from tests.e2e import contract
from tests.e2e.http import admin, request
from vaultcore.auth.hmac_scheme import build_hmac_header

ROOT = Path(__file__).resolve().parents[2]
APIS = ("secure", "parser", "proxy", "gateway", "collector", "management")


def test_the_runner_serves_every_document_and_its_reference_page(runner):
    status, headers, data = request(runner.base_url + "/openapi/", method="GET")
    assert status == 200 and headers["content-type"].startswith("text/html")
    page = data.decode()
    for api in APIS:
        assert f"/openapi/{api}.html" in page and f"/openapi/{api}.json" in page
        status, headers, data = request(runner.base_url + f"/openapi/{api}.json", method="GET")
        assert (status, headers["content-type"]) == (200, "application/json")
        assert data == (ROOT / "openapi" / f"{api}.json").read_bytes()
        doc = json.loads(data)
        status, headers, data = request(runner.base_url + f"/openapi/{api}.html", method="GET")
        assert status == 200 and headers["content-type"].startswith("text/html")
        html = data.decode()
        # no script and nothing loaded from elsewhere (documents may mention http:// origins in their text)
        assert "<script" not in html and not re.search(r"(?:src|href|action)=[\"']?[a-z]+://", html, re.I)
        for path in doc["paths"]:
            assert f"<code>{path}</code>" in html, (api, path)
    # the error codes are on the pages: one of each family
    for api, code in (("secure", "1003"), ("parser", "2140"), ("proxy", "8116"), ("gateway", "308"),
                      ("management", "8204"), ("collector", "413")):
        html = request(runner.base_url + f"/openapi/{api}.html", method="GET")[2].decode()
        assert f"<td class=mono>{code}</td>" in html, (api, code)
    assert request(runner.base_url + "/openapi/nothing.json", method="GET")[0] == 404


def _hmac(partner, path: str, body: bytes) -> dict[str, str]:
    return {"Authorization": build_hmac_header(partner["partnerId"], partner["hmacKey"].encode(), path, body)}


def test_every_api_is_checked_on_success_and_error_answers(runner):
    base, demo = runner.base_url, runner.demo
    partner, key_partner, account = demo["partner"], demo["keyPartner"], demo["account"]
    creds = {"partnerId": key_partner["partnerId"], "partnerKey": key_partner["partnerKey"]}
    before = contract.STATS.checked
    exempt_before = contract.STATS.exempt
    seen_before = set(contract.STATS.operations)
    statuses = []

    def call(path: str, body: bytes | dict | None = None, headers: dict | None = None, method: str = "POST"):
        status, hdrs, data = request(base + path, body, headers, method)
        statuses.append((path, status))
        return status, hdrs, data

    # secure API
    body = b'{"reference": "contract-1"}'
    assert call("/api/partner/validate", body, _hmac(partner, "/api/partner/validate", body))[0] == 200
    assert call("/api/partner/validate", body)[0] == 401
    assert call("/api/device/validate", {**creds, "serial": "DEMO-TERM-0001", "firmware": "1.0.0"})[0] == 200
    assert call("/api/device/validate", {**creds, "reference": "no-serial"})[0] == 400
    assert call("/api/device/validate", {**creds, "serial": "NO-SUCH-DEVICE"})[0] == 409
    body = json.dumps({"reference": "c-t", "templateRef": "DEMO",
                       "values": [{"name": "vault_token_card_number", "value": "4242424242424242"}]}).encode()
    assert call("/api/tokenization/tokenize", body, _hmac(partner, "/api/tokenization/tokenize", body))[0] == 200
    body = b'{"templateRef": "NOSUCHTEMPLATE", "values": [{"name": "x", "value": "y"}]}'  # "Invalid data"
    assert call("/api/tokenization/tokenize", body, _hmac(partner, "/api/tokenization/tokenize", body))[0] == 409
    assert call("/api/v1/authdebug", b"{}", {"Authorization": "Hmac username=x"})[0] == 200
    # parser API
    parser = {**creds, "deviceType": "terminal", "deviceSerial": "DEMO-TERM-0001", "ksn": "FFFF9876543210E00001"}
    assert call("/api/decrypt/parser", parser)[0] == 400
    assert call("/api/decrypt/parser", {**parser, "deviceType": "no-such-type", "devicePayload": "00"})[0] == 400
    # proxy API
    url = demo["proxyTokenizeConfig"]["url"].removeprefix(base)
    body = b'{"card": {"number": "4111111111111111"}}'
    assert call(url, body, _hmac(partner, url, body))[0] == 200
    assert call(url, body)[0] == 401
    basic = base64.b64encode(f"{key_partner['partnerId']}:{key_partner['partnerKey']}".encode()).decode()
    assert call(url, body, {"Authorization": f"Basic {basic}"})[0] == 403
    # gateway API
    gw = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
    sale = json.loads(call("/api/qsapi/3.8", {**gw, "transaction_type": "SALE", "tender_type": "CARD",
                                              "card_number": "4242424242424242", "card_expiration": "1230",
                                              "transaction_amount": "3.21"})[2])
    assert sale["transaction_approved"] is True
    refused = json.loads(call("/api/qsapi/3.8", {**gw, "account_id": "12", "transaction_type": "SALE"})[2])
    assert refused["error_code"] == 101
    # an input-gate refusal on QSAPI: HTTP 200, error_code 100, like every gateway failure
    status, _, data = call("/api/qsapi/3.8", '{"a":' * 40 + "1" + "}" * 40)
    assert (status, json.loads(data)["error_code"]) == (200, 100)
    assert call("/api/rsapi/v1/transactions", {**gw, "transaction_id": sale["transaction_id"]})[0] == 200
    checkout = demo["checkout"]
    ck = {"account_id": checkout["account_id"], "api_accesskey": checkout["api_accesskey"]}
    assert call("/paymentMethods", {**ck, "countryCode": "US", "channel": "Web"})[0] == 200
    assert call("/payments", {**ck, "amount": {"currency": "USD", "value": 100}})[0] == 422
    status, _, data = call("/payments", b"[1]")  # not one JSON object: "100", the checkout format
    assert (status, json.loads(data)["errorCode"]) == (400, "100")
    status, _, data = call("/api/v1/wallet_pay/get_wallet_pay_session", b"[1]")
    assert (status, json.loads(data)["error_code"]) == (400, 100)
    assert call("/api/v1/wallet_pay/get_wallet_pay_session",
                {"account_id": "000000000000", "api_accesskey": "x", "display_name": "Shop",
                 "referrer": "shop.example.com", "merchant_id": "m"})[0] == 401
    status, hdrs, _ = call("/.well-known/apple-developer-merchantid-domain-association", method="GET")
    assert status == 404 and hdrs["content-type"].startswith("text/plain")  # exempt: not JSON
    # collector API
    client_id = checkout["fraud_client_id"]
    status, hdrs, _ = call(f"/cdn/cs/{client_id}.js", method="GET")
    assert status == 200 and "javascript" in hdrs["content-type"]  # exempt: not JSON
    assert call(f"/cdn/cs/{client_id}/collect", b'{"dvci": "x"}', {"Content-Type": "text/plain"})[0] == 400
    assert call(f"/cdn/cs/{'0' * 20}/collect", b"{}", {"Content-Type": "text/plain"})[0] == 404
    assert call(f"/cdn/cs/{client_id}/collect", b"{" + b" " * 9000 + b"}", {"Content-Type": "text/plain"})[0] == 413
    # management API
    for path in ("/admin/v1/partners/demo", "/admin/v1/device-types", "/admin/v1/partners/demo/templates",
                 "/admin/v1/partners/demo/token-keys", f"/admin/v1/accounts/{account['account_id']}",
                 f"/admin/v1/accounts/{checkout['account_id']}/fraud-client",
                 "/admin/v1/partners/demo/proxy-configurations", "/admin/v1/partners/demo/proxy-logs?limit=2",
                 f"/admin/v1/accounts/{account['account_id']}/deliveries", "/admin/v1/bdks/demo-tdes",
                 f"/admin/v1/accounts/{account['account_id']}/transactions/{sale['transaction_id']}"):
        assert call(path, method="GET")[0] == 200, path
    assert admin(base, "GET", "/admin/v1/accounts/000000000000")[0] == 404
    statuses.append(("/admin/v1/accounts/000000000000", 404))
    # a method the resource does not have: 405 with Allow (no operation to check it against: not counted)
    status, hdrs, data = request(base + f"/admin/v1/accounts/{account['account_id']}", method="DELETE")
    assert (status, hdrs["allow"], json.loads(data)["errCode"]) == (405, "GET, PATCH", 405)

    exempt = 2
    assert contract.STATS.exempt - exempt_before == exempt
    assert contract.STATS.checked - before == len(statuses) - exempt, statuses
    new = set(contract.STATS.operations) - seen_before
    checked_apis = {api for api, _op, _status in contract.STATS.operations}
    assert checked_apis == set(APIS), checked_apis
    assert new or len(seen_before) > 40  # a first run sees new (operation, status) pairs


def test_the_management_operations_the_other_suites_do_not_call_are_checked(runner):
    """Management round trips on a fresh partner and account: every answer goes through the contract check."""
    base = runner.base_url
    before = contract.STATS.checked
    calls = []

    def ok(method: str, path: str, body=None, expect: int = 200):
        calls.append(path)
        status, answer = admin(base, method, path, body)
        assert status == expect, (method, path, status, answer)
        return answer

    pid = ok("POST", "/admin/v1/partners", {"name": "Contract Partner", "apiSecurity": "key"}, 201)["partnerId"]
    p = f"/admin/v1/partners/{pid}"
    ok("GET", p)
    ok("POST", f"{p}/disable")
    ok("POST", f"{p}/enable")
    ok("POST", f"{p}/rotate", {"kind": "partnerKey", "overlapSeconds": 60})
    ok("POST", f"{p}/rotate", {"kind": "hmacKey"})
    ok("POST", f"{p}/rotate", {"kind": "nothing"}, 400)
    ok("POST", f"{p}/devices", {"serial": "CONTRACT-1", "deviceType": "terminal", "bdkId": "demo-tdes",
                                "clientId": "c1", "firmware": "2.0"}, 201)
    ok("GET", f"{p}/devices")
    ok("GET", f"{p}/devices/CONTRACT-1?clientId=c1")
    ok("GET", f"{p}/devices/NO-SUCH", expect=404)
    ok("PUT", f"{p}/devices/CONTRACT-1/status?clientId=c1", {"status": "inactive"})
    template = ok("POST", f"{p}/templates", {"name": "Contract", "fields": [
        {"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
        {"name": "secret_code", "type": "field", "format": "NONE", "irreversible": True,
         "active": {"to": "P30D"}, "minLength": 3, "maxLength": 12}]}, 201)
    ok("POST", f"{p}/templates", {"fields": [{"name": "x", "type": "nothing", "format": "NONE"}]}, 400)
    ok("GET", f"{p}/templates/{template['templateRef']}?version=1")
    ok("GET", f"{p}/templates/NOSUCH", expect=404)
    ok("GET", f"{p}/token-keys")
    ok("POST", f"{p}/token-keys/rotate", expect=201)
    keys = ok("GET", f"{p}/token-keys")["keys"]
    current = next(k["version"] for k in keys if k["status"] == "current")
    ok("POST", f"{p}/token-keys/{current}/retire", expect=409)
    old = [k["version"] for k in keys if k["status"] == "active"]
    if old:
        ok("POST", f"{p}/token-keys/{old[0]}/retire")
    account = ok("POST", "/admin/v1/accounts", {"partnerId": pid, "options": {"tokenization": True}}, 201)
    a = f"/admin/v1/accounts/{account['account_id']}"
    ok("PATCH", a, {"options": {"token_data_in_rsapi": True}, "status": "active"})
    ok("PATCH", a, {"unknown": 1}, 400)
    ok("GET", f"{a}/wallet", expect=404)
    client = ok("POST", f"{a}/fraud-client", expect=201)
    ok("DELETE", f"{a}/fraud-client/{client['client_id']}")
    ok("GET", f"{a}/fraud-client/{client['client_id']}/devices/no-such-dvci", expect=404)
    ok("POST", f"{a}/deliveries/no-such-delivery/redeliver", expect=404)
    ok("GET", f"{a}/transactions/000000000001", expect=404)
    calls.append("trust-roots")
    status, _ = admin(base, "GET", "/admin/v1/wallet/trust-roots")
    assert status in (200, 404)
    ok("POST", "/admin/v1/postbacks/redrive", {"limit": 0}, 400)
    ok("POST", "/admin/v1/partners", {"name": "Dup", "partnerId": pid}, 409)
    assert contract.STATS.checked - before == len(calls)  # every answer was validated


def test_the_check_catches_responses_that_break_their_contract(runner):
    """Not vacuous: a code no table has, a missing member, an unknown member are each a violation."""
    position = contract.mark()
    json_type = {"content-type": "application/json"}
    cases = [
        ("POST", "/api/partner/validate", 401, {"success": False, "errMessage": "Nope.", "errCode": 1003}),
        ("POST", "/api/device/validate", 400, {"success": False, "errCode": 9999, "errMessage": "x"}),
        ("POST", "/api/decrypt/parser", 200, {"success": True, "messageId": "1" * 25}),
        ("POST", "/api/v1/partners/demo/configurations/abc", 403, {"success": False, "code": 42, "message": "x"}),
        ("POST", "/api/qsapi/3.8", 200, {"error": True, "error_code": 999, "error_message": "x", "error_msg": "x",
                                         "transaction_approved": False}),
        ("POST", "/paymentMethods", 200, {"paymentMethods": [{"name": "Cards", "type": "cash"}]}),
        ("POST", "/cdn/cs/0123456789abcdef0123/collect", 200, {"received": True}),
        ("GET", "/admin/v1/partners/demo", 200, {"partnerId": "demo", "secret": "x"}),
        ("POST", "/api/partner/validate", 418, {"success": True}),
    ]
    for method, path, status, answer in cases:
        found = contract.check(method, runner.base_url + path, status, json_type, json.dumps(answer).encode(),
                               record=False)
        assert found, (path, answer)
    # a recorded violation is what fails the test that made the call (tests/e2e/conftest.py)
    method, path, status, answer = cases[0]
    contract.check(method, runner.base_url + path, status, json_type, json.dumps(answer).encode())
    assert len(contract.since(position)) == 1
    contract.forget(position)  # provoked on purpose: not this test's failure


def test_the_suite_validated_many_responses(runner):
    """Runs last: with the whole suite, every API and most operations were checked; alone, this file's own."""
    stats = contract.STATS
    assert stats.checked >= 30, stats
    operations = {(api, op) for api, op, _status in stats.operations}
    assert len(operations) >= 20, sorted(operations)
    assert {api for api, _op in operations} == set(APIS)
    print(f"\nAPI contracts: {stats.checked} responses validated against openapi/*.json "
          f"({len(operations)} operations, {stats.exempt} non-JSON exempt, {stats.undocumented} undocumented paths)")
