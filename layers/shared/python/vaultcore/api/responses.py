"""The one place where domain errors become HTTP responses, per API family (DESIGN.md §7).

- ``secure`` (secure API and parser): ``{success: false, errCode, errMessage, reference?, messageId?}``;
  every authentication failure is the byte-identical 1003 body; request-validation errors carry no messageId.
- ``proxy``: ``{success: false, code, message}`` with 8001/8003/8004 and the documented 400 codes.
- ``admin``: ``{success: false, errCode, errMessage}`` with 400/404/409.
- ``gateway``: failures are transaction responses (built by the gateway itself); this module only maps
  errors that escape it.
"""

from __future__ import annotations

from typing import Any

from vaultcore.api.http import Response, json_response
from vaultcore.errors import AuthenticationFailed, PermissionDenied, ValidationError, VaultError
from vaultcore.ids import message_id

__all__ = ["AUTH_REQUIRED_BODY", "error_response", "internal_error_response"]

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


def _proxy(error: VaultError) -> Response:
    if isinstance(error, AuthenticationFailed):
        return json_response(401, {"success": False, "code": 8003, "message": "Authentication error."})
    if isinstance(error, PermissionDenied):
        return json_response(403, {"success": False, "code": 8004, "message": error.message})
    if error.status >= 500:
        return json_response(500, {"success": False, "code": 8001, "message": "Internal server error."})
    return json_response(error.status, {"success": False, "code": error.code, "message": error.message})


def _admin(error: VaultError) -> Response:
    status = error.status if error.status in (400, 401, 403, 404, 409, 413, 500, 502, 503) else 400
    return json_response(status, {"success": False, "errCode": error.code, "errMessage": error.message})


def _gate_code(family: str, error: VaultError) -> VaultError:
    """The documented 400 of each API family for a request refused by the input gate (:mod:`.gate`)."""
    from vaultcore.api.gate import InputRejected

    if not isinstance(error, InputRejected):
        return error
    code = {"secure": 1006, "gateway": 100, "admin": 400}.get(family)
    if family == "proxy":
        code = 8100 if error.kind == "text" else 8101
    return VaultError(error.message, code=code, status=400)


def error_response(family: str, error: VaultError, reference: str | None = None) -> Response:
    from vaultcore.api.gate import InputRejected

    if isinstance(error, InputRejected):
        validation = isinstance(error, ValidationError)
        error = _gate_code(family, error)
        if family == "secure" and validation:
            # A request-validation error: no messageId (public facts).
            return json_response(400, {"success": False, "errCode": error.code, "errMessage": error.message,
                                       **({"reference": reference} if reference is not None else {})})
    if family == "secure":
        return _secure(error, reference)
    if family == "proxy":
        return _proxy(error)
    if family == "gateway":
        return json_response(error.status, {
            "error": True, "error_code": error.code, "error_message": error.message, "error_msg": error.message,
            "transaction_approved": False,
        })
    return _admin(error)


def internal_error_response(family: str) -> Response:
    return error_response(family, VaultError())
