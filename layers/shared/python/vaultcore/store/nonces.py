"""HMAC nonce acceptance: one conditional put per request (DESIGN.md §3).

The condition also admits a nonce whose stored item is past its ``expiresAt``: DynamoDB deletes expired items
lazily (up to days late), so an expired item counts as absent.

It also admits a retry of the same put (issue 18): when DynamoDB applied the put but its answer was lost, the
SDK sends it again and a plain ``attribute_not_exists`` would refuse the request's own nonce as a replay (a
false 1003). Each call writes a random ``writer``; the retry carries the same one, an attacker's replay of the
request is another call with another one.
"""

from __future__ import annotations

import secrets

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, to_item

__all__ = ["claim_nonce", "decoy_claim", "nonce_seen"]


def claim_nonce(partner_id: str, nonce: str, now: int, expires_at: int) -> bool:
    """Record the nonce; False when it was already used and has not expired."""
    writer = secrets.token_hex(8)
    try:
        with aws_errors("nonce write"):
            dynamodb().put_item(
                TableName=settings().nonces_table,
                Item=to_item({"partnerId": partner_id, "nonce": nonce, "expiresAt": expires_at, "writer": writer}),
                ConditionExpression="attribute_not_exists(nonce) OR expiresAt < :now OR writer = :w",
                ExpressionAttributeValues=to_item({":now": now, ":w": writer}),
            )
    except ConditionFailed:
        return False
    return True


# A fixed item that exists after its first write and never expires, so a claim of it always fails its condition.
_DECOY_PARTNER = "#decoy"
_DECOY_NONCE = "#decoy"
_DECOY_EXPIRES = 2**40


def decoy_claim(now: int) -> None:
    """The same conditional put as a reused nonce, on an item that always exists.

    Every HMAC failure that stops before the nonce step makes this call, so an unknown partner, a wrong
    signature, a stale timestamp and a reused nonce cost the same round trip and cannot be told apart by
    their time (issue 12: partner ids must not be observable). It consumes one write unit per failure.
    """
    claim_nonce(_DECOY_PARTNER, _DECOY_NONCE, now, _DECOY_EXPIRES)


def nonce_seen(partner_id: str, nonce: str, now: int) -> bool:
    """Whether the API would refuse this nonce as reused (read only: for the cert-only authdebug endpoint)."""
    from vaultcore.store.ddb import from_item

    with aws_errors("nonce read"):
        out = dynamodb().get_item(TableName=settings().nonces_table, ConsistentRead=True,
                                  Key=to_item({"partnerId": partner_id, "nonce": nonce}))
    item = out.get("Item")
    return item is not None and int(from_item(item).get("expiresAt", 0)) >= now
