"""Bounded, time-limited, thread-safe caches for per-container reuse of records and unwrapped keys.

:class:`ContainerCache` is what modules declare at import time: it reads its lifetime from the settings only
when first used (nothing reads the environment at import, STYLE.md pitfall 4), and every one of them can be
forgotten at once with :func:`reset_container_caches` (tests; a new environment; before a SnapStart snapshot,
vaultcore.runtime).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["TTLCache", "ContainerCache", "reset_container_caches"]

V = TypeVar("V")
_MISSING = object()


class TTLCache(Generic[V]):
    def __init__(self, ttl_seconds: float, max_items: int = 1024) -> None:
        self.ttl = ttl_seconds
        self.max_items = max_items
        self._items: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            hit = self._items.get(key)
            if hit is None:
                return None
            expires, value = hit
            if expires < time.monotonic():
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> None:
        with self._lock:
            self._items[key] = (time.monotonic() + self.ttl, value)
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def get_or_load(self, key: Hashable, loader: Callable[[], V | None]) -> V | None:
        """The cached value, else the loader's (cached unless None: a missing record is read again next time)."""
        value = self.get(key)
        if value is None:
            value = loader()
            if value is not None:
                self.put(key, value)
        return value

    def invalidate(self, key: Hashable) -> None:
        with self._lock:
            self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


class ContainerCache(Generic[V]):
    """A :class:`TTLCache` created on first use; ``lifetime`` is seconds or the name of a Settings attribute."""

    _instances: list[ContainerCache[object]] = []

    def __init__(self, lifetime: str | float, max_items: int = 1024) -> None:
        self._lifetime = lifetime
        self._max_items = max_items
        self._inner: TTLCache[V] | None = None
        self._lock = threading.Lock()
        ContainerCache._instances.append(self)  # type: ignore[arg-type]

    def _cache(self) -> TTLCache[V]:
        inner = self._inner
        if inner is None:
            with self._lock:
                if self._inner is None:
                    ttl = self._lifetime
                    if isinstance(ttl, str):
                        from vaultcore.settings import settings

                        ttl = float(getattr(settings(), ttl))
                    self._inner = TTLCache(ttl, self._max_items)
                inner = self._inner
        return inner

    def get(self, key: Hashable) -> V | None:
        return self._cache().get(key)

    def put(self, key: Hashable, value: V) -> None:
        self._cache().put(key, value)

    def get_or_load(self, key: Hashable, loader: Callable[[], V | None]) -> V | None:
        return self._cache().get_or_load(key, loader)

    def invalidate(self, key: Hashable) -> None:
        self._cache().invalidate(key)

    def clear(self) -> None:
        self._cache().clear()

    def reset(self) -> None:
        """Forget the cache, its entries and its lifetime (the next use reads the settings again)."""
        with self._lock:
            if self._inner is not None:
                self._inner.clear()  # drop the entries themselves (a SnapStart snapshot holds no unwrapped key)
            self._inner = None


def reset_container_caches() -> None:
    for cache in ContainerCache._instances:
        cache.reset()
