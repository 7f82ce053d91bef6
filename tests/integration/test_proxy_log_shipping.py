"""Issue 13: the proxy's masked log leaves the request path (one structured line, carried by a CloudWatch Logs
subscription to ProxyLogShipperFunction) and none is lost: every exchange reaches the ProxyLogs table once."""

from __future__ import annotations

import base64
import gzip
import json

import pytest
from botocore.stub import Stubber

from local.log_subscriptions import subscription_event
from tests.aws_calls import AwsCalls
from tests.helpers import admin
from tests.integration.test_proxy import _call, _create, _doc
from tests.proxy_target import Target
from vaultcore.proxy import log_shipping


@pytest.fixture
def partner(platform):
    status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Log Co", "apiSecurity": "hmac"})
    assert status == 201
    return p


def _logs(platform, partner, ref) -> list[dict]:
    status, body = admin(platform, "GET", f"/admin/v1/partners/{partner['partnerId']}/proxy-logs",
                         query={"configReferenceID": ref, "limit": "100"})
    assert status == 200, body
    return body["logs"]


def test_the_request_path_makes_one_aws_call_and_the_log_still_arrives(platform, partner):
    with Target() as target:
        ref = _create(platform, partner, _doc(target.url + "/echo"))
        _call(platform, partner, ref)  # warm: partner, configuration and keys cached
        lines: list[str] = []
        log_shipping.add_listener(lines.append)
        try:
            with AwsCalls() as calls:
                status, _, _ = _call(platform, partner, ref, '{"n": 1}')
        finally:
            log_shipping.remove_listener(lines.append)
        assert status == 200
        # The proxy's own calls, without the shipper's (which the runner stand-in invokes after the proxy): the
        # shipper's BatchWriteItem is the only other call recorded.
        proxy_calls = {op: n for op, n in calls.by_operation.items() if op != "dynamodb.BatchWriteItem"}
        assert proxy_calls == {"dynamodb.PutItem": 1}, calls.by_operation  # the nonce, nothing else
        assert calls.by_operation["dynamodb.BatchWriteItem"] == 1  # the subscription's delivery
        assert len(lines) == 1 and json.loads(lines[0])[log_shipping.MARKER] == 1
        assert len(_logs(platform, partner, ref)) == 2


def test_many_exchanges_lose_none_and_a_redelivery_stores_nothing_twice(platform, partner):
    lines: list[str] = []
    log_shipping.add_listener(lines.append)
    try:
        with Target() as target:
            ref = _create(platform, partner, _doc(target.url + "/echo"))
            for n in range(30):
                assert _call(platform, partner, ref, json.dumps({"n": n}))[0] == 200
    finally:
        log_shipping.remove_listener(lines.append)
    stored = _logs(platform, partner, ref)
    assert len(stored) == 30 and len({entry["logId"] for entry in stored}) == 30
    assert sorted(json.loads(entry["request"]["body"])["n"] for entry in stored) == list(range(30))
    # CloudWatch may deliver a batch again: the same lines, the same keys, nothing added.
    assert log_shipping.ship(subscription_event("ProxyFunction", "f", lines, "123456789012")) == {"stored": 30}
    assert len(_logs(platform, partner, ref)) == 30


def test_the_shipper_reads_what_cloudwatch_delivers():
    item = {"partnerId": "p1", "logId": "0000000000001-aa", "status": 200}
    marked = json.dumps({log_shipping.MARKER: 1, "item": item})
    payload = {"messageType": "DATA_MESSAGE", "owner": "1", "logGroup": "/aws/lambda/x", "logStream": "s",
               "subscriptionFilters": ["f"], "logEvents": [
                   {"id": "1", "timestamp": 1, "message": marked},
                   # Lambda's own lines and the function's other logs are not proxy log items
                   {"id": "2", "timestamp": 1, "message": "START RequestId: 8f5 Version: $LATEST"},
                   {"id": "3", "timestamp": 1, "message": '{"level": "INFO", "message": "request done"}'},
                   {"id": "4", "timestamp": 1, "message": "2026-11-23T20:00:00.000Z\t8f5\tINFO\t" + marked}]}
    event = {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(payload).encode())).decode()}}
    assert log_shipping.decode_subscription_event(event) == [item, item]
    control = {**payload, "messageType": "CONTROL_MESSAGE"}
    assert log_shipping.decode_subscription_event(
        {"awslogs": {"data": base64.b64encode(gzip.compress(json.dumps(control).encode())).decode()}}) == []


def test_unprocessed_items_are_retried_and_a_batch_that_cannot_be_stored_fails_the_delivery(platform):
    from vaultcore.store.aws import dynamodb

    items = [{"partnerId": "p1", "logId": f"{n:013d}-aa", "status": 200} for n in range(27)]
    event = subscription_event("ProxyFunction", "f", [json.dumps({log_shipping.MARKER: 1, "item": i}) for i in items],
                               "123456789012")
    client = dynamodb()
    with Stubber(client) as stub:
        # Batches of 25 and 2; the first answers with one unprocessed item, which is sent again.
        unprocessed = {"UnprocessedItems": {"ProxyLogs": [{"PutRequest": {"Item": {"partnerId": {"S": "p1"}}}}]}}
        stub.add_response("batch_write_item", unprocessed, None)
        stub.add_response("batch_write_item", {"UnprocessedItems": {}}, None)
        stub.add_response("batch_write_item", {"UnprocessedItems": {}}, None)
        assert log_shipping.ship(event) == {"stored": 27}
        stub.assert_no_pending_responses()
    with Stubber(client) as stub:
        for _ in range(6):
            stub.add_response("batch_write_item", {"UnprocessedItems": {
                "ProxyLogs": [{"PutRequest": {"Item": {"partnerId": {"S": "p1"}}}}]}}, None)
        with pytest.raises(RuntimeError):
            log_shipping.ship(event)


def test_an_oversized_line_keeps_its_entry_without_the_bodies(capsys):
    item = {"partnerId": "p1", "logId": "1-a", "request": {"body": "x" * log_shipping.MAX_LINE_BYTES}}
    log_shipping.emit(item)
    line = capsys.readouterr().out.strip()
    stored = json.loads(line)["item"]
    assert "request" not in stored and "logError" in stored and len(line) < log_shipping.MAX_LINE_BYTES
