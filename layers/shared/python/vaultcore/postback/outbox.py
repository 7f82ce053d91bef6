"""The outbox sweeper: queues postback messages the gateway wrote with their transaction but did not queue.

Runs on a schedule (template: PostbackOutboxFunction, every minute). Every transaction's postback is written to
the outbox with it (issue 18); the request that wrote it queues it right away, so the sweeper takes only entries
older than ``deliveries.OUTBOX_GRACE_SECONDS``: their request died, or SQS refused the message. Each message
keeps its delivery id; a message that reaches the queue twice (a lost SendMessage answer, or a request that
queued it after all) is still POSTed once per attempt, because the sender's claim numbers attempts and refuses
a delivered message. Marking an entry sent is conditional on it still being unsent, so a sweep never sets
back the state of a message the sender has already claimed.
"""

from __future__ import annotations

from typing import Any

from vaultcore import metrics
from vaultcore.errors import VaultError
from vaultcore.logs import clear_request_context, get_logger, set_request_context
from vaultcore.postback import deliveries
from vaultcore.settings import settings
from vaultcore.store.aws import client
from vaultcore.store.ddb import aws_errors

__all__ = ["sweep"]

_log = get_logger("postback.outbox")


def sweep(event: dict[str, Any] | None = None, context: Any = None) -> dict[str, int]:
    set_request_context(getattr(context, "aws_request_id", None))  # the correlation id of its log lines
    try:
        return _sweep()
    finally:
        metrics.flush(context)  # PostbackOutboxDepth / PostbackOutboxFailed (the outbox alarm, the dashboard)
        clear_request_context()


def _sweep() -> dict[str, int]:
    sent = failed = 0
    items = deliveries.list_unsent()
    for item in items:
        try:
            with aws_errors("postback enqueue"):
                client("sqs").send_message(QueueUrl=settings().postback_queue_url, MessageBody=item["message"])
            deliveries.mark_sent(item["account_id"], item["delivery_id"])
        except VaultError as exc:  # stays in the outbox for the next sweep; the others go on
            failed += 1
            _log.warning("outbox entry not queued", extra={"delivery_id": item.get("delivery_id"),
                                                           "error_type": type(exc).__name__})
            continue
        sent += 1
    metrics.outbox_sweep(found=len(items), failed=failed)
    if sent or failed:
        _log.info("outbox swept", extra={"count": sent, "failed": failed})
    return {"sent": sent, "failed": failed} if failed else {"sent": sent}
