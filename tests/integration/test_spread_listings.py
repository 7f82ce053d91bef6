"""The Audit, ProxyLogs and Nonces tables' partition spread (vaultcore.store.spread), on moto.

Records are written under ``<partner>#<shard>``; records the version before the spread wrote stay under
``<partner>`` (the legacy partition, written here as that version wrote them). The listings must answer exactly
what the unsharded listing answered over the same records: every record once, newest first, across small pages,
with a sparse filter, and from a paging token the previous version issued. dynalite runs the merged listing too
(test_races_dynalite.py has the moto/dynalite fixture pattern; here the listing alone, on its own table).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from local.log_subscriptions import subscription_event
from tests.helpers import admin
from vaultcore import clock
from vaultcore.errors import ValidationError
from vaultcore.settings import reset_settings, settings
from vaultcore.store import audit, nonces, spread
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import to_item


def _token(key: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode().rstrip("=")


@pytest.fixture
def small_spread(platform, frozen_clock, monkeypatch):
    """Few shards, so that small pages cross shards and the legacy partition many times; the clock stands still
    (records are placed in time with ``clock.set_offset``)."""
    for name in ("AUDIT_SHARDS", "PROXY_LOG_SHARDS", "NONCE_SHARDS"):
        monkeypatch.setenv(name, "4")
    reset_settings()
    yield platform
    reset_settings()


def _legacy_audit(partner: str, ms: int, n: int, bfid: str) -> str:
    """A record as the version before the spread wrote it (partition = the partner's id)."""
    audit_id = f"{ms:013d}#legacy{n:04d}#0000"
    dynamodb().put_item(TableName=settings().audit_table, Item=to_item({
        "partnerId": partner, "auditId": audit_id, "bfid": bfid, "fields": ["f"], "operation": "detokenize",
        "at": ms, "sourceIp": "10.0.0.1", "expiresAt": ms // 1000 + audit.RETENTION_SECONDS}))
    return audit_id


def _audit_records(partner: str) -> list[str]:
    """Legacy and spread records, interleaved in time; the audit ids newest first (the unsharded order)."""
    base = int(clock.now() * 1000) - 60_000
    for n in range(12):
        _legacy_audit(partner, base + 10 * n, n, f"b{n % 3}")
        clock.set_offset((base + 10 * n + 5) / 1000 - clock.time.time())
        audit.write_records(partner, [(f"b{n % 3}", ["f"])], operation="detokenize", source_ip="10.0.0.2",
                            request_id=f"r{n:04d}")
        # a batch: many records of one request, one millisecond
        audit.write_records(partner, [(f"b{k}", ["f"]) for k in range(3)], operation="batch/detokenize",
                            source_ip="10.0.0.2", request_id=f"batch{n:04d}")
    clock.set_offset(0)
    ids = [i["auditId"]["S"] for i in _all_items(settings().audit_table) if i["partnerId"]["S"].split("#")[0] == partner]
    assert len(ids) == len(set(ids))
    return sorted(ids, reverse=True)


def _all_items(table: str) -> list[dict]:
    items, kwargs = [], {"TableName": table}
    while True:
        out = dynamodb().scan(**kwargs)
        items += out["Items"]
        if "LastEvaluatedKey" not in out:
            return items
        kwargs["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def _pages(platform, partner: str, limit: int, **query: str) -> tuple[list[str], int]:
    ids, pages, token = [], 0, None
    while True:
        q = {"limit": str(limit), **query, **({"nextToken": token} if token else {})}
        status, body = admin(platform, "GET", f"/admin/v1/partners/{partner}/detokenizations", query=q)
        assert status == 200, body
        assert body["partnerId"] == partner
        ids += [r["auditId"] for r in body["records"]]
        pages += 1
        token = body.get("nextToken")
        if not token:
            return ids, pages


def test_audit_listing_merges_shards_and_legacy_records_newest_first(small_spread):
    status, partner = admin(small_spread, "POST", "/admin/v1/partners", {"name": "Audit Co", "apiSecurity": "key"})
    assert status == 201
    pid = partner["partnerId"]
    expected = _audit_records(pid)
    stored = {i["partnerId"]["S"] for i in _all_items(settings().audit_table) if i["partnerId"]["S"].startswith(pid)}
    assert stored == {pid} | {f"{pid}#{n}" for n in range(4)}  # every shard and the legacy partition hold some
    assert len(expected) == 12 + 12 + 36
    for limit in (1, 3, 7, 100):
        ids, _ = _pages(small_spread, pid, limit)
        assert ids == expected, limit
    # A sparse filter, small pages: the same records as the filter over the unsharded order.
    ids, _ = _pages(small_spread, pid, 2, bfid="b2")
    b2 = {i["auditId"]["S"] for i in _all_items(settings().audit_table) if i["bfid"]["S"] == "b2"}
    assert ids == [a for a in expected if a in b2]


def test_a_token_of_the_version_before_the_spread_pages_on(small_spread):
    pid = "legacytok1"
    expected = _audit_records(pid)
    legacy_ids = [a for a in expected if "#legacy" in a]
    # The unsharded listing's token: the LastEvaluatedKey of the legacy partition.
    old = _token({"partnerId": pid, "auditId": legacy_ids[5]})
    out = audit.list_records(pid, limit=100, next_token=old)
    assert [r["auditId"] for r in out["records"]] == [a for a in expected if a < legacy_ids[5]]
    # A token naming another partner's partition, or a malformed shard, is refused.
    for bad in ({"partnerId": "other#1", "auditId": "1"}, {"partnerId": f"{pid}#x", "auditId": "1"},
                {"partnerId": pid, "auditId": 1}):
        with pytest.raises(ValidationError, match="nextToken"):
            audit.list_records(pid, next_token=_token(bad))


def test_equal_sort_keys_in_two_partitions_are_both_answered_once(small_spread):
    """The merged order is (sort key, partition): a cursor between two equal sort keys loses neither."""
    pid = "tie1"
    ms = int(clock.now() * 1000)
    for partition in (pid, f"{pid}#0", f"{pid}#3"):
        dynamodb().put_item(TableName=settings().audit_table, Item=to_item({
            "partnerId": partition, "auditId": f"{ms:013d}#same#0000", "bfid": partition, "fields": [],
            "operation": "detokenize", "at": ms, "sourceIp": "", "expiresAt": ms // 1000 + 3600}))
    seen, token = [], None
    while True:
        out = audit.list_records(pid, limit=1, next_token=token)
        seen += [r["bfid"] for r in out["records"]]
        token = out.get("nextToken")
        if not token:
            break
    assert seen == [f"{pid}#3", f"{pid}#0", pid]


def listed_logs(partner_id: str, **query: Any) -> list[str]:
    """Every page of the partner's proxy-log listing, followed to its end: the log ids in the order answered
    (each page's entries are the partner's, without their TTL attribute)."""
    from vaultcore.proxy import logs

    ids, token = [], None
    while True:
        out = logs.list_logs(partner_id, next_token=token, **query)
        assert all(entry["partnerId"] == partner_id and "expiresAt" not in entry for entry in out["logs"])
        ids += [entry["logId"] for entry in out["logs"]]
        token = out.get("nextToken")
        if not token:
            return ids


def test_proxy_logs_are_spread_and_listed_as_before(small_spread):
    from vaultcore.proxy import log_shipping

    pid = "logco1"
    # fixed log ids (not the clock's): which shards 15 ids hash to must not vary by run (an empty shard once in 20)
    now_ms = 1_790_000_000_000
    expires = int(clock.now()) + 3600
    legacy = [{"partnerId": pid, "logId": f"{now_ms - 1000 + 2 * n:013d}-{n:08x}", "configReferenceID": f"c{n % 2}",
               "status": 200, "expiresAt": expires} for n in range(10)]
    for item in legacy:  # written by the version before the spread
        dynamodb().put_item(TableName=settings().proxy_logs_table, Item=to_item(item))
    lines = [json.dumps({log_shipping.MARKER: 1, "item": {
        "partnerId": pid, "logId": f"{now_ms - 999 + 2 * n:013d}-{n:08x}", "configReferenceID": f"c{n % 2}",
        "status": 201, "expiresAt": expires}}) for n in range(15)]
    assert log_shipping.ship(subscription_event("ProxyFunction", "f", lines, "123456789012")) == {"stored": 15}
    # a redelivery stores nothing twice (the shard comes from the logId)
    log_shipping.ship(subscription_event("ProxyFunction", "f", lines, "123456789012"))
    stored = [i for i in _all_items(settings().proxy_logs_table) if i["partnerId"]["S"].startswith(pid)]
    assert len(stored) == 25 and len({i["partnerId"]["S"] for i in stored}) == 5
    expected = sorted((i["logId"]["S"] for i in stored), reverse=True)
    for limit in (1, 4, 100):
        assert listed_logs(pid, limit=limit) == expected, limit
    c1 = listed_logs(pid, config_ref="c1", limit=3)
    assert c1 == [i["logId"]["S"] for i in sorted(stored, key=lambda i: i["logId"]["S"], reverse=True)
                  if i["configReferenceID"]["S"] == "c1"]


def test_nonces_are_spread_by_the_nonce_and_a_reuse_is_refused(small_spread):
    now = int(clock.now())
    keys = set()
    for n in range(40):
        assert nonces.claim_nonce("hm1", f"n-{n}", now, now + 900)
        assert not nonces.claim_nonce("hm1", f"n-{n}", now, now + 900)  # the same nonce: the same key
        assert nonces.nonce_seen("hm1", f"n-{n}", now)
        keys.add(nonces.nonce_key("hm1", f"n-{n}")["partnerId"])
    assert keys == {f"hm1#{n}" for n in range(4)}
    # A nonce the version before the spread stored (under the partner's id) is seen by the debugging endpoint;
    # the API itself does not look there (the accepted rollout window, docs/operators/capacity.md).
    dynamodb().put_item(TableName=settings().nonces_table,
                        Item=to_item({"partnerId": "hm1", "nonce": "old", "expiresAt": now + 900, "writer": "w"}))
    assert nonces.nonce_seen("hm1", "old", now)
    assert not nonces.nonce_seen("hm1", "never", now)


def test_the_shard_is_stable_and_spreads():
    assert spread.shard_of("abc", 32) == spread.shard_of("abc", 32)  # not Python's salted hash()
    assert len({spread.shard_of(f"{1795000000000 + n:013d}#r#0000", 32) for n in range(2000)}) == 32
    assert spread.partitions("p1", 3) == ["p1", "p1#0", "p1#1", "p1#2"]
    assert spread.owns_partition("p1", "p1#12") and not spread.owns_partition("p1", "p10#1")


def test_the_merged_audit_listing_on_dynalite(monkeypatch, frozen_clock):
    """The same listing on a second DynamoDB implementation: the key conditions, filters and paging it uses."""
    import uuid

    import boto3

    from local.template import load_template, parameters_with_defaults, render
    from tests.conftest import reset_platform_state
    from tests.dynalite import dynalite_server

    with dynalite_server() as endpoint:
        for name in ("AWS_PROFILE", "VAULT_AWS_SDK"):
            monkeypatch.delenv(name, raising=False)
        for k, v in {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                     "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1", "AUDIT_SHARDS": "3"}.items():
            monkeypatch.setenv(k, v)
        template = load_template()
        props = render(template, parameters_with_defaults(template, {"Environment": "cert"}))["AuditTable"]["Properties"]
        table = f"Audit-{uuid.uuid4().hex[:8]}"
        boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint, aws_access_key_id="testing",
                     aws_secret_access_key="testing").create_table(
            TableName=table, BillingMode="PAY_PER_REQUEST", KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"])
        monkeypatch.setenv("AUDIT_TABLE", table)
        reset_platform_state()
        try:
            expected = _audit_records("dyn1")
            for limit in (1, 4, 100):
                ids, token = [], None
                while True:
                    out = audit.list_records("dyn1", limit=limit, next_token=token)
                    ids += [r["auditId"] for r in out["records"]]
                    token = out.get("nextToken")
                    if not token:
                        break
                assert ids == expected, limit
        finally:
            reset_platform_state()
