"""Demo data of the features built after the foundation; local.seed calls seed() when this module exists."""

from __future__ import annotations

from typing import Any


def seed(base_url: str, demo: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    from local.seed_tokens import seed_tokens

    out.update(seed_tokens(base_url, demo))
    from local.seed_gateway import seed_gateway

    out.update(seed_gateway(base_url, demo))
    from local.seed_proxy import seed_proxy

    out.update(seed_proxy(base_url, demo))
    from local.seed_wallet import seed_wallet

    out.update(seed_wallet(base_url, demo))
    return out
