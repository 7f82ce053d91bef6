"""The postback function as an SQS event source sees it: partial batch responses on moto."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import boto3

from tests.aws_calls import AwsCalls
from tests.helpers import admin, call
from tests.postback_receiver import Receiver
from vaultcore import clock
from vaultcore.ids import uuid7

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef


def test_one_failing_record_is_retried_and_the_others_are_not(platform, monkeypatch):
    monkeypatch.setenv("POSTBACK_RETRY_SCHEDULE", "0")  # visible again at once: this test drives the queue itself
    receiver = Receiver()
    try:
        accounts = []
        for path in ("/ok/1", "/down", "/ok/2"):
            status, account = admin(platform, "POST", "/admin/v1/accounts",
                                    {"options": {}, "postback_url": receiver.url + path})
            assert status == 201, account
            accounts.append(account)
        for account in accounts:
            status, _, body = call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", {
                "account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
                "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
                "card_expiration": "1230", "transaction_amount": "5.00", "currency": "USD"})
            assert body["transaction_approved"] is True, body
        assert platform.pump_streams() == 3  # the Deliveries stream relay queues the three postbacks
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = platform.refs["PostbackFifoQueue"]
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        assert len(messages) == 3
        event = {"Records": [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                              "attributes": m["Attributes"], "messageAttributes": {}, "eventSource": "aws:sqs",
                              "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackFifoQueue.fifo",
                              "awsRegion": "us-east-1", "md5OfBody": m["MD5OfBody"]} for m in messages]}
        result = platform.invoke("PostbackFunction", event)
        failing = next(m for m in messages if json.loads(m["Body"])["account_id"] == accounts[1]["account_id"])
        assert result == {"batchItemFailures": [{"itemIdentifier": failing["MessageId"]}]}
        # what the event source mapping does with that answer: delete the successes, keep the failure
        for m in messages:
            if m["MessageId"] != failing["MessageId"]:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        again = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        assert [m["MessageId"] for m in again] == [failing["MessageId"]]
        assert again[0]["Attributes"]["ApproximateReceiveCount"] == "2"
        assert len(receiver.delivered("/ok")) == 2 and len(receiver.delivered("/down")) == 0
    finally:
        receiver.close()


def test_a_message_already_delivered_is_not_sent_twice(platform, monkeypatch):
    """SQS may redeliver a message whose deletion was lost: the delivery log stops a second POST."""
    receiver = Receiver()
    try:
        _, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}, "postback_url": receiver.url + "/ok"})
        call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", {
            "account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
            "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
            "card_expiration": "1230", "transaction_amount": "5.00", "currency": "USD"})
        platform.pump_streams()
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = platform.refs["PostbackFifoQueue"]
        m = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"][0]
        record = {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                  "attributes": {**m["Attributes"]}, "messageAttributes": {}, "eventSource": "aws:sqs",
                  "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackFifoQueue.fifo", "awsRegion": "us-east-1"}
        assert platform.invoke("PostbackFunction", {"Records": [record]}) == {"batchItemFailures": []}
        record["attributes"]["ApproximateReceiveCount"] = "2"  # the same message, received again
        assert platform.invoke("PostbackFunction", {"Records": [record]}) == {"batchItemFailures": []}
        assert len(receiver.delivered("/ok")) == 1
    finally:
        receiver.close()


def test_a_postback_sqs_refused_goes_to_the_relay_failure_queue_and_is_redriven(platform, monkeypatch):
    """Nothing accepted is lost: the SALE succeeds without any SQS call; while SQS refuses the stream relay's
    sends, the event source mapping retries the batch, then gives it up to the failure destination; the
    operator's redrive reads that range of the stream again and queues the postback, delivered once."""
    from vaultcore.settings import reset_settings

    receiver = Receiver()
    try:
        _, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}, "postback_url": receiver.url + "/ok"})
        status, _, sale = call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", {
            "account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
            "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
            "card_expiration": "1230", "transaction_amount": "7.00", "currency": "USD"})
        assert status == 200 and sale["transaction_approved"] is True
        real_queue = platform.refs["PostbackFifoQueue"]
        monkeypatch.setenv("POSTBACK_QUEUE_URL", real_queue + "-unavailable")  # SQS answers NonExistentQueue
        reset_settings()
        relay_source = platform.stream_sources[0]
        for source in platform.stream_sources:
            source.retry_seconds = 0  # the retries' backoff (1 s doubling locally): not waited for here
        invocations: list[int] = []
        relay = platform.modules["PostbackOutboxFunction"].lambda_handler
        monkeypatch.setattr(platform.modules["PostbackOutboxFunction"], "lambda_handler",
                            lambda event, ctx: invocations.append(len(event["Records"])) or relay(event, ctx))
        assert platform.pump_streams() == 1
        assert invocations == [1] * (relay_source.max_retries + 1)  # the first try and every retry
        sqs = boto3.client("sqs", region_name="us-east-1")
        assert "Messages" not in sqs.receive_message(QueueUrl=real_queue, WaitTimeSeconds=0)
        failures = sqs.receive_message(QueueUrl=platform.refs["PostbackRelayDeadLetterQueue"],
                                       VisibilityTimeout=0)["Messages"]
        info = json.loads(failures[0]["Body"])["DDBStreamBatchInfo"]
        # a SALE's postback comes from the Transactions stream (issue 29: its item is the outbox)
        assert info["batchSize"] == 1 and info["streamArn"] == platform.attrs[("TransactionsV2Table", "StreamArn")]
        assert platform.pump_streams() == 0  # the shard moved on: nothing read twice
        monkeypatch.setenv("POSTBACK_QUEUE_URL", real_queue)
        reset_settings()
        status, moved = admin(platform, "POST", "/admin/v1/postbacks/redrive", {})
        assert status == 200 and moved == {"moved": 0, "relayed": 1}, moved
        assert "Messages" not in sqs.receive_message(QueueUrl=platform.refs["PostbackRelayDeadLetterQueue"],
                                                     WaitTimeSeconds=0)
        m = sqs.receive_message(QueueUrl=real_queue, AttributeNames=["All"])["Messages"][0]
        assert json.loads(m["Body"])["transaction_id"] == sale["transaction_id"]
        record = {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                  "attributes": m["Attributes"], "messageAttributes": {}, "eventSource": "aws:sqs",
                  "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackFifoQueue.fifo", "awsRegion": "us-east-1"}
        assert platform.invoke("PostbackFunction", {"Records": [record]}) == {"batchItemFailures": []}
        assert len(receiver.delivered("/ok")) == 1
    finally:
        receiver.close()


# ------------------------------------------------------------------ issue 12 part 4 / issue 13: isolation, calls
class _Context:
    """A Lambda context with a chosen time left (the handler derives its attempt timeouts from it)."""

    def __init__(self, seconds: float) -> None:
        self._deadline = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _account_with(platform, url: str) -> dict:
    status, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}, "postback_url": url})
    assert status == 201, account
    return account


def _sale(platform, account: dict) -> str:
    status, _, body = call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
        "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
        "card_expiration": "1230", "transaction_amount": "5.00", "currency": "USD"})
    assert status == 200 and body["transaction_approved"] is True, body
    return body["transaction_id"]


def _receive(platform, n: int) -> list[MessageTypeDef]:
    platform.pump_streams()  # the stream relay queues what the gateway recorded
    sqs = boto3.client("sqs", region_name="us-east-1")
    messages: list[MessageTypeDef] = []
    while len(messages) < n:
        out = sqs.receive_message(QueueUrl=platform.refs["PostbackFifoQueue"], MaxNumberOfMessages=min(10, n - len(messages)),
                                  AttributeNames=["All"]).get("Messages", [])
        if not out:
            break
        messages.extend(out)
    return messages


def _event(messages: list[MessageTypeDef]) -> dict:
    return {"Records": [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                         "attributes": dict(m["Attributes"]), "messageAttributes": {}, "eventSource": "aws:sqs",
                         "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackFifoQueue.fifo",
                         "awsRegion": "us-east-1"} for m in messages]}


def _handler(platform):
    return platform.modules["PostbackFunction"].lambda_handler


def _log(platform, account: dict, transaction_id: str) -> list[dict]:
    return admin(platform, "GET", f"/admin/v1/accounts/{account['account_id']}/deliveries",
                 query={"transaction_id": transaction_id})[1]["attempts"]


def test_a_delivered_message_costs_at_most_two_aws_calls(platform):
    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/ok")
        for _ in range(11):
            _sale(platform, account)
        warm_up = _receive(platform, 1)  # the container's first message loads the account's postback settings
        assert platform.invoke("PostbackFunction", _event(warm_up)) == {"batchItemFailures": []}
        messages = _receive(platform, 10)
        assert len(messages) == 10
        with AwsCalls() as calls:
            assert platform.invoke("PostbackFunction", _event(messages)) == {"batchItemFailures": []}
        assert len(receiver.delivered("/ok")) == 11
        # the read before the POST (one consistent GetItem) and the finish after it (ONE conditional UpdateItem:
        # the attempt appended to the delivery's item, its state), nothing else: no claim (SQS FIFO)
        assert dict(calls.by_operation) == {"dynamodb.GetItem": 10, "dynamodb.UpdateItem": 10}
        assert calls.total <= 2 * 10
        for m in messages:
            log = _log(platform, account, json.loads(m["Body"])["transaction_id"])
            assert [a["status"] for a in log] == ["delivered"]
    finally:
        receiver.close()


def test_a_lost_answer_of_the_finish_write_is_not_appended_twice(platform, monkeypatch):
    """The finish (one UpdateItem that appends the attempt to the delivery's item) is applied and its answer lost;
    the SDK's retry of it is refused by its condition (the attempt is recorded) and recognised as this very write
    (``writer``):
    the message is acknowledged, the log has the attempt once, and a copy received after it makes no POST."""
    from tests.aws_faults import AwsFaults

    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/ok")
        transaction_id = _sale(platform, account)
        [message] = _receive(platform, 1)
        ddb = AwsFaults.install("dynamodb", monkeypatch)
        ddb.lose_answer("update_item")  # the finish (the one write) is applied, its answer lost
        assert _handler(platform)(_event([message]), None) == {"batchItemFailures": []}
        ddb.clear()
        assert ddb.injected == ["lose:update_item"]
        assert _handler(platform)(_event([message]), None) == {"batchItemFailures": []}  # a copy: skipped
        assert len(receiver.delivered("/ok")) == 1
        assert [(a["attempt"], a["status"]) for a in _log(platform, account, transaction_id)] == [(1, "delivered")]
    finally:
        receiver.close()


def test_a_hanging_destination_holds_up_nobody_and_is_then_deferred(platform, monkeypatch):
    from vaultcore.postback.breaker import destination_of
    from vaultcore.postback.sender import breaker

    monkeypatch.setenv("POSTBACK_RETRY_SCHEDULE", "7,8")
    hanging, healthy = Receiver(), Receiver()
    try:
        slow = _account_with(platform, hanging.url + "/hang")
        good = _account_with(platform, healthy.url + "/ok")
        for _ in range(4):
            _sale(platform, slow)
            _sale(platform, good)
        messages = _receive(platform, 8)
        assert len(messages) == 8
        slow_ids = {m["MessageId"] for m in messages if json.loads(m["Body"])["account_id"] == slow["account_id"]}
        # 9 s left: each attempt may wait min(10, 9 - 5) = 4 s, all of them at once
        with AwsCalls() as calls:
            result = _handler(platform)(_event(messages), _Context(9))
        assert {f["itemIdentifier"] for f in result["batchItemFailures"]} == slow_ids
        assert len(healthy.delivered("/ok")) == 4 and hanging.count("/hang") == 4
        # the failed ones come back after the schedule's first delay, set in one batch call
        (change,) = calls.calls_of("sqs.ChangeMessageVisibilityBatch")
        receipts = {m["ReceiptHandle"]: m["MessageId"] for m in messages}
        assert {receipts[e["ReceiptHandle"]] for e in change["Entries"]} == slow_ids
        assert {e["VisibilityTimeout"] for e in change["Entries"]} == {7}
        assert breaker().is_open(destination_of(hanging.url))

        # the circuit is open: the next postback for that destination is deferred without an attempt
        slow_tx, good_tx = _sale(platform, slow), _sale(platform, good)
        messages = _receive(platform, 2)
        assert len(messages) == 2
        with AwsCalls() as calls:
            result = _handler(platform)(_event(messages), _Context(30))
        (failed,) = result["batchItemFailures"]
        assert json.loads(next(m for m in messages if m["MessageId"] == failed["itemIdentifier"])["Body"])[
            "account_id"] == slow["account_id"]
        assert hanging.count("/hang") == 4 and len(healthy.delivered("/ok")) == 5
        assert [(a["status"], a["error"]) for a in _log(platform, slow, slow_tx)] == [("deferred", "circuit open")]
        assert [a["status"] for a in _log(platform, good, good_tx)] == ["delivered"]
        (change,) = calls.calls_of("sqs.ChangeMessageVisibilityBatch")
        assert [e["VisibilityTimeout"] for e in change["Entries"]] == [7]  # the schedule's delay after receive 1
        # a deferred postback can be redelivered by the operator like any other (its message is stored)
        delivery_id = json.loads(next(m for m in messages if m["MessageId"] == failed["itemIdentifier"])["Body"])[
            "delivery_id"]
        status, _ = admin(platform, "POST", f"/admin/v1/accounts/{slow['account_id']}/deliveries/{delivery_id}/redeliver")
        assert status == 200
    finally:
        hanging.close()
        healthy.close()


def test_a_deferral_on_the_last_receive_requeues_a_fresh_copy_and_uses_no_attempt(platform, monkeypatch):
    """Issue 18: deferrals while the circuit is open are not attempts. On the queue's last receive (the next
    would move the message to the DLQ) the message is queued again as a fresh copy; its first real POST is
    still attempt 1."""
    from vaultcore.postback.breaker import destination_of
    from vaultcore.postback.sender import breaker, max_receive_count

    monkeypatch.setenv("POSTBACK_RETRY_SCHEDULE", "0")
    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/ok")
        _sale(platform, account)
        _sale(platform, account)
        early, last = _receive(platform, 2)
        for _ in range(breaker().threshold):
            breaker().record(destination_of(receiver.url), responsive=False)
        assert breaker().is_open(destination_of(receiver.url))
        event = _event([early, last])
        event["Records"][1]["attributes"]["ApproximateReceiveCount"] = str(max_receive_count())
        result = _handler(platform)(event, _Context(30))
        # the early one is given back (visibility); the last one's copy is on the queue, so it is acknowledged
        assert result == {"batchItemFailures": [{"itemIdentifier": early["MessageId"]}]}
        assert receiver.count("/ok") == 0
        sqs = boto3.client("sqs", region_name="us-east-1")
        sqs.delete_message(QueueUrl=platform.refs["PostbackFifoQueue"], ReceiptHandle=early["ReceiptHandle"])
        # what the event source mapping does with an acknowledged record: SQS FIFO hands out the copy (same
        # message group) only once the message it replaces is deleted
        sqs.delete_message(QueueUrl=platform.refs["PostbackFifoQueue"], ReceiptHandle=last["ReceiptHandle"])
        copies = _receive(platform, 2)
        assert [json.loads(c["Body"])["delivery_id"] for c in copies] == [json.loads(last["Body"])["delivery_id"]]
        assert copies[0]["Attributes"]["ApproximateReceiveCount"] == "1"
        breaker().clear()
        assert _handler(platform)(_event(copies), _Context(30)) == {"batchItemFailures": []}
        (delivered,) = receiver.delivered("/ok")
        assert delivered["headers"]["Vault-Delivery-Id"] == json.loads(last["Body"])["delivery_id"]
        assert delivered["headers"]["Vault-Delivery-Attempt"] == "1"
    finally:
        receiver.close()


def test_attempts_not_receives_decide_the_dead_letter_queue(platform, monkeypatch):
    """Issue 18: every POST gets its own attempt number, and the message reaches the DLQ after exactly
    maxReceiveCount real POSTs, even when SQS counted fewer receives (a fresh copy)."""
    from vaultcore.postback.sender import max_receive_count

    monkeypatch.setenv("POSTBACK_RETRY_SCHEDULE", "0")
    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/down")
        _sale(platform, account)
        (m,) = _receive(platform, 1)
        for i in range(max_receive_count()):
            result = _handler(platform)(_event([m]), _Context(30))
            last = i == max_receive_count() - 1
            assert result == ({"batchItemFailures": []} if last else
                              {"batchItemFailures": [{"itemIdentifier": m["MessageId"]}]})
        posts = receiver.requests
        assert [r["headers"]["Vault-Delivery-Attempt"] for r in posts] == [
            str(n) for n in range(1, max_receive_count() + 1)]
        sqs = boto3.client("sqs", region_name="us-east-1")
        dead = sqs.receive_message(QueueUrl=platform.refs["PostbackFifoDeadLetterQueue"], MaxNumberOfMessages=10,
                                   VisibilityTimeout=0).get("Messages", [])
        assert [json.loads(d["Body"])["delivery_id"] for d in dead] == [json.loads(m["Body"])["delivery_id"]]
        # another copy of it is not POSTed again: its attempts are used up (it joins the DLQ, where a redrive
        # delivers the delivery id once, whatever the number of copies)
        assert _handler(platform)(_event([m]), _Context(30)) == {"batchItemFailures": []}
        assert len(receiver.requests) == max_receive_count()
    finally:
        receiver.close()


def _queued_with_a_copy(platform):
    """The stream relay queues the postbacks recorded so far; the first is received (and made visible again) and a
    copy of it with its own deduplication id (a fresh copy) is queued behind it, in its message group."""
    from vaultcore.postback.message import fifo_ids, fresh_copy

    platform.pump_streams()
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = platform.refs["PostbackFifoQueue"]
    first = sqs.receive_message(QueueUrl=url, AttributeNames=["All"], VisibilityTimeout=0)["Messages"][0]
    copy = fresh_copy(first["Body"])
    sqs.send_message(QueueUrl=url, MessageBody=copy, **fifo_ids(copy))
    return sqs, url, first, copy


def test_two_copies_of_one_delivery_in_one_fifo_batch_are_posted_once(platform, frozen_clock):
    """Two SQS messages of one delivery (the relay's, and a copy with its own deduplication id: an admin's
    requeue, a send after SQS's 5-minute deduplication interval) are one message group: SQS FIFO may hand both
    out in one batch, in order. The consumer runs them in order in one worker: the first POSTs, the second reads
    the delivery ``delivered`` and is acknowledged without a POST."""
    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/ok")
        _sale(platform, account)
        sqs, url, first, copy = _queued_with_a_copy(platform)
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        assert [m["Body"] for m in batch] == [first["Body"], copy]  # one group, in order, one batch
        assert {m["Attributes"]["MessageGroupId"] for m in batch} == {json.loads(copy)["delivery_id"]}
        with AwsCalls() as calls:
            assert _handler(platform)(_event(batch), _Context(30)) == {"batchItemFailures": []}
        assert len(receiver.delivered("/ok")) == 1
        assert calls.calls_of("dynamodb.UpdateItem") and len(calls.calls_of("dynamodb.UpdateItem")) == 1
    finally:
        receiver.close()


def test_after_a_failure_the_rest_of_its_message_group_comes_back_with_it(platform, monkeypatch, frozen_clock):
    """FIFO partial batches: a batch holds a delivery's message and a later copy of it (one group) and another
    delivery. The first message's attempt fails (500): it and the unprocessed copy after it are reported, both
    given the retry delay (so the group comes back in order); the other group is delivered and acknowledged."""
    monkeypatch.setenv("POSTBACK_RETRY_SCHEDULE", "40")
    receiver = Receiver()
    try:
        failing = _account_with(platform, receiver.url + "/flaky/1")
        fine = _account_with(platform, receiver.url + "/ok")
        _sale(platform, failing)
        sqs, url, first, copy = _queued_with_a_copy(platform)
        _sale(platform, fine)
        platform.pump_streams()
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        assert len(batch) == 3
        group = [m["MessageId"] for m in batch if json.loads(m["Body"])["account_id"] == failing["account_id"]]
        with AwsCalls() as calls:
            result = _handler(platform)(_event(batch), _Context(30))
        assert result == {"batchItemFailures": [{"itemIdentifier": i} for i in group]}
        assert sorted(r["status"] for r in receiver.requests) == [200, 500]  # one POST per group, the copy none
        (change,) = calls.calls_of("sqs.ChangeMessageVisibilityBatch")
        assert sorted(e["VisibilityTimeout"] for e in change["Entries"]) == [40, 40]
    finally:
        receiver.close()


def test_a_copy_received_before_its_time_is_given_back_without_a_post_or_a_write(platform, frozen_clock):
    """FIFO queues take no per-message delay: the sender's fresh copy carries ``not_before``. Received before it,
    it is given back with the time left as its visibility: no POST, no DynamoDB call, not acknowledged."""
    from vaultcore.postback.message import fifo_ids, fresh_copy

    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/ok")
        _sale(platform, account)
        (m,) = _receive(platform, 1)
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = platform.refs["PostbackFifoQueue"]
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        copy = fresh_copy(m["Body"], frozen_clock + 120)
        sqs.send_message(QueueUrl=url, MessageBody=copy, **fifo_ids(copy))
        (early,) = _receive(platform, 1)
        with AwsCalls() as calls:
            result = _handler(platform)(_event([early]), _Context(30))
        assert result == {"batchItemFailures": [{"itemIdentifier": early["MessageId"]}]}
        assert receiver.count("/ok") == 0
        assert not [c for c in calls.by_operation if c.startswith("dynamodb.")]
        (change,) = calls.calls_of("sqs.ChangeMessageVisibilityBatch")
        assert change["Entries"][0]["VisibilityTimeout"] == 120
        clock.set_offset(clock.offset() + 120)  # its time: attempted as attempt 1
        assert _handler(platform)(_event([early]), _Context(30)) == {"batchItemFailures": []}
        assert [d["headers"]["Vault-Delivery-Attempt"] for d in receiver.delivered("/ok")] == ["1"]
    finally:
        receiver.close()


def test_without_time_for_an_attempt_the_message_is_deferred_not_attempted(platform, monkeypatch):
    monkeypatch.setenv("POSTBACK_RETRY_SCHEDULE", "9")
    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/ok")
        tx = _sale(platform, account)
        (m,) = _receive(platform, 1)
        with AwsCalls() as calls:
            result = _handler(platform)(_event([m]), _Context(5.5))  # 0.5 s after the reserve: under 1 s
        assert result == {"batchItemFailures": [{"itemIdentifier": m["MessageId"]}]}
        assert receiver.count("/ok") == 0
        assert [(a["status"], a["error"]) for a in _log(platform, account, tx)] == [("deferred", "no time left")]
        (change,) = calls.calls_of("sqs.ChangeMessageVisibilityBatch")
        assert change["Entries"][0]["VisibilityTimeout"] == 9
    finally:
        receiver.close()


def test_the_handler_answers_before_its_timeout_even_with_records_stuck(platform, monkeypatch):
    """Records stuck past the reply margin (a DynamoDB call that does not come back): one stuck before its POST
    is reported failed, without a new visibility (it comes back after the queue's visibility timeout); one whose
    receiver already answered 2xx is acknowledged though its log write is still running (never POSTed twice)."""
    import threading

    from vaultcore.postback import deliveries

    receiver = Receiver()
    release = threading.Event()
    real_read, real_finish = deliveries.read, deliveries.finish

    def read(message, *args, **kwargs):
        if message["account_id"] == before_post["account_id"]:
            release.wait(30)
        return real_read(message, *args, **kwargs)

    def finish(message, *args, **kwargs):
        if message["account_id"] == after_post["account_id"]:
            release.wait(30)
        return real_finish(message, *args, **kwargs)

    try:
        before_post = _account_with(platform, receiver.url + "/ok/before")
        after_post = _account_with(platform, receiver.url + "/ok/after")
        fine = _account_with(platform, receiver.url + "/ok/fine")
        for account in (before_post, after_post, fine):
            _sale(platform, account)
        messages = _receive(platform, 3)
        stuck_id = next(m["MessageId"] for m in messages
                        if json.loads(m["Body"])["account_id"] == before_post["account_id"])
        monkeypatch.setattr(deliveries, "read", read)
        monkeypatch.setattr(deliveries, "finish", finish)
        with AwsCalls() as calls:
            result = _handler(platform)(_event(messages), _Context(7.5))  # answers 2 s before the 7.5 s are up
        assert result == {"batchItemFailures": [{"itemIdentifier": stuck_id}]}
        assert calls.calls_of("sqs.ChangeMessageVisibilityBatch") == []
        assert receiver.count("/ok/before") == 0
        assert len(receiver.delivered("/ok/after")) == 1 and len(receiver.delivered("/ok/fine")) == 1
    finally:
        release.set()
        receiver.close()


# ------------------------------------------------------------------ the delivery log spread over shards
def test_the_delivery_log_is_spread_over_shards_and_listed_newest_first(platform, monkeypatch):
    """One account's delivery items land on many partitions (``<account>#<shard>``, the shard from the delivery
    id), and the listing merges them -- and the items the version before wrote (``MSG#`` and ``ATT#``, the
    unsharded partition of items written before the spread) -- newest delivery first, each delivery's attempts
    newest first; ``limit`` (counting attempts), ``transaction_id`` and ``delivery_id`` keep working."""
    from vaultcore.postback import deliveries
    from vaultcore.settings import settings

    account_id = "555555555555"
    start = 1_900_000_000.0
    written = []
    for i in range(40):  # one delivery a second (uuid7 ids from the clock), so their order is known
        monkeypatch.setattr(clock, "now", lambda i=i: start + i)
        transaction_id = f"{100000000000 + i}"
        message = {"delivery_id": uuid7(), "account_id": account_id, "transaction_id": transaction_id,
                   "created_at": int(start + i), "response": {}}
        if i == 39:  # the newest delivery: a failed attempt, then a delivered one
            deliveries.finish(message, None, 1, "failed", 500, 5.0, "HTTP 500", "busy", "w1")
            deliveries.finish(message, deliveries.read(message), 2, "delivered", 200, 5.0, None, "ok", "w2")
        else:
            deliveries.finish(message, None, 1, "delivered", 200, 5.0, None, "ok", "w1")
        written.append((message["delivery_id"], transaction_id))
    client = boto3.client("dynamodb", region_name="us-east-1")
    # the version before's items: a message item with its attempt item, on its shard, and an attempt item written
    # before the spread, at the unsharded key, older than all of them
    legacy = "00000000-0000-4000-8000-000000000001"
    client.put_item(TableName=settings().deliveries_table, Item={
        "account_id": {"S": deliveries.partition(account_id, legacy)}, "attempt_key": {"S": f"MSG#{legacy}"},
        "state": {"S": "delivered"}, "attempt": {"N": "1"}, "message": {"S": "{}"}})
    client.put_item(TableName=settings().deliveries_table, Item={
        "account_id": {"S": deliveries.partition(account_id, legacy)},
        "attempt_key": {"S": f"ATT#{int((start - 3) * 1000):013d}#{legacy}#001"},
        "delivery_id": {"S": legacy}, "transaction_id": {"S": "099999999998"}, "attempt": {"N": "1"},
        "status": {"S": "delivered"}, "at": {"N": str(int(start - 3))}})
    client.put_item(TableName=settings().deliveries_table, Item={
        "account_id": {"S": account_id}, "attempt_key": {"S": f"ATT#{int((start - 5) * 1000):013d}#old#001"},
        "delivery_id": {"S": "old"}, "transaction_id": {"S": "099999999999"}, "attempt": {"N": "1"},
        "status": {"S": "delivered"}, "at": {"N": str(int(start - 5))}})
    partitions = {deliveries.partition(account_id, d) for d, _ in written}
    assert len(partitions) > 20 and all(p.startswith(account_id + "#") for p in partitions)
    listed = deliveries.list_attempts(account_id, limit=100)
    newest = written[-1][0]
    assert [a["delivery_id"] for a in listed] == [newest, newest] + [d for d, _ in reversed(written[:-1])] + [
        legacy, "old"]
    assert [(a["attempt"], a["status"], a["http_status"], a["response_excerpt"]) for a in listed[:3]] == [
        (2, "delivered", 200, ""), (1, "failed", 500, "busy"), (1, "delivered", 200, "")]  # no excerpt of a 2xx
    assert {a["account_id"] for a in listed} == {account_id}  # the caller's id, not the partition key
    assert set(listed[0]) == {"account_id", "delivery_id", "transaction_id", "attempt", "status", "http_status",
                              "duration_ms", "error", "response_excerpt", "at"}
    assert [a["delivery_id"] for a in deliveries.list_attempts(account_id, limit=3)] == [
        newest, newest, written[-2][0]]  # the limit counts attempts
    delivery_id, transaction_id = written[7]
    assert [a["delivery_id"] for a in deliveries.list_attempts(account_id, transaction_id=transaction_id)] == [
        delivery_id]
    assert [a["transaction_id"] for a in deliveries.list_attempts(account_id, delivery_id=delivery_id)] == [
        transaction_id]
    assert [a["transaction_id"] for a in deliveries.list_attempts(account_id, delivery_id=legacy)] == [
        "099999999998"]
    assert deliveries.list_attempts("666666666666") == []


def _join_workers() -> None:
    """Wait for the consumer's worker threads that outlived the handler's answer (a record stuck at reply time)."""
    import threading

    for thread in threading.enumerate():
        if thread.name.startswith("postback") and thread is not threading.current_thread():
            thread.join(30)


def test_a_record_reported_failed_at_reply_time_is_not_posted_by_its_worker_afterwards(platform, monkeypatch):
    """A record stuck in its read before the POST at reply time is reported failed (it comes back after the
    queue's visibility timeout, maybe to another container). Its worker thread, when the read returns after the
    answer (in Lambda: whenever the frozen container runs again, possibly after the message was handed out
    again), must not POST it: that attempt would be made outside any invocation that holds the message, and the
    message's next receive POSTs the same attempt number again."""
    import threading

    from vaultcore.postback import deliveries

    receiver = Receiver()
    release = threading.Event()
    real_read = deliveries.read

    def read(message, *args, **kwargs):
        if message["account_id"] == account["account_id"]:
            release.wait(30)
        return real_read(message, *args, **kwargs)

    try:
        account = _account_with(platform, receiver.url + "/ok/stuck")
        fine = _account_with(platform, receiver.url + "/ok/fine")  # a second group: the concurrent path
        _sale(platform, account)
        _sale(platform, fine)
        messages = _receive(platform, 2)
        stuck = [m for m in messages if json.loads(m["Body"])["account_id"] == account["account_id"]]
        monkeypatch.setattr(deliveries, "read", read)
        result = _handler(platform)(_event(messages), _Context(7.5))  # answers 2 s before the 7.5 s are up
        assert result == {"batchItemFailures": [{"itemIdentifier": stuck[0]["MessageId"]}]}
        release.set()
        _join_workers()
        assert receiver.count("/ok/stuck") == 0  # nothing POSTed for a record the handler gave back
        monkeypatch.setattr(deliveries, "read", real_read)
        # the message's next receive (after the visibility timeout): attempt 1, once
        assert _handler(platform)(_event(stuck), _Context(30)) == {"batchItemFailures": []}
        assert [d["headers"]["Vault-Delivery-Attempt"] for d in receiver.delivered("/ok/stuck")] == ["1"]
    finally:
        release.set()
        receiver.close()


def test_after_the_answer_a_worker_starts_no_further_record_of_its_group(platform, monkeypatch, frozen_clock):
    """A record acknowledged at reply time (its receiver answered 2xx, its log write still running) is followed in
    its message group by an operator's redelivery of the same delivery, reported failed (it comes back later).
    When the log write returns after the answer, the worker must not go on to the redelivery: the record was
    handed back to SQS, and the worker's deferral of it ("no time left") rewrote the delivered delivery's state
    to ``deferred``, so that any later copy would be POSTed again."""
    import threading

    from vaultcore.postback import deliveries
    from vaultcore.postback.message import fifo_ids

    receiver = Receiver()
    release = threading.Event()
    real_finish = deliveries.finish

    def finish(message, *args, **kwargs):
        release.wait(30)
        return real_finish(message, *args, **kwargs)

    try:
        account = _account_with(platform, receiver.url + "/ok/one")
        _sale(platform, account)
        platform.pump_streams()
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = platform.refs["PostbackFifoQueue"]
        first = sqs.receive_message(QueueUrl=url, AttributeNames=["All"], VisibilityTimeout=0)["Messages"][0]
        again = {**json.loads(first["Body"]), "redelivery": 1}
        body = json.dumps(again, separators=(",", ":"))
        sqs.send_message(QueueUrl=url, MessageBody=body, **fifo_ids(body))
        batch = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        assert [json.loads(m["Body"]).get("redelivery") for m in batch] == [None, 1]  # one group, in order
        other = _account_with(platform, receiver.url + "/ok/other")  # a second group: the concurrent path
        _sale(platform, other)
        batch += _receive(platform, 1)
        monkeypatch.setattr(deliveries, "finish", finish)
        result = _handler(platform)(_event(batch), _Context(7.5))
        assert result == {"batchItemFailures": [{"itemIdentifier": batch[1]["MessageId"]}]}
        release.set()
        _join_workers()
        stored = deliveries.load_message(account["account_id"], again["delivery_id"])
        assert stored is not None and stored["state"] == "delivered"
        assert [a["status"] for a in stored["attempts"]] == ["delivered"]  # no deferral of the redelivery
        assert receiver.count("/ok/one") == 1
    finally:
        release.set()
        receiver.close()


def test_a_failed_redelivery_of_a_delivered_postback_does_not_reopen_it_to_copies(platform, frozen_clock):
    """An operator redelivers a delivered postback and the receiver, now down, answers 500: the redelivery's
    failed attempt is logged, but the delivery was delivered and stays so for every copy that is not an explicit
    redelivery (an admin requeue over a window, the relay's send after SQS's 5-minute deduplication interval):
    such a copy is skipped, not POSTed a third time (the requeue's contract: "a copy of a postback already
    delivered is not POSTed again")."""
    from vaultcore.postback.message import fifo_ids, fresh_copy

    receiver = Receiver()
    receiver.recovered.set()
    try:
        account = _account_with(platform, receiver.url + "/down")
        tx = _sale(platform, account)
        (m,) = _receive(platform, 1)
        assert _handler(platform)(_event([m]), _Context(30)) == {"batchItemFailures": []}
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = platform.refs["PostbackFifoQueue"]
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])  # acknowledged: the mapping deletes it
        delivery_id = json.loads(m["Body"])["delivery_id"]
        receiver.recovered.clear()  # the receiver goes down
        status, _ = admin(platform, "POST", f"/admin/v1/accounts/{account['account_id']}/deliveries/{delivery_id}"
                                            "/redeliver")
        assert status == 200
        (again,) = _receive(platform, 1)
        result = _handler(platform)(_event([again]), _Context(30))
        assert result == {"batchItemFailures": [{"itemIdentifier": again["MessageId"]}]}  # retried later
        sqs.delete_message(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"])  # (its retries: not this test's)
        assert [r["status"] for r in receiver.requests] == [200, 500]
        copy = fresh_copy(m["Body"])  # a copy of the first message, as an admin requeue or a late relay send
        sqs.send_message(QueueUrl=url, MessageBody=copy, **fifo_ids(copy))
        (late,) = _receive(platform, 1)
        assert _handler(platform)(_event([late]), _Context(30)) == {"batchItemFailures": []}
        assert [r["status"] for r in receiver.requests] == [200, 500]  # no third POST
        assert [a["status"] for a in _log(platform, account, tx)] == ["failed", "delivered"]
    finally:
        receiver.close()


def test_a_second_redelivery_after_an_abandoned_one_is_queued_not_deduplicated(platform):
    """The operator redelivers a postback while its account has no postback URL: the redelivery is recorded
    ``abandoned`` (no attempt). The operator sets the URL and redelivers again, within SQS's 5-minute
    deduplication interval: that request must not get the first one's deduplication id (SQS would accept it,
    answer "queued" and never deliver it), so the postback is POSTed once."""
    from vaultcore.postback import sender

    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/ok")
        tx = _sale(platform, account)
        account_path = f"/admin/v1/accounts/{account['account_id']}"
        assert admin(platform, "PATCH", account_path, {"postback_url": None})[0] == 200
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = platform.refs["PostbackFifoQueue"]

        def run_one() -> None:
            (m,) = _receive(platform, 1)
            assert _handler(platform)(_event([m]), _Context(30)) == {"batchItemFailures": []}
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])  # acknowledged: deleted

        run_one()  # no postback URL: abandoned
        delivery_id = _log(platform, account, tx)[0]["delivery_id"]
        redeliver = f"{account_path}/deliveries/{delivery_id}/redeliver"
        assert admin(platform, "POST", redeliver)[0] == 200
        run_one()  # still no URL: abandoned again
        assert [a["status"] for a in _log(platform, account, tx)] == ["abandoned", "abandoned"]
        assert admin(platform, "PATCH", account_path, {"postback_url": receiver.url + "/ok"})[0] == 200
        sender._targets.clear()  # the container's account cache expired (RECORD_CACHE_SECONDS)
        assert admin(platform, "POST", redeliver)[0] == 200
        run_one()
        assert [d["headers"]["Vault-Delivery-Id"] for d in receiver.delivered("/ok")] == [delivery_id]
    finally:
        receiver.close()


def test_a_relay_failure_past_the_streams_24_hours_does_not_block_the_dead_letter_redrive(platform):
    """A failure record of the stream relay whose range the stream no longer holds (DynamoDB Streams keeps 24
    hours; its shard is gone) cannot be read again. The operator's redrive must still move the dead-letter
    queue's postbacks, leaving that record in the failure queue (the runbook's requeue from the transactions
    covers its range), instead of failing the whole request on it every time until the record expires."""
    from vaultcore.postback.message import fifo_ids

    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/ok")
        _sale(platform, account)
        (m,) = _receive(platform, 1)
        sqs = boto3.client("sqs", region_name="us-east-1")
        sqs.delete_message(QueueUrl=platform.refs["PostbackFifoQueue"], ReceiptHandle=m["ReceiptHandle"])
        dlq = platform.refs["PostbackFifoDeadLetterQueue"]
        sqs.send_message(QueueUrl=dlq, MessageBody=m["Body"], **fifo_ids(m["Body"]))  # dead-lettered
        stream = platform.attrs[("TransactionsV2Table", "StreamArn")]
        failures = platform.refs["PostbackRelayDeadLetterQueue"]
        sqs.send_message(QueueUrl=failures, MessageBody=json.dumps({"DDBStreamBatchInfo": {
            "streamArn": stream, "shardId": "shardId-00000001700000000000-0000dead", "batchSize": 1,
            "startSequenceNumber": "100", "endSequenceNumber": "100"}}))
        status, moved = admin(platform, "POST", "/admin/v1/postbacks/redrive", {})
        assert status == 200 and moved == {"moved": 1, "relayed": 0}, moved
        counts = sqs.get_queue_attributes(QueueUrl=failures, AttributeNames=[
            "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
        assert sum(int(v) for v in counts.values()) == 1  # kept for the operator (visible again after 60 s)
        (again,) = _receive(platform, 1)
        assert _handler(platform)(_event([again]), _Context(30)) == {"batchItemFailures": []}
        assert len(receiver.delivered("/ok")) == 1
    finally:
        receiver.close()


def test_after_a_redrive_the_attempts_are_numbered_on_and_get_a_full_schedule(platform, monkeypatch):
    """A postback dead-lettered after its maxReceiveCount attempts, then redriven by the operator: its next POSTs
    carry the numbers after the last one (docs/integrators/webhooks.md: each ``Vault-Delivery-Attempt`` number is
    sent once for a delivery id), and it gets the schedule's attempts again before the dead-letter queue."""
    from vaultcore.postback.sender import max_receive_count

    monkeypatch.setenv("POSTBACK_RETRY_SCHEDULE", "0")
    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/down")
        _sale(platform, account)
        (m,) = _receive(platform, 1)
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = platform.refs["PostbackFifoQueue"]
        for _ in range(max_receive_count()):
            _handler(platform)(_event([m]), _Context(30))
        sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])  # sent to the DLQ, acknowledged
        status, moved = admin(platform, "POST", "/admin/v1/postbacks/redrive", {})
        assert status == 200 and moved["moved"] == 1, moved
        (again,) = _receive(platform, 1)
        for i in range(2):  # two more failures: the fresh schedule goes on (no dead-letter after attempt 13)
            result = _handler(platform)(_event([again]), _Context(30))
            assert result == {"batchItemFailures": [{"itemIdentifier": again["MessageId"]}]}
        receiver.recovered.set()
        assert _handler(platform)(_event([again]), _Context(30)) == {"batchItemFailures": []}
        numbers = [r["headers"]["Vault-Delivery-Attempt"] for r in receiver.requests]
        assert numbers == [str(n) for n in range(1, max_receive_count() + 4)]  # each number once, in order
    finally:
        receiver.close()


def test_the_delivery_log_listing_refuses_a_limit_below_one(platform):
    """``limit`` of the delivery log listing: 1 to 1000. A negative one was used as a Python slice end, and the
    operator got the log without its last entries instead of an error."""
    receiver = Receiver()
    try:
        account = _account_with(platform, receiver.url + "/ok")
        tx = _sale(platform, account)
        (m,) = _receive(platform, 1)
        assert _handler(platform)(_event([m]), _Context(30)) == {"batchItemFailures": []}
        path = f"/admin/v1/accounts/{account['account_id']}/deliveries"
        for bad in ("-1", "0"):
            status, answer = admin(platform, "GET", path, query={"transaction_id": tx, "limit": bad})
            assert status == 400, answer
        status, answer = admin(platform, "GET", path, query={"transaction_id": tx, "limit": "1"})
        assert status == 200 and [a["status"] for a in answer["attempts"]] == ["delivered"]
    finally:
        receiver.close()
