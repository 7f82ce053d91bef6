"""Issue 30: the original's ApiViolation on the /api/v4 paths (vaultcore.iframe.violations), the rewrite alone."""

from __future__ import annotations

import json

import pytest

from vaultcore.iframe.violations import v4_errors

TRACE = "0c0f4a9e-2f4b-4b8e-9a55-0d6f1f7c8f10"


def _answer(path: str, status: int, body: object, request_id: str = TRACE) -> dict:
    handler = v4_errors(lambda event, context: {"statusCode": status, "headers": {"Allow": "GET"},
                                                "body": json.dumps(body)})
    return handler({"path": path, "requestContext": {"requestId": request_id}}, None)


@pytest.mark.parametrize(("status", "code", "message", "expected"), [
    (400, 901, "cardSettings.cvv: must be required, optional or omit.",
     (422, "invalid_request", "40001", [{"detail": "must be required, optional or omit",
                                          "source": "cardSettings.cvv"}])),
    (400, 902, "customer.billingAddress.city: required.",
     (422, "invalid_request", "40001", [{"detail": "required", "source": "customer.billingAddress.city"}])),
    (409, 903, "The account has no tokenization partner.", (422, "invalid_request", "40001", [])),
    (400, 400, "The body must be one JSON object.", (400, "invalid_request", "40001", [])),
    (413, 400, "The body is too large.", (413, "invalid_request", "40001", [])),
    (401, 1003, "Authentication required.", (401, "authentication", "40002", [])),
    (404, 404, "No such payment iFrame configuration.", (404, "not_found", "40005", [])),
    (500, 1, "Internal error.", (500, "internal_server_error", "40004", [])),
])
def test_our_refusals_become_the_originals_api_violation(status, code, message, expected):
    out = _answer("/api/v4/accounts/1/payment-iframe", status,
                  {"success": False, "errCode": code, "errMessage": message})
    body = json.loads(out["body"])
    assert (out["statusCode"], body["errorType"], body["errorCode"], body["details"]) == expected
    assert body["traceId"] == TRACE and body["errCode"] == code and out["headers"] == {"Allow": "GET"}
    assert set(body) == {"message", "traceId", "errorType", "errorCode", "value", "source", "details", "errCode"}
    if status == 401:  # one answer for every cause: nothing of the cause
        assert (body["value"], body["source"]) == ("Authorization", "headers")
    if status == 500:
        assert body["value"] == "Server Error"


def test_other_paths_successes_and_odd_request_ids_are_left_alone_or_get_a_fresh_trace():
    ours = {"success": False, "errCode": 904, "errMessage": "x"}
    assert json.loads(_answer("/iframe/v1/submit", 401, ours)["body"]) == ours  # the browser paths keep ours
    assert json.loads(_answer("/api/v4/accounts/1/payment-iframe", 201, {"id": "ifr_1"})["body"]) == {"id": "ifr_1"}
    fresh = json.loads(_answer("/api/v4/x", 404, {"success": False, "errCode": 404, "errMessage": "Not found."},
                               request_id="not-a-uuid")["body"])["traceId"]
    assert fresh != "not-a-uuid" and len(fresh) == 36
