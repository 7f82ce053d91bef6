"""Demo gateway account for the local runner: auto-tokenization, token payments and credits on (every option a
merchant tests in the certification sandbox that needs no further setup), the demo partner's keys."""

from __future__ import annotations

from typing import Any

from local.admin_client import admin


def seed_gateway(base_url: str, demo: dict[str, Any]) -> dict[str, Any]:
    account = admin(base_url, "POST", "/admin/v1/accounts", {
        "partnerId": "demo", "postback_url": None,
        "options": {"tokenization": True, "token_payments": True, "token_data_in_postback": False,
                    "token_data_in_rsapi": False, "fraud_scoring": False, "credit": True}})
    return {"account": account}
