"""The meta of a v4 payment: the original's ``TransactionMeta`` (init) and ``TransactionUpdate`` (PATCH) members.

The members, their nesting, required members and lengths are the original's document's (its components
``TransactionMeta``, ``TransactionUpdate``, ``Customer``/``CustomerUpdate``, ``Address``/``AddressUpdate``,
``ShippingAddress``/``ShippingAddressUpdate``, ``Level2``, ``Level3``, ``ItemsArray``/``ItemEntry``, ``Trace``,
``GpsLocation``, ``Actions``). Where the document gives no length, a bound of our own keeps an item small
(:data:`DEFAULT_MAX`, :data:`MAX_ITEMS`, :data:`MAX_TAGS`). Every value is a string (booleans in ``overrides``),
as the document types them; an unknown member is refused, as the original's "property ... is unsupported".

The meta is never card data (issue 31; PCI DSS 3.2: no PAN where it is not needed): every string and number in
the body, known member or not, is checked with the platform's PAN detector
(:func:`vaultcore.cards.masking.holds_pan_in_any_form`: the log redaction's Luhn-valid run of 13 to 19 digits, also
with other separators or other decimal digits) before anything else, and refused with 422 naming the member, never
the value.

The schema is checked by the tables below, not pydantic: pydantic is not in the deps layer and its import is
refused on every function's cold start (tests/unit/test_import_cost.py, ``NEVER``); the tables are a few
microseconds per body and no import.

Every failure is :class:`vaultcore.v4.errors.MemberInvalid` (errCode 910, HTTP 422 ``invalid_request``, the member
in ``details[].source``).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from vaultcore.cards.masking import holds_pan_in_any_form as holds_pan
from vaultcore.v4.errors import MemberInvalid

__all__ = ["validate_meta", "validate_update", "merge", "DEFAULT_MAX", "MAX_ITEMS", "MAX_TAGS", "META_MEMBERS"]

DEFAULT_MAX = 255  # a string member the original gives no length (ours)
MAX_ITEMS = 100  # level 3 line items per transaction (ours)
MAX_TAGS = 20  # trace tags (ours)
_PRINTABLE = re.compile(r"[^\x00-\x1f\x7f]*")
_PHONE = re.compile(r"\+\d{6,16}")  # the original's Customer.phone pattern, anchored
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")

# A schema: ("object", {member: schema}, required) | ("array", item schema, max) | ("string", max, pattern)
# | ("bool",) | ("datetime",).
Schema = tuple[Any, ...]


def _s(high: int = DEFAULT_MAX, pattern: re.Pattern[str] | None = None) -> Schema:
    return ("string", high, pattern)


def _obj(members: dict[str, Schema], required: tuple[str, ...] = ()) -> Schema:
    return ("object", members, required)


_ADDRESS = {"address1": _s(), "address2": _s(), "city": _s(), "state": _s(), "zip": _s(), "country": _s(),
            "company": _s()}
_ADDRESS_REQUIRED = ("address1", "city", "country", "state")  # the original's Address.required
_CUSTOMER = {"name": _s(100), "email": _s(DEFAULT_MAX, _EMAIL), "phone": _s(17, _PHONE)}
LEVEL2 = _obj({"merchantReference": _s(), "orderId": _s(), "tax": _s(), "zip": _s()})
LEVEL3 = _obj({"merchantVatRegistrationNumber": _s(20), "customerVatRegistrationNumber": _s(13),
               "summaryCommodityCode": _s(4), "discountAmount": _s(12), "freightAmount": _s(12),
               "dutyAmount": _s(12), "destinationZip": _s(10), "shipFromZip": _s(10),
               "destinationCountryCode": _s(3), "vatInvoiceRefNumber": _s(15), "orderDate": _s(8),
               "vatAmount": _s(12), "vatRate": _s(4), "alternateTaxAmount": _s(12), "nationalTaxAmount": _s(12)})
ITEM = _obj({"quantity": _s(12), "brandName": _s(15), "category": _s(), "commodityCode": _s(12),
             "description": _s(35), "productCode": _s(12), "unitOfMeasure": _s(12), "unitCost": _s(10),
             "vatAmount": _s(12), "vatRate": _s(4), "discountAmount": _s(12), "lineItemTotal": _s(12),
             "alternateTaxId": _s(15), "vatType": _s(4), "discountCode": _s(2), "netGrossCode": _s(2),
             "extendedItemAmount": _s(12), "debitCreditCode": _s(2), "discountRate": _s(5)})
ITEMS = ("array", ITEM, MAX_ITEMS)
TRACE = _obj({"cashier": _s(), "clientIp": _s(64), "sourceIp": _s(64), "source": _s(),
              "gpsLocation": _obj({"latitude": _s(32), "longitude": _s(32), "accuracy": _s(32)},
                                  ("latitude", "longitude")),
              "customId": _s(), "timestamp": ("datetime",), "tags": ("array", _s(20), MAX_TAGS)})
TRANSACTION_META = _obj({
    "description": _s(), "customer": _obj({**_CUSTOMER, "billingAddress": _obj(_ADDRESS, _ADDRESS_REQUIRED)}),
    "shippingAddress": _obj({"recipient": _s(), **_ADDRESS}, ("recipient", *_ADDRESS_REQUIRED)),
    "level2": LEVEL2, "level3": LEVEL3, "items": ITEMS, "trace": TRACE})
TRANSACTION_UPDATE = _obj({
    "description": _s(), "customer": _obj({**_CUSTOMER, "billingAddress": _obj(_ADDRESS)}),
    "shippingAddress": _obj({"recipient": _s(), **_ADDRESS}), "level3": LEVEL3, "items": ITEMS,
    "overrides": _obj({"sendCustomerReceiptEmail": ("bool",), "sendMerchantReceiptEmail": ("bool",),
                       "sendCustomerSMS": ("bool",)})})
META_MEMBERS = tuple(TRANSACTION_META[1])


def _refuse_pans(value: Any, path: str) -> None:
    """422 on the first member (known or not) whose string or number holds a PAN; the value is never named."""
    if isinstance(value, dict):
        for key, inner in value.items():
            name = str(key)[:40] if _PRINTABLE.fullmatch(str(key)) else "member"
            if holds_pan(str(key)):
                raise MemberInvalid(path or "request", "a member name must not hold a card number")
            _refuse_pans(inner, f"{path}.{name}" if path else name)
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            _refuse_pans(inner, f"{path}[{i}]")
    elif isinstance(value, str | int | float) and not isinstance(value, bool) and holds_pan(str(value)):
        raise MemberInvalid(path or "request", "must not hold a card number (the meta is never card data)")


def _check(schema: Schema, value: Any, path: str) -> Any:
    kind = schema[0]
    if kind == "object":
        members, required = schema[1], schema[2]
        if not isinstance(value, dict):
            raise MemberInvalid(path or "request", "must be an object")
        for name in value:
            if name not in members:
                raise MemberInvalid(f"{path}.{name}"[:80] if path else str(name)[:80], "unknown member")
        for name in required:
            if value.get(name) in (None, ""):
                raise MemberInvalid(f"{path}.{name}" if path else name, "required")
        return {name: _check(members[name], inner, f"{path}.{name}" if path else name)
                for name, inner in value.items() if inner is not None}
    if kind == "array":
        if not isinstance(value, list) or len(value) > schema[2]:
            raise MemberInvalid(path, f"must be an array of at most {schema[2]}")
        return [_check(schema[1], inner, f"{path}[{i}]") for i, inner in enumerate(value)]
    if kind == "bool":
        if not isinstance(value, bool):
            raise MemberInvalid(path, "must be true or false")
        return value
    if not isinstance(value, str):
        raise MemberInvalid(path, "must be a string")
    if kind == "datetime":
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise MemberInvalid(path, "must be an RFC 3339 date-time") from None
        return value
    high, pattern = schema[1], schema[2]
    if len(value) > high or not _PRINTABLE.fullmatch(value):
        raise MemberInvalid(path, f"at most {high} printable characters")
    if pattern is not None and value and not pattern.fullmatch(value):
        raise MemberInvalid(path, "has the wrong form")
    return value


def validate_meta(body: Any) -> dict[str, Any]:
    """An init's ``TransactionMeta`` (an empty object is valid: the original's init needs no member)."""
    if not isinstance(body, dict):
        raise MemberInvalid("request", "the body must be one JSON object")
    _refuse_pans(body, "")
    return _check(TRANSACTION_META, body, "")


def validate_update(body: Any) -> dict[str, Any]:
    """A PATCH's ``TransactionUpdate``."""
    if not isinstance(body, dict):
        raise MemberInvalid("request", "the body must be one JSON object")
    _refuse_pans(body, "")
    return _check(TRANSACTION_UPDATE, body, "")


def merge(stored: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """The meta after a PATCH: ``level3`` and ``items`` replace the stored ones (a level 3 record is sent whole,
    like the original's level 3 profile); ``customer`` and ``shippingAddress`` are merged member by member (the
    Update schemas make every member optional, so a PATCH names only what changes); an address sent for the first
    time must be whole (the original's Address.required)."""
    out = dict(stored)
    for name, value in update.items():
        if name in ("customer", "shippingAddress") and isinstance(stored.get(name), dict):
            merged = {**stored[name], **value}
            if name == "customer" and "billingAddress" in value and isinstance(stored[name].get("billingAddress"),
                                                                                 dict):
                merged["billingAddress"] = {**stored[name]["billingAddress"], **value["billingAddress"]}
            out[name] = merged
        else:
            out[name] = value
    # the merged result must still be a valid TransactionMeta (an address first sent by a PATCH, whole)
    overrides = out.pop("overrides", None)
    checked = _check(TRANSACTION_META, out, "")
    if overrides is not None:
        checked["overrides"] = overrides
    return checked
