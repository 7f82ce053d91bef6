"""Faults placed at the AWS boundary, deterministically (issue 28): the platform's per-container client of one
service is replaced by a wrapper whose named calls fail, or lose their answer, a chosen number of times.

    faulty = AwsFaults.install("dynamodb", monkeypatch)
    faulty.fail("batch_write_item")                  # every BatchWriteItem fails from now on (nothing applied)
    faulty.fail("update_item", after=1, times=3)     # the 2nd, 3rd and 4th UpdateItem fail
    faulty.lose_answer("send_message")               # applied, its answer lost, sent again by the SDK's retry
    faulty.drop_answer("update_item")                # applied, then no answer at all (the caller sees an error)
    faulty.clear()                                   # no more faults

Every module reaches its client through ``vaultcore.store.aws.client(service)``, so one wrapper covers them all
(botocore's retries are inside the real client: a failure here is what the platform sees after them). ``when``
narrows a rule to calls whose parameters it accepts. ``faulty.injected`` lists the faults made, in order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

__all__ = ["AwsFaults"]


@dataclass
class _Rule:
    operation: str
    mode: str  # fail | lose | drop
    times: int | None  # None: for ever
    after: int
    when: Callable[[dict[str, Any]], bool] | None
    seen: int = 0
    made: int = 0


def _failure(operation: str) -> ClientError:
    response: Any = {"Error": {"Code": "InternalServerError", "Message": "injected fault"},
                     "ResponseMetadata": {"HTTPStatusCode": 500}}
    return ClientError(response, operation)


class AwsFaults:
    def __init__(self, real: Any) -> None:
        self._real = real
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self.injected: list[str] = []

    @classmethod
    def install(cls, service: str, monkeypatch: Any) -> AwsFaults:
        from vaultcore.store import aws

        wrapper = cls(aws.client(service))
        monkeypatch.setitem(aws._clients, service, wrapper)
        return wrapper

    def _add(self, operation: str, mode: str, times: int | None, after: int,
             when: Callable[[dict[str, Any]], bool] | None) -> AwsFaults:
        with self._lock:
            self._rules.append(_Rule(operation, mode, times, after, when))
        return self

    def fail(self, operation: str, times: int | None = None, *, after: int = 0,
             when: Callable[[dict[str, Any]], bool] | None = None) -> AwsFaults:
        """The call is not applied and answers 500 ``InternalServerError`` (after the SDK's own retries)."""
        return self._add(operation, "fail", times, after, when)

    def lose_answer(self, operation: str, times: int | None = 1, *, after: int = 0,
                    when: Callable[[dict[str, Any]], bool] | None = None) -> AwsFaults:
        """The call is applied, its answer lost, and the SDK sends it again: the platform gets the second answer."""
        return self._add(operation, "lose", times, after, when)

    def drop_answer(self, operation: str, times: int | None = 1, *, after: int = 0,
                    when: Callable[[dict[str, Any]], bool] | None = None) -> AwsFaults:
        """The call is applied and then answers nothing the platform can use (500, after the SDK's retries)."""
        return self._add(operation, "drop", times, after, when)

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def _rule_for(self, operation: str, kwargs: dict[str, Any]) -> _Rule | None:
        with self._lock:
            for rule in self._rules:
                if rule.operation != operation or (rule.when is not None and not rule.when(kwargs)):
                    continue
                rule.seen += 1
                if rule.seen <= rule.after or (rule.times is not None and rule.made >= rule.times):
                    continue
                rule.made += 1
                self.injected.append(f"{rule.mode}:{operation}")
                return rule
        return None

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)
        if not callable(method) or name.startswith("_") or name in ("meta", "exceptions"):
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            rule = self._rule_for(name, kwargs)
            if rule is None:
                return method(*args, **kwargs)
            if rule.mode == "fail":
                raise _failure(name)
            try:
                method(*args, **kwargs)  # applied; whatever it answered never arrives
            except Exception:  # noqa: BLE001 - its error answer is lost as well
                pass
            if rule.mode == "drop":
                raise _failure(name)
            return method(*args, **kwargs)  # the SDK's retry: the same request again

        return call
