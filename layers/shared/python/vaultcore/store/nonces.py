"""HMAC nonce acceptance: one conditional put per request (DESIGN.md §3).

The condition also admits a nonce whose stored item is past its ``expiresAt``: DynamoDB deletes expired items
lazily (up to days late), so an expired item counts as absent.
"""

from __future__ import annotations

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, to_item

__all__ = ["claim_nonce"]


def claim_nonce(partner_id: str, nonce: str, now: int, expires_at: int) -> bool:
    """Record the nonce; False when it was already used and has not expired."""
    try:
        with aws_errors("nonce write"):
            dynamodb().put_item(
                TableName=settings().nonces_table,
                Item=to_item({"partnerId": partner_id, "nonce": nonce, "expiresAt": expires_at}),
                ConditionExpression="attribute_not_exists(nonce) OR expiresAt < :now",
                ExpressionAttributeValues=to_item({":now": now}),
            )
    except ConditionFailed:
        return False
    return True
