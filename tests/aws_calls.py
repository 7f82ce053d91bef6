"""Counts every AWS API call the platform's clients make, from any thread (botocore ``before-call`` hooks).

``vaultcore.store.aws.ddb_calls`` counts DynamoDB calls of the calling thread only; the postback consumer
delivers from worker threads and also calls SQS and KMS, so its tests and bench count with this instead::

    with AwsCalls() as calls:
        platform.invoke("PostbackFunction", event)
    assert calls.total <= 2 * delivered
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

SERVICES = ("dynamodb", "sqs", "kms")


class AwsCalls:
    def __init__(self, services: tuple[str, ...] = SERVICES) -> None:
        self.services = services
        self.by_operation: Counter[str] = Counter()
        self.params: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._clients: list[Any] = []
        self._id = f"aws-calls-{id(self)}"

    def _count(self, model: Any, **_kwargs: Any) -> None:  # before-call: the request is about to be sent
        with self._lock:
            self.by_operation[f"{model.service_model.service_name}.{model.name}"] += 1

    def _record(self, model: Any, params: dict[str, Any], **_kwargs: Any) -> None:  # the API parameters
        with self._lock:
            self.params.append((f"{model.service_model.service_name}.{model.name}", dict(params)))

    def __enter__(self) -> AwsCalls:
        from vaultcore.store.aws import client

        self._clients = [client(s) for s in self.services]  # the per-container clients the handlers use
        for c in self._clients:
            c.meta.events.register("before-call", self._count, unique_id=self._id + "-count")
            c.meta.events.register("before-parameter-build", self._record, unique_id=self._id + "-params")
        return self

    def __exit__(self, *exc: object) -> None:
        for c in self._clients:
            c.meta.events.unregister("before-call", unique_id=self._id + "-count")
            c.meta.events.unregister("before-parameter-build", unique_id=self._id + "-params")

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self.by_operation.values())

    def reset(self) -> None:
        with self._lock:
            self.by_operation.clear()
            self.params.clear()

    def calls_of(self, operation: str) -> list[dict[str, Any]]:
        with self._lock:
            return [p for name, p in self.params if name == operation]
