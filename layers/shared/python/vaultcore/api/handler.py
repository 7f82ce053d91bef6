"""Handler wiring: event → Request → route → Response, with the error mapping applied once.

Each ``functions/<name>/app.py`` imports its route like any module does and hands it over::

    from vaultcore.api.handler import api_handler
    from vaultcore.devices.parser import decrypt_parser

    lambda_handler = api_handler("secure", decrypt_parser, aws=("dynamodb", "kms"))

Routes are plain functions of a Request that return a Response or raise a VaultError. No route needs a try/except.

Everything is imported and the AWS clients the function uses (``aws=``, created by vaultcore.runtime.init) are
created while Lambda imports ``app.py``: init has a full CPU and SnapStart snapshots it, so the first request pays
for neither (bench/bench_cold_start.py measures init plus the first request). What a route imports lazily on its
usual path, app.py imports explicitly, saying why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from vaultcore.api.gate import InputRejected, check_request
from vaultcore.api.http import Request, Response, request_from_event, set_source_ip
from vaultcore.api.responses import error_response, internal_error_response
from vaultcore.errors import AuthenticationFailed, VaultError
from vaultcore.logs import clear_request_context, get_logger, set_request_context
from vaultcore.metrics import api_of, set_api
from vaultcore.metrics import flush as flush_metrics
from vaultcore.runtime import init

__all__ = ["api_handler", "Route", "SECURITY_HEADERS", "with_security_headers"]

#: On every response of every API (issue 27): browsers reach the platform over HTTPS only, for two years, on every
#: subdomain too (RFC 6797; docs/operators/security.md "HTTPS only"). API Gateway's own responses (an unknown
#: route, throttling) carry the same header through the APIs' gateway responses (template.yaml).
SECURITY_HEADERS = {"Strict-Transport-Security": "max-age=63072000; includeSubDomains"}


def with_security_headers(event: dict[str, Any]) -> dict[str, Any]:
    """The Lambda proxy response ``event`` with :data:`SECURITY_HEADERS` (they replace any a route set, the
    proxy's target's too: the policy is the platform's, not the target's)."""
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() not in _SECURITY_NAMES}
    event["headers"] = {**headers, **SECURITY_HEADERS}
    return event


_SECURITY_NAMES = frozenset(name.lower() for name in SECURITY_HEADERS)

Route = Callable[[Request], Response]
_log = get_logger("api")


def _reference_of(request: Request) -> str | None:
    """The request's ``reference`` to echo in an error body: only a valid one (a string of at most 50
    characters). An error never echoes an input it rejected as invalid (1002 among them)."""
    from vaultcore.api.secure import reference_of

    try:
        body = request.json()
        return reference_of(body) if isinstance(body, dict) else None
    except VaultError:  # refused by the input gate, or not a valid reference: nothing to echo
        return None


def api_handler(family: str, route: Route, *, aws: tuple[str, ...] = ()
                ) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """The Lambda handler of one route of the API ``family`` (its error format). Called while ``app.py`` is
    imported (Lambda init): the ``aws`` clients are created then."""
    init(aws=aws)

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            request = request_from_event(event)
        except Exception:  # noqa: BLE001 - an event API Gateway would not send (e.g. a body that is not base64)
            ctx = event.get("requestContext") if isinstance(event, dict) else None  # its correlation id, if any
            set_request_context(str(ctx.get("requestId") or "") or None if isinstance(ctx, dict) else None)
            _log.warning("unreadable event refused")
            clear_request_context()
            return with_security_headers(
                error_response(family, InputRejected("The request could not be read.", "text")).to_event())
        request_id = request.request_id or getattr(context, "aws_request_id", "")
        set_request_context(request_id)
        set_source_ip(request.source_ip)
        set_api(api_of(family, request.resource))  # the Api dimension of AuthenticationFailures
        started = time.perf_counter()
        try:
            check_request(request, family)  # the input gate: nothing malformed reaches a route
            response = route(request)
        except AuthenticationFailed as exc:
            # The cause goes to the internal log only; the caller sees the uniform body.
            _log.warning("authentication failed", extra={"reason": exc.reason, "route": request.resource})
            response = error_response(family, exc)
        except VaultError as exc:
            _log.info("request refused", extra={"code": exc.code, "status": exc.status, "route": request.resource})
            echo = family in ("secure", "tokenization")
            response = error_response(family, exc, _reference_of(request) if echo else None)
        except Exception:  # noqa: BLE001 - the last line of defence: never a stack trace to the caller
            _log.error("unhandled error", exc_info=True, extra={"route": request.resource})
            response = internal_error_response(family)
        _log.info("request done", extra={"status": response.status, "route": request.resource,
                                          "duration_ms": round((time.perf_counter() - started) * 1000, 2)})
        flush_metrics(context)  # issue 14: this invocation's metrics, one EMF line (vaultcore.metrics)
        set_api(None)
        set_source_ip("")
        clear_request_context()
        return with_security_headers(response.to_event())

    return lambda_handler
