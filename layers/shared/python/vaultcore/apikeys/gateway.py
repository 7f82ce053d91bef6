"""An API key standing in for ``api_accesskey`` on QSAPI and RSAPI, with a scope per ``transaction_type``.

How a client of the original uses a key (the least change: one configuration value): it sends its
``account_id`` as before and, as ``api_accesskey``, the key's id and secret joined by a colon,
``api_<id>:<secret>`` (the same two values as the v4 API's Basic credentials). An account's own access key is 32
hex characters and never begins with ``api_``, so the one test :func:`authenticate` adds on the access-key path is
a string prefix: no table read, no KMS call, nothing else (bench/bench_scope_cost.py measures both paths).

A key is accepted when (all checked before any other work, every failure the gateway's uniform 102
``Invalid account_id``, counted in AuthenticationFailures by cause): it exists and the secret is right, it is
enabled and not expired (:func:`vaultcore.clock.now`), its ``methods`` allow ``BASIC`` (the secret travels in the
request, as with Basic), ``account_id`` is one of its ``accounts`` and active, and the request uses no hash
authentication (``hash``/``timestamp``/``hash_key`` are the account key's form: with a key, refused). Then the
scope: one of :data:`TRANSACTION_SCOPES` for the request's ``transaction_type`` (QSAPI), or
:data:`REPORTING_SCOPES` (RSAPI); without it the gateway's error 103 with HTTP 403, naming the scopes that would
allow it (the gateway's own body, ``{"error": true, "error_code": 103, ...}``).

The scope of each transaction type (the original's scopes, its ``APIKeyScopes`` enum: a key created through its
document can hold them):

============================================  ======================
``transaction_type``                          scope (or a wildcard)
============================================  ======================
SALE, AUTHORIZATION, CAPTURE, STORE, FORCE    ``pcx:payments:create``
REFUND, REVERSAL, CREDIT, SETTLE-BATCH        ``pcx:payments:update``
RSAPI (a transaction, a listing, a batch)     ``pcx:payments:read``
anything else                                 ``pcx:payments:*`` (the type's own error 105 follows for a key
                                              that holds it)
============================================  ======================

Failure counts: a key's secret is 128 random bits, so no count of failures per source address is kept for keys
(the account key's, vaultcore.store.auth_failures, guards a key a merchant may have chosen); the metric and its
alarm see guessing.
"""

from __future__ import annotations

from vaultcore import metrics
from vaultcore.apikeys.catalog import grants
from vaultcore.apikeys.store import KEY_ID, KEY_PREFIX, read_key, secret_matches
from vaultcore.gateway import accounts
from vaultcore.gateway.accounts import Account
from vaultcore.gateway.errors import E, GatewayError

__all__ = ["authenticate", "TRANSACTION_SCOPES", "REPORTING_SCOPES", "scopes_for"]

_CREATE = ("pcx:payments:create",)
_UPDATE = ("pcx:payments:update",)
#: transaction_type -> the scopes that allow it (any one)
TRANSACTION_SCOPES: dict[str, tuple[str, ...]] = {
    "SALE": _CREATE, "AUTHORIZATION": _CREATE, "CAPTURE": _CREATE, "STORE": _CREATE, "FORCE": _CREATE,
    "REFUND": _UPDATE, "REVERSAL": _UPDATE, "CREDIT": _UPDATE, "SETTLE-BATCH": _UPDATE}
#: the reporting interface (RSAPI): reads only
REPORTING_SCOPES = ("pcx:payments:read",)
_UNKNOWN_TYPE = ("pcx:payments:*",)
_HASH_VARIABLES = ("hash", "timestamp", "hash_key")


def scopes_for(variables: dict[str, str]) -> tuple[str, ...]:
    """The scopes a QSAPI request needs, from its raw ``transaction_type`` (not validated yet: the key's check
    comes first)."""
    return TRANSACTION_SCOPES.get(str(variables.get("transaction_type", "")).strip().upper(), _UNKNOWN_TYPE)


def authenticate(variables: dict[str, str], *, now: float, scopes: tuple[str, ...]) -> Account:
    """The account a QSAPI or RSAPI request acts on: by the account's own key (unchanged:
    :func:`vaultcore.gateway.accounts.authenticate`) or by an API key holding one of ``scopes``."""
    sent = variables.get("api_accesskey")
    if not sent or not sent.startswith(KEY_PREFIX):
        return accounts.authenticate(variables, now=now)
    account_id = accounts.account_id_of(variables)
    key_id, _, secret = sent.partition(":")
    key = read_key(key_id) if KEY_ID.fullmatch(key_id) else None
    right = secret_matches(key, key_id, secret)
    # the first cause in this order; every check above has run whatever failed (issue 12, timing)
    cause = ("unknown_key" if key is None else "access_key" if not right else "disabled" if not key.enabled
             else "expired" if key.expired(now) else "method" if not key.allows_method("BASIC")
             else "scope" if not key.reaches(account_id)
             else "hash" if any(n in variables for n in _HASH_VARIABLES) else "")
    account = accounts.load_account(account_id) if not cause else None
    if not cause and (account is None or not account.active):
        cause = "unknown_account" if account is None else "disabled"
    if cause:
        metrics.authentication_failed(cause, cause=cause)
        raise GatewayError(E.AUTHENTICATION)
    assert key is not None and account is not None
    held = frozenset(key.scopes)
    if not any(grants(held, scope) for scope in scopes):
        raise GatewayError(E.KEY_SCOPE, "The API key needs one of the scopes: " + ", ".join(scopes) + ".")
    return account
