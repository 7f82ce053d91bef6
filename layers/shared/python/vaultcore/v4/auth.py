"""Who calls a v4 operation, and whether it may: HTTP Basic, then the operation's scope, before any other work.

The original's v4 operations take HTTP Basic and name, each, the API-key scopes that allow it ("The API Key
calling this endpoint must have one of the following scopes": ``pcx:<area>:<action>``, ``pcx:<area>:*`` for all
of an area). :func:`authenticate` answers a :class:`Principal` for the path's account and has already checked
that it holds the operation's scope; an operation asks nothing else.

Credentials: ``Authorization: Basic base64(account_id:api_accesskey)``, the account's own key. It holds every
scope, so that nothing written for the account key breaks.

Every authentication failure is the same 401 / 1003 (the gateway's own checks: constant time, decoy reads) and
counts in AuthenticationFailures; a missing scope is 403 / 911 with the scope named (:mod:`.errors`): the caller
is known by then, and telling it which scope to ask for is what the original does.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from vaultcore import clock, metrics
from vaultcore.api.http import Request
from vaultcore.errors import AuthenticationFailed
from vaultcore.gateway.accounts import Account
from vaultcore.gateway.accounts import authenticate as authenticate_account
from vaultcore.gateway.errors import E, GatewayError
from vaultcore.v4.errors import ScopeMissing

__all__ = ["Principal", "authenticate", "basic_credentials", "grants", "ALL_SCOPES"]

#: The scope set of an account's own ``api_accesskey``: every scope.
ALL_SCOPES = frozenset({"pcx:*"})
_MAX_HEADER = 400  # a Basic header of an id and a 32..64-character secret is far below this


def grants(granted: frozenset[str], needed: str) -> bool:
    """Whether scopes ``granted`` allow ``needed``: the scope itself, or a wildcard over one of its parents
    (``pcx:iframe:*`` allows ``pcx:iframe:instance:read``; ``pcx:*`` allows everything)."""
    if needed in granted:
        return True
    parts = needed.split(":")
    return any(":".join(parts[:n]) + ":*" in granted for n in range(1, len(parts)))


@dataclass(frozen=True)
class Principal:
    """The authenticated caller of a v4 operation on one account."""

    account: Account  # the path's account (authenticated, active)
    key_id: str | None  # the API key's id; None for the account's own api_accesskey
    scopes: frozenset[str]

    def allows(self, scope: str) -> bool:
        return grants(self.scopes, scope)

    def require(self, *scopes: str) -> None:
        """403 / 911 unless one of ``scopes`` is allowed (the original's "one of the following scopes")."""
        if not any(self.allows(s) for s in scopes):
            raise ScopeMissing(scopes)  # not an authentication failure: the caller is known


def _refused(reason: str, cause: str) -> AuthenticationFailed:
    metrics.authentication_failed(reason, cause=cause)
    return AuthenticationFailed(reason)


def basic_credentials(request: Request) -> tuple[str, str]:
    """(user, password) of ``Authorization: Basic``; a malformed header is the uniform 1003."""
    header = request.header("authorization") or ""
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic" or not token or len(token) > _MAX_HEADER:
        raise _refused("v4: no Basic credentials", "malformed")
    try:
        user, sep, password = base64.b64decode(token.strip(), validate=True).decode("utf-8").partition(":")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise _refused("v4: malformed Basic credentials", "malformed") from None
    if not sep or not user or not password:
        raise _refused("v4: malformed Basic credentials", "malformed")
    return user, password


def authenticate(request: Request, *scopes: str) -> Principal:
    """The caller, on the path's ``account_id``, holding one of ``scopes`` (none given: any authenticated caller)."""
    user, password = basic_credentials(request)
    try:
        account = authenticate_account({"account_id": user, "api_accesskey": password}, now=clock.now())
    except GatewayError as exc:
        if exc.code not in (E.ACCOUNT_ID, E.AUTHENTICATION):  # those count in authenticate_account itself
            metrics.authentication_failed("v4: account", cause="malformed")
        raise AuthenticationFailed("v4: account authentication failed") from None
    if request.path_params.get("account_id") not in (None, account.account_id):
        raise _refused("v4: the path names another account", "scope")
    principal = Principal(account=account, key_id=None, scopes=ALL_SCOPES)
    if scopes:
        principal.require(*scopes)
    return principal
