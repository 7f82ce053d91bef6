"""POST /api/qsapi/3.8: SALE, AUTHORIZATION and CAPTURE for cards and ACH, token payments, auto-tokenization.

The flow of one request (each step raises :class:`GatewayError`, mapped once by :mod:`vaultcore.api.responses`):

1. parse the form-urlencoded or JSON variables; authenticate the account (``accounts.authenticate``);
2. validate every variable's form and the case's required variables (``validation.validate_request``); plain
   card and ACH data are checked for meaning here too (Luhn, expiry, ABA, level 2 tax);
3. claim the idempotency key when one is sent (``idempotency.claim``: replay, mismatch, in progress);
4. CAPTURE: one conditional UpdateItem on the authorization, then the capture's own item;
   SALE / AUTHORIZATION: resolve the payment data (token payment rules 1-4, the iframe's etoken), check it,
   auto-tokenize (rule 7), ask the sandbox processor, write the transaction;
5. write the transaction, flagged for its postback (``store.record_transaction``; the Transactions table's
   stream relay queues the postback), store the idempotent response when no transaction holds it, answer.

Exactly once under faults (issue 18). Every write of a request carries the request's identity (``writer``), so
an SDK retry of a write whose answer was lost is recognised as the same write. The transaction write has three
outcomes: written (the answer is the transaction), not written (certain, because a fence now holds the id:
"nothing was charged", the idempotency key is released), or unknown (DynamoDB cannot tell now: error 1 "outcome
unknown", HTTP 500, and the key stays held, so the retry with the same key finds the transaction, or fences the
id, once the 30-second lock has passed). A postback is queued from the Transactions stream once its transaction
is committed, whether or not the request lived on.

Token payment rules (spec, "POST {gateway_url}/api/qsapi/3.8"), where each is enforced:

1. any ``vault_token*`` or ``bfid`` -> token logic: ``validation.validate_request`` sets source ``token``;
   ``_resolve_tokens`` detokenizes and maps ``vault_token_<x>`` to ``<x>``;
2. ``bfid`` alone -> read step (``gateway_read``, one hour from data capture) then detokenize; after the
   hour the read fails and so does the transaction (error 303);
3. other token parameters -> no read step; the supplied tokens are all the token data; each must have been
   issued under the bfid (the bfid's token tags, checked by the tokenization service before FF1 runs), else 308;
4. a detokenized value wins over its plaintext twin (``_resolve_tokens`` merges plaintext first);
5. ``reissue=1`` is recorded on the transaction and sent as ``reissue`` in the postback;
6. the merchant may read and store tokens itself (reporting interface, postback) and send ``bfid`` + tokens:
   that is rule 3's path, and no bfid-only call can do it;
7. auto-tokenization (account option TOKENIZATION) tokenizes every transaction without tokens with the
   built-in ``GATEWAY`` template and stores the bfid and the token fields with it; token requests are not
   tokenized again. TOKEN PAYMENTS off refuses token requests (error 300).

``etoken`` (iframe case) is the bfid of card data tokenized for the account's partner (by the tokenized payment
iframe or the tokenization endpoint) and stored for the gateway's read step: it is read and detokenized like
a bfid-only payment (one hour window) and then stored with the transaction as its bfid. ``custom_id`` is the
merchant's reference for the iframe session (1 to 50 letters, digits, ``.``, ``_``, ``-``): stored, returned,
reported and sent in postbacks.

Use policy (issue 27): every read and detokenization goes through the tokens service with this account as the
actor (:mod:`vaultcore.tokens.policy`): a bound tokenization (an iFrame capture, an auto-tokenization) is used
only by its account (``etoken=`` 306, ``bfid=`` 303, tokens 311), an eToken once through ``etoken=`` or ``bfid=``
(309), and a CVV never as a token (310). :func:`_token_failure` is the one translation of its refusals.

Authorizations can be captured once, within ``AUTHORIZATION_LIFETIME_SECONDS`` (7 days), for at most the
authorized amount, by the same account.
"""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from decimal import Decimal
from typing import Any

from vaultcore import clock, metrics
from vaultcore.api.http import Request, Response, json_response
from vaultcore.apikeys import gateway as gateway_keys
from vaultcore.descriptors import records as descriptors  # issue 31: a SALE's dynamic descriptor
from vaultcore.errors import DependencyError, VaultError
from vaultcore.gateway import accounts, batches, idempotency, postbacks, processor, store
from vaultcore.gateway.errors import ERROR_MESSAGES, E, GatewayError
from vaultcore.gateway.records import RESPONSE_FIELDS, response_from_item
from vaultcore.gateway.validation import (
    LEVEL2_FIELDS,
    RSAPI_TOKEN_FIELDS,
    TOKEN_FIELDS,
    TOKEN_TWINS,
    GatewayRequest,
    PaymentData,
    check_payment,
    parse_variables,
    validate_request,
)
from vaultcore.logs import get_logger
from vaultcore.payments import init_ids  # issue 31: a payments/init id charged through the QSAPI
from vaultcore.wallet import gateway_hooks
from vaultcore.webhooks import outbox as webhook_outbox

__all__ = ["qsapi", "process", "response_from_item", "RESPONSE_FIELDS", "AUTHORIZATION_LIFETIME_SECONDS",
           "store_for_account"]

AUTHORIZATION_LIFETIME_SECONDS = 7 * 24 * 3600
#: Error 1 when it is certain that nothing was charged (docs/integrators/gateway.md "Idempotency": when DynamoDB fails
#: mid-charge).
NOTHING_CHARGED = "Internal error: a dependency failed and nothing was charged; retry."
GATEWAY_TEMPLATE_REF = "GATEWAY"

_CLEAR_NAMES = frozenset(TOKEN_TWINS.values())  # card_number, card_expiration, ... zip
_log = get_logger("gateway")


def _echoed(req: GatewayRequest) -> dict[str, Any]:
    """Issue 20: ``transaction_description`` and ``balance`` of the request, stored and answered as sent."""
    balance = req.get("balance")
    return {"transaction_description": req.get("transaction_description"),
            "balance_cents": None if balance is None else int(Decimal(balance) * 100)}


def _error_text(code: int) -> str | None:
    return ERROR_MESSAGES.get(code) if code else None


# --------------------------------------------------------------------------------------------- entry point
def qsapi(request: Request) -> Response:
    """The QSAPI route (wiring: ``functions/gateway/app.py``)."""
    status, body, headers = process(request.content_type, request.body, request.header("idempotency-key"))
    return json_response(status, body, headers)


def process(content_type: str, body: bytes, header_key: str | None) -> tuple[int, dict[str, Any], dict[str, str]]:
    """One QSAPI request: ``(HTTP status, transaction response, extra headers)``; failures raise GatewayError.

    Also the entry point of other front ends that translate onto the gateway (the wallet checkout API).
    Metrics (issue 14): GatewayApproved / GatewayDeclined for each recorded transaction (not for an idempotent
    replay), GatewayErrors by error code for each failure (vaultcore.metrics).
    """
    try:
        return _process(content_type, body, header_key)
    except GatewayError as exc:
        metrics.gateway_error(exc.code)
        raise
    except DependencyError as exc:
        # A dependency failed outside the record step, which raises OutcomeUnknown itself when it cannot tell:
        # nothing was charged, and error 1 says so in the words docs/integrators/gateway.md documents.
        metrics.gateway_error(E.INTERNAL)
        raise GatewayError(E.INTERNAL, NOTHING_CHARGED) from exc
    except VaultError:
        metrics.gateway_error(E.INTERNAL)
        raise
    except Exception:
        metrics.gateway_error(E.INTERNAL)
        raise


def _process(content_type: str, body: bytes, header_key: str | None) -> tuple[int, dict[str, Any], dict[str, str]]:
    now = clock.now()
    variables = parse_variables(content_type, body)
    # the account key, or an API key holding the transaction type's scope (issue 31), before any other work
    account = gateway_keys.authenticate(variables, now=now, scopes=gateway_keys.scopes_for(variables))
    req = validate_request(variables, now=now)
    key = _idempotency_key(header_key, req)
    payment: PaymentData | None = None
    if req.source in ("card", "ach"):
        payment = _plain_payment(req)
        try:
            check_payment(payment, req, now=now)
        except GatewayError as exc:
            if req.transaction_type == "STORE" and exc.code == E.CARD_LUHN:
                raise GatewayError(E.CARD_DATA_UNREADABLE) from None  # a card number that cannot be stored
            raise
    elif req.source in ("token", "iframe"):
        _check_token_access(account, req)
    elif req.source == "stored" and not account.partner_id:
        raise GatewayError(E.NO_TOKENIZATION_PARTNER)
    _check_type_allowed(account, req)

    # issue 31: a payments/init id names the transaction (its meta checked: one GetItem, only when sent)
    transaction_id = init_ids.reserved(account.account_id, req.get("transaction_id")) or processor.new_transaction_id()
    writer = uuid.uuid4().hex  # this request's identity on every conditional write it makes
    claim: idempotency.Claim | None = None
    if key is not None:
        try:
            claim = idempotency.claim(account.account_id, key,
                                      idempotency.fingerprint(req.values, accounts.access_key_of(account, variables)),
                                      transaction_id, int(now), lambda held: _is_recorded(account, held))
        except idempotency.KeyStateUnknown:
            raise OutcomeUnknown() from None  # the key may be held: the documented answer is "retry the same key"
        replay = _claim_outcome(claim, account, req)
        if replay is not None:
            return replay
    try:
        init_ids.check_unused(account.account_id, req.get("transaction_id"))  # issue 31: an init id charges once
        if req.source == "capture":
            response, item, message = _capture(account, req, transaction_id, writer, int(now))
        elif req.source == "refund":
            response, item, message = _refund(account, req, transaction_id, writer, int(now))
        elif req.source == "reversal":
            response, item, message = _reversal(account, req, transaction_id, writer, int(now))
        elif req.source == "settle":
            response, item, message = _settle_batch(account, req, transaction_id, writer, int(now))
        elif req.transaction_type == "STORE":
            response, item, payment, message = _store(account, req, payment, transaction_id, writer, now,
                                                      _etoken_reader(claim, writer))
        else:
            response, item, payment, message = _pay(account, req, payment, transaction_id, writer, now,
                                                    _etoken_reader(claim, writer))
    except OutcomeUnknown:
        raise  # something may be recorded: the key stays held until its lock passes and a retry settles it
    except BaseException:
        # Nothing was written: free the key so that a corrected retry runs again (not stored, like Stripe's
        # validation failures).
        if claim is not None:
            _quietly(idempotency.release, claim)
        raise
    metrics.gateway_outcome(bool(response.get("transaction_approved")), req.transaction_type,
                            response.get("error_code"))
    if claim is not None and _storable(response, payment) and not _answered_by_record(claim, response):
        _quietly(idempotency.complete, claim, response)
    return 200, response, {}


def _answered_by_record(claim: idempotency.Claim, response: dict[str, Any]) -> bool:
    """Whether the transaction item just written is the key's answer, so that no "complete" write is needed.

    Issue 29 (cost per operation): the claim already names the transaction id it reserved, and a keyed retry
    that finds the key held answers from that transaction once it is recorded (:func:`_recorded_by_holder`
    within the 30-second lock and, through :func:`_is_recorded`, after it), with the same
    ``response_from_item`` the direct answer is. So storing the response again in the Idempotency table (1 write
    unit per keyed request) only saves a replay one read. A takeover's claim still completes: it drops the list
    of earlier attempts the record carries, which every later replay would otherwise settle again.
    """
    return claim.state == "new" and response.get("transaction_id") == claim.transaction_id


def _etoken_reader(claim: idempotency.Claim | None, writer: str) -> str:
    """Who reads an iframe eToken (once): with an idempotency key, the key's record, so that a keyed retry after
    "outcome unknown" (a new request, its first attempt fenced) reads it again instead of finding it used (309);
    without one, this request."""
    return claim.record_id if claim is not None else writer


def _quietly(fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - best effort: the record expires on its own (30 s lock, 24 h record)
        _log.warning("idempotency record update failed", extra={"event": getattr(fn, "__name__", "")})


def _idempotency_key(header_key: str | None, req: GatewayRequest) -> str | None:
    variable = req.get("idempotency_key")
    if header_key is not None:
        if not (1 <= len(header_key) <= 255) or not all(0x20 <= ord(c) <= 0x7E for c in header_key):
            raise GatewayError(E.IDEMPOTENCY_KEY)
        if variable is not None and variable != header_key:
            raise GatewayError(E.IDEMPOTENCY_KEY, "The Idempotency-Key header and idempotency_key differ.")
        return header_key
    return variable


class OutcomeUnknown(GatewayError):
    """Error 1 when a transaction may have been recorded: the idempotency key is kept, never released."""

    def __init__(self) -> None:
        super().__init__(E.INTERNAL)


def _claim_outcome(claim: idempotency.Claim, account: accounts.Account, req: GatewayRequest
                   ) -> tuple[int, dict[str, Any], dict[str, str]] | None:
    if claim.state == "mismatch":
        raise GatewayError(E.IDEMPOTENCY_MISMATCH)
    if claim.state == "in_progress":
        recorded = _recorded_by_holder(claim, account, req)
        if recorded is not None:
            return recorded
        raise GatewayError(E.IDEMPOTENCY_IN_PROGRESS)
    if claim.state == "replay":
        response = claim.response or {}
        if response.get("transaction_type") == "REFUND" and response.get("authorization_message") == "VOID":
            _repair_void_mark(account, str(response.get("token_id") or ""), str(response.get("transaction_id")))
        return claim.status, response, {"Idempotent-Replayed": "true"}
    if claim.state == "takeover" and claim.previous_transaction_id:
        # Earlier attempts died (or could not tell their outcome) after reserving an id. Settle each id, oldest
        # first: a transaction is the answer, or a fence makes sure it never appears and this request charges
        # instead. At most one of them can be recorded: an attempt goes on only once all before it are settled.
        attempts = claim.attempts or ((claim.previous_transaction_id, claim.previous_claimed_at),)
        for previous, _ in attempts:
            try:
                item = store.settle(account.account_id, previous)
            except VaultError:
                # Cannot tell now: the key is held again by this request, for its lock time, and names every
                # attempt still to settle; retry later.
                raise OutcomeUnknown() from None
            if item is not None:
                return _replay_recorded(claim, account, req, item)
        # The dead attempts may have changed the original transaction (or taken a credit's share of the day)
        # before their own item was written; the fences guarantee those items never will be, so give back what
        # they took (each undo is conditional on its id). If an undo cannot be made now, the outcome stays
        # unknown, and the next keyed retry undoes it.
        original = str(req.get("token_id"))
        try:
            for previous, claimed_at in attempts:
                if req.source == "capture":
                    store.revert_capture(account.account_id, original, previous)
                elif req.source == "refund":
                    store.revert_refund(account.account_id, original, previous, req.amount_cents)
                elif req.source == "reversal":
                    store.revert_reversal(account.account_id, original, previous)
                elif req.transaction_type == "CREDIT":
                    store.give_back_allowance(account.account_id, _credit_key(claimed_at or clock.now()),
                                              req.amount_cents, previous)
        except VaultError:
            raise OutcomeUnknown() from None
    return None


def _is_recorded(account: accounts.Account, transaction_id: str) -> bool:
    """Whether the transaction an abandoned idempotency claim reserved is recorded (one consistent GetItem);
    False when DynamoDB cannot tell now (the claim then takes the key over and settles it, as before)."""
    try:
        return store.get_transaction(account.account_id, transaction_id, consistent=True) is not None
    except VaultError:
        return False


def _recorded_by_holder(claim: idempotency.Claim, account: accounts.Account, req: GatewayRequest
                        ) -> tuple[int, dict[str, Any], dict[str, str]] | None:
    """Issue 28: the key is held, but the holder's transaction may be recorded already (its "complete" write
    failed, or it is between the two): then the record is the truth and the answer, at once. One consistent
    GetItem, only on this path; None (error 601) when nothing is recorded yet or DynamoDB cannot tell."""
    if not claim.previous_transaction_id:
        return None
    try:
        item = store.get_transaction(account.account_id, claim.previous_transaction_id, consistent=True)
    except VaultError:
        return None
    if item is None:
        return None
    holder = dataclasses.replace(claim, transaction_id=claim.previous_transaction_id)
    return _replay_recorded(holder, account, req, item)


def _replay_recorded(claim: idempotency.Claim, account: accounts.Account, req: GatewayRequest,
                     item: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Answer a recorded transaction to a keyed replay: repair a VOID's mark if it was recorded without it, and
    complete the idempotency record (best effort). Its postback needs nothing: it was recorded with the
    transaction, and the Transactions stream relay queues it."""
    response = response_from_item(item)
    transaction_id = str(item["transaction_id"])
    if item.get("transaction_type") == "REFUND" and item.get("authorization_message") == "VOID":
        _repair_void_mark(account, str(item.get("token_id") or ""), transaction_id)
    _quietly(idempotency.complete, claim, response)
    return 200, response, {"Idempotent-Replayed": "true"}


def _repair_void_mark(account: accounts.Account, original_id: str, void_id: str) -> None:
    """A keyed replay of a VOID sets the original's mark again (one UpdateItem, harmless when it is there): a VOID
    recorded before issue 28, when the mark was a separate write that could fail, shows VOIDED after it."""
    if not original_id:
        return
    try:
        store.mark_voided(account.account_id, original_id, void_id)
    except (VaultError, store.ConditionFailed):
        _log.warning("void mark repair failed", extra={"transaction_id": void_id})


def _storable(response: dict[str, Any], payment: PaymentData | None) -> bool:
    """Defence in depth: never store a response whose text holds the request's card or bank account number."""
    if payment is None:
        return True
    text = json.dumps(response)
    return not any(v and len(v) >= 6 and v in text for v in (payment.get("card_number"),
                                                            payment.get("bank_account_number")))


# --------------------------------------------------------------------------------------------- payment data
def _plain_payment(req: GatewayRequest) -> PaymentData:
    values = {k: req.values[k] for k in _CLEAR_NAMES if k in req.values}
    return PaymentData("ACH" if req.source == "ach" else "CARD", values)


def _check_token_access(account: accounts.Account, req: GatewayRequest) -> None:
    if req.source == "token" and not account.option("token_payments"):
        raise GatewayError(E.TOKEN_PAYMENTS_OFF)
    if not account.partner_id:
        raise GatewayError(E.NO_TOKENIZATION_PARTNER)


def _token_service() -> Any:
    from vaultcore.tokens import service

    return service


def _token_error_code(exc: Exception) -> int:
    return int(getattr(exc, "code", 0) or 0)


def _token_failure(exc: Exception, failure: int) -> GatewayError:
    """The gateway error of a tokens-service refusal on a path whose generic failure is ``failure`` (303 read step,
    304 detokenization, 306 eToken, 422 stored): the one translation of the use policy's answers."""
    from vaultcore.tokens.errors import BFID_INVALID, CVV_REFUSED, TOKEN_NOT_ISSUED, PolicyRefused

    code = _token_error_code(exc)
    if isinstance(exc, PolicyRefused):
        if exc.reason == "used":
            return GatewayError(E.ETOKEN_USED)
        if exc.reason == "custom_id":
            return GatewayError(E.IFRAME_FIELD, "custom_id is not the payment iframe instance's.")
        if exc.reason == "method":
            held = getattr(exc, "method", "")
            return GatewayError(E.TENDER_TYPE, f"The etoken holds {held} data: tender_type {held}.")
        if failure in (E.ETOKEN_FAILED, E.READ_FAILED):
            return GatewayError(failure)  # another account's eToken: the answer of an unknown one
        return GatewayError(E.POLICY_REFUSED)
    if code == CVV_REFUSED:
        return GatewayError(E.CVV_TOKEN)
    if code == BFID_INVALID and failure != E.ETOKEN_FAILED:
        return GatewayError(E.BFID_INVALID)
    if code == TOKEN_NOT_ISSUED and failure != E.ETOKEN_FAILED:
        # A token the bfid does not vouch for: refused before FF1 runs, never a wrong card number (issue 11).
        return GatewayError(E.TOKEN_NOT_ISSUED)
    if failure == E.DETOKENIZE_FAILED:
        return GatewayError(failure, f"{ERROR_MESSAGES[failure]} (tokenization code {code})")
    return GatewayError(failure)


def _token_refusals() -> tuple[type[Exception], ...]:
    from vaultcore.tokens.errors import TokenPermissionDenied, TokenServiceError

    return TokenServiceError, TokenPermissionDenied


def _detokenize(account: accounts.Account, bfid: str, tokens: dict[str, str], failure: int) -> dict[str, str]:
    from vaultcore.tokens.policy import gateway_actor

    try:
        return _token_service().detokenize_values(str(account.partner_id), bfid, tokens,
                                                  actor=gateway_actor(account.account_id))
    except _token_refusals() as exc:
        raise _token_failure(exc, failure) from exc


def _read(account: accounts.Account, req: GatewayRequest, bfid: str, reader: str, failure: int, *, consume: bool,
          custom_id: str | None) -> tuple[dict[str, str], dict[str, str]]:
    """The read step (``bfid=`` alone, or ``etoken=`` with ``consume``) for this account: (tokens to keep with the
    transaction, clear values), by the tokens service's one policy (:func:`vaultcore.tokens.service.gateway_read`)."""
    method = req.tender if req.transaction_type != "STORE" else None
    try:
        read = _token_service().gateway_read(str(account.partner_id), bfid, account_id=account.account_id,
                                             reader=reader, custom_id=custom_id, method=method, consume=consume)
    except _token_refusals() as exc:
        raise _token_failure(exc, failure) from exc
    tokens = {k: v for k, v in read.tokens.items() if k in TOKEN_FIELDS and v}
    clear = {k: v for k, v in read.clear.items() if k in TOKEN_FIELDS}
    if not tokens:
        raise GatewayError(failure)
    return tokens, clear


def _merge(req: GatewayRequest, clear: dict[str, str]) -> PaymentData:
    """Rule 4: plaintext values first, then the detokenized values over their twins."""
    values = {k: req.values[k] for k in _CLEAR_NAMES if k in req.values}
    detokenized = set()
    for token_name, value in clear.items():
        twin = TOKEN_TWINS.get(token_name)
        if twin is not None:
            values[twin] = value
            detokenized.add(twin)
    card = "card_number" in values
    bank = "bank_account_number" in values or "bank_routing_number" in values
    if card and bank:
        raise GatewayError(E.PAYMENT_DATA, "The token data holds both card and bank data.")
    if not card and not bank:
        raise GatewayError(E.TOKEN_DATA_INCOMPLETE)
    kind = "CARD" if card else "ACH"
    if req.get("tender_type") == "ACH" and kind == "CARD":
        raise GatewayError(E.PAYMENT_DATA, "tender_type ACH with card data.")
    return PaymentData(kind, values, frozenset(detokenized))


def _resolve_tokens(account: accounts.Account, req: GatewayRequest, reader: str
                    ) -> tuple[PaymentData, dict[str, str], str]:
    bfid = str(req.bfid)
    if req.bfid_only:
        # rule 2: the read step (Tokens table, one hour); an eToken's once-only use holds here too (issue 27)
        tokens, clear = _read(account, req, bfid, reader, E.READ_FAILED, consume=False,
                              custom_id=req.get("custom_id"))
        source = "bfid_read"
    else:
        tokens = dict(req.tokens)  # rule 3: no read step
        source = "detokenize"
        clear = _detokenize(account, bfid, tokens, E.DETOKENIZE_FAILED)
    payment = _merge(req, clear)
    stored = {"bfid": bfid, **{k: tokens[k] for k in RSAPI_TOKEN_FIELDS if k in tokens}}
    return payment, stored, source


def _resolve_etoken(account: accounts.Account, req: GatewayRequest, reader: str
                    ) -> tuple[PaymentData, dict[str, str], str]:
    """issue 19 (iframe): the eToken, read once (retry-aware, by ``reader``) for this account, the instance's
    custom_id and tender; its CVV's token and salt are removed by that read (vaultcore.tokens.service.gateway_read,
    one policy for etoken= and bfid=)."""
    etoken = str(req.get("etoken"))
    custom_id = req.get("custom_id") if req.transaction_type != "STORE" or req.get("custom_id") else None
    tokens, clear = _read(account, req, etoken, reader, E.ETOKEN_FAILED, consume=True, custom_id=custom_id)
    payment = _merge(req, clear)
    if req.transaction_type != "STORE" and payment.kind != req.tender:
        raise GatewayError(E.TENDER_TYPE, f"The etoken holds {payment.kind} data: tender_type {payment.kind}.")
    stored = {"bfid": etoken, **{k: tokens[k] for k in RSAPI_TOKEN_FIELDS if k in tokens}}
    return payment, stored, "etoken"


def _auto_tokenize(account: accounts.Account, payment: PaymentData) -> dict[str, str]:
    """Rule 7 with the GATEWAY template: card number and expiry, or bank account and routing number.

    The CVV is never tokenized: a tokenized CVV kept for the one-hour read window would be sensitive
    authentication data stored after authorization (PCI DSS 3.3.1.2).
    """
    from vaultcore.tokens.errors import TokenServiceError
    from vaultcore.tokens.policy import Owner

    if payment.kind == "CARD":
        names = ("card_number", "card_expiration")
    else:
        names = ("bank_account_number", "bank_routing_number")
    values = [(f"vault_token_{n}", payment.values[n]) for n in names]
    try:
        # a gateway capture: bound to this account for good, sealed in its bfid (version 5; tokens.policy)
        result = _token_service().tokenize_values(str(account.partner_id), GATEWAY_TEMPLATE_REF, values,
                                                  owner=Owner(account.account_id, sealed=True))
    except TokenServiceError as exc:
        raise GatewayError(E.AUTO_TOKENIZE_FAILED, f"{ERROR_MESSAGES[E.AUTO_TOKENIZE_FAILED]} "
                           f"(tokenization code {_token_error_code(exc)})") from exc
    return {"bfid": result.bfid, **{k: v for k, v in result.values.items() if k in RSAPI_TOKEN_FIELDS}}


# --------------------------------------------------------------------------------------------- SALE / AUTH
def _pay(account: accounts.Account, req: GatewayRequest, payment: PaymentData | None, transaction_id: str,
         writer: str, now: float, etoken_reader: str | None = None
         ) -> tuple[dict[str, Any], dict[str, Any], PaymentData, dict[str, Any] | None]:
    """A SALE or AUTHORIZATION.

    DynamoDB round trips of a warm SALE with card data and auto-tokenization (the account and the partner's
    tokenization key are cached per container; bench/bench_gateway.py counts them):
      1. Tokens table PutItem: the auto-tokenized values for the one-hour read window (tokenize_values);
      2. Transactions table PutItem (conditional: a new transaction_id, or this request's own retry); with a
         postback URL the item carries the postback flag, and the Transactions stream relay queues it.
    With an idempotency key: + Idempotency PutItem (claim) = 3 (the recorded transaction answers a replay: no
    "complete" write, see :func:`_answered_by_record`).
    A bfid-only token payment: Tokens GetItem (read step) + Transactions PutItem.
    """
    token_info: dict[str, str] = {}
    token_source: str | None = None
    if req.source == "token":
        payment, token_info, token_source = _resolve_tokens(account, req, etoken_reader or writer)
        check_payment(payment, req, now=now)
    elif req.source == "iframe":
        payment, token_info, token_source = _resolve_etoken(account, req, etoken_reader or writer)  # issue 19
        check_payment(payment, req, now=now)
    elif req.source == "stored":
        payment, token_info, token_source = _resolve_stored(account, req)
        check_payment(payment, req, now=now)
    # --- issue 20 (card-present): card_tracks or a P2PE reader payload -> card values, in memory only ---
    present_fields: dict[str, Any] = {}
    if req.source in ("swiped", "p2pe"):
        from vaultcore.gateway import card_present

        present = card_present.resolve(req.source, req.values, account.partner_id)
        sent = {k: req.values[k] for k in _CLEAR_NAMES if k in req.values}  # names sent win over the track's
        payment = PaymentData("CARD", {**present.payment_values(), **sent})
        check_payment(payment, req, now=now)
        present_fields = present.entry_fields()  # keyed, swiped, entry_mode
    # --- end ---
    # --- issue 8 (wallet): tender_type APay -> the token's device account number (vaultcore.wallet) ---
    wallet_fields: dict[str, Any] = {}
    if req.source == "wallet":
        card_values, wallet_fields = gateway_hooks.wallet_payment(
            account.account_id, req.values, req.values["transaction_amount"], req.currency)
        payment = PaymentData("CARD", card_values)
    # --- end issue 8 ---
    assert payment is not None
    # A wallet's device account number is single-use with its cryptogram: auto-tokenizing it would store
    # nothing a later payment could use (issue 8).
    if not token_info and account.option("tokenization") and account.partner_id and req.source != "wallet":
        token_info = _auto_tokenize(account, payment)  # round trip 1 (Tokens PutItem)
        token_source = "auto"

    amount = req.amount_cents
    descriptor = descriptors.resolve(account.account_id, req.get("dynamic_descriptor_id"))  # issue 31
    credit = req.transaction_type == "CREDIT"
    if credit:
        _take_credit_allowance(account, transaction_id, amount, now)
    try:
        if req.transaction_type == "FORCE":
            # An offline authorization the merchant obtained by voice: recorded, not sent to the processor.
            outcome = processor.Outcome(True, 0, req.values["authorization_code"], "APPROVED",
                                        payment.brand, None, None)
            last4 = payment.values["card_number"][-4:]
        elif payment.kind == "CARD":
            outcome = processor.authorize_card(processor.CardPayment(
                pan=payment.values["card_number"], expiration=payment.values["card_expiration"],
                cvv=payment.get("card_verification"), zip=payment.get("zip"), street=payment.get("street_address1"),
                amount_cents=amount, currency=req.currency, descriptor=descriptor))
            last4 = payment.values["card_number"][-4:]
        else:
            outcome = processor.debit_ach(processor.AchPayment(
                account_number=payment.values["bank_account_number"],
                routing_number=payment.values["bank_routing_number"], amount_cents=amount, currency=req.currency,
                descriptor=descriptor))
            last4 = payment.values["bank_account_number"][-4:]
            if outcome.approved:  # an ACH debit is pending until its batch settles (issue 20)
                outcome = dataclasses.replace(outcome, authorization_message="PENDING")
        if req.transaction_type == "CREDIT" and outcome.approved:
            outcome = dataclasses.replace(outcome, authorization_message="CREDIT")
        # --- issue 8 (fraud scoring): account option fraud_scoring + device_trans_id; reject declines (720) ---
        outcome, fraud_fields = gateway_hooks.fraud_screen(account, req.get("device_trans_id"),
                                                           payment.values.get("card_number"), outcome)
        # --- end issue 8 ---
        created = int(now)
        card = payment.kind == "CARD"
        item: dict[str, Any] = {
            "account_id": account.account_id, "transaction_id": transaction_id, "created_at": created,
            "tender_type": payment.kind, "transaction_timestamp": processor.transaction_timestamp(created),
            "card_brand": outcome.card_brand if card else None, "transaction_type": req.transaction_type,
            "last4": last4, "card_expiration": payment.values.get("card_expiration") if card else None,
            "authorization_code": outcome.authorization_code, "authorization_message": outcome.authorization_message,
            "request_cents": amount, "transaction_cents": amount if outcome.approved else 0,
            "first_name": payment.get("first_name"), "last_name": payment.get("last_name"),
            "keyed": card, "swiped": False, "entry_mode": "keyed" if card else None,
            "transaction_approved": outcome.approved, "avs_response": outcome.avs_response,
            "cvv2_response": outcome.cvv2_response, "currency": req.currency, "custom_id": req.get("custom_id"),
            "error": not outcome.approved, "error_code": outcome.error_code,
            "error_message": _error_text(outcome.error_code), "error_msg": _error_text(outcome.error_code),
            # stored for the reporting interface and the postback
            "payment_type": req.get("payment_type"), "device_trans_id": req.get("device_trans_id"),
            "reissue": "1" if req.reissue else None, "token_source": token_source,
            **{k: req.values[k] for k in LEVEL2_FIELDS if k in req.values},
            **token_info,
            **wallet_fields, **fraud_fields,  # issue 8: tender_type APay, entry_mode wallet, ECI; fraud score
            **_echoed(req),  # issue 20
            # issue 31: only when named, so that other items (and their write units) stay as they were
            **({"dynamic_descriptor_id": descriptor.id, "dynamic_descriptor": outcome.dynamic_descriptor}
               if descriptor is not None else {}),
        }
        # --- issue 20 (card-present): keyed / swiped / entry_mode of the read ---
        item.update(present_fields)
        # --- end ---
        if req.transaction_type == "AUTHORIZATION" and amount == 0:
            item["auth_status"] = "verified" if outcome.approved else "declined"  # a verification: nothing to capture
        elif req.transaction_type == "AUTHORIZATION":
            item["auth_status"] = "authorized" if outcome.approved else "declined"
            if outcome.approved:
                item["authorized_cents"] = amount
                item["auth_expires_at"] = created + AUTHORIZATION_LIFETIME_SECONDS
        elif outcome.approved and req.transaction_type in ("SALE", "FORCE"):
            item["refundable_cents"] = amount  # what refunds may still take (store.refund_transaction)
        if payment.kind == "ACH" and outcome.approved:
            item["ach_return_code"] = processor.ach_return_code(payment.values["bank_account_number"])
        response = response_from_item(item)
        also = None
        if credit and not outcome.approved:  # declines take nothing: the allowance goes back with the record
            also = [store.give_back_allowance_entry(account.account_id, _credit_key(now), amount, transaction_id)]
        message = _record(account, response, item, writer, also)  # round trip 2
        _log.info("transaction recorded", extra={"transaction_id": transaction_id, "account_id": account.account_id,
                                                 "code": outcome.error_code, "event": req.transaction_type})
        return response, item, payment, message
    except OutcomeUnknown:
        raise  # the credit may be recorded: a keyed retry settles it and gives the allowance back if not
    except BaseException:
        if credit:  # certainly not recorded (or failed before the write): the allowance goes back
            _give_back_credit_allowance(account, transaction_id, amount, now)
        raise


def _record(account: accounts.Account, response: dict[str, Any], item: dict[str, Any], writer: str,
            also: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """Write the transaction, flagged for its postback (``postbacks.flag_item``: the Transactions stream relay
    builds and queues it from the committed item), and ``also``, the other changes of the same operation, in the
    same DynamoDB transaction; returns the postback message, if any.

    One PutItem when there is no ``also`` (issue 29: 1 write unit for an item under 1 KB, where a
    TransactWriteItems with a Deliveries item cost 4).
    Raises GatewayError 1 "nothing was recorded" only when that is certain, OutcomeUnknown otherwise.
    """
    message = postbacks.flag_item(account, response, item)
    # the account's VAULT_TRANSACTION webhook endpoints' deliveries, in the same write (an account without such an
    # endpoint: none, and the transaction stays one PutItem)
    also = [*(also or ()), *webhook_outbox.transaction_deliveries(account, response, item, writer)]
    outcome = store.record_transaction(item, writer, None, also or None)
    if outcome == store.Recorded.WRITTEN:
        return message
    if outcome == store.Recorded.NOT_WRITTEN:
        # Another writer holds the 12-digit id (about 1 in 10^12), or a fence settled a write that never landed.
        raise GatewayError(E.INTERNAL, NOTHING_CHARGED)
    _log.error("transaction outcome unknown", extra={"transaction_id": item["transaction_id"],
                                                     "account_id": account.account_id})
    raise OutcomeUnknown()


# --------------------------------------------------------------------------------------------- issue 20
#: CREDIT limits of the certification sandbox and the default of every account (docs/integrators/gateway.md "Stored
#: cards, credits and forced sales").
CREDIT_MAX_CENTS = 1_000_000  # 10,000.00 per credit
CREDIT_DAILY_CENTS = 2_500_000  # 25,000.00 per account and UTC day


def _check_type_allowed(account: accounts.Account, req: GatewayRequest) -> None:
    if req.transaction_type == "CREDIT":
        if not account.option("credit"):
            raise GatewayError(E.CREDIT_OFF)
        if req.amount_cents > CREDIT_MAX_CENTS:
            raise GatewayError(E.CREDIT_LIMIT)
    if req.transaction_type == "STORE" and not account.partner_id:
        raise GatewayError(E.NO_TOKENIZATION_PARTNER)  # stored data sits as vault tokens of the partner


def _credit_day(now: float) -> str:
    return processor.transaction_timestamp(int(now))[:10]


def _credit_key(now: float) -> str:
    """The counter item of the account's credits of the UTC day of ``now`` (store.take_allowance)."""
    return f"CREDITS#{_credit_day(now)}"


def _take_credit_allowance(account: accounts.Account, credit_id: str, amount: int, now: float) -> None:
    """Take the credit's share of the day (the credit's id is the taker). When DynamoDB cannot tell whether the
    take was applied, give it back (conditional on the id) before answering "nothing was charged"; when that
    fails too, the outcome is unknown and the keyed retry gives it back (``_claim_outcome``)."""
    ok, _ = _decide(lambda: (store.take_allowance(account.account_id, _credit_key(now), CREDIT_DAILY_CENTS,
                                                  amount, credit_id), None),
                    lambda: store.give_back_allowance(account.account_id, _credit_key(now), amount, credit_id))
    if not ok:
        raise GatewayError(E.CREDIT_LIMIT)


def _give_back_credit_allowance(account: accounts.Account, credit_id: str, amount: int, now: float) -> None:
    """Give back the share of a credit that was certainly not recorded; OutcomeUnknown when that cannot be done
    now (the key stays held, and the keyed retry gives it back), so that the answer is never "nothing was
    charged" while the share stays taken."""
    try:
        store.give_back_allowance(account.account_id, _credit_key(now), amount, credit_id)
    except VaultError:
        _log.error("credit allowance not given back", extra={"transaction_id": credit_id,
                                                            "account_id": account.account_id})
        raise OutcomeUnknown() from None


def _resolve_stored(account: accounts.Account, req: GatewayRequest) -> tuple[PaymentData, dict[str, str], str]:
    """A payment with a STORE's card or bank account: its bfid and tokens, detokenized (no read window)."""
    stored = store.get_transaction(account.account_id, str(req.get("token_id")), consistent=True)
    if (stored is None or stored.get("transaction_type") != "STORE" or not stored.get("transaction_approved")
            or not stored.get("bfid")):
        raise GatewayError(E.STORED_NOT_FOUND)
    tokens = {k: stored[k] for k in TOKEN_FIELDS if stored.get(k)}
    clear = _detokenize(account, str(stored["bfid"]), tokens, E.DETOKENIZE_FAILED)
    payment = _merge(req, clear)
    return payment, {"bfid": str(stored["bfid"]), **{k: v for k, v in tokens.items() if k in RSAPI_TOKEN_FIELDS}}, \
        "stored"


def _store(account: accounts.Account, req: GatewayRequest, payment: PaymentData | None, transaction_id: str,
           writer: str, now: float, etoken_reader: str | None = None
           ) -> tuple[dict[str, Any], dict[str, Any], PaymentData, dict[str, Any] | None]:
    """STORE: card or bank data (or an iframe eToken) kept as vault tokens under the account's partner.

    Nothing is charged and no processor is asked. The answer carries the ``transaction_id`` that later SALE and
    AUTHORIZATION requests send as ``token_id``, and ``last4``. The item holds the bfid and the tokens (which
    detokenize without a read window), never a clear value.
    """
    if req.source == "iframe":
        payment, token_info, _ = _resolve_etoken(account, req, etoken_reader or writer)  # issue 19 (iframe)
        check_payment(payment, req, now=now)
    else:
        assert payment is not None
        token_info = _auto_tokenize(account, payment)
    created = int(now)
    card = payment.kind == "CARD"
    number = payment.values["card_number" if card else "bank_account_number"]
    item: dict[str, Any] = {
        "account_id": account.account_id, "transaction_id": transaction_id, "created_at": created,
        "tender_type": payment.kind, "transaction_timestamp": processor.transaction_timestamp(created),
        "card_brand": payment.brand if card else None, "transaction_type": "STORE", "last4": number[-4:],
        "card_expiration": payment.values.get("card_expiration") if card else None, "authorization_code": None,
        "authorization_message": "APPROVED", "request_cents": 0, "transaction_cents": 0,
        "first_name": payment.get("first_name"), "last_name": payment.get("last_name"), "keyed": card,
        "swiped": False, "entry_mode": "keyed" if card else None, "transaction_approved": True,
        "currency": req.currency, "custom_id": req.get("custom_id"), "error": False, "error_code": 0,
        "error_message": None, "error_msg": None, "token_source": "store", **token_info,
    }
    response = response_from_item(item)
    message = _record(account, response, item, writer)
    _log.info("payment data stored", extra={"transaction_id": transaction_id, "account_id": account.account_id})
    return response, item, payment, message


def _settle_batch(account: accounts.Account, req: GatewayRequest, transaction_id: str, writer: str, now: int
                  ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
    """SETTLE-BATCH: close the account's open batch (one conditional write), then return the sandbox's ACH
    debits of that batch whose bank account is a return trigger (status RETURNED, with a postback each)."""
    closed, after = batches.close_open_batch(account.account_id, now, writer)
    # Cuts are whole seconds and a batch includes its closing second: answer once that second has passed, so
    # every transaction the merchant starts after this answer belongs to the next batch.
    time.sleep(max(0.0, min(1.0, now + 1 - clock.now())))
    span = after.span(closed)
    returned = 0
    if span is not None:
        for original in store.unreturned_ach_returns(account.account_id, *span):
            response = {**response_from_item(original), "status": "RETURNED",
                        "ach_return_code": original["ach_return_code"]}
            message = postbacks.outbox_message(account, response, original)
            endpoints = webhook_outbox.transaction_deliveries(account, response, original, writer, ("RETURNED", now))
            # ``also`` only when there are endpoint deliveries: the call stays the one the previous store took
            # (tests/integration/test_transactions_migration.py runs this service over that store)
            if store.mark_ach_returned(account.account_id, original["transaction_id"], now, writer, message,
                                       **({"also": endpoints} if endpoints else {})):
                returned += 1  # its postback was recorded with the return: the stream relay queues it
    item: dict[str, Any] = {
        "account_id": account.account_id, "transaction_id": transaction_id, "created_at": now,
        "transaction_timestamp": processor.transaction_timestamp(now), "transaction_type": "SETTLE-BATCH",
        "authorization_message": "SETTLED", "request_cents": 0, "transaction_cents": 0,
        "transaction_approved": True, "currency": req.currency, "error": False, "error_code": 0,
        "batch_id": closed, "ach_returns": returned,
    }
    response = response_from_item(item)
    # The account's PAYCONEX_BATCH_SETTLEMENT webhook deliveries, written with the SETTLE-BATCH (the outbox)
    message = _record(account, response, item, writer,
                      also=webhook_outbox.settlement_deliveries(account.account_id, item, writer))
    _log.info("batch settled", extra={"transaction_id": transaction_id, "account_id": account.account_id,
                                      "count": returned})
    return response, item, message


# --------------------------------------------------------------------------------------------- CAPTURE
_CARRIED = ("tender_type", "card_brand", "last4", "card_expiration", "authorization_code", "first_name",
            "last_name", "keyed", "swiped", "entry_mode", "currency", "custom_id", "payment_type", "bfid",
            *RSAPI_TOKEN_FIELDS)


def _capture(account: accounts.Account, req: GatewayRequest, capture_id: str, writer: str, now: int
             ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
    """One conditional UpdateItem decides (concurrent captures: exactly one wins), then the capture's item."""
    auth_id = str(req.get("token_id"))
    currency = req.values.get("currency")
    ok, auth = _decide(lambda: store.capture_authorization(account.account_id, auth_id, capture_id,
                                                          req.amount_cents, now, currency),
                       lambda: store.revert_capture(account.account_id, auth_id, capture_id))
    if not ok:
        raise GatewayError(_capture_refusal(auth, req.amount_cents, now, currency))
    assert auth is not None
    item: dict[str, Any] = {k: auth[k] for k in _CARRIED if auth.get(k) is not None}
    item.update({
        "account_id": account.account_id, "transaction_id": capture_id, "created_at": now,
        "transaction_timestamp": processor.transaction_timestamp(now), "transaction_type": "CAPTURE",
        "authorization_message": "CAPTURED", "request_cents": req.amount_cents, "transaction_cents": req.amount_cents,
        "transaction_approved": True, "token_id": auth_id, "error": False, "error_code": 0,
        "refundable_cents": req.amount_cents, **_echoed(req),
    })
    response, message = _settle_referenced(
        account, item, writer, lambda: store.revert_capture(account.account_id, auth_id, capture_id))
    _log.info("capture recorded", extra={"transaction_id": capture_id, "account_id": account.account_id})
    return response, item, message


def _referenced_item(account: accounts.Account, req: GatewayRequest, original: dict[str, Any], new_id: str,
                     now: int, message: str, amount_cents: int) -> dict[str, Any]:
    """The item of a REFUND or REVERSAL: the original's card data (last four, brand, tokens) and its own amounts."""
    item: dict[str, Any] = {k: original[k] for k in _CARRIED if original.get(k) is not None}
    item.update({
        "account_id": account.account_id, "transaction_id": new_id, "created_at": now,
        "transaction_timestamp": processor.transaction_timestamp(now), "transaction_type": req.transaction_type,
        "authorization_message": message, "request_cents": amount_cents, "transaction_cents": amount_cents,
        "transaction_approved": True, "token_id": original["transaction_id"], "error": False, "error_code": 0,
        "authorization_code": processor.new_authorization_code(), **_echoed(req),
    })
    return item


def _decide(change: Any, undo: Any) -> tuple[bool, dict[str, Any] | None]:
    """The conditional write that decides a CAPTURE, REFUND or REVERSAL on the original transaction.

    When DynamoDB cannot tell whether it was applied, ``undo`` (conditional on this request's id) makes sure it
    is not: then the failure is the dependency's ("nothing was charged"); if the undo cannot be made either, the
    outcome is unknown.
    """
    try:
        return change()
    except VaultError:
        try:
            undo()
        except VaultError:
            raise OutcomeUnknown() from None
        raise


def _settle_referenced(account: accounts.Account, item: dict[str, Any], writer: str, undo: Any,
                       also: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Record a CAPTURE's, REFUND's or REVERSAL's own item (with ``also``, in the same DynamoDB transaction);
    when it certainly was not written -- any failure but OutcomeUnknown, including one before the write --
    undo the change it made to the original (``undo``, retry-aware by the operation's id), so that the request
    can be retried and "nothing was charged" is true. When the undo cannot be made, the outcome is unknown: the
    key stays held and the keyed retry undoes it (``_claim_outcome``)."""
    response = response_from_item(item)
    try:
        message = _record(account, response, item, writer, also)
    except OutcomeUnknown:
        raise  # the item may be there: the original keeps the change (a keyed retry settles it)
    except BaseException:
        try:
            undo()
        except VaultError:
            raise OutcomeUnknown() from None
        raise
    return response, message


# --------------------------------------------------------------------------------------------- REFUND
def _refund(account: accounts.Account, req: GatewayRequest, refund_id: str, writer: str, now: int
            ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
    """Refund part or all of an approved SALE or CAPTURE: one conditional UpdateItem decides, then the item.

    A full refund of a transaction whose batch has not settled voids it instead (``authorization_message``
    ``VOID``): the first refund that takes the whole amount, before ``settled_at``. Anything else is
    ``REFUND``. Refunds may repeat until the amount is used up (``INVALID REFUND AMOUNT`` beyond it).
    """
    original_id = str(req.get("token_id"))
    # Issue 28: every read the decision needs comes before the first write. The batches decide VOID or REFUND;
    # read after the refund was applied, a failure of this read left a refund applied and never recorded.
    account_batches = batches.load(account.account_id)
    ok, original = _decide(
        lambda: store.refund_transaction(account.account_id, original_id, refund_id, req.amount_cents, now,
                                         req.values.get("currency")),
        lambda: store.revert_refund(account.account_id, original_id, refund_id, req.amount_cents))
    if not ok:
        raise GatewayError(_refund_refusal(original, req))
    assert original is not None
    whole = int(original.get("transaction_cents", 0))
    voided = (int(original.get("refunded_cents", 0)) == whole == req.amount_cents
              and not account_batches.settled(int(original.get("created_at") or 0)))
    item = _referenced_item(account, req, original, refund_id, now, "VOID" if voided else "REFUND",
                            req.amount_cents)
    # A VOID marks the original (RSAPI VOIDED) in the same transaction as its own item: nothing to undo.
    response, message = _settle_referenced(
        account, item, writer,
        lambda: store.revert_refund(account.account_id, original_id, refund_id, req.amount_cents),
        [store.void_mark_entry(account.account_id, original_id, refund_id)] if voided else None)
    _log.info("refund recorded", extra={"transaction_id": refund_id, "account_id": account.account_id,
                                        "event": "VOID" if voided else "REFUND"})
    return response, item, message


def _refund_refusal(original: dict[str, Any] | None, req: GatewayRequest) -> int:
    if original is None:
        return E.AUTH_NOT_FOUND
    if original.get("transaction_type") not in ("SALE", "CAPTURE", "FORCE") or not original.get("transaction_approved"):
        return E.NOT_REFUNDABLE
    if original.get("reversed_by"):
        return E.NOT_REFUNDABLE
    if "refundable_cents" not in original:
        return E.NOT_REFUNDABLE  # recorded before refunds existed (issue 20): refunded by the operator
    currency = req.values.get("currency")
    if currency is not None and original.get("currency") != currency:
        return E.CAPTURE_CURRENCY
    return E.REFUND_AMOUNT


# --------------------------------------------------------------------------------------------- REVERSAL
def _reversal(account: accounts.Account, req: GatewayRequest, reversal_id: str, writer: str, now: int
              ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any] | None]:
    """Void an approved AUTHORIZATION not captured (its hold is released) or a SALE not settled nor refunded.

    One conditional UpdateItem decides: a second reversal, or a reversal racing a capture, finds the condition
    failed (``TRANSACTION ID ALREADY REVERSED``, or not reversible once captured). An amount, when sent, must be
    the transaction's.
    """
    original_id = str(req.get("token_id"))
    last_cut = batches.load(account.account_id).last_cut
    ok, original = _decide(
        lambda: store.reverse_transaction(account.account_id, original_id, reversal_id, now, req.amount_cents,
                                          last_cut),
        lambda: store.revert_reversal(account.account_id, original_id, reversal_id))
    if not ok:
        raise GatewayError(_reversal_refusal(original, req.amount_cents))
    assert original is not None
    whole = int(original.get("transaction_cents", 0))
    item = _referenced_item(account, req, original, reversal_id, now, "APPROVED", whole)
    response, message = _settle_referenced(
        account, item, writer, lambda: store.revert_reversal(account.account_id, original_id, reversal_id))
    _log.info("reversal recorded", extra={"transaction_id": reversal_id, "account_id": account.account_id})
    return response, item, message


def _reversal_refusal(original: dict[str, Any] | None, amount_cents: int) -> int:
    if original is None:
        return E.AUTH_NOT_FOUND
    if original.get("reversed_by"):
        return E.ALREADY_REVERSED
    if amount_cents and original.get("transaction_approved") and int(original.get("transaction_cents", 0)) != amount_cents:
        return E.AMOUNT  # a REVERSAL voids the whole transaction: its amount, or none
    return E.NOT_REVERSIBLE


def _capture_refusal(auth: dict[str, Any] | None, amount: int, now: int, currency: str | None) -> int:
    if auth is None:
        return E.AUTH_NOT_FOUND
    if auth.get("transaction_type") != "AUTHORIZATION" or auth.get("auth_status") not in ("authorized", "captured"):
        return E.NOT_CAPTURABLE
    if auth.get("reversed_by"):
        return E.ALREADY_REVERSED
    if auth.get("auth_status") == "captured":
        return E.ALREADY_CAPTURED
    if int(auth.get("auth_expires_at", 0)) <= now:
        return E.AUTH_EXPIRED
    if currency is not None and auth.get("currency") != currency:
        return E.CAPTURE_CURRENCY
    return E.CAPTURE_AMOUNT


def store_for_account(account: accounts.Account, variables: dict[str, str]) -> dict[str, Any]:
    """A STORE of clear card or bank ``variables`` for an account already authenticated another way (issue 30: a
    payment iFrame capture whose configuration's ``savePaymentOption`` saves it). The same checks, record and
    postback as a STORE sent to the QSAPI; the answer's ``transaction_id`` is the ``token_id`` of later payments.
    Raises GatewayError with the QSAPI's code when the data cannot be stored."""
    now = clock.now()
    req = validate_request({**variables, "transaction_type": "STORE"}, now=now)
    if req.source not in ("card", "ach"):
        raise GatewayError(E.PAYMENT_DATA)
    payment = _plain_payment(req)
    check_payment(payment, req, now=now)
    _check_type_allowed(account, req)
    # the transaction item is flagged for its postback; the Transactions stream relay queues it
    response, _item, _, _message = _store(account, req, payment, processor.new_transaction_id(), uuid.uuid4().hex,
                                          now)
    return response
