"""Issue 14 on moto: each handler's invocation ends with one EMF line holding what its domain code counted —
decrypt results and authentication causes (parser), phase latencies by target status (proxy), attempts,
deliveries and dead letters (postbacks) — and the postback batch's lines carry their correlation ids."""

from __future__ import annotations

import base64
import io
import json
import logging

import boto3

from tests.helpers import admin, call
from tests.postback_receiver import Receiver
from tests.proxy_target import Target
from vaultcore import metrics
from vaultcore.auth.hmac_scheme import build_hmac_header


def _emf(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"_aws"')]


def _logs(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith('{"level"')]


def test_a_parser_refusal_counts_the_decrypt_code_and_the_authentication_cause(platform, capsys):
    metrics.discard()
    capsys.readouterr()
    status, _, body = call(platform, "ParserFunction", "POST", "/api/decrypt/parser",
                           {"partnerId": "nobody", "partnerKey": "x" * 20, "deviceType": "terminal"})
    assert body["errCode"] == 1103
    (doc,) = _emf(capsys.readouterr().out)
    assert (doc["DecryptResults"], doc["Code"]) == (1, "1103")
    assert (doc["AuthenticationFailures"], doc["Cause"]) == (1, "unknown_partner")
    assert doc["Function"] == "ParserFunction"


def test_a_proxy_exchange_publishes_its_phases_by_target_status(platform, capsys):
    status, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "Metrics Co", "apiSecurity": "hmac"})
    assert status == 201
    with Target() as target:
        doc = {"proxy": {"authorization": {"type": "passthrough", "headerName": "X-Key"}, "method": "post",
                         "target": target.url + "/echo"}, "actions": []}
        status, created = admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/proxy-configurations",
                                doc)
        assert status == 201, created
        path = f"/api/v1/partners/{partner['partnerId']}/configurations/{created['configReferenceID']}"
        auth = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), path, b"{}")
        metrics.discard()
        capsys.readouterr()
        status, _, _ = call(platform, "ProxyFunction", "POST", path, "{}", {"Authorization": auth, "X-Key": "k"},
                            path_params={"partnerID": partner["partnerId"],
                                         "configReferenceID": created["configReferenceID"]})
    (emf,) = _emf(capsys.readouterr().out)
    assert emf["TargetStatus"] == f"{status // 100}xx"
    for name in ("ProxyAuthLatency", "ProxyConfigLatency", "ProxyTargetLatency", "ProxyOwnLatency",
                 "ProxyTotalLatency", "ProxyLogLatency"):
        assert isinstance(emf[name], float) and emf[name] >= 0, name
    assert emf["ProxyTotalLatency"] >= emf["ProxyTargetLatency"]


def test_a_postback_batch_counts_deliveries_and_dead_letters(platform, capsys, monkeypatch):
    from vaultcore.postback.sender import max_receive_count

    receiver = Receiver()
    try:
        def account(url: str) -> dict:
            status, created = admin(platform, "POST", "/admin/v1/accounts", {"options": {}, "postback_url": url})
            assert status == 201, created
            return created

        for acct in (account(receiver.url + "/ok"), account(receiver.url + "/down")):
            status, _, body = call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", {
                "account_id": acct["account_id"], "api_accesskey": acct["api_accesskey"],
                "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
                "card_expiration": "1230", "transaction_amount": "5.00", "currency": "USD"})
            assert body["transaction_approved"] is True
        platform.pump_streams()  # the Deliveries stream relay queues them
        sqs = boto3.client("sqs", region_name="us-east-1")
        messages = []
        while len(messages) < 2:
            got = sqs.receive_message(QueueUrl=platform.refs["PostbackFifoQueue"], MaxNumberOfMessages=2,
                                      AttributeNames=["All"]).get("Messages", [])
            assert got
            messages += got
        records = [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                    "attributes": {**m["Attributes"], "ApproximateReceiveCount": str(max_receive_count())},
                    "messageAttributes": {}, "eventSource": "aws:sqs"} for m in messages]
        # Attempts are counted by the delivery log (issue 18): both messages have had all but their last attempt.
        from vaultcore.postback.deliveries import partition, sort_key
        from vaultcore.settings import settings

        for m in messages:
            body = json.loads(m["Body"])
            boto3.client("dynamodb", region_name="us-east-1").put_item(TableName=settings().deliveries_table, Item={
                "account_id": {"S": partition(body["account_id"], body["delivery_id"])},
                "attempt_key": {"S": sort_key(body["delivery_id"])}, "state": {"S": "failed"},
                "attempt": {"N": str(max_receive_count() - 1)}, "message": {"S": m["Body"]},
                "holder": {"S": m["MessageId"]}})  # made by this message: a relay duplicate would be skipped
        metrics.discard()
        capsys.readouterr()
        log_stream = io.StringIO()  # the JSON log handler writes to the stdout it was configured with
        monkeypatch.setattr(logging.getLogger("vault").handlers[0], "stream", log_stream)
        result = platform.invoke("PostbackFunction", {"Records": records})
    finally:
        receiver.close()
    assert len(result["batchItemFailures"]) == 1
    out = capsys.readouterr().out
    (doc,) = _emf(out)
    assert (doc["PostbackAttempts"], doc["PostbackDelivered"], doc["PostbackDeadLettered"], doc["PostbackFailed"]) \
        == (2, 1, 1, 0)
    assert doc["Function"] == "PostbackFunction" and doc["correlation_id"]
    # Each record's lines carry its SQS message id.
    lines = _logs(log_stream.getvalue())
    ids = {line["correlation_id"] for line in lines if line["message"].startswith("postback ")}
    assert ids == {m["MessageId"] for m in messages}
    assert "4242424242424242" not in out + log_stream.getvalue()
