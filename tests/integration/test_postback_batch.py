"""The postback function as an SQS event source sees it: partial batch responses on moto."""

from __future__ import annotations

import json

import boto3

from tests.helpers import admin, call
from tests.postback_receiver import Receiver


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
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = platform.refs["PostbackQueue"]
        messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])["Messages"]
        assert len(messages) == 3
        event = {"Records": [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                              "attributes": m["Attributes"], "messageAttributes": {}, "eventSource": "aws:sqs",
                              "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackQueue",
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
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = platform.refs["PostbackQueue"]
        m = sqs.receive_message(QueueUrl=url, AttributeNames=["All"])["Messages"][0]
        record = {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                  "attributes": {**m["Attributes"]}, "messageAttributes": {}, "eventSource": "aws:sqs",
                  "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackQueue", "awsRegion": "us-east-1"}
        assert platform.invoke("PostbackFunction", {"Records": [record]}) == {"batchItemFailures": []}
        record["attributes"]["ApproximateReceiveCount"] = "2"  # the same message, received again
        assert platform.invoke("PostbackFunction", {"Records": [record]}) == {"batchItemFailures": []}
        assert len(receiver.delivered("/ok")) == 1
    finally:
        receiver.close()


def test_a_postback_sqs_refused_waits_in_the_outbox_and_is_delivered(platform, monkeypatch):
    """Nothing accepted is lost: the SALE succeeds while SQS is unavailable; the sweeper queues it later."""
    from vaultcore.settings import reset_settings

    receiver = Receiver()
    try:
        _, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}, "postback_url": receiver.url + "/ok"})
        real_queue = platform.refs["PostbackQueue"]
        monkeypatch.setenv("POSTBACK_QUEUE_URL", real_queue + "-unavailable")  # SQS answers NonExistentQueue
        reset_settings()
        status, _, sale = call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", {
            "account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
            "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
            "card_expiration": "1230", "transaction_amount": "7.00", "currency": "USD"})
        assert status == 200 and sale["transaction_approved"] is True
        sqs = boto3.client("sqs", region_name="us-east-1")
        assert "Messages" not in sqs.receive_message(QueueUrl=real_queue, WaitTimeSeconds=0)
        monkeypatch.setenv("POSTBACK_QUEUE_URL", real_queue)
        reset_settings()
        assert platform.invoke("PostbackOutboxFunction", {}) == {"sent": 1}
        assert platform.invoke("PostbackOutboxFunction", {}) == {"sent": 0}  # left the outbox
        m = sqs.receive_message(QueueUrl=real_queue, AttributeNames=["All"])["Messages"][0]
        assert json.loads(m["Body"])["transaction_id"] == sale["transaction_id"]
        record = {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                  "attributes": m["Attributes"], "messageAttributes": {}, "eventSource": "aws:sqs",
                  "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackQueue", "awsRegion": "us-east-1"}
        assert platform.invoke("PostbackFunction", {"Records": [record]}) == {"batchItemFailures": []}
        assert len(receiver.delivered("/ok")) == 1
    finally:
        receiver.close()
