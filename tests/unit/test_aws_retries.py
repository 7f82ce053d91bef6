"""Attempts and the retry quota of both AWS clients (:mod:`vaultcore.store.aws`), without a network.

* The botocore fallback makes exactly 3 attempts (``total_max_attempts``; ``max_attempts`` would count retries).
* The JSON client's retry quota is botocore's standard mode's: a bucket of 500, 5 per retry, 10 per retry after a
  timeout, one back per call answered at once; after an outage burst the bucket is spent and calls stop retrying.
* SQS requests carry ``x-amzn-query-mode: true``; container credentials are refreshed 15 minutes before expiry
  (advisory: a failure keeps the current ones) and must be from 10 minutes before (mandatory: a failure raises).

The differential tests against botocore over HTTP are in tests/integration/test_aws_json_client.py.
"""

from __future__ import annotations

import json
import threading
import types
from typing import Any

import pytest

from vaultcore.store import aws, aws_json
from vaultcore.store.aws_json import AwsClientError, AwsTransportError, Credentials, JsonServiceClient, RetryQuota

REGION = "us-east-1"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch, tmp_path):
    for name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_DYNAMODB", "AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS", "VAULT_AWS_SDK",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    aws.reset_clients()
    yield
    aws.reset_clients()


@pytest.fixture
def sleeps(monkeypatch):
    recorded: list[float] = []
    monkeypatch.setattr(aws_json, "time", types.SimpleNamespace(time=__import__("time").time,
                                                                gmtime=__import__("time").gmtime,
                                                                strftime=__import__("time").strftime,
                                                                sleep=recorded.append))
    monkeypatch.setattr(aws_json, "random", types.SimpleNamespace(random=lambda: 0.5))
    return recorded


# ------------------------------------------------------------------------------------------- botocore fallback

def test_the_botocore_fallback_makes_exactly_three_attempts(monkeypatch):
    """A 500 on every attempt: botocore's client (answered by a before-send hook, no socket) is asked 3 times."""
    import botocore.endpoint
    from botocore.awsrequest import AWSResponse
    from botocore.compat import HTTPHeaders

    monkeypatch.setenv("VAULT_AWS_SDK", "botocore")
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=lambda _s: None))
    client = aws.client("dynamodb")
    assert type(client).__module__.startswith("botocore")
    sent: list[str] = []

    def answer_500(request: Any, **_kwargs: Any) -> AWSResponse:
        sent.append(request.url)
        raw = types.SimpleNamespace(stream=lambda **_k: iter([b'{"__type":"InternalServerError"}']))
        return AWSResponse(request.url, 500, HTTPHeaders.from_dict({"x-amzn-RequestId": "r"}), raw)

    client.meta.events.register("before-send.dynamodb", answer_500)
    with pytest.raises(aws.client_errors()) as raised:
        client.get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert len(sent) == 3
    assert raised.value.response["ResponseMetadata"]["RetryAttempts"] == 2
    assert raised.value.response["ResponseMetadata"]["MaxAttemptsReached"] is True


def test_the_json_client_is_configured_for_three_attempts_too():
    client = aws.client("dynamodb")
    assert isinstance(client, JsonServiceClient)
    assert client._max_attempts == 3


# ------------------------------------------------------------------------------------------------- retry quota

class Scripted:
    """Stands in for a client's HTTP exchange: each attempt gets the next reply (status or exception)."""

    def __init__(self, client: JsonServiceClient, replies: list[Any]) -> None:
        self.replies, self.attempts = list(replies), 0
        client._exchange = self  # type: ignore[method-assign]

    def __call__(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        self.attempts += 1
        self.last_headers = headers
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, BaseException):
            raise aws_json._Retryable(reply, transport=True)
        if reply == 200:
            return 200, {}, b"{}"
        return reply, {}, json.dumps({"__type": "ServiceUnavailable", "message": "down"}).encode()


def _client(service: str = "kms") -> JsonServiceClient:
    return JsonServiceClient(service, region=REGION, endpoint_url="http://127.0.0.1:1",
                             credentials=aws_json.EnvironmentCredentials())


def test_the_quota_is_botocores():
    import botocore.retries.quota
    import botocore.retries.standard as standard

    assert RetryQuota.INITIAL_CAPACITY == botocore.retries.quota.RetryQuota.INITIAL_CAPACITY == 500
    assert RetryQuota.RETRY_COST == standard.RetryQuotaChecker._RETRY_COST == 5
    assert RetryQuota.TIMEOUT_RETRY_COST == standard.RetryQuotaChecker._TIMEOUT_RETRY_REQUEST == 10
    assert RetryQuota.NO_RETRY_INCREMENT == standard.RetryQuotaChecker._NO_RETRY_INCREMENT == 1


def test_an_outage_burst_spends_the_quota_and_then_calls_stop_retrying(sleeps):
    client = _client()
    wire = Scripted(client, [503])
    # Each failed call: 3 attempts, 2 retries of 5 tokens. 500 tokens pay for 50 such calls.
    for _ in range(50):
        with pytest.raises(AwsClientError) as raised:
            client.decrypt(CiphertextBlob=b"x")
        assert "RetryQuotaReached" not in raised.value.response["ResponseMetadata"]
    assert wire.attempts == 150 and client.retry_quota.available_capacity == 0
    # The bucket is empty: one attempt per call, no backoff, and the answer says why.
    slept = len(sleeps)
    for _ in range(20):
        with pytest.raises(AwsClientError) as raised:
            client.decrypt(CiphertextBlob=b"x")
        metadata = raised.value.response["ResponseMetadata"]
        assert metadata["RetryQuotaReached"] is True and metadata["RetryAttempts"] == 0
        assert raised.value.response["Error"]["Code"] == "ServiceUnavailable"
    assert wire.attempts == 170 and len(sleeps) == slept
    # The service is back: each answer at once gives one token back; five of them pay for a retry again.
    wire.replies = [200]
    for _ in range(5):
        client.decrypt(CiphertextBlob=b"x")
    assert client.retry_quota.available_capacity == 5
    wire.replies = [503, 200]
    answer = client.decrypt(CiphertextBlob=b"x")
    assert answer["ResponseMetadata"]["RetryAttempts"] == 1
    # A success after retries gives back what its last retry took.
    assert client.retry_quota.available_capacity == 5


def test_the_quota_is_per_client_and_full_capacity_is_the_ceiling(sleeps):
    burst, calm = _client(), _client()
    Scripted(burst, [503])
    Scripted(calm, [200])
    for _ in range(10):
        with pytest.raises(AwsClientError):
            burst.decrypt(CiphertextBlob=b"x")
        calm.decrypt(CiphertextBlob=b"x")
    assert burst.retry_quota.available_capacity == 400
    assert calm.retry_quota.available_capacity == 500


def test_a_retry_after_a_timeout_costs_ten(sleeps):
    client = _client("dynamodb")
    wire = Scripted(client, [TimeoutError("timed out"), 200])
    answer = client.get_item(TableName="t", Key={})
    assert answer["ResponseMetadata"]["RetryAttempts"] == 1 and wire.attempts == 2
    assert client.retry_quota.available_capacity == 500  # taken 10, given back 10
    wire.replies = [TimeoutError("timed out")]
    with pytest.raises(AwsTransportError, match="after 3 attempts"):
        client.get_item(TableName="t", Key={})
    assert client.retry_quota.available_capacity == 480
    wire.replies = [ConnectionRefusedError()]
    with pytest.raises(AwsTransportError):
        client.get_item(TableName="t", Key={})
    assert client.retry_quota.available_capacity == 470  # a refused connection is not a timeout: 5 a retry


def test_a_transport_outage_spends_the_quota_too(sleeps):
    client = _client("dynamodb")
    wire = Scripted(client, [TimeoutError("timed out")])
    for _ in range(25):  # 2 retries of 10 each
        with pytest.raises(AwsTransportError):
            client.get_item(TableName="t", Key={})
    assert client.retry_quota.available_capacity == 0 and wire.attempts == 75
    with pytest.raises(AwsTransportError, match="retry quota"):
        client.get_item(TableName="t", Key={})
    assert wire.attempts == 76


def test_the_quota_is_thread_safe():
    quota = RetryQuota()
    taken: list[bool] = []

    def take() -> None:
        for _ in range(100):
            taken.append(quota.acquire(5))

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert taken.count(True) == 100 and quota.available_capacity == 0
    for _ in range(600):
        quota.release(1)
    assert quota.available_capacity == 500


# ------------------------------------------------------------------------------------------ SQS query mode

@pytest.mark.parametrize("service, sent", [("sqs", True), ("dynamodb", False), ("kms", False),
                                           ("secretsmanager", False)])
def test_query_mode_header_on_sqs_only_as_botocore_serializes(service, sent):
    import botocore.session
    from botocore.serialize import create_serializer

    model = botocore.session.get_session().get_service_model(service)
    operation = model.operation_model(model.operation_names[0])
    boto_headers = create_serializer(model.metadata["protocol"], include_validation=False).serialize_to_request({}, operation)["headers"]
    assert ("x-amzn-query-mode" in boto_headers) is sent
    client = _client(service)
    wire = Scripted(client, [200])
    client.call(operation.name, {})
    assert wire.last_headers.get("x-amzn-query-mode") == ("true" if sent else None)
    if sent:
        assert "x-amzn-query-mode" in wire.last_headers["authorization"]  # signed, as botocore signs it


# ------------------------------------------------------------------------------------ container credentials

class FakeEndpoint:
    def __init__(self, provider: aws_json.ContainerCredentials) -> None:
        self.fetches, self.fail, self.expiry = 0, False, 0.0
        provider._fetch = self  # type: ignore[method-assign]

    def __call__(self) -> Credentials:
        self.fetches += 1
        if self.fail:
            raise AwsTransportError("The container credentials could not be read.")
        return Credentials(f"ASIA{self.fetches}", "s", "t", self.expiry)


@pytest.fixture
def clock(monkeypatch):
    now = [1_000_000.0]
    monkeypatch.setattr(aws_json, "time", types.SimpleNamespace(time=lambda: now[0]))
    return now


def test_container_credentials_windows_are_botocores():
    from botocore.credentials import RefreshableCredentials

    assert aws_json.ADVISORY_REFRESH_S == RefreshableCredentials._advisory_refresh_timeout == 15 * 60
    assert aws_json.MANDATORY_REFRESH_S == RefreshableCredentials._mandatory_refresh_timeout == 10 * 60


def test_container_credentials_are_refreshed_fifteen_minutes_before_expiry(clock):
    provider = aws_json.ContainerCredentials("http://127.0.0.1:1/creds")
    endpoint = FakeEndpoint(provider)
    endpoint.expiry = clock[0] + 3600
    first = provider.get()
    clock[0] = endpoint.expiry - 15 * 60  # exactly 15 minutes left: not yet (botocore: refresh when fewer)
    assert provider.get() is first and endpoint.fetches == 1
    clock[0] += 1
    endpoint.expiry = clock[0] + 3600
    second = provider.get()
    assert second.access_key == "ASIA2" and endpoint.fetches == 2
    assert provider.get() is second and endpoint.fetches == 2


def test_a_failed_advisory_refresh_keeps_the_credentials_and_a_failed_mandatory_one_raises(clock):
    provider = aws_json.ContainerCredentials("http://127.0.0.1:1/creds")
    endpoint = FakeEndpoint(provider)
    endpoint.expiry = clock[0] + 3600
    first = provider.get()
    endpoint.fail = True
    clock[0] = first.expiry - 12 * 60  # advisory window: used, and tried again at each call
    assert provider.get() is first and provider.get() is first
    assert endpoint.fetches == 3
    clock[0] = first.expiry - 9 * 60  # mandatory window: the failure is the caller's
    with pytest.raises(AwsTransportError):
        provider.get()
    endpoint.fail = False
    endpoint.expiry = clock[0] + 3600
    assert provider.get().access_key == "ASIA5"


def test_in_the_advisory_window_only_one_caller_refreshes(clock):
    provider = aws_json.ContainerCredentials("http://127.0.0.1:1/creds")
    endpoint = FakeEndpoint(provider)
    endpoint.expiry = clock[0] + 3600
    first = provider.get()
    clock[0] = first.expiry - 12 * 60
    with provider._lock:  # another thread is refreshing
        assert provider.get() is first  # advisory: not waited for
        clock[0] = first.expiry - 9 * 60
        waiter = threading.Thread(target=provider.get)
        waiter.start()  # mandatory: waits for the lock
        waiter.join(0.2)
        assert waiter.is_alive()
        endpoint.expiry = clock[0] + 3600
    waiter.join(5)
    assert not waiter.is_alive() and endpoint.fetches == 2
