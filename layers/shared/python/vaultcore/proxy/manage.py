"""Proxy configuration management (DESIGN.md §5): create, read, list, replace, delete.

Validation is :func:`vaultcore.proxy.config.parse_document` (precise messages, every path compiled, target
checked against the egress policy) plus the checks that need the platform: the partner exists, basic/hmac
credentials are the partner's own, every tokenization ``templateRef`` (``actions`` and ``responseActions``) is a
template of the partner and every ``fieldName`` one of its fields (a detokenize action may not name an
irreversible field).

``configReferenceID`` is generated (a random UUID); ``version`` starts at 1 and each replacement increments it
atomically. Secrets are stored KMS-wrapped and shown as ``[REDACTED]``; a replacement must send them again.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from vaultcore import clock
from vaultcore.errors import Conflict, NotFound
from vaultcore.proxy import errors as E
from vaultcore.proxy import store
from vaultcore.proxy.config import (
    ProxyConfig,
    check_credentials,
    parse_document,
    public_document,
    secret_context,
    stored_document,
)
from vaultcore.proxy.service import _REFERENCE, invalidate
from vaultcore.tokens.policy import is_cvv

__all__ = ["create_config", "get_config", "list_configs", "replace_config", "delete_config", "validate_for_partner"]


def _check_templates(config: ProxyConfig, partner_id: str) -> None:
    from vaultcore.errors import VaultError
    from vaultcore.tokens.service import template_for

    for action in config.all_actions:
        if action.type != "tokenization":
            continue
        try:
            template = template_for(partner_id, action.template_ref or "")
        except VaultError as exc:
            if exc.status >= 500:
                raise
            raise E.ProxyConfigError(f"{action.where}.templateRef is not a template of this partner.",
                                     code=E.CONFIG_INVALID) from None
        for n, sub in enumerate(action.substitutions):
            where = f"{action.where}.substitutions[{n}].fieldName"
            if sub.field_name not in template:
                raise E.ProxyConfigError(f"{where} is not a field of template {action.template_ref}.",
                                         code=E.CONFIG_INVALID)
            if action.method == "detokenize" and is_cvv(sub.field_name or ""):
                raise E.ProxyConfigError(f"{where} names a CVV field: a CVV is never detokenized from a token "
                                         "(tokenization code 3046).", code=E.CONFIG_INVALID)
            if action.method == "detokenize" and template.get_field(sub.field_name or "").irreversible:
                raise E.ProxyConfigError(f"{where} names an irreversible field: its tokens are never detokenized.",
                                         code=E.CONFIG_INVALID)


def validate_for_partner(partner_id: str, document: Any) -> ProxyConfig:
    from vaultcore.partners.service import get_partner

    partner = get_partner(partner_id)  # 404 when unknown
    config = parse_document(document)
    check_credentials(config, partner)
    _check_templates(config, partner_id)
    return config


def _view(item: dict[str, Any]) -> dict[str, Any]:
    return {"partnerId": item["partnerId"], "configReferenceID": item["configReferenceID"],
            "version": int(item.get("version", 1)), "createdAt": item.get("createdAt"),
            "updatedAt": item.get("updatedAt"), "configuration": public_document(json.loads(item["document"]))}


def _wrapper(partner_id: str, reference: str) -> Any:
    from vaultcore.store.keys import wrap_secret

    context = secret_context(partner_id, reference)
    return lambda secret: wrap_secret(secret, context)


def create_config(partner_id: str, document: Any) -> dict[str, Any]:
    validate_for_partner(partner_id, document)
    reference = str(uuid.uuid4())
    now = int(clock.now())
    stored = stored_document(document, _wrapper(partner_id, reference))
    item = {"partnerId": partner_id, "configReferenceID": reference, "version": 1, "createdAt": now,
            "updatedAt": now, "document": json.dumps(stored, separators=(",", ":"))}
    try:
        store.put_new(item)
    except store.ConditionFailed as exc:  # a 122-bit random id does not collide; refuse rather than overwrite
        raise Conflict("configReferenceID collision; retry.") from exc
    return _view(item)


def _known_shape(reference: str) -> str:
    """A generated reference is a UUID; anything else cannot exist (and must not reach DynamoDB as a key)."""
    if not _REFERENCE.match(reference or ""):
        raise NotFound("Proxy configuration not found.")
    return reference


def get_config(partner_id: str, reference: str) -> dict[str, Any]:
    item = store.get_item(partner_id, _known_shape(reference), consistent=True)
    if item is None:
        raise NotFound("Proxy configuration not found.")
    return _view(item)


def list_configs(partner_id: str) -> dict[str, Any]:
    return {"configurations": [_view(i) for i in store.list_items(partner_id)]}


def replace_config(partner_id: str, reference: str, document: Any) -> dict[str, Any]:
    if store.get_item(partner_id, _known_shape(reference), consistent=True) is None:
        raise NotFound("Proxy configuration not found.")
    validate_for_partner(partner_id, document)
    stored = stored_document(document, _wrapper(partner_id, reference))
    try:
        item = store.replace(partner_id, reference, json.dumps(stored, separators=(",", ":")), int(clock.now()))
    except store.ConditionFailed as exc:
        raise NotFound("Proxy configuration not found.") from exc
    invalidate(partner_id, reference)
    return _view(item)


def delete_config(partner_id: str, reference: str) -> dict[str, Any]:
    if not store.delete(partner_id, _known_shape(reference)):
        raise NotFound("Proxy configuration not found.")
    invalidate(partner_id, reference)
    return {"partnerId": partner_id, "configReferenceID": reference, "deleted": True}
