"""POST /api/partner/validate: proves a partner's credentials (HMAC, or Basic for key-security partners)."""

from __future__ import annotations

from vaultcore.api.http import Request, Response
from vaultcore.api.secure import json_object_body, reference_of, success
from vaultcore.auth.authenticator import authenticate_header

__all__ = ["partner_validate"]


def partner_validate(request: Request) -> Response:
    # Authenticate first: an unauthenticated caller learns nothing about its body's validity.
    authenticate_header(request)
    body = json_object_body(request) if request.body.strip() else {}
    return success({}, reference_of(body))
