"""Exactly once under faults, end to end (issue 18): the local runner against a moto server behind the fault proxy.

One stack for the module (tests/faults/harness.py): a moto server process, the fault-injecting proxy
(tests/faults/aws_fault_proxy.py), a postback receiver and ``python -m local.runner --aws-endpoint <proxy>``,
killed and restarted by the last scenario. Each scenario uses its own account (and partner), so they share the
stack without sharing data; the invariants are listed in tests/faults/harness.py. The short form runs here
(bursts of a few seconds); ``python -m bench.bench_faults`` runs the long form and prints the counts.

``FAULTS_PLATFORM_COMMIT=<commit>`` runs the same scenarios against the layer and functions of another commit
(for example the one before issue 18's retry-aware writes) to see what they catch.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.faults import harness
from tests.faults.aws_fault_proxy import FaultProxy
from tests.faults.harness import failures, http
from tests.faults.moto_server import MotoProcess

BURST_SECONDS = 4.0


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    yield from harness.stack_for_tests(tmp_path_factory, "faults")


def _assert_invariants(sc, violations):
    summary = sc.summary(violations)
    print(json.dumps(summary))
    assert not any(violations.values()), (f"{sc.name}: invariants broken\n{failures(violations)}\n"
                                          f"{json.dumps(summary)}")


# ------------------------------------------------------------------------------------------------ the proxy itself
@pytest.fixture(scope="module")
def moto_behind_proxy():
    import boto3
    from botocore.config import Config

    moto = MotoProcess()
    proxy = FaultProxy(moto.url).start()
    session = boto3.session.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                                    region_name="us-east-1")
    config = Config(retries={"total_max_attempts": 1, "mode": "standard"})
    through = session.client("dynamodb", endpoint_url=proxy.url, config=config)
    direct = session.client("dynamodb", endpoint_url=moto.url)
    direct.create_table(TableName="t", BillingMode="PAY_PER_REQUEST",
                        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}])
    yield proxy, through, direct
    proxy.stop()
    moto.stop()


@pytest.mark.parametrize("mode, rule, client_sees, applied", [
    ("lost_answer", {}, "ConnectionClosedError", True),
    ("reset_before", {}, "ConnectionClosedError", False),
    ("http_5xx", {}, "InternalServerError", False),
    ("http_5xx", {"status": 503}, "ServiceUnavailable", False),
    ("throttle", {}, "ProvisionedThroughputExceededException", False),
    ("throttle", {"code": "ThrottlingException"}, "ThrottlingException", False),
    ("delay", {"seconds": 0.3}, None, True),
])
def test_proxy_modes(moto_behind_proxy, mode, rule, client_sees, applied):
    """What the client sees and whether moto applied the write, per mode (a botocore client without retries)."""
    from botocore.exceptions import ClientError

    proxy, through, direct = moto_behind_proxy
    key = f"{mode}-{rule.get('status', '')}{rule.get('code', '')}"
    proxy.clear(counts=True)
    proxy.set_rules([{"mode": mode, "operations": ["PutItem"], "count": 1, **rule}])
    started = time.monotonic()
    seen = None
    try:
        through.put_item(TableName="t", Item={"k": {"S": key}})
    except ClientError as exc:
        seen = exc.response["Error"]["Code"]
    except Exception as exc:  # transport errors
        seen = type(exc).__name__
    assert seen == client_sees
    assert ("Item" in direct.get_item(TableName="t", Key={"k": {"S": key}}, ConsistentRead=True)) is applied
    assert proxy.counts.get(f"{mode} DynamoDB_20120810.PutItem") == 1
    if mode == "delay":
        assert time.monotonic() - started >= 0.3
    # count=1: the next call goes through untouched, and other operations never matched
    through.put_item(TableName="t", Item={"k": {"S": key + "-2"}})
    assert proxy.injected() == 1


def test_proxy_http_control(moto_behind_proxy):
    """Rules set and counts read over HTTP (what a test driving a subprocess does mid-run)."""
    proxy, through, _ = moto_behind_proxy
    rules = {"rules": [{"mode": "http_5xx", "operations": ["DynamoDB_20120810.GetItem"], "probability": 1.0}]}
    status, _, raw, _ = http(proxy.url + "/__faults", json.dumps(rules).encode(), {"Content-Type": "application/json"})
    assert status == 200 and json.loads(raw)["rules"][0]["mode"] == "http_5xx"
    with pytest.raises(Exception, match="InternalServerError"):
        through.get_item(TableName="t", Key={"k": {"S": "x"}})
    status, _, raw, _ = http(proxy.url + "/__faults", b"", {}, method="GET")
    assert json.loads(raw)["counts"]["http_5xx DynamoDB_20120810.GetItem"] == 1
    status, _, raw, _ = http(proxy.url + "/__faults", json.dumps({"rules": []}).encode(), {})
    assert json.loads(raw)["rules"] == []
    through.get_item(TableName="t", Key={"k": {"S": "x"}})
    status, _, raw, _ = http(proxy.url + "/__faults", b"", {}, method="DELETE")
    assert json.loads(raw)["counts"] == {}


# ------------------------------------------------------------------------------------------------ scenarios
def test_lost_dynamodb_answers_under_keyed_sales(stack):
    """30% of DynamoDB writes (PutItem, UpdateItem, TransactWriteItems, DeleteItem) applied but their answer lost,
    under concurrent SALEs with an Idempotency-Key; then faults off and every key replayed once."""
    sc, violations = harness.lost_answers_gateway(stack, BURST_SECONDS)
    assert stack.proxy.injected("lost_answer") > 0
    _assert_invariants(sc, violations)


def test_lost_dynamodb_answers_under_signed_calls(stack):
    """The same faults under HMAC-signed tokenize calls: no false 1003 (the nonce write's retry is its own), and
    every token issued detokenizes."""
    sc, violations = harness.lost_answers_signed(stack, BURST_SECONDS)
    assert stack.proxy.injected("lost_answer", "PutItem") + stack.proxy.injected("lost_answer", "UpdateItem") > 0
    assert sc.tokens
    _assert_invariants(sc, violations)


def test_lost_sqs_answers_while_the_stream_relay_queues(stack):
    """The stream relay's SendMessageBatch refused while SALEs run (postbacks wait in the Deliveries stream: the
    event source mapping retries), then half its answers lost: copies on the queue, but each postback POSTed once
    per attempt and delivered once."""
    sc, violations = harness.sqs_lost_while_relaying(stack, sales=10, refused_seconds=4.0, lost_seconds=8.0)
    assert sc.notes["relay_sends_refused"] > 0 and sc.notes["delivered_while_refused"] == 0
    assert sc.notes["relay_answers_lost"] > 0
    _assert_invariants(sc, violations)


def test_kms_errors_and_throttling_without_key_cache(stack):
    """KMS answering 500, 503 and throttling 30% of the time (KEY_CACHE_SECONDS=0): documented errors only, and
    every token issued -- by tokenize and by auto-tokenizing SALEs -- detokenizes."""
    sc, violations = harness.kms_faults(stack, BURST_SECONDS)
    assert stack.proxy.injected() > 0
    _assert_invariants(sc, violations)
    # every gateway error 1 says one of the two things the Idempotency table of docs/integrators/gateway.md documents
    documented = {"Internal error: a dependency failed and nothing was charged; retry.",
                  "Internal error: the transaction outcome is unknown; retry with the same Idempotency-Key."}
    assert {a.message for a in sc.answers if a.kind == "sale" and a.code == 1} <= documented


def test_sigkill_mid_burst_then_restart_and_replay(stack):
    """The runner SIGKILLed in the middle of a SALE burst; restarted on the same state dir and endpoint (moto kept
    everything), every key replayed, every postback delivered once."""
    sc, violations = harness.sigkill_mid_burst(stack, seconds=BURST_SECONDS, kill_after=2.0)
    assert stack.starts == 2
    _assert_invariants(sc, violations)

