"""What no runner log may hold (PCI DSS 3.4, 10.2): no PAN, track, CVV, key or Authorization value.

One check, used twice: by ``test_zz_log_hygiene.py`` (a named test, last in file order) and by the session
runner's teardown (``tests/e2e/conftest.py``). Under pytest-xdist each worker has a runner of its own and the
named test sees only its worker's; the teardown scans every worker's runner once all of its tests are done.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

TEST_PANS = sorted(set(re.findall(
    r"\b(?:4\d{15}|5[1-5]\d{14}|3[47]\d{13}|6011\d{12})\b",
    "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
)))

#: Fixed texts that only a leak could put in a log: header forms of credentials, a private key, the demo BDK.
FORBIDDEN_TEXTS = ("Hmac username", 'response="', "Basic ", "BEGIN PRIVATE KEY", "0123456789ABCDEFFEDCBA9876543210")


def demo_secrets(demo: dict[str, Any]) -> list[str]:
    """Every credential of the runner's demo data, in each form a client sends it."""
    secrets: list[str | None] = []
    for partner in (demo["partner"], demo["keyPartner"]):
        secrets += [partner["partnerKey"], partner["hmacKey"], base64.b64decode(partner["hmacKey"]).decode()]
    for account_key in ("account", "checkout"):
        account = demo.get(account_key) or {}
        secrets += [account.get("api_accesskey"), account.get("postback_secret")]
    return [s for s in secrets if s]


def leaks(logs: str, demo: dict[str, Any]) -> list[str]:
    """What of the forbidden is in ``logs``, each named without its value (a PAN by its first six only)."""
    found = [f"card number {pan[:6]}…" for pan in TEST_PANS if pan in logs]
    if re.search(r"[;%]B?\d{13,19}[=^]", logs):  # tracks: start sentinel, PAN, separator (masked forms keep '*')
        found.append("a clear track")
    found += [f"demo credential #{n}" for n, secret in enumerate(demo_secrets(demo)) if secret in logs]
    found += [f"the text {text[:12]!r}" for text in FORBIDDEN_TEXTS if text in logs]
    return found
