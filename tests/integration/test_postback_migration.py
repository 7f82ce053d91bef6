"""Moving to the SQS FIFO postback queue (issue 29, docs/operators/capacity.md "Moving to the FIFO postback queue"),
tested with what the version before left behind: a postback message in today's format waiting in the standard
queue (its delivery's ``MSG#`` item and ``ATT#`` attempt item written by the claim of the version before), and
one in the standard dead-letter queue after its 12 attempts. After the upgrade the forwarder (the relay
function's ``LegacyPostbacks`` SQS event) and the admin redrive move them to the FIFO queue, and each is delivered
exactly once, its attempt numbers going on; the history the version before wrote still lists, with the new
attempts first. Real moto queues and tables; the event source mappings' part (receive, invoke, delete what was
acknowledged) done by the test."""

from __future__ import annotations

import json
import time
import uuid

import boto3

from tests.helpers import admin
from tests.postback_receiver import Receiver
from vaultcore import clock
from vaultcore.postback import deliveries
from vaultcore.settings import settings


class _Context:
    def __init__(self, seconds: float) -> None:
        self._deadline = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _old_message(account_id: str, transaction_id: str) -> dict:
    """A postback message exactly as the version before queued it (uuid4 delivery id, no FIFO marks)."""
    return {"delivery_id": str(uuid.uuid4()), "account_id": account_id, "transaction_id": transaction_id,
            "created_at": int(clock.now()) - 3600,
            "response": {"transaction_id": transaction_id, "transaction_approved": True, "last4": "4242",
                         "account_id": account_id}}


def _old_items(message: dict, state: str, attempts: int, holder: str) -> None:
    """The Deliveries items the version before wrote for ``message``: its ``MSG#`` item (the claim's state, the
    SQS message that held it) and one ``ATT#`` item per attempt, on the delivery's shard."""
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    key = deliveries.partition(message["account_id"], message["delivery_id"])
    ddb.put_item(TableName=settings().deliveries_table, Item={
        "account_id": {"S": key}, "attempt_key": {"S": f"MSG#{message['delivery_id']}"},
        "message": {"B": deliveries.pack_message(message)}, "state": {"S": state}, "attempt": {"N": str(attempts)},
        "holder": {"S": holder}, "expiresAt": {"N": str(int(clock.now()) + 86400)}})
    for n in range(1, attempts + 1):
        at = int(clock.now()) - 3000 + n
        ddb.put_item(TableName=settings().deliveries_table, Item={
            "account_id": {"S": key}, "attempt_key": {"S": f"ATT#{at * 1000:013d}#{message['delivery_id']}#{n:03d}"},
            "delivery_id": {"S": message["delivery_id"]}, "transaction_id": {"S": message["transaction_id"]},
            "attempt": {"N": str(n)}, "status": {"S": "failed"}, "http_status": {"N": "500"},
            "error": {"S": "HTTP 500"}, "at": {"N": str(at)}})


def _records(messages: list[dict], queue: str) -> list[dict]:
    return [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
             "attributes": dict(m.get("Attributes") or {}), "messageAttributes": {}, "eventSource": "aws:sqs",
             "eventSourceARN": f"arn:aws:sqs:us-east-1:123456789012:{queue}", "awsRegion": "us-east-1"}
            for m in messages]


def _posts(receiver: Receiver, delivery_id: str) -> list[tuple[str, int]]:
    return [(r["headers"]["Vault-Delivery-Attempt"], r["status"]) for r in receiver.requests
            if r["headers"].get("Vault-Delivery-Id") == delivery_id]


def _account(platform, receiver: Receiver) -> str:
    status, account = admin(platform, "POST", "/admin/v1/accounts",
                            {"options": {}, "postback_url": receiver.url + "/ok"})
    assert status == 201, account
    return account["account_id"]


def test_messages_left_in_the_standard_queues_are_delivered_once_after_the_upgrade(platform):
    receiver = Receiver()
    try:
        account_id = _account(platform, receiver)
        sqs = boto3.client("sqs", region_name="us-east-1")
        old_queue, old_dlq = platform.refs["PostbackQueue"], platform.refs["PostbackDeadLetterQueue"]
        waiting, dead = _old_message(account_id, "100000000001"), _old_message(account_id, "100000000002")
        # today's state: one message retrying in the standard queue after a failed attempt, one dead-lettered
        sqs.send_message(QueueUrl=old_queue, MessageBody=json.dumps(waiting))
        _old_items(waiting, "failed", 1, "old-sqs-message-1")
        sqs.send_message(QueueUrl=old_dlq, MessageBody=json.dumps(dead))
        _old_items(dead, "dead-lettered", 12, "old-sqs-message-2")

        # 1. the forwarder drains the old queue: each message to the FIFO queue, acknowledged, no attempt
        old = sqs.receive_message(QueueUrl=old_queue, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        assert len(old) == 1
        relay = platform.modules["PostbackOutboxFunction"].lambda_handler
        event = {"Records": _records(old, "PostbackQueue")}
        assert relay(event, None) == {"batchItemFailures": []}
        assert relay(event, None) == {"batchItemFailures": []}  # its deletion lost: forwarded again, deduplicated
        sqs.delete_message(QueueUrl=old_queue, ReceiptHandle=old[0]["ReceiptHandle"])
        assert receiver.requests == []
        # 2. the operator redrives the old dead-letter queue into the FIFO queue (a fresh schedule, numbered on)
        status, moved = admin(platform, "POST", "/admin/v1/postbacks/redrive", {})
        assert status == 200 and moved["moved"] == 1, moved

        fifo = platform.refs["PostbackFifoQueue"]
        handler = platform.modules["PostbackFunction"].lambda_handler
        for _ in range(3):  # until the FIFO queue is empty, as the event source mapping polls it
            got = sqs.receive_message(QueueUrl=fifo, MaxNumberOfMessages=10, AttributeNames=["All"]).get(
                "Messages", [])
            if not got:
                break
            assert handler({"Records": _records(got, "PostbackFifoQueue.fifo")}, _Context(30)) == {
                "batchItemFailures": []}
            for m in got:
                sqs.delete_message(QueueUrl=fifo, ReceiptHandle=m["ReceiptHandle"])
        assert _posts(receiver, waiting["delivery_id"]) == [("2", 200)]  # its attempt count goes on
        assert _posts(receiver, dead["delivery_id"]) == [("13", 200)]  # the redrive's fresh schedule, numbered on
        for queue in (old_queue, old_dlq, fifo):
            assert sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=0).get("Messages", []) == []

        # the history the version before wrote still lists, the new attempt (in the same MSG# item) first
        log = deliveries.list_attempts(account_id, delivery_id=waiting["delivery_id"])
        assert [(a["attempt"], a["status"]) for a in log] == [(2, "delivered"), (1, "failed")]
        log = deliveries.list_attempts(account_id, transaction_id=dead["transaction_id"])
        assert [(a["attempt"], a["status"]) for a in log] == [(13, "delivered")] + [
            (n, "failed") for n in range(12, 0, -1)]
        # and redelivery of a delivery of the version before still works (its MSG# item)
        status, queued = admin(platform, "POST",
                               f"/admin/v1/accounts/{account_id}/deliveries/{waiting['delivery_id']}/redeliver")
        assert status == 200 and queued["queued"] is True
        got = sqs.receive_message(QueueUrl=fifo, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        assert handler({"Records": _records(got, "PostbackFifoQueue.fifo")}, _Context(30)) == {"batchItemFailures": []}
        assert _posts(receiver, waiting["delivery_id"]) == [("2", 200), ("3", 200)]
    finally:
        receiver.close()


def test_the_forwarder_leaves_what_is_no_postback_in_the_old_queue(platform):
    """A message that is no postback message (it names no delivery) cannot be given a message group: it is
    reported failed, so it stays in the old queue and, after its receives, in the old dead-letter queue."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    old_queue = platform.refs["PostbackQueue"]
    sqs.send_message(QueueUrl=old_queue, MessageBody="not json")
    (m,) = sqs.receive_message(QueueUrl=old_queue, AttributeNames=["All"])["Messages"]
    relay = platform.modules["PostbackOutboxFunction"].lambda_handler
    assert relay({"Records": _records([m], "PostbackQueue")}, None) == {
        "batchItemFailures": [{"itemIdentifier": m["MessageId"]}]}
    assert sqs.receive_message(QueueUrl=platform.refs["PostbackFifoQueue"], WaitTimeSeconds=0).get(
        "Messages", []) == []


def test_a_delivery_written_before_the_shards_is_found_by_the_sender(platform):
    """Deliveries written before the spread over shards (uuid4 delivery ids, their ``MSG#`` item in the account's
    unsharded partition, listed and redelivered from there) are read by the sender there too: a forwarded copy of
    one that was delivered is not POSTed again, and an operator's redelivery goes on with its attempt numbers
    (not a second item starting again at 1)."""
    receiver = Receiver()
    try:
        account_id = _account(platform, receiver)
        old = _old_message(account_id, "100000000003")
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        ddb.put_item(TableName=settings().deliveries_table, Item={
            "account_id": {"S": account_id}, "attempt_key": {"S": f"MSG#{old['delivery_id']}"},
            "message": {"S": json.dumps(old)}, "state": {"S": "delivered"}, "attempt": {"N": "1"},
            "transaction_id": {"S": old["transaction_id"]}, "expiresAt": {"N": str(int(clock.now()) + 86400)}})
        sqs = boto3.client("sqs", region_name="us-east-1")
        old_queue = platform.refs["PostbackQueue"]
        sqs.send_message(QueueUrl=old_queue, MessageBody=json.dumps(old))  # a copy left in the old queue
        got = sqs.receive_message(QueueUrl=old_queue, AttributeNames=["All"])["Messages"]
        relay = platform.modules["PostbackOutboxFunction"].lambda_handler
        assert relay({"Records": _records(got, "PostbackQueue")}, None) == {"batchItemFailures": []}
        fifo = platform.refs["PostbackFifoQueue"]
        handler = platform.modules["PostbackFunction"].lambda_handler

        def run() -> None:
            got = sqs.receive_message(QueueUrl=fifo, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
            assert handler({"Records": _records(got, "PostbackFifoQueue.fifo")}, _Context(30)) == {
                "batchItemFailures": []}
            for m in got:
                sqs.delete_message(QueueUrl=fifo, ReceiptHandle=m["ReceiptHandle"])

        run()
        assert receiver.requests == []  # delivered already
        status, _ = admin(platform, "POST", f"/admin/v1/accounts/{account_id}/deliveries/{old['delivery_id']}"
                                            "/redeliver")
        assert status == 200
        run()
        assert _posts(receiver, old["delivery_id"]) == [("2", 200)]
    finally:
        receiver.close()
