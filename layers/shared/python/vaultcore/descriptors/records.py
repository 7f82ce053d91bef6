"""An account's dynamic descriptors: validation, storage, and the QSAPI's lookup.

Registry item ``DDESC#<account_id>`` / ``DDESC#<id>`` (like the iFrame configurations': an account's descriptors
are one Query; they change rarely, by the merchant's staff): ``accountId``, ``id`` (``ddesc_`` + 32 hex digits,
the original's form), ``name``, ``city``, ``state``, ``descriptor``, ``createdAt``, ``updatedAt``.

Members, as the original's ``DynamicDescriptorsRequest`` has them (all four required to create; a PATCH names
what changes; an unknown member is refused):

============== ==================================================================================
``name``       1-25 letters and digits (the original's pattern ``^[a-zA-Z0-9]{1,25}$``)
``city``       1-13 printable characters
``state``      one of the original's ``UsCaStates`` (US states and territories, Canadian provinces)
``descriptor`` 1-25 printable characters: the merchant name on the statement
============== ==================================================================================

25 and 13 are the merchant name and city lengths card networks carry for the statement (ISO 8583 field 43,
"card acceptor name/location"), which is why the processor stand-in puts them on the statement line as
``<descriptor> <city> <state>`` (:func:`vaultcore.gateway.processor.statement_line`).

An account has at most :func:`max_descriptors` (``DYNAMIC_DESCRIPTORS_MAX``, the template's
``DynamicDescriptorsMax``, default 100); creating one more is refused with errCode 940, HTTP 422. Values are
never card data: a member holding a PAN is refused (:func:`vaultcore.cards.masking.holds_pan_in_any_form`).

The list (:func:`list_descriptors`) is the account's descriptors oldest first; ``query`` keeps those whose
``name`` or ``descriptor`` contains it (case-insensitive), as the original's ``SearchQuery`` describes.
"""

from __future__ import annotations

import os
import re
import secrets
from typing import Any

from vaultcore import clock
from vaultcore.cards.masking import holds_pan_in_any_form
from vaultcore.errors import NotFound, VaultError
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.gateway.processor import DESCRIPTOR_ID, Descriptor
from vaultcore.store import counted, registry
from vaultcore.v4.errors import MemberInvalid

__all__ = ["DESCRIPTOR_LIMIT", "DescriptorLimit", "DESCRIPTOR_ID", "STATES", "MEMBERS", "max_descriptors",
           "create", "list_descriptors", "get", "patch", "delete", "resolve"]

DESCRIPTOR_LIMIT = 940
DEFAULT_MAX = 100
MEMBERS = ("name", "city", "state", "descriptor")
#: The original's UsCaStates enum, in its order.
STATES = ("AL", "AK", "AS", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "GU", "HI", "ID", "IL", "IN",
          "IA", "KS", "KY", "LA", "ME", "MH", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV", "NH", "NJ",
          "NM", "NY", "NC", "ND", "MP", "OH", "OK", "OR", "PW", "PA", "PR", "RI", "SC", "SD", "TN", "TX", "UT",
          "VT", "VI", "VA", "WA", "WV", "WI", "WY", "AE", "AA", "AP", "AB", "BC", "MB", "NB", "NF", "NS", "ON",
          "PE", "QC", "SK", "NW", "NU", "YT", "OT")
_RULES: dict[str, tuple[re.Pattern[str], str]] = {
    "name": (re.compile(r"[a-zA-Z0-9]{1,25}"), "1 to 25 letters and digits"),
    "city": (re.compile(r"[^\x00-\x1f\x7f]{1,13}"), "1 to 13 printable characters"),
    "descriptor": (re.compile(r"[^\x00-\x1f\x7f]{1,25}"), "1 to 25 printable characters"),
}
_SK = "DDESC#"


class DescriptorLimit(VaultError):
    """The account has its maximum of descriptors (HTTP 422)."""

    code = DESCRIPTOR_LIMIT
    # 409 in our body (a state conflict, as the iFrame's 903): the v4 paths answer it as the original's 422
    # invalid_request (vaultcore.iframe.violations.status_of), the status its document gives a refused request
    status = 409


def max_descriptors() -> int:
    """The per-account maximum: ``DYNAMIC_DESCRIPTORS_MAX`` (the template's DynamicDescriptorsMax parameter)."""
    raw = os.environ.get("DYNAMIC_DESCRIPTORS_MAX", "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_MAX


def _pk(account_id: str) -> str:
    return f"DDESC#{account_id}"


def _validate(body: Any, *, partial: bool) -> dict[str, str]:
    if not isinstance(body, dict):
        raise MemberInvalid("request", "the body must be one JSON object")
    for name in body:
        if name not in MEMBERS:
            raise MemberInvalid(str(name)[:64], "unknown member")
    out: dict[str, str] = {}
    for name in MEMBERS:
        value = body.get(name)
        if value is None:
            if not partial:
                raise MemberInvalid(name, "required")
            continue
        if not isinstance(value, str):
            raise MemberInvalid(name, "must be a string")
        if holds_pan_in_any_form(value):
            raise MemberInvalid(name, "must not hold a card number")
        if name == "state":
            if value not in STATES:
                raise MemberInvalid(name, "one of the US and Canadian state codes (UsCaStates)")
        elif not _RULES[name][0].fullmatch(value):
            raise MemberInvalid(name, _RULES[name][1])
        out[name] = value
    return out


def _view(item: dict[str, Any]) -> dict[str, Any]:
    """The original's ``DynamicDescriptorsResponse``."""
    return {"id": item["id"], **{k: item[k] for k in MEMBERS}}


def _items(account_id: str) -> list[dict[str, Any]]:
    items = registry.query_prefix(_pk(account_id), _SK, limit=max(max_descriptors(), DEFAULT_MAX) * 2)
    return sorted(items, key=lambda i: (int(i.get("createdAt") or 0), i["id"]))


def create(account: Any, body: Any) -> dict[str, Any]:
    members = _validate(body, partial=False)
    limit = max_descriptors()
    now = int(clock.now())
    descriptor_id = "ddesc_" + secrets.token_hex(16)
    item = {"pk": _pk(account.account_id), "sk": _SK + descriptor_id, "accountId": account.account_id,
            "id": descriptor_id, **members, "createdAt": now, "updatedAt": now}
    pk = _pk(account.account_id)
    try:  # the maximum holds under concurrent creations (vaultcore.store.counted)
        counted.put_counted([item], pk=pk, prefix=_SK, limit=limit,
                            count_existing=lambda: len(registry.query_prefix(pk, _SK, limit=10**6)))
    except counted.LimitReached:
        raise DescriptorLimit(f"An account has at most {limit} dynamic descriptors: delete one.") from None
    return _view(item)


def list_descriptors(account: Any, query: str | None) -> list[dict[str, Any]]:
    items = _items(account.account_id)
    if query:
        needle = query.casefold()
        items = [i for i in items if needle in i["name"].casefold() or needle in i["descriptor"].casefold()]
    return [_view(i) for i in items]


def _item(account_id: str, descriptor_id: str) -> dict[str, Any]:
    item = registry.get(_pk(account_id), _SK + descriptor_id, consistent=True) \
        if DESCRIPTOR_ID.fullmatch(descriptor_id) else None
    if item is None:
        raise NotFound("No such dynamic descriptor.")
    return item


def get(account: Any, descriptor_id: str) -> dict[str, Any]:
    return _view(_item(account.account_id, descriptor_id))


def patch(account: Any, descriptor_id: str, body: Any) -> dict[str, Any]:
    members = _validate(body, partial=True)
    _item(account.account_id, descriptor_id)
    if not members:
        return get(account, descriptor_id)
    try:
        updated = registry.update_fields(_pk(account.account_id), _SK + descriptor_id,
                                         {**members, "updatedAt": int(clock.now())})
    except registry.ConditionFailed:
        raise NotFound("No such dynamic descriptor.") from None
    return _view(updated)


def delete(account: Any, descriptor_id: str) -> None:
    _item(account.account_id, descriptor_id)
    try:
        counted.delete_counted([(_pk(account.account_id), _SK + descriptor_id)], pk=_pk(account.account_id),
                               prefix=_SK)
    except registry.ConditionFailed:
        raise NotFound("No such dynamic descriptor.") from None


def resolve(account_id: str, descriptor_id: str | None) -> Descriptor | None:
    """The descriptor a QSAPI request names (``dynamic_descriptor_id``) for the processor; None when none is
    named (no read: a SALE without one costs what it did). An id that is not this account's: error 232."""
    if descriptor_id is None:
        return None
    item = registry.get(_pk(account_id), _SK + descriptor_id, consistent=False) \
        if DESCRIPTOR_ID.fullmatch(descriptor_id) else None
    if item is None:
        raise GatewayError(E.DESCRIPTOR)
    return Descriptor(descriptor_id, item["descriptor"], item["city"], item["state"])
