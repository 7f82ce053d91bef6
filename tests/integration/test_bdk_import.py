"""BDK import (POST /admin/v1/bdks): clear hex, key components as key ceremonies deliver them (each with its
key check value), HSM ARNs; in-process handlers on moto. Components and check values are published ones
(tests/vectors/bdk_components.json records each source)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import admin
from vaultcore.crypto.kcv import kcv_aes

VECTORS = {e["id"]: e for e in json.loads(
    (Path(__file__).resolve().parent.parent / "vectors" / "bdk_components.json").read_text())["entries"]}
ANSI_BDK = "0123456789ABCDEFFEDCBA9876543210"
IDTECH = VECTORS["idtech-ansi-test-bdk-3-components"]
WORLDNET = VECTORS["worldnet-pax-ansi-test-bdk-2-components"]


def _clear_key(bdk_id: str) -> str:
    from vaultcore.devices.registry import bdk_key_material, get_bdk

    return bdk_key_material(get_bdk(bdk_id)).hex().upper()


def _refused(platform, body) -> str:
    status, answer = admin(platform, "POST", "/admin/v1/bdks", body)
    assert status == 400, answer
    return answer["errMessage"]


@pytest.mark.parametrize("entry", [IDTECH, WORLDNET], ids=lambda e: e["id"])
def test_components_combine_into_the_published_key(platform, entry):
    body = {"scheme": "tdes", "bdkId": "ceremony-1", "components": entry["components"], "kcv": entry["kcv"]}
    status, answer = admin(platform, "POST", "/admin/v1/bdks", body)
    assert status == 201, answer
    assert answer == {"bdkId": "ceremony-1", "scheme": "tdes", "kcv": "08D7B4"}
    assert admin(platform, "GET", "/admin/v1/bdks/ceremony-1")[1]["kcv"] == "08D7B4"
    assert _clear_key("ceremony-1") == ANSI_BDK
    # Component order does not matter; lower case, grouped hex (as forms print it) and no combined kcv are fine.
    grouped = [{"component": " ".join(c["component"].lower()[i:i + 4] for i in range(0, 32, 4)),
                "kcv": c["kcv"].lower(), "custodian": f"custodian {n}"}
               for n, c in enumerate(reversed(entry["components"]))]
    status, answer = admin(platform, "POST", "/admin/v1/bdks", {"scheme": "tdes", "bdkId": "ceremony-2",
                                                               "components": grouped})
    assert status == 201 and answer["kcv"] == "08D7B4" and _clear_key("ceremony-2") == ANSI_BDK


def test_a_parsed_card_through_a_device_on_the_combined_bdk(platform):
    """The combined key is the one devices use: a terminal payload under the ANSI test BDK decrypts."""
    from tests.helpers import call
    from vaultcore.devices import simulator

    assert admin(platform, "POST", "/admin/v1/bdks", {"scheme": "tdes", "bdkId": "bdk-c",
                                                      "components": IDTECH["components"]})[0] == 201
    _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "ceremony", "apiSecurity": "key"})
    assert admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/devices",
                 {"serial": "T-CEREMONY", "deviceType": "terminal", "bdkId": "bdk-c"})[0] == 201
    card = simulator.Card(pan="4761739001010010", expiry="2512", name="SMITH/JOHN", cvv="123")
    fields = simulator.terminal_payload(card, "track2", bdk=bytes.fromhex(ANSI_BDK))
    status, _, out = call(platform, "ParserFunction", "POST", "/api/decrypt/parser", {
        "partnerId": partner["partnerId"], "partnerKey": partner["partnerKey"], "deviceSerial": "T-CEREMONY",
        "reference": "ref-1", **fields})
    assert status == 200 and out["success"] is True, out
    assert out["extracted"]["PAN"] == card.pan


def test_aes_components_and_published_aes_check_values(platform):
    # ANSI X9.143:2021 8.1 / TR-31:2018 A.7.4: AES-128 key 3F419E1C..., KCV 08793E (CMAC method). Split into
    # two components here; their own KCVs are computed with the same (published-value-checked) CMAC method.
    key = bytes.fromhex(VECTORS["x9-143-aes128"]["key"])
    first = bytes.fromhex("00112233445566778899AABBCCDDEEFF")
    second = bytes(a ^ b for a, b in zip(key, first, strict=True))
    components = [{"component": part.hex(), "kcv": kcv_aes(part)} for part in (first, second)]
    status, answer = admin(platform, "POST", "/admin/v1/bdks", {"scheme": "aes128", "bdkId": "aes-c",
                                                               "components": components, "kcv": "08793E"})
    assert (status, answer["kcv"]) == (201, "08793E") and _clear_key("aes-c") == key.hex().upper()
    # payShield 10k AES-256 key and TDES BDK imported whole, with their published KCVs checked.
    for entry, bdk_id in ((VECTORS["payshield-10k-aes256"], "ps-aes"), (VECTORS["payshield-10k-tdes-bdk"], "ps-t")):
        status, answer = admin(platform, "POST", "/admin/v1/bdks", {"scheme": entry["scheme"], "bdkId": bdk_id,
                                                                   "bdk": entry["key"], "kcv": entry["kcv"]})
        assert (status, answer["kcv"]) == (201, entry["kcv"]), answer
    assert "kcv does not match" in _refused(platform, {"scheme": "tdes", "bdk": ANSI_BDK, "kcv": "000000"})


def test_component_refusals_name_the_component_and_never_echo_it(platform):
    parts = [dict(c) for c in IDTECH["components"]]
    secrets = [c["component"] for c in parts] + [ANSI_BDK]

    def refused(body) -> str:
        message = _refused(platform, body)
        assert not [s for s in secrets if s[:8].lower() in message.lower()]
        return message

    bad = [dict(c) for c in parts]
    bad[1]["kcv"] = "ABCDEF"
    assert "components[1].kcv does not match components[1]" in refused({"scheme": "tdes", "components": bad})
    assert "components[1]" not in refused({"scheme": "tdes", "components": parts, "kcv": "ABCDEF"})
    assert "2 or 3" in refused({"scheme": "tdes", "components": parts[:1]})
    assert "2 or 3" in refused({"scheme": "tdes", "components": parts + [parts[0]]})
    assert "2 or 3" in refused({"scheme": "tdes", "components": {"component": parts[0]["component"]}})
    assert "repeated" in refused({"scheme": "tdes", "components": [parts[0], dict(parts[0])]})
    short = {"component": parts[2]["component"][:16], "kcv": "000000"}
    assert "same length" in refused({"scheme": "tdes", "components": [parts[0], parts[1], short]})
    assert "64 hex characters for scheme aes256" in refused({"scheme": "aes256", "components": parts})
    assert "components[2].component must be hex" in refused({"scheme": "tdes", "components": [
        parts[0], parts[1], {"component": "XYZ", "kcv": "000000"}]})
    assert "components[0].kcv" in refused({"scheme": "tdes", "components": [
        {"component": parts[0]["component"]}, parts[1]]})
    assert "components[1] must be an object" in refused({"scheme": "tdes", "components": [parts[0], "x"]})
    # Three components where the third cancels the first two: an all-zero key.
    zero_third = {"component": bytes(a ^ b for a, b in zip(bytes.fromhex(parts[0]["component"]),
                                                          bytes.fromhex(parts[1]["component"]), strict=True)).hex()}
    from vaultcore.crypto.kcv import kcv_tdes

    zero_third["kcv"] = kcv_tdes(bytes.fromhex(zero_third["component"]))
    assert "all-zero" in refused({"scheme": "tdes", "components": [parts[0], parts[1], zero_third]})
    assert "one of bdk, components or hsmKeyArn" in refused({"scheme": "tdes", "components": parts, "bdk": ANSI_BDK})
    # Nothing was stored by any refusal.
    assert admin(platform, "GET", "/admin/v1/bdks/ceremony-x")[0] == 404


@pytest.mark.parametrize("scheme", [7, ["tdes"], {"tdes": 1}, None, "des"])
def test_a_scheme_that_is_not_a_known_string_is_400(platform, scheme):
    assert "scheme must be one of" in _refused(platform, {"scheme": scheme, "bdk": ANSI_BDK})


def test_clear_components_are_refused_outside_cert(platform, monkeypatch):
    from vaultcore.settings import reset_settings

    monkeypatch.setenv("ENVIRONMENT", "prod")
    reset_settings()
    for body in ({"scheme": "tdes", "components": IDTECH["components"]}, {"scheme": "tdes", "bdk": ANSI_BDK}):
        assert "certification environment only" in _refused(platform, body)
    arn = "arn:aws:payment-cryptography:us-east-1:123456789012:key/abcdef123456"
    status, answer = admin(platform, "POST", "/admin/v1/bdks", {"scheme": "tdes", "hsmKeyArn": arn, "kcv": "08d7b4"})
    assert (status, answer["kcv"], answer["hsmKeyArn"]) == (201, "08D7B4", arn)
