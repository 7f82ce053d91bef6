"""Per-credential authentication failure counts: what slows down a gateway key being guessed (issue 27, item 4).

One item per credential (a gateway ``account_id`` from one source address: ``<account_id>@<sourceIp>``, so a
guesser slows down only itself and never locks the merchant's own servers out; see
:func:`vaultcore.gateway.accounts._guessing_credential`) and fixed window of ``AUTH_FAILURE_WINDOW_SECONDS`` (300 s by
default), in the Nonces table (its TTL attribute ``expiresAt`` removes it)::

    partnerId  "authfail#<credential>"   (spread: one partition per credential, never a constant key)
    nonce      "w#<window number>"       (unix seconds // window)
    writers    string set: one random id per failed attempt (at most AUTH_FAILURE_LIMIT of them)
    expiresAt  the end of the window plus one window (bounded TTL)

Retry-aware: each failure adds its own random writer id to a set, so a retry of the same write (the SDK sends it
again when DynamoDB applied it but the answer was lost, as :mod:`vaultcore.store.nonces` explains) adds nothing,
and the count is the size of the set. The set stops growing at the limit (a conditional update), so an item stays
small whatever the number of guesses.

Once a window holds ``AUTH_FAILURE_LIMIT`` failures (20 by default), every attempt on that credential is refused
until the window ends, the right key too: a guesser cannot learn that a guess was right. The right key is
therefore never locked out for longer than one window after the failure that reached the limit
(docs/integrators/gateway.md "Gateway authentication"). A container learns the state from its own failures at
once and from the table at most once per ``RECORD_CACHE_SECONDS`` per credential (a warm request makes no call).
Neither step ever changes an answer when the table fails: a count not written is logged, a state not read is
taken as "not refused" (the gateway's availability does not depend on the Nonces table).
"""

from __future__ import annotations

import secrets

from vaultcore.cache import ContainerCache
from vaultcore.errors import DependencyError
from vaultcore.logs import get_logger
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["record_failure", "throttled", "window_end"]

_log = get_logger("auth")

# credential -> (unix time until which it is refused, or 0.0; the end of the window this was learnt in)
_state: ContainerCache[tuple[float, float]] = ContainerCache("record_cache_seconds", max_items=4096)


def _key(credential: str, window: int) -> dict[str, str]:
    return {"partnerId": f"authfail#{credential}", "nonce": f"w#{window}"}


def _window(now: float) -> tuple[int, int]:
    """The current window's number and its length in seconds."""
    length = max(1, settings().auth_failure_window_seconds)
    return int(now // length), length


def window_end(now: float) -> float:
    number, length = _window(now)
    return float((number + 1) * length)


def record_failure(credential: str, now: float) -> int:
    """Count one failed attempt on ``credential``; the number of failures in the current window (capped at the
    limit; 0 when the table could not be written: the count never changes the caller's answer). One conditional
    UpdateItem."""
    try:
        return _record(credential, now)
    except DependencyError:
        _log.warning("authentication failure not counted", extra={"reason": "table unavailable"})
        return 0


def _record(credential: str, now: float) -> int:
    number, length = _window(now)
    limit = max(1, settings().auth_failure_limit)
    writer = secrets.token_hex(8)
    try:
        with aws_errors("authentication failure count"):
            out = dynamodb().update_item(
                TableName=settings().nonces_table, Key=to_item(_key(credential, number)),
                UpdateExpression="ADD writers :w SET expiresAt = :exp",
                ConditionExpression="attribute_not_exists(writers) OR size(writers) < :limit OR contains(writers, :id)",
                ExpressionAttributeValues=to_item({":w": {writer}, ":exp": (number + 2) * length, ":limit": limit,
                                                   ":id": writer}),
                ReturnValues="ALL_NEW")
        count = len(from_item(out.get("Attributes") or {}).get("writers") or ())
    except ConditionFailed:
        count = limit  # at the limit already
    if count >= limit:
        _state.put(credential, (window_end(now), window_end(now)))
    return count


def throttled(credential: str, now: float) -> bool:
    """Whether attempts on ``credential`` are refused now (the limit reached in the current window)."""
    known = _state.get(credential)
    if known is None or now >= known[1]:  # never read, or read in a window that has ended
        number, _length = _window(now)
        try:
            with aws_errors("authentication failure count"):
                out = dynamodb().get_item(TableName=settings().nonces_table, Key=to_item(_key(credential, number)),
                                          ProjectionExpression="writers")
        except DependencyError:
            # Fails open (not remembered): the gateway stays up without the Nonces table, as it was before the
            # counts; the next request reads again.
            _log.warning("authentication failure count unreadable", extra={"reason": "table unavailable"})
            return False
        writers = from_item(out.get("Item") or {}).get("writers") or ()
        end = window_end(now)
        known = (end if len(writers) >= max(1, settings().auth_failure_limit) else 0.0, end)
        _state.put(credential, known)
    return now < known[0]
