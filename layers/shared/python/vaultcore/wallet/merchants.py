"""The wallet and fraud modules' only door into gateway accounts (``vaultcore.gateway.accounts``).

Kept in one place so the dependency on the gateway is explicit and narrow: account existence for the
management routes, and ``account_id`` + ``api_accesskey`` authentication (spec Authentication rule 2) for the
wallet session and the ``/paymentMethods`` / ``/payments`` endpoints.
"""

from __future__ import annotations

from typing import Any

from vaultcore import clock
from vaultcore.gateway.accounts import authenticate, get_account

__all__ = ["require_account", "authenticate_merchant", "account_option"]


def require_account(account_id: str) -> Any:
    """The gateway account (consistent read); NotFound (404) when there is none."""
    return get_account(account_id)


def authenticate_merchant(account_id: Any, api_accesskey: Any) -> Any:
    """The active account the credentials name, or GatewayError 101/102/200 (the gateway's uniform refusal)."""
    variables = {k: v for k, v in (("account_id", account_id), ("api_accesskey", api_accesskey))
                 if isinstance(v, str)}
    return authenticate(variables, now=clock.now())


def account_option(account: Any, name: str) -> bool:
    return bool(account.option(name))
