"""The documented error policies of each API family, end to end through the real handlers on moto (docs/:
integrators/errors.md, gateway.md, fraud-scoring.md; operators/management-api.md).

* QSAPI and RSAPI answer an input-gate refusal like every other failure: HTTP 200, ``error_code`` 100;
* the wallet domain association file (a REST-style route of the same API) answers it HTTP 400, ``error_code`` 100;
* the management API answers a method the resource does not have with HTTP 405, errCode 405 and ``Allow``;
* the collector answers a report over its 8 KiB cap with 413 however large it is (the gate or the route);
* ``clientId`` that is not a string is 1205 on device validate and the parser (1201 stays "serial missing").
"""

from __future__ import annotations

import json

import pytest

from tests.helpers import admin, call

DEEP = '{"a":' * 40 + "1" + "}" * 40  # nested deeper than the gate's 32 levels


@pytest.fixture
def account(platform):
    status, body = admin(platform, "POST", "/admin/v1/accounts", {"options": {}})
    assert status == 201
    return body


@pytest.mark.parametrize("function, path", [("GatewayFunction", "/api/qsapi/3.8"),
                                            ("ReportingFunction", "/api/rsapi/v1/transactions")])
def test_qsapi_and_rsapi_answer_gate_refusals_with_http_200_and_error_100(platform, account, function, path):
    for body, headers in ((DEEP, None),  # the gate: JSON nested too deep
                          ("[" + "1," * 10_001 + "1]", None),  # the gate: an array over 10,000 items
                          ("x", {"X-Long": "v" * 9000}),  # the gate: a header value over 8 KiB
                          ("[1, 2]", None)):  # the route: not one JSON object
        status, _, out = call(platform, function, "POST", path, body, headers=headers)
        assert (status, out["error"], out["error_code"]) == (200, True, 100), (body[:20], status, out)
        assert out["error_message"] == out["error_msg"] and out["transaction_approved"] is False
    # Only 1 (HTTP 500) and 601 (HTTP 409) have another status: an ordinary refusal is HTTP 200.
    status, _, out = call(platform, function, "POST", path, {"account_id": "12", "api_accesskey": "x"})
    assert (status, out["error_code"]) == (200, 101)


def test_the_association_file_answers_gate_refusals_with_http_400(platform):
    out = platform.invoke("DomainAssociationFunction", {
        "resource": "/.well-known/{file}", "path": "/.well-known/x", "httpMethod": "GET",
        "headers": {"Host": "shop.example.com", "X-Long": "v" * 9000}, "pathParameters": {"file": "x"},
        "requestContext": {"requestId": "r"}, "body": None})
    body = json.loads(out["body"])
    assert (out["statusCode"], body["error_code"], body["error"]) == (400, 100, True)


def test_a_method_the_resource_does_not_have_is_http_405_with_allow(platform, account):
    path = f"/admin/v1/accounts/{account['account_id']}"
    status, headers, body = call(platform, "ManagementFunction", "DELETE", path)
    assert (status, body) == (405, {"success": False, "errCode": 405,
                                    "errMessage": "Method not allowed on this resource."})
    assert headers["Allow"] == "GET, PATCH"
    status, headers, body = call(platform, "ManagementFunction", "GET", "/admin/v1/partners")
    assert (status, body["errCode"], headers["Allow"]) == (405, 405, "POST")
    # An unknown path stays 404.
    assert call(platform, "ManagementFunction", "GET", "/admin/v1/nothing-here")[0] == 404


def test_a_report_over_the_collector_cap_is_413_however_large(platform, account):
    status, client = admin(platform, "POST", f"/admin/v1/accounts/{account['account_id']}/fraud-client")
    assert status == 201
    client_id = client["client_id"]
    for size in (9_000, 300_000):  # over the collector's 8 KiB; the second also over the gate's general 256 KiB
        body = json.dumps({"dvci": "d-1", "pid": "p1", "signals": {"userAgent": "u" * size}})
        status, _, out = call(platform, "CollectorFunction", "POST", f"/cdn/cs/{client_id}/collect", body,
                              headers={"Content-Type": "text/plain"}, resource="/cdn/cs/{client_id}/collect",
                              path_params={"client_id": client_id})
        assert (status, out["success"], out["errCode"]) == (413, False, 413), (size, out)
    status, _, out = call(platform, "CollectorFunction", "POST", f"/cdn/cs/{client_id}/collect", DEEP,
                          headers={"Content-Type": "text/plain"}, resource="/cdn/cs/{client_id}/collect",
                          path_params={"client_id": client_id})
    assert (status, out["errCode"]) == (400, 400)


def test_client_id_that_is_not_a_string_is_1205_on_device_validate(platform):
    _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "Devices Inc", "apiSecurity": "key"})
    admin(platform, "POST", "/admin/v1/bdks", {"bdk": "0123456789ABCDEFFEDCBA9876543210", "scheme": "tdes",
                                               "bdkId": "bdk-policy"})
    status, _ = admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/devices",
                      {"serial": "POL-1", "deviceType": "terminal", "bdkId": "bdk-policy", "clientId": "c1"})
    assert status == 201
    creds = {"partnerId": partner["partnerId"], "partnerKey": partner["partnerKey"], "reference": "r"}
    for client_id, expected in ((5, (400, 1205)), ({"id": "c1"}, (400, 1205)), (None, (409, 1202)),
                                ("c1", (200, None))):
        status, _, out = call(platform, "DeviceValidateFunction", "POST", "/api/device/validate",
                              {**creds, "serial": "POL-1", "clientId": client_id})
        assert (status, out.get("errCode")) == expected, (client_id, out)
    status, _, out = call(platform, "DeviceValidateFunction", "POST", "/api/device/validate", creds)
    assert (status, out["errCode"]) == (400, 1201)  # serial missing keeps its code
