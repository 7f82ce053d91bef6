"""Settlement batches (SETTLE-BATCH) and the status every transaction reports (issue 20).

A batch is a span of time, not a list of transactions: closing one is a single conditional write, whatever
the number of transactions in it. Each account has one item in the Transactions table under the sort key
``BATCHES`` (never a transaction id: those are 12 digits; it has no ``created_at``, so the reporting index never
lists it)::

    {"account_id": ..., "transaction_id": "BATCHES", "cuts": [<unix s>, ...], "settled_by": <request id>}

``cuts[i]`` is when batch ``i + 1`` closed. A transaction belongs to the first batch whose cut is at or after
its ``created_at`` (so a transaction created in the second a batch closes belongs to that batch), or to the
open batch ``len(cuts) + 1``. Settled means its batch is closed.

Statuses (RSAPI ``status``), from the item and the cuts:

====================  ==========================================================================
``DECLINED``          not approved
``VOIDED``            reversed, or refunded in full by one refund before its batch closed (VOID)
``REFUNDED``          refunded in part or in full (``refunded_amount``)
``RETURNED``          an ACH debit the bank returned (``ach_return_code``, e.g. R01)
``CAPTURED``          an authorization that was captured
``PENDING``           an ACH debit whose batch is open
``SETTLED``           an approved sale, capture, credit, force or ACH debit whose batch closed
``APPROVED``          anything else approved (an open authorization, a refund, a reversal, a store)
====================  ==========================================================================
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["BATCH_KEY", "Batches", "load", "close_open_batch", "status_of", "SETTLING_TYPES"]

BATCH_KEY = "BATCHES"
#: What a closed batch settles (the others are references to transactions, or hold no funds).
SETTLING_TYPES = ("SALE", "CAPTURE", "CREDIT", "FORCE")


@dataclass(frozen=True)
class Batches:
    cuts: tuple[int, ...] = ()

    @property
    def open_batch(self) -> int:
        return len(self.cuts) + 1

    @property
    def last_cut(self) -> int:
        return self.cuts[-1] if self.cuts else -1

    def batch_of(self, created_at: int) -> int:
        return bisect.bisect_left(self.cuts, created_at) + 1

    def settled(self, created_at: int) -> bool:
        return created_at <= self.last_cut

    def span(self, batch: int) -> tuple[int, int] | None:
        """``[start, end]`` of created_at values in ``batch`` (the open batch ends now, at most), or None."""
        if not 1 <= batch <= self.open_batch:
            return None
        start = self.cuts[batch - 2] + 1 if batch >= 2 else 0
        end = self.cuts[batch - 1] if batch <= len(self.cuts) else 2**40
        return start, end


def _table() -> str:
    return settings().transactions_table


def load(account_id: str) -> Batches:
    """The account's batches: one consistent GetItem (read where a decision depends on them), through the
    store's key handling (the item is on shard 0 of the account: vaultcore.gateway.store.shard_of)."""
    from vaultcore.gateway import store

    item = store.get_transaction(account_id, BATCH_KEY, consistent=True) or {}
    return Batches(tuple(int(c) for c in item.get("cuts") or ()))


def close_open_batch(account_id: str, now: int, writer: str) -> tuple[int, Batches]:
    """Close the open batch at ``now``; returns (the closed batch's number, the batches after).

    One UpdateItem that appends the cut. Its condition refuses a second application of the same request (an SDK
    retry after a lost answer), which is then recognised by ``settled_by`` and answered from the item as it is.
    """
    from vaultcore.gateway import store

    try:
        with aws_errors("batch settlement"):
            out = dynamodb().update_item(
                TableName=_table(), Key=store.key_for_write(account_id, BATCH_KEY),
                # account_id: the key is now pk (issue 29); the item keeps the attribute as every item does
                UpdateExpression="SET cuts = list_append(if_not_exists(cuts, :empty), :cut), settled_by = :w,"
                                 " account_id = :a",
                ConditionExpression="attribute_not_exists(settled_by) OR settled_by <> :w",
                ExpressionAttributeValues=to_item({":empty": [], ":cut": [now], ":w": writer, ":a": account_id}),
                ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD")
        item = from_item(out.get("Attributes")) or {}
    except ConditionFailed as exc:
        item = from_item(getattr(exc.__cause__, "response", {}).get("Item")) or {}  # ours, applied already
    batches = Batches(tuple(int(c) for c in item.get("cuts") or ()))
    return len(batches.cuts), batches


def status_of(item: dict[str, Any], batches: Batches) -> str:
    if not item.get("transaction_approved"):
        return "DECLINED"
    if item.get("reversed_by") or item.get("voided_by"):
        return "VOIDED"
    if int(item.get("refunded_cents") or 0) > 0:
        return "REFUNDED"
    if item.get("ach_returned_at"):
        return "RETURNED"
    ttype = item.get("transaction_type")
    if ttype == "AUTHORIZATION":
        return "CAPTURED" if item.get("auth_status") == "captured" else "APPROVED"
    settled = batches.settled(int(item.get("created_at") or 0))
    if item.get("tender_type") == "ACH" and ttype == "SALE":
        return "SETTLED" if settled else "PENDING"
    if ttype in SETTLING_TYPES and settled:
        return "SETTLED"
    return "APPROVED"
