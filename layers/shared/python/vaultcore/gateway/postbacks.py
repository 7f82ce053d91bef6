"""Postback enqueueing: one SQS message per SALE, AUTHORIZATION and CAPTURE of an account with a postback URL.

The outbox is the Transactions table's own stream (issue 29, "cost per operation"). A new transaction item of
an account with a postback URL carries two small attributes, :data:`FLAG` (``postback``: ``plain``, or ``tokens``
when the account's TOKEN DATA IN POSTBACK is on) and ``delivery_id``; the stream relay
(:mod:`vaultcore.postback.relay`) selects the INSERTs that carry the flag and builds the message from the new
image with :func:`message_from_item`, the same function of the same item the request itself would have used. So
the SALE is one plain PutItem (1 write unit under 1 KB) instead of a TransactWriteItems of the transaction and a
Deliveries item (2 units each, doubled). A charge is still never recorded without its postback: the flag is
written in the same item, and the item is in the stream exactly when it is committed. The request makes no SQS
call: a request that dies after the write has nothing left to do.

Writes that change an existing transaction (a returned ACH debit's postback, ``store.mark_ach_returned``) still
record their message as a Deliveries item in the same TransactWriteItems (:func:`outbox_message`), relayed from
the Deliveries stream.

The postback function (another module) consumes exactly this message body (JSON)::

    {"delivery_id": "<uuid7 (time-ordered: the delivery log's order), stable across retries>",
     "account_id": "<12 digits>",
     "transaction_id": "<12 digits>", "created_at": <unix seconds>,
     "response": <the postback's responses[] entry>}

``response`` is the gateway transaction response plus ``account_id`` (spec Events), plus

* ``bfid``, ``vault_token_bank_account_number``, ``vault_token_bank_routing_number``,
  ``vault_token_card_expiration``, ``vault_token_card_number`` when the account's TOKEN DATA IN POSTBACK is on
  (empty strings for absent ones);
* ``reissue`` (the string ``"1"``) on reissue transactions;
* ``token_id`` on captures (already part of the capture's response).

No clear card data: the response carries last4 only and the token fields are tokens (PCI DSS 3.3, 3.5). The
postback URL itself is not in the message: the sender reads the account's current URL and secret.
"""

from __future__ import annotations

from typing import Any

from vaultcore.gateway.records import response_from_item
from vaultcore.gateway.validation import RSAPI_TOKEN_FIELDS
from vaultcore.ids import uuid7
from vaultcore.settings import settings

__all__ = ["postback_entry", "postback_message", "outbox_message", "FLAG", "FLAG_VALUES", "flag_item",
           "message_from_item"]

#: The transaction item's attribute that asks the Transactions stream relay for a postback (its value: whether
#: the account's TOKEN DATA IN POSTBACK was on when the transaction was made).
FLAG = "postback"
FLAG_VALUES = ("plain", "tokens")


def postback_entry(account: Any, response: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    return _entry(account.account_id, bool(account.option("token_data_in_postback")), response, item)


def _entry(account_id: str, token_data: bool, response: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    entry = {**response, "account_id": account_id}
    if token_data:
        entry["bfid"] = str(item.get("bfid") or "")
        for name in sorted(RSAPI_TOKEN_FIELDS):
            entry[name] = str(item.get(name) or "")
    if item.get("reissue") == "1":
        entry["reissue"] = "1"
    if item.get("token_id"):
        entry["token_id"] = item["token_id"]
    return entry


def postback_message(account: Any, response: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    return {"delivery_id": uuid7(), "account_id": account.account_id,
            "transaction_id": item["transaction_id"], "created_at": int(item["created_at"]),
            "response": postback_entry(account, response, item)}


def outbox_message(account: Any, response: dict[str, Any], item: dict[str, Any]) -> dict[str, Any] | None:
    """The postback message of a transaction, or None when the account has no postback URL (or no queue)."""
    if not account.postback_url or not settings().postback_queue_url:
        return None
    return postback_message(account, response, item)


def flag_item(account: Any, response: dict[str, Any], item: dict[str, Any]) -> dict[str, Any] | None:
    """Mark a new transaction ``item`` for the Transactions stream relay (:data:`FLAG` and a new ``delivery_id``)
    when the account has a postback URL; returns the message the relay will build from it, or None.

    The stored item, not the answer, is what the relay formats: ``response`` must be ``response_from_item(item)``
    (every recording path of the gateway answers exactly that), so the message is the same either way.
    """
    message = outbox_message(account, response, item)
    if message is None:
        return None
    item["delivery_id"] = message["delivery_id"]
    item[FLAG] = FLAG_VALUES[1] if account.option("token_data_in_postback") else FLAG_VALUES[0]
    return message


def message_from_item(item: dict[str, Any]) -> dict[str, Any]:
    """The postback message of a transaction item written with :func:`flag_item` (the relay's stream image)."""
    return {"delivery_id": str(item["delivery_id"]), "account_id": str(item["account_id"]),
            "transaction_id": str(item["transaction_id"]), "created_at": int(item["created_at"]),
            "response": _entry(str(item["account_id"]), item.get(FLAG) == FLAG_VALUES[1], response_from_item(item),
                               item)}
