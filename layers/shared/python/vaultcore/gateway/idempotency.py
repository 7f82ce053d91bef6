"""Idempotency of QSAPI requests on the Idempotency table (Stripe semantics, public-facts "Peers' conventions").

Why not powertools idempotency: it stores the handler's whole response in clear and fingerprints the raw
payload; our records must never hold card data. So:

* The key comes from the ``Idempotency-Key`` header or the ``idempotency_key`` variable (1 to 255 printable
  ASCII characters; both sent and different is an error). The record id is ``qsapi#<account_id>#<SHA-256 of
  the key>``: keys are per account, and a key that a careless merchant filled with a card number is not stored.
* The request fingerprint is HMAC-SHA-256 of the normalised variables (sorted ``name=value`` lines, credentials
  and the key excluded), keyed with the request's ``api_accesskey``. A keyed hash because the variables hold a
  PAN (PCI DSS v4.0 3.5.1.1: hashes of a PAN must be keyed); the key is the merchant's access key, which the
  platform itself stores only as a hash, so the fingerprint cannot be brute-forced from the table.
* :func:`claim` is one conditional PutItem of an ``INPROGRESS`` record that also reserves the transaction_id.
  It wins when no live record exists (DynamoDB deletes expired items late, so ``expiration`` is checked in the
  condition), or when an ``INPROGRESS`` record with the same fingerprint was abandoned (its holder crashed:
  ``in_progress_expiry`` passed). Losing returns the old record (``ReturnValuesOnConditionCheckFailure``):
  another fingerprint -> error 600; ``COMPLETED`` -> the stored response is replayed; still in progress ->
  error 601 (HTTP 409), unless the holder's transaction is already recorded: then it is the answer (issue 28,
  ``service._claim_outcome``: a failed "complete" write never makes a replay of an approved operation wait). The condition also admits the same claim again (``transaction_id`` is random per
  request): an SDK retry of a claim whose answer was lost is this request's own claim, not a collision.
* A taken-over record names the transaction_id its first holder reserved; if that transaction was written
  before the crash, its stored response is the answer (no second charge). Taking over is a second conditional
  PutItem (after the claim's failed one) that also carries every earlier attempt of the key not yet known to be
  settled (``unsettled``: each id with the time it claimed the key), so that an attempt which fails to settle
  its predecessor (DynamoDB failing again) leaves it to the next one instead of forgetting it (issue 28).
* :func:`complete` stores the final response, which holds no clear card data: gateway responses carry last4
  only, and the caller re-checks the text against the request's card and account numbers before storing. A
  request that recorded the transaction its claim reserved does not complete (issue 29: one write unit less per
  keyed request): the recorded transaction is the answer a replay gives (``service._answered_by_record``).
  Failures that never reached the processor (validation, token resolution, capture refusals) are not stored:
  the record is released and a retry runs again.

Records live 24 hours (``expiration``, the table's TTL attribute); ``INPROGRESS`` locks 30 seconds, twice the
gateway function's timeout.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vaultcore.errors import DependencyError
from vaultcore.gateway.validation import FINGERPRINT_EXCLUDED
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import ConditionFailed, aws_errors, from_item, to_item

__all__ = ["RETENTION_SECONDS", "IN_PROGRESS_SECONDS", "Claim", "KeyStateUnknown", "record_id", "fingerprint", "claim",
           "complete", "release"]

RETENTION_SECONDS = 24 * 3600
IN_PROGRESS_SECONDS = 30
_NAMES = {"#s": "status", "#r": "response"}


@dataclass
class Claim:
    """The outcome of :func:`claim`.

    ``state``: ``new`` (proceed), ``replay`` (answer ``response``/``status``), ``mismatch``, ``in_progress``
    (the holder reserved ``previous_transaction_id``: when that transaction is recorded, it is the answer), or
    ``takeover`` (an abandoned attempt reserved ``previous_transaction_id``; look it up before proceeding).
    ``previous_claimed_at``: when that attempt claimed the key (its operation's day, e.g. a CREDIT's allowance).
    """

    state: str
    record_id: str
    transaction_id: str
    response: dict[str, Any] | None = None
    status: int = 200
    previous_transaction_id: str | None = None
    previous_claimed_at: int | None = None
    #: takeover: every earlier attempt to settle, oldest first, as (transaction_id, claimed_at); the last is
    #: ``previous_transaction_id``.
    attempts: tuple[tuple[str, int | None], ...] = ()


class KeyStateUnknown(DependencyError):
    """The claim's PutItem failed without an answer and could not be undone either: the key may be held by this
    request's claim for its 30 s lock. Nothing was charged, but the caller must answer "outcome unknown" (retry
    with the same key after the lock), never "nothing was charged; retry", which the lock would answer with 601."""


def _table() -> str:
    return settings().idempotency_table


def record_id(account_id: str, key: str) -> str:
    return f"qsapi#{account_id}#{hashlib.sha256(key.encode('utf-8')).hexdigest()}"


def fingerprint(values: dict[str, str], api_accesskey: str) -> str:
    lines = "\n".join(f"{k}={values[k]}" for k in sorted(values) if k not in FINGERPRINT_EXCLUDED)
    return hmac.new(api_accesskey.encode("utf-8"), lines.encode("utf-8"), hashlib.sha256).hexdigest()


def claim(account_id: str, key: str, print_: str, transaction_id: str, now: int,
          recorded: Callable[[str], bool] | None = None) -> Claim:
    """One conditional PutItem (a DynamoDB round trip); a takeover makes a second one (:func:`_take_over`).

    ``recorded(transaction_id)``: whether that transaction is recorded (the caller's read). An abandoned record
    whose holder's transaction is recorded is not taken over: it answers ``in_progress`` naming it, and the
    caller replays the transaction (issue 29: the recorded transaction is the key's answer, and a replay after the
    30-second lock then writes nothing to find it; a takeover would write the record and a fence).
    """
    rid = record_id(account_id, key)
    item = {"id": rid, "status": "INPROGRESS", "fingerprint": print_, "transaction_id": transaction_id,
            "expiration": now + RETENTION_SECONDS, "in_progress_expiry": now + IN_PROGRESS_SECONDS}
    try:
        with aws_errors("idempotency claim"):
            dynamodb().put_item(
                TableName=_table(), Item=to_item(item),
                ConditionExpression=("attribute_not_exists(id) OR expiration < :now OR "
                                     "(#s = :inprogress AND transaction_id = :tid AND fingerprint = :fp)"),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=to_item({":now": now, ":inprogress": "INPROGRESS", ":fp": print_,
                                                   ":tid": transaction_id}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except DependencyError:
        # Applied with every answer lost is possible (the SDK's retries are admitted by the condition, and lost
        # too): a lock of this request's own that would refuse the retry it is about to be told to make (601 for
        # 30 s, issue 26). Undo it, by its transaction_id, before answering "nothing was charged".
        _undo_claim(rid, transaction_id)
        raise
    except ConditionFailed as exc:
        cause = exc.__cause__
        old = from_item(getattr(cause, "response", {}).get("Item")) if cause is not None else None
        if old is None:  # pragma: no cover - a condition fails only against an existing item
            return Claim("in_progress", rid, transaction_id)
        if not hmac.compare_digest(str(old.get("fingerprint", "")).encode(), print_.encode()):
            return Claim("mismatch", rid, transaction_id)
        if old.get("transaction_id") == transaction_id and old.get("status") == "INPROGRESS":
            return Claim("new", rid, transaction_id)  # pragma: no cover - the condition admits it already
        return _settled_or_held(rid, transaction_id, old, item, now, recorded=recorded)
    return Claim("new", rid, transaction_id)  # a new key, an expired record, or a retry of this very claim


def _settled_or_held(rid: str, transaction_id: str, old: dict[str, Any], item: dict[str, Any], now: int,
                     taking_over: bool = False, recorded: Callable[[str], bool] | None = None) -> Claim:
    """The claim's outcome against another record of the same fingerprint."""
    if old.get("status") == "COMPLETED" and isinstance(old.get("response"), str):
        return Claim("replay", rid, str(old.get("transaction_id", "")), json.loads(old["response"]),
                     int(old.get("http_status", 200)))
    if (not taking_over and old.get("status") == "INPROGRESS" and int(old.get("in_progress_expiry", 0)) < now
            and int(old.get("expiration", 0)) >= now):
        holder = str(old.get("transaction_id") or "")
        if not (recorded is not None and holder and not old.get("unsettled") and recorded(holder)):
            return _take_over(rid, transaction_id, old, item, now)  # abandoned: its holder died or could not tell
    return Claim("in_progress", rid, transaction_id, previous_transaction_id=old.get("transaction_id"),
                 previous_claimed_at=_claimed_at(old))


def _take_over(rid: str, transaction_id: str, old: dict[str, Any], item: dict[str, Any], now: int) -> Claim:
    """Take over an abandoned INPROGRESS record: one conditional PutItem that names this request and carries
    the attempts to settle (the old record's ``unsettled`` and its holder). Of concurrent takers exactly one
    wins (the condition names the old holder); an SDK retry of this put is recognised by its own id."""
    attempts = [dict(a) for a in old.get("unsettled") or ()] + [
        {"t": str(old.get("transaction_id", "")), "at": _claimed_at(old)}]
    new = {**item, "unsettled": attempts}
    try:
        with aws_errors("idempotency takeover"):
            dynamodb().put_item(
                TableName=_table(), Item=to_item(new),
                ConditionExpression=("(#s = :inprogress AND transaction_id = :old AND in_progress_expiry < :now) OR "
                                     "(#s = :inprogress AND transaction_id = :tid)"),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=to_item({":now": now, ":inprogress": "INPROGRESS", ":tid": transaction_id,
                                                   ":old": old.get("transaction_id", "")}),
                ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except ConditionFailed as exc:  # another request took it over (or completed it) first
        cause = exc.__cause__
        other = from_item(getattr(cause, "response", {}).get("Item")) if cause is not None else None
        if other is None:
            return Claim("in_progress", rid, transaction_id)
        if not hmac.compare_digest(str(other.get("fingerprint", "")).encode(), str(item["fingerprint"]).encode()):
            return Claim("mismatch", rid, transaction_id)
        return _settled_or_held(rid, transaction_id, other, item, now, taking_over=True)
    pairs = tuple((str(a.get("t")), None if a.get("at") is None else int(a["at"])) for a in attempts)
    return Claim("takeover", rid, transaction_id, previous_transaction_id=pairs[-1][0],
                 previous_claimed_at=pairs[-1][1], attempts=pairs)


def _claimed_at(record: dict[str, Any]) -> int | None:
    expiration = record.get("expiration")
    return int(expiration) - RETENTION_SECONDS if expiration is not None else None


def _undo_claim(rid: str, transaction_id: str) -> None:
    """Delete this request's own INPROGRESS claim if it exists; :class:`KeyStateUnknown` if that cannot be done."""
    try:
        release(Claim("new", rid, transaction_id))
    except DependencyError as exc:
        raise KeyStateUnknown("Internal error: idempotency claim failed.") from exc


def complete(claim_: Claim, response: dict[str, Any], status: int = 200) -> None:
    """Store the final response (one UpdateItem), only while this request still holds the claim.

    The condition also admits a retry of this very update (already COMPLETED with the same transaction id). A
    replay that found the holder's transaction recorded completes the record for it with a claim naming that
    transaction (``service._claim_outcome``): the same response, so either write may land first.
    """
    with aws_errors("idempotency complete"):
        dynamodb().update_item(
            TableName=_table(), Key=to_item({"id": claim_.record_id}),
            UpdateExpression="SET #s = :done, #r = :resp, http_status = :code, transaction_id = :tid REMOVE unsettled",
            ConditionExpression="transaction_id = :mine OR (#s = :done AND transaction_id = :tid)",
            ExpressionAttributeNames=_NAMES,
            ExpressionAttributeValues=to_item({":done": "COMPLETED", ":resp": json.dumps(response),
                                               ":code": status, ":tid": response.get("transaction_id") or
                                               claim_.transaction_id, ":mine": claim_.transaction_id}))


def release(claim_: Claim) -> None:
    """Delete the INPROGRESS record so that a retry runs again (the request failed before any charge)."""
    try:
        with aws_errors("idempotency release"):
            dynamodb().delete_item(
                TableName=_table(), Key=to_item({"id": claim_.record_id}),
                ConditionExpression="transaction_id = :mine AND #s = :inprogress",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues=to_item({":mine": claim_.transaction_id, ":inprogress": "INPROGRESS"}))
    except ConditionFailed:
        pass  # another request took the record over: nothing of ours to release
