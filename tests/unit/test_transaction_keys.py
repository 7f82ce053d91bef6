"""Issue 29: the Transactions table's keys (no AWS). The template declares no LSI on any table; the shard of a
transaction id is pinned (items already written depend on it); the index's sort key orders as (created_at, id);
the shard count's settings are checked, and the template's default is the code's."""

from __future__ import annotations

import pytest

from local.template import load_template, parameters_with_defaults, render


def _tables() -> dict[str, dict]:
    template = load_template()
    resources = render(template, parameters_with_defaults(template, {"Environment": "prod"}))
    return {name: r["Properties"] for name, r in resources.items() if r["Type"] == "AWS::DynamoDB::Table"}


def test_no_table_has_a_local_secondary_index():
    # An item collection of a table with an LSI never splits and stops at 10 GB: no table may have one.
    tables = _tables()
    assert tables and "TransactionsV2Table" in tables
    assert [name for name, props in tables.items() if "LocalSecondaryIndexes" in props] == []


def test_the_transactions_table_is_keyed_by_the_spread_key_with_its_listing_index():
    props = _tables()["TransactionsV2Table"]
    assert props["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"},
                                  {"AttributeName": "transaction_id", "KeyType": "RANGE"}]
    (index,) = props["GlobalSecondaryIndexes"]
    from vaultcore.gateway import store

    assert index["IndexName"] == store.INDEX and index["Projection"] == {"ProjectionType": "ALL"}
    assert index["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"},
                                  {"AttributeName": "created_key", "KeyType": "RANGE"}]


def test_the_shard_count_reaches_every_function_with_the_code_default():
    from vaultcore.gateway import store

    template = load_template()
    assert template["Parameters"]["TransactionShards"]["Default"] == store.DEFAULT_SHARDS
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["TRANSACTIONS_TABLE"] == {"Ref": "TransactionsV2Table"}
    assert variables["TRANSACTION_SHARDS"] == {"Ref": "TransactionShards"}
    assert variables["TRANSACTION_SHARDS_BEFORE"] == {"Ref": "TransactionShardsBefore"}
    assert variables["TRANSACTIONS_LEGACY_TABLE"] == {"Ref": "TransactionsLegacyTableName"}


def test_the_shard_of_an_id_never_changes_between_releases():
    # Items are stored under these values: a change of the hash would strand every transaction written before it.
    from vaultcore.gateway import store

    assert [store.shard_of(t, 32) for t in ("100000000000", "123456789012", "999999999999", "500000000001")] == [
        2, 10, 20, 1]
    assert store.shard_of("123456789012", 1024) == 650
    # account items that are not transactions stay on shard 0 whatever the count
    assert {store.shard_of(k, n) for k in ("BATCHES", "CREDITS#2026-01-01") for n in (1, 32, 1024)} == {0}


def test_ids_spread_evenly_over_the_shards():
    from vaultcore.gateway import store

    counts = [0] * 32
    for i in range(32_000):
        counts[store.shard_of(f"{100000000000 + i * 7919:012d}", 32)] += 1
    assert min(counts) > 850 and max(counts) < 1150  # 1,000 each, give or take a few standard deviations


def test_the_index_sort_key_orders_as_creation_time_then_id():
    from vaultcore.gateway import store

    pairs = [(9, "900000000000"), (10, "100000000000"), (10, "100000000001"), (1_800_000_000, "100000000000")]
    keys = [store.created_key(c, t) for c, t in pairs]
    assert keys == sorted(keys)
    # the listing's bounds: the whole of the start and end seconds, nothing of the next one
    assert store.created_key(10, "") < keys[1] < keys[2] < store.created_key(10, "~") < store.created_key(11, "")


def test_shard_settings(monkeypatch):
    from vaultcore.gateway import store

    monkeypatch.setenv("TRANSACTION_SHARDS", "64")
    monkeypatch.setenv("TRANSACTION_SHARDS_BEFORE", "16,32")
    assert store.shard_count() == 64 and store.earlier_shard_counts() == [16, 32]
    assert store.listing_shards() == range(64)
    tid = "123456789012"
    assert store._candidates(tid) == list(dict.fromkeys(store.shard_of(tid, n) for n in (64, 16, 32)))
    for bad in ("0", "2000", "8,16"):
        monkeypatch.setenv("TRANSACTION_SHARDS", bad)
        with pytest.raises(RuntimeError):
            store.shard_count()
    monkeypatch.delenv("TRANSACTION_SHARDS")
    monkeypatch.delenv("TRANSACTION_SHARDS_BEFORE")
    assert store.shard_count() == store.DEFAULT_SHARDS and store._candidates(tid) == [store.shard_of(tid, 32)]
    assert store.legacy_table() is None
