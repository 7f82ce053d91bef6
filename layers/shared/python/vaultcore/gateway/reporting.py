"""The reporting interface (the spec's RSAPI): ``POST /api/rsapi/v1/transactions`` on the gateway API.

Form-urlencoded or JSON variables, authenticated like QSAPI (``account_id``, ``api_accesskey``, optional hash):

* ``transaction_id`` (12 digits): that transaction -> ``{"error": false, ..., "transaction": {...}}``;
* otherwise a date range, newest first: ``start_date`` / ``end_date`` (UTC, ``YYYY-MM-DD`` or
  ``YYYY-MM-DD HH:MM:SS``; a bare end date means the end of that day; default: the last 24 hours; at most
  31 days), ``limit`` (1-100, default 25), ``next_token`` (from the previous page) ->
  ``{"error": false, ..., "transactions": [...], "count": n, "next_token": "..." | null}``.
  Served by the Transactions table's ``byShardCreated`` index (issue 29): one Query per shard and page, merged
  newest first (vaultcore.gateway.store.list_transactions); ``null`` when no transaction follows the page.

Paging (issue 28): a ``next_token`` carries the range it was issued for (and the batch, for ``batch_id``), so the
next page reads that same range whenever it is asked for: the default "last 24 hours" and an open batch end at
the time of the *first* page, not of each later one. The token is tamper-evident (HMAC-SHA-256 under the
account's access key, over the account id and the token's content) and lives :data:`PAGE_TOKEN_SECONDS` from the
first page of its listing; past that, or with another account's credentials, or altered, it is 803. Sent with a
token, ``start_date`` / ``end_date`` / ``batch_id`` may be left out; when sent they must name the token's range
(803 otherwise).

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

import base64
import hashlib
import hmac
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vaultcore import clock
from vaultcore.api.http import Request, Response, json_response
from vaultcore.apikeys import gateway as gateway_keys
from vaultcore.gateway import accounts, batches, store
from vaultcore.gateway.batches import Batches, status_of
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.gateway.processor import transaction_timestamp
from vaultcore.gateway.service import RESPONSE_FIELDS, response_from_item
from vaultcore.gateway.validation import LEVEL2_FIELDS, RSAPI_TOKEN_FIELDS, parse_variables
from vaultcore.wallet.gateway_hooks import FRAUD_FIELDS

__all__ = ["rsapi", "TOKEN_REPORT_FIELDS", "record_of", "MAX_RANGE_SECONDS", "PAGE_TOKEN_SECONDS", "PageToken",
           "encode_page_token", "decode_page_token"]

TOKEN_REPORT_FIELDS = ("bfid", *RSAPI_TOKEN_FIELDS)
MAX_RANGE_SECONDS = 31 * 24 * 3600
DEFAULT_LIMIT = 25
#: How long a ``next_token`` (and every later one of the same listing) can be used, from its listing's first page.
PAGE_TOKEN_SECONDS = 24 * 3600
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


@dataclass(frozen=True)
class PageToken:
    """What a ``next_token`` carries: the next page's start key, the range it was issued for, its expiry."""
    transaction_id: str
    created_at: int
    start: int
    end: int
    expires: int
    batch: int | None = None


def _token_mac(secret: str, account_id: str, payload: bytes) -> bytes:
    message = b"rsapi-next-token\x00" + account_id.encode("ascii") + b"\x00" + payload
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).digest()[:16]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_page_token(token: PageToken, *, account_id: str, secret: str) -> str:
    """``base64url(json).base64url(mac)``: opaque to the client, tamper-evident, bound to the account."""
    data: dict[str, Any] = {"t": token.transaction_id, "c": token.created_at, "s": token.start, "e": token.end,
                            "x": token.expires}
    if token.batch is not None:
        data["b"] = token.batch
    payload = json.dumps(data, separators=(",", ":")).encode()
    return _b64(payload) + "." + _b64(_token_mac(secret, account_id, payload))


def decode_page_token(text: str, *, account_id: str, secret: str, now: float) -> PageToken | None:
    """The token's content, or None when it is malformed, altered, another account's, or expired."""
    try:
        body, mac = text.split(".")
        payload, signature = _unb64(body), _unb64(mac)
        if _b64(payload) != body or _b64(signature) != mac:
            return None  # one spelling per token: no ignored padding bits
        if not hmac.compare_digest(signature, _token_mac(secret, account_id, payload)):
            return None
        data = json.loads(payload)
        token = PageToken(data["t"], data["c"], data["s"], data["e"], data["x"], data.get("b"))
    except (ValueError, KeyError, TypeError, UnicodeError):
        return None
    if not (isinstance(token.transaction_id, str) and len(token.transaction_id) == 12
            and token.transaction_id.isdigit()):
        return None
    if not all(type(v) is int for v in (token.created_at, token.start, token.end, token.expires)):
        return None
    if token.batch is not None and type(token.batch) is not int:
        return None
    if now > token.expires or token.start > token.end:
        return None
    return token


def _range(variables: dict[str, str], account_batches: Batches, now: float) -> tuple[int, int, int | None]:
    """The ``[start, end]`` a first page asks for, and the batch it names (None: a date range)."""
    if "batch_id" in variables:
        # The transactions of one batch: its span of creation times (the open batch: up to now)
        text = variables["batch_id"]
        span = account_batches.span(int(text)) if re.fullmatch(r"[1-9][0-9]{0,6}", text) else None
        if span is None or "start_date" in variables or "end_date" in variables:
            raise GatewayError(E.REPORT_BATCH)
        return span[0], min(span[1], int(now)), int(text)
    end = _parse_date(variables["end_date"], end=True) if "end_date" in variables else int(now)
    start = _parse_date(variables["start_date"], end=False) if "start_date" in variables else end - 24 * 3600
    if start > end or end - start > MAX_RANGE_SECONDS:
        raise GatewayError(E.REPORT_DATE_RANGE)
    return start, end, None


def _check_range_of(variables: dict[str, str], token: PageToken) -> None:
    """A later page may name its range again; when it does, it must be the token's (803 otherwise)."""
    if token.batch is not None or "batch_id" in variables:
        if ("start_date" in variables or "end_date" in variables
                or variables.get("batch_id", str(token.batch)) != str(token.batch)):
            raise GatewayError(E.REPORT_PAGE_TOKEN)
        return
    try:
        same = (("start_date" not in variables or _parse_date(variables["start_date"], end=False) == token.start)
                and ("end_date" not in variables or _parse_date(variables["end_date"], end=True) == token.end))
    except GatewayError:
        same = False
    if not same:
        raise GatewayError(E.REPORT_PAGE_TOKEN)


def rsapi(request: Request) -> Response:
    """The reporting route (wiring: ``functions/reporting/app.py``)."""
    now = clock.now()
    variables = parse_variables(request.content_type, request.body, _KNOWN)
    # the account key, or an API key holding pcx:payments:read (issue 31), before any other work
    account = gateway_keys.authenticate(variables, now=now, scopes=gateway_keys.REPORTING_SCOPES)
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

    secret = accounts.access_key_of(account, variables)
    start_key = None
    if "next_token" in variables:
        # issue 28: the range is the token's, not today's default; a listing keeps its first page's expiry
        token = decode_page_token(variables["next_token"], account_id=account.account_id, secret=secret, now=now)
        if token is None:
            raise GatewayError(E.REPORT_PAGE_TOKEN)
        _check_range_of(variables, token)
        start, end, batch, expires = token.start, token.end, token.batch, token.expires
        start_key = {"transaction_id": token.transaction_id, "created_at": token.created_at}
    else:
        start, end, batch = _range(variables, account_batches, now)
        expires = int(now) + PAGE_TOKEN_SECONDS
    limit_text = variables.get("limit", str(DEFAULT_LIMIT))
    if not re.fullmatch(r"[0-9]{1,3}", limit_text) or not 1 <= int(limit_text) <= 100:
        raise GatewayError(E.REPORT_LIMIT)
    items, last = store.list_transactions(account.account_id, start, end, int(limit_text), start_key)
    records = [record_of(i, fields, account_batches) for i in items]
    next_token = None
    if last:
        page = PageToken(last["transaction_id"], int(last["created_at"]), start, end, expires, batch)
        next_token = encode_page_token(page, account_id=account.account_id, secret=secret)
    return json_response(200, {**ok, "transactions": records, "count": len(records), "next_token": next_token})
