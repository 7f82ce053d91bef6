"""The one place where domain errors become HTTP responses, per API family (DESIGN.md §7).

- ``secure`` (secure API and parser): ``{success: false, errCode, errMessage, reference?, messageId?}``;
  every authentication failure is the byte-identical 1003 body; request-validation errors carry no messageId.
- ``tokenization`` (the tokenization API, on the secure API's host): the original's ErrorResponse
  ``{success: false, messageId, errCode, errMessage, reference?, itemIndex?, itemReference?}``, a messageId on
  every error (authentication failures: the same 1003 code and message for every cause), 409 for the data errors
  of :data:`TOKENIZATION_DATA_CODES`.
- ``proxy``: ``{success: false, code, message}`` with 8001/8003/8004 and the documented 400 codes.
- ``admin`` (management API): ``{success: false, errCode, errMessage}`` with 400/404/405/409/500; 405 (a method
  the resource does not have) carries the ``Allow`` header (RFC 9110 §15.5.6).
- ``collector`` (fraud collector): the admin body; a report over the collector's body cap (8 KiB) is 413
  whether the input gate or the route sees it first.
- ``gateway`` (QSAPI and RSAPI): failures are transaction responses (built by the gateway itself) with HTTP 200
  — an input-gate refusal too (``error_code`` 100, like the gateway's own "not a form or JSON object") — except
  ``error_code`` 1 (500) and 601 (409). This module only maps errors that escape the gateway.
- ``wallet`` (the wallet session and the domain association file on the gateway API): the gateway error body
  with the endpoint's HTTP status: an input-gate refusal is HTTP 400 ``error_code`` 100, internal errors 500.
- ``checkout`` (``/paymentMethods``, ``/payments``): ``{status, errorCode, message, errorType}`` (errorCode a
  string): input gate 400 ``"100"`` validation, authentication 401 ``"102"`` security, internal errors 500
  ``"1"`` internal (docs/integrators/wallets.md "The other request format"; the route answers its own 422s).
"""

from __future__ import annotations

from typing import Any

from vaultcore.api.http import Response, json_response
from vaultcore.errors import AuthenticationFailed, PermissionDenied, ValidationError, VaultError
from vaultcore.ids import message_id

__all__ = ["AUTH_REQUIRED_BODY", "TOKENIZATION_DATA_CODES", "error_response", "internal_error_response"]

# Exactly these bytes for every authentication failure, whatever the cause (spec Authentication, rule 5).
AUTH_REQUIRED_BODY = '{"success": false, "errMessage": "Authentication required.", "errCode": 1003}'


def _secure(error: VaultError, reference: str | None) -> Response:
    if isinstance(error, AuthenticationFailed):
        return Response(401, AUTH_REQUIRED_BODY)
    body: dict[str, Any] = {"success": False, "errCode": error.code, "errMessage": error.message}
    if reference is not None:
        body["reference"] = reference
    if not isinstance(error, ValidationError):
        body["messageId"] = message_id()
    return json_response(error.status, body)


#: The tokenization API's "Invalid data" codes (HTTP 409, as the original answers a request it could read but
#: whose data it cannot use): a template, field, value, token or bfid that is not acceptable. A request it could
#: not read (body, reference, values or batch shape, omit, Idempotency-Key: 1001, 1002, 1006, 3000, 3020-3023,
#: 3042, 3043) stays 400; permissions 403; the work budget 503.
TOKENIZATION_DATA_CODES = frozenset({3001, 3002, 3003, 3004, 3005, 3010, 3011, 3012, 3013, 3014, 3015, 3016, 3017,
                                     3018, 3019, 3030, 3046})


def _tokenization(error: VaultError, reference: str | None) -> Response:
    """The tokenization API's errors in the original's ErrorResponse: ``{success: false, messageId, errCode,
    errMessage, reference?, itemIndex?, itemReference?}``. Every error carries a messageId (the original's clients
    log it), the authentication failure too: the same code and message for every cause, so nothing but a random
    id differs between two of them. Device errors of a tokenize with a payload keep their statuses."""
    body: dict[str, Any] = {"success": False, "messageId": message_id()}
    if isinstance(error, AuthenticationFailed):
        body.update({"errCode": 1003, "errMessage": "Authentication required."})
        return json_response(401, body)
    status = 409 if error.code in TOKENIZATION_DATA_CODES and error.status in (400, 409) else error.status
    body.update({"errCode": error.code, "errMessage": error.message})
    if reference is not None:
        body["reference"] = reference
    if getattr(error, "item_index", None) is not None:
        body["itemIndex"] = error.item_index  # type: ignore[attr-defined]
        if getattr(error, "item_reference", None) is not None:
            body["itemReference"] = error.item_reference  # type: ignore[attr-defined]
    return json_response(status, body)


def _proxy(error: VaultError) -> Response:
    if isinstance(error, AuthenticationFailed):
        return json_response(401, {"success": False, "code": 8003, "message": "Authentication error."})
    if isinstance(error, PermissionDenied):
        return json_response(403, {"success": False, "code": 8004, "message": error.message})
    if error.status >= 500:
        return json_response(500, {"success": False, "code": 8001, "message": "Internal server error."})
    return json_response(error.status, {"success": False, "code": error.code, "message": error.message})


def _admin(error: VaultError) -> Response:
    from vaultcore.errors import MethodNotAllowed

    status = error.status if error.status in (400, 401, 403, 404, 405, 409, 413, 500, 502, 503) else 400
    headers = {"Allow": ", ".join(error.allowed)} if isinstance(error, MethodNotAllowed) else None
    return json_response(status, {"success": False, "errCode": error.code, "errMessage": error.message}, headers)


def _gateway_body(error: VaultError, status: int) -> Response:
    return json_response(status, {
        "error": True, "error_code": error.code, "error_message": error.message, "error_msg": error.message,
        "transaction_approved": False,
    })


def _checkout(error: VaultError) -> Response:
    """The checkout API's body (vaultcore.wallet.checkout_api: CHECKOUT_ERRORS lists every errorCode)."""
    from vaultcore.api.gate import InputRejected

    if isinstance(error, InputRejected):
        status, code, kind, message = 400, "100", "validation", error.message
    elif isinstance(error, AuthenticationFailed) or error.code in (101, 102):
        status, code, kind, message = 401, "102", "security", "Authentication failed."
    elif error.status >= 500:
        status, code, kind = 500, "1", "internal"
        message = "Internal error: retry (a payment with the same Idempotency-Key: its outcome is unknown)."
    else:
        status, code, kind, message = 422, str(error.code), "validation", error.message
    return json_response(status, {"status": status, "errorCode": code, "message": message, "errorType": kind})


def _gate_code(family: str, error: VaultError) -> VaultError:
    """The documented refusal of each API family for a request refused by the input gate (:mod:`.gate`)."""
    from vaultcore.api.gate import BodyTooLarge, InputRejected

    if not isinstance(error, InputRejected):
        return error
    status = 400
    code = {"secure": 1006, "tokenization": 1006, "gateway": 100, "wallet": 100, "admin": 400, "collector": 400}.get(family)
    if family == "proxy":
        code = 8100 if error.kind == "text" else 8101
    elif family == "gateway":
        status = 200  # QSAPI and RSAPI: every failure is HTTP 200 but 1 and 601 (docs/integrators/gateway.md)
    elif family == "collector" and isinstance(error, BodyTooLarge):
        code = status = 413
    return VaultError(error.message, code=code, status=status)


def error_response(family: str, error: VaultError, reference: str | None = None) -> Response:
    from vaultcore.api.gate import InputRejected

    if family == "checkout":
        return _checkout(error)
    if isinstance(error, InputRejected):
        validation = isinstance(error, ValidationError)
        error = _gate_code(family, error)
        if family == "secure" and validation:
            # A request-validation error: no messageId (public facts).
            return json_response(400, {"success": False, "errCode": error.code, "errMessage": error.message,
                                       **({"reference": reference} if reference is not None else {})})
    if family == "secure":
        return _secure(error, reference)
    if family == "tokenization":
        return _tokenization(error, reference)
    if family == "proxy":
        return _proxy(error)
    if family in ("gateway", "wallet"):
        return _gateway_body(error, error.status)
    return _admin(error)


def internal_error_response(family: str) -> Response:
    return error_response(family, VaultError())
