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
                     "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackFifoQueue.fifo",
                     "awsRegion": "us-east-1"} for m in out]
        if len(records) >= n:
            break
    assert len(records) == n, records
    return records


def _posts(receiver: Receiver, delivery_id: str) -> list[tuple[str, int]]:
    return [(r["headers"]["Vault-Delivery-Attempt"], r["status"]) for r in receiver.requests
            if r["headers"].get("Vault-Delivery-Id") == delivery_id]


def _later_copy(record: dict, dedup: str) -> None:
    """What a send of the same delivery after SQS's 5-minute deduplication interval queues (a relay batch retried
    late, a runner restarted onto its stream): the same body, the same message group, a deduplication id SQS no
    longer remembers."""
    message = json.loads(record["body"])
    boto3.client("sqs", region_name="us-east-1").send_message(
        QueueUrl=settings().postback_queue_url, MessageBody=record["body"], MessageGroupId=message["delivery_id"],
        MessageDeduplicationId=dedup)


def test_a_lost_relay_answer_queues_one_message_and_a_failed_log_write_repeats_no_attempt(platform, monkeypatch):
    """Issue 28 placement 4, on the SQS FIFO postback queue (issue 29): a lost SendMessageBatch answer (the stream
    relay's) sends one postback twice with one deduplication id: one message. The receiver answers it 200 and
    every delivery-log write after that POST fails: one POST, acknowledged. A copy whose attempt failed (500) with
    its log write failing too is not lost: a fresh copy that carries the attempt made is queued (``attempted``),
    and makes attempt 2, once; a copy queued later still is skipped."""
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
            sqs.lose_answer("send_message_batch")  # the stream relay's send is applied twice: deduplicated
            (first,) = _copies(platform, 1)
            assert "lose:send_message_batch" in sqs.injected
            sqs.clear()
            delivery_id = json.loads(first["body"])["delivery_id"]
            ddb.fail("update_item")  # every Deliveries write after the POST fails (finish, mark_delivered)
            out = handler({"Records": [first]}, _Context(30))
            ddb.clear()
            assert out == {"batchItemFailures": []}  # acknowledged either way
            _delete(first)  # as the event source mapping does
            if path == "/ok":
                assert _posts(receiver, delivery_id) == [("1", 200)]
            else:
                assert _posts(receiver, delivery_id) == [("1", 500)]
                clock.set_offset(clock.offset() + 600)  # past the retry schedule's delay
                (fresh,) = _copies(platform, 1)  # the fresh copy, attempted 1
                assert json.loads(fresh["body"])["attempted"] == 1
                assert handler({"Records": [fresh]}, _Context(30)) == {"batchItemFailures": []}
                _delete(fresh)
                assert _posts(receiver, delivery_id) == [("1", 500), ("2", 200)]
                _later_copy(first, "later")
                (later,) = _copies(platform, 1)
                assert handler({"Records": [later]}, _Context(30)) == {"batchItemFailures": []}  # delivered: skipped
                _delete(later)
                assert _posts(receiver, delivery_id) == [("1", 500), ("2", 200)]
        assert ddb.injected.count("fail:update_item") >= 3  # each finish, and the "delivered" fallback
    finally:
        receiver.close()


def _delete(record: dict) -> None:
    boto3.client("sqs", region_name="us-east-1").delete_message(QueueUrl=settings().postback_queue_url,
                                                                ReceiptHandle=record["receiptHandle"])


def test_a_relay_duplicate_after_a_failed_attempt_makes_no_extra_attempt(platform, monkeypatch):
    """The stream relay's SendMessageBatch is applied but answers an error: the event source mapping retries the
    batch and sends the postback again, with the same deduplication id: SQS FIFO queues it once. Attempt 1 fails
    (500, recorded); a copy queued later (past the deduplication interval) waits while the message is in flight
    (one message group per delivery: never two attempts of it at once); the message makes attempt 2, and the copy,
    handed out after it, is acknowledged without a POST. One POST per attempt."""
    receiver = Receiver()
    try:
        account = _account(platform, postback_url=receiver.url + "/flaky/1")
        sqs = AwsFaults.install("sqs", monkeypatch)
        handler = platform.modules["PostbackFunction"].lambda_handler
        assert Gateway(platform, account).card()["transaction_approved"] is True
        sqs.drop_answer("send_message_batch")  # applied; the relay reports the record failed; retried
        (first,) = _copies(platform, 1)
        assert sqs.injected == ["drop:send_message_batch"]
        delivery_id = json.loads(first["body"])["delivery_id"]
        _later_copy(first, "later")  # a copy of the same delivery, while the first is in flight
        plain = boto3.client("sqs", region_name="us-east-1")
        assert plain.receive_message(QueueUrl=settings().postback_queue_url, MaxNumberOfMessages=10,
                                     WaitTimeSeconds=0).get("Messages", []) == []  # its group is held
        assert handler({"Records": [first]}, _Context(30)) == {"batchItemFailures": [
            {"itemIdentifier": first["messageId"]}]}
        assert _posts(receiver, delivery_id) == [("1", 500)]
        clock.set_offset(clock.offset() + 600)  # past the retry schedule's delay
        assert handler({"Records": [first]}, _Context(30)) == {"batchItemFailures": []}  # the same message, back
        assert _posts(receiver, delivery_id) == [("1", 500), ("2", 200)]
        _delete(first)
        (later,) = _copies(platform, 1)
        assert later["body"] == first["body"] and later["messageId"] != first["messageId"]
        assert handler({"Records": [later]}, _Context(30)) == {"batchItemFailures": []}  # delivered: skipped
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


def test_the_outcome_write_numbers_each_attempt_once(platform, monkeypatch):
    """The conditional write behind "one POST per attempt", on the delivery item itself (moto): the first outcome
    creates the item (the Transactions stream is the outbox: nothing exists before); an attempt number already
    recorded is refused to any other writer, and the same writer's retry (a lost answer) is not appended twice; a
    redrive starts a fresh schedule whose attempts are numbered on (docs/integrators/webhooks.md: each
    ``Vault-Delivery-Attempt`` number is sent once); the message is stored deflated (the item stays under 1 KB)."""
    from vaultcore.errors import DependencyError
    from vaultcore.postback import deliveries

    receiver = Receiver()
    try:
        account = _account(platform, postback_url=receiver.url + "/ok")
        assert Gateway(platform, account).card()["transaction_approved"] is True
        (record,) = _copies(platform, 1)
        message = json.loads(record["body"])
        assert deliveries.read(message) is None  # issue 29: the delivery item is created by the first outcome
        deliveries.finish(message, None, 1, "failed", 500, 3.0, "HTTP 500", "", "writer-a")
        deliveries.finish(message, None, 1, "failed", 500, 3.0, "HTTP 500", "", "writer-a")  # its SDK retry
        with pytest.raises(DependencyError):  # another writer of attempt 1: refused
            deliveries.finish(message, None, 1, "failed", 500, 3.0, "HTTP 500", "", "writer-b")
        stored = deliveries.read(message)
        assert stored["attempt"] == 1 and len(stored["attempts"]) == 1
        deliveries.finish(message, stored, 2, "dead-lettered", 500, 3.0, "HTTP 500", "", "writer-c")
        with pytest.raises(deliveries.Finished):  # a deferral of a dead-lettered delivery: refused
            deliveries.note_deferral(message, "circuit open")
        deliveries.restart_attempts(record["body"])  # the operator's redrive of the dead-lettered message
        stored = deliveries.read(message)
        assert (stored["state"], stored["attempt"], stored["attempt_base"]) == ("pending", 2, 2)
        deliveries.finish(message, stored, 3, "delivered", 200, 3.0, None, "ok", "writer-d")
        stored = deliveries.load_message(message["account_id"], message["delivery_id"])
        assert isinstance(stored["message"], bytes)  # deflated: the item stays under 1 KB
        assert json.loads(deliveries.message_body(stored)) == message
        assert [(a["attempt"], a["status"]) for a in deliveries.list_attempts(
            message["account_id"], delivery_id=message["delivery_id"])] == [(3, "delivered"), (2, "dead-lettered"),
                                                                            (1, "failed")]
    finally:
        receiver.close()
