"""An account's fixed maximums (webhook endpoints, dynamic descriptors, API keys) hold under concurrent creations.

Before the counter (:mod:`vaultcore.store.counted`), a creation counted the collection, then wrote: creations that
all counted before any wrote all passed the limit. Here every creation of a burst is held at the AWS boundary until
all of them have reached it (a barrier in front of the DynamoDB write), which is that interleaving made certain;
moto applies each TransactWriteItems atomically (local/moto_atomic.py, as DynamoDB does). Exactly the limit's
worth are created, and the rest are refused with the documented errors. Also: a collection written before the
counter existed is counted on its first creation, and a deletion gives its place back.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from vaultcore.apikeys import store as key_store
from vaultcore.descriptors import records as descriptors
from vaultcore.errors import VaultError
from vaultcore.store import counted, registry
from vaultcore.v4.errors import MemberInvalid
from vaultcore.webhooks import endpoints

BURST = 6
LIMIT = 3
ACCOUNT = "100000000042"


class _Gate:
    """Holds every creation of a burst at the AWS boundary (a botocore ``before-parameter-build`` hook on the platform's
    DynamoDB client: a TransactWriteItems, or a PutItem of a new collection item as the previous version wrote)
    until the whole burst has arrived. No sleeps: a barrier, whose timeout only ends a test whose threads never
    all arrive."""

    def __init__(self, parties: int, prefixes: tuple[str, ...] = ("EP#", "DDESC#", "APIKEY#")) -> None:
        from vaultcore.store.aws import dynamodb

        self.barrier = threading.Barrier(parties, timeout=60)
        self.prefixes = prefixes
        dynamodb().meta.events.register("before-parameter-build.dynamodb.*", self._hold)

    def _hold(self, model, params, **_):
        if model.name == "TransactWriteItems" and "Update" in params["TransactItems"][0] or (
                model.name == "PutItem" and params["Item"]["sk"]["S"].startswith(self.prefixes)):
            self.barrier.wait()


def _burst(create) -> tuple[int, list[BaseException]]:
    with ThreadPoolExecutor(max_workers=BURST) as pool:
        futures = [pool.submit(create, n) for n in range(BURST)]
    refused = [e for e in (f.exception() for f in futures) if e is not None]
    return BURST - len(refused), refused


def _endpoint(n: int) -> dict:
    return endpoints.create(ACCOUNT, {"url": f"https://hooks.example.com/{n}", "event": endpoints.SETTLEMENT})


def _descriptor(n: int) -> dict:
    return descriptors.create(SimpleNamespace(account_id=ACCOUNT),
                              {"name": f"Store{n}", "city": "Atlanta", "state": "GA", "descriptor": f"SHOP {n}"})


def _key(n: int) -> key_store.ApiKey:
    key = key_store.ApiKey(key_id=f"{n:032x}", owner=ACCOUNT, label=f"key {n}", methods=("ALL",),
                           accounts=(ACCOUNT,), scopes=("pcx:payments:read",), expires_at=0, enabled=True,
                           created_at=1)
    return key_store.put_key(key, "s" * 64, 1, LIMIT)


def test_concurrent_webhook_endpoints_stop_at_the_maximum(platform, monkeypatch):
    monkeypatch.setattr(endpoints, "MAX_ENDPOINTS", LIMIT)
    endpoints.create(ACCOUNT, {"url": "https://hooks.example.com/first", "event": endpoints.SETTLEMENT})
    _Gate(BURST)
    created, refused = _burst(_endpoint)
    assert created == LIMIT - 1, refused
    assert all(isinstance(e, MemberInvalid) and "at most 3" in str(e) for e in refused), refused
    assert len(endpoints.list_endpoints(ACCOUNT)) == LIMIT


def test_concurrent_descriptors_stop_at_the_maximum(platform, monkeypatch):
    monkeypatch.setenv("DYNAMIC_DESCRIPTORS_MAX", str(LIMIT))
    _descriptor(99)
    _Gate(BURST)
    created, refused = _burst(_descriptor)
    assert created == LIMIT - 1, refused
    assert all(isinstance(e, VaultError) and e.code == descriptors.DESCRIPTOR_LIMIT for e in refused), refused
    assert len(descriptors.list_descriptors(SimpleNamespace(account_id=ACCOUNT), None)) == LIMIT


def test_concurrent_api_keys_stop_at_the_maximum_and_exist_with_their_list_copy(platform, monkeypatch):
    _key(99)
    _Gate(BURST)
    created, refused = _burst(_key)
    assert created == LIMIT - 1, refused
    assert all(isinstance(e, counted.LimitReached) for e in refused), refused
    listed = key_store.list_keys(ACCOUNT)
    assert len(listed) == LIMIT
    # a key exists with its list copy or not at all (one transaction): every listed key authenticates
    assert all(registry.get(f"APIKEY#{k.key_id}", "KEY", consistent=True) for k in listed)


def test_a_collection_from_before_the_counter_is_counted_on_its_first_creation(platform, monkeypatch):
    monkeypatch.setattr(endpoints, "MAX_ENDPOINTS", LIMIT)
    for n in range(LIMIT):  # written the way the previous version wrote them: no counter item
        registry.put_new({"pk": f"WEBHOOK#{ACCOUNT}", "sk": f"EP#legacy-{n}", "accountId": ACCOUNT,
                          "id": f"legacy-{n}", "url": f"https://hooks.example.com/l{n}",
                          "event": endpoints.SETTLEMENT, "createdAt": n, "updatedAt": n})
    assert counted.count(f"WEBHOOK#{ACCOUNT}", "EP#") is None
    with pytest.raises(MemberInvalid):
        _endpoint(1)
    assert counted.count(f"WEBHOOK#{ACCOUNT}", "EP#") == LIMIT


def test_a_deletion_gives_its_place_back(platform, monkeypatch):
    monkeypatch.setenv("DYNAMIC_DESCRIPTORS_MAX", "2")
    first, _ = _descriptor(1), _descriptor(2)
    with pytest.raises(VaultError):
        _descriptor(3)
    descriptors.delete(SimpleNamespace(account_id=ACCOUNT), first["id"])
    assert counted.count(f"DDESC#{ACCOUNT}", "DDESC#") == 1
    _descriptor(3)
    with pytest.raises(VaultError):
        _descriptor(4)
    with pytest.raises(VaultError):  # a second deletion of one descriptor: 404, and the count is unchanged
        descriptors.delete(SimpleNamespace(account_id=ACCOUNT), first["id"])
    assert counted.count(f"DDESC#{ACCOUNT}", "DDESC#") == 2
