"""vaultcore.api.responses: the one error mapping, per API family (docs/integrators/errors.md and each API's page)."""

from __future__ import annotations

import json

import pytest

from vaultcore.api.gate import BODY_LIMITS, BodyTooLarge, InputRejected
from vaultcore.api.responses import error_response, internal_error_response
from vaultcore.errors import AuthenticationFailed, DependencyError, MethodNotAllowed, ValidationError


def _answer(family, error):
    response = error_response(family, error)
    return response.status, json.loads(response.body), response.headers


@pytest.mark.parametrize("family, status, body", [
    ("secure", 400, {"success": False, "errCode": 1006, "errMessage": "too deep"}),
    ("proxy", 400, {"success": False, "code": 8101, "message": "too deep"}),
    ("admin", 400, {"success": False, "errCode": 400, "errMessage": "too deep"}),
    ("collector", 400, {"success": False, "errCode": 400, "errMessage": "too deep"}),
    # QSAPI and RSAPI: HTTP 200 like every gateway failure (docs/integrators/gateway.md)
    ("gateway", 200, {"error": True, "error_code": 100, "error_message": "too deep", "error_msg": "too deep",
                      "transaction_approved": False}),
    # the wallet session and association file: the gateway body with the endpoint's HTTP 400
    ("wallet", 400, {"error": True, "error_code": 100, "error_message": "too deep", "error_msg": "too deep",
                     "transaction_approved": False}),
    ("checkout", 400, {"status": 400, "errorCode": "100", "message": "too deep", "errorType": "validation"}),
])
def test_a_gate_refusal_is_the_family_s_documented_refusal(family, status, body):
    assert _answer(family, InputRejected("too deep"))[:2] == (status, body)


def test_the_collector_answers_a_body_over_its_cap_413_as_its_route_does():
    from vaultcore.fraud.collector import _MAX_BODY

    assert BODY_LIMITS["collector"] == _MAX_BODY
    assert _answer("collector", BodyTooLarge("big"))[:2] == (413, {"success": False, "errCode": 413,
                                                                   "errMessage": "big"})
    assert _answer("admin", BodyTooLarge("big"))[:2] == (400, {"success": False, "errCode": 400, "errMessage": "big"})
    assert _answer("proxy", BodyTooLarge("big"))[1]["code"] == 8101


def test_checkout_internal_and_authentication_errors_keep_the_checkout_format():
    from vaultcore.wallet.checkout_api import CHECKOUT_ERRORS

    status, body, _ = _answer("checkout", DependencyError())
    assert (status, body["errorCode"], body["errorType"]) == (500, "1", "internal")
    response = internal_error_response("checkout")
    assert (response.status, json.loads(response.body)["errorCode"]) == (500, "1")
    status, body, _ = _answer("checkout", AuthenticationFailed())
    assert (status, body["errorCode"], body["errorType"]) == (401, "102", "security")
    for code in ("1", "100", "102"):
        assert code in CHECKOUT_ERRORS
    assert (CHECKOUT_ERRORS["1"][0], CHECKOUT_ERRORS["100"][0], CHECKOUT_ERRORS["102"][0]) == (500, 400, 401)


def test_method_not_allowed_is_405_with_allow_and_other_admin_errors_keep_their_status():
    status, body, headers = _answer("admin", MethodNotAllowed(["GET", "PATCH"]))
    assert (status, body["errCode"], headers["Allow"]) == (405, 405, "GET, PATCH")
    assert _answer("admin", ValidationError("bad"))[:2] == (400, {"success": False, "errCode": 400,
                                                                  "errMessage": "bad"})
    assert _answer("gateway", DependencyError())[0] == 500 and _answer("wallet", DependencyError())[0] == 500


def test_the_tokenization_api_answers_the_original_s_error_response():
    """A messageId on every error, 409 for data errors, 400 for a request it cannot read, the same 1003 for every
    authentication failure (only the random messageId differs), and the failing batch entry named."""
    from vaultcore.tokens.errors import TokenServiceError

    first, second = (_answer("tokenization", AuthenticationFailed(cause))[:2] for cause in ("nonce", "unknown"))
    assert first[0] == second[0] == 401 and first[1]["messageId"] != second[1]["messageId"]
    assert {k: v for k, v in first[1].items() if k != "messageId"} == \
        {k: v for k, v in second[1].items() if k != "messageId"} == \
        {"success": False, "errCode": 1003, "errMessage": "Authentication required."}
    invalid = TokenServiceError("value for field x is not valid.", code=3003)
    invalid.item_index, invalid.item_reference = 2, "e-2"  # type: ignore[attr-defined]
    status, body, _ = _answer("tokenization", invalid)
    assert (status, body["errCode"], body["itemIndex"], body["itemReference"]) == (409, 3003, 2, "e-2")
    assert len(body["messageId"]) == 25 and body["messageId"].isdigit()
    status, body, _ = _answer("tokenization", TokenServiceError("values must be a list.", code=3020))
    assert (status, body["errCode"], "itemIndex" in body, len(body["messageId"])) == (400, 3020, False, 25)
    status, body, _ = _answer("tokenization", InputRejected("too deep"))
    assert (status, body["errCode"], len(body["messageId"])) == (400, 1006, 25)
