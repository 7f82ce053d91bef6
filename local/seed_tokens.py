"""Demo tokenization data: one template for each demo partner, created through the management API."""

from __future__ import annotations

from typing import Any

from local.admin_client import admin

DEMO_TEMPLATE_REF = "DEMO"
DEMO_TEMPLATE = {
    "templateRef": DEMO_TEMPLATE_REF,
    "name": "Demo card, expiry, e-mail and zip",
    "fields": [
        {"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
        {"name": "vault_token_card_expiration", "type": "date", "format": "NONE", "minLength": 4, "maxLength": 4},
        {"name": "vault_token_email", "type": "email", "format": "NONE"},
        {"name": "vault_token_zip", "type": "address", "format": "NONE", "minLength": 3, "maxLength": 10},
    ],
}


def seed_tokens(base_url: str, demo: dict[str, Any]) -> dict[str, Any]:
    """The demo template for the demo partners; its templateRef goes into the demo dict under "template"."""
    for partner in (demo["partner"], demo["keyPartner"]):
        admin(base_url, "POST", f"/admin/v1/partners/{partner['partnerId']}/templates", DEMO_TEMPLATE)
    return {"template": DEMO_TEMPLATE_REF}
