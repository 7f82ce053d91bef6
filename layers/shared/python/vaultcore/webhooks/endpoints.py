"""An account's webhook endpoints: validation, storage, signing secrets and their rotation.

The original's PayConex v4 ``Webhook`` (request: ``url``, ``event``, both required) and ``WebhookResponse`` (the
same plus ``id``, a UUID). Registry item ``WEBHOOK#<account_id>`` / ``EP#<id>``::

    {"accountId", "id", "url", "event", "createdAt", "updatedAt",
     "secrets": [{"w": <KMS-wrapped secret>, "until": 0 | <unix s>}, ...], "secretVersion": <n>}

``secrets[0]`` is the current signing secret (``until`` 0); a secret replaced by :func:`rotate_secret` stays in the
list, still signing, until its ``until`` (the overlap). Secrets are ``whsec_`` + 64 hex digits, shown once (at
creation and rotation) and stored only KMS-wrapped (:func:`vaultcore.store.keys.wrap_secret`, encryption context
of the account and the endpoint, as the account's postback secret): the sender must be able to sign with them, so
a keyed hash would not do.

Events (:data:`EVENTS`): the original's ``PAYCONEX_BATCH_SETTLEMENT`` (its createWebhook description lists it) and
``ACCOUNT_UPDATER_BATCH_UPDATES`` (its schema's enum: registration accepted so that its clients run unchanged;
nothing sends it, the account updater is not offered).

The URL never holds a card number (:func:`vaultcore.cards.masking.holds_pan_in_any_form`, also %-decoded) and
passes the SSRF guard (:func:`vaultcore.net.ssrf.validate_target_url`, the postback URL's policy) when it
is registered or changed, and again at every delivery (the sender's :class:`vaultcore.net.http.SafeHttpClient`
resolves it and refuses non-public addresses). An account has at most :data:`MAX_ENDPOINTS` endpoints: every
endpoint of an event gets its delivery written in the same DynamoDB transaction as the event's transaction item
(:mod:`vaultcore.webhooks.outbox`), and a TransactWriteItems holds at most 100 items. The maximum holds under
concurrent creations too (a counter written in the creation's transaction: :mod:`vaultcore.store.counted`).
"""

from __future__ import annotations

import re
import secrets
import uuid
from typing import Any
from urllib.parse import unquote

from vaultcore import clock
from vaultcore.cache import ContainerCache
from vaultcore.cards.masking import holds_pan_in_any_form
from vaultcore.errors import NotFound
from vaultcore.settings import settings
from vaultcore.store import counted, registry
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import aws_errors, from_item, to_item
from vaultcore.store.keys import unwrap_secret, wrap_secret
from vaultcore.v4.errors import MemberInvalid

__all__ = ["EVENTS", "SETTLEMENT", "ACCOUNT_UPDATER", "MAX_ENDPOINTS", "ROTATION_OVERLAP_SECONDS",
           "MAX_OVERLAP_SECONDS", "WEBHOOK_ID", "SECRET_PREFIX", "create", "list_endpoints", "get", "patch",
           "delete", "rotate_secret", "load", "live_secrets", "subscribed", "subscribed_cached", "public_view",
           "validate_url", "TRANSACTION"]

SETTLEMENT = "PAYCONEX_BATCH_SETTLEMENT"
ACCOUNT_UPDATER = "ACCOUNT_UPDATER_BATCH_UPDATES"
#: Our extension: every transaction the gateway records, with the postback's entry of it.
TRANSACTION = "VAULT_TRANSACTION"
#: event -> what it reports (docs/integrators/webhooks.md "Events").
EVENTS: dict[str, str] = {
    SETTLEMENT: "a settlement batch closed (SETTLE-BATCH): its number, span and the SETTLE-BATCH transaction",
    ACCOUNT_UPDATER: "the original's account-updater batch: registration accepted, never sent (not offered)",
    TRANSACTION: "our extension: a transaction the gateway recorded (the postback's responses[] entry of it)",
}
#: Endpoints per account. Every endpoint of an event is one more item in the event's DynamoDB transaction (at
#: most 100 items; the SETTLE-BATCH itself and its postback take 2), and one more POST per event.
MAX_ENDPOINTS = 16
#: How long a replaced secret keeps signing after a rotation unless the call names another overlap (Stripe's
#: default "roll" keeps the old secret 24 hours), and the longest overlap a call may ask for.
ROTATION_OVERLAP_SECONDS = 86400
MAX_OVERLAP_SECONDS = 7 * 86400
SECRET_PREFIX = "whsec_"
WEBHOOK_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_MEMBERS = ("url", "event")
_MAX_URL = 2048
#: account id -> ((endpoint id, event), ...): :func:`subscribed_cached`
_by_account: ContainerCache[tuple[tuple[str, str], ...]] = ContainerCache("record_cache_seconds", max_items=4096)


def _pk(account_id: str) -> str:
    return f"WEBHOOK#{account_id}"


def _sk(webhook_id: str) -> str:
    return f"EP#{webhook_id}"


def _context(account_id: str, webhook_id: str) -> dict[str, str]:
    """KMS encryption context (and GCM AAD) of an endpoint's secrets: a blob moved to another endpoint won't open."""
    return {"purpose": "webhook-secret", "accountId": account_id, "webhookId": webhook_id}


def validate_url(url: Any) -> str:
    """The URL as the SSRF guard normalises it; 422 naming ``url`` (the guard's fixed message, never the URL)."""
    from vaultcore.net.ssrf import EgressError, EgressPolicy, validate_target_url

    if not isinstance(url, str) or not url or len(url) > _MAX_URL:
        raise MemberInvalid("url", f"a URL string of at most {_MAX_URL} characters (required)")
    if holds_pan_in_any_form(url) or holds_pan_in_any_form(unquote(url)):
        # stored, listed and logged with every delivery: never card data (PCI DSS 3.4), as written or %-encoded
        raise MemberInvalid("url", "must not hold a card number")
    try:
        return validate_target_url(url, EgressPolicy.from_env()).url
    except (EgressError, ValueError) as exc:
        raise MemberInvalid("url", f"not allowed: {getattr(exc, 'message', 'invalid URL')}") from None


def _validate(body: Any, base: dict[str, Any] | None) -> dict[str, str]:
    if not isinstance(body, dict):
        raise MemberInvalid("body", "one JSON object")
    for member in body:
        if member not in _MEMBERS:
            raise MemberInvalid(str(member)[:40], "not a member of Webhook (url, event)")
    merged = {**(base or {}), **body}
    event = merged.get("event")
    if event not in EVENTS:
        raise MemberInvalid("event", "one of " + ", ".join(EVENTS) + " (required)")
    return {"url": validate_url(merged.get("url")), "event": str(event)}


def public_view(item: dict[str, Any]) -> dict[str, Any]:
    """The original's ``WebhookResponse`` (``url``, ``event``, ``id``) and our ``createdAt`` / ``updatedAt``."""
    return {"id": item["id"], "url": item["url"], "event": item["event"], "createdAt": item.get("createdAt"),
            "updatedAt": item.get("updatedAt")}


def _new_secret(account_id: str, webhook_id: str) -> tuple[str, dict[str, str]]:
    secret = SECRET_PREFIX + secrets.token_hex(32)
    return secret, wrap_secret(secret.encode("ascii"), _context(account_id, webhook_id))


def create(account_id: str, body: Any) -> dict[str, Any]:
    """A new endpoint: 201 ``WebhookResponse`` plus ``secret`` (our extension member, shown this once)."""
    fields = _validate(body, None)
    webhook_id = str(uuid.uuid4())
    secret, wrapped = _new_secret(account_id, webhook_id)
    now = int(clock.now())
    item = {"pk": _pk(account_id), "sk": _sk(webhook_id), "accountId": account_id, "id": webhook_id, **fields,
            "secrets": [{"w": wrapped, "until": 0}], "secretVersion": 1, "createdAt": now, "updatedAt": now}
    try:
        counted.put_counted([item], pk=_pk(account_id), prefix="EP#", limit=MAX_ENDPOINTS,
                            count_existing=lambda: len(registry.query_prefix(_pk(account_id), "EP#", limit=10**6)))
    except counted.LimitReached:
        raise MemberInvalid("url", f"an account has at most {MAX_ENDPOINTS} webhook endpoints: delete one") from None
    return {**public_view(item), "secret": secret}


def list_endpoints(account_id: str) -> list[dict[str, Any]]:
    items = registry.query_prefix(_pk(account_id), "EP#", limit=MAX_ENDPOINTS * 2)
    return [public_view(i) for i in sorted(items, key=lambda i: (i.get("createdAt", 0), i["id"]))]


def load(account_id: str, webhook_id: str, *, consistent: bool = True) -> dict[str, Any] | None:
    """The stored endpoint, or None (an id that is not a UUID names none)."""
    if not isinstance(webhook_id, str) or not WEBHOOK_ID.fullmatch(webhook_id):
        return None
    return registry.get(_pk(account_id), _sk(webhook_id), consistent=consistent)


def _item(account_id: str, webhook_id: str) -> dict[str, Any]:
    item = load(account_id, webhook_id)
    if item is None:
        raise NotFound("No such webhook of this account.")
    return item


def get(account_id: str, webhook_id: str) -> dict[str, Any]:
    return public_view(_item(account_id, webhook_id))


def patch(account_id: str, webhook_id: str, body: Any) -> dict[str, Any]:
    """Change ``url`` and/or ``event`` (the original's body has both; either alone is accepted). The secret stays."""
    item = _item(account_id, webhook_id)
    fields = _validate(body, {"url": item["url"], "event": item["event"]})
    try:
        updated = registry.update_fields(_pk(account_id), _sk(webhook_id), {**fields, "updatedAt": int(clock.now())})
    except registry.ConditionFailed:
        raise NotFound("No such webhook of this account.") from None
    return public_view(updated)


def delete(account_id: str, webhook_id: str) -> None:
    """Remove an endpoint: deliveries still queued for it are recorded ``abandoned``, not sent."""
    _item(account_id, webhook_id)
    try:
        counted.delete_counted([(_pk(account_id), _sk(webhook_id))], pk=_pk(account_id), prefix="EP#")
    except registry.ConditionFailed:
        raise NotFound("No such webhook of this account.") from None


def rotate_secret(account_id: str, webhook_id: str, body: Any) -> dict[str, Any]:
    """Our extension: a new current secret (answered this once); the one it replaces keeps signing, beside it,
    for ``overlapSeconds`` (0 to :data:`MAX_OVERLAP_SECONDS`, default :data:`ROTATION_OVERLAP_SECONDS`). Secrets
    replaced earlier stop signing now: at most two sign at any time.

    One conditional write on ``secretVersion``: of two concurrent rotations one wins, the other is answered 422
    (retry it), so no secret shown to a caller is lost.
    """
    body = body if body is not None else {}
    if not isinstance(body, dict) or set(body) - {"overlapSeconds"}:
        raise MemberInvalid("overlapSeconds", "the only member of the rotation's body")
    overlap = body.get("overlapSeconds", ROTATION_OVERLAP_SECONDS)
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap <= MAX_OVERLAP_SECONDS:
        raise MemberInvalid("overlapSeconds", f"a whole number of seconds, 0 to {MAX_OVERLAP_SECONDS}")
    item = _item(account_id, webhook_id)
    now = int(clock.now())
    secret, wrapped = _new_secret(account_id, webhook_id)
    kept = [{"w": item["secrets"][0]["w"], "until": now + overlap}] if overlap and item.get("secrets") else []
    version = int(item.get("secretVersion") or 1)
    try:
        registry.update_fields(_pk(account_id), _sk(webhook_id),
                               {"secrets": [{"w": wrapped, "until": 0}, *kept], "secretVersion": version + 1,
                                "updatedAt": now}, expected={"secretVersion": version})
    except registry.ConditionFailed:
        raise MemberInvalid("secret", "rotated concurrently by another call: rotate again") from None
    return {"id": webhook_id, "secret": secret, "previousSecretExpiresAt": kept[0]["until"] if kept else now}


def live_secrets(item: dict[str, Any], now: float) -> tuple[bytes, ...]:
    """The secrets that sign a delivery now: the current one first, then a replaced one within its overlap."""
    out = []
    for entry in item.get("secrets") or ():
        until = int(entry.get("until") or 0)
        if until == 0 or until > now:
            out.append(unwrap_secret(entry["w"], _context(str(item["accountId"]), str(item["id"]))))
    return tuple(out)


def _query(account_id: str, *, consistent: bool) -> list[dict[str, Any]]:
    with aws_errors("registry query"):
        out = dynamodb().query(TableName=settings().registry_table, ConsistentRead=consistent,
                               KeyConditionExpression="pk = :pk AND begins_with(sk, :sk)",
                               ProjectionExpression="#i, #e", ExpressionAttributeNames={"#i": "id", "#e": "event"},
                               ExpressionAttributeValues=to_item({":pk": _pk(account_id), ":sk": "EP#"}))
    return [from_item(i) or {} for i in out.get("Items", [])]  # at most MAX_ENDPOINTS small items: one page


def subscribed(account_id: str, event: str) -> list[str]:
    """The ids of the account's endpoints of ``event``: one consistent Query, so that an endpoint registered before
    the event's operation began gets it (a SETTLE-BATCH: rare, and read where it decides)."""
    return sorted(str(i["id"]) for i in _query(account_id, consistent=True) if i.get("event") == event)


def subscribed_cached(account_id: str, event: str) -> list[str]:
    """The same on a transaction's path, cached per container for RECORD_CACHE_SECONDS (60 s) like the account
    record itself: a SALE of an account without endpoints costs no read once warm, and an endpoint registered
    (or deleted) is seen by every container within that bound."""
    pairs = _by_account.get_or_load(account_id, lambda: tuple(
        (str(i["id"]), str(i.get("event"))) for i in _query(account_id, consistent=False))) or ()
    return sorted(webhook_id for webhook_id, subscribed_to in pairs if subscribed_to == event)
