"""The Transactions store of the previous design (LSI byCreatedAt), as released before issue 29: a frozen copy of
vaultcore/gateway/store.py at 49c4310, used only to write data the way a deployed stack of that version did
(tests/integration/test_transactions_migration.py). Do not change it: it stands for data already in operators' tables.

The original docstring follows.

DynamoDB adapter of the gateway: the Transactions table (account_id, transaction_id; LSI byCreatedAt).

A transaction item holds what the reporting interface returns and nothing more sensitive: last four digits,
brand, expiry month, authorization data, amounts, the bfid and the token fields (PCI DSS 3.3: no CVV or track
data after authorization; 3.5: no full PAN or bank account number). The clear values of a payment live only in
the memory of the request that processes it.

Every conditional write here knows its own retries (issue 18). An SDK retries a write whose answer was lost
after DynamoDB applied it; a plain ``attribute_not_exists`` condition then fails against the request's own first
write. So each written item carries its writer's identity (``writer``, random per request), the condition
accepts the same writer, and a failed condition is resolved by reading the item back, never by guessing:

* :func:`record_transaction` writes the transaction and, when the account has a postback URL, its outbox entry
  in one ``TransactWriteItems`` (the client fills ``ClientRequestToken`` once per call, so DynamoDB itself also
  treats a retry as the same transaction). A charge is therefore never recorded without its postback.
* When the outcome of that write is unknown (the retries ran out), :func:`fence` settles it: a conditional put
  of a fence item on the same key. If the fence lands, the transaction's own write can never land any more
  (its condition names another writer): nothing was recorded, for certain. If the fence fails its condition,
  the item read back says whose write is there.

Captures are one conditional UpdateItem on the authorization (:func:`capture_authorization`): DynamoDB applies
a conditional write atomically per item, so of any number of concurrent captures exactly one sees
``auth_status = authorized`` and wins; the others fail the condition and get the old item back
(``ReturnValuesOnConditionCheckFailure``) to explain why, without another read.
"""

from __future__ import annotations

from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = [
    "record_transaction",
    "fence",
    "Recorded",
    "get_transaction",
    "settle",
    "capture_authorization",
    "revert_capture",
    "refund_transaction",
    "revert_refund",
    "reverse_transaction",
    "revert_reversal",
    "mark_voided",
    "void_mark_entry",
    "take_allowance",
    "give_back_allowance",
    "give_back_allowance_entry",
    "unreturned_ach_returns",
    "mark_ach_returned",
    "list_transactions",
    "ConditionFailed",
]


def _table() -> str:
    return settings().transactions_table


#: The condition of a transaction write: a new key, or a retry of this very write (same writer).
_NEW_OR_MINE = "attribute_not_exists(transaction_id) OR writer = :w"
#: A fence item's ``writer``: never the identity of a request.
FENCE_WRITER = "#fence"


class Recorded:
    """Outcomes of :func:`record_transaction` and :func:`fence`."""

    WRITTEN = "written"  # this request's item is in the table (first try or a retry of it)
    NOT_WRITTEN = "not-written"  # this request wrote nothing, and no write of it can land later
    UNKNOWN = "unknown"  # DynamoDB did not answer in time: the item may or may not be there


def record_transaction(item: dict[str, Any], writer: str, outbox: dict[str, Any] | None = None,
                       also: list[dict[str, Any]] | None = None) -> str:
    """Write the transaction ``item`` as ``writer`` and, when given, its postback ``outbox`` entry with it.

    ``also``: more ``TransactWriteItems`` entries that belong to the same operation (issue 28: a VOID's mark on
    the original, a declined CREDIT's allowance given back): written in the same transaction, so that there is
    nothing to undo. Each must be idempotent under its own condition or fail it on a second application (an
    SDK retry then finds the item written by this writer, :func:`_whose`).
    Returns :attr:`Recorded.WRITTEN`, :attr:`Recorded.NOT_WRITTEN` or :attr:`Recorded.UNKNOWN`; never raises for a
    DynamoDB failure, because the caller must tell "nothing was charged" from "outcome unknown".
    One round trip: PutItem, or TransactWriteItems when there is an outbox entry or ``also``.
    """
    from vaultcore.errors import DependencyError

    item = {**item, "writer": writer}
    values = to_item({":w": writer})
    try:
        with aws_errors("transaction write"):
            if outbox is None and not also:
                dynamodb().put_item(TableName=_table(), Item=to_item(item), ConditionExpression=_NEW_OR_MINE,
                                    ExpressionAttributeValues=values)
            else:
                entries: list[dict[str, Any]] = [
                    {"Put": {"TableName": _table(), "Item": to_item(item), "ConditionExpression": _NEW_OR_MINE,
                             "ExpressionAttributeValues": values}}]
                if outbox is not None:
                    from vaultcore.postback.deliveries import outbox_put

                    entries.append({"Put": outbox_put(outbox, writer)})
                entries.extend(also or ())
                dynamodb().transact_write_items(TransactItems=entries)
    except ConditionFailed:
        # The key is held: by this request's own earlier try (its answer was lost), or by another writer.
        return _whose(item["account_id"], item["transaction_id"], writer)
    except DependencyError:
        return fence(item["account_id"], item["transaction_id"], writer)
    return Recorded.WRITTEN


def fence(account_id: str, transaction_id: str, writer: str) -> str:
    """Settle a write of unknown outcome: after ``WRITTEN`` or ``NOT_WRITTEN`` no write of ``writer`` can land.

    ``WRITTEN`` when ``writer``'s item is there; ``NOT_WRITTEN`` when a fence now holds the key (or another
    writer does); ``UNKNOWN`` when DynamoDB cannot be reached now either.
    """
    from vaultcore.errors import DependencyError

    try:
        existing = settle(account_id, transaction_id)
    except DependencyError:
        return Recorded.UNKNOWN
    if existing is not None and existing.get("writer") == writer:
        return Recorded.WRITTEN
    return Recorded.NOT_WRITTEN


def settle(account_id: str, transaction_id: str) -> dict[str, Any] | None:
    """The transaction stored under this id, or None once it is certain that none ever will be.

    One conditional PutItem of a fence item (no ``created_at``, so the reporting index never lists it; reads
    through :func:`get_transaction` see no transaction): a write still in flight for this id then fails its
    condition. When the key is taken, one consistent GetItem says by what. DependencyError: cannot tell now.
    """
    try:
        with aws_errors("transaction fence"):
            dynamodb().put_item(
                TableName=_table(), ConditionExpression="attribute_not_exists(transaction_id)",
                Item=to_item({"account_id": account_id, "transaction_id": transaction_id, "writer": FENCE_WRITER}))
    except ConditionFailed:
        item = get_transaction(account_id, transaction_id, consistent=True, include_fences=True)
        if item is None or item.get("writer") == FENCE_WRITER:
            return None
        return item
    return None


def _whose(account_id: str, transaction_id: str, writer: str) -> str:
    from vaultcore.errors import DependencyError

    try:
        item = get_transaction(account_id, transaction_id, consistent=True, include_fences=True)
    except DependencyError:
        return Recorded.UNKNOWN
    if item is None:  # the key is free: another item's condition cancelled the transaction; settle it for good
        return fence(account_id, transaction_id, writer)
    return Recorded.WRITTEN if item.get("writer") == writer else Recorded.NOT_WRITTEN


def get_transaction(account_id: str, transaction_id: str, *, consistent: bool = False,
                    include_fences: bool = False) -> dict[str, Any] | None:
    """The stored transaction; a fence (a transaction id whose write was settled as never made) reads as None."""
    with aws_errors("transaction read"):
        out = dynamodb().get_item(TableName=_table(), Key=to_item({"account_id": account_id,
                                                                  "transaction_id": transaction_id}),
                                  ConsistentRead=consistent)
    item = from_item(out.get("Item"))
    if item is not None and item.get("writer") == FENCE_WRITER and not include_fences:
        return None
    return item


def _old_item(exc: ConditionFailed) -> dict[str, Any] | None:
    cause = exc.__cause__
    item = getattr(cause, "response", {}).get("Item") if cause is not None else None
    return from_item(item) if item else None


def capture_authorization(account_id: str, authorization_id: str, capture_id: str, amount_cents: int,
                          now: int, currency: str | None) -> tuple[bool, dict[str, Any] | None]:
    """Mark the authorization captured by ``capture_id`` if it still can be; one conditional UpdateItem.

    Returns ``(True, item after the update)`` or ``(False, item before, or None when it does not exist)``.
    The condition: the item exists, is an approved AUTHORIZATION not yet captured, not past its lifetime,
    authorized for at least ``amount_cents`` and (when given) in ``currency``. The key itself confines the
    capture to the same account.
    """
    values: dict[str, Any] = {":auth": "AUTHORIZATION", ":authorized": "authorized", ":captured": "captured",
                              ":cid": capture_id, ":amt": amount_cents, ":now": now}
    condition = ("attribute_exists(transaction_id) AND transaction_type = :auth AND auth_status = :authorized "
                 "AND authorized_cents >= :amt AND auth_expires_at > :now AND attribute_not_exists(reversed_by)")
    if currency is not None:
        values[":cur"] = currency
        condition += " AND currency = :cur"
    return _conditional_update(
        "capture", account_id, authorization_id,
        "SET auth_status = :captured, captured_by = :cid, captured_cents = :amt, captured_at = :now",
        condition, values, lambda old: old.get("captured_by") == capture_id)


def revert_capture(account_id: str, authorization_id: str, capture_id: str) -> None:
    """Undo :func:`capture_authorization` when the capture's own item was certainly not written (compensation).

    A failed condition means the authorization no longer names this capture: a retry of this very revert
    already undid it (its answer was lost), so there is nothing left to undo.
    """
    try:
        with aws_errors("capture revert"):
            dynamodb().update_item(
                TableName=_table(), Key=to_item({"account_id": account_id, "transaction_id": authorization_id}),
                UpdateExpression="SET auth_status = :authorized REMOVE captured_by, captured_cents, captured_at",
                ConditionExpression="captured_by = :cid",
                ExpressionAttributeValues=to_item({":authorized": "authorized", ":cid": capture_id}))
    except ConditionFailed:
        pass


def _conditional_update(what: str, account_id: str, transaction_id: str, update: str, condition: str,
                        values: dict[str, Any], mine: Any) -> tuple[bool, dict[str, Any] | None]:
    """One conditional UpdateItem on a transaction: ``(True, item after)`` or ``(False, item before | None)``.

    ``mine(old)`` tells whether a failed condition met this very update already applied (an SDK retry of it
    after a lost answer): then it succeeded, and the item as it is now is its result.
    """
    try:
        with aws_errors(what):
            out = dynamodb().update_item(
                TableName=_table(), Key=to_item({"account_id": account_id, "transaction_id": transaction_id}),
                UpdateExpression=update, ConditionExpression=condition, ExpressionAttributeValues=to_item(values),
                ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ConditionFailed as exc:
        old = _old_item(exc)
        if old is not None and old.get("writer") == FENCE_WRITER:
            old = None
        if old is not None and mine(old):
            return True, old
        return False, old
    return True, from_item(out.get("Attributes"))


def refund_transaction(account_id: str, original_id: str, refund_id: str, amount_cents: int, now: int,
                       currency: str | None = None) -> tuple[bool, dict[str, Any] | None]:
    """Take ``amount_cents`` off what an approved SALE, CAPTURE or FORCE can still refund; one conditional
    UpdateItem.

    ``refundable_cents`` is written with the transaction and only ever decreased here, by a condition that it
    covers the amount: DynamoDB serialises conditional writes per item, so any number of concurrent refunds can
    never add up to more than the original amount, without a lock held across calls. The refund's id joins the
    ``refund_ids`` set in the same write; the condition refuses an id already there, so an SDK retry of an
    applied refund fails it and is recognised as this refund (``mine``) instead of refunding twice.
    Returns ``(True, item after)`` or ``(False, item before, or None when it does not exist)``.
    """
    values: dict[str, Any] = {":amt": amount_cents, ":zero": 0, ":now": now, ":rids": {refund_id}, ":rid": refund_id,
                              ":sale": "SALE", ":capture": "CAPTURE", ":force": "FORCE", ":yes": True}
    same_currency = ""
    if currency is not None:
        values[":cur"] = currency
        same_currency = " AND currency = :cur"
    return _conditional_update(
        "refund", account_id, original_id,
        "SET refundable_cents = refundable_cents - :amt, refunded_cents = if_not_exists(refunded_cents, :zero) + :amt,"
        " last_refund_at = :now ADD refund_ids :rids",
        "attribute_exists(transaction_id) AND transaction_type IN (:sale, :capture, :force) AND transaction_approved = :yes "
        "AND refundable_cents >= :amt AND attribute_not_exists(reversed_by) "
        "AND (attribute_not_exists(refund_ids) OR NOT contains(refund_ids, :rid))" + same_currency,
        values, lambda old: refund_id in (old.get("refund_ids") or ()))


def revert_refund(account_id: str, original_id: str, refund_id: str, amount_cents: int) -> None:
    """Give a refund's amount back when its own item was certainly not written (compensation; retry-safe: the
    condition needs the refund's id still in the set, which this same update removes)."""
    try:
        with aws_errors("refund revert"):
            dynamodb().update_item(
                TableName=_table(), Key=to_item({"account_id": account_id, "transaction_id": original_id}),
                UpdateExpression="SET refundable_cents = refundable_cents + :amt, refunded_cents = refunded_cents - :amt"
                                 " DELETE refund_ids :rids",
                ConditionExpression="contains(refund_ids, :rid)",
                ExpressionAttributeValues=to_item({":amt": amount_cents, ":rids": {refund_id}, ":rid": refund_id}))
    except ConditionFailed:
        pass


def reverse_transaction(account_id: str, original_id: str, reversal_id: str, now: int, amount_cents: int = 0,
                        settled_through: int = -1) -> tuple[bool, dict[str, Any] | None]:
    """Void an approved AUTHORIZATION not yet captured, or an approved SALE not yet settled nor refunded.

    One conditional UpdateItem that sets ``reversed_by``. A capture's condition needs ``auth_status``
    ``authorized`` and no ``reversed_by``, and this one needs ``authorized`` too: whichever of a capture and a
    reversal DynamoDB applies first makes the other's condition fail, so exactly one of them wins.
    ``amount_cents`` (when not 0) must be the transaction's amount; a SALE created at or before
    ``settled_through`` (the account's last batch cut, vaultcore.gateway.batches) is settled: refund it instead.
    """
    values: dict[str, Any] = {":rid": reversal_id, ":now": now, ":yes": True, ":auth": "AUTHORIZATION",
                              ":authorized": "authorized", ":sale": "SALE", ":cut": settled_through}
    same_amount = ""
    if amount_cents:
        values[":amt"] = amount_cents
        same_amount = " AND transaction_cents = :amt"
    return _conditional_update(
        "reversal", account_id, original_id, "SET reversed_by = :rid, reversed_at = :now",
        "attribute_exists(transaction_id) AND attribute_not_exists(reversed_by) AND transaction_approved = :yes AND ("
        "(transaction_type = :auth AND auth_status = :authorized) OR "
        "(transaction_type = :sale AND created_at > :cut AND attribute_not_exists(refund_ids)))"
        + same_amount, values,
        lambda old: old.get("reversed_by") == reversal_id)


def revert_reversal(account_id: str, original_id: str, reversal_id: str) -> None:
    """Undo :func:`reverse_transaction` when the reversal's own item was certainly not written."""
    try:
        with aws_errors("reversal revert"):
            dynamodb().update_item(
                TableName=_table(), Key=to_item({"account_id": account_id, "transaction_id": original_id}),
                UpdateExpression="REMOVE reversed_by, reversed_at", ConditionExpression="reversed_by = :rid",
                ExpressionAttributeValues=to_item({":rid": reversal_id}))
    except ConditionFailed:
        pass


def _void_mark(account_id: str, original_id: str, refund_id: str) -> dict[str, Any]:
    return {"TableName": _table(), "Key": to_item({"account_id": account_id, "transaction_id": original_id}),
            "UpdateExpression": "SET voided_by = :rid", "ConditionExpression": "contains(refund_ids, :rid)",
            "ExpressionAttributeValues": to_item({":rid": refund_id})}


def void_mark_entry(account_id: str, original_id: str, refund_id: str) -> dict[str, Any]:
    """The ``TransactWriteItems`` entry of :func:`mark_voided`, written with the VOID's own item (issue 28): the
    condition holds while the refund is applied, and setting the mark again (an SDK retry) is harmless."""
    return {"Update": _void_mark(account_id, original_id, refund_id)}


def mark_voided(account_id: str, original_id: str, refund_id: str) -> None:
    """Note that a refund voided the transaction (its RSAPI status becomes VOIDED); setting it twice is harmless.

    Alone only to repair a VOID recorded before the mark was written with it (a keyed replay does)."""
    with aws_errors("void mark"):
        dynamodb().update_item(**_void_mark(account_id, original_id, refund_id))


def take_allowance(account_id: str, key: str, limit: int, amount: int, taker: str) -> bool:
    """Take ``amount`` from a counter item of the account (``key``, e.g. a day's credits) that starts at
    ``limit``; False when less is left. The same conditional pattern as refunds: concurrent takers can never
    exceed the limit, and an SDK retry of an applied take is recognised by its ``taker`` id."""
    ok, _ = _conditional_update(
        "allowance", account_id, key,
        "SET remaining = if_not_exists(remaining, :limit) - :amt ADD takers :ids",
        "(attribute_not_exists(remaining) OR remaining >= :amt) AND "
        "(attribute_not_exists(takers) OR NOT contains(takers, :id))",
        {":limit": limit, ":amt": amount, ":ids": {taker}, ":id": taker},
        lambda old: taker in (old.get("takers") or ()))
    return ok


def _give_back(account_id: str, key: str, amount: int, taker: str) -> dict[str, Any]:
    return {"TableName": _table(), "Key": to_item({"account_id": account_id, "transaction_id": key}),
            "UpdateExpression": "SET remaining = remaining + :amt DELETE takers :ids",
            "ConditionExpression": "contains(takers, :id)",
            "ExpressionAttributeValues": to_item({":amt": amount, ":ids": {taker}, ":id": taker})}


def give_back_allowance(account_id: str, key: str, amount: int, taker: str) -> None:
    """Undo :func:`take_allowance` of ``taker`` (retry-safe: the condition needs the taker still in the set, which
    this same update removes; nothing to give back is not an error)."""
    try:
        with aws_errors("allowance give back"):
            dynamodb().update_item(**_give_back(account_id, key, amount, taker))
    except ConditionFailed:
        pass


def give_back_allowance_entry(account_id: str, key: str, amount: int, taker: str) -> dict[str, Any]:
    """:func:`give_back_allowance` as a ``TransactWriteItems`` entry, written with a declined CREDIT's own item
    (issue 28: declines take nothing). Its condition fails on a second application, which cancels an SDK retry
    of the whole transaction: that retry is then recognised by the item's writer."""
    return {"Update": _give_back(account_id, key, amount, taker)}


def unreturned_ach_returns(account_id: str, start: int, end: int) -> list[dict[str, Any]]:
    """ACH debits created in [start, end] that the sandbox bank returns and that are not returned yet."""
    kwargs: dict[str, Any] = {
        "TableName": _table(), "IndexName": "byCreatedAt", "ConsistentRead": True,
        "KeyConditionExpression": "account_id = :a AND created_at BETWEEN :s AND :e",
        "FilterExpression": "attribute_exists(ach_return_code) AND attribute_not_exists(ach_returned_at)",
        "ExpressionAttributeValues": to_item({":a": account_id, ":s": start, ":e": end}),
    }
    found: list[dict[str, Any]] = []
    while True:
        with aws_errors("transaction query"):
            out = dynamodb().query(**kwargs)
        found.extend(from_item(i) or {} for i in out.get("Items", []))
        if not out.get("LastEvaluatedKey"):
            return found
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def mark_ach_returned(account_id: str, transaction_id: str, now: int, writer: str,
                      outbox: dict[str, Any] | None) -> bool:
    """Record the bank's return of an ACH debit and, in the same transaction, its postback's outbox entry.

    False when it was returned already (by another settlement). Retry-aware by ``ach_returned_by``.
    """
    update = {"TableName": _table(), "Key": to_item({"account_id": account_id, "transaction_id": transaction_id}),
              "UpdateExpression": "SET ach_returned_at = :now, ach_returned_by = :w",
              "ConditionExpression": "attribute_not_exists(ach_returned_at) OR ach_returned_by = :w",
              "ExpressionAttributeValues": to_item({":now": now, ":w": writer})}
    try:
        with aws_errors("ach return"):
            if outbox is None:
                dynamodb().update_item(**update)
            else:
                from vaultcore.postback.deliveries import outbox_put

                dynamodb().transact_write_items(TransactItems=[{"Update": update}, {"Put": outbox_put(outbox, writer)}])
    except ConditionFailed:
        return False
    return True


def list_transactions(account_id: str, start: int, end: int, limit: int,
                      start_key: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Transactions created in [start, end] (unix seconds), newest first, one page through the LSI."""
    kwargs: dict[str, Any] = {
        "TableName": _table(), "IndexName": "byCreatedAt",
        "KeyConditionExpression": "account_id = :a AND created_at BETWEEN :s AND :e",
        "ExpressionAttributeValues": to_item({":a": account_id, ":s": start, ":e": end}),
        "ScanIndexForward": False, "Limit": limit,
    }
    if start_key:
        kwargs["ExclusiveStartKey"] = to_item({"account_id": account_id, **start_key})
    with aws_errors("transaction query"):
        out = dynamodb().query(**kwargs)
    items = [from_item(i) or {} for i in out.get("Items", [])]
    last = from_item(out.get("LastEvaluatedKey"))
    if last:
        last = {"transaction_id": last["transaction_id"], "created_at": last["created_at"]}
    return items, last or None
