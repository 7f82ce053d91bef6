"""AWS clients: created once per container, during init; the JSON-protocol client where it can serve, else botocore.

DynamoDB, KMS, SQS and Secrets Manager are served by :mod:`vaultcore.store.aws_json` (standard library only) when
the credentials come from the environment or the container endpoint (as in Lambda) and the endpoint is a configured
URL or a standard regional one: importing botocore and building its first client costs ~200 ms of a cold start.
Anything else (a named profile, instance metadata, FIPS or dual-stack endpoints, other partitions, other services
such as payment-cryptography-data, or ``VAULT_AWS_SDK=botocore``) gets a botocore client, as before. Both raise
errors the adapters catch with :func:`client_errors` and :func:`transport_errors`.

botocore clients are botocore without boto3: boto3 adds nothing to a low-level client but its import (boto3.compat pulls in
s3transfer, ~180 ms cold on python3.13), and ``boto3.session.Session().client(...)`` builds a new botocore session
(service and endpoint data loaded again, a second endpoint resolver) for every client. Here all clients share one
session and its loader's caches.

Functions create their clients while Lambda runs init (:func:`prewarm`, called by ``vaultcore.runtime.init``
from ``app.py``): init has a full CPU, and with SnapStart it is snapshotted. Creating a client makes no network
call. :func:`renew_connections` drops pooled connections and cached container credentials (before a SnapStart
snapshot and after a restore).

Endpoints come from the standard ``AWS_ENDPOINT_URL`` variables, which is how the local runner points every
client at the moto server; nothing here knows about moto.

Every DynamoDB call made through :func:`dynamodb` is counted per thread, so benchmarks and tests can assert
the number of round trips a request costs.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

__all__ = ["client", "dynamodb", "prewarm", "PROD_ONLY", "session", "ddb_calls", "reset_ddb_calls", "reset_clients",
           "renew_connections", "created_clients", "client_errors", "transport_errors", "SDK_ENV"]

SDK_ENV = "VAULT_AWS_SDK"  # "botocore": every client is botocore's (in-process moto: its patch sits in botocore)

_counter = threading.local()
_lock = threading.RLock()  # botocore sessions are not thread-safe while they create clients
_session: Any = None
_clients: dict[str, Any] = {}


def session() -> Any:
    """The container's botocore session (created on first use)."""
    global _session
    if _session is None:
        with _lock:
            if _session is None:
                import botocore.session

                created = botocore.session.get_session()
                loader = created.get_component("data_loader")
                loader.list_available_services = _ServiceNames.answering_for(loader)
                _session = created
    return _session


class _ServiceNames:
    """What botocore's ``Loader.list_available_services`` answers, without its walk of every service directory.

    botocore asks it only to check that a service exists before loading the service's model (``name in ...``),
    and the walk stats ~900 paths (~35 ms cold, once per model type). Membership asks about that one service
    (``list_api_versions``, what the walk checks for each); anything else gets the full, sorted listing.
    """

    def __init__(self, loader: Any, listing: Any, type_name: str) -> None:
        self._loader, self._listing, self._type_name = loader, listing, type_name

    @classmethod
    def answering_for(cls, loader: Any) -> Any:
        listing = loader.list_available_services  # the bound original

        def list_available_services(type_name: str) -> _ServiceNames:
            return cls(loader, listing, type_name)

        return list_available_services

    def __contains__(self, service_name: object) -> bool:
        from botocore.exceptions import DataNotFoundError

        try:
            return bool(self._loader.list_api_versions(service_name, self._type_name))
        except DataNotFoundError:
            return False

    def _all(self) -> list[str]:
        return list(self._listing(self._type_name))

    def __iter__(self) -> Any:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]


def client(service: str) -> Any:
    found = _clients.get(service)
    if found is not None:
        return found
    with _lock:
        found = _clients.get(service)
        if found is None:
            found = _clients[service] = _create(service)
    return found


def _create(service: str) -> Any:
    created = _json_client(service)
    if created is None:
        created = _botocore_client(service)
    if service == "dynamodb":
        created.meta.events.register("before-call.dynamodb", _count_call)
    return created


def _json_client(service: str) -> Any:
    """The JSON-protocol client, or None where botocore must serve (see the module's docstring)."""
    if os.environ.get(SDK_ENV, "").strip().lower() == "botocore":
        return None
    from vaultcore.store import aws_json

    if service not in aws_json.SERVICES:
        return None
    region = (os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "").strip()
    if not region:
        return None
    endpoint = aws_json.endpoint_from_environment(service, region)
    credentials = aws_json.credential_provider_from_environment()
    if endpoint is None or credentials is None:
        return None
    return aws_json.JsonServiceClient(service, region=region, endpoint_url=endpoint, credentials=credentials,
                                      max_attempts=3, connect_timeout=3, read_timeout=10, max_pool_connections=50)


def _botocore_client(service: str) -> Any:
    from botocore.config import Config

    # total_max_attempts counts the first attempt: 3 in all, as the JSON client makes (botocore's max_attempts
    # counts retries only: max_attempts=3 would be 4 attempts).
    config = Config(retries={"total_max_attempts": 3, "mode": "standard"}, connect_timeout=3, read_timeout=10,
                    max_pool_connections=50)
    return session().create_client(service, config=config)


def client_errors() -> tuple[type[BaseException], ...]:
    """The exception types of an error answer from AWS, for ``except``: the JSON client's, and botocore's
    ``ClientError`` once botocore is loaded (no botocore client exists before that, so nothing is missed)."""
    from vaultcore.store.aws_json import AwsClientError

    botocore_exceptions = sys.modules.get("botocore.exceptions")
    return (AwsClientError, botocore_exceptions.ClientError) if botocore_exceptions else (AwsClientError,)


def transport_errors() -> tuple[type[BaseException], ...]:
    """The exception types of a call that got no usable answer (connection, timeout, credentials)."""
    from vaultcore.store.aws_json import AwsTransportError

    botocore_exceptions = sys.modules.get("botocore.exceptions")
    return (AwsTransportError, botocore_exceptions.BotoCoreError) if botocore_exceptions else (AwsTransportError,)


PROD_ONLY = "@prod"  # "payment-cryptography-data@prod": created at init in prod only (cert keys are software keys)


def prewarm(services: tuple[str, ...] | list[str]) -> None:
    """Create these clients now (Lambda init). No network call. A name ending in ``@prod`` is created only when
    ENVIRONMENT is prod (elsewhere on first use). A failure here (no region configured: a test process importing a
    handler) is left for the first request to raise where its error is handled."""
    import encodings.idna  # noqa: F401 - the first connection encodes the host name with it

    for service in services:
        if service.endswith(PROD_ONLY):
            # The variable itself, not settings(): nothing read at import may be cached (the local runner and
            # the tests set the functions' environment after importing them).
            if os.environ.get("ENVIRONMENT", "cert").strip().lower() != "prod":
                continue
            service = service[: -len(PROD_ONLY)]
        try:
            client(service)
        except Exception:  # noqa: BLE001 - init must not fail on what the request path reports properly
            return


def created_clients() -> dict[str, Any]:
    with _lock:
        return dict(_clients)


def _count_call(**_kwargs: Any) -> None:
    _counter.calls = getattr(_counter, "calls", 0) + 1


def dynamodb() -> Any:
    return client("dynamodb")


def ddb_calls() -> int:
    """DynamoDB round trips made by this thread since the last reset."""
    return int(getattr(_counter, "calls", 0))


def reset_ddb_calls() -> None:
    _counter.calls = 0


def renew_connections() -> None:
    """Close every client's pooled connections; the next call opens new ones (after a SnapStart restore the
    snapshot's sockets are not this sandbox's)."""
    for created in created_clients().values():
        renew = getattr(created, "renew", None)
        if callable(renew):  # a JSON-protocol client: its pool, and container credentials read again
            renew()
            continue
        endpoint = getattr(created, "_endpoint", None)
        http_session = getattr(endpoint, "http_session", None)
        close = getattr(http_session, "close", None)
        if callable(close):
            close()


def reset_clients() -> None:
    """Forget every client and the session (tests: a new moto, a new environment)."""
    global _session
    with _lock:
        _clients.clear()
        _session = None
