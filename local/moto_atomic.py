"""DynamoDB's per-item atomicity, which moto lacks: its conditional writes check, then write, with no lock.

DynamoDB applies each write (condition check included) atomically, and a TransactWriteItems as one unit; every
exactly-once guarantee of the platform (conditional puts of nonces and idempotency claims, the capture
update, the postback claim) rests on that. moto evaluates the condition and applies the write in separate
steps, so two threads of one moto process can both pass the same condition, which real DynamoDB never allows.
:func:`install` serialises moto's DynamoDB write operations (and the reads, so none sees half a transaction)
behind one lock per process: a model of DynamoDB's semantics at the AWS boundary, not a change of the code
under test. The local runner and the in-process test fixtures install it; tests that start their own moto
server call it too.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

__all__ = ["install"]

_LOCK = threading.RLock()
# BatchWriteItem reaches the backend as put_item/delete_item per item (moto/dynamodb/responses.py).
_OPERATIONS = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item")


def install() -> None:
    """Idempotent: wraps moto's DynamoDBBackend write and read methods with the process-wide lock."""
    from moto.dynamodb.models import DynamoDBBackend

    for name in _OPERATIONS:
        method = getattr(DynamoDBBackend, name, None)
        if method is None or getattr(method, "_vault_atomic", False):
            continue

        def wrapper(self: Any, *args: Any, __method: Any = method, **kwargs: Any) -> Any:
            with _LOCK:
                return __method(self, *args, **kwargs)

        functools.update_wrapper(wrapper, method)
        wrapper._vault_atomic = True  # type: ignore[attr-defined]
        setattr(DynamoDBBackend, name, wrapper)
