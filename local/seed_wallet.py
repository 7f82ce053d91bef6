"""Demo checkout account for the local runner: fraud scoring on, a device collection client id."""

from __future__ import annotations

from typing import Any

from local.admin_client import admin


def seed_wallet(base_url: str, demo: dict[str, Any]) -> dict[str, Any]:
    account = admin(base_url, "POST", "/admin/v1/accounts", {"options": {"fraud_scoring": True}})
    client = admin(base_url, "POST", f"/admin/v1/accounts/{account['account_id']}/fraud-client")
    return {"checkout": {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
                         "fraud_client_id": client["client_id"], "page": "/_local/checkout"}}
