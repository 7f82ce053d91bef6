"""The parser over HTTP through the local runner: every idtech.json example, the published ID TECH frames of
idtech_frames.json (through /api/decrypt/parser and through a proxy parser action), simulator round trips in
the original and enhanced formats, no leaks."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from tests.e2e.http import admin, post_json, request
from tests.proxy_target import Target
from vaultcore.devices import simulator
from vaultcore.devices.simulator import Card

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "idtech.json").read_text())["entries"]
FRAMES = {e["id"]: e for e in json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "idtech_frames.json").read_text())["entries"]}
MS246 = FRAMES["ms246-original-3track-frame"]
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


def test_published_frames_through_the_parser(runner, reader_partner):
    # E2E-A is registered on the manuals' demo BDK (e2e-idtech = 0123456789ABCDEFFEDCBA9876543210)
    assert MS246["bdk"] == "0123456789ABCDEFFEDCBA9876543210"
    for entry in FRAMES.values():
        status, body = _parse(runner, reader_partner, deviceType="audio-reader", deviceSerial="E2E-A",
                              reference=entry["id"][:50], devicePayload=entry["frame_hex"])
        assert status == 200, (entry["id"], body)
        assert body["reference"] == entry["id"][:50] and body["meta"]["mode"] == "swiped"
        assert body["track1"]["ascii"] == _strip_lrc(entry["expected_t1"])
        assert body["track2"]["ascii"] == _strip_lrc(entry["expected_t2"])
        assert body["extracted"]["PAN"] == "4266841088889999" and body["extracted"]["EXPY"] == "0908"
        assert body["extracted"]["Surname"] == "BUSH JR" and "track3" not in body


def test_published_frame_refusals_over_http(runner, reader_partner):
    frame = MS246["frame_hex"]
    cases = [("E2E-A-AES", frame, 2110),  # an AES DUKPT device: 16-byte blocks and a 12-byte KSN do not fit
             ("E2E-A", frame[:-6] + "00" + frame[-4:], 2130),  # CheckLRC
             ("E2E-A", frame[:-2], 2150)]
    for serial, payload, code in cases:
        status, body = _parse(runner, reader_partner, deviceType="audio-reader", deviceSerial=serial,
                              devicePayload=payload)
        assert (status, body["errCode"]) == (400, code), (serial, body)
        # no card digits in the refusal (the random 25-digit messageId is left out: it holds "4266" by chance)
        assert "4266" not in json.dumps({k: v for k, v in body.items() if k != "messageId"})


def test_published_frame_through_a_proxy_parser_action(runner, reader_partner):
    subs = [{"transformationSource": "body", "transformationType": "jsonpath", "transformationPath": path,
             "dataType": "string", "format": fmt}
            for path, fmt in (("$.card.number", "pan"), ("$.card.expiry", "expiry"), ("$.card.name", "surname"),
                              ("$.card.track2", "track2"))]
    with Target() as target:
        doc = {"proxy": {"authorization": {"type": "passthrough", "headerName": "X-Target-Key"}, "method": "post",
                         "target": target.url + "/echo"},
               "actions": [{"type": "parser", "authorization": {"type": "passthrough"}, "substitutions": subs}]}
        status, created = admin(runner.base_url, "POST",
                                f"/admin/v1/partners/{reader_partner['partnerId']}/proxy-configurations", doc)
        assert status == 201, created
        path = f"/api/v1/partners/{reader_partner['partnerId']}/configurations/{created['configReferenceID']}"
        basic = base64.b64encode(f"{reader_partner['partnerId']}:{reader_partner['partnerKey']}".encode()).decode()
        headers = {"Authorization": "Basic " + basic, "X-Target-Key": "target-api-key",
                   "dev-device-serial": "E2E-A", "dev-device-type": "audio-reader", "dev-payload": MS246["frame_hex"]}
        body = {"card": {"number": None, "expiry": None, "name": None, "track2": None}, "amount": "10.00"}
        status, _, data = request(runner.base_url + path, json.dumps(body), headers)
        assert status == 200, data
        forwarded = json.loads(target.seen[-1]["body"])
        assert forwarded == {"card": {"number": "4266841088889999", "expiry": "0908", "name": "BUSH JR",
                                      "track2": "4266841088889999=080910110000046"}, "amount": "10.00"}
        # a frame whose CheckLRC is wrong: the parser action fails with the parser's own code (8102 carries
        # 2130), and nothing reaches the target
        seen = len(target.seen)
        broken = MS246["frame_hex"][:-6] + "00" + MS246["frame_hex"][-4:]
        status, _, data = request(runner.base_url + path, json.dumps(body), {**headers, "dev-payload": broken})
        assert status == 400 and json.loads(data)["code"] == 8102 and "(code 2130)" in json.loads(data)["message"]
        assert len(target.seen) == seen


@pytest.mark.parametrize("payload_format", ["enhanced", "unimag-ii"])
def test_simulator_enhanced_formats(runner, reader_partner, payload_format):
    bdk = bytes.fromhex("0123456789ABCDEFFEDCBA9876543210")
    for scheme, serial, key in (("tdes", "E2E-A", bdk), ("aes128", "E2E-A-AES", None)):
        for framed in (False, True):
            fields = simulator.audio_reader_payload(CARD, "swiped", scheme=scheme, bdk=key, framed=framed,
                                                    payload_format=payload_format)
            status, body = _parse(runner, reader_partner, deviceSerial=serial, **fields)
            assert status == 200 and body["extracted"]["PAN"] == CARD.pan, (scheme, framed, body)
    fields = simulator.audio_reader_payload(CARD, "swiped", bdk=bdk, payload_format=payload_format,
                                            aes_data_key=True)
    status, body = _parse(runner, reader_partner, deviceSerial="E2E-A", **fields)
    assert status == 200 and body["extracted"]["PAN"] == CARD.pan, body


def test_no_clear_card_data_or_keys_in_logs(runner, reader_partner):
    fields = simulator.terminal_payload(CARD, "track1")
    assert _parse(runner, reader_partner, deviceSerial="E2E-T", **fields)[0] == 200
    logs = runner.logs()
    for secret in (CARD.pan, "4266841088889999", "5452300551227189", "4761739001010010D", "HOGAN/PAUL",
                   "0123456789ABCDEFFEDCBA9876543210", reader_partner["partnerKey"], fields["devicePayload"]):
        assert secret not in logs, secret
