"""HTTP routes of the merchants' webhook endpoints on the gateway API (wiring: ``functions/webhooks/app.py``).

The original's PayConex v4 operations (HTTP Basic; each asks its scope first, :func:`vaultcore.v4.auth.authenticate`):

* ``POST /api/v4/accounts/{account_id}/webhooks`` (``pcx:webhooks:create``): 201 ``WebhookResponse`` and, our
  extension member, ``secret`` (shown this once);
* ``GET /api/v4/accounts/{account_id}/webhooks`` (``pcx:webhooks:read``): the original's list (a bare array,
  ``page``/``limit``, its ``X-*`` headers: :func:`vaultcore.v4.lists.paged`);
* ``GET|PATCH|DELETE .../webhooks/{webhook_id}`` (``read`` / ``update`` / ``delete``): 200, 200, 204.

Our extensions (openapi/gateway.json says so on each):

* ``POST .../webhooks/{webhook_id}/rotate-secret`` (``pcx:webhooks:update``): 201 ``{id, secret,
  previousSecretExpiresAt}``; the replaced secret keeps signing until then;
* ``POST .../webhooks/{webhook_id}/test`` (``pcx:webhooks:update``): 202 ``{deliveryId}``, a ``VAULT_WEBHOOK_TEST``
  delivery through the outbox like any other;
* ``GET .../webhooks/{webhook_id}/deliveries`` (``pcx:webhooks:read``): the endpoint's delivery attempts, newest
  first (the original's list convention);
* ``POST .../webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver`` (``pcx:webhooks:update``): 202, the
  delivery queued again as an explicit redelivery (sent even when it was delivered).

``VAULT_TRANSACTION`` (our extension event: every transaction) also needs ``pcx:payments:read`` to register, to
move an endpoint onto, or to change the URL of an endpoint of it (:func:`_may_receive`).

Errors are ours (``vaultcore.api.responses``), answered as the original's ``ApiViolation`` by the function's
:func:`vaultcore.iframe.violations.v4_errors` wrapper.
"""

from __future__ import annotations

import json
from typing import Any

from vaultcore.api.http import Request, Response, json_response
from vaultcore.errors import NotFound
from vaultcore.postback import deliveries
from vaultcore.postback.message import fifo_ids
from vaultcore.settings import settings
from vaultcore.store.aws import client
from vaultcore.store.ddb import aws_errors
from vaultcore.v4.auth import Principal, authorize
from vaultcore.v4.errors import MemberInvalid
from vaultcore.v4.lists import PAGE_LIMIT, paged
from vaultcore.webhooks import endpoints, outbox

__all__ = ["route", "SCOPES", "DELIVERY_LOG_LIMIT", "TRANSACTION_READ"]

_BASE = "/api/v4/accounts/{account_id}/webhooks"
_ONE = _BASE + "/{webhook_id}"
_ROTATE = _ONE + "/rotate-secret"
_TEST = _ONE + "/test"
_LOG = _ONE + "/deliveries"
_REDELIVER = _LOG + "/{delivery_id}/redeliver"
#: The original's scope of each operation ("The API Key calling this endpoint must have one of the following
#: scopes": pcx:webhooks:* or the operation's own); our extensions take the scope of what they change or read.
SCOPES: dict[tuple[str, str], str] = {
    (_BASE, "POST"): "pcx:webhooks:create", (_BASE, "GET"): "pcx:webhooks:read",
    (_ONE, "GET"): "pcx:webhooks:read", (_ONE, "PATCH"): "pcx:webhooks:update",
    (_ONE, "DELETE"): "pcx:webhooks:delete", (_ROTATE, "POST"): "pcx:webhooks:update",
    (_TEST, "POST"): "pcx:webhooks:update", (_LOG, "GET"): "pcx:webhooks:read",
    (_REDELIVER, "POST"): "pcx:webhooks:update"}
#: What an endpoint of the transaction event also needs (:func:`_may_receive`): it receives what this scope reads.
TRANSACTION_READ = "pcx:payments:read"
#: Attempts an endpoint's delivery log reads (newest first), paged by the list convention.
DELIVERY_LOG_LIMIT = 10 * PAGE_LIMIT


def _body(request: Request, *, optional: bool = False) -> Any:
    if optional and not (request.body or b"").strip():
        return None
    body = request.json()
    if not isinstance(body, dict):
        raise MemberInvalid("body", "one JSON object")
    return body


def _attempt_view(item: dict[str, Any]) -> dict[str, Any]:
    return {"deliveryId": item.get("delivery_id"), "attempt": item.get("attempt"), "status": item.get("status"),
            "httpStatus": item.get("http_status"), "durationMs": item.get("duration_ms"), "error": item.get("error"),
            "responseExcerpt": item.get("response_excerpt") or "", "at": item.get("at")}


def _redeliver(account_id: str, webhook_id: str, delivery_id: str) -> Response:
    """The stored message queued again with ``redelivery`` + 1 (as the operator's redelivery does): the sender
    POSTs it even when it was delivered, with the endpoint's current URL and secrets."""
    stored = deliveries.load_message(account_id, delivery_id) if endpoints.WEBHOOK_ID.fullmatch(delivery_id) else None
    message = json.loads(deliveries.message_body(stored)) if stored else {}
    if message.get("webhook_id") != webhook_id:
        raise NotFound("No delivery with this id for this webhook.")
    # one redelivery per message ended so far (its own SQS FIFO deduplication id), as the operator's redelivery
    message["redelivery"] = deliveries.redelivery_mark(stored or {})
    body = json.dumps(message, separators=(",", ":"))
    with aws_errors("webhook redelivery"):
        client("sqs").send_message(QueueUrl=settings().postback_queue_url, MessageBody=body, **fifo_ids(body))
    return json_response(202, {"deliveryId": delivery_id, "queued": True})


def _may_receive(principal: Principal, body: Any, current: dict[str, Any] | None) -> None:
    """403 unless the caller may read what the endpoint will receive: an endpoint of ``VAULT_TRANSACTION`` gets
    every transaction (the postback's entry, with the bfid and vault tokens when the account sends token data),
    which is ``pcx:payments:read``'s to read; so registering one, moving an endpoint onto that event, or changing
    such an endpoint's URL needs it as well as the webhook scope (else a ``pcx:webhooks:*`` key could read
    transactions at a URL of its choosing)."""
    members = body if isinstance(body, dict) else {}
    event = members.get("event", current["event"] if current else None)
    if event == endpoints.TRANSACTION or (current is not None and current["event"] == endpoints.TRANSACTION
                                          and "url" in members):
        principal.require(TRANSACTION_READ)


def route(request: Request) -> Response:
    resource = request.resource
    method = request.method.upper()
    principal = authorize(request, SCOPES)
    account_id = principal.account.account_id
    webhook_id = request.path_params.get("webhook_id", "")
    if resource == _BASE:
        if method == "POST":
            body = _body(request)
            _may_receive(principal, body, None)
            return json_response(201, endpoints.create(account_id, body))
        return paged(request, endpoints.list_endpoints(account_id))
    if resource == _ONE:
        if method == "GET":
            return json_response(200, endpoints.get(account_id, webhook_id))
        if method == "PATCH":
            body = _body(request)
            _may_receive(principal, body, endpoints.get(account_id, webhook_id))
            return json_response(200, endpoints.patch(account_id, webhook_id, body))
        endpoints.delete(account_id, webhook_id)
        return Response(204, "", {})
    if resource == _ROTATE:
        return json_response(201, endpoints.rotate_secret(account_id, webhook_id, _body(request, optional=True)))
    endpoints.get(account_id, webhook_id)  # 404 for an endpoint that is not the account's
    if resource == _TEST:
        return json_response(202, {"deliveryId": outbox.send_test(account_id, webhook_id)})
    if resource == _LOG:
        attempts = deliveries.list_attempts(account_id, transaction_id=webhook_id, limit=DELIVERY_LOG_LIMIT)
        return paged(request, [_attempt_view(a) for a in attempts])
    return _redeliver(account_id, webhook_id, request.path_params.get("delivery_id", ""))
