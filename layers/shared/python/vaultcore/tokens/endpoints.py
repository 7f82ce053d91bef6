"""The rest of the tokenization API of the secure API (issue 21), served by TokenizeFunction with tokenize.

Every route but the health checks authenticates like tokenize (HMAC, Basic for key-security partners; the
uniform 1003). Bodies are JSON objects with an optional ``reference`` (echoed).

* ``POST /api/tokenization/detokenize`` ``{reference?, bfid, values: [{name, value}]}`` → the clear values,
  matched by name. Allowed when the partner holds the ``detokenize`` permission (management API; off by
  default: 3040) and the latest version of the bfid's template has ``accessMode: detokenize`` (3041); then the
  service's checks (3010, 3017 deleted, 3002, 3012 irreversible, 3013, 3003/3004, 3015 not issued under the
  bfid), then the tokenization's use policy (:mod:`vaultcore.tokens.policy`: a CVV's token 3046, an iFrame
  capture 3045). An audit record (partner, bfid, field names, time, source IP; never a value) is written before the
  values are answered: no record, no values.
* ``POST /api/tokenization/read`` ``{reference?, bfid}`` → the tokens kept for ``read`` (tokenize with
  ``?omit=1``/``?omit=2``), once per bfid (3018 after), within the one-hour read window (3011); never a CVV's
  token (issue 27). With an
  ``Idempotency-Key`` header (1 to 255 printable ASCII characters, 3023) the read is that key's: a retry with the
  same key (a lost answer, a 500 after the claim) gets the same tokens again within the window; any other reader
  still gets 3018 (issue 28). The key is kept only as a hash, in the Tokens item, which expires with the window.
* ``POST /api/tokenization/delete`` ``{reference?, bfid}`` → ``{bfid, values, deleted: true}``: "query and
  delete", as the original answers it: ``values`` are the tokens still kept for ``read`` under the bfid (none
  otherwise); idempotent. Afterwards nothing under the bfid detokenizes or reads (3017), anywhere.
* ``POST /api/tokenization/batch/tokenize`` and ``/batch/detokenize`` take two forms on one path. The original's
  ``{reference?, templateRef, batches: [{reference?, values}]}`` (detokenize: ``batches: [{reference?, bfid,
  values}]``) answers ``{messageId, reference?, batches: [{reference?, bfid, values}]}``, or the error of its first
  failed entry with ``itemIndex`` and ``itemReference`` (the original's ErrorResponse). Ours, ``{reference?, items:
  [...]}`` (each item its own ``templateRef``), answers ``{success, messageId, succeeded, failed, items}``, one
  entry per item in order, each ``{itemIndex, itemReference, ...}`` with its result or its
  ``errCode``/``errMessage``: items succeed or fail on their own. ``batches`` wins when a body sends both. 1 to
  :data:`MAX_BATCH_ITEMS` entries (3042). Work is bounded: entries are processed within
  :data:`BATCH_BUDGET_SECONDS` of work (the proxy's WorkBudget, :mod:`vaultcore.net.deadline`); those left when it
  runs out answer 3044 (send them again). Batch tokenize keeps tokens for ``read`` only with ``omit`` (as
  ``tokenize``).
* ``POST /api/tokenization/batch/read`` and ``/batch/delete`` ``{reference?, batches: [{reference?, bfid}]}`` →
  ``{messageId, reference?, batches: [{reference?, bfid, values}]}``: ``read`` and ``delete`` of each entry; an
  entry that fails carries ``itemIndex``, ``errCode``, ``errMessage`` and no ``values`` (the others' reads and
  deletions are done for good, so they are answered).
* Every batch entry goes through the same tokens-service function as the single call, so the use policy
  (:mod:`vaultcore.tokens.policy`) applies to each as to one call.
* ``POST /api/template/validate`` ``{reference?, templateRef}`` → 200 only for a template the partner can use
  (built-in included), with its field names, ``accessMode`` and whether this partner may detokenize under it;
  an unknown template (another partner's, a ref in another case) is the error 3001, as the original answers.
* ``GET /api/healthcheck/tokenize?templateRef=&fieldNames=a|b&fieldValues=x|y&reference=`` and
  ``/detokenize?bfid=&fieldNames=&fieldValues=``: the original's health checks, authenticated (Basic for
  key-security partners), really tokenizing (nothing kept) or detokenizing (as ``detokenize``: permission,
  accessMode, policy, audit) through the tokens service. Without ``templateRef``/``bfid``: no credentials; a
  synthetic value round-trips through the token engine under a random key of the container (no partner key,
  nothing stored) and the Tokens table answers one read; the answer is ``{success: true, messageId, status:
  "ok"}`` and reveals nothing else.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from typing import Any

from vaultcore.api.http import Request, Response
from vaultcore.api.secure import MAX_REFERENCE_LENGTH, json_object_body, reference_of, success
from vaultcore.auth.authenticator import authenticate_header
from vaultcore.errors import VaultError
from vaultcore.logs import get_logger
from vaultcore.net import deadline
from vaultcore.store import audit
from vaultcore.store import tokens as token_store
from vaultcore.tokens import service
from vaultcore.tokens.errors import (
    BATCH_BUDGET,
    BATCH_ITEM_INVALID,
    BATCH_ITEMS,
    BFID_DELETED,
    DETOKENIZE_NOT_PERMITTED,
    IDEMPOTENCY_KEY_INVALID,
    TEMPLATE_REF_MISSING,
    VALUES_ENTRY,
    VALUES_MISSING,
    TokenPermissionDenied,
    TokenServiceError,
)
from vaultcore.tokens.values import body_values, omit_mode

__all__ = ["detokenize_endpoint", "read_endpoint", "delete_endpoint", "batch_tokenize_endpoint",
           "batch_detokenize_endpoint", "batch_read_endpoint", "batch_delete_endpoint", "template_validate_endpoint",
           "healthcheck_endpoint", "MAX_BATCH_ITEMS", "BATCH_BUDGET_SECONDS"]

#: Items per batch request (a batch of 1,000 card numbers is about 110 KB, under the 256 KiB body limit).
MAX_BATCH_ITEMS = 1000
#: Work per batch request (CPU spent on its items, not the waits for DynamoDB), like the proxy's pattern budget.
BATCH_BUDGET_SECONDS = 5.0
_log = get_logger("tokens.api")


def _bfid_of(body: dict[str, Any]) -> str:
    bfid = body.get("bfid")
    if not isinstance(bfid, str):
        raise service._invalid_bfid()  # the same 3010 as any bfid that does not verify
    return bfid


def _require_permission(caller: Any) -> None:
    if not caller.partner.may_detokenize:
        raise TokenPermissionDenied("This partner does not hold the detokenize permission.",
                                    code=DETOKENIZE_NOT_PERMITTED)


def _values_out(names: list[str], values: list[str]) -> list[dict[str, str]]:
    return [{"name": n, "value": v} for n, v in zip(names, values, strict=True)]


# ------------------------------------------------------------------------------------------- single calls


def detokenize_endpoint(request: Request) -> Response:
    caller = authenticate_header(request)
    return _detokenize(request, caller, json_object_body(request))


def _detokenize(request: Request, caller: Any, body: dict[str, Any]) -> Response:
    """``detokenize`` of ``body``: the permission, the bfid, its template's accessMode, the service's checks and
    the use policy, then the audit record before any value is answered (also the detokenize health check's)."""
    reference = reference_of(body)
    _require_permission(caller)
    bfid = _bfid_of(body)
    pairs = body_values(body.get("values"), required=True)
    verified = service.verify_bfid(caller.partner_id, bfid)
    service.check_access_mode(caller.partner_id, verified[2])
    clear = service.detokenize_verified(caller.partner_id, verified, pairs)
    names = [n for n, _ in pairs]
    audit.write_records(caller.partner_id, [(bfid, sorted(set(names)))], operation="detokenize",
                        source_ip=request.source_ip, request_id=request.request_id)
    return success({"bfid": bfid, "values": _values_out(names, clear)}, reference)


_IDEMPOTENCY_KEY = re.compile(r"[\x20-\x7e]{1,255}")


def _read_id(partner_id: str, key: str | None) -> str:
    """Who reads (the claim's ``partner_read_by``): the partner's ``Idempotency-Key`` as a hash (``k:`` + 64 hex;
    the key itself is never stored), so the same key recovers its read; without a key, this request alone."""
    if key is None:
        return secrets.token_hex(16)
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        raise TokenServiceError("The Idempotency-Key header must be 1 to 255 printable ASCII characters.",
                                code=IDEMPOTENCY_KEY_INVALID)
    digest = hashlib.sha256(b"tokenization-read\x00" + partner_id.encode("utf-8") + b"\x00" + key.encode("ascii"))
    return "k:" + digest.hexdigest()


def read_endpoint(request: Request) -> Response:
    caller = authenticate_header(request)
    body = json_object_body(request)
    reference = reference_of(body)
    read_id = _read_id(caller.partner_id, request.header("idempotency-key"))
    bfid = _bfid_of(body)
    tokens = service.read_tokens_once(caller.partner_id, bfid, read_id)
    return success({"bfid": bfid, "values": [{"name": n, "value": t} for n, t in tokens.items()]}, reference)


def delete_endpoint(request: Request) -> Response:
    caller = authenticate_header(request)
    body = json_object_body(request)
    reference = reference_of(body)
    bfid = _bfid_of(body)
    tokens = service.delete_bfid(caller.partner_id, bfid)
    return success({"bfid": bfid, "values": [{"name": n, "value": t} for n, t in tokens.items()], "deleted": True},
                   reference)


def template_validate_endpoint(request: Request) -> Response:
    caller = authenticate_header(request)
    body = json_object_body(request)
    reference = reference_of(body)
    ref = body.get("templateRef")
    if not isinstance(ref, str) or not ref:
        raise TokenServiceError("templateRef is required.", code=TEMPLATE_REF_MISSING)
    # The original's answer: 200 only for a template the partner can use; anything else is an error (3001,
    # "Invalid data"), so a client that checks the status never takes an unknown template for a valid one.
    stored = service.stored_template(caller.partner_id, ref)
    template = stored.template
    return success({"templateRef": stored.template_ref, "exists": True, "active": True, "usable": True,
                    "version": stored.version, "builtin": stored.builtin, "accessMode": template.access_mode,
                    "fields": [f.name for f in template.fields],
                    "detokenize": template.detokenizable and caller.partner.may_detokenize}, reference)


# ----------------------------------------------------------------------------------------------- batches


def _entries_of(body: dict[str, Any]) -> tuple[list[Any], bool]:
    """The batch's entries and whether they came in the original's ``batches`` form (which wins when a body sends
    both members) rather than our ``items``; 3042 unless 1 to :data:`MAX_BATCH_ITEMS` of them."""
    original = "batches" in body
    entries = body.get("batches" if original else "items")
    if not isinstance(entries, list) or not entries or len(entries) > MAX_BATCH_ITEMS:
        raise TokenServiceError(f"batches (or items) must be an array of 1 to {MAX_BATCH_ITEMS} entries.",
                                code=BATCH_ITEMS)
    return entries, original


def _item_reference(item: Any) -> str | None:
    """The item's reference (None when absent); 3043 when the item is not an object or its reference invalid."""
    if not isinstance(item, dict):
        raise TokenServiceError("The item must be an object.", code=BATCH_ITEM_INVALID)
    ref = item.get("reference")
    if ref is not None and (not isinstance(ref, str) or len(ref) > MAX_REFERENCE_LENGTH):
        raise TokenServiceError(f"The item's reference must be a string of at most {MAX_REFERENCE_LENGTH} "
                                "characters.", code=BATCH_ITEM_INVALID)
    return ref


def _loose_reference(item: Any) -> str | None:
    """The item's reference for an error entry: only a valid one is echoed."""
    ref = item.get("reference") if isinstance(item, dict) else None
    return ref if isinstance(ref, str) and len(ref) <= MAX_REFERENCE_LENGTH else None


def _item_error(index: int, reference: str | None, exc: VaultError) -> dict[str, Any]:
    return {"itemIndex": index, "itemReference": reference, "errCode": exc.code, "errMessage": exc.message}


def _out_of_budget() -> TokenServiceError:
    return TokenServiceError("Not processed: the request's work budget ran out; send the item again.",
                             code=BATCH_BUDGET)


def _batch_answer(items: list[dict[str, Any]], reference: str | None) -> Response:
    failed = sum(1 for it in items if "errCode" in it)
    return success({"succeeded": len(items) - failed, "failed": failed, "items": items}, reference)


def _fail_whole(results: list[dict[str, Any]], errors: dict[int, VaultError]) -> None:
    """The original's form: a batch answers all its items or the error of its first failed one, which names the
    item (``itemIndex``, ``itemReference``: the original's ErrorResponse) and keeps its status."""
    if errors:
        index = min(errors)
        exc = errors[index]
        exc.item_index = index  # type: ignore[attr-defined]  # read by vaultcore.api.responses
        exc.item_reference = results[index].get("itemReference")  # type: ignore[attr-defined]
        raise exc


def _original_entry(entry: dict[str, Any]) -> dict[str, Any]:
    """An item of the original's answer: ``{reference?, bfid, values}`` (no reference when the item sent none)."""
    out = {"reference": entry["itemReference"]} if entry.get("itemReference") is not None else {}
    return {**out, **{k: v for k, v in entry.items() if k not in ("itemIndex", "itemReference")}}


def batch_tokenize_endpoint(request: Request) -> Response:
    """Both forms tokenize each entry with :func:`vaultcore.tokens.service.tokenize_values`, as ``tokenize`` does
    (its checks and the use policy: a CVV is refused). An entry's ``templateRef`` wins over the body's. ``omit``
    (query or body, as for ``tokenize``): 1 keeps each entry's tokens for ``read`` and leaves them out of the
    answer, 2 keeps and answers them; without it nothing is stored."""

    caller = authenticate_header(request)
    body = json_object_body(request)
    reference = reference_of(body)
    omit = omit_mode(request, body)
    entries, original = _entries_of(body)
    default_ref = body.get("templateRef")
    results: list[dict[str, Any]] = []
    errors: dict[int, VaultError] = {}
    budget = deadline.WorkBudget(BATCH_BUDGET_SECONDS)
    tokenized = 0
    for index, item in enumerate(entries):
        ref = _loose_reference(item)
        try:
            if budget.exhausted:
                raise _out_of_budget()
            with budget.metered():
                ref = _item_reference(item)
                pairs = body_values(item.get("values"), required=True)
                result = service.tokenize_values(caller.partner_id, item.get("templateRef", default_ref), pairs,
                                                 store=omit != 0, readable=omit != 0, log=False)
        except VaultError as exc:
            if exc.status >= 500:
                raise
            errors[index] = exc
            results.append(_item_error(index, ref, exc))
            if original:
                break  # the whole batch fails: the items after it are not tokenized
            continue
        tokenized += len(result.values)
        entry: dict[str, Any] = {"itemIndex": index, "itemReference": ref, "bfid": result.bfid}
        if omit != 1:
            entry["values"] = [{"name": n, "value": t} for n, t in result.values.items()]
        results.append(entry)
    _log.info("batch tokenized", extra={"partner_id": caller.partner_id, "count": tokenized, "items": len(entries),
                                        "event": "batch_tokenize"})
    from vaultcore import metrics

    metrics.values_tokenized(tokenized)
    if original:
        _fail_whole(results, errors)
        return success({"batches": [_original_entry(e) for e in results]}, reference)
    return _batch_answer(results, reference)


def batch_detokenize_endpoint(request: Request) -> Response:
    """Each entry through :func:`vaultcore.tokens.service.verify_bfid` and
    :func:`~vaultcore.tokens.service.detokenize_verified`, as ``detokenize`` (the use policy: a bound capture or a
    CVV is refused). In the original's form any failed entry fails the request before a value is answered."""
    caller = authenticate_header(request)
    body = json_object_body(request)
    reference = reference_of(body)
    _require_permission(caller)
    entries, original = _entries_of(body)
    budget = deadline.WorkBudget(BATCH_BUDGET_SECONDS)
    results: list[dict[str, Any]] = [{} for _ in entries]
    errors: dict[int, VaultError] = {}

    def fail(index: int, ref: str | None, exc: VaultError) -> None:
        errors[index] = exc
        results[index] = _item_error(index, ref, exc)

    pending: list[tuple[int, str | None, str, Any, list[tuple[str, str]]]] = []
    # 1. every item checked and its bfid verified (no AWS call: keys and templates are cached)
    for index, item in enumerate(entries):
        ref = _loose_reference(item)
        try:
            if budget.exhausted:
                raise _out_of_budget()
            with budget.metered():
                ref = _item_reference(item)
                bfid = _bfid_of(item)
                pairs = body_values(item.get("values"), required=True)
                verified = service.verify_bfid(caller.partner_id, bfid, revocation=False)
                service.check_access_mode(caller.partner_id, verified[2])
        except VaultError as exc:
            if exc.status >= 500:
                raise
            fail(index, ref, exc)
            continue
        pending.append((index, ref, bfid, verified, pairs))
    if original and errors:
        _fail_whole(results, errors)
    # 2. the scope records of all of them at once (BatchGetItem, 100 a call): deleted, and bound (issue 27)
    deleted, owners = service.scope_owners({v[0].scope for _, _, _, v, _ in pending})
    # 3. detokenize each (budgeted), then one audit record per item before any value is answered
    entries_audited: list[tuple[str, list[str]]] = []
    count = 0
    for index, ref, bfid, verified, pairs in pending:
        try:
            if verified[0].scope in deleted:
                raise TokenServiceError("The bfid was deleted.", code=BFID_DELETED)
            if budget.exhausted:
                raise _out_of_budget()
            with budget.metered():
                clear = service.detokenize_verified(caller.partner_id, verified, pairs, revocation=False, log=False,
                                                    owner=owners.get(verified[0].scope))
        except VaultError as exc:
            if exc.status >= 500:
                raise
            fail(index, ref, exc)
            continue
        names = [n for n, _ in pairs]
        count += len(clear)
        entries_audited.append((bfid, sorted(set(names))))
        results[index] = {"itemIndex": index, "itemReference": ref, "bfid": bfid, "values": _values_out(names, clear)}
    if original:
        _fail_whole(results, errors)  # before the audit write: a failed request answers no value
    audit.write_records(caller.partner_id, entries_audited, operation="batch/detokenize",
                        source_ip=request.source_ip, request_id=request.request_id)
    _log.info("batch detokenized", extra={"partner_id": caller.partner_id, "count": count, "items": len(entries),
                                          "event": "batch_detokenize"})
    from vaultcore import metrics

    metrics.values_detokenized(count)
    if original:
        return success({"batches": [_original_entry(e) for e in results]}, reference)
    return _batch_answer(results, reference)


def _bfid_batch(request: Request, act_for: Callable[[Any], Callable[[str], dict[str, str]]]) -> Response:
    """``batch/read`` and ``batch/delete``: the original's ``{reference?, batches: [{reference?, bfid}]}``, each
    entry through ``act_for(caller)(bfid)`` (the tokens service's read or delete). Their effects are for good (a
    read is once per bfid, a deletion cannot be undone), so an entry's failure does not hide the others'
    results: a failed entry carries ``itemIndex``, ``errCode`` and ``errMessage`` instead of ``values``."""
    caller = authenticate_header(request)
    body = json_object_body(request)
    reference = reference_of(body)
    act = act_for(caller)
    entries = body.get("batches")
    if not isinstance(entries, list) or not entries or len(entries) > MAX_BATCH_ITEMS:
        raise TokenServiceError(f"batches must be an array of 1 to {MAX_BATCH_ITEMS} entries.", code=BATCH_ITEMS)
    budget = deadline.WorkBudget(BATCH_BUDGET_SECONDS)
    out: list[dict[str, Any]] = []
    for index, item in enumerate(entries):
        ref = _loose_reference(item)
        head = {"reference": ref} if ref is not None else {}
        try:
            if budget.exhausted:
                raise _out_of_budget()
            with budget.metered():
                ref = _item_reference(item)
                bfid = _bfid_of(item)
                tokens = act(bfid)
        except VaultError as exc:
            if exc.status >= 500:
                raise
            # no bfid echoed: the entry's may be anything but a bfid (an error never echoes what it refused)
            out.append({**head, "itemIndex": index, "errCode": exc.code, "errMessage": exc.message})
            continue
        out.append({**head, "bfid": bfid, "values": [{"name": n, "value": t} for n, t in tokens.items()]})
    return success({"batches": out}, reference)


def batch_read_endpoint(request: Request) -> Response:
    """``read`` of each entry; one ``Idempotency-Key`` (3023 for the request) covers them all, as for ``read``."""
    def reader(caller: Any) -> Callable[[str], dict[str, str]]:
        read_id = _read_id(caller.partner_id, request.header("idempotency-key"))
        return lambda bfid: service.read_tokens_once(caller.partner_id, bfid, read_id)

    return _bfid_batch(request, reader)


def batch_delete_endpoint(request: Request) -> Response:
    """``delete`` of each entry, answering the tokens it could still read (:func:`service.delete_bfid`)."""
    return _bfid_batch(request, lambda caller: lambda bfid: service.delete_bfid(caller.partner_id, bfid))


# ------------------------------------------------------------------------------------------ health checks

_HEALTH_KEY = secrets.token_bytes(32)  # a random key of the container: no partner key is ever touched
_HEALTH_VALUE = "4111111111111111"  # a public test card number, never a customer's


def _query_values(request: Request) -> list[dict[str, str]]:
    """The health checks' ``fieldNames`` and ``fieldValues`` (``|``-separated, matched by position) as a body's
    ``values``: 3020 when missing, 3021 when their counts differ."""
    names, values = request.query.get("fieldNames"), request.query.get("fieldValues")
    if not names or values is None:
        raise TokenServiceError("fieldNames and fieldValues are required.", code=VALUES_MISSING)
    split_names, split_values = names.split("|"), values.split("|")
    if len(split_names) != len(split_values):
        raise TokenServiceError("fieldNames and fieldValues must have as many |-separated entries.",
                                code=VALUES_ENTRY)
    return [{"name": n, "value": v} for n, v in zip(split_names, split_values, strict=True)]


def _query_body(request: Request, *members: str) -> dict[str, Any]:
    body: dict[str, Any] = {m: request.query[m] for m in (*members, "reference") if m in request.query}
    body["values"] = _query_values(request)
    return body


def healthcheck_endpoint(request: Request) -> Response:
    """The original's health checks: with ``templateRef`` (tokenize) or ``bfid`` (detokenize) and the
    ``fieldNames``/``fieldValues`` query parameters, an authenticated call that really tokenizes (nothing kept)
    or detokenizes (``detokenize``'s permission, accessMode, use policy and audit record) through the tokens
    service, answering as ``tokenize``/``detokenize``. Without them, our credential-free probe
    (:func:`_synthetic_health`)."""
    detokenize = request.resource.endswith("/detokenize")
    if ("bfid" if detokenize else "templateRef") not in request.query:
        return _synthetic_health()
    caller = authenticate_header(request)
    if detokenize:
        return _detokenize(request, caller, _query_body(request, "bfid"))
    body = _query_body(request, "templateRef")
    reference = reference_of(body)
    pairs = body_values(body["values"], required=True)
    result = service.tokenize_values(caller.partner_id, body["templateRef"], pairs, store=False)
    return success({"bfid": result.bfid, "values": [{"name": n, "value": t} for n, t in result.values.items()]},
                   reference)


def _synthetic_health() -> Response:
    """A synthetic card number tokenized and detokenized by the engine under :data:`_HEALTH_KEY` and a random
    scope, and one read of the Tokens table (the revocation lookup of a key no bfid has). Any failure is the
    internal error (errCode 1, HTTP 500); the success reveals nothing but ``status: ok``."""
    from vaultcore.tokens.engine import detokenize_value, tokenize_value
    from vaultcore.tokens.templates import GATEWAY_TEMPLATE

    field = GATEWAY_TEMPLATE.get_field("vault_token_card_number")
    scope = secrets.token_urlsafe(24)
    token = tokenize_value(_HEALTH_KEY, scope, field, _HEALTH_VALUE)
    if detokenize_value(_HEALTH_KEY, scope, field, token) != _HEALTH_VALUE:
        raise VaultError("Internal error: the token engine failed its round trip.")
    token_store.is_revoked("healthcheck")
    return success({"status": "ok"}, None)
