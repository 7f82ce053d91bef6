"""The write budget of a keyed SALE with a postback (issue 29, "cost per operation as the load grows").

A SALE with an ``Idempotency-Key`` for an account with a postback URL runs through the platform's own handlers
on in-process moto (bench/bench_capacity.py :func:`run_workload`, SALEs only, one measured round per merchant),
its postback delivered by the runner's stream and queue pollers. Every DynamoDB write of the operation is
recorded with its parameters and the items before and after it, and its write units are counted by DynamoDB's
rules (:func:`bench.bench_capacity.touches`: 1 KB per unit, a TransactWriteItems twice, each GSI entry written
too). The test fails when the total passes :data:`BUDGET`, and names every write, so that a change which adds a
write or lets an item cross 1 KB says where.

The budget, unit by unit (docs/operators/capacity.md "Write units per SALE"), and what each write protects:

1. the idempotency claim, before the processor is asked: a conditional PutItem (a lock that must exist before the
   charge, so it cannot be folded into the transaction's write that follows the charge: no second charge for one
   key);
2. the transaction: one PutItem of an item under 1 KB, flagged for its postback (the Transactions stream is the
   outbox: a charge is never recorded without its postback; no TransactWriteItems, whose units count twice, and no
   Deliveries item at SALE time). Its transaction id is 12 random digits (the public facts), so it cannot be the
   time-sorted key the listing needs;
3. its ``byShardCreated`` index entry (RSAPI's newest-first listings, spread over shards; every GSI entry costs at
   least one unit);
4. after the POST, ONE conditional UpdateItem that creates the delivery's ``DLV#`` item: the message, the attempt
   appended to its log (``attempts``), its state ``delivered`` (so that a later copy of the delivery makes no
   second POST) and its attempt count (each attempt number recorded once). No claim before the POST: the postback
   queue is SQS FIFO, one message group per delivery, so SQS deduplicates the relay's repeated sends and hands
   out one message of a delivery at a time (vaultcore/postback/sender.py says why that replaces the claim), and
   the sender's read before the POST is a GetItem (read units). The item of a first delivered attempt stays under
   1 KB.

Each of the four happens at a different moment and protects an invariant; the floor under them is this 4.
"""

from __future__ import annotations

import contextlib
import io

from bench.bench_capacity import run_workload, table_schemas, touches

#: Write units of one keyed SALE with a postback, its delivery included (5 with a claim write before the POST on
#: a standard queue; 6 with an attempt item beside the delivery's; 10 before the Transactions stream outbox and the
#: claim-only idempotency record; 12 in the design before the partition spread).
BUDGET = 4


def test_a_keyed_sale_with_a_postback_writes_within_the_budget(platform):
    with contextlib.redirect_stdout(io.StringIO()):  # the handlers' structured log lines
        instances, _ = run_workload(platform, rounds=1, operations=("SALE",))
    schemas = table_schemas(platform.resources, platform.refs, platform.template.get("Parameters") or {})
    measured = [i for i in instances if i["operation"] == "SALE" and not i.get("warmup")]
    assert len(measured) == 2 and all(i["postbacks_delivered"] for i in measured)
    for instance in measured:
        writes = [(call["operation"], t["table"], t["index"], t["units"]) for call in instance["calls"]
                  if call["service"] == "dynamodb" for t in touches(call, schemas) if t["kind"] == "write"]
        total = sum(units for *_, units in writes)
        assert total <= BUDGET, "\n".join(f"{op} {table} {index or ''} {units}" for op, table, index, units in writes)
        # what each unit pays for (the module docstring): a new write anywhere shows here first
        tables = sorted((table, index or "") for _, table, index, _ in writes)
        assert tables == sorted([("IdempotencyTable", ""), ("TransactionsV2Table", ""),
                                 ("TransactionsV2Table", "byShardCreated (GSI)"), ("DeliveriesTable", "")]), writes
        assert all(units == 1 for *_, units in writes), writes  # every item under 1 KB, nothing transactional


def test_a_replay_after_the_lock_answers_from_the_transaction_without_taking_the_key_over(platform, frozen_clock):
    """The keyed SALE made no "complete" write, so its record stays INPROGRESS; a replay after the 30-second lock
    finds the holder's transaction recorded and answers it (Idempotent-Replayed, the same response), writing only
    the record's completion: no takeover PutItem, no fence (the path of an abandoned request)."""
    import json

    import boto3

    from bench.bench_capacity import Recorder
    from tests.helpers import admin, api_event
    from vaultcore import clock

    status, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}})
    assert status == 201, account
    variables = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
                 "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
                 "card_expiration": "1230", "transaction_amount": "10.00"}

    def sale() -> tuple[dict, dict]:
        out = platform.invoke("GatewayFunction", api_event("POST", "/api/qsapi/3.8", variables,
                                                           {"Idempotency-Key": "order-77"}))
        assert out["statusCode"] == 200, out
        return json.loads(out["body"]), out.get("headers") or {}

    first, headers = sale()
    assert first["transaction_approved"] is True and headers.get("Idempotent-Replayed") is None
    clock.set_offset(clock.offset() + 31)
    with Recorder(platform, boto3.client("dynamodb", region_name="us-east-1")) as recorder:
        recorder.start("replay", "0", 1)
        replay, headers = sale()
        recorder.finish()
    assert headers.get("Idempotent-Replayed") == "true" and replay == first
    writes = [(c["operation"], c["params"].get("TableName")) for c in recorder.done[-1]["calls"]
              if c["service"] == "dynamodb" and c["operation"] in ("PutItem", "UpdateItem", "DeleteItem",
                                                                   "TransactWriteItems", "BatchWriteItem")]
    assert writes == [("PutItem", platform.refs["IdempotencyTable"]),  # the claim, refused by the live record
                      ("UpdateItem", platform.refs["IdempotencyTable"])], writes  # the replay completes it


def test_the_delivery_shard_count_is_a_raise_only_parameter(platform, monkeypatch):
    """``DeliveryShards`` reaches every function with the code's default. After a raise (``DELIVERY_SHARDS`` 128,
    ``DELIVERY_SHARDS_BEFORE`` 64) a delivery recorded under 64 is found where it is: the sender's read finds it,
    its next outcome updates the same item (the attempt count goes on, so an attempt number already recorded is
    still refused to another writer), and its attempts are listed by delivery id."""
    import pytest

    from local.template import load_template
    from vaultcore.errors import DependencyError
    from vaultcore.postback import deliveries

    template = load_template()
    assert template["Parameters"]["DeliveryShards"]["Default"] == deliveries.DELIVERY_SHARDS
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["DELIVERY_SHARDS"] == {"Ref": "DeliveryShards"}
    assert variables["DELIVERY_SHARDS_BEFORE"] == {"Ref": "DeliveryShardsBefore"}

    # a delivery id whose shard differs under 64 and 128
    delivery_id = next(f"d-{i}" for i in range(100)
                       if deliveries.partition("a1", f"d-{i}", 64) != deliveries.partition("a1", f"d-{i}", 128))
    message = {"delivery_id": delivery_id, "account_id": "a1", "transaction_id": "000000000001",
               "created_at": 1, "response": {}}
    deliveries.finish(message, deliveries.read(message), 1, "failed", 500, 1.0, "HTTP 500", "", "w1")
    first = deliveries.read(message)
    assert first["account_id"] == deliveries.partition("a1", delivery_id, 64) and first["attempt"] == 1
    monkeypatch.setenv("DELIVERY_SHARDS", "128")
    monkeypatch.setenv("DELIVERY_SHARDS_BEFORE", "64")
    assert deliveries.shard_count() == 128 and deliveries.earlier_shard_counts() == [64]
    stored = deliveries.read(message)  # found under 64
    assert stored is not None and stored["account_id"] == first["account_id"]
    with pytest.raises(DependencyError):
        deliveries.finish(message, stored, 1, "failed", 500, 1.0, "HTTP 500", "", "w2")  # attempt 1 is recorded
    deliveries.finish(message, stored, 2, "delivered", 200, 1.0, None, "", "w3")
    assert deliveries.read(message)["account_id"] == first["account_id"]
    assert [a["attempt"] for a in deliveries.list_attempts("a1", delivery_id=delivery_id)] == [2, 1]
    for bad in ("0", "2000", "64,128"):
        monkeypatch.setenv("DELIVERY_SHARDS", bad)
        with pytest.raises(RuntimeError):
            deliveries.shard_count()
