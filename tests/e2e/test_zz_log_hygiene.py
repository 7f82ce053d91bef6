"""Runs last (file order): the whole end-to-end session's runner output holds no card data and no secret.

Every e2e module before this one drove the same session runner (parser, tokenization, proxy, gateway, wallet,
checkout), so this one scan covers all of them (PCI DSS 3.4, 10.2: no PAN, track, CVV, key or Authorization
value in logs).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

TEST_PANS = sorted(set(re.findall(
    r"\b(?:4\d{15}|5[1-5]\d{14}|3[47]\d{13}|6011\d{12})\b",
    "".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
)))


def test_no_card_number_from_any_e2e_test_is_in_the_logs(runner):
    logs = runner.logs()
    assert "request done" in logs
    assert TEST_PANS, "the scan needs the e2e tests' card numbers"
    leaked = [pan for pan in TEST_PANS if pan in logs]
    assert not leaked, [pan[:6] + "…" for pan in leaked]
    # tracks: start sentinel, PAN, separator (masked forms keep '*' in the PAN)
    assert not re.search(r"[;%]B?\d{13,19}[=^]", logs)


def test_no_credential_of_the_demo_data_is_in_the_logs(runner):
    logs = runner.logs()
    demo = runner.demo
    secrets = []
    for partner in (demo["partner"], demo["keyPartner"]):
        secrets += [partner["partnerKey"], partner["hmacKey"], base64.b64decode(partner["hmacKey"]).decode()]
    for account_key in ("account", "checkout"):
        account = demo.get(account_key) or {}
        secrets += [account.get("api_accesskey"), account.get("postback_secret")]
    for secret in filter(None, secrets):
        assert secret not in logs
    assert "Hmac username" not in logs and 'response="' not in logs and "Basic " not in logs
    assert "BEGIN PRIVATE KEY" not in logs and "0123456789ABCDEFFEDCBA9876543210" not in logs
