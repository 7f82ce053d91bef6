"""Postback enqueueing: one SQS message per SALE, AUTHORIZATION and CAPTURE of an account with a postback URL.

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

import json
import uuid
from typing import Any

from vaultcore.errors import DependencyError
from vaultcore.gateway.validation import RSAPI_TOKEN_FIELDS
from vaultcore.settings import settings
from vaultcore.store.aws import client
from vaultcore.store.ddb import aws_errors

__all__ = ["postback_entry", "postback_message", "enqueue_postback"]


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


def enqueue_postback(account: Any, response: dict[str, Any], item: dict[str, Any]) -> str | None:
    """Send the message; returns its delivery_id, or None when the account has no postback URL."""
    if not account.postback_url:
        return None
    queue = settings().postback_queue_url
    if not queue:
        return None
    message = postback_message(account, response, item)
    try:
        with aws_errors("postback enqueue"):
            client("sqs").send_message(QueueUrl=queue, MessageBody=json.dumps(message, separators=(",", ":")))
    except DependencyError:
        # The charge is done: the postback must not be lost. The outbox keeps it until the sweeper queues it
        # (vaultcore.postback.outbox); if this write fails too, the caller logs it loudly.
        from vaultcore.postback.deliveries import save_unsent

        save_unsent(message)
    return message["delivery_id"]
