"""Per-container caches: bounded, time-limited, lifetime read from the settings on first use, resettable."""

from __future__ import annotations

import time

from vaultcore.cache import ContainerCache, TTLCache, reset_container_caches
from vaultcore.settings import reset_settings


def test_ttl_cache_expires_and_stays_bounded():
    cache: TTLCache[int] = TTLCache(0.05, max_items=2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("c", 3)
    assert cache.get("a") is None and cache.get("c") == 3  # least recently used went first
    time.sleep(0.06)
    assert cache.get("c") is None


def test_container_cache_reads_its_lifetime_when_first_used_and_resets(monkeypatch):
    monkeypatch.setenv("RECORD_CACHE_SECONDS", "123")
    reset_settings()
    cache: ContainerCache[str] = ContainerCache("record_cache_seconds", max_items=4)
    assert cache.get_or_load("k", lambda: "v") == "v"
    assert cache._cache().ttl == 123.0
    monkeypatch.setenv("RECORD_CACHE_SECONDS", "7")
    reset_settings()
    reset_container_caches()
    assert cache.get("k") is None  # forgotten
    assert cache._cache().ttl == 7.0  # and the new setting applies
    reset_settings()
