"""The postback stream relay (vaultcore.postback.relay): what it queues, what it reports failed, what it
publishes; and the local runner's DynamoDB stream event source (local.streams): Lambda's filter patterns,
partial batch responses, bisection, retries and the failure destination, against moto's DynamoDB Streams."""

from __future__ import annotations

import json
from types import SimpleNamespace

import boto3
import pytest

from local.streams import StreamSource, matches
from tests.unit.test_metrics import assert_emf
from vaultcore import metrics
from vaultcore.postback import relay


def _record(seq: int, *, name: str = "INSERT", state: str = "unsent", body: str | None = None) -> dict:
    image = {"account_id": {"S": "a1#00"}, "attempt_key": {"S": f"MSG#d{seq}"}, "state": {"S": state},
             "message": {"S": body or json.dumps({"delivery_id": f"d{seq}", "account_id": "a1"})}}
    return {"eventName": name, "eventSource": "aws:dynamodb",
            "dynamodb": {"NewImage": image, "SequenceNumber": str(100 + seq)}}


class _Sqs:
    """SQS at the boundary: SendMessageBatch that refuses the bodies in ``refuse``, or fails whole (``down``)."""

    def __init__(self, refuse: set[str] = frozenset(), down: bool = False):  # type: ignore[assignment]
        self.refuse, self.down = refuse, down
        self.sent: list[str] = []
        self.ids: list[tuple[str, str]] = []  # (MessageGroupId, MessageDeduplicationId) of each entry sent
        self.calls = 0

    def send_message_batch(self, QueueUrl: str, Entries: list[dict]) -> dict:  # noqa: N803 - boto3's names
        self.calls += 1
        if self.down:
            raise ConnectionError("SQS unreachable")
        failed = [{"Id": e["Id"], "Code": "InternalError", "SenderFault": False} for e in Entries
                  if e["MessageBody"] in self.refuse]
        self.sent += [e["MessageBody"] for e in Entries if e["MessageBody"] not in self.refuse]
        self.ids += [(e["MessageGroupId"], e["MessageDeduplicationId"]) for e in Entries]
        return {"Successful": [], "Failed": failed}


def _relay(monkeypatch, capsys, records: list[dict], sqs: _Sqs) -> tuple[dict, list[dict]]:
    monkeypatch.setattr(relay, "client", lambda name: sqs)
    monkeypatch.setattr(relay, "settings", lambda: SimpleNamespace(postback_queue_url="https://queue"))
    capsys.readouterr()
    result = relay.relay({"Records": records}, SimpleNamespace(aws_request_id="relay-1",
                                                               function_name="PostbackOutboxFunction"))
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    return result, emf


def test_the_relay_queues_new_postbacks_ten_per_call_and_reports_the_refused(monkeypatch, capsys):
    records = [_record(i) for i in range(12)]
    refused = records[3]["dynamodb"]["NewImage"]["message"]["S"]
    sqs = _Sqs(refuse={refused})
    result, emf = _relay(monkeypatch, capsys, records, sqs)
    assert sqs.calls == 2 and len(sqs.sent) == 11 and refused not in sqs.sent
    assert result == {"batchItemFailures": [{"itemIdentifier": "103"}]}
    # SQS FIFO: each entry is its delivery's message group, deduplicated by the delivery id and its marks, so a
    # retried batch sends the same ids again (queued once within SQS's deduplication interval)
    groups = [json.loads(r["dynamodb"]["NewImage"]["message"]["S"])["delivery_id"] for r in records]
    assert sqs.ids == [(g, f"{g}.r0q0") for g in groups]
    (doc,) = emf
    assert_emf(doc)
    assert (doc["PostbackRelayed"], doc["PostbackRelayFailed"]) == (11, 1) and doc["correlation_id"] == "relay-1"
    assert metrics.pending() == []


def _transaction_record(seq: int, *, name: str = "INSERT", flag: str | None = "tokens") -> dict:
    """A Transactions stream record as Lambda delivers it (numbers as strings, binary in base64)."""
    from vaultcore.store.ddb import to_item

    item = {"pk": "a1#3", "account_id": "a1", "transaction_id": f"00000000000{seq}", "created_at": 1_700_000_000,
            "transaction_type": "SALE", "transaction_cents": 1000, "request_cents": 1000, "card_brand": "Visa",
            "transaction_approved": True, "last4": "4242", "reissue": "1", "bfid": "bf1",
            "vault_token_card_number": "tok-1", "delivery_id": f"d{seq}", "writer": "w", "first_name": None}
    if flag:
        item["postback"] = flag
    image = {k: v for k, v in to_item(item).items()}
    image["blob"] = {"B": "AAE="}  # base64, as a Lambda event carries a binary attribute
    return {"eventName": name, "eventSource": "aws:dynamodb",
            "dynamodb": {"NewImage": image, "SequenceNumber": str(200 + seq)}}


def test_the_relay_queues_a_flagged_transaction_with_the_message_the_gateway_builds(monkeypatch, capsys):
    """Issue 29: the Transactions stream is the outbox. The message is built from the image exactly as
    ``postbacks.message_from_item`` builds it from the stored item (token fields only with the ``tokens`` flag);
    unflagged inserts and updates of transactions are not queued, and the template's filter agrees."""
    from vaultcore.gateway import postbacks
    from vaultcore.gateway.records import response_from_item

    sqs = _Sqs()
    records = [_transaction_record(1), _transaction_record(2, flag="plain"), _transaction_record(3, flag=None),
               _transaction_record(4, name="MODIFY")]
    result, _ = _relay(monkeypatch, capsys, records, sqs)
    assert result == {"batchItemFailures": []}
    first, second = (json.loads(b) for b in sqs.sent)
    assert first["delivery_id"] == "d1" and second["delivery_id"] == "d2"
    assert (first["account_id"], first["transaction_id"], first["created_at"]) == ("a1", "000000000001", 1_700_000_000)
    expected = {**response_from_item({"transaction_id": "000000000001", "transaction_type": "SALE",
                                      "transaction_cents": 1000, "request_cents": 1000, "card_brand": "Visa",
                                      "transaction_approved": True, "last4": "4242"}),
                "account_id": "a1", "bfid": "bf1", "reissue": "1"}
    expected.update({name: "" for name in postbacks.RSAPI_TOKEN_FIELDS})
    expected["vault_token_card_number"] = "tok-1"
    assert first["response"] == expected
    assert "bfid" not in second["response"] and second["response"]["reissue"] == "1"
    assert [relay.wanted(r) for r in records] == [matches(relay.TRANSACTIONS_FILTER_PATTERN, r) for r in records]
    assert [relay.wanted(r) for r in records] == [True, True, False, False]


def test_the_relay_reports_a_whole_chunk_when_sqs_cannot_be_reached(monkeypatch, capsys):
    result, _ = _relay(monkeypatch, capsys, [_record(1), _record(2)], _Sqs(down=True))
    assert result == {"batchItemFailures": [{"itemIdentifier": "101"}, {"itemIdentifier": "102"}]}


def test_the_relay_queues_only_what_its_filter_passes(monkeypatch, capsys):
    sqs = _Sqs()
    records = [_record(1, name="MODIFY"), _record(2, state="sending"), _record(3)]
    result, _ = _relay(monkeypatch, capsys, records, sqs)
    assert result == {"batchItemFailures": []}
    assert [json.loads(b)["delivery_id"] for b in sqs.sent] == ["d3"]
    assert [relay.wanted(r) for r in records] == [matches(relay.FILTER_PATTERN, r) for r in records]


def test_the_relay_inflates_a_stored_message_as_a_lambda_event_carries_it(monkeypatch, capsys):
    """The gateway stores the message deflated (a ``B`` attribute: base64 in a Lambda event); SQS gets the JSON."""
    import base64

    from vaultcore.postback.deliveries import pack_message

    message = {"delivery_id": "d9", "account_id": "a1", "response": {"transaction_id": "1"}}
    record = _record(9)
    record["dynamodb"]["NewImage"]["message"] = {"B": base64.b64encode(pack_message(message)).decode()}
    sqs = _Sqs()
    assert _relay(monkeypatch, capsys, [record], sqs)[0] == {"batchItemFailures": []}
    assert [json.loads(b) for b in sqs.sent] == [message]


# ----------------------------------------------------------------------------- Lambda's filter pattern subset
@pytest.mark.parametrize(("pattern", "record", "expected"), [
    ({"eventName": ["INSERT"]}, {"eventName": "INSERT"}, True),
    ({"eventName": ["INSERT"]}, {"eventName": "MODIFY"}, False),
    ({"eventName": ["INSERT", "MODIFY"]}, {"eventName": "MODIFY"}, True),
    ({"eventName": ["INSERT"]}, {}, False),
    ({"dynamodb": {"NewImage": {"state": {"S": ["unsent"]}}}},
     {"dynamodb": {"NewImage": {"state": {"S": "unsent"}}}}, True),
    ({"dynamodb": {"NewImage": {"state": {"S": ["unsent"]}}}}, {"dynamodb": {"NewImage": {}}}, False),
    ({"dynamodb": {"NewImage": {"state": {"S": ["unsent"]}}}}, {"dynamodb": {"Keys": {}}}, False),
    ({"dynamodb": {"NewImage": {"attempt": {"N": [0]}}}}, {"dynamodb": {"NewImage": {"attempt": {"N": 0}}}}, True),
    ({"k": [{"prefix": "MSG#"}]}, {"k": "MSG#1"}, True),
    ({"k": [{"prefix": "MSG#"}]}, {"k": "ATT#1"}, False),
    ({"k": [{"exists": True}]}, {"k": "x"}, True),
    ({"k": [{"exists": False}]}, {"k": "x"}, False),
    ({"k": [{"exists": False}]}, {}, True),
    ({"k": [{"anything-but": ["a", "b"]}]}, {"k": "c"}, True),
    ({"k": [{"anything-but": "a"}]}, {"k": "a"}, False),
    ({"k": [None]}, {"k": None}, True),
])
def test_filter_patterns(pattern, record, expected):
    assert matches(pattern, record) is expected


def test_an_unsupported_filter_operator_is_refused_not_ignored():
    with pytest.raises(ValueError):
        matches({"k": [{"numeric": [">", 0]}]}, {"k": 1})


@pytest.mark.parametrize("event,pattern", [("Deliveries", relay.FILTER_PATTERN),
                                           ("Transactions", relay.TRANSACTIONS_FILTER_PATTERN)])
def test_the_templates_filter_is_the_relays(event, pattern):
    from local.template import load_template

    mapping = load_template()["Resources"]["PostbackOutboxFunction"]["Properties"]["Events"][event]
    (only,) = mapping["Properties"]["FilterCriteria"]["Filters"]
    assert json.loads(only["Pattern"]) == pattern


# ----------------------------------------------------------------------------- the stream event source
@pytest.fixture
def stream(bare_moto):
    """A table with a NEW_IMAGE stream and a failure queue in an in-process moto."""
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    table = ddb.create_table(
        TableName="T", BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_IMAGE"})["TableDescription"]
    sqs = boto3.client("sqs", region_name="us-east-1")
    failures = sqs.create_queue(QueueName="failures")["QueueUrl"]
    yield SimpleNamespace(ddb=ddb, sqs=sqs, arn=table["LatestStreamArn"], failures=failures,
                          streams=boto3.client("dynamodbstreams", region_name="us-east-1"))


def _source(stream, handler, checkpoint_path=None, **properties) -> StreamSource:
    props = {"StartingPosition": "TRIM_HORIZON", "BatchSize": 4, "BisectBatchOnFunctionError": True,
             "FunctionResponseTypes": ["ReportBatchItemFailures"], "MaximumRetryAttempts": 2,
             "FilterCriteria": {"Filters": [{"Pattern": json.dumps({"eventName": ["INSERT"]})}]}, **properties}
    return StreamSource("Fn", stream.arn, props, lambda function, event: handler(event),
                        lambda url, body: stream.sqs.send_message(QueueUrl=url, MessageBody=body), stream.failures,
                        stream.streams, checkpoint_path=checkpoint_path)


def _put(stream, *keys: str) -> None:
    for key in keys:
        stream.ddb.put_item(TableName="T", Item={"k": {"S": key}})


def _keys(event: dict) -> list[str]:
    return [r["dynamodb"]["Keys"]["k"]["S"] for r in event["Records"]]


def test_batches_in_order_filtered_lambda_shaped_and_checkpointed(stream):
    seen: list[list[str]] = []
    events: list[dict] = []

    def handler(event):
        events.append(event)
        seen.append(_keys(event))
        return {"batchItemFailures": []}

    _put(stream, "a", "b", "c")
    stream.ddb.update_item(TableName="T", Key={"k": {"S": "a"}}, UpdateExpression="SET v = :v",
                           ExpressionAttributeValues={":v": {"S": "1"}})  # a MODIFY: filtered out
    _put(stream, "d", "e")
    source = _source(stream, handler)
    assert source.pump() == 5
    assert [k for batch in seen for k in batch] == ["a", "b", "c", "d", "e"]
    assert all(len(batch) <= 4 for batch in seen)
    record = events[0]["Records"][0]
    assert record["eventSource"] == "aws:dynamodb" and record["eventSourceARN"] == stream.arn
    assert record["eventName"] == "INSERT" and record["dynamodb"]["NewImage"] == {"k": {"S": "a"}}
    assert isinstance(record["dynamodb"]["ApproximateCreationDateTime"], float)
    assert source.pump() == 0  # the checkpoint: nothing is read twice
    _put(stream, "f")
    assert source.pump() == 1 and seen[-1] == ["f"]
    # a restarted source without a checkpoint file reads again from TRIM_HORIZON (the consumers are idempotent)
    assert _source(stream, handler).pump() == 6


def test_a_checkpoint_file_resumes_a_restarted_source_after_the_last_batch_done(stream, tmp_path):
    """The runner's --aws-endpoint mode: a source that dies in the middle of a batch (the handler raises
    BaseException, as a SIGKILL stops the batch before its checkpoint) restarts from its file: the batches done
    before are not read again, the one not done is, as Lambda's mapping resumes after its checkpoint."""
    path = tmp_path / "checkpoints" / "fn.json"
    seen: list[list[str]] = []

    class Killed(BaseException):
        pass

    def dies_on_e(event):
        keys = _keys(event)
        if "e" in keys:
            raise Killed
        seen.append(keys)
        return {"batchItemFailures": []}

    _put(stream, "a", "b", "c", "d", "e", "f")
    first = _source(stream, dies_on_e, checkpoint_path=path, BatchSize=4)
    with pytest.raises(Killed):
        first.pump()
    assert seen == [["a", "b", "c", "d"]] and path.exists()

    def handler(event):
        seen.append(_keys(event))
        return {"batchItemFailures": []}

    restarted = _source(stream, handler, checkpoint_path=path, BatchSize=4)
    assert restarted.pump() == 2 and seen[-1] == ["e", "f"]
    assert _source(stream, handler, checkpoint_path=path).pump() == 0  # and the next restart reads nothing again


def test_a_partial_failure_is_retried_from_the_first_failed_record(stream):
    seen: list[list[str]] = []

    def handler(event):
        keys = _keys(event)
        seen.append(keys)
        if len(seen) == 1:  # the first try: b (and so c after it) again
            return {"batchItemFailures": [{"itemIdentifier": event["Records"][1]["dynamodb"]["SequenceNumber"]}]}
        return {"batchItemFailures": []}

    _put(stream, "a", "b", "c")
    assert _source(stream, handler).pump() == 3
    assert seen == [["a", "b", "c"], ["b", "c"]]


def test_an_error_bisects_the_batch_and_a_poison_record_goes_to_the_failure_destination(stream):
    seen: list[list[str]] = []

    def handler(event):
        keys = _keys(event)
        seen.append(keys)
        if "c" in keys:
            raise RuntimeError("poison")
        return {"batchItemFailures": []}

    _put(stream, "a", "b", "c", "d")
    source = _source(stream, handler)
    assert source.pump() == 4
    # [a b c d] fails -> [a b] done, [c d] fails -> [c] fails 1 + 2 retries, then given up; [d] done
    assert seen == [["a", "b", "c", "d"], ["a", "b"], ["c", "d"], ["c"], ["c"], ["c"], ["d"]]
    (failure,) = stream.sqs.receive_message(QueueUrl=stream.failures)["Messages"]
    info = json.loads(failure["Body"])["DDBStreamBatchInfo"]
    assert info["batchSize"] == 1 and info["streamArn"] == stream.arn
    assert info["startSequenceNumber"] == info["endSequenceNumber"]
    # the failure record names the range: the relay's redrive reads exactly that record again
    iterator = stream.streams.get_shard_iterator(StreamArn=stream.arn, ShardId=info["shardId"],
                                                 ShardIteratorType="AT_SEQUENCE_NUMBER",
                                                 SequenceNumber=info["startSequenceNumber"])["ShardIterator"]
    assert stream.streams.get_records(ShardIterator=iterator, Limit=1)["Records"][0]["dynamodb"]["Keys"] == {
        "k": {"S": "c"}}
    assert source.pump() == 0  # the shard moved on


def test_redrive_sends_the_failed_range_again(stream, monkeypatch):
    body = json.dumps({"delivery_id": "d1", "account_id": "a1"})
    stream.ddb.put_item(TableName="T", Item={"k": {"S": "x"}, "state": {"S": "unsent"}, "message": {"S": body}})
    stream.ddb.put_item(TableName="T", Item={"k": {"S": "y"}})  # not a postback: not sent
    shard = stream.streams.describe_stream(StreamArn=stream.arn)["StreamDescription"]["Shards"][0]["ShardId"]
    it = stream.streams.get_shard_iterator(StreamArn=stream.arn, ShardId=shard,
                                           ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
    records = stream.streams.get_records(ShardIterator=it)["Records"]
    sqs = _Sqs()
    monkeypatch.setattr(relay, "client", lambda name: sqs)
    monkeypatch.setattr(relay, "settings", lambda: SimpleNamespace(postback_queue_url="https://queue"))
    failure = {"DDBStreamBatchInfo": {"shardId": shard, "streamArn": stream.arn,
                                      "startSequenceNumber": records[0]["dynamodb"]["SequenceNumber"],
                                      "endSequenceNumber": records[-1]["dynamodb"]["SequenceNumber"]}}
    assert relay.redrive(failure, streams=stream.streams) == 1 and sqs.sent == [body]


def test_the_template_relays_the_deliveries_stream_with_retries_bisection_and_a_failure_destination():
    """No constant-key outbox index and no sweep: the Transactions and Deliveries streams, each read by an event
    source mapping that retries (bisecting), reports partial failures and gives up to an SQS failure destination."""
    from local.template import load_template

    resources = load_template()["Resources"]
    for name in ("DeliveriesTable", "TransactionsV2Table"):
        table = resources[name]["Properties"]
        assert "LocalSecondaryIndexes" not in table
        assert table["StreamSpecification"] == {"StreamViewType": "NEW_IMAGE"}
    assert "GlobalSecondaryIndexes" not in resources["DeliveriesTable"]["Properties"]
    function = resources["PostbackOutboxFunction"]["Properties"]
    assert sorted(function["Events"]) == ["Deliveries", "LegacyPostbacks", "Transactions"]
    # the forwarder of the standard queue of the release before (one release), acknowledging per record
    legacy = function["Events"].pop("LegacyPostbacks")
    assert legacy["Type"] == "SQS" and legacy["Properties"]["Queue"] == {"Fn::GetAtt": ["PostbackQueue", "Arn"]}
    assert legacy["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    for name, event in function["Events"].items():
        assert event["Type"] == "DynamoDB"
        props = event["Properties"]
        table = "DeliveriesTable" if name == "Deliveries" else "TransactionsV2Table"
        assert props["Stream"] == {"Fn::GetAtt": [table, "StreamArn"]}
        assert props["StartingPosition"] == "TRIM_HORIZON" and props["BisectBatchOnFunctionError"] is True
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert 0 <= props["MaximumRetryAttempts"] <= 10_000
        assert props["MaximumRecordAgeInSeconds"] < 86400  # inside the stream's retention: a redrive can read it
        destination = props["DestinationConfig"]["OnFailure"]
        assert destination["Type"] == "SQS"
        assert destination["Destination"] == {"Fn::GetAtt": ["PostbackRelayDeadLetterQueue", "Arn"]}
    policies = json.dumps(function["Policies"])
    assert "DynamoDBStreamReadPolicy" in policies and "PostbackRelayDeadLetterQueue" in policies
    assert "DynamoDBCrudPolicy" not in policies  # the relay reads the stream only: no table access
    # nobody sends to the postback queue from the request path any more
    for name in ("GatewayFunction", "CheckoutFunction"):
        assert "PostbackQueue" not in json.dumps(resources[name]["Properties"].get("Policies")), name
        assert "PostbackFifoQueue" not in json.dumps(resources[name]["Properties"].get("Policies")), name
