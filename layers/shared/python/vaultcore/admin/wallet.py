"""Management API: wallet settings, the domain association file, wallet trust roots and fraud client ids."""

from __future__ import annotations

from vaultcore.admin.router import created, json_body, ok, route
from vaultcore.api.http import Request, Response
from vaultcore.errors import NotFound
from vaultcore.fraud import collector
from vaultcore.wallet import settings as wallet_settings


@route("PUT", "/admin/v1/accounts/{account_id}/wallet")
def put_wallet(request: Request, account_id: str) -> Response:
    return ok(wallet_settings.put_wallet_settings(account_id, json_body(request)))


@route("GET", "/admin/v1/accounts/{account_id}/wallet")
def get_wallet(request: Request, account_id: str) -> Response:
    ws = wallet_settings.get_wallet_settings(account_id, fresh=True)
    if ws is None:
        raise NotFound("No wallet settings for this account.")
    return ok(wallet_settings.wallet_view(ws))


@route("PUT", "/admin/v1/accounts/{account_id}/wallet/domain-association")
def put_domain_association(request: Request, account_id: str) -> Response:
    return ok(wallet_settings.put_association_file(account_id, json_body(request)))


@route("PUT", "/admin/v1/wallet/trust-roots")
def put_trust_roots(request: Request) -> Response:
    return ok(wallet_settings.put_default_trust_roots(json_body(request)))


@route("GET", "/admin/v1/wallet/trust-roots")
def get_trust_roots(request: Request) -> Response:
    return ok(wallet_settings.default_trust_roots_view())


@route("POST", "/admin/v1/accounts/{account_id}/fraud-client")
def create_fraud_client(request: Request, account_id: str) -> Response:
    return created(collector.create_client(account_id))


@route("GET", "/admin/v1/accounts/{account_id}/fraud-client")
def list_fraud_clients(request: Request, account_id: str) -> Response:
    return ok({"clients": collector.list_clients(account_id)})


@route("DELETE", "/admin/v1/accounts/{account_id}/fraud-client/{client_id}")
def disable_fraud_client(request: Request, account_id: str, client_id: str) -> Response:
    return ok(collector.disable_client(account_id, client_id))


@route("GET", "/admin/v1/accounts/{account_id}/fraud-client/{client_id}/devices/{device_trans_id}")
def get_device_report(request: Request, account_id: str, client_id: str, device_trans_id: str) -> Response:
    return ok(collector.device_report(account_id, client_id, device_trans_id))
