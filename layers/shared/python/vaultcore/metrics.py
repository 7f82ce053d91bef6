"""Security and business metrics as CloudWatch Embedded Metric Format (EMF) lines.

Code records metrics while it handles an invocation (:func:`count`, :func:`timing` or one of the helpers below,
which hold the platform's metric names and their fixed vocabularies); the invocation's wrapper (the API handler,
the postback consumer) calls :func:`flush` once, after the response is built, which writes them as one JSON line
on stdout. CloudWatch Logs turns that line into metrics of the namespace ``VaultPlatform`` (no API call, no
client, nothing on the request path but a ``json.dumps``); the line stays in the function's log group too.

Why not Powertools Metrics: importing ``aws_lambda_powertools.metrics`` costs 10-50 ms and 40-70 modules
(``python -X importtime`` and perf_counter in fresh interpreters on this project's venv, botocore loaded or not),
and the cold-start work keeps Powertools out of every init (tests/unit/test_import_cost.py). This module adds one
module and about 0.5 ms (it imports nothing the logger has not imported already); a flush costs 40-130 µs.

The document (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html)::

    {"_aws": {"Timestamp": <ms>, "CloudWatchMetrics": [{"Namespace": "VaultPlatform",
              "Dimensions": [["Service"], ["Service", "Api"], ["Service", "Cause"],
                             ["Service", "Function", "Api", "Cause"]],
              "Metrics": [{"Name": "AuthenticationFailures", "Unit": "Count"}]}]},
     "Service": "<stack name>", "Function": "<function name>", "Api": "secure", "Cause": "nonce",
     "AuthenticationFailures": 1, "correlation_id": "<request id>"}

Dimensions are low-cardinality by construction: ``Service`` (the stack, ``METRICS_SERVICE``), ``Function`` (the
Lambda function) and one key per metric whose values come from a fixed set (a cause, a result code, an
outcome, a status class), two for AuthenticationFailures (``Api`` and ``Cause``, issue 27). Every metric is
published with the dimension sets ``[Service]`` (the platform-wide figure the alarms watch) and
``[Service, Function, <keys>]``, and with ``[Service, <key>]`` for each key of a metric that has two. A value that is not a short identifier (or that
holds a long run of digits, as a card number would) is published as ``invalid`` instead: partner ids, card data
and amounts can never become a dimension, and metric values are numbers only.

Buffers are per thread (the local runner serves invocations on several threads); record from the thread that
handles the invocation (the postback consumer counts its workers' outcomes in its own thread).
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
from typing import Any

from vaultcore.logs import current_correlation_id

__all__ = ["count", "timing", "flush", "pending", "discard", "render", "NAMESPACE", "auth_cause",
           "AUTH_CAUSES", "APIS", "set_api", "current_api", "api_of", "authentication_failed", "decrypt_result", "values_tokenized", "values_detokenized",
           "proxy_exchange", "gateway_outcome", "gateway_error", "postback_batch", "relay_batch", "wallet_certificates"]

NAMESPACE = "VaultPlatform"
MAX_VALUES = 100  # EMF: at most 100 values in one metric's array
MAX_METRICS = 100  # EMF: at most 100 metrics in one directive
_VALUE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_DIGIT_RUN = re.compile(r"\d{9}")
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,140}")
_RESERVED = frozenset({"Service", "Function", "_aws", "correlation_id"})
_local = threading.local()
_write_lock = threading.Lock()


# ---------------------------------------------------------------------------------------------- the writer


def _buffer() -> dict[tuple[str, str, tuple[tuple[str, str], ...]], list[float]]:
    buf = getattr(_local, "buffer", None)
    if buf is None:
        buf = _local.buffer = {}
    return buf


def _dimension_value(value: Any) -> str:
    """A metric's own dimension value: a short identifier without a run of digits a card number could be."""
    text = str(value)
    if not _VALUE.fullmatch(text) or _DIGIT_RUN.search(text):
        return "invalid"
    return text


def _name_value(value: Any) -> str:
    """The stack or function name (ours, not the caller's): letters, digits, ``-`` and ``_``."""
    text = str(value)
    return text if _NAME.fullmatch(text) else "invalid"


def _record(name: str, value: float, unit: str, dimensions: dict[str, Any]) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return  # numbers only: nothing else can reach a metric
    if name in _RESERVED or _RESERVED & dimensions.keys():
        return
    dims = tuple(sorted((k, _dimension_value(v)) for k, v in dimensions.items() if v is not None))
    buf = _buffer()
    key = (name, unit, dims)
    values = buf.get(key)
    if values is None:
        if len(buf) >= MAX_METRICS:
            return
        values = buf[key] = []
    if len(values) < MAX_VALUES:
        values.append(value)


def count(name: str, value: float = 1, **dimensions: Any) -> None:
    """Add one Count data point (``value``) to ``name``; ``dimensions``: keys from fixed sets."""
    _record(name, value, "Count", dimensions)


def timing(name: str, milliseconds: float, **dimensions: Any) -> None:
    if isinstance(milliseconds, int | float) and not isinstance(milliseconds, bool):
        _record(name, round(float(milliseconds), 3), "Milliseconds", dimensions)


def pending() -> list[tuple[str, str, dict[str, str], list[float]]]:
    """What the next flush would publish: ``(name, unit, dimensions, values)`` (tests, debugging)."""
    return [(name, unit, dict(dims), list(values)) for (name, unit, dims), values in _buffer().items()]


def discard() -> None:
    _local.buffer = {}


def render(records: list[tuple[str, str, dict[str, str], list[float]]], *, service: str, function: str | None,
           namespace: str = NAMESPACE, timestamp_ms: int | None = None,
           extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """The EMF documents for ``records``: one, unless two records need different values for the same dimension
    key (then one more document for each clash; the platform's helpers never do that in one invocation)."""
    base = {"Service": _name_value(service)}
    if function:
        base["Function"] = _name_value(function)
    timestamp = int(time.time() * 1000) if timestamp_ms is None else timestamp_ms
    documents: list[tuple[dict[str, str], set[str], dict[tuple[str, ...], list[tuple[str, str, list[float]]]]]] = []
    for name, unit, dims, values in records:
        fits = (d for d in documents if name not in d[1] and all(d[0].get(k, v) == v for k, v in dims.items()))
        document = next(fits, None)
        if document is None:
            document = (dict(base), set(), {})
            documents.append(document)
        members, names, directives = document
        members.update(dims)
        names.add(name)
        directives.setdefault(tuple(sorted(dims)), []).append((name, unit, values))
    out = []
    for members, _names, directives in documents:
        doc: dict[str, Any] = {"_aws": {"Timestamp": timestamp, "CloudWatchMetrics": []}}
        for keys, metrics in directives.items():
            detail = [*base, *keys]
            # A record with several keys is also published by each key alone (``[Service, Api]``: one API's
            # figure without naming a function or a cause).
            rollups = [["Service", key] for key in keys] if len(keys) > 1 else []
            doc["_aws"]["CloudWatchMetrics"].append({
                "Namespace": namespace,
                "Dimensions": [["Service"], *rollups, detail] if len(detail) > 1 else [["Service"]],
                "Metrics": [{"Name": name, "Unit": unit} for name, unit, _values in metrics],
            })
            for name, _unit, values in metrics:
                doc[name] = values[0] if len(values) == 1 else values
        doc.update(members)
        for key, value in (extra or {}).items():
            doc.setdefault(key, value)
        out.append(doc)
    return out


def flush(context: Any = None, *, stream: Any = None) -> list[str]:
    """Write this thread's metrics as EMF line(s) on stdout and empty the buffer; returns the lines. Never raises:
    metrics must not fail an invocation."""
    records = pending()
    discard()
    if not records:
        return []
    try:
        function = (getattr(context, "function_name", None) or os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))
        correlation = current_correlation_id()
        documents = render(records, service=os.environ.get("METRICS_SERVICE") or "vault", function=function,
                           namespace=os.environ.get("METRICS_NAMESPACE") or NAMESPACE,
                           extra={"correlation_id": correlation} if correlation else None)
        lines = [json.dumps(doc, separators=(",", ":")) for doc in documents]
        target = stream or sys.stdout
        with _write_lock:  # one write per line: lines of concurrent invocations (local runner) never interleave
            target.write("".join(line + "\n" for line in lines))
            target.flush()
        return lines
    except Exception:  # noqa: BLE001 - a metric is never worth a failed request
        return []


# ------------------------------------------------------------------------------- the platform's metrics

#: AuthenticationFailed.reason (vaultcore.auth.authenticator) → the published cause. The gateway's account
#: authentication (QSAPI, RSAPI, the iFrame API's Basic credentials, the wallet checkout) adds its own causes
#: (issue 27): ``unknown_account``, ``access_key`` (a wrong key), ``hash`` (a wrong hash, or one that does not
#: name every variable), ``timestamp``, ``nonce`` (a hash used before), ``throttled`` (refused unchecked while the
#: account's failure count is at its limit, vaultcore.store.auth_failures), ``scope`` (the iFrame API path
#: names another account) and ``bearer`` (an unknown or expired iFrame bearer token: errCode 904). API keys
#: (vaultcore.v4.auth, vaultcore.apikeys.gateway) add ``unknown_key``, ``expired`` and ``method`` (a method the
#: key's ``methods`` leave out), and use ``access_key`` (a wrong secret), ``disabled``, ``signature``,
#: ``timestamp``, ``nonce`` and ``scope`` (an account the key may not act on).
AUTH_CAUSES = ("malformed", "unknown_partner", "disabled", "signature", "timestamp", "nonce", "scheme", "basic",
               "unknown_account", "access_key", "hash", "throttled", "scope", "bearer", "unknown_key", "expired",
               "method", "other")
#: The ``Api`` dimension of AuthenticationFailures: the interface the failed request was made to.
APIS = ("secure", "parser", "proxy", "qsapi", "rsapi", "iframe", "wallet", "checkout", "collector", "management",
        "other")
_REASON_PREFIXES = (
    ("malformed basic", "basic"), ("wrong partner key", "basic"),
    ("malformed", "malformed"), ("missing or non-ascii", "malformed"),
    ("scheme not accepted", "scheme"), ("partner requires hmac", "scheme"),
    ("unknown partner", "unknown_partner"), ("partner disabled", "disabled"),
    ("signature", "signature"), ("timestamp", "timestamp"), ("nonce", "nonce"),
)
#: Body-credential errors of key-security partners (public codes 1101-1105).
_BODY_CODES = {1101: "malformed", 1102: "malformed", 1103: "unknown_partner", 1104: "disabled", 1105: "basic"}


def auth_cause(reason: str | int) -> str:
    if isinstance(reason, int):
        return _BODY_CODES.get(reason, "other")
    text = str(reason).lower()
    # every prefix is tried (no early exit), so the mapping costs the same for every cause (issue 12, timing)
    causes = [cause for prefix, cause in _REASON_PREFIXES if text.startswith(prefix)]
    return causes[0] if causes else "other"


def set_api(api: str | None) -> None:
    """The API this thread's invocation serves (the API handler sets it from the route; None forgets it)."""
    _local.api = api if api in APIS else ("other" if api else None)


def current_api() -> str:
    return getattr(_local, "api", None) or "other"


def api_of(family: str, resource: str) -> str:
    """The ``Api`` dimension of a request: the handler's error family, refined by the route where one family
    serves several interfaces."""
    if family == "gateway":
        return "rsapi" if resource.startswith("/api/rsapi") else "qsapi"
    if family == "admin":
        # "iframe": the merchant-facing v4 API (the payment iFrame first, API keys and the scope catalog since)
        return "iframe" if resource.startswith(("/api/v4/", "/iframe")) else "management"
    if family == "secure":
        return "parser" if resource.startswith("/api/decrypt") else "secure"
    if family == "tokenization":  # the tokenization API's own error format, on the secure API
        return "secure"
    return family if family in APIS else "other"


def authentication_failed(reason: str | int, *, cause: str | None = None) -> None:
    """One failed authentication: a partner's (the caller saw the uniform 1003, or a body-credential 110x; the
    cause from ``reason``) or a gateway account's (the uniform 102, or the iFrame API's 1003; ``cause`` one of
    :data:`AUTH_CAUSES`). The ``Api`` dimension is the invocation's (:func:`set_api`)."""
    published = (cause if cause in AUTH_CAUSES else "other") if cause is not None else auth_cause(reason)
    count("AuthenticationFailures", Api=current_api(), Cause=published)


def decrypt_result(code: int | str) -> None:
    """One POST /api/decrypt/parser outcome: ``success`` or the public error code (1xxx/2xxx)."""
    count("DecryptResults", Code=code if code == "success" else _code(code))


def values_tokenized(n: int) -> None:
    count("TokenizedValues", n)  # Sum: values; SampleCount: calls


def values_detokenized(n: int) -> None:
    count("DetokenizedValues", n)


_PHASES = {"auth": "ProxyAuthLatency", "config": "ProxyConfigLatency", "parse": "ProxyParseLatency",
           "actions": "ProxyActionsLatency", "prepare": "ProxyPrepareLatency", "target": "ProxyTargetLatency",
           "response": "ProxyResponseLatency", "log": "ProxyLogLatency", "own": "ProxyOwnLatency",
           "total": "ProxyTotalLatency"}


def _status_class(status: Any) -> str:
    return f"{status // 100}xx" if isinstance(status, int) and 100 <= status <= 599 else "none"


def proxy_exchange(summary: dict[str, float], target_status: int | None) -> None:
    """One proxy exchange: the milliseconds of each phase of ``_Clock.summary()`` by the target's status class
    (``none``: nothing was forwarded, or the target did not answer)."""
    status = _status_class(target_status)
    for phase, ms in summary.items():
        name = _PHASES.get(phase)
        if name is not None and isinstance(ms, int | float):
            timing(name, ms, TargetStatus=status)


def gateway_outcome(approved: bool, transaction_type: str | None, error_code: Any) -> None:
    """One recorded transaction: approved (by type) or declined (by decline code)."""
    if approved:
        count("GatewayApproved", TransactionType=transaction_type or "other")
    else:
        count("GatewayDeclined", Code=_code(error_code))


def gateway_error(code: Any) -> None:
    """A gateway request that ended in an error response (validation, authentication 102, 1 internal ...)."""
    count("GatewayErrors", Code=_code(code))


def postback_batch(results: list[str], dead_lettered: int) -> None:
    """One postback batch, from its records' outcomes (``delivered``, ``failed``, ``dead-lettered``, ``deferred``,
    ``requeued``, ``skipped``, ``error``; ``failed-requeued``: a failed attempt whose record went into a fresh copy):
    attempts are the POSTs made (delivered + failed + dead-lettered)."""
    delivered = results.count("delivered")
    failed = results.count("failed") + results.count("failed-requeued") + results.count("dead-lettered")
    count("PostbackAttempts", delivered + failed)
    count("PostbackDelivered", delivered)
    count("PostbackFailed", failed - dead_lettered)
    count("PostbackDeadLettered", dead_lettered)
    count("PostbackDeferred", results.count("deferred") + results.count("requeued"))
    count("PostbackErrors", results.count("error"))


def relay_batch(relayed: int, failed: int) -> None:
    """One batch of the postback stream relay: the messages it queued and those SQS refused (retried by the event
    source mapping from the first refused one). The relay's lag is Lambda's IteratorAge (PostbackRelayAgeAlarm)."""
    count("PostbackRelayed", relayed)
    count("PostbackRelayFailed", failed)


def wallet_certificates(minimum_days_left: float | None, expiring: int) -> None:
    """One daily wallet certificate check: the fewest whole days any stored wallet certificate has left (negative:
    expired; none published when no account has one, so that the alarm sees missing data, not a false all-clear
    value) and how many certificates are inside the warning window (the expiry alarm, the dashboard)."""
    if minimum_days_left is not None:
        _record("WalletCertificateDaysLeft", minimum_days_left, "None", {})
    count("WalletCertificatesExpiring", expiring)


def _code(code: Any) -> str:
    return str(code) if isinstance(code, int) and not isinstance(code, bool) and 0 <= code < 100000 else "internal"
