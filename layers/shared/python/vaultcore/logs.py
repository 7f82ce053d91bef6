"""Structured JSON logging that cannot carry card data.

Every record passes through :func:`vaultcore.cards.masking.redact_text` (the one masking module of the
platform) before it is written, so a PAN, a track, a key in hex or an Authorization value that slips into a
message is masked (PCI DSS 3.4, 10.2). Callers still log identifiers and reasons only, never payloads; the
filter is the safety net, not the policy.

stdlib logging keeps the import cost of a handler low (cold start); the output is one JSON object per line
as CloudWatch Logs Insights expects.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from typing import Any

from vaultcore.cards.masking import redact_text  # every log line is redacted: imported during init

__all__ = ["get_logger", "set_request_context", "clear_request_context", "current_correlation_id"]

_context = threading.local()
_configured = False
_lock = threading.Lock()
_SAFE_EXTRA = ("reason", "code", "status", "partner_id", "route", "duration_ms", "attempt", "delivery_id",
               "transaction_id", "account_id", "config_ref", "device_type", "count", "event", "error_type",
               # the daily wallet certificate check: a certificate's role and public expiry
               "role", "not_after", "days_left", "expiring")


def _redact(text: str) -> str:
    return redact_text(text)


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "level": record.levelname,
            "logger": record.name,
            "message": _redact(record.getMessage()),
            "request_id": getattr(_context, "request_id", None),
            # the API Gateway request id or the SQS message id (issue 14): one key to follow a request
            "correlation_id": getattr(_context, "request_id", None),
            "function": os.environ.get("AWS_LAMBDA_FUNCTION_NAME", getattr(_context, "function", None)),
        }
        trace = os.environ.get("_X_AMZN_TRACE_ID")  # set by Lambda per invocation with active tracing
        if trace:
            entry["xray_trace_id"] = trace.split(";", 1)[0].removeprefix("Root=")
        for key in _SAFE_EXTRA:
            value = record.__dict__.get(key)
            if value is not None:
                entry[key] = _redact(str(value)) if isinstance(value, str) else value
        if record.exc_info and record.exc_info[0] is not None:
            # The exception type and the place it came from, never its message or locals: messages of
            # third-party exceptions can quote their input.
            exc_type, _exc, tb = record.exc_info
            frames = []
            while tb is not None:
                frames.append(f"{tb.tb_frame.f_code.co_filename.rsplit('/', 1)[-1]}:{tb.tb_lineno}")
                tb = tb.tb_next
            entry["error_type"] = exc_type.__name__
            entry["where"] = frames[-5:]
        return json.dumps(entry, default=str)


def _configure() -> None:
    global _configured
    with _lock:
        if _configured:
            return
        root = logging.getLogger("vault")
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(_JsonFormatter())
        root.handlers[:] = [handler]
        root.setLevel(os.environ.get("LOG_LEVEL", "INFO").upper())
        root.propagate = False
        _configured = True


def get_logger(name: str) -> logging.Logger:
    _configure()
    return logging.getLogger(f"vault.{name}")


def set_request_context(request_id: str | None, function: str | None = None) -> None:
    _context.request_id = request_id
    if function:
        _context.function = function


def current_correlation_id() -> str | None:
    """The correlation id of this thread's request (API Gateway request id or SQS message id), if any."""
    return getattr(_context, "request_id", None)


def clear_request_context() -> None:
    _context.request_id = None
