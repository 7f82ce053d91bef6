"""The v4 API's own errCodes (the original answers them as ``ApiViolation``: :mod:`vaultcore.iframe.violations`).

* 910, a request member is missing or invalid: HTTP 422 ``invalid_request``, the member in ``details[]``. The
  message is ``"<member>: <rule>."`` (the violation rewrite reads the member from it) and never holds the value
  (nor a member name that holds a card number: ``member`` then).
* 911, the caller's key lacks the scope the operation needs (or, creating or changing a key, an account it would
  grant): HTTP 403 ``authorization``, the scope (the account) named (the
  original's "The API Key calling this endpoint must have one of the following scopes").
"""

from __future__ import annotations

from vaultcore.cards.masking import holds_pan_in_any_form
from vaultcore.errors import PermissionDenied, VaultError

__all__ = ["MEMBER_INVALID", "SCOPE_MISSING", "MemberInvalid", "ScopeMissing", "AccountNotAllowed"]

MEMBER_INVALID = 910
SCOPE_MISSING = 911


class MemberInvalid(VaultError):
    """A request member is missing or invalid (HTTP 422)."""

    code = MEMBER_INVALID
    status = 422
    default_message = "request: invalid."

    def __init__(self, member: str, rule: str) -> None:
        if holds_pan_in_any_form(member):
            # an unknown member's name is the caller's text: one that is a card number is never echoed (it would
            # be answered and logged; PCI DSS 3.4)
            member = "member"
        super().__init__(f"{member}: {rule.rstrip('.')}.")
        self.member = member


class ScopeMissing(PermissionDenied):
    """The key may not do this (HTTP 403): the message names the scopes that would allow it."""

    code = SCOPE_MISSING

    def __init__(self, scopes: tuple[str, ...]) -> None:
        super().__init__("The API key needs one of the scopes: " + ", ".join(scopes) + ".")
        self.scopes = scopes


class AccountNotAllowed(PermissionDenied):
    """The caller may not give a key an account it cannot act on itself (HTTP 403, the same errCode as a missing
    scope: both are "this key may not do that", and the message names the account)."""

    code = SCOPE_MISSING

    def __init__(self, account_id: str) -> None:
        super().__init__(f"The API key may not act on account {account_id}.")
