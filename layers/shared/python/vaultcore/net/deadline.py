"""One budget of work shared by every evaluation of partner-supplied patterns in one request (CWE-400, CWE-1333).

A per-call time limit bounds one regex search, not a request: a body with a thousand near-matches runs a
thousand searches, each under its own limit (issue 12: a 231 KB body held one proxy request for 44 s). A
:class:`WorkBudget` is the request's total instead. Only the time spent *inside* pattern work is charged
(:meth:`WorkBudget.metered`): waiting for the target, the token store or KMS is not, so response masks still
have what the request phase left of the budget after a slow target.

The active budget is a context variable, so the layers in between (actions, masks, paths) need no new
parameter: :func:`budgeted` gives each call of the decorated function a fresh budget; :func:`current` is what
the evaluators consult; :func:`ensure` gives work done outside any request (unit tests, tools) a budget of its
own. Users:

* :class:`vaultcore.net.safe_regex.BoundedPattern` passes ``min(per-call limit, remaining budget)`` as the
  ``timeout`` of every call of the ``regex`` engine (which stops mid-search) and charges the time;
* the proxy's jsonpath and xpath evaluators (:mod:`vaultcore.proxy.pathwalk`) check the budget between nodes
  and between context nodes;
* :func:`vaultcore.proxy.transform.locate` meters every body path and turns :class:`BudgetExhausted` into the
  proxy's 8109.

The clock is a seam (:data:`monotonic`, as :mod:`vaultcore.clock` is for wall time): a test replaces it with
one that advances per read, so that exhaustion becomes a count of checks and its verdict does not depend on how
fast the machine is (issue 26). Deployed code never replaces it.

Not thread-safe by design: a budget belongs to the request's own thread (a thread started inside does not
inherit the context variable, and must not charge it).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

__all__ = ["BudgetExhausted", "WorkBudget", "current", "using", "ensure", "budgeted", "monotonic"]

#: The clock every budget reads, looked up at each read (tests replace it; see the module docstring).
monotonic: Callable[[], float] = time.monotonic

_F = TypeVar("_F", bound=Callable[..., Any])


class BudgetExhausted(Exception):  # noqa: N818 - named after what happened, like TimeoutError
    """The budget is spent. Fixed text only: never a value, a pattern or a body."""


class WorkBudget:
    """``seconds`` of pattern work in all; :meth:`metered` charges the time spent inside it."""

    __slots__ = ("seconds", "spent", "_started", "_depth")

    def __init__(self, seconds: float) -> None:
        if not seconds > 0:
            raise ValueError("a budget must be positive")
        self.seconds = float(seconds)
        self.spent = 0.0
        self._started: float | None = None
        self._depth = 0

    def elapsed(self) -> float:
        """Seconds charged so far, including the metered section now running."""
        running = monotonic() - self._started if self._started is not None else 0.0
        return self.spent + running

    def remaining(self) -> float:
        return self.seconds - self.elapsed()

    @property
    def exhausted(self) -> bool:
        return self.remaining() <= 0

    def check(self) -> None:
        """Raise :class:`BudgetExhausted` when nothing is left (cheap: one clock read)."""
        if self.remaining() <= 0:
            raise BudgetExhausted(f"The pattern work budget of {self.seconds:g} s is spent.")

    @contextmanager
    def metered(self) -> Iterator[WorkBudget]:
        """Charge the time spent in the ``with`` block; nested blocks are charged once (the outermost)."""
        if self._depth == 0:
            self._started = monotonic()
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1
            if self._depth == 0 and self._started is not None:
                self.spent += monotonic() - self._started
                self._started = None

    def __repr__(self) -> str:
        return f"WorkBudget({self.seconds:g} s, {self.elapsed():.3f} s spent)"


_current: ContextVar[WorkBudget | None] = ContextVar("vault_work_budget", default=None)


def current() -> WorkBudget | None:
    """The budget of the request being served, or None outside one."""
    return _current.get()


@contextmanager
def using(budget: WorkBudget) -> Iterator[WorkBudget]:
    """Make ``budget`` the active one inside the ``with`` block."""
    token = _current.set(budget)
    try:
        yield budget
    finally:
        _current.reset(token)


@contextmanager
def ensure(seconds: float) -> Iterator[WorkBudget]:
    """The active budget, or, outside a request, a new one of ``seconds`` active for the ``with`` block."""
    budget = _current.get()
    if budget is not None:
        yield budget
        return
    with using(WorkBudget(seconds)) as fresh:
        yield fresh


def budgeted(seconds: float) -> Callable[[_F], _F]:
    """Decorator: every call of the function runs with a fresh budget of ``seconds`` (one per request)."""

    def decorate(fn: _F) -> _F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with using(WorkBudget(seconds)):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate
