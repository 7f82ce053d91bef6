"""Key hygiene (issue 29): no write path may put a platform's, a merchant's or the clock's whole rate on one
DynamoDB partition, and no table may have a local secondary index.

A representative workload (bench/bench_capacity.py :func:`run_workload`: keyed SALEs with an Idempotency-Key and a
postback, AUTHORIZATION + CAPTURE, REFUND, tokenize, detokenize, batch detokenize and a proxy call, for two
merchants and two partners, postbacks delivered by the runner's pollers) runs in-process on moto, every DynamoDB
call recorded with its parameters (the clients' hooks). Each write is held against the partition keys of the
template's table and of every index the item enters (GSI and LSI keys from template.yaml), and the test fails,
naming the table, index and key shape, on:

* a partition key value written for two different merchants or partners (a constant key, ``outbox = "1"``);
* a partition key value written by every operation of one merchant or partner and not spread over shards;
* a partition key that begins with a timestamp and is not spread;
* a table with an LSI.

The detector itself is tested on synthetic calls below, so that it keeps catching each case whatever the
platform's tables look like.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

from bench.bench_capacity import key_findings, run_workload, table_schemas

# Known findings that other branches of issue 29 remove; the merge removes these entries (a stale entry fails).
# Findings accepted for now, each with its reason: none. (The Transactions table's LSI and per-merchant key, the
# Deliveries table's constant outbox GSI and per-merchant key were fixed: a spread table, the stream relay, a
# spread delivery key.) An entry that no longer shows fails the test, so the list cannot go stale.
ACCEPTED_FINDINGS: set[tuple[str, str, str]] = set()


def _findings(platform) -> dict:
    with contextlib.redirect_stdout(io.StringIO()):  # the proxy's structured log lines
        instances, entities = run_workload(platform, rounds=2, batch_items=3)
    assert all(i.get("postbacks_delivered", True) for i in instances)
    schemas = table_schemas(platform.resources, platform.refs, platform.template.get("Parameters") or {})
    return key_findings(instances, schemas, entities, platform.resources)


def test_no_write_puts_a_whole_rate_on_one_partition(platform):
    findings = _findings(platform)
    new = {f"{rule}: {where} {shape!r} ({', '.join(sorted(set(ops)))})"
           for (rule, where, shape), ops in findings.items() if (rule, where, shape) not in ACCEPTED_FINDINGS}
    assert not new, "\n".join(sorted(new))
    stale = ACCEPTED_FINDINGS - set(findings)
    assert not stale, f"fixed: remove from ACCEPTED_FINDINGS: {sorted(stale)}"


# ------------------------------------------------------------------------------------ the detector, synthetic
def _resources(lsi: bool = False, shards: bool = False) -> tuple[dict, dict]:
    table: dict[str, Any] = {"Type": "AWS::DynamoDB::Table", "Properties": {
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": [{"IndexName": "queue", "KeySchema": [
            {"AttributeName": "q", "KeyType": "HASH"}, {"AttributeName": "at", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"}}]}}
    if lsi:
        table["Properties"]["LocalSecondaryIndexes"] = [{"IndexName": "byTime", "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "at", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "ALL"}}]
    params = {"ThingsShards": {"Type": "Number", "Default": 8}} if shards else {}
    return {"ThingsTable": table}, params


def _put(entity: str, instance: int, item: dict) -> dict:
    typed = {k: {"S": v} for k, v in item.items()}
    return {"operation": "op", "entity": entity, "instance": instance, "invocations": [],
            "calls": [{"service": "dynamodb", "operation": "PutItem", "params": {"TableName": "things", "Item": typed}}]}


def _detect(items: list[tuple[str, int, dict]], **kw) -> dict:
    resources, params = _resources(**kw)
    schemas = table_schemas(resources, {"ThingsTable": "things"}, params)
    return key_findings([_put(*i) for i in items], schemas, {"acct000001": "<account>", "acct000002": "<account>"},
                        resources)


def test_the_detector_names_a_constant_index_key():
    found = _detect([(e, n, {"pk": f"{acct}#tx{e}{n}xxxxxxx", "sk": "x", "q": "1", "at": f"{n}"})
                     for e, acct in (("0", "acct000001"), ("1", "acct000002")) for n in (1, 2)])
    assert found == {("constant key", "ThingsTable/queue (GSI)", "1"): ["op"]}


def test_the_detector_names_a_per_merchant_key_and_a_spread_one_passes():
    items = [(e, n, {"pk": acct, "sk": f"tx{n}"}) for e, acct in (("0", "acct000001"), ("1", "acct000002"))
             for n in (1, 2, 3)]
    assert _detect(items) == {("per-merchant key", "ThingsTable", "<account>"): ["op"]}
    spread = [(e, n, {"pk": f"{acct}#{n % 8}", "sk": f"tx{n}"}) for e, n, acct in
              [(e, n, a) for e, a in (("0", "acct000001"), ("1", "acct000002")) for n in (1, 2, 3)]]
    assert _detect(spread, shards=True) == {}


def test_the_detector_names_a_time_prefixed_key_and_an_lsi():
    import time

    ms = int(time.time() * 1000)
    items = [(e, n, {"pk": f"{ms + 10 * n + int(e)}#x", "sk": "x"}) for e in ("0", "1") for n in (1, 2)]
    found = _detect(items, lsi=True)
    assert ("time-prefixed key", "ThingsTable", "<time>#x") in found
    assert ("LSI", "ThingsTable/byTime", "") in found


def test_the_model_counts_units_by_dynamodbs_rules_and_spreads_by_the_template_shards():
    """A transactional put of a 1.5 KB item: 2 units, twice; its KEYS_ONLY index entry (keys and 100 bytes): 1
    unit on the index's constant key. The item's key is spread over the template's ThingsShards default (8)."""
    from bench.bench_capacity import model

    resources, params = _resources(shards=True)
    schemas = table_schemas(resources, {"ThingsTable": "things"}, params)
    instances = []
    for e, acct in (("0", "acct000001"), ("1", "acct000002")):
        for n in (1, 2):
            item = {"pk": {"S": f"{acct}#{n}"}, "sk": {"S": f"tx{e}{n}"}, "q": {"S": "1"}, "at": {"N": "5"},
                    "blob": {"S": "x" * 1500}}
            instances.append({"operation": "SALE", "entity": e, "instance": n, "invocations": [("GatewayFunction", 0.01)],
                              "calls": [{"service": "dynamodb", "operation": "TransactWriteItems", "params": {
                                  "TransactItems": [{"Put": {"TableName": "things", "Item": item}}]}}]})
    sale = model(instances, schemas, {"acct000001": "<account>", "acct000002": "<account>"})["SALE"]
    assert sale["write_units"] == 5.0
    keys = {(k["table"], k["shape"]): k for k in sale["keys"]}
    assert keys[("ThingsTable", "<account>#<shard>")]["units_per_op"] == 4.0
    assert keys[("ThingsTable", "<account>#<shard>")]["shards"] == 8
    assert keys[("ThingsTable/queue (GSI)", "1")]["key"] == "shared by every merchant"
    for scenario in ("one_merchant", "10000_merchants"):
        at = sale["rates"]["2300"][scenario]
        # the shared index key takes the platform's whole rate: 2,300 units/s, 2.3 times one partition's 1,000
        assert at["hottest_partition"] == {"kind": "write", "table": "ThingsTable/queue (GSI)", "shape": "1",
                                           "units_per_second": 2300.0, "share": 2.3}
        assert at["bottleneck"] == {"limit": "partition ThingsTable/queue (GSI) 1", "share": 2.3}
        # rate / 10 per unit of concurrency (50 ms assumed would need only 115)
        assert at["lambda_concurrency"]["needed"] == 230.0
