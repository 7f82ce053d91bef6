"""The partner-visible proxy logs (ProxyLogs table): masked exchanges, newest first, with a retention TTL.

Each exchange that passed authentication and found its configuration is stored for the partner: the request
as forwarded (method, URL, headers, body), the response as received (status, headers, body), per-phase
durations and, on failure, the error code and message. What is stored is masked in four layers, each applied
to what the previous one left (PCI DSS 3.3 / 3.4.1: no sensitive authentication data, PAN at most first six
and last four):

1. the configuration's masks (``requestMasks``; ``responseMasks``, plus ``handledErrorMasks`` when the target
   answered 4xx/5xx) with the five patterns, by jsonpath, xpath and regex on the body and by key on headers and
   query parameters;
2. every place a detokenize or parser action wrote clear data is masked even when no mask names it (PAN-shaped
   values keep their first six and last four, anything else becomes ``*``);
3. every clear value the exchange handled (values sent for tokenization, detokenized values, decrypted
   values of three characters or more), in its plain, URL-, JSON- and XML-escaped spellings, is masked wherever
   it appears, in the request *and* in the response (a target that echoes the card number);
4. :func:`vaultcore.cards.masking.redact_text`, the platform's free-text scrubber (Luhn-valid PANs, tracks,
   long hex runs, secret-named keys, Authorization values), as the last safety net.

Authorization headers (the incoming one, the one sent to the target, the passthrough header) are always
``[REDACTED]``. Masking fails closed: a body whose masks cannot be applied (it does not parse, a regex times
out) is stored as a placeholder, never in clear. Bodies over 256 KiB are not stored (only their size), and the
masked text is cut at 32 KiB. Items expire after ``PROXY_LOG_RETENTION_DAYS`` (default 30); expired items are
filtered on read, since DynamoDB deletes them lazily.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import secrets
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus, urlencode

from vaultcore import clock
from vaultcore.cards.masking import REDACTED, apply_pattern, redact_text
from vaultcore.errors import ValidationError
from vaultcore.logs import get_logger
from vaultcore.proxy.transform import xml_escape
from vaultcore.settings import settings
from vaultcore.store.aws import dynamodb
from vaultcore.store.ddb import aws_errors
from vaultcore.store.spread import merged_query, owns_partition, partitions

if TYPE_CHECKING:
    from vaultcore.proxy.config import MaskSpec
    from vaultcore.proxy.transform import CompiledPath, Message

__all__ = [
    "RETENTION_ENV",
    "DEFAULT_RETENTION_DAYS",
    "MAX_MASKED_BODY",
    "MAX_LOGGED_BODY",
    "Scrubber",
    "clear_mask",
    "masked_view",
    "rescrub",
    "new_log_id",
    "record",
    "list_logs",
]

RETENTION_ENV = "PROXY_LOG_RETENTION_DAYS"
DEFAULT_RETENTION_DAYS = 30
MAX_MASKED_BODY = 256 * 1024
MAX_LOGGED_BODY = 32 * 1024
MAX_PAGE = 100
_MIN_SCRUB_LENGTH = 3
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization"})
_SECRET_HEADERS = frozenset({"cookie", "set-cookie", "x-api-key"})
_log = get_logger("proxy.logs")


def retention_seconds() -> int:
    """Read at call time (never at import). Bounded to 1..400 days; anything else falls back to the default."""
    try:
        days = int(os.environ.get(RETENTION_ENV, DEFAULT_RETENTION_DAYS))
    except ValueError:
        days = DEFAULT_RETENTION_DAYS
    if not 1 <= days <= 400:
        days = DEFAULT_RETENTION_DAYS
    return days * 86400


# ---------------------------------------------------------------------------------------------------- masking

_PAN_SHAPED = re.compile(r"^[0-9]{13,19}$")


def clear_mask(value: str) -> str:
    """The mask of a place that received clear data and that no configured mask names."""
    compact = value.replace(" ", "").replace("-", "")
    if _PAN_SHAPED.match(compact):
        return apply_pattern(value, "allButFirstSixLastFour")
    return apply_pattern(value, "all")


class Scrubber:
    """Masks every occurrence (as a whole token) of the exchange's clear values in a text (layer 3).

    Plain ``str.find`` over each spelling, longest first: no pattern to compile per exchange (the values differ
    on every call) and linear in the text.
    """

    def __init__(self, values: Iterable[str]) -> None:
        spellings: set[str] = set()
        for value in values:
            if not isinstance(value, str) or len(value) < _MIN_SCRUB_LENGTH:
                continue
            for variant in (value, quote_plus(value), quote(value, safe=""), json.dumps(value)[1:-1],
                            xml_escape(value)):
                if len(variant) >= _MIN_SCRUB_LENGTH:
                    spellings.add(variant)
        self._spellings = sorted(spellings, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for spelling in self._spellings:
            if spelling in text:
                text = _replace_tokens(text, spelling)
        return text


def _is_word(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def _replace_tokens(text: str, spelling: str) -> str:
    """Replace ``spelling`` where it stands alone (no ASCII letter or digit on either side)."""
    out: list[str] = []
    pos, size, end = 0, len(spelling), len(text)
    masked = clear_mask(spelling)
    while True:
        i = text.find(spelling, pos)
        if i < 0:
            break
        j = i + size
        if (i > 0 and _is_word(text[i - 1])) or (j < end and _is_word(text[j])):
            out.append(text[pos:i + 1])
            pos = i + 1
            continue
        out.append(text[pos:i])
        out.append(masked)
        pos = j
    out.append(text[pos:])
    return "".join(out)


# Characters that may belong to a card number, a track, a key or a token. A cut inside a run of them could leave
# a fragment too short for the scrubbers to recognise (12 digits of a PAN, 31 hex digits of a key).
_DATA_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=^%?;/_+.- ")
_MAX_BACKTRACK = 256


def _safe_cut(text: str, limit: int) -> str:
    """``text[:limit]``, shortened back to just after the last character that cannot be part of card data (at
    most 256 characters back; past that, 256 characters are dropped so no fragment of a run survives)."""
    cut = text[:limit]
    for back in range(1, min(_MAX_BACKTRACK, len(cut)) + 1):
        if cut[-back] not in _DATA_CHARS:
            return cut[: len(cut) - back + 1]
    return cut[: max(0, len(cut) - _MAX_BACKTRACK)]


def _final(text: str, scrub: Scrubber) -> str:
    return redact_text(scrub(text))


def _pattern_masker(pattern: str) -> Callable[[str], str]:
    return lambda value: apply_pattern(value, pattern)


def masked_view(message: Message, *, masks: Iterable[MaskSpec], clear_paths: Iterable[CompiledPath],
                scrub: Scrubber, redact_headers: Iterable[str] = (), status: int | None = None,
                url: str | None = None, method: str | None = None) -> dict[str, Any]:
    """The masked, storable view of a request (``url``/``method``) or a response (``status``).

    Mutates ``message`` (callers pass a message they are done with). Never raises: a body that cannot be masked
    is replaced by a placeholder, and the headers and query values the masks address are ``[REDACTED]``
    (fail closed: the masks after the failing one did not run). When masking ran out of time (a regex over its
    limit, or the request's budget for pattern work spent: 8109) the view says so in ``maskError``; the caller
    decides whether the exchange goes on (:mod:`vaultcore.proxy.service`: a request is not forwarded).
    """
    from vaultcore.proxy import errors as E
    from vaultcore.proxy.transform import mask_message

    mask_list = list(masks)
    configured = {(m.path.source, m.path.type, m.path.path) for m in mask_list}
    plan: list[tuple[CompiledPath, Callable[[str], str]]] = [
        (p, clear_mask) for p in clear_paths if (p.source, p.type, p.path) not in configured]
    plan.extend((m.path, _pattern_masker(m.pattern)) for m in mask_list)

    view: dict[str, Any] = {}
    if method is not None:
        view["method"] = method
    if status is not None:
        view["status"] = status
    size = len(message.body.to_bytes()) if message.body.kind != "none" else 0
    body_text: str | None
    if message.body.kind == "none":
        body_text = ""
    elif size > MAX_MASKED_BODY:
        body_text = None
        view["bodyOmitted"] = f"body of {size} bytes is over the {MAX_MASKED_BODY // 1024} KiB logging limit"
    else:
        body_text = None
    if "bodyOmitted" in view:  # not stored: its masks would be pattern work for nothing
        plan = [(p, masker) for p, masker in plan if p.source != "body"]
    try:
        mask_message(message, plan)
        if body_text is None and "bodyOmitted" not in view:
            body_text = message.body.to_bytes().decode("utf-8", "replace")
    except Exception as exc:  # noqa: BLE001 - fail closed: whatever went wrong, the body is not stored
        if isinstance(exc, E.ProxyError) and exc.code == E.REGEX_TIMEOUT:
            view["bodyOmitted"] = "the configured masks ran out of time on this body (8109): not stored"
            view["maskError"] = {"code": exc.code, "message": exc.message}
        else:
            view["bodyOmitted"] = "the configured masks could not be applied to this body"
        body_text = None
        _fail_closed(message, plan)
        _log.info("proxy log body omitted", extra={"reason": type(exc).__name__})
    headers: dict[str, str] = {}
    redact = {h.lower() for h in redact_headers} | _AUTH_HEADERS
    for name, value in message.headers.items():  # a repeated header: its values joined by ", " (RFC 9110 5.3)
        shown = REDACTED if name in redact or name in _SECRET_HEADERS else _final(value, scrub)
        headers[name] = f"{headers[name]}, {shown}" if name in headers else shown
    view["headers"] = headers
    if url is not None:
        # The target URL without the query, then the (masked) query: "*" and "[]" stay readable.
        query = urlencode(message.query, safe="*[]") if message.query else ""
        full = url + (("&" if "?" in url else "?") + query if query else "")
        view["url"] = _final(full, scrub)
    if body_text is not None:
        # Cut before the text scrubbers (they cost ~0.3 ms per KB and the rest is not stored), at a point that
        # cannot split a card number, a track or a key (see _safe_cut).
        if len(body_text) > MAX_LOGGED_BODY:
            body_text = _safe_cut(body_text, MAX_LOGGED_BODY)
            view["bodyTruncated"] = True
        try:
            view["body"] = _final(body_text, scrub)
        except Exception:  # noqa: BLE001 - same rule: never store what could not be masked
            view.pop("bodyTruncated", None)
            view["bodyOmitted"] = "the body could not be masked"
    view["bodyBytes"] = size
    return view


def rescrub(view: dict[str, Any], scrub: Scrubber) -> None:
    """Apply layer 3 again, with clear values learned after ``view`` was built (the request's view is built before
    forwarding; a response action may handle clear data later)."""
    for key in ("url", "body"):
        if isinstance(view.get(key), str):
            view[key] = scrub(view[key])
    headers = view.get("headers")
    if isinstance(headers, dict):
        for name, value in headers.items():
            if isinstance(value, str) and value != REDACTED:
                headers[name] = scrub(value)


def _fail_closed(message: Message, plan: list[tuple[CompiledPath, Callable[[str], str]]]) -> None:
    """After a mask failed part way: every header a mask names and, when a mask addresses the query string
    (a query key, or body paths on a request without a body), every query value become ``[REDACTED]``."""
    names = {p.key for p, _masker in plan if p.source == "header" and p.key}
    for index, (name, _value) in enumerate(message.headers.items()):
        if name in names:
            message.headers.set_at(index, REDACTED)
    if any(p.source == "query" or (p.source == "body" and message.body.kind == "none") for p, _masker in plan):
        message.query[:] = [(name, REDACTED) for name, _value in message.query]


# ---------------------------------------------------------------------------------------------------- storage


def new_log_id(now_ms: int) -> str:
    """Sortable by time (13-digit milliseconds), unique by 8 random hex digits."""
    return f"{now_ms:013d}-{secrets.token_hex(4)}"


def record(entry: dict[str, Any]) -> None:
    """Log one exchange; ``entry`` (already masked) carries partnerId and logId.

    No AWS call on the request path: the item leaves as one structured line on stdout and a CloudWatch Logs
    subscription stores it in the ProxyLogs table (:mod:`vaultcore.proxy.log_shipping`). A failure is logged
    and swallowed: the target has already answered and the caller must get that answer.
    """
    from vaultcore.proxy.log_shipping import emit

    item = dict(entry)
    item["expiresAt"] = int(clock.now()) + retention_seconds()
    try:
        emit(item)
    except Exception as exc:  # noqa: BLE001 - see docstring
        _log.warning("proxy log not written", extra={"reason": type(exc).__name__,
                                                      "config_ref": entry.get("configReferenceID")})


def _encode_token(key: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, separators=(",", ":")).encode()).decode().rstrip("=")


def _decode_token(token: str, partner_id: str) -> tuple[str, str]:
    """The cursor ``(logId, partition value)`` of a token; tokens of the unsharded version (the legacy
    partition's value) are accepted as they are."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        key = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ValidationError("nextToken is not valid.", code=400) from None
    if (not isinstance(key, dict) or set(key) != {"partnerId", "logId"}
            or not owns_partition(partner_id, key["partnerId"]) or not isinstance(key["logId"], str)):
        raise ValidationError("nextToken is not valid.", code=400)
    return key["logId"], key["partnerId"]


def list_logs(partner_id: str, *, config_ref: str | None = None, limit: int = 25,
              next_token: str | None = None) -> dict[str, Any]:
    """A page of the partner's exchanges, newest first; ``nextToken`` when more may follow.

    The entries are spread over ``PROXY_LOG_SHARDS`` partitions (:mod:`vaultcore.proxy.log_shipping` writes
    them); this reads the legacy partition (entries stored before the spread) and every shard, merged newest
    first, and answers each entry with its partner's id as ``partnerId``, as before.
    """
    if not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise ValidationError(f"limit must be an integer from 1 to {MAX_PAGE}.", code=400)
    cursor = _decode_token(next_token, partner_id) if next_token else None
    names = {"#e": "expiresAt"}
    values: dict[str, Any] = {":now": int(clock.now())}
    filters = "#e > :now"
    if config_ref:
        names["#c"] = "configReferenceID"
        values[":c"] = config_ref
        filters += " AND #c = :c"
    partition_values = partitions(partner_id, settings().proxy_log_shards)
    with aws_errors("proxy log query"):
        items, next_cursor = merged_query(
            dynamodb().query, table=settings().proxy_logs_table, partition_attr="partnerId", sort_attr="logId",
            partition_values=partition_values, limit=limit, cursor=cursor, filter_expression=filters,
            names=names, values=values, max_queries=len(partition_values) + 20)
    logs: list[dict[str, Any]] = []
    for item in items:
        item.pop("expiresAt", None)
        item["partnerId"] = partner_id  # the stored value carries the shard
        logs.append(item)
    result: dict[str, Any] = {"logs": logs}
    if next_cursor is not None:
        result["nextToken"] = _encode_token({"partnerId": next_cursor[1], "logId": next_cursor[0]})
    return result
