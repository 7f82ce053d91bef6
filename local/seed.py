"""Demo data for the local runner, created through the management API like an operator would: the foundation's
partners, BDKs and devices here, then each later feature's part (tokens, gateway, proxy, wallet)."""

from __future__ import annotations

from typing import Any

from local.admin_client import admin
from local.seed_gateway import seed_gateway
from local.seed_proxy import seed_proxy
from local.seed_tokens import seed_tokens
from local.seed_wallet import seed_wallet
from vaultcore.crypto.dukpt import Scheme
from vaultcore.devices.simulator import DEFAULT_BDK

__all__ = ["DEMO_BDK", "DEMO_AES_BDK", "admin", "seed"]

# The reader vendors' published demo BDK (ANSI X9.24-1 test key), the simulator's default for each scheme.
DEMO_BDK = DEFAULT_BDK[Scheme.TDES]
DEMO_AES_BDK = DEFAULT_BDK[Scheme.AES128]


def seed(base_url: str) -> dict[str, Any]:
    partner = admin(base_url, "POST", "/admin/v1/partners", {"name": "Demo Partner", "apiSecurity": "hmac",
                                                             "partnerId": "demo"})
    key_partner = admin(base_url, "POST", "/admin/v1/partners", {"name": "Demo Key Partner", "apiSecurity": "key",
                                                                 "partnerId": "demokey"})
    bdk = admin(base_url, "POST", "/admin/v1/bdks", {"bdk": DEMO_BDK, "scheme": "tdes", "bdkId": "demo-tdes"})
    aes_bdk = admin(base_url, "POST", "/admin/v1/bdks", {"bdk": DEMO_AES_BDK, "scheme": "aes128", "bdkId": "demo-aes"})
    devices = []
    for pid in ("demo", "demokey"):
        devices.append(admin(base_url, "POST", f"/admin/v1/partners/{pid}/devices",
                             {"serial": "DEMO-TERM-0001", "deviceType": "terminal", "bdkId": "demo-tdes",
                              "firmware": "1.0.0"}))
        devices.append(admin(base_url, "POST", f"/admin/v1/partners/{pid}/devices",
                             {"serial": "DEMO-TERM-AES1", "deviceType": "terminal", "bdkId": "demo-aes"}))
        devices.append(admin(base_url, "POST", f"/admin/v1/partners/{pid}/devices",
                             {"serial": "DEMO-AUDIO-0001", "deviceType": "audio-reader", "bdkId": "demo-tdes"}))
    demo: dict[str, Any] = {"partner": partner, "keyPartner": key_partner, "bdks": [bdk, aes_bdk],
                            "devices": devices}
    # Each part reads what came before it (the partners; the proxy's configurations use the DEMO template).
    for part in (seed_tokens, seed_gateway, seed_proxy, seed_wallet):
        demo.update(part(base_url, demo))
    return demo
