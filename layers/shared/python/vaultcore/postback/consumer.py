"""The SQS event handler of the postback function: powertools BatchProcessor with partial batch responses,
so one failing record never makes the others redeliver (template: FunctionResponseTypes
ReportBatchItemFailures)."""

from __future__ import annotations

from typing import Any

from vaultcore.logs import set_request_context
from vaultcore.postback.sender import deliver_record

__all__ = ["handle_batch"]


def _record_handler(record: Any) -> str:
    set_request_context(record.message_id)
    return deliver_record(record.body, record.receipt_handle, int(record.attributes.approximate_receive_count))


def handle_batch(event: dict[str, Any], context: Any) -> dict[str, Any]:
    from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response

    return process_partial_response(event=event, record_handler=_record_handler,
                                    processor=BatchProcessor(event_type=EventType.SQS), context=context)
