"""A QSAPI request that charges a ``payments/init`` id: the two checks the gateway makes (issue 31).

The original's init "pre-fetches a transactionId" that the merchant then uses to process the payment, so that a
lost answer can be looked up by an id known beforehand (its v4 guide, "Initializing a transaction"; its 3.8 SDK's
``TransactionRequest.TransactionID``: "use the value returned by the Initiate call"). The QSAPI variable is
``transaction_id`` (docs/integrators/v4-payments.md): the transaction is recorded under that id, and the
gateway's conditional write of a new transaction id makes the id charge at most once.

Cost: nothing for a request without ``transaction_id`` (no read, no write: the SALE's write cost is unchanged);
with one, a consistent GetItem of the meta item (Registry) and one of the transaction (its shard).

Kept light (no import of the gateway's service): ``vaultcore.gateway.service`` imports it.
"""

from __future__ import annotations

from vaultcore.gateway import store
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.store import registry

__all__ = ["META_SK", "meta_pk", "reserved", "check_unused"]

META_SK = "META"


def meta_pk(account_id: str, transaction_id: str) -> str:
    """The meta item's partition key: one per transaction, so its writes spread like the transactions' own ids
    (issue 29: no constant, per-merchant or time-ordered key; tests/unit/test_capacity_keys.py)."""
    return f"PAYMETA#{account_id}#{transaction_id}"


def reserved(account_id: str, init_id: str | None) -> str | None:
    """``init_id`` when it names a ``payments/init`` of this account (230 otherwise); None without one."""
    if init_id is None:
        return None
    item = registry.get(meta_pk(account_id, init_id), META_SK, consistent=True)
    if item is None or not item.get("initialized"):
        raise GatewayError(E.INIT_ID)  # another account's id reads as an unknown one
    return init_id


def check_unused(account_id: str, init_id: str | None) -> None:
    """231 when a transaction (or a fence, an attempt settled as never made) already holds ``init_id``: an init
    id is charged once. Checked after the idempotency claim, so that a keyed retry of the charge replays it."""
    if init_id is not None and store.get_transaction(account_id, init_id, consistent=True,
                                                     include_fences=True) is not None:
        raise GatewayError(E.INIT_USED)
