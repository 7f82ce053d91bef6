"""RSAPI's transaction listing and the proxy-log listing on dynalite, a second DynamoDB implementation.

test_transactions_shards.py proves on moto that the spread Transactions table lists page for page what the
previous release's LSI listed, and test_spread_listings.py the same for proxy logs. moto is the project's own
stand-in, so the same listings run here against dynalite (tests/dynalite.py), whose key conditions, index
queries, ``ScanIndexForward``, ``Limit`` and ``ExclusiveStartKey`` are an independent implementation. The
reference on dynalite is the previous release's store itself (tests/integration/v1_store.py) on the previous
design's table, LSI and all: dynalite implements local secondary indexes, so both designs answer side by side.
What it showed: the previous release's order of transactions created in the same second was the
implementation's (dynalite's differs from moto's), where the new design's is defined (by id, descending).
dynalite has no TransactWriteItems, so the transactions are written the way a SALE without a postback writes
them (one conditional PutItem).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from local.template import load_template, parameters_with_defaults, render
from tests.conftest import reset_platform_state
from tests.dynalite import dynalite_server
from tests.integration import v1_store
from tests.integration.test_spread_listings import listed_logs
from tests.integration.test_transactions_migration import _create_old_table
from tests.integration.test_transactions_shards import ACCOUNT, T0, _items, _pages


def _create(client: Any, logical_id: str, name: str) -> None:
    """``name`` on dynalite, with the key schema and indexes template.yaml declares for ``logical_id``."""
    template = load_template()
    props = render(template, parameters_with_defaults(template, {"Environment": "cert"}))[logical_id]["Properties"]
    extra = {k: [{key: v for key, v in index.items() if key in ("IndexName", "KeySchema", "Projection")}
                 for index in props[k]] for k in ("GlobalSecondaryIndexes",) if props.get(k)}
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST", KeySchema=props["KeySchema"],
                        AttributeDefinitions=props["AttributeDefinitions"], **extra)


@pytest.fixture
def dynalite(monkeypatch: pytest.MonkeyPatch, frozen_clock: Any) -> Iterator[Any]:
    with dynalite_server() as endpoint:
        for name in ("AWS_PROFILE", "VAULT_AWS_SDK"):
            monkeypatch.delenv(name, raising=False)
        for k, v in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                     "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                     "AWS_REGION": "us-east-1"}.items():
            monkeypatch.setenv(k, v)
        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
        reset_platform_state()
        try:
            yield client
        finally:
            reset_platform_state()


def test_the_transaction_listing_matches_the_previous_release_on_dynalite(dynalite, monkeypatch):
    from vaultcore.gateway import store

    new_table, old_table = f"Transactions-{uuid.uuid4().hex[:8]}", f"TransactionsOld-{uuid.uuid4().hex[:8]}"
    _create(dynalite, "TransactionsV2Table", new_table)
    _create_old_table(dynalite, old_table)

    def on(table: str, fn: Any, *args: Any) -> Any:
        monkeypatch.setenv("TRANSACTIONS_TABLE", table)
        reset_platform_state()
        return fn(*args)

    monkeypatch.setenv("TRANSACTION_SHARDS", "8")
    items = _items(60, seed=31)
    for item in items:
        assert on(new_table, store.record_transaction, item, "w") == store.Recorded.WRITTEN
        assert on(old_table, v1_store.record_transaction, item, "w") == v1_store.Recorded.WRITTEN
    assert len({i["pk"]["S"] for i in dynalite.scan(TableName=new_table)["Items"]}) == 8

    expected = [i["transaction_id"] for i in sorted(items, key=lambda i: (i["created_at"], i["transaction_id"]),
                                                      reverse=True)]
    created = {i["transaction_id"]: i["created_at"] for i in items}
    for start, end in ((T0, T0 + 600), (T0 + 150, T0 + 420)):
        inside = [t for t in expected if start <= created[t] <= end]
        for limit in (1, 7, 100):
            new_pages = on(new_table, _pages, store.list_transactions, start, end, limit)
            old_pages = on(old_table, _pages, v1_store.list_transactions, start, end, limit)
            flat_new, flat_old = [t for p in new_pages for t in p], [t for p in old_pages for t in p]
            assert flat_new == inside, (start, limit)
            # The previous release sorted by created_at alone: DynamoDB leaves the order of equal index sort keys
            # to the implementation, and dynalite's differs from moto's. The same transactions, each once, in the
            # same order of time; the new design's ties (by id, descending) are a defined order of the same.
            assert sorted(flat_old) == sorted(inside) and len(set(flat_old)) == len(flat_old), (start, limit)
            assert [created[t] for t in flat_old] == [created[t] for t in inside], (start, limit)
            assert [len(p) for p in new_pages] == [len(p) for p in old_pages if p or len(old_pages) == 1]
    # a lookup by id is one GetItem on the id's shard, on this implementation too
    for item in items[:5]:
        got = on(new_table, store.get_transaction, ACCOUNT, item["transaction_id"])
        assert got is not None and got["transaction_cents"] == item["transaction_cents"]


def test_the_proxy_log_listing_merges_shards_and_legacy_entries_on_dynalite(dynalite, monkeypatch):
    from local.log_subscriptions import subscription_event
    from vaultcore.proxy import log_shipping

    table = f"ProxyLogs-{uuid.uuid4().hex[:8]}"
    _create(dynalite, "ProxyLogsTable", table)
    monkeypatch.setenv("PROXY_LOGS_TABLE", table)
    monkeypatch.setenv("PROXY_LOG_SHARDS", "3")
    reset_platform_state()
    from vaultcore import clock
    from vaultcore.store.ddb import to_item

    pid, now_ms = "dynlog1", 1_790_000_000_000
    expires = int(clock.now()) + 3600
    for n in range(8):  # written by the version before the spread: under the partner's id alone
        dynalite.put_item(TableName=table, Item=to_item({
            "partnerId": pid, "logId": f"{now_ms - 1000 + 2 * n:013d}-{n:08x}", "configReferenceID": f"c{n % 2}",
            "status": 200, "expiresAt": expires}))
    lines = [json.dumps({log_shipping.MARKER: 1, "item": {
        "partnerId": pid, "logId": f"{now_ms - 999 + 2 * n:013d}-{n:08x}", "configReferenceID": f"c{n % 2}",
        "status": 201, "expiresAt": expires}}) for n in range(12)]
    assert log_shipping.ship(subscription_event("ProxyFunction", "f", lines, "123456789012")) == {"stored": 12}
    stored = dynalite.scan(TableName=table)["Items"]
    assert len(stored) == 20 and len({i["partnerId"]["S"] for i in stored}) > 2  # the legacy key and shards
    expected = sorted((i["logId"]["S"] for i in stored), reverse=True)
    for limit in (1, 3, 100):
        assert listed_logs(pid, limit=limit) == expected, limit
    c0 = listed_logs(pid, config_ref="c0", limit=2)
    assert c0 == [i for i in expected if next(s for s in stored if s["logId"]["S"] == i)["configReferenceID"]["S"]
                  == "c0"]
