"""Postback enqueueing: one SQS message per SALE, AUTHORIZATION and CAPTURE of an account with a postback URL.

The message is written to the Deliveries table in the same transaction as the transaction item
(``gateway.store.record_transaction``); the table's stream relay (:mod:`vaultcore.postback.relay`) puts it on
the queue. A charge is never recorded without its postback, and the request makes no SQS call: a request that
dies after the write has nothing left to do.

The postback function (another module) consumes exactly this message body (JSON)::

    {"delivery_id": "<uuid4, stable across retries>", "account_id": "<12 digits>",
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

import uuid
from typing import Any

from vaultcore.gateway.validation import RSAPI_TOKEN_FIELDS
from vaultcore.settings import settings

__all__ = ["postback_entry", "postback_message", "outbox_message"]


def postback_entry(account: Any, response: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    entry = {**response, "account_id": account.account_id}
    if account.option("token_data_in_postback"):
        entry["bfid"] = str(item.get("bfid") or "")
        for name in sorted(RSAPI_TOKEN_FIELDS):
            entry[name] = str(item.get(name) or "")
    if item.get("reissue") == "1":
        entry["reissue"] = "1"
    if item.get("token_id"):
        entry["token_id"] = item["token_id"]
    return entry


def postback_message(account: Any, response: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    return {"delivery_id": str(uuid.uuid4()), "account_id": account.account_id,
            "transaction_id": item["transaction_id"], "created_at": int(item["created_at"]),
            "response": postback_entry(account, response, item)}


def outbox_message(account: Any, response: dict[str, Any], item: dict[str, Any]) -> dict[str, Any] | None:
    """The postback message of a transaction, or None when the account has no postback URL (or no queue)."""
    if not account.postback_url or not settings().postback_queue_url:
        return None
    return postback_message(account, response, item)

