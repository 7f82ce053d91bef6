"""A small bounded, time-limited, thread-safe cache for per-container reuse of records and unwrapped keys."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["TTLCache"]

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

    def get_or_load(self, key: Hashable, loader: Callable[[], V]) -> V:
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
