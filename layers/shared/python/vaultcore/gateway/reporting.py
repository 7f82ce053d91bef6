"""The reporting interface (the spec's RSAPI): ``POST /api/rsapi/v1/transactions`` on the gateway API.

Form-urlencoded or JSON variables, authenticated like QSAPI (``account_id``, ``api_accesskey``, optional hash):

* ``transaction_id`` (12 digits): that transaction -> ``{"error": false, ..., "transaction": {...}}``;
* otherwise a date range, newest first: ``start_date`` / ``end_date`` (UTC, ``YYYY-MM-DD`` or
  ``YYYY-MM-DD HH:MM:SS``; a bare end date means the end of that day; default: the last 24 hours; at most
  31 days), ``limit`` (1-100, default 25), ``next_token`` (from the previous page) ->
  ``{"error": false, ..., "transactions": [...], "count": n, "next_token": "..." | null}``.
  Served by the Transactions table's ``byCreatedAt`` local secondary index: one Query per page.

A record is the transaction response (as QSAPI answered it) plus ``account_id``, ``payment_type``,
``device_trans_id``, ``reissue``, the level 2 values, and for authorizations ``auth_status``
(``authorized``/``captured``/``declined``), ``auth_expires_at`` and ``captured_by``.

Token fields (``bfid``, ``vault_token_card_number``, ``vault_token_card_expiration``,
``vault_token_bank_account_number``, ``vault_token_bank_routing_number``) are returned only when the account's
TOKEN DATA IN RSAPI is on, or, when it is off, those named in ``include_fields`` (comma-separated); absent ones
are empty strings. Unknown names in ``include_fields`` are an error (804).

Fraud fields (issue 8): ``fraud_score``, ``fraud_recommendation`` and ``fraud_reasons`` of a scored payment are
returned when the account option ``fraud_in_rsapi`` is on, or when named in ``include_fields``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from vaultcore import clock
from vaultcore.api.http import Request, Response, json_response
from vaultcore.gateway import accounts, batches, store
from vaultcore.gateway.batches import Batches, status_of
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.gateway.processor import transaction_timestamp
from vaultcore.gateway.service import RESPONSE_FIELDS, response_from_item
from vaultcore.gateway.validation import LEVEL2_FIELDS, RSAPI_TOKEN_FIELDS, parse_variables
from vaultcore.wallet.gateway_hooks import FRAUD_FIELDS

__all__ = ["rsapi", "TOKEN_REPORT_FIELDS", "record_of", "MAX_RANGE_SECONDS"]

TOKEN_REPORT_FIELDS = ("bfid", *RSAPI_TOKEN_FIELDS)
MAX_RANGE_SECONDS = 31 * 24 * 3600
DEFAULT_LIMIT = 25
_EXTRA_FIELDS = ("account_id", "payment_type", "device_trans_id", "reissue", *LEVEL2_FIELDS, "auth_status",
                 "auth_expires_at", "captured_by")
_INCLUDABLE = frozenset({*TOKEN_REPORT_FIELDS, *(n for n, _ in RESPONSE_FIELDS), *_EXTRA_FIELDS,
                         *FRAUD_FIELDS})  # issue 8: fraud_score, fraud_recommendation, fraud_reasons
_KNOWN = frozenset({"account_id", "api_accesskey", "hash", "timestamp", "hash_key", "transaction_id",
                    "start_date", "end_date", "limit", "next_token", "include_fields", "response_format",
                    "batch_id"})
_DATE = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?: ([0-9]{2}):([0-9]{2}):([0-9]{2}))?")


def record_of(item: dict[str, Any], token_fields: set[str], account_batches: Batches | None = None
              ) -> dict[str, Any]:
    record = response_from_item(item)
    if account_batches is not None:  # issue 20: the lifecycle status and the settlement batch
        record["status"] = status_of(item, account_batches)
        if item.get("transaction_type") != "SETTLE-BATCH":
            record["batch_id"] = account_batches.batch_of(int(item.get("created_at") or 0))
        if int(item.get("refunded_cents") or 0):
            record["refunded_amount"] = round(int(item["refunded_cents"]) / 100, 2)
        if item.get("ach_returned_at"):
            record["ach_return_code"] = item.get("ach_return_code")
    for name in _EXTRA_FIELDS:
        if item.get(name) is not None:
            value = item[name]
            record[name] = transaction_timestamp(value) if name == "auth_expires_at" else value
    for name in TOKEN_REPORT_FIELDS:
        if name in token_fields:
            record[name] = str(item.get(name) or "")
    for name in FRAUD_FIELDS:  # issue 8: the fraud recommendation, when the account setting or the caller asks
        if name in token_fields and item.get(name) is not None:
            record[name] = item[name]
    return record


def _token_fields(account: accounts.Account, include: str | None) -> set[str]:
    names = {n.strip() for n in (include or "").split(",") if n.strip()}
    if len(names) > 50 or any(n not in _INCLUDABLE for n in names):
        raise GatewayError(E.REPORT_FIELD)
    fraud = set(FRAUD_FIELDS) if account.option("fraud_in_rsapi") else names & set(FRAUD_FIELDS)  # issue 8
    if account.option("token_data_in_rsapi"):
        return set(TOKEN_REPORT_FIELDS) | fraud
    return (names & set(TOKEN_REPORT_FIELDS)) | fraud


def _parse_date(text: str, *, end: bool) -> int:
    m = _DATE.fullmatch(text.strip())
    if not m:
        raise GatewayError(E.REPORT_DATE_RANGE)
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    hh, mm, ss = (int(m[4]), int(m[5]), int(m[6])) if m[4] else ((23, 59, 59) if end else (0, 0, 0))
    try:
        return int(datetime(year, month, day, hh, mm, ss, tzinfo=UTC).timestamp())
    except ValueError as exc:
        raise GatewayError(E.REPORT_DATE_RANGE) from exc


def rsapi(request: Request) -> Response:
    """The reporting route (wiring: ``functions/reporting/app.py``)."""
    now = clock.now()
    variables = parse_variables(request.content_type, request.body, _KNOWN)
    account = accounts.authenticate(variables, now=now)
    fields = _token_fields(account, variables.get("include_fields"))
    ok = {"error": False, "error_code": 0, "error_message": None, "error_msg": None}
    tid = variables.get("transaction_id")
    account_batches = batches.load(account.account_id)
    if tid is not None:
        if not re.fullmatch(r"[0-9]{12}", tid):
            raise GatewayError(E.REPORT_NOT_FOUND)
        item = store.get_transaction(account.account_id, tid, consistent=True)
        if item is None:
            raise GatewayError(E.REPORT_NOT_FOUND)
        return json_response(200, {**ok, "transaction": record_of(item, fields, account_batches)})

    if "batch_id" in variables:
        # The transactions of one batch: its span of creation times (the open batch: up to now)
        text = variables["batch_id"]
        span = account_batches.span(int(text)) if re.fullmatch(r"[1-9][0-9]{0,6}", text) else None
        if span is None or "start_date" in variables or "end_date" in variables:
            raise GatewayError(E.REPORT_BATCH)
        start, end = span[0], min(span[1], int(now))
    else:
        end = _parse_date(variables["end_date"], end=True) if "end_date" in variables else int(now)
        start = _parse_date(variables["start_date"], end=False) if "start_date" in variables else end - 24 * 3600
        if start > end or end - start > MAX_RANGE_SECONDS:
            raise GatewayError(E.REPORT_DATE_RANGE)
    limit_text = variables.get("limit", str(DEFAULT_LIMIT))
    if not re.fullmatch(r"[0-9]{1,3}", limit_text) or not 1 <= int(limit_text) <= 100:
        raise GatewayError(E.REPORT_LIMIT)
    start_key = None
    if "next_token" in variables:
        start_key = store.decode_page_token(variables["next_token"], start, end)
        if start_key is None:
            raise GatewayError(E.REPORT_PAGE_TOKEN)
    items, last = store.list_transactions(account.account_id, start, end, int(limit_text), start_key)
    records = [record_of(i, fields, account_batches) for i in items]
    return json_response(200, {**ok, "transactions": records, "count": len(records),
                               "next_token": store.encode_page_token(last, start, end) if last else None})
