"""Issue 29 item 1 on moto: one merchant's transactions spread over shards, listed exactly as the LSI listed them.

The reference is the previous release's own store (tests/integration/v1_store.py) on a table of the previous
schema, fed the same items: page after page, for several page sizes and ranges, both must return the same
transactions in the same order (newest first; ties of ``created_at`` by transaction id, descending). Then the
shard count is raised under a listing in progress, and every transaction stays reachable by id, refundable, and
listed once. The size of a SALE item is measured against the 1 KB write unit the capacity figures assume.
"""

from __future__ import annotations

import json
import random
from typing import Any

import boto3
import pytest

from tests.conftest import reset_platform_state
from tests.helpers import admin, call
from tests.integration import v1_store
from tests.integration.test_transactions_migration import OLD_TABLE, _create_old_table

ACCOUNT = "123456789012"
T0 = 1_790_000_000


def _items(count: int, seed: int) -> list[dict[str, Any]]:
    """``count`` SALE items over ten minutes, about three in each second used (ties), ids from a fixed seed."""
    rng = random.Random(seed)
    ids = rng.sample(range(10**11, 10**12), count)
    return [{"account_id": ACCOUNT, "transaction_id": str(tid), "created_at": T0 + rng.randrange(0, 600, 3),
             "transaction_type": "SALE", "transaction_approved": True, "transaction_cents": 100 + i,
             "refundable_cents": 100 + i, "currency": "USD"} for i, tid in enumerate(ids)]


def _pages(list_fn: Any, start: int, end: int, limit: int) -> list[list[str]]:
    pages, position = [], None
    while True:
        items, position = list_fn(ACCOUNT, start, end, limit, position)
        pages.append([i["transaction_id"] for i in items])
        if position is None:
            return pages
        position = {"transaction_id": position["transaction_id"], "created_at": int(position["created_at"])}


def _with_old_table(monkeypatch: pytest.MonkeyPatch, new_table: str) -> Any:
    """Run ``fn`` with TRANSACTIONS_TABLE naming the old table (the v1 store reads it from the settings)."""
    def run(fn: Any, *args: Any) -> Any:
        monkeypatch.setenv("TRANSACTIONS_TABLE", OLD_TABLE)
        reset_platform_state()
        try:
            return fn(*args)
        finally:
            monkeypatch.setenv("TRANSACTIONS_TABLE", new_table)
            reset_platform_state()
    return run


@pytest.fixture
def shards8(platform, monkeypatch):
    import os

    monkeypatch.setenv("TRANSACTION_SHARDS", "8")
    reset_platform_state()
    return os.environ["TRANSACTIONS_TABLE"]


def test_listings_match_the_previous_release_page_for_page(shards8, monkeypatch):
    from vaultcore.gateway import store

    items = _items(90, seed=29)
    _create_old_table()
    old = _with_old_table(monkeypatch, shards8)
    for item in items:
        assert store.record_transaction(item, "w") == store.Recorded.WRITTEN
        assert old(v1_store.record_transaction, item, "w") == v1_store.Recorded.WRITTEN
    # not transactions: a fence and a counter are in neither listing
    store.settle(ACCOUNT, "999999999999")
    store.take_allowance(ACCOUNT, "CREDITS#2026-01-01", 1000, 10, "taker")
    raw = boto3.client("dynamodb", region_name="us-east-1").scan(TableName=shards8)["Items"]
    assert len({i["pk"]["S"] for i in raw}) == 8  # these 90 ids (a fixed seed) fill every one of 8 shards

    expected = [i["transaction_id"] for i in sorted(items, key=lambda i: (i["created_at"], i["transaction_id"]),
                                                      reverse=True)]
    for start, end in ((T0, T0 + 600), (T0 + 90, T0 + 93), (T0 + 301, T0 + 450)):
        inside = [t for t in expected if start <= next(i["created_at"] for i in items
                                                       if i["transaction_id"] == t) <= end]
        for limit in (2, 7, 100) if end - start > 100 else (1, 100):
            new_pages = _pages(store.list_transactions, start, end, limit)
            old_pages = old(_pages, v1_store.list_transactions, start, end, limit)
            assert [t for p in new_pages for t in p] == inside == [t for p in old_pages for t in p]
            assert all(len(p) == limit for p in new_pages[:-1])
            # page for page the same; the previous release may end with one more, empty page
            assert new_pages == (old_pages[:-1] if old_pages[-1] == [] and len(old_pages) > 1 else old_pages)


def test_a_listing_reads_each_shard_about_once_per_page(shards8):
    import threading

    from vaultcore.gateway import store
    from vaultcore.store.aws import dynamodb

    for item in _items(120, seed=7):
        store.record_transaction(item, "w")
    queries: list[int] = []
    lock = threading.Lock()

    def count(params: dict[str, Any], **_: Any) -> None:
        with lock:
            queries.append(params.get("Limit", 0))

    dynamodb().meta.events.register("provide-client-params.dynamodb.Query", count)  # the SDK's hook: each call
    items, position = store.list_transactions(ACCOUNT, T0, T0 + 600, 25)
    assert len(items) == 25 and position is not None
    dynamodb().meta.events.unregister("provide-client-params.dynamodb.Query", count)
    # one first page per shard (its share of 25, twice over: 8 items), a follow-up only where a shard ran short
    assert 8 <= len(queries) <= 12 and set(queries) == {8}, queries


def test_raising_the_shard_count_keeps_every_transaction_reachable(platform, monkeypatch):
    from vaultcore.gateway import store

    monkeypatch.setenv("TRANSACTION_SHARDS", "4")
    reset_platform_state()
    before = _items(60, seed=1)
    for item in before:
        assert store.record_transaction(item, "w") == store.Recorded.WRITTEN
    first_page, position = store.list_transactions(ACCOUNT, T0, T0 + 600, 10)

    # The raise, as the operators' guide has it: the new count, and the old one in TRANSACTION_SHARDS_BEFORE
    monkeypatch.setenv("TRANSACTION_SHARDS", "16")
    monkeypatch.setenv("TRANSACTION_SHARDS_BEFORE", "4")
    reset_platform_state()  # a new container: nothing remembered
    moved = [i for i in before if store.shard_of(i["transaction_id"], 16) != store.shard_of(i["transaction_id"], 4)]
    assert moved  # ids whose shard differs under the new count (most of them)
    for item in before:
        assert store.get_transaction(ACCOUNT, item["transaction_id"])["transaction_cents"] == item["transaction_cents"]
    ok, after = store.refund_transaction(ACCOUNT, moved[0]["transaction_id"], "700000000001", 50, T0 + 700)
    assert ok and after is not None and after["refundable_cents"] == moved[0]["refundable_cents"] - 50
    reset_platform_state()  # and once more without the location remembered by the read above
    ok, again = store.refund_transaction(ACCOUNT, moved[1]["transaction_id"], "700000000002", 1, T0 + 700)
    assert ok and again is not None and again["refundable_cents"] == moved[1]["refundable_cents"] - 1
    # a new transaction may not reuse an id held under the earlier count
    clash = {**moved[2], "transaction_cents": 1}
    assert store.record_transaction(clash, "other") == store.Recorded.NOT_WRITTEN
    assert store.get_transaction(ACCOUNT, moved[2]["transaction_id"])["transaction_cents"] == moved[2][
        "transaction_cents"]

    # the listing begun under 4 shards continues under 16, and new items join it in order
    later = _items(60, seed=2)
    for item in later:
        assert store.record_transaction(item, "w") == store.Recorded.WRITTEN
    everything = sorted(before + later, key=lambda i: (i["created_at"], i["transaction_id"]), reverse=True)
    rest = [t for p in _pages_from(store.list_transactions, position, 10) for t in p]
    listed = [i["transaction_id"] for i in first_page] + rest
    first_ids = {i["transaction_id"] for i in first_page}
    assert rest == [i["transaction_id"] for i in everything if i["transaction_id"] not in first_ids
                    and (i["created_at"], i["transaction_id"]) < (first_page[-1]["created_at"],
                                                                  first_page[-1]["transaction_id"])]
    assert len(listed) == len(set(listed))
    assert [t for p in _pages(store.list_transactions, T0, T0 + 600, 9) for t in p] == [
        i["transaction_id"] for i in everything]

    # Without TRANSACTION_SHARDS_BEFORE, reads by id look only at the new count's shard: why the guide asks for it
    monkeypatch.delenv("TRANSACTION_SHARDS_BEFORE")
    reset_platform_state()
    assert store.get_transaction(ACCOUNT, moved[3]["transaction_id"]) is None


def _pages_from(list_fn: Any, position: dict[str, Any] | None, limit: int) -> list[list[str]]:
    pages = []
    while position is not None:
        items, position = list_fn(ACCOUNT, T0, T0 + 600, limit,
                                  {"transaction_id": position["transaction_id"],
                                   "created_at": int(position["created_at"])})
        pages.append([i["transaction_id"] for i in items])
    return pages


def test_a_sale_with_a_postback_is_one_write_unit_item(platform):
    """The capacity figures (docs/operators/capacity.md) count a SALE's item as under 1 KB: 1 write unit, 2 in the
    TransactWriteItems with its delivery. Measured here by DynamoDB's rule: attribute names plus values."""
    import os

    from vaultcore.store.ddb import from_item

    status, account = admin(platform, "POST", "/admin/v1/accounts",
                            {"options": {}, "postback_url": "https://merchant.example.com/hook"})
    assert status == 201, account
    body = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
            "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
            "card_expiration": "1230", "transaction_amount": "1234.56", "currency": "USD",
            "first_name": "Alexandra", "last_name": "Montgomery-Smith"}
    status, _, sale = call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", json.dumps(body),
                           {"Content-Type": "application/json"}, resource="/api/qsapi/3.8")
    assert status == 200 and sale["transaction_approved"] is True, sale
    raw = [i for i in boto3.client("dynamodb", region_name="us-east-1").scan(
        TableName=os.environ["TRANSACTIONS_TABLE"])["Items"] if i["transaction_id"]["S"] == sale["transaction_id"]]
    assert len(raw) == 1 and from_item(raw[0])["delivery_id"]  # the postback went with it
    size = _item_size(raw[0])
    assert size < 1024, size


def _item_size(item: dict[str, Any]) -> int:
    """DynamoDB's item size: UTF-8 names and values; numbers about 1 byte per 2 digits + 1; 1 byte for a
    boolean or null; 3 bytes for a map or list plus 1 per element, and the elements."""
    def value(v: dict[str, Any]) -> int:
        (kind, x), = v.items()
        if kind == "S":
            return len(x.encode())
        if kind == "N":
            return (len(x.strip("-").replace(".", "").lstrip("0")) + 1) // 2 + 1
        if kind == "B":
            return len(x)
        if kind in ("BOOL", "NULL"):
            return 1
        if kind in ("SS", "NS", "BS"):
            return sum(value({kind[0]: e}) for e in x)
        if kind == "L":
            return 3 + sum(1 + value(e) for e in x)
        if kind == "M":
            return 3 + sum(len(k.encode()) + 1 + value(e) for k, e in x.items())
        raise AssertionError(kind)
    return sum(len(name.encode()) + value(v) for name, v in item.items())
