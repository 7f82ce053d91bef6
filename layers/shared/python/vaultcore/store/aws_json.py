"""A small client for the AWS JSON protocol (DynamoDB, KMS, SQS, Secrets Manager), signed with SigV4.

Why not botocore on the request path: importing botocore and building its first client costs ~200 ms of a python3.13
cold start (import ~140 ms, service model and endpoint rules ~50 ms), more than the rest of a function's init and
first request together. The four services the functions call all speak the same wire protocol — ``POST /`` with an
``X-Amz-Target: <prefix>.<Operation>`` header and a JSON body (the "awsJson1_0"/"awsJson1_1" protocols of the
Smithy specifications) — so one generic client covers every operation they use, with the standard library only.

What it does as botocore does (botocore stays the reference: ``tests/integration/test_aws_json_client.py`` runs each
operation through both against a moto server and compares the answers):

* **Signing**: AWS Signature Version 4 (the "AWS4-HMAC-SHA256" algorithm), checked against AWS's published SigV4
  test suite and against botocore's signer. The derived signing key is cached per day, region and service.
* **Operations**: ``client.get_item(TableName=..., Key=...)``: the method name in snake case, keyword parameters as
  botocore takes them; ``bytes`` parameters are sent base64-encoded (JSON blobs); in answers, DynamoDB ``B``/``BS``
  attribute values and the services' blob members (KMS ``Plaintext``, ``CiphertextBlob``, ...) come back as bytes.
  Timestamps in answers are left as the epoch numbers the wire carries (no answer the functions read has one).
* **Errors**: :class:`AwsClientError` carries ``response["Error"]["Code"]``/``["Message"]``, the HTTP status, and the
  error body's other members (DynamoDB ``CancellationReasons``, ``Item``), as botocore's ``ClientError`` does; SQS's
  query-compatible codes (``AWS.SimpleQueueService.NonExistentQueue``) as botocore reports them. A transport
  failure that outlives the retries is :class:`AwsTransportError`.
* **Retries**: the SDKs' "standard" mode (at most 3 attempts; throttling and transient error codes, HTTP 500/502/
  503/504, connection errors and timeouts; full-jitter exponential backoff capped at 20 s), and a DynamoDB answer
  whose ``x-amz-crc32`` does not match its body is retried like botocore does (and refused after the last
  attempt, where botocore hands it over). Members the model marks ``idempotencyToken`` (DynamoDB
  ``TransactWriteItems.ClientRequestToken``, ...) are filled once per call, so a retry after a lost answer is
  recognized by the service. JSON ``null`` members are left out of answers, as botocore's parser does.
* **Retry quota**: the standard mode's token bucket, one per client as botocore has (botocore/retries/quota.py
  and standard.py ``RetryQuotaChecker``): 500 tokens; a retry takes 5 (10 after a timeout) and is not made when
  the bucket cannot pay, so an outage costs one attempt per call instead of three once the bucket is empty; a
  call answered without a retry puts 1 back, one answered after retries puts back what its last retry took.
  A call refused a retry says so in ``ResponseMetadata["RetryQuotaReached"]``, as botocore's does.
  Not here: clock-skew correction, and the MD5 checks botocore makes of SQS message bodies.
* **Connections**: a keep-alive pool per client (``http.client``), connect timeout 3 s and read timeout 10 s; a
  reused connection the server has closed is replaced once without counting as an attempt.
* **Query compatibility**: SQS (a service moved from the query protocol) gets ``x-amzn-query-mode: true`` on
  every request, as botocore's serializer sends it for services with the ``awsQueryCompatible`` trait: the
  service then answers with the query protocol's error codes in ``x-amzn-query-error``.
* **Hooks**: ``client.meta.events.register("before-call.dynamodb", handler)`` calls ``handler(model=..., params=...)``
  before each call, with botocore's hierarchical event names (the service id: ``secrets-manager``), so call
  counters work with either client; ``params`` are the caller's keyword arguments, not botocore's serialized
  request.

Credentials come from the environment (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, read at
each call) or from the container credentials endpoint (``AWS_CONTAINER_CREDENTIALS_FULL_URI`` or ``..._RELATIVE_URI``,
with ``AWS_CONTAINER_AUTHORIZATION_TOKEN[_FILE]``: what Lambda gives SnapStart functions), refreshed as botocore's
``RefreshableCredentials`` does: from 15 minutes before they expire (advisory: one caller refreshes, the others
keep using the current ones, and a failed refresh keeps them), and from 10 minutes before (mandatory: callers wait
for the refresh, and its failure is theirs). :mod:`vaultcore.store.aws` decides when this client is used and falls back to botocore otherwise
(profiles, instance metadata, FIPS or dual-stack endpoints, partitions other than aws, aws-cn and aws-us-gov).

Nothing here logs; no request or answer body is ever put in an exception message.

:class:`ServiceSpec`, :class:`Credentials` are written by hand for a measured cold start reason
(:mod:`vaultcore.plain`: a dataclass costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms;
docs/design/benchmarks.md).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import os
import random
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from vaultcore.lazy_re import lazy
from vaultcore.plain import Frozen, init

__all__ = [
    "AwsClientError", "AwsTransportError", "Credentials", "EnvironmentCredentials", "ContainerCredentials",
    "JsonServiceClient", "RetryQuota", "SERVICES", "canonical_request", "string_to_sign", "sign", "default_endpoint",
    "endpoint_from_environment", "credential_provider_from_environment",
]

ALGORITHM = "AWS4-HMAC-SHA256"


class ServiceSpec(Frozen):
    """What the wire needs to know of a service (from its Smithy model: target prefix, JSON version, signing
    name, endpoint prefix, the ``AWS_ENDPOINT_URL_<ID>`` suffix) and which answer members are blobs."""

    __slots__ = ("target_prefix", "json_version", "signing_name", "endpoint_prefix", "env_id", "event_id",
                 "blob_members", "query_compatible", "idempotency_tokens", "retryable_codes")
    target_prefix: str
    json_version: str
    signing_name: str
    endpoint_prefix: str
    env_id: str
    event_id: str  # botocore's event-name part: the service id, lower case, hyphenated
    blob_members: frozenset[str]
    query_compatible: bool
    # Members the model marks idempotencyToken: filled with a UUID when the caller gives none, the same value on
    # every retry, so a retried call whose first attempt was applied is recognized by the service (as the SDKs do).
    idempotency_tokens: Mapping[str, str]
    # Error shapes the model marks retryable, for the operations that list them (botocore's standard mode retries
    # a modeled error only where the operation names it).
    retryable_codes: Mapping[str, frozenset[str]]

    def __init__(self, target_prefix: str, json_version: str, signing_name: str, endpoint_prefix: str, env_id: str,
                 event_id: str, blob_members: frozenset[str] = frozenset(), query_compatible: bool = False,
                 idempotency_tokens: Mapping[str, str] | None = None,
                 retryable_codes: Mapping[str, frozenset[str]] | None = None) -> None:
        init(self, target_prefix=target_prefix, json_version=json_version, signing_name=signing_name,
             endpoint_prefix=endpoint_prefix, env_id=env_id, event_id=event_id, blob_members=blob_members,
             query_compatible=query_compatible,
             idempotency_tokens={} if idempotency_tokens is None else idempotency_tokens,
             retryable_codes={} if retryable_codes is None else retryable_codes)


SERVICES: dict[str, ServiceSpec] = {
    "dynamodb": ServiceSpec("DynamoDB_20120810", "1.0", "dynamodb", "dynamodb", "DYNAMODB", "dynamodb",
                            idempotency_tokens={"TransactWriteItems": "ClientRequestToken",
                                                "ExecuteTransaction": "ClientRequestToken",
                                                "ExportTableToPointInTime": "ClientToken", "ImportTable": "ClientToken",
                                                "StartBulkPutItems": "ClientToken"},
                            retryable_codes={op: frozenset({"ReplicatedWriteConflictException"}) for op in
                                             ("BatchWriteItem", "DeleteItem", "PutItem", "UpdateItem")}),
    "kms": ServiceSpec("TrentService", "1.1", "kms", "kms", "KMS", "kms",
                       frozenset({"Plaintext", "CiphertextBlob", "CiphertextForRecipient", "PublicKey", "Signature",
                                  "Mac", "ImportToken", "PrivateKeyCiphertextBlob", "PrivateKeyPlaintext",
                                  "SharedSecret", "SharedSecretCiphertextBlob"})),
    "sqs": ServiceSpec("AmazonSQS", "1.0", "sqs", "sqs", "SQS", "sqs", frozenset({"BinaryValue"}),
                       query_compatible=True),
    "secretsmanager": ServiceSpec("secretsmanager", "1.1", "secretsmanager", "secretsmanager", "SECRETS_MANAGER",
                                  "secrets-manager", frozenset({"SecretBinary"}),
                                  idempotency_tokens={"CreateSecret": "ClientRequestToken",
                                                      "PutSecretValue": "ClientRequestToken",
                                                      "RotateSecret": "ClientRequestToken",
                                                      "UpdateSecret": "ClientRequestToken"}),
}

# The standard retry mode's retryable answers (the SDKs' "standard" retry behaviour, as in botocore's
# retries/standard.py): throttling codes, transient codes and statuses.
THROTTLING_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
    "TooManyRequestsException", "ProvisionedThroughputExceededException", "TransactionInProgressException",
    "RequestLimitExceeded", "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled", "SlowDown",
    "PriorRequestNotComplete", "EC2ThrottledException",
})
TRANSIENT_CODES = frozenset({"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete"})
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
MAX_BACKOFF_S = 20.0


class RetryQuota:
    """The standard retry mode's token bucket (botocore.retries.quota.RetryQuota with the costs of
    botocore.retries.standard.RetryQuotaChecker): retries take tokens, answers that needed none give one back."""

    INITIAL_CAPACITY = 500
    RETRY_COST = 5
    TIMEOUT_RETRY_COST = 10
    NO_RETRY_INCREMENT = 1

    def __init__(self, capacity: int = INITIAL_CAPACITY) -> None:
        self._max = self._available = capacity
        self._lock = threading.Lock()

    @property
    def available_capacity(self) -> int:
        return self._available

    def acquire(self, amount: int) -> bool:
        with self._lock:
            if amount > self._available:
                return False
            self._available -= amount
            return True

    def release(self, amount: int) -> None:
        if self._available == self._max:  # the common case, without the lock (as botocore)
            return
        with self._lock:
            self._available = min(self._max, self._available + amount)


class AwsClientError(Exception):
    """An error answer from the service (botocore's ``ClientError`` shape: ``response``, ``operation_name``)."""

    def __init__(self, response: dict[str, Any], operation_name: str) -> None:
        error = response.get("Error", {})
        super().__init__(f"An error occurred ({error.get('Code', 'Unknown')}) when calling the {operation_name} "
                         f"operation: {error.get('Message', '')}")
        self.response = response
        self.operation_name = operation_name


class AwsTransportError(Exception):
    """No answer: connection refused or reset, a timeout, a malformed or corrupted answer (after the retries)."""


# ----------------------------------------------------------------------------------------------------- signing

class Credentials(Frozen):
    __slots__ = ("access_key", "secret_key", "token", "expiry")
    access_key: str
    secret_key: str
    token: str | None
    expiry: float | None  # epoch seconds; None: static

    def __init__(self, access_key: str, secret_key: str = "", token: str | None = None,
                 expiry: float | None = None) -> None:
        init(self, access_key=access_key, secret_key=secret_key, token=token, expiry=expiry)

    def __repr__(self) -> str:  # never the secret or the token
        return f"Credentials(access_key={self.access_key[:4]}..., token={'yes' if self.token else 'no'})"


def _uri_encode(text: str, safe: str = "-_.~") -> str:
    return quote(text, safe=safe)


def _canonical_path(path: str) -> str:
    # SigV4 for every service but S3 normalizes the path (RFC 3986 section 5.2.4 dot segments, no empty segments)
    # and encodes each segment once more.
    segments: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if segments:
                segments.pop()
            continue
        segments.append(segment)
    normalized = "/" + "/".join(segments)
    if path.endswith("/") and normalized != "/":
        normalized += "/"
    return _uri_encode(normalized, safe="/-_.~")


def _canonical_query(query: str) -> str:
    pairs: list[tuple[str, str]] = []
    for part in query.split("&") if query else ():
        key, _, value = part.partition("=")
        pairs.append((_uri_encode(unquote(key)), _uri_encode(unquote(value))))
    return "&".join(f"{k}={v}" for k, v in sorted(pairs))


_SPACES = lazy(r"\s+")


def _canonical_headers(headers: Mapping[str, str] | list[tuple[str, str]]) -> tuple[str, str]:
    merged: dict[str, list[str]] = {}
    for name, value in headers.items() if isinstance(headers, Mapping) else headers:
        merged.setdefault(name.strip().lower(), []).append(_SPACES.sub(" ", str(value).strip()))
    names = sorted(merged)
    canonical = "".join(f"{name}:{','.join(merged[name])}\n" for name in names)
    return canonical, ";".join(names)


def canonical_request(method: str, path: str, query: str, headers: Mapping[str, str] | list[tuple[str, str]],
                      payload_hash: str) -> str:
    canonical_headers, signed_headers = _canonical_headers(headers)
    return "\n".join((method.upper(), _canonical_path(path or "/"), _canonical_query(query), canonical_headers,
                      signed_headers, payload_hash))


def _scope(amz_date: str, region: str, service: str) -> str:
    return f"{amz_date[:8]}/{region}/{service}/aws4_request"


def string_to_sign(creq: str, amz_date: str, region: str, service: str) -> str:
    return "\n".join((ALGORITHM, amz_date, _scope(amz_date, region, service),
                      hashlib.sha256(creq.encode("utf-8")).hexdigest()))


_signing_keys: dict[tuple[str, str, str, str], bytes] = {}


def _signing_key(secret_key: str, day: str, region: str, service: str) -> bytes:
    cache_key = (secret_key, day, region, service)
    key = _signing_keys.get(cache_key)
    if key is None:
        key = ("AWS4" + secret_key).encode("utf-8")
        for part in (day, region, service, "aws4_request"):
            key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
        if len(_signing_keys) > 16:  # a new day or rotated credentials: forget the old keys
            _signing_keys.clear()
        _signing_keys[cache_key] = key
    return key


def sign(method: str, path: str, query: str, headers: Mapping[str, str] | list[tuple[str, str]], body: bytes,
         credentials: Credentials, region: str, service: str, amz_date: str) -> str:
    """The ``Authorization`` header value for a request whose ``headers`` already hold ``host`` and
    ``x-amz-date`` (and ``x-amz-security-token`` when there is a session token): every header given is signed."""
    creq = canonical_request(method, path, query, headers, hashlib.sha256(body).hexdigest())
    sts = string_to_sign(creq, amz_date, region, service)
    key = _signing_key(credentials.secret_key, amz_date[:8], region, service)
    signature = hmac.new(key, sts.encode("utf-8"), hashlib.sha256).hexdigest()
    signed_headers = _canonical_headers(headers)[1]
    return (f"{ALGORITHM} Credential={credentials.access_key}/{_scope(amz_date, region, service)}, "
            f"SignedHeaders={signed_headers}, Signature={signature}")


# ------------------------------------------------------------------------------------------------- credentials

class EnvironmentCredentials:
    """``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``, read at each call (a SnapStart restore or
    a test may change them)."""

    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self._environ = environ

    @staticmethod
    def available(environ: Mapping[str, str] = os.environ) -> bool:
        return bool(environ.get("AWS_ACCESS_KEY_ID") and environ.get("AWS_SECRET_ACCESS_KEY"))

    @staticmethod
    def partial(environ: Mapping[str, str] = os.environ) -> bool:
        """One of the two keys without the other: botocore refuses it (PartialCredentialsError) and says so."""
        return bool(environ.get("AWS_ACCESS_KEY_ID")) != bool(environ.get("AWS_SECRET_ACCESS_KEY"))

    def get(self) -> Credentials:
        env = self._environ
        access_key, secret_key = env.get("AWS_ACCESS_KEY_ID"), env.get("AWS_SECRET_ACCESS_KEY")
        if not access_key or not secret_key:
            raise AwsTransportError("No AWS credentials in the environment.")
        # The SDKs' order: the legacy AWS_SECURITY_TOKEN first, then AWS_SESSION_TOKEN (botocore's EnvProvider).
        token = env.get("AWS_SECURITY_TOKEN") or env.get("AWS_SESSION_TOKEN") or None
        return Credentials(access_key, secret_key, token)

    def reset(self) -> None:
        pass


_CONTAINER_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "169.254.170.2", "169.254.170.23", "fd00:ec2::23"})
_RELATIVE_BASE = "http://169.254.170.2"
# botocore.credentials' RefreshableCredentials windows (_DEFAULT_ADVISORY_REFRESH_TIMEOUT, ..._MANDATORY_...).
ADVISORY_REFRESH_S = 15 * 60.0
MANDATORY_REFRESH_S = 10 * 60.0


class ContainerCredentials:
    """The container credentials endpoint (ECS, Lambda SnapStart, Pod Identity), as the SDKs read it: an HTTP GET
    with the ``Authorization`` token, answered ``{AccessKeyId, SecretAccessKey, Token, Expiration}``. Full URIs must be
    HTTPS or one of the loopback/link-local hosts the SDKs allow."""

    def __init__(self, url: str, token: str | None = None, token_file: str | None = None,
                 timeout_s: float = 2.0) -> None:
        self.url, self._token, self._token_file, self._timeout_s = url, token, token_file, timeout_s
        self._cached: Credentials | None = None
        self._lock = threading.Lock()

    @staticmethod
    def from_environment(environ: Mapping[str, str] = os.environ) -> ContainerCredentials | None:
        relative, full = environ.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"), environ.get(
            "AWS_CONTAINER_CREDENTIALS_FULL_URI")
        if relative:
            url = _RELATIVE_BASE + relative
        elif full:
            parts = urlsplit(full)
            if parts.scheme != "https" and (parts.scheme != "http" or parts.hostname not in _CONTAINER_HOSTS):
                return None  # what the SDKs refuse; botocore will say why
            url = full
        else:
            return None
        return ContainerCredentials(url, environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN"),
                                    environ.get("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"))

    @staticmethod
    def _due(cached: Credentials | None, window_s: float) -> bool:
        """To be fetched: none yet, or fewer than ``window_s`` seconds left (botocore's ``refresh_needed``)."""
        return cached is None or (cached.expiry is not None and cached.expiry - time.time() < window_s)

    def get(self) -> Credentials:
        cached = self._cached
        if not self._due(cached, ADVISORY_REFRESH_S):
            assert cached is not None
            return cached
        # As botocore's RefreshableCredentials._refresh: in the advisory window one caller refreshes and the others
        # go on with the current credentials; in the mandatory window (or with none yet) every caller waits.
        if self._lock.acquire(blocking=False):
            try:
                return self._refresh()
            finally:
                self._lock.release()
        if not self._due(cached, MANDATORY_REFRESH_S):
            assert cached is not None
            return cached
        with self._lock:
            return self._refresh()

    def _refresh(self) -> Credentials:
        """With the lock held: fetch if still due. A failure in the advisory window keeps the current credentials
        (tried again at the next call); in the mandatory window it is the caller's."""
        cached = self._cached
        if not self._due(cached, ADVISORY_REFRESH_S):
            assert cached is not None
            return cached
        try:
            fresh = self._fetch()
        except AwsTransportError:
            if cached is not None and not self._due(cached, MANDATORY_REFRESH_S):
                return cached
            raise
        self._cached = fresh
        return fresh

    def reset(self) -> None:
        with self._lock:
            self._cached = None

    def _fetch(self) -> Credentials:
        token = self._token
        if self._token_file:
            try:
                with open(self._token_file, encoding="utf-8") as fh:
                    token = fh.read().strip()
            except OSError as exc:
                raise AwsTransportError("The container credentials token file cannot be read.") from exc
        if token is not None and ("\r" in token or "\n" in token):
            raise AwsTransportError("The container credentials token is malformed.")
        parts = urlsplit(self.url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        last: Exception | None = None
        for attempt in range(3):
            conn_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
            conn = conn_type(parts.hostname or "", parts.port, timeout=self._timeout_s)
            try:
                conn.request("GET", path or "/", headers={"Authorization": token} if token else {})
                response = conn.getresponse()
                body = response.read()
                if response.status == 200:
                    data = json.loads(body)
                    return Credentials(str(data["AccessKeyId"]), str(data["SecretAccessKey"]),
                                       data.get("Token") or None, _parse_expiry(data.get("Expiration")))
                last = AwsTransportError(f"The container credentials endpoint answered HTTP {response.status}.")
                if response.status < 500:
                    break
            except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError) as exc:
                last = exc
            finally:
                conn.close()
            time.sleep(0.05 * (attempt + 1))
        raise AwsTransportError("The container credentials could not be read.") from last


def _parse_expiry(value: Any) -> float | None:
    if not value:
        return None
    from datetime import datetime

    text = str(value).replace("Z", "+00:00")
    return datetime.fromisoformat(text).timestamp()


def credential_provider_from_environment(environ: Mapping[str, str] = os.environ) -> Any:
    """The provider the SDKs would pick first, if it is one this client supports, else None (use botocore).

    The SDKs' order: environment variables first; then (no profile file in Lambda) the container endpoint."""
    if EnvironmentCredentials.available(environ):
        return EnvironmentCredentials(environ)
    if EnvironmentCredentials.partial(environ):
        return None
    if environ.get("AWS_PROFILE") or environ.get("AWS_DEFAULT_PROFILE"):
        return None  # a named profile: botocore reads the files
    return ContainerCredentials.from_environment(environ)


# --------------------------------------------------------------------------------------------------- endpoints

_STANDARD_REGION = lazy(r"^(?:[a-z]{2}|us-gov)-[a-z]+-\d{1,2}$")
_CN_REGION = lazy(r"^cn-[a-z]+-\d{1,2}$")


def default_endpoint(service: str, region: str) -> str | None:
    """The service's regional endpoint in the aws, aws-cn and aws-us-gov partitions (every one of the four services
    is regional and named ``<prefix>.<region>.<dns suffix>`` there); None elsewhere (botocore's rules decide)."""
    prefix = SERVICES[service].endpoint_prefix
    if _CN_REGION.match(region):
        return f"https://{prefix}.{region}.amazonaws.com.cn"
    if _STANDARD_REGION.match(region) and not region.startswith(("us-iso", "eu-iso")):
        return f"https://{prefix}.{region}.amazonaws.com"
    return None


def _true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


def endpoint_from_environment(service: str, region: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """``AWS_ENDPOINT_URL_<SERVICE>``, else ``AWS_ENDPOINT_URL``, else the default endpoint; None when FIPS or
    dual-stack endpoints are asked for (botocore resolves those)."""
    if _true(environ.get("AWS_USE_FIPS_ENDPOINT")) or _true(environ.get("AWS_USE_DUALSTACK_ENDPOINT")):
        return None
    if not _true(environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")):
        configured = environ.get(f"AWS_ENDPOINT_URL_{SERVICES[service].env_id}") or environ.get("AWS_ENDPOINT_URL")
        if configured:
            return configured.strip()
    return default_endpoint(service, region)


# ------------------------------------------------------------------------------------------------------ client

class OperationModel:
    """What a botocore event handler reads of the operation (``model.name``, ``model.service_model.service_name``)."""

    __slots__ = ("name", "service_model")

    def __init__(self, name: str, service_model: Any) -> None:
        self.name, self.service_model = name, service_model


class _ServiceModel:
    __slots__ = ("service_name",)

    def __init__(self, service_name: str) -> None:
        self.service_name = service_name


class _Events:
    """botocore's hierarchical event names: a handler registered for ``before-call.dynamodb`` hears
    ``before-call.dynamodb.GetItem``. Only ``before-call`` is emitted."""

    def __init__(self, aliases: Mapping[str, str] | None = None) -> None:
        self._handlers: list[tuple[str, Callable[..., Any], str | None]] = []
        self._aliases = dict(aliases or {})  # a registered name part -> the emitted one ("secretsmanager")

    def register(self, event_name: str, handler: Callable[..., Any], unique_id: str | None = None,
                 **_kwargs: Any) -> None:
        if unique_id is not None and any(uid == unique_id for _, _, uid in self._handlers):
            return
        self._handlers.append((event_name, handler, unique_id))

    def unregister(self, event_name: str, handler: Callable[..., Any] | None = None,
                   unique_id: str | None = None, **_kwargs: Any) -> None:
        self._handlers = [h for h in self._handlers
                          if not (h[0] == event_name and (h[1] is handler or (unique_id and h[2] == unique_id)))]

    def _canonical(self, event_name: str) -> str:
        parts = event_name.split(".")
        if len(parts) > 1 and parts[1] in self._aliases:
            parts[1] = self._aliases[parts[1]]
        return ".".join(parts)

    def emit(self, event_name: str, **kwargs: Any) -> None:
        for registered, handler, _ in list(self._handlers):
            registered = self._canonical(registered)
            if event_name == registered or event_name.startswith(registered + "."):
                handler(event_name=event_name, **kwargs)


class _Meta:
    def __init__(self, service: str, region: str, endpoint_url: str) -> None:
        spec = SERVICES[service]
        self.service_model = _ServiceModel(service)
        self.region_name = region
        self.endpoint_url = endpoint_url
        # botocore names events after the service id ("secrets-manager") and also hears the endpoint name
        self.events = _Events({service: spec.event_id} if service != spec.event_id else None)


def operation_name(method_name: str) -> str:
    """``batch_write_item`` -> ``BatchWriteItem`` (the four services' operation names are plain camel case)."""
    return "".join(part[:1].upper() + part[1:] for part in method_name.split("_"))


def _encode(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not a JSON protocol value")


def _without_nulls(value: Any) -> Any:
    """JSON ``null`` members left out, as botocore's parser does (a null member is an absent one)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _decode_dynamodb(value: Any) -> Any:
    """Binary attribute values (``{"B": "<base64>"}``, ``{"BS": [...]}``) to bytes, wherever they are in an answer.

    In DynamoDB's answers a one-member object ``{"B": <string>}`` or ``{"BS": [<string>...]}`` is always an attribute
    value: attribute names map to attribute-value objects, never to strings."""
    if isinstance(value, dict):
        if len(value) == 1:
            if isinstance(value.get("B"), str):
                return {"B": base64.b64decode(value["B"])}
            if isinstance(value.get("BS"), list):
                return {"BS": [base64.b64decode(v) for v in value["BS"]]}
        return {k: _decode_dynamodb(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode_dynamodb(v) for v in value]
    return value


def _decode_blobs(value: Any, members: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: (base64.b64decode(v) if k in members and isinstance(v, str) else _decode_blobs(v, members))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_decode_blobs(v, members) for v in value]
    return value


class _Retryable(Exception):
    def __init__(self, cause: BaseException | AwsClientError, transport: bool) -> None:
        super().__init__(str(cause))
        self.cause, self.transport = cause, transport

    @property
    def quota_cost(self) -> int:
        # botocore charges 10 for its ConnectTimeoutError and ReadTimeoutError (a socket timeout here), 5 else.
        return RetryQuota.TIMEOUT_RETRY_COST if isinstance(self.cause, TimeoutError) else RetryQuota.RETRY_COST


# botocore client attributes that are not operations: asking for one here is a mistake, not an API call.
_NOT_OPERATIONS = frozenset({"exceptions", "get_paginator", "get_waiter", "can_paginate", "waiter_names"})


def reset_caches() -> None:
    """Forget the derived signing keys (before a SnapStart snapshot: nothing derived from a secret in it)."""
    _signing_keys.clear()


class JsonServiceClient:
    """One AWS service over the JSON protocol; thread-safe (a pool of keep-alive connections)."""

    def __init__(self, service: str, *, region: str, endpoint_url: str, credentials: Any,
                 max_attempts: int = 3, connect_timeout: float = 3.0, read_timeout: float = 10.0,
                 max_pool_connections: int = 50, ssl_context: Any = None) -> None:
        if service not in SERVICES:
            raise ValueError(f"{service} is not a JSON protocol service this client knows")
        self.spec = SERVICES[service]
        self.service = service
        self.region = region
        parts = urlsplit(endpoint_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("endpoint_url must be an http or https URL")
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        default_port = 443 if self._https else 80
        self._host_header = parts.netloc.rsplit("@", 1)[-1]
        if parts.port == default_port:
            self._host_header = self._host_header.rsplit(":", 1)[0]
        self._path = parts.path or "/"
        self._credentials = credentials
        self._max_attempts = max(1, max_attempts)
        self._connect_timeout, self._read_timeout = connect_timeout, read_timeout
        self._pool: list[http.client.HTTPConnection] = []
        self._pool_size = max_pool_connections
        self._pool_lock = threading.Lock()
        self._ssl_context = ssl_context
        self._content_type = f"application/x-amz-json-{self.spec.json_version}"
        self.retry_quota = RetryQuota()  # per client, as botocore's standard mode has it
        self.meta = _Meta(service, region, endpoint_url)
        self._operations: dict[str, Callable[..., dict[str, Any]]] = {}
        if self._https:
            self._tls()  # the CA bundle is read now (init), not at the first call

    def __repr__(self) -> str:
        return f"JsonServiceClient({self.service!r}, region={self.region!r}, endpoint={self.meta.endpoint_url!r})"

    # -- operations
    def __getattr__(self, name: str) -> Callable[..., dict[str, Any]]:
        if name.startswith("_") or not name.islower() or name in _NOT_OPERATIONS:
            raise AttributeError(name)
        method = self._operations.get(name)
        if method is None:
            operation = operation_name(name)

            def method(**params: Any) -> dict[str, Any]:
                return self.call(operation, params)

            method.__name__ = name
            self._operations[name] = method
        return method

    def call(self, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
        token_member = self.spec.idempotency_tokens.get(operation)
        if token_member and params.get(token_member) is None:
            params = {**params, token_member: str(uuid.uuid4())}  # one per call: every retry sends the same
        self.meta.events.emit(f"before-call.{self.spec.event_id}.{operation}",
                              model=OperationModel(operation, self.meta.service_model), params=params,
                              context={})
        body = json.dumps(params, separators=(",", ":"), default=_encode).encode("utf-8")
        attempt, acquired = 0, 0
        while True:
            attempt += 1
            try:
                answer = self._attempt(operation, body, attempt)
            except _Retryable as retry:
                quota_reached = False
                if attempt < self._max_attempts:
                    cost = retry.quota_cost
                    if self.retry_quota.acquire(cost):
                        acquired = cost
                        # Full-jitter exponential backoff: uniform in [0, min(20 s, 2^(attempt-1) s)].
                        time.sleep(random.random() * min(MAX_BACKOFF_S, 2.0 ** (attempt - 1)))
                        continue
                    quota_reached = True
                if retry.transport:
                    reason = "the retry quota is spent" if quota_reached else f"after {attempt} attempts"
                    raise AwsTransportError(f"{self.service} {operation}: no answer {reason} "
                                            f"({type(retry.cause).__name__}).") from retry.cause
                if quota_reached and isinstance(retry.cause, AwsClientError):
                    retry.cause.response["ResponseMetadata"]["RetryQuotaReached"] = True
                raise retry.cause from None
            # A success gives back what its last retry took, or one token when it needed none (botocore's
            # after-call release_retry_quota).
            self.retry_quota.release(acquired or RetryQuota.NO_RETRY_INCREMENT)
            return answer

    def _attempt(self, operation: str, body: bytes, attempt: int) -> dict[str, Any]:
        credentials = self._credentials.get()
        amz_date = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        headers = {"host": self._host_header, "x-amz-date": amz_date, "content-type": self._content_type,
                   "x-amz-target": f"{self.spec.target_prefix}.{operation}"}
        if self.spec.query_compatible:
            headers["x-amzn-query-mode"] = "true"  # botocore's serializer: the awsQueryCompatible trait
        if credentials.token:
            headers["x-amz-security-token"] = credentials.token
        headers["authorization"] = sign("POST", self._path, "", headers, body, credentials, self.region,
                                        self.spec.signing_name, amz_date)
        headers["content-length"] = str(len(body))
        headers["user-agent"] = "vaultcore-aws-json/1"
        status, answer_headers, data = self._exchange(body, headers)
        if self.service == "dynamodb" and "x-amz-crc32" in answer_headers:
            expected = answer_headers["x-amz-crc32"]
            if not expected.isdigit() or zlib.crc32(data) & 0xFFFFFFFF != int(expected):
                raise _Retryable(AwsTransportError("The answer's CRC32 does not match its body."), transport=True)
        metadata = {"RequestId": answer_headers.get("x-amzn-requestid", ""), "HTTPStatusCode": status,
                    "HTTPHeaders": answer_headers, "RetryAttempts": attempt - 1}
        if 200 <= status < 300:
            try:
                parsed = json.loads(data) if data.strip() else {}
            except ValueError as exc:
                raise _Retryable(exc, transport=True) from None
            parsed = self._decode(parsed) if isinstance(parsed, dict) else {}
            parsed["ResponseMetadata"] = metadata
            return parsed
        error = self._error(status, answer_headers, data, metadata, operation)
        code = error.response["Error"]["Code"]
        if (status in TRANSIENT_STATUSES or code in THROTTLING_CODES or code in TRANSIENT_CODES
                or code in self.spec.retryable_codes.get(operation, ())):
            raise _Retryable(error, transport=False)
        raise error

    def _decode(self, parsed: dict[str, Any]) -> dict[str, Any]:
        parsed = _without_nulls(parsed)
        if self.service == "dynamodb":
            return _decode_dynamodb(parsed)
        if self.spec.blob_members:
            return _decode_blobs(parsed, self.spec.blob_members)
        return parsed

    def _error(self, status: int, headers: dict[str, str], data: bytes, metadata: dict[str, Any],
               operation: str) -> AwsClientError:
        try:
            parsed = json.loads(data) if data.strip() else {}
        except ValueError:
            parsed = {}
        if not isinstance(parsed, dict):
            parsed = {}
        code = str(parsed.pop("__type", "") or parsed.pop("code", "") or headers.get("x-amzn-errortype", ""))
        code = code.split(":", 1)[0].rsplit("#", 1)[-1] or str(status)
        message = parsed.get("message") or parsed.get("Message") or ""
        error: dict[str, Any] = {"Code": code, "Message": str(message)}
        if self.spec.query_compatible and headers.get("x-amzn-query-error"):
            # A service that moved from the query protocol keeps its old error codes for old clients (the Smithy
            # trait awsQueryCompatible): the code is the header's, the JSON one is QueryErrorCode, as botocore does.
            query_code, _, fault = headers["x-amzn-query-error"].partition(";")
            if query_code:
                error["QueryErrorCode"], error["Code"] = code, query_code
            if fault:
                error["Type"] = fault
        response = self._decode(parsed)
        response["Error"] = error
        response["ResponseMetadata"] = metadata
        return AwsClientError(response, operation)

    # -- connections
    def _tls(self) -> Any:
        if self._ssl_context is None:
            import ssl

            bundle = os.environ.get("AWS_CA_BUNDLE")
            self._ssl_context = ssl.create_default_context(cafile=bundle or None)
        return self._ssl_context

    def _connect(self) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._connect_timeout,
                                               context=self._tls())
        return http.client.HTTPConnection(self._host, self._port, timeout=self._connect_timeout)

    def _set_read_timeout(self, conn: http.client.HTTPConnection) -> None:
        conn.sock.settimeout(self._read_timeout)  # connected: the connect timeout was for the connect only

    def _exchange(self, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        for fresh_tried in (False, True):
            conn, reused = None, False
            with self._pool_lock:
                if self._pool and not fresh_tried:
                    conn, reused = self._pool.pop(), True
            if conn is None:
                conn = self._connect()
            try:
                if conn.sock is None:
                    conn.connect()
                    self._set_read_timeout(conn)
                conn.request("POST", self._path, body, headers)
                response = conn.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                conn.close()
                if reused:
                    continue  # the server closed an idle keep-alive connection: one fresh try, not an attempt
                raise _Retryable(exc, transport=True) from None
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise _Retryable(exc, transport=True) from None
            answer_headers = {k.lower(): v for k, v in response.getheaders()}
            if response.will_close:
                conn.close()
            else:
                with self._pool_lock:
                    if len(self._pool) < self._pool_size:
                        self._pool.append(conn)
                        conn = None
                if conn is not None:
                    conn.close()
            return response.status, answer_headers, data
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the pooled connections (the client stays usable: the next call opens a new one)."""
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()

    def renew(self) -> None:
        """After a SnapStart restore: new connections and credentials read again."""
        self.close()
        reset = getattr(self._credentials, "reset", None)
        if callable(reset):
            reset()
