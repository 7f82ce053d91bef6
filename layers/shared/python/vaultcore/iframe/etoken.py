"""The gateway's read of an eToken: once, retry-aware, bound to the account and the instance's ``customId``.

An eToken is the bfid of values tokenized under the account's partner and stored in the Tokens table for the
gateway's read step (one hour). The payment iframe adds its binding to that item (:mod:`vaultcore.iframe.capture`):
``iframe_account``, ``iframe_custom_id``, ``iframe_method`` (CARD or ACH), ``iframe_device_trans_id``.

:func:`consume` reads it for one gateway request, whose random id is ``reader``:

1. the tokenization service verifies the bfid and reads the tokens it vouches for (3010/3011 -> 306);
2. one conditional UpdateItem marks the item read: ``SET gateway_read_by = :reader`` and, in the same write,
   ``REMOVE`` the CVV's token — the CVV is kept only until the first authorization (PCI DSS 3.3.1: it lives on
   in this request's memory only, for the processor). The condition: the item is the partner's and live, not
   read by another request (``attribute_not_exists(gateway_read_by) OR gateway_read_by = :reader``, so an SDK
   retry of our own write passes), of this account, with this ``custom_id`` and of this tender (``CARD`` or
   ``ACH``) when they are checked.
3. a failed condition is resolved by reading the item back: gone or expired or another account's -> 306
   (one answer: it tells nothing of another account's eTokens), another ``custom_id`` -> 216, another tender
   -> 106, read by another request -> 309 (an eToken pays once). A refused request reads nothing: the eToken
   stays good for the right one.

Ten concurrent SALEs with one eToken: exactly one passes step 2 (tests/integration/test_iframe.py).
"""

from __future__ import annotations

from typing import Any

from vaultcore import clock
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item
from vaultcore.store.tokens import TOKEN_PREFIX

__all__ = ["CVV_FIELD", "ETOKEN_USED", "consume", "scope_of", "Binding"]

CVV_FIELD = "vault_token_card_verification"
ETOKEN_USED = E.ETOKEN_USED  # 309, docs/integrators/gateway.md "Gateway error codes": the eToken has already been read


class Binding(dict):  # type: ignore[type-arg]
    """The iframe's binding of a consumed eToken (empty for an eToken made by the tokenize endpoint)."""


def scope_of(partner_id: str, bfid: str) -> str:
    """The Tokens table key of a bfid the tokenization service has verified (its scope)."""
    from vaultcore.tokens import keys as token_keys
    from vaultcore.tokens.bfid import parse_bfid, peek_bfid_unverified

    _, version = peek_bfid_unverified(bfid)
    keys = token_keys.keys_for_version(partner_id, version)
    if keys is None:  # pragma: no cover - verified just before
        raise GatewayError(E.ETOKEN_FAILED)
    return parse_bfid(keys.mac_key, bfid, expected_partner_id=partner_id).scope


def _read_tokens(partner_id: str, etoken: str) -> dict[str, str]:
    from vaultcore.tokens.errors import TokenServiceError
    from vaultcore.tokens.service import read_stored_tokens

    try:
        return read_stored_tokens(partner_id, etoken)
    except TokenServiceError as exc:
        raise GatewayError(E.ETOKEN_FAILED) from exc


def consume(partner_id: str, account_id: str, etoken: str, custom_id: str | None, reader: str,
            method: str | None = None) -> tuple[dict[str, str], Binding]:
    """The eToken's tokens (field name -> token) for this request, read once (module docstring)."""
    tokens = _read_tokens(partner_id, etoken)
    key = to_item({"bfid": scope_of(partner_id, etoken)})
    now = int(clock.now())
    names = {"#b": "bfid", "#p": "partnerId", "#e": "expiresAt", "#r": "gateway_read_by", "#ra": "gateway_read_at",
             "#a": "iframe_account", "#cvv": TOKEN_PREFIX + CVV_FIELD}
    values: dict[str, Any] = {":p": partner_id, ":now": now, ":r": reader, ":a": account_id}
    condition = ("attribute_exists(#b) AND #p = :p AND #e > :now AND (attribute_not_exists(#r) OR #r = :r) "
                 "AND (attribute_not_exists(#a) OR #a = :a)")
    if custom_id is not None:
        names["#c"] = "iframe_custom_id"
        values[":c"] = custom_id
        condition += " AND (attribute_not_exists(#c) OR #c = :c)"
    if method is not None:
        names["#m"] = "iframe_method"
        values[":m"] = method
        condition += " AND (attribute_not_exists(#m) OR #m = :m)"
    try:
        with aws_errors("etoken read"):
            out = dynamodb().update_item(
                TableName=settings().tokens_table, Key=key, UpdateExpression="SET #r = :r, #ra = :now REMOVE #cvv",
                ConditionExpression=condition, ExpressionAttributeNames=names,
                ExpressionAttributeValues=to_item(values), ReturnValues="ALL_NEW")
        item = from_item(out.get("Attributes")) or {}
    except ConditionFailed:
        item = _refusal(key, partner_id, account_id, custom_id, reader, now, method)
    binding = Binding({k.removeprefix("iframe_"): v for k, v in item.items() if k.startswith("iframe_")})
    return tokens, binding


def _refusal(key: dict[str, Any], partner_id: str, account_id: str, custom_id: str | None, reader: str,
             now: int, method: str | None) -> dict[str, Any]:
    with aws_errors("etoken read"):
        out = dynamodb().get_item(TableName=settings().tokens_table, Key=key, ConsistentRead=True)
    item = from_item(out.get("Item"))
    if (item is None or item.get("partnerId") != partner_id or int(item.get("expiresAt", 0)) <= now
            or item.get("iframe_account", account_id) != account_id):
        raise GatewayError(E.ETOKEN_FAILED)
    if custom_id is not None and item.get("iframe_custom_id", custom_id) != custom_id:
        raise GatewayError(E.IFRAME_FIELD, "custom_id is not the payment iframe instance's.")
    if method is not None and item.get("iframe_method", method) != method:
        raise GatewayError(E.TENDER_TYPE, f"The etoken holds {item['iframe_method']} data: tender_type "
                                          f"{item['iframe_method']}.")
    if item.get("gateway_read_by") == reader:
        return item  # pragma: no cover - the condition accepts our own id; kept for a store that retries late
    raise GatewayError(ETOKEN_USED)
