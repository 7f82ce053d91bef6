"""Issue 28, placements 4, 7 and 8 on moto: one POST per delivery id and attempt whatever copies the queue holds
and whichever bookkeeping write fails; a tokenization ``read`` whose answer was lost recovered by its caller;
RSAPI page 2 of the default range at the client's pace. Faults are placed at the AWS boundary
(:mod:`tests.aws_faults`), time is moved with :mod:`vaultcore.clock`; nothing sleeps."""

from __future__ import annotations

import base64
import json
import time

import boto3
import pytest

from tests.aws_faults import AwsFaults
from tests.helpers import call
from tests.integration.test_gateway import RSAPI, Gateway, _account, _partner
from tests.postback_receiver import Receiver
from vaultcore import clock
from vaultcore.auth.hmac_scheme import build_hmac_header
from vaultcore.gateway.errors import E
from vaultcore.settings import settings


# ------------------------------------------------------------------------------------- 8: RSAPI paging is stable
class _FrozenClock:
    """``vaultcore.clock.now`` held still, moved only by the test: no dependence on the machine's speed."""

    def __init__(self, monkeypatch) -> None:
        self.t = float(int(time.time()))
        monkeypatch.setattr(clock, "now", lambda: self.t)

    def advance(self, seconds: float) -> None:
        self.t += seconds


def test_page_two_of_the_default_range_at_the_clients_pace(platform, monkeypatch):
    from vaultcore.gateway.reporting import PAGE_TOKEN_SECONDS

    frozen = _FrozenClock(monkeypatch)
    gw = Gateway(platform, _account(platform, _partner(platform)))
    ids = set()
    for _ in range(3):
        ids.add(gw.card()["transaction_id"])
        frozen.advance(1)
    first = gw.report(limit="2")  # start_date / end_date left to their default: the last 24 hours
    assert first["count"] == 2 and first["next_token"]
    open_batch = gw.report(batch_id="1", limit="2")  # the open batch ends "now" too
    frozen.advance(3600)  # an hour later the default range has moved
    second = gw.report(limit="2", next_token=first["next_token"])
    assert second["error"] is False, second
    assert {t["transaction_id"] for t in first["transactions"] + second["transactions"]} == ids
    assert second["next_token"] is None
    batch_page = gw.report(batch_id="1", limit="2", next_token=open_batch["next_token"])
    assert {t["transaction_id"] for t in open_batch["transactions"] + batch_page["transactions"]} == ids

    def code(**v):
        return call(platform, "ReportingFunction", "POST", RSAPI, {**gw.creds, **v})[2]["error_code"]

    # the token names its range: another range or a batch is refused
    assert code(next_token=first["next_token"], start_date="2020-01-01", end_date="2020-01-02") == E.REPORT_PAGE_TOKEN
    assert code(next_token=first["next_token"], batch_id="1") == E.REPORT_PAGE_TOKEN
    assert code(next_token=open_batch["next_token"], start_date="2020-01-01") == E.REPORT_PAGE_TOKEN
    # tampering is evident: the range widened (payload re-encoded), or any one character changed
    token = first["next_token"]
    payload, mac = token.split(".")
    data = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    wider = base64.urlsafe_b64encode(json.dumps({**data, "s": data["s"] - 86400},
                                                separators=(",", ":")).encode()).decode().rstrip("=")
    assert code(next_token=wider + "." + mac) == E.REPORT_PAGE_TOKEN
    for i in (0, len(payload) // 2, len(token) - 1):
        assert code(next_token=token[:i] + ("A" if token[i] != "A" else "B") + token[i + 1:]) == E.REPORT_PAGE_TOKEN
    # another account's credentials cannot use it
    other = Gateway(platform, _account(platform, _partner(platform)))
    assert call(platform, "ReportingFunction", "POST", RSAPI,
                {**other.creds, "next_token": token})[2]["error_code"] == E.REPORT_PAGE_TOKEN
    # it lives PAGE_TOKEN_SECONDS from the first page (docs/integrators/gateway.md): past that, 803
    frozen.advance(PAGE_TOKEN_SECONDS - 3600)
    assert gw.report(limit="2", next_token=token)["transactions"] == second["transactions"]
    frozen.advance(1)
    assert code(limit="2", next_token=token) == E.REPORT_PAGE_TOKEN


# ------------------------------------------------------------------------- 4: one POST per delivery id and attempt
class _Context:
    def __init__(self, seconds: float) -> None:
        self._deadline = time.monotonic() + seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _copies(platform, n: int) -> list[dict]:
    """The postback queue's messages as SQS event records (each SQS message its own ``messageId``), after the
    Deliveries stream relay has queued what the gateway recorded."""
    platform.pump_streams()
    sqs = boto3.client("sqs", region_name="us-east-1")
    records: list[dict] = []
    for _ in range(10):
        out = sqs.receive_message(QueueUrl=settings().postback_queue_url, MaxNumberOfMessages=10,
                                  AttributeNames=["All"]).get("Messages", [])
        records += [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                     "attributes": dict(m["Attributes"]), "messageAttributes": {}, "eventSource": "aws:sqs",
                     "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackQueue",
                     "awsRegion": "us-east-1"} for m in out]
        if len(records) >= n:
            break
    assert len(records) == n, records
    return records


def _posts(receiver: Receiver, delivery_id: str) -> list[tuple[str, int]]:
    return [(r["headers"]["Vault-Delivery-Attempt"], r["status"]) for r in receiver.requests
            if r["headers"].get("Vault-Delivery-Id") == delivery_id]


def test_a_second_copy_is_not_posted_when_the_delivery_log_write_fails(platform, monkeypatch):
    """Issue 28 placement 4: a lost SendMessageBatch answer (the stream relay's) queues two copies of one postback; the receiver answers the
    first copy 200 and every delivery-log write after that POST fails. The second copy's claim fails: one POST.
    And a copy whose attempt failed (500) with its log write failing too is not lost: its own message, back
    after its lease, makes attempt 2, while the other copy is refused."""
    receiver = Receiver()
    try:
        ok_account = _account(platform, postback_url=receiver.url + "/ok")
        flaky_account = _account(platform, postback_url=receiver.url + "/flaky/1")
        sqs = AwsFaults.install("sqs", monkeypatch)
        ddb = AwsFaults.install("dynamodb", monkeypatch)
        handler = platform.modules["PostbackFunction"].lambda_handler
        for account, path in ((ok_account, "/ok"), (flaky_account, "/flaky/1")):
            gw = Gateway(platform, account)
            assert gw.card()["transaction_approved"] is True
            sqs.lose_answer("send_message_batch")  # the stream relay's send is applied twice: two copies
            first, second = _copies(platform, 2)
            sqs.clear()
            assert first["body"] == second["body"] and first["messageId"] != second["messageId"]
            delivery_id = json.loads(first["body"])["delivery_id"]
            # the claim (the first UpdateItem) goes through; every Deliveries write after the POST fails
            ddb.fail("update_item", after=1)  # the finish (one UpdateItem) and mark_delivered
            ddb.fail("put_item")
            out = handler({"Records": [first]}, _Context(30))
            ddb.clear()
            clock.set_offset(clock.offset() + 600)  # long after the first copy's lease
            assert handler({"Records": [second]}, _Context(30)) == {"batchItemFailures": []}  # refused, acknowledged
            if path == "/ok":
                assert out == {"batchItemFailures": []}
                assert _posts(receiver, delivery_id) == [("1", 200)]
                # the claim stays the first message's; a deferral of the other copy cannot reopen it either
                from vaultcore.postback import deliveries

                message = json.loads(second["body"])
                stored = deliveries.load_message(message["account_id"], delivery_id)
                assert stored is not None and (stored["state"], stored["holder"]) == ("sending", first["messageId"])
                with pytest.raises(deliveries.Claimed) as claimed:
                    deliveries.note_deferral(message, "circuit open", holder=second["messageId"])
                assert claimed.value.reason == "copy"  # a duplicate of the relay's: never the holder
            else:
                assert out == {"batchItemFailures": [{"itemIdentifier": first["messageId"]}]}
                assert _posts(receiver, delivery_id) == [("1", 500)]
                # the first copy's own message comes back (SQS): attempt 2, delivered once
                assert handler({"Records": [first]}, _Context(30)) == {"batchItemFailures": []}
                assert _posts(receiver, delivery_id) == [("1", 500), ("2", 200)]
                assert handler({"Records": [second]}, _Context(30)) == {"batchItemFailures": []}
                assert _posts(receiver, delivery_id) == [("1", 500), ("2", 200)]
        assert ddb.injected.count("fail:update_item") >= 3  # each finish, and the "delivered" fallback
    finally:
        receiver.close()


def test_a_relay_duplicate_after_a_failed_attempt_makes_no_extra_attempt(platform, monkeypatch):
    """The stream relay's SendMessageBatch is applied but answers an error: the event source mapping retries the
    batch and queues a second copy. The first copy's attempt 1 fails (500, recorded); the duplicate, received
    before the first copy comes back, is acknowledged without a POST (the claim admits a first copy only while
    nobody has claimed the delivery); the first copy's own message makes attempt 2. One POST per attempt."""
    receiver = Receiver()
    try:
        account = _account(platform, postback_url=receiver.url + "/flaky/1")
        sqs = AwsFaults.install("sqs", monkeypatch)
        handler = platform.modules["PostbackFunction"].lambda_handler
        assert Gateway(platform, account).card()["transaction_approved"] is True
        sqs.drop_answer("send_message_batch")  # applied; the relay reports the record failed; retried
        first, second = _copies(platform, 2)
        assert sqs.injected == ["drop:send_message_batch"]
        assert first["body"] == second["body"] and first["messageId"] != second["messageId"]
        delivery_id = json.loads(first["body"])["delivery_id"]
        assert handler({"Records": [first]}, _Context(30)) == {"batchItemFailures": [
            {"itemIdentifier": first["messageId"]}]}
        assert _posts(receiver, delivery_id) == [("1", 500)]
        clock.set_offset(clock.offset() + 600)  # past the retry schedule's delay
        assert handler({"Records": [second]}, _Context(30)) == {"batchItemFailures": []}  # skipped, no POST
        assert _posts(receiver, delivery_id) == [("1", 500)]
        assert handler({"Records": [first]}, _Context(30)) == {"batchItemFailures": []}
        assert _posts(receiver, delivery_id) == [("1", 500), ("2", 200)]
        assert handler({"Records": [second]}, _Context(30)) == {"batchItemFailures": []}  # delivered: skipped
        assert _posts(receiver, delivery_id) == [("1", 500), ("2", 200)]
    finally:
        receiver.close()


# ------------------------------------------------------------------------------- 7: a read recoverable by its caller
def test_a_read_whose_answer_was_lost_is_recovered_by_its_caller_only(platform, monkeypatch):
    """Issue 28 placement 7: the read's claim is applied and its answer lost (500). The same caller, retrying with
    its Idempotency-Key, gets the tokens; every other reader gets 3018; nothing new is kept past the read window."""
    import uuid

    from tests.integration.test_token_api import PAN, _values, post, tokenize
    from tests.integration.test_token_api import _partner as token_partner
    from vaultcore.store import tokens as token_store
    from vaultcore.tokens import service

    partner = token_partner(platform)
    bfid = tokenize(platform, partner, omit=1)["bfid"]
    kept = service.read_stored_tokens(partner["partnerId"], bfid)
    key = {"Idempotency-Key": f"read-{uuid.uuid4()}"}
    ddb = AwsFaults.install("dynamodb", monkeypatch)
    ddb.drop_answer("update_item", when=lambda kw: kw.get("TableName") == settings().tokens_table)
    status, _, lost = post(platform, partner, "/api/tokenization/read", {"bfid": bfid}, headers=key)
    assert status == 500 and ddb.injected == ["drop:update_item"], lost
    ddb.clear()
    # another reader, with no key or another key: read already
    for other in ({}, {"Idempotency-Key": f"read-{uuid.uuid4()}"}):
        status, _, out = post(platform, partner, "/api/tokenization/read", {"bfid": bfid}, headers=other)
        assert (status, out.get("errCode")) == (409, 3018), out
    # the caller, with its key: the tokens, as often as it asks within the read window
    for _ in range(2):
        status, _, read = post(platform, partner, "/api/tokenization/read", {"reference": "again", "bfid": bfid},
                               headers=key)
        assert status == 200 and read["bfid"] == bfid and read["reference"] == "again", read
        assert _values(read) == kept
    status, _, bad = post(platform, partner, "/api/tokenization/read", {"bfid": bfid},
                          headers={"Idempotency-Key": "k" * 256})
    assert (status, bad.get("errCode")) == (400, 3023), bad
    # what the claim keeps: no clear value, not the key itself, and nothing past the item's read window
    info, _, _ = service.verify_bfid(partner["partnerId"], bfid)
    item = token_store.get_token_item(info.scope)
    assert PAN not in json.dumps(item, default=str) and key["Idempotency-Key"] not in json.dumps(item, default=str)
    clock.set_offset(clock.offset() + service.READ_WINDOW_SECONDS + 1)
    raw = json.dumps({"bfid": bfid}).encode()
    signed = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), "/api/tokenization/read",
                               raw, timestamp=int(clock.now()))
    status, _, late = call(platform, "TokenizeFunction", "POST", "/api/tokenization/read", raw,
                           {"Authorization": signed, **key})
    assert (status, late.get("errCode")) == (409, 3011), late


def test_the_claim_admits_one_first_copy_its_own_returns_and_a_requeued_copy(platform, monkeypatch):
    """The conditional write behind "a relay duplicate is a no-op", on the delivery item itself (moto): of two
    first copies (two SQS messages of the relay) only the one that claims first ever claims; its own message
    claims again after a failure; the sender's requeued copy (``requeued``) takes over; a redrive resets it."""
    from vaultcore.postback import deliveries

    receiver = Receiver()
    try:
        account = _account(platform, postback_url=receiver.url + "/ok")
        assert Gateway(platform, account).card()["transaction_approved"] is True
        (record,) = _copies(platform, 1)
        message = json.loads(record["body"])
        stored = deliveries.load_message(message["account_id"], message["delivery_id"])
        # issue 29: the Transactions stream is the outbox; the delivery item is created by the first claim
        assert stored is None
        first = deliveries.claim(message, 30, holder="sqs-a")
        assert first["attempt"] == 1 and first["holder"] == "sqs-a"
        deliveries.finish(first, 1, "failed", 500, 3.0, "HTTP 500", "")
        with pytest.raises(deliveries.Claimed) as refused:
            deliveries.claim(message, 30, holder="sqs-b")  # the relay's duplicate: no attempt 2 from it
        assert refused.value.reason == "copy"
        with pytest.raises(deliveries.Claimed):
            deliveries.note_deferral(message, "circuit open", holder="sqs-b")  # nor a deferral entry
        again = deliveries.claim(message, 30, holder="sqs-a")  # the first copy's own message, back
        assert again["attempt"] == 2
        deliveries.finish(again, 2, "failed", 500, 3.0, "HTTP 500", "")
        requeued = deliveries.claim({**message, "requeued": 1}, 30, holder="sqs-c")  # its fresh copy
        assert requeued["attempt"] == 3 and requeued["holder"] == "sqs-c"
        deliveries.finish(requeued, 3, "dead-lettered", 500, 3.0, "HTTP 500", "")
        deliveries.restart_attempts(record["body"])  # the operator's redrive of the dead-lettered message
        redriven = deliveries.claim(message, 30, holder="sqs-d")
        assert redriven["attempt"] == 1 and redriven["holder"] == "sqs-d"
        stored = deliveries.load_message(message["account_id"], message["delivery_id"])
        assert isinstance(stored["message"], bytes)  # deflated: the item stays under 1 KB
        assert json.loads(deliveries.message_body(stored)) == message
    finally:
        receiver.close()
