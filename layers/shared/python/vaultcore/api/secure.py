"""Request helpers shared by the secure API and the parser (JSON body, reference, success bodies)."""

from __future__ import annotations

from typing import Any

from vaultcore.api.http import Request, Response, json_response
from vaultcore.errors import ValidationError
from vaultcore.ids import message_id

__all__ = ["json_object_body", "reference_of", "success", "MAX_REFERENCE_LENGTH"]

MAX_REFERENCE_LENGTH = 50


def json_object_body(request: Request) -> dict[str, Any]:
    body = request.json()
    if not isinstance(body, dict):
        raise ValidationError("The request body must be a JSON object.", code=1001)
    return body


def reference_of(body: dict[str, Any]) -> str | None:
    if "reference" not in body:
        return None
    reference = body["reference"]
    if not isinstance(reference, str):  # null included: optional, but a string when sent
        raise ValidationError("reference must be a string.", code=1002)
    if len(reference) > MAX_REFERENCE_LENGTH:
        raise ValidationError("reference must be at most 50 characters.", code=1002)
    return reference


def success(payload: dict[str, Any], reference: str | None, status: int = 200) -> Response:
    body: dict[str, Any] = {"success": True}
    if reference is not None:
        body["reference"] = reference
    body["messageId"] = message_id()
    body.update(payload)
    return json_response(status, body)
