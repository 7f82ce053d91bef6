"""Per-destination circuit breaker of the postback sender, one per container (pure: no I/O).

A destination is the scheme, host and port of a postback URL. It counts only *unresponsiveness* — a timeout or
a connection failure (refused, reset, TLS, DNS) — because that is what holds a batch up: an HTTP error answer
(5xx, 4xx) comes back at once, blocks nobody, and stays an ordinary failed attempt of that one message.

* closed: every message is attempted; ``threshold`` consecutive unresponsive attempts open the circuit;
* open: messages for the destination are deferred without an attempt (the sender gives them back to the queue
  with the published retry schedule's delay) until ``cooldown`` seconds have passed;
* half-open: one probe attempt at a time; an answer (any status) closes the circuit, another unresponsive
  attempt opens it again for twice the previous cool-down (up to ``max_cooldown``).

Thread-safe: the sender delivers a batch's messages from several threads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["CircuitBreaker", "destination_of", "ALLOW", "PROBE", "DEFER"]

ALLOW, PROBE, DEFER = "allow", "probe", "defer"


def destination_of(url: str) -> str:
    """``scheme://host:port`` of a URL, lower-cased: the unit the breaker isolates."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}:{port}"
    except ValueError:
        return url[:200].lower()


@dataclass
class _State:
    failures: int = 0
    open_until: float = 0.0
    cooldown: float = 0.0
    probing: bool = False


class CircuitBreaker:
    def __init__(self, threshold: int = 3, cooldown: float = 30.0, max_cooldown: float = 300.0,
                 max_destinations: int = 4096, clock: Callable[[], float] = time.monotonic) -> None:
        self.threshold = threshold
        self.base_cooldown = cooldown
        self.max_cooldown = max_cooldown
        self._max = max_destinations
        self._clock = clock
        self._states: OrderedDict[str, _State] = OrderedDict()
        self._lock = threading.Lock()

    def before_attempt(self, destination: str) -> str:
        """ALLOW (closed), PROBE (this caller is the half-open probe: report its outcome) or DEFER."""
        with self._lock:
            state = self._states.get(destination)
            if state is None or state.open_until == 0.0:
                return ALLOW
            if self._clock() < state.open_until or state.probing:
                return DEFER
            state.probing = True
            return PROBE

    def record(self, destination: str, responsive: bool) -> None:
        """The outcome of an attempt (ALLOW or PROBE): did the destination answer at all?"""
        with self._lock:
            state = self._states.get(destination)
            if responsive:
                if state is not None:
                    del self._states[destination]  # closed, counters forgotten
                return
            if state is None:
                state = self._states[destination] = _State()
                while len(self._states) > self._max:
                    self._states.popitem(last=False)
            self._states.move_to_end(destination)
            state.failures += 1
            was_probe, state.probing = state.probing, False
            if was_probe or (state.open_until == 0.0 and state.failures >= self.threshold):
                state.cooldown = min(self.max_cooldown, state.cooldown * 2 if was_probe else self.base_cooldown)
                state.open_until = self._clock() + state.cooldown

    def release_probe(self, destination: str) -> None:
        """A PROBE that was not attempted after all (no time left): let the next caller probe."""
        with self._lock:
            state = self._states.get(destination)
            if state is not None:
                state.probing = False

    def is_open(self, destination: str) -> bool:
        with self._lock:
            state = self._states.get(destination)
            return state is not None and state.open_until != 0.0

    def clear(self) -> None:
        with self._lock:
            self._states.clear()
