"""What the postback sender needs to deliver a webhook message (:mod:`vaultcore.webhooks.outbox`): the endpoint's
URL and live secrets (:func:`target`), and the request's body and headers (:func:`request`).

Body (compact JSON)::

    {"id": "<delivery id>", "event": "PAYCONEX_BATCH_SETTLEMENT", "webhookId": "...", "accountId": "...",
     "createdAt": <unix s of the event>, "data": {...}}

Built from the message alone, so every attempt sends the same bytes. Headers: the postbacks' scheme
(:mod:`vaultcore.postback.message`), ``Vault-Signature: t=<timestamp>,v1=<HMAC-SHA256(secret, "<timestamp>.<body>")>``
with one ``v1`` per live secret (current first; during a rotation's overlap two, as Stripe sends several), plus
``Vault-Delivery-Id`` (the same on every retry: deduplicate on it), ``Vault-Delivery-Attempt`` and
``Vault-Event``. The secret is the ASCII bytes of the whole ``whsec_...`` string.

The endpoint is read at each attempt (one Registry GetItem; the unwrapped secrets are cached per container by
:mod:`vaultcore.store.keys`): a rotation, a changed URL or a deletion applies to the next attempt. A deleted
endpoint or an account no longer active: None, and the sender records the delivery ``abandoned``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any

from vaultcore.gateway.accounts import load_account
from vaultcore.webhooks.endpoints import live_secrets, load

__all__ = ["WebhookTarget", "target", "request", "signature_header", "verify"]


@dataclass(frozen=True)
class WebhookTarget:
    url: str
    secrets: tuple[bytes, ...]

    def __repr__(self) -> str:  # never print a secret
        return "WebhookTarget(<redacted>)"


def target(account_id: str, webhook_id: str, now: float) -> WebhookTarget | None:
    account = load_account(account_id)
    if account is None or account.status != "active":
        return None
    item = load(account_id, webhook_id, consistent=False)
    if item is None:
        return None
    secrets = live_secrets(item, now)
    return WebhookTarget(url=str(item["url"]), secrets=secrets) if secrets else None


def signature_header(secrets: tuple[bytes, ...], timestamp: int, body: bytes) -> str:
    signed = str(timestamp).encode() + b"." + body
    return ",".join([f"t={timestamp}", *(f"v1={hmac.new(s, signed, hashlib.sha256).hexdigest()}" for s in secrets)])


def verify(secret: bytes, header: str, body: bytes, now: int, tolerance: int = 300) -> bool:
    """What a receiver does (docs/integrators/webhooks.md shows the same): any ``v1`` made with its secret, and a
    timestamp within ``tolerance`` seconds."""
    parts = [p.split("=", 1) for p in header.split(",") if "=" in p]
    stamps = [v for k, v in parts if k == "t"]
    if len(stamps) != 1 or not stamps[0].isdigit() or abs(now - int(stamps[0])) > tolerance:
        return False
    expected = hmac.new(secret, stamps[0].encode() + b"." + body, hashlib.sha256).hexdigest().encode()
    return any(hmac.compare_digest(expected, v.encode()) for k, v in parts if k == "v1")


def request(message: dict[str, Any], webhook: WebhookTarget, timestamp: int, attempt: int
            ) -> tuple[bytes, dict[str, str]]:
    """The body and headers of one attempt."""
    body = json.dumps({"id": message["delivery_id"], "event": message["event"], "webhookId": message["webhook_id"],
                       "accountId": message["account_id"], "createdAt": int(message["created_at"]),
                       "data": message.get("data") or {}}, separators=(",", ":")).encode("utf-8")
    headers = {"Content-Type": "application/json", "User-Agent": "vault-webhook/1.0",
               "Vault-Delivery-Id": str(message["delivery_id"]), "Vault-Delivery-Attempt": str(attempt),
               "Vault-Event": str(message["event"]),
               "Vault-Signature": signature_header(webhook.secrets, timestamp, body)}
    return body, headers
