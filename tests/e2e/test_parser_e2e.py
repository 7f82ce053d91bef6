"""The parser over HTTP through the local runner: every idtech.json example, simulator round trips, no leaks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.http import admin, post_json
from vaultcore.devices import simulator
from vaultcore.devices.simulator import Card

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "idtech.json").read_text())["entries"]
CARD = Card(pan="4761739001010010", expiry="2512", name="SMITH/JOHN", cvv="123")


@pytest.fixture(scope="module")
def reader_partner(runner):
    status, partner = admin(runner.base_url, "POST", "/admin/v1/partners", {"name": "E2E Readers", "apiSecurity": "key"})
    assert status == 201
    status, _ = admin(runner.base_url, "POST", "/admin/v1/bdks", {"bdk": "0123456789ABCDEFFEDCBA9876543210",
                                                                   "scheme": "tdes", "bdkId": "e2e-idtech"})
    assert status in (201, 409)
    for serial, dtype, bdk in (("E2E-T", "terminal", "e2e-idtech"), ("E2E-PIN", "terminal-pin-variant", "e2e-idtech"),
                               ("E2E-A", "audio-reader", "e2e-idtech"), ("E2E-T-AES", "terminal", "demo-aes"),
                               ("E2E-A-AES", "audio-reader", "demo-aes")):
        status, body = admin(runner.base_url, "POST", f"/admin/v1/partners/{partner['partnerId']}/devices",
                             {"serial": serial, "deviceType": dtype, "bdkId": bdk})
        assert status == 201, body
    return partner


def _parse(runner, partner, **fields):
    return post_json(runner.base_url + "/api/decrypt/parser",
                     {"partnerId": partner["partnerId"], "partnerKey": partner["partnerKey"], **fields})


def _strip_lrc(track: str) -> str:
    return track[: track.index("?") + 1]


def test_idtech_track_blocks_decrypt_to_their_tracks(runner, reader_partner):
    for entry in (e for e in VECTORS if e["type"] == "idtech_track_blocks"):
        for enc, expected in (("t1_encrypted_hex", "expected_t1"), ("t2_encrypted_hex", "expected_t2")):
            status, body = _parse(runner, reader_partner, deviceType="terminal", deviceSerial="E2E-T",
                                  ksn=entry["ksn"], devicePayload=entry[enc])
            assert status == 200, body
            section = body["track1"] if expected == "expected_t1" else body["track2"]
            assert section["ascii"] == _strip_lrc(entry[expected])
            assert section["encoding"] == "ascii" and section["length"] == len(section["ascii"])
            assert body["extracted"]["PAN"] == "4266841088889999" and body["extracted"]["EXPY"] == "0908"


def test_idtech_library_track1_and_emv_block(runner, reader_partner):
    hogan = next(e for e in VECTORS if e["id"] == "data-key-e00008-hogan")
    status, body = _parse(runner, reader_partner, deviceType="terminal", deviceSerial="E2E-T", ksn=hogan["ksn"],
                          devicePayload=hogan["ciphertext_hex"])
    assert status == 200 and body["track1"]["ascii"] == hogan["plaintext_ascii_zero_padded"].rstrip("\x00")
    assert body["extracted"]["Surname"] == "HOGAN" and body["extracted"]["FirstName"] == "PAUL"
    emv = next(e for e in VECTORS if e["id"] == "data-key-emv-tlv-block")
    status, body = _parse(runner, reader_partner, deviceType="terminal", deviceSerial="E2E-T", ksn=emv["ksn"],
                          devicePayload=emv["ciphertext_hex"])
    assert status == 200 and body["meta"]["mode"] == "swiped" and body["track2"]["encoding"] == "hex"
    assert body["extracted"]["PAN"] == "4761739001010010" and body["extracted"]["EXPY"] == "1215"


def test_magtek_pin_variant_needs_its_profile(runner, reader_partner):
    magtek = next(e for e in VECTORS if e["type"] == "magtek_track_blocks")
    status, body = _parse(runner, reader_partner, deviceType="terminal", deviceSerial="E2E-T", ksn=magtek["ksn"],
                          devicePayload=magtek["t2_encrypted_hex"])
    assert status == 400 and body["errCode"] == 2603  # the data-variant key cannot read it
    status, body = _parse(runner, reader_partner, deviceType="terminal-pin-variant", deviceSerial="E2E-PIN",
                          ksn=magtek["ksn"], devicePayload=magtek["t2_encrypted_hex"])
    assert status == 200 and body["track2"]["ascii"] == magtek["expected_t2"]


@pytest.mark.parametrize("scheme", ["tdes", "aes128"])
def test_simulator_round_trips_every_mode_and_device_type(runner, reader_partner, scheme):
    bdk = bytes.fromhex("0123456789ABCDEFFEDCBA9876543210") if scheme == "tdes" else None
    suffix = "" if scheme == "tdes" else "-AES"
    for mode in simulator.TERMINAL_MODES:
        fields = simulator.terminal_payload(CARD, mode, scheme=scheme, bdk=bdk)
        status, body = _parse(runner, reader_partner, deviceSerial="E2E-T" + suffix, **fields)
        assert status == 200 and body["extracted"]["PAN"] == CARD.pan, (mode, body)
    for mode in simulator.AUDIO_READER_MODES:
        for framed in (False, True):
            fields = simulator.audio_reader_payload(CARD, mode, scheme=scheme, bdk=bdk, framed=framed)
            status, body = _parse(runner, reader_partner, deviceSerial="E2E-A" + suffix, **fields)
            assert status == 200 and body["extracted"]["PAN"] == CARD.pan, (mode, body)


def test_no_clear_card_data_or_keys_in_logs(runner, reader_partner):
    fields = simulator.terminal_payload(CARD, "track1")
    assert _parse(runner, reader_partner, deviceSerial="E2E-T", **fields)[0] == 200
    logs = runner.logs()
    for secret in (CARD.pan, "4266841088889999", "5452300551227189", "4761739001010010D", "HOGAN/PAUL",
                   "0123456789ABCDEFFEDCBA9876543210", reader_partner["partnerKey"], fields["devicePayload"]):
        assert secret not in logs, secret
