"""DynamoDB adapter of the gateway: the Transactions table (``pk`` = ``<account_id>#<shard>``, transaction_id;
GSI ``byShardCreated``).

Keys (issue 29): one merchant's transactions are spread over :func:`shard_count` partition keys. The shard of a
transaction id is a hash of the id modulo the count, so a read by account and id is still one GetItem, and a
busy merchant's writes (and their index entries) land on as many partition keys as there are shards. Account
items that are not transactions (the ``BATCHES`` item, the daily ``CREDITS#...`` counters) live on shard 0 whatever
the count, so raising it never moves them. Every item keeps ``account_id`` and ``transaction_id`` as attributes;
``pk`` and ``created_key`` (``<created_at, 12 digits>#<transaction_id>``, the index's sort key, written only on
items with a ``created_at``: fences and counters stay out of the index) are added here on the way in and removed
on the way out, so the rest of the code never sees them. The listing reads every shard and merges newest first on
``created_key``, a total order (ties of ``created_at`` by transaction id, descending, as the old LSI returned them).

Raising the count (``TRANSACTION_SHARDS``): new items go to the new count's shard; items already written stay
where they are. ``TRANSACTION_SHARDS_BEFORE`` lists the counts used before, so that a read by id that misses the
current shard tries the shard the id had under each earlier count (and remembers where it found it), a new id is
checked against those shards before it is written, and listings read every shard below the largest count.

Migration from the table of the LSI design (docs/operators/transactions-migration.md): while
``TRANSACTIONS_LEGACY_TABLE`` names it, a read that misses this table reads that one, listings merge its index in,
and an item of it is copied here (conditional put, never over an item already here) before it is first changed.
Remove the variable once ``python -m vaultcore.gateway.migrate`` has copied everything: every such branch is
behind :func:`legacy_table`.

A transaction item holds what the reporting interface returns and nothing more sensitive: last four digits,
brand, expiry month, authorization data, amounts, the bfid and the token fields (PCI DSS 3.3: no CVV or track
data after authorization; 3.5: no full PAN or bank account number). The clear values of a payment live only in
the memory of the request that processes it.

Every conditional write here knows its own retries (issue 18). An SDK retries a write whose answer was lost
after DynamoDB applied it; a plain ``attribute_not_exists`` condition then fails against the request's own first
write. So each written item carries its writer's identity (``writer``, random per request), the condition
accepts the same writer, and a failed condition is resolved by reading the item back, never by guessing:

* :func:`record_transaction` writes the transaction (flagged for its postback: the Transactions stream is the
  outbox, ``vaultcore.gateway.postbacks``) and, when given, other entries or a Deliveries outbox entry, in one
  ``TransactWriteItems`` (the client fills ``ClientRequestToken`` once per call, so DynamoDB itself also
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

import hashlib
import heapq
import itertools
import os
import random
import time
from collections.abc import Iterator
from typing import Any

from vaultcore.errors import DependencyError
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


# ------------------------------------------------------------------------------------------------ keys (issue 29)
#: The index of the listings: HASH ``pk`` (the spread key), RANGE ``created_key``; projection ALL.
INDEX = "byShardCreated"
#: The LSI of the table of the previous design (read only while migrating from it).
LEGACY_INDEX = "byCreatedAt"
#: The template's default of ``TransactionShards``: docs/operators/capacity.md "Transactions: the shard count".
DEFAULT_SHARDS = 32
MAX_SHARDS = 1024
_ADDED = ("pk", "created_key")


def _counts(text: str, name: str) -> list[int]:
    counts = [int(t) for t in text.replace(" ", "").split(",") if t]
    if any(not 1 <= c <= MAX_SHARDS for c in counts):
        raise RuntimeError(f"{name} must be shard counts from 1 to {MAX_SHARDS}")
    return counts


def shard_count() -> int:
    """The shard count new items are written with (``TRANSACTION_SHARDS``; read at each call: an env lookup)."""
    counts = _counts(os.environ.get("TRANSACTION_SHARDS", str(DEFAULT_SHARDS)), "TRANSACTION_SHARDS")
    if len(counts) != 1:
        raise RuntimeError("TRANSACTION_SHARDS must be one shard count")
    return counts[0]


def earlier_shard_counts() -> list[int]:
    """The counts items were written with before the current one (``TRANSACTION_SHARDS_BEFORE``, e.g. ``"32"``)."""
    return _counts(os.environ.get("TRANSACTION_SHARDS_BEFORE", ""), "TRANSACTION_SHARDS_BEFORE")


def listing_shards() -> range:
    """Every shard that may hold items: below the largest count ever used."""
    return range(max([shard_count(), *earlier_shard_counts()]))


def legacy_table() -> str | None:
    """The previous design's table while migrating from it (``TRANSACTIONS_LEGACY_TABLE``), else None."""
    return os.environ.get("TRANSACTIONS_LEGACY_TABLE") or None


def _is_transaction_id(transaction_id: str) -> bool:
    return len(transaction_id) == 12 and transaction_id.isdigit()


def shard_of(transaction_id: str, count: int) -> int:
    """The shard of an id under ``count`` shards: a stable hash (the same in every process and release).

    Account items that are not transactions (``BATCHES``, ``CREDITS#<day>``) are on shard 0 under any count.
    """
    if not _is_transaction_id(transaction_id):
        return 0
    digest = hashlib.sha256(transaction_id.encode("ascii")).digest()
    return int.from_bytes(digest[:8], "big") % count


def _candidates(transaction_id: str) -> list[int]:
    """Where an item of this id can be: its shard under the current count first, then under earlier ones."""
    out: list[int] = []
    for count in (shard_count(), *earlier_shard_counts()):
        shard = shard_of(transaction_id, count)
        if shard not in out:
            out.append(shard)
    return out


def partition_key(account_id: str, shard: int) -> str:
    return f"{account_id}#{shard}"


def created_key(created_at: int, transaction_id: str) -> str:
    """The index's sort key: creation time, then id (a total order; zero-padded so text order is time order)."""
    return f"{int(created_at):012d}#{transaction_id}"


def _key(account_id: str, transaction_id: str, shard: int | None = None) -> dict[str, Any]:
    if shard is None:
        shard = shard_of(transaction_id, shard_count())
    return to_item({"pk": partition_key(account_id, shard), "transaction_id": transaction_id})


def stored_form(item: dict[str, Any], shard: int | None = None) -> dict[str, Any]:
    """``item`` with its key attributes (``pk``; ``created_key`` when it has a ``created_at``)."""
    out = dict(item)
    tid = str(item["transaction_id"])
    out["pk"] = partition_key(item["account_id"], shard_of(tid, shard_count()) if shard is None else shard)
    if item.get("created_at") is not None:
        out["created_key"] = created_key(item["created_at"], tid)
    return out


#: Where ids read or written by this container were found, (account, id) -> shard: an item never moves between
#: shards, so an entry never goes stale. Bounded; only consulted when an id has more than one candidate shard.
_located: dict[tuple[str, str], int] = {}
_LOCATED_MAX = 20_000


def reset_caches() -> None:
    _located.clear()


def _remember(account_id: str, transaction_id: str, pk: str | None) -> None:
    if not pk or len(_candidates(transaction_id)) == 1:
        return
    if len(_located) >= _LOCATED_MAX:
        _located.clear()
    _located[(account_id, transaction_id)] = int(pk.rsplit("#", 1)[1])


def _public(raw: dict[str, Any] | None) -> dict[str, Any] | None:
    """An item as the rest of the code knows it: without the key attributes added here (remembered instead)."""
    item = from_item(raw)
    if item is None:
        return None
    if "pk" in item:
        _remember(str(item.get("account_id")), str(item.get("transaction_id")), item["pk"])
    for name in _ADDED:
        item.pop(name, None)
    return item


def _get_at(account_id: str, transaction_id: str, shard: int, consistent: bool) -> dict[str, Any] | None:
    with aws_errors("transaction read"):
        out = dynamodb().get_item(TableName=_table(), Key=_key(account_id, transaction_id, shard),
                                  ConsistentRead=consistent)
    return _public(out.get("Item"))


def _get_legacy(account_id: str, transaction_id: str, consistent: bool) -> dict[str, Any] | None:
    legacy = legacy_table()
    if legacy is None:
        return None
    with aws_errors("transaction read"):
        out = dynamodb().get_item(TableName=legacy, ConsistentRead=consistent,
                                  Key=to_item({"account_id": account_id, "transaction_id": transaction_id}))
    return _public(out.get("Item"))


def _find(account_id: str, transaction_id: str, consistent: bool) -> tuple[int | None, dict[str, Any] | None]:
    """(shard, item) of the stored item in this table, trying the remembered shard, then every candidate."""
    order = _candidates(transaction_id)
    known = _located.get((account_id, transaction_id))
    if known is not None and known in order:
        order = [known] + [s for s in order if s != known]
    for shard in order:
        item = _get_at(account_id, transaction_id, shard, consistent)
        if item is not None:
            return shard, item
    return None, None


def _adopt(account_id: str, transaction_id: str) -> int | None:
    """Migration: copy the legacy table's item of this id here (never over one already here); its shard."""
    item = _get_legacy(account_id, transaction_id, consistent=True)
    if item is None:
        return None
    shard = shard_of(transaction_id, shard_count())
    try:
        with aws_errors("transaction copy"):
            dynamodb().put_item(TableName=_table(), Item=to_item(stored_form(item, shard)),
                                ConditionExpression="attribute_not_exists(transaction_id)")
    except ConditionFailed:
        pass  # copied already (by another request or the backfill): that copy, and what changed it since, wins
    return shard


def _locate(account_id: str, transaction_id: str) -> int | None:
    """The shard that holds the item of this id (copying it from the legacy table first if only there)."""
    shard, _ = _find(account_id, transaction_id, consistent=True)
    if shard is None and legacy_table() is not None:
        shard = _adopt(account_id, transaction_id)
    return shard


def _resolve(account_id: str, transaction_id: str) -> int:
    """The shard a write of this id goes to: where its item is, or the current count's shard when it has none.

    No read when the id has one candidate shard and no legacy table is named (the normal case), or when this
    container remembers where the id is.
    """
    candidates = _candidates(transaction_id)
    known = _located.get((account_id, transaction_id))
    if known is not None:
        return known
    if len(candidates) == 1 and legacy_table() is None:
        return candidates[0]
    shard = _locate(account_id, transaction_id)
    return candidates[0] if shard is None else shard


def key_for_write(account_id: str, transaction_id: str) -> dict[str, Any]:
    """The DynamoDB key of an update of this id (vaultcore.gateway.batches; see :func:`_resolve`)."""
    return _key(account_id, transaction_id, _resolve(account_id, transaction_id))


def _taken_elsewhere(account_id: str, transaction_id: str) -> bool:
    """A new id's item under an earlier shard count, or in the legacy table: the id is taken (a collision).

    The conditional put only sees the id's current shard; items written before a raise of the count, or not yet
    copied from the legacy table, are looked for here (no read in the normal case).
    """
    for shard in _candidates(transaction_id)[1:]:
        if _get_at(account_id, transaction_id, shard, consistent=False) is not None:
            return True
    return _get_legacy(account_id, transaction_id, consistent=False) is not None


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
    One round trip: PutItem, or TransactWriteItems when there is an outbox entry or ``also`` (plus the reads of
    :func:`_taken_elsewhere` after a raise of the shard count or while migrating).
    """

    item = {**item, "writer": writer}
    values = to_item({":w": writer})
    try:
        if _taken_elsewhere(item["account_id"], item["transaction_id"]):
            return Recorded.NOT_WRITTEN  # checked before writing: nothing of this request can land
    except DependencyError:
        return Recorded.NOT_WRITTEN
    stored = to_item(stored_form(item))
    try:
        with aws_errors("transaction write"):
            if outbox is None and not also:
                dynamodb().put_item(TableName=_table(), Item=stored, ConditionExpression=_NEW_OR_MINE,
                                    ExpressionAttributeValues=values)
            else:
                entries: list[dict[str, Any]] = [
                    {"Put": {"TableName": _table(), "Item": stored, "ConditionExpression": _NEW_OR_MINE,
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

    One conditional PutItem of a fence item on the id's current shard, where this request's own write went
    (no ``created_at``, so the reporting index never lists it; reads
    through :func:`get_transaction` see no transaction): a write still in flight for this id then fails its
    condition. When the key is taken, one consistent GetItem says by what. DependencyError: cannot tell now.
    """
    try:
        with aws_errors("transaction fence"):
            dynamodb().put_item(
                TableName=_table(), ConditionExpression="attribute_not_exists(transaction_id)",
                Item=to_item(stored_form({"account_id": account_id, "transaction_id": transaction_id,
                                          "writer": FENCE_WRITER})))
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
    """The stored transaction; a fence (a transaction id whose write was settled as never made) reads as None.

    One GetItem on the id's shard; more only for an id that is not there (earlier shard counts, the legacy table).
    """
    _, item = _find(account_id, transaction_id, consistent)
    if item is None:
        item = _get_legacy(account_id, transaction_id, consistent)
    if item is not None and item.get("writer") == FENCE_WRITER and not include_fences:
        return None
    return item


def _old_item(exc: ConditionFailed) -> dict[str, Any] | None:
    cause = exc.__cause__
    item = getattr(cause, "response", {}).get("Item") if cause is not None else None
    return _public(item) if item else None


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
                TableName=_table(), Key=key_for_write(account_id, authorization_id),
                UpdateExpression="SET auth_status = :authorized REMOVE captured_by, captured_cents, captured_at",
                ConditionExpression="captured_by = :cid",
                ExpressionAttributeValues=to_item({":authorized": "authorized", ":cid": capture_id}))
    except ConditionFailed:
        pass


def _conditional_update(what: str, account_id: str, transaction_id: str, update: str, condition: str,
                        values: dict[str, Any], mine: Any, shard: int | None = None
                        ) -> tuple[bool, dict[str, Any] | None]:
    """One conditional UpdateItem on a transaction: ``(True, item after)`` or ``(False, item before | None)``.

    ``mine(old)`` tells whether a failed condition met this very update already applied (an SDK retry of it
    after a lost answer): then it succeeded, and the item as it is now is its result.
    The update goes to ``shard``, or to where the id is remembered, or to its current shard; a condition that
    fails on no item there (conditions here need the item) looks for it elsewhere only when there is an
    elsewhere (an earlier shard count, the legacy table), and applies the update once more where it is.
    """
    def attempt(at: int) -> tuple[bool, dict[str, Any] | None, bool]:
        try:
            with aws_errors(what):
                out = dynamodb().update_item(
                    TableName=_table(), Key=_key(account_id, transaction_id, at), UpdateExpression=update,
                    ConditionExpression=condition, ExpressionAttributeValues=to_item(values),
                    ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ConditionFailed as exc:
            raw = _old_item(exc)
            return False, raw, raw is None
        return True, _public(out.get("Attributes")), False

    first = shard if shard is not None else _located.get((account_id, transaction_id),
                                                          shard_of(transaction_id, shard_count()))
    ok, old, missing = attempt(first)
    if missing and shard is None and (len(_candidates(transaction_id)) > 1 or legacy_table() is not None):
        found = _locate(account_id, transaction_id)
        if found is not None:
            ok, old, missing = attempt(found)
    if ok:
        return True, old
    if old is not None and old.get("writer") == FENCE_WRITER:
        old = None
    if old is not None and mine(old):
        return True, old
    return False, old


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
                TableName=_table(), Key=key_for_write(account_id, original_id),
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
                TableName=_table(), Key=key_for_write(account_id, original_id),
                UpdateExpression="REMOVE reversed_by, reversed_at", ConditionExpression="reversed_by = :rid",
                ExpressionAttributeValues=to_item({":rid": reversal_id}))
    except ConditionFailed:
        pass


def _void_mark(account_id: str, original_id: str, refund_id: str) -> dict[str, Any]:
    return {"TableName": _table(), "Key": key_for_write(account_id, original_id),
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
        "SET remaining = if_not_exists(remaining, :limit) - :amt, account_id = :a ADD takers :ids",
        "(attribute_not_exists(remaining) OR remaining >= :amt) AND "
        "(attribute_not_exists(takers) OR NOT contains(takers, :id))",
        {":limit": limit, ":amt": amount, ":ids": {taker}, ":id": taker, ":a": account_id},
        lambda old: taker in (old.get("takers") or ()),
        shard=_resolve(account_id, key))  # the counter is created here when missing: find (or copy) it first
    return ok


def _give_back(account_id: str, key: str, amount: int, taker: str) -> dict[str, Any]:
    return {"TableName": _table(), "Key": key_for_write(account_id, key),
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


def _query_all(kwargs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    while True:
        with aws_errors("transaction query"):
            out = dynamodb().query(**kwargs)
        yield from out.get("Items", [])
        if not out.get("LastEvaluatedKey"):
            return
        kwargs = {**kwargs, "ExclusiveStartKey": out["LastEvaluatedKey"]}


def unreturned_ach_returns(account_id: str, start: int, end: int) -> list[dict[str, Any]]:
    """ACH debits created in [start, end] that the sandbox bank returns and that are not returned yet.

    Every shard's index (and the legacy table's while migrating). A global index is read eventually consistent
    only: the settlement asks after its cut second has passed (service._settle_batch), and an index entry trails
    its item by well under that second in DynamoDB's normal operation.
    """
    found: dict[str, dict[str, Any]] = {}
    condition = "attribute_exists(ach_return_code) AND attribute_not_exists(ach_returned_at)"
    for shard in listing_shards():
        for raw in _query_all({
                "TableName": _table(), "IndexName": INDEX,
                "KeyConditionExpression": "pk = :p AND created_key BETWEEN :s AND :e", "FilterExpression": condition,
                "ExpressionAttributeValues": to_item({":p": partition_key(account_id, shard),
                                                      ":s": created_key(start, ""), ":e": created_key(end, "~")})}):
            item = _public(raw) or {}
            found[item["transaction_id"]] = item
    legacy = legacy_table()
    if legacy is not None:
        for raw in _query_all({
                "TableName": legacy, "IndexName": LEGACY_INDEX, "ConsistentRead": True,
                "KeyConditionExpression": "account_id = :a AND created_at BETWEEN :s AND :e",
                "FilterExpression": condition, "ExpressionAttributeValues": to_item({":a": account_id, ":s": start,
                                                                                     ":e": end})}):
            item = _public(raw) or {}
            found.setdefault(item["transaction_id"], item)  # a copy here is newer than the legacy item
    return sorted(found.values(), key=lambda i: created_key(i["created_at"], i["transaction_id"]))


def mark_ach_returned(account_id: str, transaction_id: str, now: int, writer: str,
                      outbox: dict[str, Any] | None, also: list[dict[str, Any]] | None = None) -> bool:
    """Record the bank's return of an ACH debit and, in the same transaction, its postback's outbox entry and
    ``also`` (its webhook endpoints' deliveries: TransactWriteItems entries).

    False when it was returned already (by another settlement). Retry-aware by ``ach_returned_by``.
    """
    update = {"TableName": _table(), "Key": key_for_write(account_id, transaction_id),
              "UpdateExpression": "SET ach_returned_at = :now, ach_returned_by = :w",
              "ConditionExpression": "attribute_not_exists(ach_returned_at) OR ach_returned_by = :w",
              "ExpressionAttributeValues": to_item({":now": now, ":w": writer})}
    try:
        with aws_errors("ach return"):
            if outbox is None and not also:
                dynamodb().update_item(**update)
            else:
                from vaultcore.postback.deliveries import outbox_put

                entries: list[dict[str, Any]] = [{"Update": update}, *(also or ())]
                if outbox is not None:
                    entries.append({"Put": outbox_put(outbox, writer)})
                dynamodb().transact_write_items(TransactItems=entries)
    except ConditionFailed:
        return False
    return True


def _shard_stream(account_id: str, shard: int, low: str, high: str, chunk: int,
                  first: tuple[list[dict[str, Any]], Any] | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    """One shard's items with ``low <= created_key < high``, newest first, fetched ``chunk`` at a time on demand.

    ``first``: the first page, when it was fetched already (in parallel with the other shards').
    """
    kwargs = _shard_query(account_id, shard, low, high, chunk)
    while True:
        if first is not None:
            out, first = {"Items": first[0], "LastEvaluatedKey": first[1]}, None
        else:
            out = _query_page(kwargs)
        for raw in out["Items"]:
            key = raw["created_key"]["S"]
            if key < high:
                yield key, raw
        if not out.get("LastEvaluatedKey"):
            return
        kwargs = {**kwargs, "ExclusiveStartKey": out["LastEvaluatedKey"]}


def _shard_query(account_id: str, shard: int, low: str, high: str, chunk: int) -> dict[str, Any]:
    return {"TableName": _table(), "IndexName": INDEX, "ScanIndexForward": False, "Limit": chunk,
            # BETWEEN is inclusive: the item at ``high`` itself (the previous page's last) is dropped by the caller
            "KeyConditionExpression": "pk = :p AND created_key BETWEEN :l AND :h",
            "ExpressionAttributeValues": to_item({":p": partition_key(account_id, shard), ":l": low, ":h": high})}


#: Attempts of one shard's query page, each with the SDK's own retries inside. A listing page reads every shard,
#: so one read failing after the SDK's retries would fail the page once per shard count as often as a single read
#: (32 shards: a 3% failure of a read becomes 60% of a page); a query is idempotent, so it is asked again.
QUERY_ATTEMPTS = 3
_QUERY_BACKOFF_SECONDS = (0.05, 0.2)


def _query_page(kwargs: dict[str, Any]) -> dict[str, Any]:
    for attempt in range(QUERY_ATTEMPTS):
        try:
            with aws_errors("transaction query"):
                out = dynamodb().query(**kwargs)
            break
        except DependencyError:
            if attempt == QUERY_ATTEMPTS - 1:
                raise
            time.sleep(_QUERY_BACKOFF_SECONDS[attempt] * (0.5 + random.random()))  # noqa: S311 - jitter only
    return {"Items": out.get("Items", []), "LastEvaluatedKey": out.get("LastEvaluatedKey")}


def _legacy_stream(table: str, account_id: str, start: int, end: int, high: str, chunk: int
                   ) -> Iterator[tuple[str, dict[str, Any]]]:
    """Migration: the legacy table's LSI as one more sorted stream (created_key order, ``< high``).

    The LSI orders by ``created_at`` only; the items of one second are held back until the next page shows the
    second is complete, and released in ``created_key`` order.
    """
    kwargs: dict[str, Any] = {
        "TableName": table, "IndexName": LEGACY_INDEX, "ScanIndexForward": False, "Limit": chunk,
        "KeyConditionExpression": "account_id = :a AND created_at BETWEEN :s AND :e",
        "ExpressionAttributeValues": to_item({":a": account_id, ":s": start,
                                              ":e": min(end, int(high.split("#")[0]))})}
    held: list[tuple[str, dict[str, Any]]] = []
    while True:
        out = _query_page(kwargs)
        for raw in out["Items"]:
            item = from_item(raw) or {}
            key = created_key(item["created_at"], str(item["transaction_id"]))
            if key < high:
                held.append((key, raw))
        last = out.get("LastEvaluatedKey")
        if not last:
            yield from sorted(held, key=lambda kv: kv[0], reverse=True)
            return
        boundary = int(from_item(last)["created_at"])
        ready = sorted((kv for kv in held if int(kv[0].split("#")[0]) > boundary), key=lambda kv: kv[0],
                       reverse=True)
        held = [kv for kv in held if int(kv[0].split("#")[0]) <= boundary]
        yield from ready
        kwargs = {**kwargs, "ExclusiveStartKey": last}


def list_transactions(account_id: str, start: int, end: int, limit: int,
                      start_key: dict[str, Any] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Transactions created in [start, end] (unix seconds), newest first: one page, merged from every shard.

    ``start_key`` (``transaction_id``, ``created_at``: the last item of the previous page) is a position in the
    total order ``created_key``, so it says where to continue in every shard at once, whatever the shard count
    was when the previous page was read. Each shard's index is queried with a first page sized for its share of
    ``limit`` (all shards in parallel), then lazily; the merge stops after ``limit + 1`` items: the extra one only
    says whether there is a next page. Returns (items, the position of the last one when more follow, else None).
    """
    low = created_key(start, "")
    high = created_key(end, "~")  # "~" sorts after every digit: the whole of the end second
    if start_key:
        position = created_key(int(start_key["created_at"]), str(start_key["transaction_id"]))
        high = min(high, position)
    shards = list(listing_shards())
    # Each shard's expected share of a page, twice over: most pages then need one query per shard.
    chunk = min(limit + 1, 2 * (limit + 1) // len(shards) + 2)

    # imported here: only the reporting function lists, and the gateway's cold start need not load it
    from concurrent.futures import ThreadPoolExecutor

    def first_page(shard: int) -> tuple[list[dict[str, Any]], Any]:
        out = _query_page(_shard_query(account_id, shard, low, high, chunk))
        return out["Items"], out["LastEvaluatedKey"]

    with ThreadPoolExecutor(max_workers=min(16, len(shards))) as pool:
        firsts = list(pool.map(first_page, shards))
    streams = [_shard_stream(account_id, shard, low, high, chunk, page)
               for shard, page in zip(shards, firsts, strict=True)]
    legacy = legacy_table()
    if legacy is not None:
        streams.append(_legacy_stream(legacy, account_id, start, end, high, chunk))
    merged = heapq.merge(*streams, key=lambda kv: kv[0], reverse=True)
    items = [_public(raw) or {} for _, raw in itertools.islice(_distinct(merged), limit + 1)]
    more = len(items) > limit
    items = items[:limit]
    if not more:
        return items, None
    return items, {"transaction_id": items[-1]["transaction_id"], "created_at": items[-1]["created_at"]}


def _distinct(merged: Iterator[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Drop repeats of a key: while migrating, a transaction already copied here is in the legacy table too;
    this table's copy (changed since, maybe) comes first in the merge (heapq.merge keeps the order of its inputs
    for equal keys, and the legacy stream is the last input) and is the one kept."""
    last = None
    for key, raw in merged:
        if key != last:
            yield key, raw
        last = key
