"""local/moto_atomic.py gives moto's SQS FIFO queues SQS's deduplication interval: a message whose deduplication id
was sent within the last 5 minutes is accepted and not delivered, also after the first one was received and
deleted (moto alone queues it again)."""

from __future__ import annotations

import boto3
import pytest


@pytest.fixture
def sqs(bare_moto):
    return boto3.client("sqs", region_name="us-east-1")


def _queue(sqs, scope: str) -> str:
    return sqs.create_queue(QueueName=f"q-{scope}.fifo", Attributes={
        "FifoQueue": "true", "ContentBasedDeduplication": "false", "DeduplicationScope": scope})["QueueUrl"]


def _drain(sqs, url: str) -> list[str]:
    out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    for m in out:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    return [m["Body"] for m in out]


def test_a_deduplication_id_sent_again_after_its_message_was_deleted_is_not_delivered(sqs):
    url = _queue(sqs, "messageGroup")
    sqs.send_message(QueueUrl=url, MessageBody="first", MessageGroupId="d1", MessageDeduplicationId="d1")
    assert _drain(sqs, url) == ["first"]
    answer = sqs.send_message(QueueUrl=url, MessageBody="copy", MessageGroupId="d1", MessageDeduplicationId="d1")
    assert answer["MessageId"]  # accepted, as SQS accepts a duplicate
    assert _drain(sqs, url) == []
    sqs.send_message(QueueUrl=url, MessageBody="next", MessageGroupId="d1", MessageDeduplicationId="d1#q1")
    assert _drain(sqs, url) == ["next"]
