"""The original's error body on the PayConex v4 paths (``/api/v4/...``): ``ApiViolation``.

The original's payment iFrame API answers every failure with ``{message, traceId, errorType, errorCode, value,
source, details[]}`` (``details`` items ``{detail, source}``), ``errorType`` one of :data:`ERROR_TYPES` and
``errorCode`` a string, validation failures with HTTP 422. Its generated clients parse that body and nothing else,
so the v4 paths answer it; the browser paths (``/iframe/v1/...``: the page, its scripts, submissions) keep our
``{success: false, errCode, errMessage}``, which ``checkout.js`` reads.

Our own ``errCode`` (docs/integrators/iframe.md "Payment iFrame error codes") stays in the body as the extension
member ``errCode``: ``ApiViolation`` does not close its members, so the original's clients keep it as an additional
property and ours can still tell 901 from 903.

The rewrite is one function over the handler's finished response (:func:`v4_errors`), because the function serves
both contracts and the handler's error mapping is per function (vaultcore.api.responses): the route's own errors,
the input gate's refusals, an authentication failure and the last-line 500 all pass through it alike.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from typing import Any

from vaultcore.v4.errors import MEMBER_INVALID

__all__ = ["V4_PREFIX", "ERROR_TYPES", "violation", "v4_errors", "status_of"]

V4_PREFIX = "/api/v4/"

#: errorType -> (errorCode, the original's message), from the original's ErrorType table and its examples.
ERROR_TYPES: dict[str, tuple[str, str]] = {
    "invalid_request": ("40001", "Invalid Input"),
    "authentication": ("40002", "Unauthenticated"),
    "authorization": ("40003", "Unauthorized"),
    "internal_server_error": ("40004", "Internal Server Error, Retry or call Bluefin support."),
    "not_found": ("40005", "The requested entity was not found"),
}

# Our errCodes that are a member's validation: 422 with the member in details[] (the original's "invalid_request").
_MEMBER_CODES = frozenset({901, 902, MEMBER_INVALID})
# "member: rule." - how every 901/902 message of vaultcore.iframe starts (configs._bad, instances).
_MEMBER = re.compile(r"([A-Za-z][A-Za-z0-9_.\[\]]{0,80}): (.+)", re.S)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def status_of(status: int, err_code: int) -> tuple[int, str]:
    """(HTTP status, errorType) on the v4 paths for one of our refusals."""
    if status == 401:
        return 401, "authentication"
    if status == 403:
        return 403, "authorization"
    if status == 404:
        return 404, "not_found"
    if status >= 500:
        return 500, "internal_server_error"
    if err_code in _MEMBER_CODES or status == 409:
        # 409 is the account not ready (903): the original documents no 409, and its client only parses 422
        return 422, "invalid_request"
    return status, "invalid_request"  # 400 (not one JSON object), 405, 413: the status says what the gate found


def violation(status: int, error_type: str, *, value: str, source: str, trace_id: str,
              details: list[dict[str, str]] | None = None, err_code: int | None = None) -> dict[str, Any]:
    """One ``ApiViolation`` body (``errCode``: our code, the extension member)."""
    code, message = ERROR_TYPES[error_type]
    body: dict[str, Any] = {"message": message, "traceId": trace_id, "errorType": error_type, "errorCode": code,
                            "value": value, "source": source, "details": details or []}
    if err_code is not None:
        body["errCode"] = err_code
    return body


def _trace_id(event: dict[str, Any]) -> str:
    """The request id when it is a UUID (API Gateway's are): the same id as in our logs; otherwise a new one."""
    ctx = event.get("requestContext") if isinstance(event, dict) else None
    request_id = str(ctx.get("requestId") or "") if isinstance(ctx, dict) else ""
    return request_id if _UUID.fullmatch(request_id) else str(uuid.uuid4())


def _rewrite(event: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    try:
        ours = json.loads(response.get("body") or "")
    except ValueError:
        return response
    if not isinstance(ours, dict) or "errCode" not in ours or "success" not in ours:
        return response  # not one of our error bodies (already an ApiViolation, or a success)
    err_code = ours.get("errCode")
    err_code = err_code if isinstance(err_code, int) and not isinstance(err_code, bool) else 0
    text = str(ours.get("errMessage") or "")
    status, error_type = status_of(int(response.get("statusCode") or 500), err_code)
    details: list[dict[str, str]] = []
    source = "request"
    value = text
    if error_type == "authentication":
        value, source = "Authorization", "headers"  # one answer for every cause, like our 1003
    elif error_type == "internal_server_error":
        value = "Server Error"
    elif err_code in _MEMBER_CODES and (m := _MEMBER.fullmatch(text)):
        details = [{"detail": m.group(2).rstrip("."), "source": m.group(1)}]
        value = "The request contained invalid data"
    body = violation(status, error_type, value=value, source=source, trace_id=_trace_id(event), details=details,
                     err_code=err_code or None)
    return {**response, "statusCode": status, "body": json.dumps(body, separators=(", ", ": "))}


def v4_errors(handler: Callable[[dict[str, Any], Any], dict[str, Any]]
              ) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """``handler`` with its error answers on the v4 paths as ``ApiViolation`` (module docstring)."""

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        response = handler(event, context)
        path = str(event.get("path") or event.get("resource") or "") if isinstance(event, dict) else ""
        if path.startswith(V4_PREFIX) and int(response.get("statusCode") or 0) >= 400:
            return _rewrite(event, response)
        return response

    return lambda_handler
