"""The outbox sweeper: queues postback messages the gateway kept because SQS refused them at the time.

Runs on a schedule (template: PostbackOutboxFunction, every minute). Each message keeps its delivery id, so
a message that did reach the queue after all is still delivered once to a receiver that deduplicates.
"""

from __future__ import annotations

from typing import Any

from vaultcore.logs import clear_request_context, get_logger, set_request_context
from vaultcore.postback import deliveries
from vaultcore.settings import settings
from vaultcore.store.aws import client

__all__ = ["sweep"]

_log = get_logger("postback.outbox")


def sweep(event: dict[str, Any] | None = None, context: Any = None) -> dict[str, int]:
    set_request_context(getattr(context, "aws_request_id", None))  # the correlation id of its log lines
    try:
        return _sweep()
    finally:
        clear_request_context()


def _sweep() -> dict[str, int]:
    sent = 0
    for item in deliveries.list_unsent():
        client("sqs").send_message(QueueUrl=settings().postback_queue_url, MessageBody=item["message"])
        deliveries.mark_sent(item["account_id"], item["delivery_id"])
        sent += 1
    if sent:
        _log.info("outbox swept", extra={"count": sent})
    return {"sent": sent}
