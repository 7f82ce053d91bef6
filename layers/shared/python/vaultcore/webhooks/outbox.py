"""The one seam between webhook endpoints and the postback machinery: "deliver event E with payload P to endpoint
X of account A", recorded as a Deliveries ``MSG#`` item (:func:`vaultcore.postback.deliveries.outbox_put`).

From there a webhook delivery is a postback like any other: the table's stream relays the item to the postback
queue, and the sender POSTs, retries, breaks circuits, dead-letters and logs it. The sender tells a webhook
message by its ``webhook_id`` and asks :mod:`vaultcore.webhooks.delivery` for its URL, secrets and body.

Message (the SQS body; no card data: the events carry batch facts only)::

    {"delivery_id": "<uuid>", "account_id": "...", "transaction_id": "<the endpoint's id>",
     "webhook_id": "<the endpoint's id>", "event": "PAYCONEX_BATCH_SETTLEMENT", "created_at": <unix s>,
     "data": {<the event's payload>}}

``transaction_id`` holds the endpoint's id: the delivery log's attempts carry it, so that one endpoint's log is
the log's existing ``transaction_id`` filter (:func:`vaultcore.postback.deliveries.list_attempts`).

An event's deliveries are written in the same DynamoDB transaction as the operation that raises it (the
``also`` entries of :func:`vaultcore.gateway.store.record_transaction`): a SETTLE-BATCH is never recorded without
them, and a retry of that write (same writer) writes the same items again. The delivery id is derived from the
account, the event's own key and the endpoint, behind the event's time (:func:`vaultcore.ids.time_ordered_uuid`:
time-ordered like the postbacks' UUIDv7, so the delivery log lists newest first), so N endpoints make exactly N
deliveries per event, whatever retries happen on the way.
"""

from __future__ import annotations

from typing import Any

from vaultcore import clock
from vaultcore.ids import time_ordered_uuid, uuid7
from vaultcore.postback.deliveries import outbox_put
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import aws_errors
from vaultcore.webhooks.endpoints import SETTLEMENT, TRANSACTION, subscribed, subscribed_cached

__all__ = ["message", "deliveries_for", "settlement_deliveries", "settlement_data", "transaction_deliveries",
           "send_test", "TEST_EVENT"]

#: What a test delivery reports as its ``event`` (our extension; never registered, sent only on request).
TEST_EVENT = "VAULT_WEBHOOK_TEST"


def message(account_id: str, webhook_id: str, event: str, data: dict[str, Any], delivery_id: str,
            created_at: int) -> dict[str, Any]:
    """The queue message of one webhook delivery (module docstring)."""
    return {"delivery_id": delivery_id, "account_id": account_id, "transaction_id": webhook_id,
            "webhook_id": webhook_id, "event": event, "created_at": int(created_at), "data": data}


def deliveries_for(account_id: str, event: str, event_key: str, data: dict[str, Any], writer: str,
                   created_at: int, *, cached: bool = False) -> list[dict[str, Any]]:
    """TransactWriteItems entries: one delivery of ``event`` (``data``) to each endpoint of the account that
    subscribes to it. ``event_key`` names this occurrence of the event (a batch number, a transaction id): with
    the endpoint it fixes the delivery id. ``cached``: the endpoints as the container last read them
    (:func:`vaultcore.webhooks.endpoints.subscribed_cached`), for an operation on the payment path."""
    entries = []
    for webhook_id in (subscribed_cached if cached else subscribed)(account_id, event):
        delivery_id = time_ordered_uuid(created_at, f"{account_id}:{event}:{event_key}:{webhook_id}")
        entries.append({"Put": outbox_put(message(account_id, webhook_id, event, data, delivery_id, created_at),
                                          writer)})
    return entries


def transaction_deliveries(account: Any, response: dict[str, Any], item: dict[str, Any], writer: str,
                           change: tuple[str, int] | None = None) -> list[dict[str, Any]]:
    """The ``VAULT_TRANSACTION`` deliveries of a transaction the gateway records (its ``response`` and ``item``),
    to write with it: the postback's own entry of it (no card data: last four digits, tokens). None without an
    endpoint of that event (one cached Query per account and RECORD_CACHE_SECONDS).

    ``change``: a later change of the transaction that sends a postback too (a returned ACH debit: ``("RETURNED",
    when)``), a delivery of its own (its own id and time), so that the endpoint gets every postback the account's
    postback URL gets."""
    from vaultcore.gateway.postbacks import postback_entry

    if not subscribed_cached(str(account.account_id), TRANSACTION):
        return []
    event_key, created_at = str(item["transaction_id"]), int(item["created_at"])
    if change is not None:
        event_key, created_at = f"{event_key}:{change[0]}", int(change[1])
    return deliveries_for(str(account.account_id), TRANSACTION, event_key, postback_entry(account, response, item),
                          writer, created_at, cached=True)


def settlement_data(item: dict[str, Any]) -> dict[str, Any]:
    """``PAYCONEX_BATCH_SETTLEMENT``'s payload, from the SETTLE-BATCH transaction item. The original describes it
    as "the details of a batch settlement" and publishes no schema: the batch's number, when it closed, the
    SETTLE-BATCH's transaction id and how many ACH debits of the batch the bank returned."""
    return {"batchId": int(item["batch_id"]), "transactionId": str(item["transaction_id"]),
            "settledAt": int(item["created_at"]), "currency": str(item.get("currency") or "USD"),
            "achReturns": int(item.get("ach_returns") or 0)}


def settlement_deliveries(account_id: str, item: dict[str, Any], writer: str) -> list[dict[str, Any]]:
    """The deliveries of one SETTLE-BATCH (its transaction ``item``), to write with it."""
    return deliveries_for(account_id, SETTLEMENT, str(item["batch_id"]), settlement_data(item), writer,
                          int(item["created_at"]))


def send_test(account_id: str, webhook_id: str) -> str:
    """A test delivery to one endpoint (our extension): one outbox item, relayed and sent like any other; its
    delivery id."""
    delivery_id = uuid7()
    now = int(clock.now())
    put = outbox_put(message(account_id, webhook_id, TEST_EVENT, {"test": True}, delivery_id, now),
                     f"webhook-test-{delivery_id}")
    with aws_errors("webhook test delivery"):
        dynamodb().put_item(**put)
    return delivery_id
