"""Tokenization over real HTTP against the local runner: HMAC-signed tokenize calls (plain values and a
simulator-made dev-payload), Basic for the key-security partner, errors, and logs free of values and tokens."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

from local.client import sign
from tests.e2e.http import admin, request
from vaultcore.devices import simulator
from vaultcore.devices.simulator import Card

ROOT = Path(__file__).resolve().parents[2]
PATH = "/api/tokenization/tokenize"
PAN = "4242424242424242"
VALUES = {"vault_token_card_number": PAN, "vault_token_card_expiration": "0731",
          "vault_token_email": "e2e.person@example.org", "vault_token_zip": "30301"}
CARD = Card(pan="4761739001010010", expiry="2512", name="SMITH/JOHN")
_seen: dict[str, list[str]] = {"values": list(VALUES.values()) + [CARD.pan], "tokens": []}


def _body(values: dict[str, str] | None, **extra) -> bytes:
    body = {"reference": "e2e-tok", "templateRef": extra.pop("templateRef", None), **extra}
    if values is not None:
        body["values"] = [{"name": k, "value": v} for k, v in values.items()]
    return json.dumps(body).encode()


def _post(runner, body: bytes, headers: dict[str, str] | None = None, partner=None):
    partner = partner or runner.demo["partner"]
    url = runner.base_url + PATH
    auth = {"Authorization": sign(partner["partnerId"], partner["hmacKey"], url, body)}
    status, _, data = request(url, body, {**auth, **(headers or {})})
    answer = json.loads(data)
    if status == 200:
        _seen["tokens"] += [v["value"] for v in answer.get("values", [])]
    return status, answer


def test_tokenize_plain_values_with_the_signing_client(runner):
    template = runner.demo["template"]
    body = _body(VALUES, templateRef=template).decode()
    partner = runner.demo["partner"]
    out = subprocess.run([sys.executable, "-m", "local.client", "--url", runner.base_url + PATH, "--partner-id",
                          partner["partnerId"], "--hmac-key", partner["hmacKey"], "--data", body],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout)
    assert answer["success"] is True and answer["reference"] == "e2e-tok" and len(answer["messageId"]) == 25
    assert 30 <= len(answer["bfid"]) <= 150
    tokens = {v["name"]: v["value"] for v in answer["values"]}
    _seen["tokens"] += list(tokens.values())
    assert set(tokens) == set(VALUES)
    card = tokens["vault_token_card_number"]
    assert card != PAN and card[:6] == PAN[:6] and card[-4:] == PAN[-4:] and card.isdigit()
    assert tokens["vault_token_email"].count("@") == 1 and len(tokens["vault_token_zip"]) == 5
    # a new call is a new bfid, so new tokens for the same values
    status, again = _post(runner, _body(VALUES, templateRef=template))
    assert status == 200 and again["bfid"] != answer["bfid"]
    assert {v["name"]: v["value"] for v in again["values"]}["vault_token_card_number"] != card


def test_tokenize_with_a_simulator_dev_payload(runner):
    fields = simulator.terminal_payload(CARD, "track2")
    headers = {"dev-device-serial": "DEMO-TERM-0001", "dev-device-type": fields["deviceType"],
               "dev-payload": fields["devicePayload"], "dev-ksn": fields["ksn"]}
    status, answer = _post(runner, _body({"vault_token_zip": "30301"}, templateRef=runner.demo["template"]), headers)
    assert status == 200, answer
    tokens = {v["name"]: v["value"] for v in answer["values"]}
    assert set(tokens) == {"vault_token_card_number", "vault_token_card_expiration", "vault_token_zip"}
    assert tokens["vault_token_card_number"][:6] == CARD.pan[:6] and tokens["vault_token_card_number"] != CARD.pan
    # an audio reader carries its KSN inside the payload
    audio = simulator.audio_reader_payload(CARD, "swiped")
    headers = {"dev-device-serial": "DEMO-AUDIO-0001", "dev-device-type": audio["deviceType"],
               "dev-payload": audio["devicePayload"]}
    status, answer = _post(runner, _body(None, templateRef=runner.demo["template"], omit=True), headers)
    assert status == 200 and "values" not in answer and answer["bfid"]


def test_basic_auth_for_the_key_partner_and_errors(runner):
    key_partner = runner.demo["keyPartner"]
    url = runner.base_url + PATH
    body = _body(VALUES, templateRef=runner.demo["template"])
    basic = base64.b64encode(f"{key_partner['partnerId']}:{key_partner['partnerKey']}".encode()).decode()
    status, _, data = request(url, body, {"Authorization": f"Basic {basic}"})
    assert status == 200, data
    _seen["tokens"] += [v["value"] for v in json.loads(data)["values"]]
    assert request(url, body)[0] == 401
    for values, template, code in (({"vault_token_card_number": "4242424242424241"}, runner.demo["template"], 3003),
                                   ({"nope": "x"}, runner.demo["template"], 3002),
                                   ({"vault_token_zip": "30301"}, "NOSUCH", 3001)):
        status, answer = _post(runner, _body(values, templateRef=template))
        assert (status, answer["errCode"], answer["reference"]) == (409, code, "e2e-tok")  # "Invalid data"
        assert "4242424242424241" not in answer["errMessage"]


def test_management_calls_over_http(runner):
    pid = runner.demo["partner"]["partnerId"]
    status, listing = admin(runner.base_url, "GET", f"/admin/v1/partners/{pid}/templates")
    assert status == 200 and {t["templateRef"] for t in listing["templates"]} >= {"GATEWAY", runner.demo["template"]}
    status, ring = admin(runner.base_url, "GET", f"/admin/v1/partners/{pid}/token-keys")
    assert status == 200 and [k["status"] for k in ring["keys"]] == ["current"]


def test_logs_hold_no_clear_value_or_token(runner):
    """After this module's calls: the runner's whole output holds none of the values sent nor tokens returned.

    Values and tokens shorter than 10 characters (a 4-digit expiry, a zip) are left out of the scan: they occur
    by chance inside timestamps and request ids, so finding one would prove nothing.
    """
    logs = runner.logs()
    assert "values tokenized" in logs
    long_ones = [s for s in _seen["values"] + _seen["tokens"] if len(s) >= 10]
    assert len(long_ones) >= 10
    for secret in long_ones:
        assert secret not in logs, "a clear value or a token reached the logs"
