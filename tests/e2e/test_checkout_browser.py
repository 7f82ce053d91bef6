"""The checkout demo page in headless Chromium: the collector script runs, the page pays, the SALE is scored.

Chromium is Debian's ``chromium`` package (/usr/bin/chromium); the fixture installs it with apt-get when it is
missing. Nothing downloads a browser of its own. The page is loaded with ``--dump-dom`` and a virtual time
budget: Chromium runs the page's scripts (the collector, then the payment) and prints the final DOM.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess

import pytest

from tests.e2e.http import admin

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def chromium():
    if not os.path.exists(CHROMIUM):
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            pytest.fail("chromium is missing and cannot be installed here (needs root and apt-get)")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True, timeout=600)
        subprocess.run(["apt-get", "install", "-y", "-qq", "chromium"], check=True, env=env, capture_output=True,
                       timeout=1200)
    return CHROMIUM


def test_checkout_page_collects_device_signals_and_the_sale_carries_a_fraud_score(runner, chromium, tmp_path):
    url = runner.base_url + "/_local/checkout?autopay=1"
    out = subprocess.run([chromium, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=15000",
                          "--dump-dom", url], capture_output=True, text=True, timeout=90,
                         env={**os.environ, "TZ": "America/New_York"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert "<title>paid: approved</title>" in out.stdout, out.stdout[-3000:]
    assert re.search(r'id="bcn-status">sent<', out.stdout)
    result = json.loads(html.unescape(re.search(r'<pre id="result">(.*?)</pre>', out.stdout, re.S).group(1)))
    assert result["transaction_approved"] is True and result["last4"] == "4242"
    fraud = result["fraud"]
    assert isinstance(fraud["fraud_score"], int) and fraud["fraud_recommendation"] == "accept", fraud
    assert "no_device_data" not in fraud["fraud_reasons"]
    # What the collector stored for this page load: the browser's own signals, a canvas hash, its time zone.
    checkout = runner.demo["checkout"]
    status, report = admin(runner.base_url, "GET", f"/admin/v1/accounts/{checkout['account_id']}/fraud-client/"
                                                   f"{checkout['fraud_client_id']}/devices/{result['device_trans_id']}")
    assert status == 200 and report["reused"] is False
    signals = report["signals"]
    assert "Chrome" in signals["userAgent"] and signals["timeZone"] == "America/New_York"
    assert re.fullmatch(r"[0-9a-f]{64}", signals["canvasHash"]) and signals["screen"]["width"] > 0
    assert signals["languages"] and signals["tzOffset"] in (-300, -240)
