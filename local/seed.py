"""Demo data for the local runner, created through the management API like an operator would."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from vaultcore.devices.simulator import DEFAULT_BDK

# The reader vendors' published demo BDK (ANSI X9.24-1 test key), the simulator's default for each scheme.
DEMO_BDK = DEFAULT_BDK["tdes"]
DEMO_AES_BDK = DEFAULT_BDK["aes128"]


def admin(base_url: str, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base_url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - loopback management API
        return json.loads(resp.read() or b"{}")


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
    try:
        from local import seed_more
    except ImportError:
        return demo
    demo.update(seed_more.seed(base_url, demo))
    return demo
