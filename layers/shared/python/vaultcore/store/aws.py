"""boto3 clients, created once per container and only when first needed (cold start: boto3 costs ~150 ms).

Endpoints come from the standard ``AWS_ENDPOINT_URL`` variables, which is how the local runner points every
client at the moto server; nothing here knows about moto.

Every DynamoDB call made through :func:`dynamodb` is counted per thread, so benchmarks and tests can assert
the number of round trips a request costs.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import Any

__all__ = ["client", "dynamodb", "ddb_calls", "reset_ddb_calls", "reset_clients"]

_counter = threading.local()


@cache
def client(service: str) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=3, read_timeout=10,
                    max_pool_connections=50)
    c = boto3.session.Session().client(service, config=config)
    if service == "dynamodb":
        c.meta.events.register("before-call.dynamodb", _count_call)
    return c


def _count_call(**_kwargs: Any) -> None:
    _counter.calls = getattr(_counter, "calls", 0) + 1


def dynamodb() -> Any:
    return client("dynamodb")


def ddb_calls() -> int:
    """DynamoDB round trips made by this thread since the last reset."""
    return int(getattr(_counter, "calls", 0))


def reset_ddb_calls() -> None:
    _counter.calls = 0


def reset_clients() -> None:
    client.cache_clear()
