"""Issue 31: API keys' rules, one at a time.

* scopes: the catalog is the original's enum with its levels; :func:`grants` and its wildcards;
* never more than the creator: scopes and accounts a caller does not hold are refused (403, named), and a narrow
  key may not change or delete a broader one;
* expiry against the injected clock (``expiresIn`` units, ``expiresAt`` precedence, the second it ends);
* the uniform 1003: every cause of a refused key (unknown, wrong secret, disabled, expired, method, account) is the
  same AuthenticationFailed, counted by its cause, and costs the same AWS calls (Basic: one GetItem; HMAC: one
  GetItem and one conditional PutItem), so the time does not tell the cause (issue 12).

The store's work runs on the in-process moto of the ``platform`` fixture (real DynamoDB semantics).
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.aws_calls import AwsCalls
from tests.helpers import api_event
from vaultcore import clock, metrics
from vaultcore.api.http import request_from_event
from vaultcore.apikeys import catalog, service
from vaultcore.apikeys.store import ApiKey
from vaultcore.auth.hmac_scheme import hmac_response, string_to_hash
from vaultcore.errors import AuthenticationFailed, NotFound
from vaultcore.gateway.accounts import create_account, load_account
from vaultcore.v4.auth import ALL_SCOPES, Principal, authenticate, grants
from vaultcore.v4.errors import AccountNotAllowed, MemberInvalid, ScopeMissing

ORIGINAL = Path(__file__).resolve().parents[3] / "shared" / "original-contracts" / "payconex-openapi.json"
PATH = "/api/v4/accounts/{account_id}/payment-iframe"


# ------------------------------------------------------------------------------------------- scopes
@pytest.mark.parametrize(("granted", "needed", "allowed"), [
    ({"pcx:iframe:read"}, "pcx:iframe:read", True),
    ({"pcx:iframe:read"}, "pcx:iframe:create", False),
    ({"pcx:iframe:*"}, "pcx:iframe:instance:read", True),
    ({"pcx:iframe:*"}, "pcx:iframe:instance:*", True),
    ({"pcx:iframe:instance:*"}, "pcx:iframe:*", False),  # a child wildcard does not hold its parent
    ({"pcx:iframe:instance:*"}, "pcx:iframe:read", False),
    ({"pcx:payments:read"}, "pcx:payments:*", False),
    ({"pcx:*"}, "pcx:webhooks:create", True),  # the account key
    ({"pcx:payments:*"}, "pcx:paymentsx:read", False),  # a wildcard is per segment, not a string prefix
])
def test_grants_allows_a_scope_itself_or_a_wildcard_over_a_parent(granted, needed, allowed):
    assert grants(frozenset(granted), needed) is allowed


def test_the_catalog_is_the_originals_enum_with_levels_by_depth():
    assert catalog.level_of("pcx:iframe:*") == 0 and catalog.level_of("pcx:iframe:read") == 1
    assert catalog.level_of("pcx:iframe:instance:*") == 1 and catalog.level_of("pcx:iframe:instance:read") == 2
    entries = catalog.entries()
    assert [e["scope"] for e in entries] == list(catalog.SCOPES) and len(entries) == 37
    assert all(set(e) == {"scope", "description", "category", "level", "enabled"} for e in entries)
    assert {e["category"] for e in entries if not e["enabled"]} == {"Account Updater", "Apple Pay"}
    if ORIGINAL.is_file():
        assert set(catalog.SCOPES) == set(json.loads(ORIGINAL.read_text())["components"]["schemas"]
                                          ["APIKeyScopes"]["enum"])


# ------------------------------------------------------------------------------------------- expiry
def _key(**members) -> ApiKey:
    base = {"key_id": "api_" + "a" * 32, "owner": "123456789012", "label": "k", "methods": ("ALL",),
            "accounts": ("123456789012",), "scopes": ("pcx:iframe:read",), "expires_at": 0, "enabled": True,
            "created_at": 0}
    return ApiKey(**{**base, **members})


def test_expiry_is_read_from_the_injected_clock(frozen_clock):
    now = clock.now()
    assert service.parse_expires_in("1 hour") == 3600 and service.parse_expires_in("2 weeks") == 14 * 86400
    assert service.parse_expires_in("1 month") == 30 * 86400 and service.parse_expires_in("3 years") == 3 * 365 * 86400
    for bad in ("hour", "1hour", "-1 day", "0 days", "11 years", "1 fortnight", 5):
        with pytest.raises(MemberInvalid):
            service.parse_expires_in(bad)
    key = _key(expires_at=int(now) + 3600)
    assert not key.expired(clock.now())
    clock.set_offset(3599)
    assert not key.expired(clock.now())
    clock.set_offset(3600)
    assert key.expired(clock.now())  # from the second it names
    assert not _key(expires_at=0).expired(clock.now() + 10**9)  # no expiry
    # expiresAt takes precedence over expiresIn; null clears
    tomorrow = datetime.fromtimestamp(int(now) + 86400, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert service._expiry({"expiresAt": tomorrow, "expiresIn": "1 hour"}, now, 0) == int(now) + 86400
    with pytest.raises(MemberInvalid):
        service._expiry({"expiresAt": "2099-01-01T00:00:00Z"}, now, 0)  # over ten years
    assert service._expiry({"expiresAt": None, "expiresIn": "1 hour"}, now, 123) == int(now) + 3600
    assert service._expiry({"expiresAt": None}, now, 123) == 0
    assert service._expiry({}, now, 123) == 123
    with pytest.raises(MemberInvalid):
        service._expiry({"expiresAt": tomorrow.rstrip("Z")}, now, 0)  # no offset: ambiguous


def test_methods_and_accounts_of_a_key():
    assert _key(methods=("ALL",)).allows_method("HMAC") and _key(methods=("ALL",)).allows_method("BASIC")
    assert not _key(methods=("HMAC",)).allows_method("BASIC")
    assert _key().reaches("123456789012") and not _key().reaches("123456789013") and not _key().reaches(None)
    assert "expiresAt" not in _key().view() and _key(expires_at=86400).view()["expiresAt"] == "1970-01-02T00:00:00Z"


# ------------------------------------------------------------------------------------------- with moto
@pytest.fixture
def merchant(platform):
    created = create_account({})
    account = load_account(created["account_id"])
    assert account is not None
    return account, created["api_accesskey"]


def _principal(account, scopes, accounts=None) -> Principal:
    return Principal(account=account, key_id="api_" + "c" * 32, scopes=frozenset(scopes),
                     accounts=frozenset(accounts or {account.account_id}))


def test_a_key_never_grants_more_than_the_caller(merchant):
    account, _ = merchant
    caller = _principal(account, {"pcx:iframe:*", "pcx:api_key:create"})
    made = service.create(caller, {"label": "narrow", "scopes": ["pcx:iframe:read", "pcx:iframe:instance:*"]})
    assert made["accounts"] == [account.account_id] and made["methods"] == ["ALL"]
    with pytest.raises(ScopeMissing) as refused:
        service.create(caller, {"label": "wide", "scopes": ["pcx:iframe:read", "pcx:payments:read"]})
    assert refused.value.scopes == ("pcx:payments:read",) and refused.value.status == 403
    with pytest.raises(AccountNotAllowed) as other:
        service.create(caller, {"label": "other", "scopes": ["pcx:iframe:read"], "accounts": ["999999999999"]})
    assert "999999999999" in other.value.message and other.value.status == 403
    # the account key may give anything on its account; a narrow key may not touch a broader key
    broad = service.create(_principal(account, ALL_SCOPES), {"label": "broad", "scopes": ["pcx:payments:*"]})
    for change in (lambda: service.patch(caller, broad["id"], {"enabled": False}),
                   lambda: service.delete(caller, broad["id"])):
        with pytest.raises(ScopeMissing):
            change()
    # nor widen a key it covers
    with pytest.raises(ScopeMissing):
        service.patch(caller, made["id"], {"scopes": ["pcx:iframe:*", "pcx:webhooks:read"]})
    assert service.patch(caller, made["id"], {"scopes": ["pcx:iframe:*"]})["scopes"] == ["pcx:iframe:*"]
    # another account's key is not found under this one
    stranger = _principal(load_account(create_account({})["account_id"]), ALL_SCOPES)
    with pytest.raises(NotFound):
        service.get(stranger, made["id"])


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _request(account_id: str, authorization: str, method: str = "GET"):
    path = PATH.replace("{account_id}", account_id)
    return request_from_event(api_event(method, path, None, {"Authorization": authorization}, resource=PATH,
                                        path_params={"account_id": account_id}))


def _refusals(merchant, frozen_clock):
    """A key of each refused kind, and the Basic credentials that use it on the merchant's path."""
    account, accesskey = merchant
    owner = _principal(account, ALL_SCOPES)
    good = service.create(owner, {"label": "good", "scopes": ["pcx:iframe:read"], "methods": ["BASIC"]})
    hmac_only = service.create(owner, {"label": "hmac", "scopes": ["pcx:iframe:read"], "methods": ["HMAC"]})
    off = service.create(owner, {"label": "off", "scopes": ["pcx:iframe:read"], "enabled": False})
    ending = service.create(owner, {"label": "ending", "scopes": ["pcx:iframe:read"], "expiresIn": "1 minute"})
    other = load_account(create_account({})["account_id"])
    return account, good, {
        "unknown_key": (account.account_id, _basic("api_" + "e" * 32, good["secret"])),
        "access_key": (account.account_id, _basic(good["id"], "f" * 32)),
        "disabled": (account.account_id, _basic(off["id"], off["secret"])),
        "expired": (account.account_id, _basic(ending["id"], ending["secret"])),
        "method": (account.account_id, _basic(hmac_only["id"], hmac_only["secret"])),
        "scope": (other.account_id, _basic(good["id"], good["secret"])),
    }


def test_every_refused_key_is_the_same_1003_counted_by_cause_and_costs_the_same_calls(merchant, frozen_clock):
    account, good, cases = _refusals(merchant, frozen_clock)
    clock.set_offset(61)  # the 1-minute key has ended
    principal = authenticate(_request(account.account_id, _basic(good["id"], good["secret"])), "pcx:iframe:read")
    assert principal.key_id == good["id"] and principal.scopes == frozenset({"pcx:iframe:read"})
    answers = set()
    for cause, (account_id, auth) in cases.items():
        authenticate_or_none = lambda: authenticate(_request(account_id, auth), "pcx:iframe:read")  # noqa: E731
        with pytest.raises(AuthenticationFailed):
            authenticate_or_none()  # warm: the first use of an id may unwrap (or decoy-unwrap) once per container
        metrics.discard()
        with AwsCalls() as calls, pytest.raises(AuthenticationFailed) as refused:
            authenticate_or_none()
        answers.add((refused.value.code, refused.value.status, refused.value.message))
        assert [(name, dims["Cause"]) for name, _, dims, _ in metrics.pending()] == [
            ("AuthenticationFailures", cause)], cause
        assert dict(calls.by_operation) == {"dynamodb.GetItem": 1}, (cause, calls.by_operation)
    assert answers == {(1003, 401, AuthenticationFailed.default_message)}
    # a missing scope is not an authentication failure: 403, named
    with pytest.raises(ScopeMissing) as missing:
        authenticate(_request(account.account_id, _basic(good["id"], good["secret"])), "pcx:iframe:create")
    assert missing.value.scopes == ("pcx:iframe:create",)


def test_hmac_failures_cost_one_read_and_one_nonce_write_like_a_replay(merchant, frozen_clock):
    account, _ = merchant
    key = service.create(_principal(account, ALL_SCOPES), {"label": "hmac", "scopes": ["pcx:iframe:read"],
                                                           "methods": ["HMAC"]})
    path = PATH.replace("{account_id}", account.account_id)
    now = int(clock.now())

    def header(key_id: str, secret: str, nonce: str, when: int = now) -> str:
        response = hmac_response(secret.encode(), string_to_hash(path, nonce, when, b"", "GET"))
        return f'Hmac username="{key_id}", nonce="{nonce}", timestamp="{when}", response="{response}"'

    assert authenticate(_request(account.account_id, header(key["id"], key["secret"], "n1"))).key_id == key["id"]
    cases = {"nonce": lambda n: header(key["id"], key["secret"], "n1"),  # a replay
             "signature": lambda n: header(key["id"], "0" * 32, n),
             "unknown_key": lambda n: header("api_" + "9" * 32, key["secret"], n),
             "timestamp": lambda n: header(key["id"], key["secret"], n, now - 901)}
    for cause, make in cases.items():
        with pytest.raises(AuthenticationFailed):
            authenticate(_request(account.account_id, make(f"{cause}-1")))  # warm (decoy unwrap, decoy item)
        metrics.discard()
        with AwsCalls() as calls, pytest.raises(AuthenticationFailed):
            authenticate(_request(account.account_id, make(f"{cause}-2")))
        assert dict(calls.by_operation) == {"dynamodb.GetItem": 1, "dynamodb.PutItem": 1}, (cause, calls.by_operation)
        assert [dims["Cause"] for _, _, dims, _ in metrics.pending()] == [cause]


def test_the_account_key_keeps_every_scope(merchant):
    account, accesskey = merchant
    principal = authenticate(_request(account.account_id, _basic(account.account_id, accesskey)),
                             "pcx:webhooks:create")
    assert principal.key_id is None and principal.scopes == ALL_SCOPES
    assert principal.accounts == frozenset({account.account_id})


def test_a_payments_read_key_is_refused_every_other_operations_scope(merchant):
    """What the other v4 operations ask (webhook endpoints, payments, descriptors, keys, the iFrame): a key of
    ``pcx:payments:read`` holds only that one, named in each 403."""
    account, _ = merchant
    reader = service.create(_principal(account, ALL_SCOPES), {"label": "reader", "scopes": ["pcx:payments:read"],
                                                              "methods": ["BASIC"]})
    request = _request(account.account_id, _basic(reader["id"], reader["secret"]))
    assert authenticate(request, "pcx:payments:read").key_id == reader["id"]
    for scope in ("pcx:webhooks:create", "pcx:webhooks:read", "pcx:payments:create", "pcx:payments:update",
                  "pcx:api_key:create", "pcx:dynamic_descriptors:read", "pcx:iframe:read"):
        with pytest.raises(ScopeMissing) as refused:
            authenticate(request, scope)
        assert refused.value.scopes == (scope,) and scope in refused.value.message
