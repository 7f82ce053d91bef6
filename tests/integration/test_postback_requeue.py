"""Postbacks the relay never queued, found again from their transactions (the management API's requeue).

With the Transactions table's stream as the outbox, a new transaction's postback exists only as the transaction
item's ``postback`` flag and ``delivery_id`` until the sender first claims it. If the relay cannot queue the
stream's records before the stream drops them (24 hours), ``POST /admin/v1/accounts/{id}/deliveries/requeue``
reads the account's transactions in a window and queues each flagged one's message as the relay would have. Here
the stream is never pumped (the records are as good as gone); every postback is queued by the requeue, delivered
once, and a second requeue of the same window (an operator's over-wide retry) POSTs nothing again.
"""

from __future__ import annotations

import json

import boto3

from tests.helpers import admin, call
from tests.postback_receiver import Receiver
from vaultcore import clock
from vaultcore.settings import settings

PATH = "/api/qsapi/3.8"


def _received(platform) -> int:
    """Every message on the postback queue, through the sender (as its event source mapping hands them over)."""
    sqs = boto3.client("sqs", region_name="us-east-1")
    handled = 0
    while True:
        got = sqs.receive_message(QueueUrl=settings().postback_queue_url, MaxNumberOfMessages=10,
                                  AttributeNames=["All"]).get("Messages", [])
        if not got:
            return handled
        records = [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                    "attributes": m["Attributes"], "messageAttributes": {}, "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackFifoQueue.fifo",
                    "awsRegion": "us-east-1"}
                   for m in got]
        assert platform.invoke("PostbackFunction", {"Records": records}) == {"batchItemFailures": []}
        for m in got:
            sqs.delete_message(QueueUrl=settings().postback_queue_url, ReceiptHandle=m["ReceiptHandle"])
        handled += len(got)


def test_postbacks_the_relay_never_queued_are_requeued_from_their_transactions_and_posted_once(platform):
    receiver = Receiver()
    try:
        status, account = admin(platform, "POST", "/admin/v1/accounts", {"postback_url": receiver.url + "/pb"})
        assert status == 201, account
        status, other = admin(platform, "POST", "/admin/v1/accounts", {"postback_url": receiver.url + "/other"})
        assert status == 201, other
        start = int(clock.now())
        sales = []
        for who, amount in ((account, "1.00"), (account, "2.00"), (other, "3.00"), (account, "4.00")):
            status, _, sale = call(platform, "GatewayFunction", "POST", PATH, json.dumps({
                "account_id": who["account_id"], "api_accesskey": who["api_accesskey"], "transaction_type": "SALE",
                "tender_type": "CARD", "card_number": "4242424242424242", "card_expiration": "1230",
                "transaction_amount": amount, "currency": "USD"}), {"Content-Type": "application/json"},
                resource=PATH)
            assert status == 200 and sale["transaction_approved"] is True, sale
            sales.append((who["account_id"], sale["transaction_id"]))
        mine = {tid for aid, tid in sales if aid == account["account_id"]}
        path = f"/admin/v1/accounts/{account['account_id']}/deliveries/requeue"

        # paged: two transactions a call, continued with `next`
        status, first = admin(platform, "POST", path, {"from": start - 60, "to": start + 60, "limit": 2})
        assert status == 200 and (first["scanned"], first["queued"]) == (2, 2) and first["next"], first
        status, rest = admin(platform, "POST", path, {"from": start - 60, "to": start + 60, "after": first["next"]})
        assert status == 200 and (rest["scanned"], rest["queued"], rest["next"]) == (1, 1, None), rest
        assert _received(platform) == 3
        posted = receiver.delivered("/pb")
        assert sorted(r["transaction_id"] for p in posted for r in json.loads(p["body"])["responses"]) == sorted(mine)
        assert receiver.delivered("/other") == []  # another account's postback is not this account's to requeue

        # the same window again: accepted by SQS, and not delivered within its 5-minute deduplication interval
        # (the same deduplication ids); a copy sent later is received, and skipped by the sender's read
        status, again = admin(platform, "POST", path, {"from": start - 60, "to": start + 60})
        assert status == 200 and again["queued"] == 3, again
        assert _received(platform) == 0
        assert len(receiver.delivered("/pb")) == 3

        # the relay catching up later: its sends of these deliveries are absorbed the same way; the other
        # account's postback, never queued, is delivered once
        platform.pump_streams()
        assert _received(platform) == 1
        assert len(receiver.delivered("/pb")) == 3 and len(receiver.delivered("/other")) == 1
    finally:
        receiver.close()


def test_a_requeue_window_is_checked(platform):
    status, account = admin(platform, "POST", "/admin/v1/accounts", {})
    assert status == 201
    path = f"/admin/v1/accounts/{account['account_id']}/deliveries/requeue"
    for body in ({}, {"from": 10, "to": 5}, {"from": 0, "to": 40 * 86400}, {"from": 0, "to": 10, "limit": 0},
                 {"from": 0, "to": 10, "after": "x"}, {"from": "0", "to": 10}):
        status, refused = admin(platform, "POST", path, body)
        assert status == 400 and refused["errCode"] == 400, (body, refused)
    status, empty = admin(platform, "POST", path, {"from": 0, "to": 10})
    assert status == 200 and (empty["scanned"], empty["queued"], empty["next"]) == (0, 0, None)
