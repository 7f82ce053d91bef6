"""A v4 payment: its meta item and the details of its QSAPI transaction, in the original's forms.

Storage: one Registry item per transaction that has meta, ``PAYMETA#<account_id>#<transaction_id>`` / ``META``
(:func:`vaultcore.payments.init_ids.meta_pk`): ``accountId``, ``transactionId``, ``meta`` (the validated members,
:mod:`.meta`), ``initialized`` (made by ``payments/init``: the id may be charged through the QSAPI),
``createdAt``, ``updatedAt``, ``version`` (each write is conditional on the version it read). The transaction
itself stays the QSAPI's item: the meta never enters the Transactions table, so the RSAPI listing and the write
cost of a SALE that names no init id are what they were.

Operations (the original's ``initCardPaymentTransaction``, ``getTransaction``, ``updateTransactionDetails``):

* :func:`init`: a new 12-digit transaction id (the QSAPI's form) and its meta: ``InitResponse``, status
  ``INITIALIZED``;
* :func:`details`: ``TransactionDetails``: the meta's members, then the transaction's as the original's
  ``AuthResponse`` (``status``, ``id``, ``timestamp``, ``card``, ``auth``, ``amounts``), and our extension member
  ``transaction``: the QSAPI's own transaction response (:func:`vaultcore.gateway.service.response_from_item`).
  A transaction charged without an init reads the same, without meta; an init not charged yet is
  ``INITIALIZED``;
* :func:`update`: ``TransactionUpdate`` merged into the meta (:func:`.meta.merge`) while the transaction's batch is
  open; once its batch has settled (SETTLE-BATCH, or the batch close), refused with errCode 930, HTTP 422: level 3
  data travels with the settlement, and a settled transaction cannot change.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vaultcore import clock
from vaultcore.errors import NotFound, VaultError
from vaultcore.gateway import batches, processor, store
from vaultcore.gateway.service import response_from_item
from vaultcore.payments import meta as meta_rules
from vaultcore.payments.init_ids import META_SK, meta_pk
from vaultcore.store import registry

__all__ = ["TRANSACTION_SETTLED", "TransactionSettled", "init", "details", "update", "status_of", "auth_response",
           "TRANSACTION_ID"]

TRANSACTION_SETTLED = 930
TRANSACTION_ID = "[1-9][0-9]{11}"  # the QSAPI's transaction_id (public-facts: 12 digits)
# Concurrent PATCHes: each write is conditional on the version it read, and a lost race reads again. A PATCH loses
# only to another one's commit, and each commits once: with up to _ATTEMPTS PATCHes of one transaction at a time,
# every one applies; beyond, one may answer "retry" (500).
_ATTEMPTS = 5


class TransactionSettled(VaultError):
    """A PATCH after the transaction's batch settled (HTTP 422; the original documents 422 for a refused update)."""

    code = TRANSACTION_SETTLED
    # 409 in our body (a state conflict, as the iFrame's 903): the v4 paths answer it as the original's 422
    # invalid_request (vaultcore.iframe.violations.status_of), the status its document gives a refused request
    status = 409
    default_message = "The transaction's batch has settled: its level 3 data and meta can no longer change."


def _not_found() -> NotFound:
    return NotFound("No such transaction on this account.")


def _checked_id(transaction_id: str) -> str:
    if not (len(transaction_id) == 12 and transaction_id.isdigit() and transaction_id[0] != "0"):
        raise _not_found()  # not an id this gateway issues: nothing to read (and nothing of it is echoed)
    return transaction_id


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def init(account: Any, body: Any) -> dict[str, Any]:
    """``payments/init``: a transaction id reserved for the account, and its meta (201 ``InitResponse``)."""
    members = meta_rules.validate_meta(body)
    now = int(clock.now())
    trace = members.get("trace")
    if trace is None or "timestamp" not in trace:
        # the original keeps the init's time in trace.timestamp (its guide: the top-level timestamp is left out
        # of an init, "the trace object ... includes the timestamp for this action")
        members["trace"] = {**(trace or {}), "timestamp": _iso(now)}
    while True:
        transaction_id = processor.new_transaction_id()
        item = {"pk": meta_pk(account.account_id, transaction_id), "sk": META_SK, "accountId": account.account_id,
                "transactionId": transaction_id, "meta": members, "initialized": True, "createdAt": now,
                "updatedAt": now, "version": 1}
        try:
            registry.put_new(item)
        except registry.ConditionFailed:
            continue  # the id has meta already (one in 10^12): draw another
        return {"id": transaction_id, "status": "INITIALIZED", **members}


def _meta_item(account_id: str, transaction_id: str) -> dict[str, Any] | None:
    return registry.get(meta_pk(account_id, transaction_id), META_SK, consistent=True)


#: The original's Status of a recorded transaction (its table: APPROVED, DECLINED, CAPTURED, PENDING, AUTHORIZED,
#: VOIDED, SAVED, REFUNDED, CREDITED, ERROR).
def status_of(item: dict[str, Any]) -> str:
    ttype = item.get("transaction_type")
    if not item.get("transaction_approved"):
        return "ERROR" if int(item.get("error_code") or 0) == 503 else "DECLINED"  # 503: processing error
    if item.get("reversed_by") or item.get("voided_by") or ttype == "REVERSAL":
        return "VOIDED"
    if ttype == "REFUND":
        return "VOIDED" if item.get("authorization_message") == "VOID" else "REFUNDED"
    if int(item.get("refunded_cents") or 0) > 0:
        return "REFUNDED"
    if ttype == "AUTHORIZATION":
        return "CAPTURED" if item.get("auth_status") == "captured" else "AUTHORIZED"
    if ttype == "CAPTURE":
        return "CAPTURED"
    if ttype == "STORE":
        return "SAVED"
    if ttype == "CREDIT":
        return "CREDITED"
    if item.get("authorization_message") == "PENDING":
        return "PENDING"  # an ACH debit until its batch settles
    return "APPROVED"


# Our card_brand (the original's QSAPI capitals) -> the original's v4 CardBrand.
_BRANDS = {"VISA": "VISA", "MASTERCARD": "MASTERCARD", "DISCOVER": "DISCOVER", "AMERICAN EXPRESS": "AMEX",
           "JCB": "JCB", "DINERS CLUB": "DINERS"}
# The original's Auth.message enum by transaction type (APPROVED for the rest).
_AUTH_MESSAGES = {"CAPTURE": "CAPTURED", "FORCE": "FORCED", "REFUND": "REFUNDED"}


def auth_response(item: dict[str, Any]) -> dict[str, Any]:
    """The original's ``AuthResponse`` members of a recorded QSAPI transaction."""
    out: dict[str, Any] = {"status": status_of(item), "id": item["transaction_id"]}
    if item.get("created_at") is not None:
        out["timestamp"] = _iso(int(item["created_at"]))
    if item.get("tender_type") == "CARD":
        card: dict[str, Any] = {}
        name = " ".join(str(item[k]) for k in ("first_name", "last_name") if item.get(k))
        if name:
            card["name"] = name[:100]
        brand = _BRANDS.get(str(processor.gateway_brand(item.get("card_brand"))))
        if brand:
            card["brand"] = brand
        if item.get("last4"):
            card["last4"] = str(item["last4"])
        if item.get("card_expiration"):
            card["expiry"] = str(item["card_expiration"])
        out["card"] = card
    approved = bool(item.get("transaction_approved"))
    raw = str(item.get("authorization_message") or ("APPROVED" if approved else "DECLINED"))
    out["auth"] = {"code": str(item.get("authorization_code") or ""),
                   "message": _AUTH_MESSAGES.get(str(item.get("transaction_type")), "APPROVED") if approved
                   else "DECLINED",
                   "processorMessage": raw}
    cents = int(item.get("transaction_cents") or item.get("request_cents") or 0)
    out["amounts"] = {"currency": item.get("currency") or "USD", "total": f"{cents // 100}.{cents % 100:02d}"}
    return out


def details(account: Any, transaction_id: str) -> dict[str, Any]:
    """``getTransaction``: the meta and the transaction (404 when the account has neither under this id)."""
    _checked_id(transaction_id)
    item = store.get_transaction(account.account_id, transaction_id, consistent=True)
    meta_item = _meta_item(account.account_id, transaction_id)
    if item is None and meta_item is None:
        raise _not_found()
    out: dict[str, Any] = dict(meta_item["meta"]) if meta_item else {}
    if item is None:
        out.update({"status": "INITIALIZED", "id": transaction_id})
        return out
    out.update(auth_response(item))
    out["transaction"] = response_from_item(item)  # our extension member: the QSAPI's own answer
    return out


def update(account: Any, transaction_id: str, body: Any) -> dict[str, Any]:
    """``updateTransactionDetails``: merge ``body`` into the meta before the transaction's batch settles."""
    changes = meta_rules.validate_update(body)
    _checked_id(transaction_id)
    for _ in range(_ATTEMPTS):
        item = store.get_transaction(account.account_id, transaction_id, consistent=True)
        stored = _meta_item(account.account_id, transaction_id)
        if item is None and stored is None:
            raise _not_found()
        if item is not None and batches.load(account.account_id).settled(int(item.get("created_at") or 0)):
            raise TransactionSettled()
        merged = meta_rules.merge(stored["meta"] if stored else {}, changes)
        now = int(clock.now())
        try:
            if stored is None:  # a transaction charged without an init: its first meta
                registry.put_new({"pk": meta_pk(account.account_id, transaction_id), "sk": META_SK,
                                  "accountId": account.account_id, "transactionId": transaction_id, "meta": merged,
                                  "initialized": False, "createdAt": now, "updatedAt": now, "version": 1})
            else:
                registry.update_fields(meta_pk(account.account_id, transaction_id), META_SK,
                                       {"meta": merged, "updatedAt": now, "version": int(stored["version"]) + 1},
                                       expected={"version": int(stored["version"])})
        except registry.ConditionFailed:
            continue  # another PATCH wrote first: merge over what it wrote
        return details(account, transaction_id)
    raise VaultError("The transaction's meta is changing concurrently; retry.", code=1, status=500)
