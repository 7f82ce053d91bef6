"""DynamoDB's per-item atomicity, which moto lacks: its conditional writes check, then write, with no lock.

DynamoDB applies each write (condition check included) atomically, and a TransactWriteItems as one unit; every
exactly-once guarantee of the platform (conditional puts of nonces and idempotency claims, the capture
update, the postback claim) rests on that. moto evaluates the condition and applies the write in separate
steps, so two threads of one moto process can both pass the same condition, which real DynamoDB never allows.
:func:`install` serialises moto's DynamoDB write operations (and the reads, so none sees half a transaction),
and their request handlers, behind one lock per process: a model of DynamoDB's semantics at the AWS boundary, not a change of the code
under test. The local runner and the in-process test fixtures install it; tests that start their own moto
server call it too.

It also gives moto's SQS FIFO queues their deduplication interval: SQS drops a message whose deduplication id
was sent in the last 5 minutes, whether or not the first message is still in the queue ("any messages sent with
the same message deduplication ID are accepted successfully but aren't delivered during the 5-minute
deduplication interval", the SQS Developer Guide, "Using the message deduplication ID"). moto compares only with
the messages it still holds, so a copy sent after the first was received and deleted is queued again. The
postback queue's exactly-once argument (vaultcore.postback.sender) uses the interval as SQS defines it.
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
    """Idempotent: wraps moto's DynamoDBBackend write and read methods with the process-wide lock, and gives its
    SQS FIFO queues the 5-minute deduplication interval."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler

    _install_fifo_deduplication()

    # The request handlers too: moto's UpdateItem handler deep-copies the stored item (for its return values)
    # outside the backend's call, and a concurrent write changing that item's attributes meanwhile made the copy
    # fail ("dictionary changed size during iteration": a 500 DynamoDB never answers).
    for owner, names in ((DynamoDBBackend, _OPERATIONS), (DynamoHandler, (*_OPERATIONS, "batch_write_item"))):
        for name in names:
            method = getattr(owner, name, None)
            if method is None or getattr(method, "_vault_atomic", False):
                continue

            def wrapper(self: Any, *args: Any, __method: Any = method, **kwargs: Any) -> Any:
                with _LOCK:
                    return __method(self, *args, **kwargs)

            functools.update_wrapper(wrapper, method)
            wrapper._vault_atomic = True  # type: ignore[attr-defined]
            setattr(owner, name, wrapper)


#: SQS's deduplication interval (seconds).
DEDUPLICATION_SECONDS = 300


def _install_fifo_deduplication() -> None:
    from moto.sqs.models import Queue

    original = Queue.add_message
    if getattr(original, "_vault_dedup", False):
        return

    def add_message(self: Any, message: Any) -> None:
        dedup_id = getattr(message, "deduplication_id", None)
        if self.fifo_queue and dedup_id:
            # queue-wide, as moto's own check is (stricter than DeduplicationScope messageGroup; the postback
            # queue's deduplication ids begin with their message group's id, so both scopes agree there)
            key = str(dedup_id)
            sent = float(message.sent_timestamp or 0) / 1000
            with _LOCK:
                seen: dict[str, float] = self.__dict__.setdefault("_vault_dedup_ids", {})
                for old in [k for k, at in seen.items() if sent - at >= DEDUPLICATION_SECONDS]:
                    del seen[old]
                if key in seen:
                    return  # accepted, not delivered: as SQS answers a duplicate within the interval
                seen[key] = sent
        original(self, message)

    functools.update_wrapper(add_message, original)
    add_message._vault_dedup = True  # type: ignore[attr-defined]
    Queue.add_message = add_message  # type: ignore[method-assign]
