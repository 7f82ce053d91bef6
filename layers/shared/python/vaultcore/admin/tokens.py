"""Management API for tokenization: templates (immutable, versioned) and the partner's key ring."""

from __future__ import annotations

from vaultcore.admin.router import created, json_body, ok, route
from vaultcore.api.http import Request, Response
from vaultcore.errors import ValidationError
from vaultcore.tokens import keys as token_keys
from vaultcore.tokens import template_store
from vaultcore.tokens.errors import KEY_VERSION_UNKNOWN, TokenNotFound

__all__: list[str] = []


@route("POST", "/admin/v1/partners/{partner_id}/templates")
def create_template(request: Request, partner_id: str) -> Response:
    return created(template_store.create_template(partner_id, json_body(request)).public_view())


@route("GET", "/admin/v1/partners/{partner_id}/templates")
def list_templates(request: Request, partner_id: str) -> Response:
    return ok({"templates": template_store.list_templates(partner_id)})


@route("GET", "/admin/v1/partners/{partner_id}/templates/{template_ref}")
def get_template(request: Request, partner_id: str, template_ref: str) -> Response:
    raw = request.query.get("version")
    if raw is not None and not (raw.isascii() and raw.isdigit() and 1 <= len(raw) <= 6):
        raise ValidationError("version must be a positive integer.", code=400)
    stored, versions = template_store.get_template(partner_id, template_ref, None if raw is None else int(raw))
    return ok({**stored.public_view(), "versions": versions})


@route("GET", "/admin/v1/partners/{partner_id}/token-keys")
def list_token_keys(request: Request, partner_id: str) -> Response:
    return ok({"partnerId": partner_id, "keys": [k.public_view() for k in token_keys.list_keys(partner_id)]})


@route("POST", "/admin/v1/partners/{partner_id}/token-keys/rotate")
def rotate_token_key(request: Request, partner_id: str) -> Response:
    return created(token_keys.rotate_keys(partner_id).public_view())


@route("POST", "/admin/v1/partners/{partner_id}/token-keys/{version}/retire")
def retire_token_key(request: Request, partner_id: str, version: str) -> Response:
    if not (version.isascii() and version.isdigit() and 1 <= len(version) <= 5):
        raise TokenNotFound("No such tokenization key version.", code=KEY_VERSION_UNKNOWN)
    return ok(token_keys.retire_key(partner_id, int(version)).public_view())


# ------------------------------------------------------------------ issue 21: detokenize permission and audit


@route("GET", "/admin/v1/partners/{partner_id}/permissions")
def get_permissions(request: Request, partner_id: str) -> Response:
    from vaultcore.partners.service import get_partner, partner_permissions

    return ok(partner_permissions(get_partner(partner_id)))


@route("PUT", "/admin/v1/partners/{partner_id}/permissions")
def set_permissions(request: Request, partner_id: str) -> Response:
    """``{detokenize: bool}`` (merged; the other permissions unchanged). Other containers apply it within
    RECORD_CACHE_SECONDS."""
    from vaultcore.partners.service import partner_permissions, set_partner_permissions

    body = json_body(request)
    if not body:
        raise ValidationError("The body must set at least one permission, e.g. {\"detokenize\": true}.", code=400)
    return ok(partner_permissions(set_partner_permissions(partner_id, body)))


@route("GET", "/admin/v1/partners/{partner_id}/detokenizations")
def list_detokenizations(request: Request, partner_id: str) -> Response:
    """The audit records of the partner's detokenizations, newest first (``limit`` 1-100, ``nextToken``,
    ``bfid``)."""
    from vaultcore.partners.service import get_partner
    from vaultcore.store import audit

    get_partner(partner_id)
    limit_text = request.query.get("limit", "25")
    if not (limit_text.isascii() and limit_text.isdigit() and len(limit_text) <= 3):
        raise ValidationError("limit must be an integer from 1 to 100.", code=400)
    return ok(audit.list_records(partner_id, limit=int(limit_text), next_token=request.query.get("nextToken") or None,
                                 bfid=request.query.get("bfid") or None))
