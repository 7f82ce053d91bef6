"""The v4 payments and dynamic descriptors in the gateway API's document (issue 31). Merged into
``openapi/gateway.json`` by :mod:`.gateway`.

The members are the original's (its ``TransactionMeta``, ``TransactionUpdate``, ``InitResponse``,
``TransactionDetails``, ``DynamicDescriptorsRequest``, ``DynamicDescriptorsResponse``), their lengths and patterns
taken from the validators' own tables (:mod:`vaultcore.payments.meta`, :mod:`vaultcore.descriptors.records`), so a
changed validator changes the document.
"""

from __future__ import annotations

from typing import Any

from local.contracts.common import body, obj, parameter, ref, response, text
from vaultcore.descriptors import records as descriptors
from vaultcore.descriptors import routes as descriptor_routes
from vaultcore.payments import meta, records
from vaultcore.payments import routes as payment_routes

__all__ = ["paths", "schemas", "V4_CODES", "extend_violation_codes"]

#: The errCodes these operations answer beyond the payment iFrame's (the ApiViolation's extension member).
V4_CODES = {910: "a request member is missing or invalid, or holds a card number (the member in `details[].source`)",
            911: "the API key lacks the operation's scope (the scope is named)",
            records.TRANSACTION_SETTLED: "the transaction's batch has settled: its level 3 data and meta can no "
                                         "longer change",
            descriptors.DESCRIPTOR_LIMIT: "the account has its maximum of dynamic descriptors"}

_STATUSES = ("INITIALIZED", "APPROVED", "DECLINED", "ERROR", "AUTHORIZED", "CAPTURED", "PENDING", "VOIDED", "SAVED",
             "REFUNDED", "CREDITED")


def _schema(rule: tuple[Any, ...]) -> dict[str, Any]:
    """JSON Schema of one of vaultcore.payments.meta's rules."""
    kind = rule[0]
    if kind == "object":
        return obj({name: _schema(inner) for name, inner in rule[1].items()}, list(rule[2]))
    if kind == "array":
        return {"type": "array", "items": _schema(rule[1]), "maxItems": rule[2]}
    if kind == "bool":
        return {"type": "boolean"}
    if kind == "datetime":
        return {"type": "string", "format": "date-time"}
    out: dict[str, Any] = {"type": "string", "maxLength": rule[1]}
    if rule[2] is not None:
        out["pattern"] = f"^(?:{rule[2].pattern})$"
    return out


def schemas() -> dict[str, Any]:
    meta_props = _schema(meta.TRANSACTION_META)["properties"]
    update = _schema(meta.TRANSACTION_UPDATE)
    update["description"] = ("The original's TransactionUpdate: `level3` and `items` replace the stored ones; "
                             "`customer` and `shippingAddress` are merged member by member. Refused (422, errCode "
                             "930) once the transaction's batch has settled.")
    auth = {
        "status": {"type": "string", "enum": list(_STATUSES), "description": "The original's transaction Status."},
        "id": text(records.TRANSACTION_ID, "The 12-digit transaction id (the QSAPI's `transaction_id`)."),
        "timestamp": {"type": "string", "format": "date-time"},
        "card": obj({"name": {"type": "string", "maxLength": 100},
                     "brand": {"type": "string", "enum": ["VISA", "MASTERCARD", "DISCOVER", "AMEX", "JCB", "DINERS"]},
                     "last4": text("[0-9]{4}"), "expiry": text("[0-9]{4}", "MMYY.")}),
        "auth": obj({"code": {"type": "string"},
                     "message": {"type": "string", "enum": ["APPROVED", "DECLINED", "CAPTURED", "FORCED",
                                                            "REFUNDED", "INCORRECT PIN"]},
                     "processorMessage": {"type": "string", "description": "The QSAPI's authorization_message."}},
                    ["code", "message", "processorMessage"]),
        "amounts": obj({"currency": text("[A-Z]{3}"), "total": text("[0-9]+\\.[0-9]{2}")}, ["currency", "total"]),
        "transaction": {"$ref": "#/components/schemas/TransactionResponse",
                        "description": "Extension: the QSAPI's own transaction response."},
    }
    descriptor = {
        "name": text(r"[a-zA-Z0-9]{1,25}", "Letters and digits."),
        "city": text(r"[^\x00-\x1f\x7f]{1,13}"),
        "state": {"type": "string", "enum": list(descriptors.STATES), "description": "The original's UsCaStates."},
        "descriptor": text(r"[^\x00-\x1f\x7f]{1,25}", "The merchant name on the statement."),
    }
    return {
        "TransactionMeta": obj(meta_props, description=(
            "The original's TransactionMeta. Never card data: a value holding a card number (a Luhn-valid run of 13 "
            "to 19 digits, with or without spaces or dashes) is refused, 422, the member named, never the value.")),
        "TransactionUpdate": update,
        "InitResponse": obj({"id": auth["id"], "status": {"type": "string", "enum": ["INITIALIZED"]}, **meta_props},
                            ["id", "status"]),
        "TransactionDetails": obj({**meta_props, "overrides": update["properties"]["overrides"], **auth},
                                  ["status", "id"]),
        "DynamicDescriptorsRequest": obj(descriptor),
        "DynamicDescriptorsResponse": obj({"id": text(descriptors.DESCRIPTOR_ID), **descriptor},
                                          ["id", *descriptors.MEMBERS]),
        "DynamicDescriptorsList": {"type": "array", "items": ref("DynamicDescriptorsResponse"),
                                   "maxItems": 100},
    }


def extend_violation_codes(violation: dict[str, Any]) -> None:
    """Add :data:`V4_CODES` to the known values of the ``ApiViolation``'s ``errCode`` (the contract checks close
    the set: an answered code must be known)."""
    from local.contracts.common import codes

    err = violation["properties"]["errCode"]
    table = dict(zip(err["x-known-values"], err["x-enum-descriptions"], strict=True))
    head = "Our error code (extension): the payment iFrame's, the v4 payments' and the dynamic descriptors'."
    violation["properties"]["errCode"] = codes({**table, **V4_CODES}, head)


def _v4_errors(*statuses: int, what: str = "transaction") -> dict[str, Any]:
    meaning = {400: "The body is not JSON or the input gate refused it (`invalid_request`, errCode 400).",
               401: "Authentication failed (`authentication`, errCode 1003): one answer for every cause.",
               403: "The key lacks the operation's scope (`authorization`, errCode 911, the scope named).",
               404: f"No such {what} of this account (`not_found`).",
               405: "The method is not allowed (`invalid_request`).",
               413: "The body is over the input gate's limit (`invalid_request`).",
               422: "A member is missing or invalid (`invalid_request`, errCode 910, the member in "
                    "`details[].source`, never its value), the transaction's batch has settled (errCode 930), or the "
                    "account has its maximum of dynamic descriptors (errCode 940).",
               500: "Internal error (`internal_server_error`)."}
    return {str(s): response(meaning[s], ref("ApiViolation")) for s in statuses}


def _scopes(table: dict[tuple[str, str], str], resource: str, method: str) -> str:
    scope = table[(resource, method)]
    area = scope.rsplit(":", 1)[0]
    return f"Scope: `{scope}` or `{area}:*`."


def paths() -> dict[str, Any]:
    basic: list[dict[str, list[str]]] = [{"accountBasic": []}]
    account = parameter("account_id", "path", "The account (the Basic user).", text("[0-9]{12}"))
    transaction = parameter("transaction_id", "path", "The transaction id.", {"type": "string"})
    descriptor_id = parameter("id", "path", "The dynamic descriptor's id.", {"type": "string", "maxLength": 40})
    common = (400, 401, 403, 413, 500)
    pay = "/api/v4/accounts/{account_id}/payments"
    dd = "/api/v4/accounts/{account_id}/dynamic_descriptors"
    ps, ds = payment_routes.SCOPES, descriptor_routes.SCOPES
    return {
        pay + "/init": {
            "parameters": [account],
            "post": {"operationId": "initCardPaymentTransaction", "tags": ["payments"], "security": basic,
                     "summary": "A transaction id and its meta, to charge through the QSAPI (`transaction_id`)",
                     "description": _scopes(ps, pay + "/init", "POST"),
                     "requestBody": body(ref("TransactionMeta"), example={
                         "description": "Order 1001", "level3": {"summaryCommodityCode": "ABCD"},
                         "items": [{"quantity": "1", "description": "Widget", "unitCost": "10.00"}]}),
                     "responses": {"201": response("Initialized.", ref("InitResponse")), **_v4_errors(*common, 422)}},
        },
        pay + "/{transaction_id}": {
            "parameters": [account, transaction],
            "get": {"operationId": "getTransaction", "tags": ["payments"], "security": basic,
                    "summary": "The transaction's details and meta",
                    "description": _scopes(ps, pay + "/{transaction_id}", "GET"),
                    "responses": {"200": response("The details.", ref("TransactionDetails")),
                                  **_v4_errors(*common, 404)}},
            "patch": {"operationId": "updateTransactionDetails", "tags": ["payments"], "security": basic,
                      "summary": "Add or change level 3 data and meta before settlement",
                      "description": _scopes(ps, pay + "/{transaction_id}", "PATCH"),
                      "requestBody": body(ref("TransactionUpdate"), example={"level3": {"freightAmount": "2.00"}}),
                      "responses": {"200": response("The details.", ref("TransactionDetails")),
                                    **_v4_errors(*common, 404, 422)}},
        },
        dd: {
            "parameters": [account],
            "get": {"operationId": "GetDynamicDescriptors", "tags": ["dynamic_descriptors"], "security": basic,
                    "summary": "The account's dynamic descriptors (oldest first)",
                    "description": _scopes(ds, dd, "GET"),
                    "parameters": [
                        parameter("page", "query", "The page, from 1 (default 1).",
                                  {"type": "integer", "minimum": 1, "maximum": 1000000, "default": 1}),
                        parameter("limit", "query", "Descriptors per page (default and at most 100).",
                                  {"type": "integer", "minimum": 1, "maximum": 100, "default": 100}),
                        parameter("query", "query", "Keeps those whose name or descriptor contains it "
                                                    "(case-insensitive).", {"type": "string", "maxLength": 100})],
                    "responses": {"200": response("The descriptors.", ref("DynamicDescriptorsList"),
                                                  headers=_paging()),
                                  **_v4_errors(*common, 422, what="descriptor")}},
            "post": {"operationId": "AddDynamicDescriptor", "tags": ["dynamic_descriptors"], "security": basic,
                     "summary": "Create a dynamic descriptor", "description": _scopes(ds, dd, "POST"),
                     "requestBody": body(ref("DynamicDescriptorsRequest"), example={
                         "name": "Store001", "city": "Kansas City", "state": "MO",
                         "descriptor": "PayConex Store 001"}),
                     "responses": {"201": response("Created.", ref("DynamicDescriptorsResponse")),
                                   **_v4_errors(*common, 422, what="descriptor")}},
        },
        dd + "/{id}": {
            "parameters": [account, descriptor_id],
            "get": {"operationId": "GetDynamicDescriptor", "tags": ["dynamic_descriptors"], "security": basic,
                    "summary": "A dynamic descriptor", "description": _scopes(ds, dd + "/{id}", "GET"),
                    "responses": {"200": response("The descriptor.", ref("DynamicDescriptorsResponse")),
                                  **_v4_errors(*common, 404, what="descriptor")}},
            "patch": {"operationId": "EditDynamicDescriptor", "tags": ["dynamic_descriptors"], "security": basic,
                      "summary": "Change members of a dynamic descriptor",
                      "description": _scopes(ds, dd + "/{id}", "PATCH"),
                      "requestBody": body(ref("DynamicDescriptorsRequest"), example={"city": "Atlanta",
                                                                                      "state": "GA"}),
                      "responses": {"200": response("The descriptor.", ref("DynamicDescriptorsResponse")),
                                    **_v4_errors(*common, 404, 422, what="descriptor")}},
            "delete": {"operationId": "DeleteDynamicDescriptor", "tags": ["dynamic_descriptors"], "security": basic,
                       "summary": "Delete a dynamic descriptor", "description": _scopes(ds, dd + "/{id}", "DELETE"),
                       "responses": {"204": response("Deleted."), **_v4_errors(*common, 404, what="descriptor")}},
        },
    }


def _paging() -> dict[str, Any]:
    from local.contracts.iframe import _PAGING_HEADERS

    return _PAGING_HEADERS
