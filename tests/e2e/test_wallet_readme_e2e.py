"""The "Wallet payments" page (docs/integrators/wallets.md), followed literally against the runner.

Every ```sh block of the section runs as written, in order, in one bash: the wallet sandbox CLI configures the
demo shop account, a generated token pays an APay SALE (approved), the merchant session call succeeds through
the runner's mutual-TLS stand-in for the vendor, then /paymentMethods and /payments. Only the interpreter
(``.venv/bin/python``) and the place of ``.local`` (a symlink to the test runner's state directory, in a scratch
working directory) are the test's: the base URL comes from that runner's ``.local/demo.json``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def wallet_section() -> str:
    page = (ROOT / "docs" / "integrators" / "wallets.md").read_text()
    assert page.startswith("# Wallet payments\n")
    return page


def wallet_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", wallet_section(), re.S)


def _json_documents(text: str) -> list:
    decoder, pos = json.JSONDecoder(), 0
    out: list = []
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return out
        value, pos = decoder.raw_decode(text, pos)
        out.append(value)


@pytest.mark.skipif(not shutil.which("curl"), reason="the examples of docs/integrators/wallets.md use curl")
def test_the_wallet_section_runs_as_written(runner, tmp_path):
    blocks = wallet_blocks()
    assert len(blocks) == 2, "the wallet section's sh blocks changed: update this test with them"
    script = "\n".join(blocks)
    assert "-----BEGIN" not in script  # no placeholder PEMs: the commands use the sandbox's files
    script = "\n".join(line for line in script.splitlines() if not line.startswith("make run"))
    script = script.replace(".venv/bin/python", sys.executable)
    assert not re.search(r"127\.0\.0\.1:\d|localhost:\d", script), script  # the address comes from demo.json
    assert 'BASE=$(python3' in script and '["baseUrl"]' in script
    state = runner.stdout.parent
    (tmp_path / ".local").symlink_to(state, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["bash", "-c", "set -e\n" + script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    configured, token, sale, wallet_session, methods, token2, payment, put = _json_documents(done.stdout)

    demo = json.loads((state / "demo.json").read_text())
    assert configured["configured"]["status"] == 200
    assert configured["configured"]["account_id"] == demo["checkout"]["account_id"]
    assert configured["configured"]["response"]["trust_roots"] == [{"sha256": configured["trust_root"]["sha256"]}]
    # the tokens are written under .local/, never into the repository's root
    assert token["token"]["file"] == ".local/token.json" and token2["token"]["file"] == ".local/token2.json"
    assert not list(tmp_path.glob("*.json")), list(tmp_path.iterdir())
    # The APay SALE with the generated token is approved.
    assert sale["transaction_approved"] is True and sale["error_code"] == 0, sale
    assert (sale["tender_type"], sale["card_brand"], sale["last4"], sale["transaction_amount"]) == (
        "APay", "VISA", "1111", 10.0)
    # The merchant session comes from the runner's stand-in, over mutual TLS with the sandbox identity.
    assert wallet_session["merchantSessionIdentifier"].startswith("SSH"), wallet_session
    assert wallet_session["domainName"] == "shop.example.com" and wallet_session["displayName"] == "Demo shop"
    assert demo["walletVendor"]["url"].startswith("https://localhost:")
    assert "applepay" in [m["type"] for m in methods["paymentMethods"]]
    assert payment["resultCode"] == "Authorized" and payment["merchantReference"] == "order-1", payment
    assert re.fullmatch(r"\d{12}", payment["pspReference"])
    assert put["merchant_identifier"] == "merchant.com.example.shop" and put["domains"] == ["shop.example.com"]
    assert not (tmp_path / "wallet-settings.json").exists()  # the section removes the file with the keys

    # Nothing the section handled leaks into the runner's logs: no key material, no device account number.
    logs = runner.logs()
    for key_file in (state / "wallet-sandbox").glob("*-key.pem"):
        body = [line for line in key_file.read_text().splitlines() if "-----" not in line]
        assert not [line for line in body if line in logs], key_file.name
    assert "4111111111111111" not in logs
