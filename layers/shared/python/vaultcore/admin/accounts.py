"""Management API: gateway merchant accounts and their stored transactions (DESIGN.md §5)."""

from __future__ import annotations

from vaultcore.admin.router import created, json_body, ok, route
from vaultcore.api.http import Request, Response
from vaultcore.errors import NotFound
from vaultcore.gateway import accounts
from vaultcore.gateway import store as transactions


@route("POST", "/admin/v1/accounts")
def create_account(request: Request) -> Response:
    return created(accounts.create_account(json_body(request)))


@route("GET", "/admin/v1/accounts/{account_id}")
def get_account(request: Request, account_id: str) -> Response:
    return ok(accounts.get_account(account_id).public_view())


@route("PATCH", "/admin/v1/accounts/{account_id}")
def update_account(request: Request, account_id: str) -> Response:
    return ok(accounts.update_account(account_id, json_body(request)).public_view())


@route("GET", "/admin/v1/accounts/{account_id}/transactions/{transaction_id}")
def get_transaction(request: Request, account_id: str, transaction_id: str) -> Response:
    account = accounts.get_account(account_id)
    item = transactions.get_transaction(account.account_id, transaction_id, consistent=True)
    if item is None:
        raise NotFound("Transaction not found.")
    # DynamoDB string sets (refund_ids) as sorted JSON arrays
    return ok({k: sorted(v) if isinstance(v, set) else v for k, v in item.items()})


@route("POST", "/admin/v1/accounts/{account_id}/accesskey")
def rotate_access_key(request: Request, account_id: str) -> Response:
    """A new access key, shown once and stored KMS-wrapped (issue 20: migrates legacy hash-only accounts)."""
    return ok(accounts.rotate_access_key(account_id))
