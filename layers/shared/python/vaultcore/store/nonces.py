"""HMAC nonce acceptance: one conditional put per request (DESIGN.md §3).

The condition also admits a nonce whose stored item is past its ``expiresAt``: DynamoDB deletes expired items
lazily (up to days late), so an expired item counts as absent.

It also admits a retry of the same put (issue 18): when DynamoDB applied the put but its answer was lost, the
SDK sends it again and a plain ``attribute_not_exists`` would refuse the request's own nonce as a replay (a
false 1003). Each call writes a random ``writer``; the retry carries the same one, an attacker's replay of the
request is another call with another one.

Partition spread (:mod:`vaultcore.store.spread`): a nonce is stored under ``partnerId = <owner>#<shard>``, the
shard from a hash of the nonce itself (``NONCE_SHARDS``, template parameter ``NonceShards``), so one busy
partner's (or gateway account's) requests write many partition keys instead of one. A nonce is only ever looked
up by its own value, so no read fans out. Rollout: the version before the spread stored nonces under ``<owner>``;
while both versions serve (the deployment's traffic shift) and for one nonce window after it (16 minutes), a
request replayed onto the other version is not recognised as a replay. This was accepted (docs/operators/
capacity.md, "Partition spread"): a replay needs a captured, signed request, and checking the legacy key as
well would put every request's write or read back on the one partition the spread removes.
"""

from __future__ import annotations

import secrets

from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item
from vaultcore.store.spread import spread_value

__all__ = ["claim_nonce", "decoy_claim", "nonce_seen", "nonce_key"]


def nonce_key(owner: str, nonce: str) -> dict[str, str]:
    """The item key of ``owner``'s ``nonce``: the partition spread by the nonce."""
    return {"partnerId": spread_value(owner, nonce, settings().nonce_shards), "nonce": nonce}


def claim_nonce(partner_id: str, nonce: str, now: int, expires_at: int) -> bool:
    """Record the nonce; False when it was already used and has not expired."""
    writer = secrets.token_hex(8)
    try:
        with aws_errors("nonce write"):
            dynamodb().put_item(
                TableName=settings().nonces_table,
                Item=to_item({**nonce_key(partner_id, nonce), "expiresAt": expires_at, "writer": writer}),
                ConditionExpression="attribute_not_exists(nonce) OR expiresAt < :now OR writer = :w",
                ExpressionAttributeValues=to_item({":now": now, ":w": writer}),
            )
    except ConditionFailed:
        return False
    return True


# A fixed item per shard that exists after its first write and never expires, so a claim of it fails its condition
# (after the first claim of each shard, which nothing can tell from any other claim that succeeded).
_DECOY_PARTNER = "#decoy"
_DECOY_NONCE = "#decoy"
_DECOY_EXPIRES = 2**40


def decoy_claim(now: int) -> None:
    """The same conditional put as a reused nonce, on an item that always exists.

    Every HMAC failure that stops before the nonce step makes this call, so an unknown partner, a wrong
    signature, a stale timestamp and a reused nonce cost the same round trip and cannot be told apart by
    their time (issue 12: partner ids must not be observable). It consumes one write unit per failure, on a
    random one of the decoy's shards (a flood of failures would otherwise all write one partition key).
    """
    shards = settings().nonce_shards
    writer = secrets.token_hex(8)
    try:
        with aws_errors("nonce write"):
            dynamodb().put_item(
                TableName=settings().nonces_table,
                Item=to_item({"partnerId": f"{_DECOY_PARTNER}#{secrets.randbelow(shards)}", "nonce": _DECOY_NONCE,
                              "expiresAt": _DECOY_EXPIRES, "writer": writer}),
                ConditionExpression="attribute_not_exists(nonce) OR expiresAt < :now OR writer = :w",
                ExpressionAttributeValues=to_item({":now": now, ":w": writer}),
            )
    except ConditionFailed:
        pass


def nonce_seen(partner_id: str, nonce: str, now: int) -> bool:
    """Whether the API would refuse this nonce as reused (read only: for the cert-only authdebug endpoint).

    Also looks under the key the version before the partition spread wrote (a debugging aid; two reads)."""
    for key in (nonce_key(partner_id, nonce), {"partnerId": partner_id, "nonce": nonce}):
        with aws_errors("nonce read"):
            out = dynamodb().get_item(TableName=settings().nonces_table, ConsistentRead=True, Key=to_item(key))
        item = out.get("Item")
        if item is not None and int(from_item(item).get("expiresAt", 0)) >= now:
            return True
    return False
