"""Postback body, hash (public facts' example), signature and the published retry schedule."""

from __future__ import annotations

import hashlib
import hmac
import json

import pytest

from vaultcore.postback.message import (
    RETRY_SCHEDULE_SECONDS,
    build_body,
    parse_schedule,
    postback_hash,
    retry_delay,
    signature_header,
    verify_signature,
)


def test_hash_matches_the_public_example():
    text = "123456789012,e6f157d2-66cf-43d5-8a56-c4c57d5760d7,1360870400"
    assert postback_hash("123456789012", "e6f157d2-66cf-43d5-8a56-c4c57d5760d7", 1360870400) == \
        hashlib.sha256(text.encode()).hexdigest()


def test_body_has_exactly_the_specified_members():
    body = json.loads(build_body("123456789012", "key", 1700000000, [{"transaction_id": "1", "account_id": "1"}]))
    assert list(body) == ["account_id", "timestamp", "count", "hash", "responses"]
    assert body["count"] == 1 and len(body["hash"]) == 64 and body["timestamp"] == 1700000000


def test_signature_is_over_the_exact_bytes():
    body = build_body("1", "k", 1700000000, [])
    header = signature_header(b"s3cret", 1700000000, body)
    expected = hmac.new(b"s3cret", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    assert verify_signature(b"s3cret", header, body, now=1700000010)
    assert not verify_signature(b"s3cret", header, body + b" ", now=1700000010)
    assert not verify_signature(b"other", header, body, now=1700000010)
    assert not verify_signature(b"s3cret", header, body, now=1700000000 + 301)  # replayed too late
    assert not verify_signature(b"s3cret", "garbage", body, now=1700000000)


def test_retry_schedule_goes_from_seconds_to_hours_and_repeats_its_last_delay():
    assert RETRY_SCHEDULE_SECONDS[0] == 10 and RETRY_SCHEDULE_SECONDS[-1] == 43200
    assert list(RETRY_SCHEDULE_SECONDS) == sorted(RETRY_SCHEDULE_SECONDS)
    assert retry_delay(1) == 10 and retry_delay(11) == 43200 and retry_delay(50) == 43200
    assert parse_schedule("1, 2,3") == (1, 2, 3) and parse_schedule(None) == RETRY_SCHEDULE_SECONDS
    with pytest.raises(ValueError):
        parse_schedule("1,99999")


def test_template_schedule_and_receive_count_agree():
    """12 attempts: the first, then one per scheduled delay; the queue's maxReceiveCount is the same number."""
    from local.template import load_template

    resources = load_template()["Resources"]
    schedule = parse_schedule(resources["PostbackFunction"]["Properties"]["Environment"]["Variables"][
        "POSTBACK_RETRY_SCHEDULE"])
    assert schedule == RETRY_SCHEDULE_SECONDS
    queue = resources["PostbackFifoQueue"]["Properties"]
    assert queue["RedrivePolicy"]["maxReceiveCount"] == len(schedule) + 1
    assert queue["VisibilityTimeout"] >= 6 * resources["PostbackFunction"]["Properties"]["Timeout"]


def test_fifo_ids_are_the_delivery_and_its_marks():
    """SQS FIFO ids of a postback message: its group is its delivery; a copy with the same marks deduplicates, an
    operator's redelivery or a fresh copy does not (vaultcore.postback.message.fifo_ids)."""
    from vaultcore.postback.message import fifo_ids, fresh_copy

    body = json.dumps({"delivery_id": "d-1", "account_id": "a", "transaction_id": "t", "response": {}})
    assert fifo_ids(body) == {"MessageGroupId": "d-1", "MessageDeduplicationId": "d-1.r0q0"}
    assert fifo_ids({**json.loads(body), "redelivery": 2}) == {"MessageGroupId": "d-1",
                                                                "MessageDeduplicationId": "d-1.r2q0"}
    copy = fresh_copy(body, 1_800_000_000.2, attempted=3)
    assert json.loads(copy) == {**json.loads(body), "requeued": 1, "not_before": 1_800_000_001, "attempted": 3}
    assert fifo_ids(copy)["MessageDeduplicationId"] == "d-1.r0q1"
    again = json.loads(fresh_copy(copy))  # a copy of the copy, due at once: its own id, the attempts kept
    assert (again["requeued"], "not_before" in again, again["attempted"]) == (2, False, 3)
    assert len(fifo_ids(json.dumps({"delivery_id": "0" * 36, "requeued": 10**6}))["MessageDeduplicationId"]) <= 128
