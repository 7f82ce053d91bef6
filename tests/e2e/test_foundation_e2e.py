"""The foundation over real HTTP against the local runner: partner validation, nonces, devices, authdebug."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from tests.e2e.http import admin, post_json, request
from vaultcore.api.responses import AUTH_REQUIRED_BODY
from vaultcore.auth.hmac_scheme import build_hmac_header

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def test_client_helper_signs_and_the_same_header_is_refused_the_second_time(runner):
    partner = runner.demo["partner"]
    url = runner.base_url + "/api/partner/validate"
    body = '{"reference": "walkthrough-1"}'
    out = subprocess.run([sys.executable, "-m", "local.client", "--url", url, "--partner-id", partner["partnerId"],
                          "--hmac-key", partner["hmacKey"], "--data", body], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["success"] is True and answer["reference"] == "walkthrough-1"
    header = subprocess.run([sys.executable, "-m", "local.client", "--url", url, "--partner-id",
                             partner["partnerId"], "--hmac-key", partner["hmacKey"], "--data", body,
                             "--print-header"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert request(url, body, {"Authorization": header})[0] == 200
    status, _, data = request(url, body, {"Authorization": header})
    assert (status, data.decode()) == (401, AUTH_REQUIRED_BODY)


def test_twenty_concurrent_uses_of_one_nonce_give_exactly_one_success(runner):
    partner = runner.demo["partner"]
    url = runner.base_url + "/api/partner/validate"
    body = b'{"reference": "race"}'
    header = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), "/api/partner/validate", body)
    with ThreadPoolExecutor(max_workers=20) as pool:
        results = list(pool.map(lambda _: request(url, body, {"Authorization": header}), range(20)))
    statuses = sorted(r[0] for r in results)
    assert statuses == [200] + [401] * 19
    assert all(r[2].decode() == AUTH_REQUIRED_BODY for r in results if r[0] == 401)


def test_device_validation_codes(runner):
    base = runner.base_url
    key_partner = runner.demo["keyPartner"]
    creds = {"partnerId": key_partner["partnerId"], "partnerKey": key_partner["partnerKey"]}
    url = base + "/api/device/validate"
    assert post_json(url, {**creds, "serial": "DEMO-TERM-0001", "firmware": "1.0.0", "reference": "d1"})[1][
        "success"] is True
    status, body = post_json(url, {**creds, "reference": "d2"})
    assert (status, body["errCode"], body["reference"]) == (400, 1201, "d2") and "messageId" not in body
    status, body = post_json(url, {**creds, "serial": "NOPE"})
    assert (status, body["errCode"]) == (409, 1202) and len(body["messageId"]) == 25
    status, body = post_json(url, {**creds, "serial": "DEMO-TERM-0001", "firmware": "9.9"})
    assert (status, body["errCode"]) == (409, 1204)
    admin(base, "POST", f"/admin/v1/partners/{creds['partnerId']}/devices",
          {"serial": "E2E-INACTIVE", "deviceType": "terminal", "bdkId": "demo-tdes", "status": "inactive"})
    status, body = post_json(url, {**creds, "serial": "E2E-INACTIVE"})
    assert (status, body["errCode"]) == (409, 1203)
    assert post_json(url, {"partnerKey": "x", "serial": "s"})[1]["errCode"] == 1101
    assert post_json(url, {"partnerId": creds["partnerId"], "serial": "s"})[1]["errCode"] == 1102
    assert post_json(url, {"partnerId": "ghost", "partnerKey": "x", "serial": "s"})[1]["errCode"] == 1103
    assert post_json(url, {**creds, "partnerKey": "wrong", "serial": "s"})[1]["errCode"] == 1105
    # An HMAC partner sending body credentials learns nothing: uniform 1003.
    hmac_partner = runner.demo["partner"]
    status, _, data = request(url, {"partnerId": hmac_partner["partnerId"], "partnerKey": hmac_partner["partnerKey"],
                                    "serial": "DEMO-TERM-0001"})
    assert (status, data.decode()) == (401, AUTH_REQUIRED_BODY)
    # ... and with HMAC it works.
    body = json.dumps({"serial": "DEMO-TERM-0001", "reference": "hm"}).encode()
    header = build_hmac_header(hmac_partner["partnerId"], base64.b64decode(hmac_partner["hmacKey"]),
                               "/api/device/validate", body)
    assert request(url, body, {"Authorization": header})[0] == 200


def test_serial_uniqueness_without_client_ids(runner):
    base = runner.base_url
    pid = runner.demo["keyPartner"]["partnerId"]
    dev = {"serial": "E2E-DUP", "deviceType": "terminal", "bdkId": "demo-tdes"}
    assert admin(base, "POST", f"/admin/v1/partners/{pid}/devices", dev)[0] == 201
    assert admin(base, "POST", f"/admin/v1/partners/{pid}/devices", dev)[0] == 409
    assert admin(base, "POST", f"/admin/v1/partners/{pid}/devices", {**dev, "clientId": "c1"})[0] == 409


def test_authdebug_explains_each_step(runner):
    body = b'{"partnerId": "someone", "reference": "dbg"}'
    header = build_hmac_header("someone", b"secret", "/api/v1/authdebug", body, timestamp=1700000000)
    status, _, data = request(runner.base_url + "/api/v1/authdebug", body, {"Authorization": header})
    out = json.loads(data)
    assert status == 200 and out["key"] == "secret" and out["partnerId"] == "someone"
    assert out["result"]["response"]["isValid"] is True
    assert out["result"]["timestamp"]["isValid"] is False and out["result"]["timestamp"]["offset"] > 0
    steps = out["signatureSteps"]
    assert steps["stringToSign"].startswith("POST /api/v1/authdebug\n")
    assert steps["content"] == body.decode()
    # the generated header is complete and valid for this request
    assert steps["authHeader"] == header
    status, _, data = request(runner.base_url + "/api/authdebug", body, {"Authorization": header, "key": "other"})
    assert json.loads(data)["result"]["response"]["isValid"] is False
    status, _, data = request(runner.base_url + "/api/v1/authdebug", body,
                              {"Authorization": header.replace("Hmac", "Rsa"), "publicKey": "not a key"})
    out = json.loads(data)
    assert status == 200 and out["warnings"]


def test_unknown_route_and_bad_json(runner):
    assert request(runner.base_url + "/api/nothing", b"{}")[0] == 404
    key_partner = runner.demo["keyPartner"]
    status, _, data = request(runner.base_url + "/api/device/validate", b"{not json")
    assert status == 400 and json.loads(data)["errCode"] == 1001
    del key_partner


def test_every_method_gets_the_apis_answer_never_the_servers_501(runner):
    """API Gateway answers a method no route declares itself; so does the runner (HEAD without a body)."""
    import http.client
    from urllib.parse import urlsplit

    netloc = urlsplit(runner.base_url).netloc
    for method in ("HEAD", "OPTIONS", "TRACE", "PUT"):
        conn = http.client.HTTPConnection(netloc, timeout=10)
        conn.request(method, "/api/partner/validate")
        answer = conn.getresponse()
        data = answer.read()
        conn.close()
        assert answer.status == 405, method
        assert answer.getheader("Content-Type") == "application/json", method
        assert data == (b"" if method == "HEAD" else b'{"message": "Method Not Allowed"}'), method
        assert int(answer.getheader("Content-Length")) == len(b'{"message": "Method Not Allowed"}')


def test_logs_hold_no_secrets(runner):
    """Runs last in this module: the whole log of the session so far holds no key or Authorization value."""
    logs = runner.logs()
    assert "request done" in logs
    for partner in (runner.demo["partner"], runner.demo["keyPartner"]):
        assert partner["partnerKey"] not in logs
        assert partner["hmacKey"] not in logs
        assert base64.b64decode(partner["hmacKey"]).decode() not in logs
    assert 'response="' not in logs and "Hmac username" not in logs and "Basic " not in logs
