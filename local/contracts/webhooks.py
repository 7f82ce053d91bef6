"""Merchants' webhook endpoints in the gateway API's document (issue 31): the original's PayConex v4 ``webhooks``
operations and our extensions (secret rotation, test delivery, delivery log, redelivery). Merged into
``openapi/gateway.json`` by :mod:`.gateway`."""

from __future__ import annotations

from typing import Any

from local.contracts.common import body, obj, parameter, ref, response
from local.contracts.iframe import _PAGING_HEADERS
from vaultcore.webhooks import endpoints, outbox, routes

__all__ = ["paths", "schemas"]

_EXTENSION = "Our extension (the original's document has no such operation)."
_EVENT = {"type": "string", "enum": list(endpoints.EVENTS),
          "description": "`PAYCONEX_BATCH_SETTLEMENT`: a settlement batch closed (SETTLE-BATCH), the original's event "
                         "(its createWebhook description lists it, its `Webhook` enum omits it). "
                         "`ACCOUNT_UPDATER_BATCH_UPDATES`: the original's, accepted and never sent (the account "
                         "updater is not offered)."}
_URL = {"type": "string", "maxLength": 2048,
        "description": "Where the events are POSTed: https, a public host name (no IP literal, no internal name: "
                       "the SSRF guard, checked at registration and at every delivery)."}
_ID = {"type": "string", "format": "uuid"}


def schemas() -> dict[str, Any]:
    view = {"id": _ID, "url": _URL, "event": _EVENT,
            "createdAt": {"type": "integer", "description": "Unix seconds (our extension member)."},
            "updatedAt": {"type": "integer", "description": "Unix seconds (our extension member)."}}
    secret = {"type": "string", "pattern": f"^{endpoints.SECRET_PREFIX}[0-9a-f]{{64}}$",
              "description": "The signing secret, shown this once (our extension member): the HMAC-SHA256 key is its "
                             "ASCII bytes."}
    attempt = obj({"deliveryId": _ID, "attempt": {"type": "integer"},
                   "status": {"type": "string", "enum": ["delivered", "failed", "dead-lettered", "deferred",
                                                         "abandoned"]},
                   "httpStatus": {"type": ["integer", "null"]}, "durationMs": {"type": ["number", "null"]},
                   "error": {"type": ["string", "null"]}, "responseExcerpt": {"type": "string"},
                   "at": {"type": "integer", "description": "Unix seconds."}},
                  ["deliveryId", "attempt", "status", "at"])
    return {
        "WebhookCreate": obj({"url": _URL, "event": _EVENT}, ["url", "event"],
                             description="The original's `Webhook`."),
        "WebhookPatch": obj({"url": _URL, "event": _EVENT},
                            description="The original's `Webhook`; either member alone is accepted too."),
        "Webhook": obj(view, ["id", "url", "event"], description="The original's `WebhookResponse`."),
        "WebhookCreated": obj({**view, "secret": secret}, ["id", "url", "event", "secret"],
                              description="The original's `WebhookResponse` and the signing secret."),
        "Webhooks": {"type": "array", "items": ref("Webhook")},
        "WebhookRotation": obj({"overlapSeconds": {
            "type": "integer", "minimum": 0, "maximum": endpoints.MAX_OVERLAP_SECONDS,
            "description": "How long the replaced secret keeps signing beside the new one (default "
                           f"{endpoints.ROTATION_OVERLAP_SECONDS})."}}),
        "WebhookSecret": obj({"id": _ID, "secret": secret,
                              "previousSecretExpiresAt": {"type": "integer",
                                                          "description": "Unix seconds: the replaced secret's end."}},
                             ["id", "secret", "previousSecretExpiresAt"]),
        "WebhookDeliveryQueued": obj({"deliveryId": _ID, "queued": {"type": "boolean"}}, ["deliveryId"]),
        "WebhookAttempt": attempt,
        "WebhookAttempts": {"type": "array", "items": ref("WebhookAttempt")},
    }


def _errors(*statuses: int) -> dict[str, Any]:
    meaning = {400: "The body is not JSON or the input gate refused it (`invalid_request`, errCode 400).",
               401: "Authentication failed (`authentication`, errCode 1003): one answer for every cause.",
               403: "The key lacks the operation's scope (`authorization`, errCode 911, the scope named).",
               404: "No such webhook (or delivery) of this account (`not_found`).",
               413: "The body is over the input gate's limit (`invalid_request`).",
               422: "A member is missing or invalid, the URL is refused by the SSRF guard, or the account has "
                    f"{endpoints.MAX_ENDPOINTS} endpoints already (`invalid_request`, errCode 910, the member in "
                    "`details[].source`).",
               500: "Internal error (`internal_server_error`)."}
    return {str(s): response(meaning[s], ref("ApiViolation")) for s in statuses}


def _scope(resource: str, method: str) -> str:
    return (f"Required scope: `{routes.SCOPES[(resource, method.upper())]}` (or `pcx:webhooks:*`). "
            "HTTP Basic `account_id:api_accesskey` holds every scope.")


def paths() -> dict[str, Any]:
    basic: list[dict[str, list[str]]] = [{"accountBasic": []}]
    base = "/api/v4/accounts/{account_id}/webhooks"
    one = base + "/{webhook_id}"
    account = parameter("account_id", "path", "The account (the Basic user).", {"type": "string",
                                                                                "pattern": "^[0-9]{12}$"})
    webhook = parameter("webhook_id", "path", "The webhook's id.", {"type": "string"})
    paging = [parameter("page", "query", "The page, from 1 (default 1).",
                        {"type": "integer", "minimum": 1, "maximum": 1000000, "default": 1}),
              parameter("limit", "query", "Items per page (default and at most 100).",
                        {"type": "integer", "minimum": 1, "maximum": 100, "default": 100})]
    common = (400, 401, 403, 413, 500)
    example = {"url": "https://merchant.example.com/hooks/settlement", "event": endpoints.SETTLEMENT}

    def op(op_id: str, resource: str, method: str, summary: str, responses: dict[str, Any], *,
           extension: bool = False, **more: Any) -> dict[str, Any]:
        text = _scope(resource, method) + (" " + _EXTENSION if extension else "")
        return {"operationId": op_id, "tags": ["webhooks"], "security": basic, "summary": summary,
                "description": text, **more, "responses": responses}

    return {
        base: {
            "parameters": [account],
            "get": op("listWebhooks", base, "get", "The account's webhook endpoints",
                      {"200": response("The endpoints (the original's list convention).", ref("Webhooks"),
                                       headers=_PAGING_HEADERS), **_errors(*common, 422)}, parameters=paging),
            "post": op("createWebhook", base, "post", "Register a webhook endpoint",
                       {"201": response("Registered; `secret` is shown this once.", ref("WebhookCreated")),
                        **_errors(*common, 422)},
                       requestBody=body(ref("WebhookCreate"), example=example)),
        },
        one: {
            "parameters": [account, webhook],
            "get": op("getWebhook", one, "get", "Read a webhook endpoint",
                      {"200": response("The endpoint.", ref("Webhook")), **_errors(*common, 404, 422)}),
            "patch": op("updateWebhook", one, "patch", "Change a webhook endpoint's url or event",
                        {"200": response("The endpoint.", ref("Webhook")), **_errors(*common, 404, 422)},
                        requestBody=body(ref("WebhookPatch"), example=example)),
            "delete": op("deleteWebhook", one, "delete", "Remove a webhook endpoint (queued deliveries are "
                         "abandoned)", {"204": response("Removed."), **_errors(*common, 404, 422)}),
        },
        one + "/rotate-secret": {
            "parameters": [account, webhook],
            "post": op("rotateWebhookSecret", one + "/rotate-secret", "post",
                       "A new signing secret; the replaced one keeps signing during the overlap",
                       {"201": response("The new secret, shown this once.", ref("WebhookSecret")),
                        **_errors(*common, 404, 422)}, extension=True,
                       requestBody=body(ref("WebhookRotation"), required=False, example={"overlapSeconds": 3600})),
        },
        one + "/test": {
            "parameters": [account, webhook],
            "post": op("testWebhook", one + "/test", "post",
                       f"Send a `{outbox.TEST_EVENT}` delivery to the endpoint",
                       {"202": response("Queued.", ref("WebhookDeliveryQueued")), **_errors(*common, 404, 422)},
                       extension=True),
        },
        one + "/deliveries": {
            "parameters": [account, webhook],
            "get": op("listWebhookDeliveries", one + "/deliveries", "get",
                      "The endpoint's delivery attempts, newest delivery first",
                      {"200": response("The attempts (the original's list convention).", ref("WebhookAttempts"),
                                       headers=_PAGING_HEADERS), **_errors(*common, 404, 422)},
                      extension=True, parameters=paging),
        },
        one + "/deliveries/{delivery_id}/redeliver": {
            "parameters": [account, webhook, parameter("delivery_id", "path", "The delivery's id.",
                                                       {"type": "string"})],
            "post": op("redeliverWebhookDelivery", one + "/deliveries/{delivery_id}/redeliver", "post",
                       "Send a delivery again (even a delivered one)",
                       {"202": response("Queued.", ref("WebhookDeliveryQueued")), **_errors(*common, 404, 422)},
                       extension=True),
        },
    }
