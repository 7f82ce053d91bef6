"""The parser endpoint in-process on moto: simulator round trips, errors, the HSM adapter, no 500s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import admin, call
from vaultcore.crypto.dukpt import Scheme
from vaultcore.devices import simulator
from vaultcore.devices.simulator import Card

TDES_BDK = simulator.DEFAULT_BDK[Scheme.TDES]
AES_BDK = simulator.DEFAULT_BDK[Scheme.AES128]


@pytest.fixture
def partner(platform):
    _, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Readers Inc", "apiSecurity": "key"})
    admin(platform, "POST", "/admin/v1/bdks", {"bdk": TDES_BDK, "scheme": "tdes", "bdkId": "bdk-t1"})
    admin(platform, "POST", "/admin/v1/bdks", {"bdk": AES_BDK, "scheme": "aes128", "bdkId": "bdk-a1"})
    for serial, dtype, bdk in (("T-TDES", "terminal", "bdk-t1"), ("T-AES", "terminal", "bdk-a1"),
                               ("A-TDES", "audio-reader", "bdk-t1"), ("A-AES", "audio-reader", "bdk-a1")):
        status, _ = admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/devices",
                          {"serial": serial, "deviceType": dtype, "bdkId": bdk})
        assert status == 201
    return p


def _parse(platform, partner, fields, serial, **extra):
    body = {"partnerId": partner["partnerId"], "partnerKey": partner["partnerKey"], "deviceSerial": serial,
            "reference": "ref-1", **fields, **extra}
    return call(platform, "ParserFunction", "POST", "/api/decrypt/parser", body)


CARD = Card(pan="4761739001010010", expiry="2512", name="SMITH/JOHN", cvv="123")


@pytest.mark.parametrize("scheme, serial", [("tdes", "T-TDES"), ("aes128", "T-AES")])
@pytest.mark.parametrize("mode", ["keyed", "track1", "track2", "emv57", "emv5a"])
def test_terminal_round_trip(platform, partner, scheme, serial, mode):
    fields = simulator.terminal_payload(CARD, mode, scheme=scheme)
    status, _, body = _parse(platform, partner, fields, serial)
    assert status == 200, body
    assert body["success"] is True and body["reference"] == "ref-1" and len(body["messageId"]) == 25
    assert body["extracted"]["PAN"] == CARD.pan
    assert body["meta"] == {"device": "terminal", "serial": serial, "mode": "keyed" if mode == "keyed" else "swiped"}
    if mode == "keyed":
        assert body["keyed"]["ascii"].startswith(CARD.pan) and body["extracted"]["EXPY"] == "1225"
        assert CARD.pan not in body["keyed"]["masked"]
    else:
        assert ("track1" in body) == (mode == "track1")
        section = body["track1"] if mode == "track1" else body["track2"]
        assert CARD.pan not in section["masked"] and section["length"] == len(bytes.fromhex(section["decrypted"]))
    if mode in ("track1", "track2", "emv57"):
        assert body["extracted"]["EXPY"] == "1225" and body["extracted"]["ServiceCode"] == CARD.service_code
    if mode == "track1":
        assert body["extracted"]["Surname"] == "SMITH" and body["extracted"]["FirstName"] == "JOHN"
        assert body["track1"]["ascii"].startswith("%B4761739001010010^SMITH/JOHN^2512")


@pytest.mark.parametrize("scheme, serial", [("tdes", "A-TDES"), ("aes128", "A-AES")])
@pytest.mark.parametrize("mode", ["swiped", "track1", "track2"])
@pytest.mark.parametrize("framed", [False, True])
def test_audio_reader_round_trip(platform, partner, scheme, serial, mode, framed):
    fields = simulator.audio_reader_payload(CARD, mode, scheme=scheme, framed=framed)
    status, _, body = _parse(platform, partner, fields, serial)
    assert status == 200, body
    assert body["extracted"]["PAN"] == CARD.pan and body["meta"]["mode"] == "swiped"
    assert ("track1" in body) == (mode in ("swiped", "track1"))
    assert ("track2" in body) == (mode in ("swiped", "track2"))


def test_errors(platform, partner):
    good = simulator.terminal_payload(CARD, "track2")
    cases = [
        ({"deviceType": None}, "T-TDES", 400, 2000),
        ({"deviceType": "toaster"}, "T-TDES", 400, 2001),
        ({"deviceType": "audio-reader"}, "T-TDES", 400, 2001),
        ({"ksn": None}, "T-TDES", 400, 2400),
        ({"ksn": "FFFF"}, "T-TDES", 400, 2400),
        ({"ksn": "FFFF9876543210E00000"}, "T-TDES", 400, 2400),  # zero counter
        ({"devicePayload": "xyz"}, "T-TDES", 400, 2100),
        ({"devicePayload": "00112233"}, "T-TDES", 400, 2601),  # not a whole block
        ({}, "UNKNOWN", 409, 1202),
        ({}, "", 400, 1201),
        ({"clientId": 7}, "T-TDES", 400, 1205),  # not a string: its own code, not 1201 (serial missing)
        ({"clientId": ["c1"]}, "T-TDES", 400, 1205),
    ]
    for override, serial, status_code, err in cases:
        fields = {**good, **override}
        status, _, body = _parse(platform, partner, fields, serial)
        assert (status, body["errCode"]) == (status_code, err), (override, body)
        assert body["reference"] == "ref-1"
    # a different key's ciphertext decrypts to garbage: unreadable, never a 500
    other = simulator.terminal_payload(CARD, "track2", bdk=bytes.fromhex("11" * 16))
    status, _, body = _parse(platform, partner, other, "T-TDES")
    assert (status, body["errCode"]) == (400, 2603)
    # audio reader: a corrupted hash is detected after decryption
    audio = simulator.audio_reader_payload(CARD, "swiped")
    payload = audio["devicePayload"]
    tampered = payload[:-60] + ("0" if payload[-60] != "0" else "1") + payload[-59:]
    status, _, body = _parse(platform, partner, {**audio, "devicePayload": tampered}, "A-TDES")
    assert status == 400 and 2100 <= body["errCode"] <= 2280
    admin(platform, "PUT", f"/admin/v1/partners/{partner['partnerId']}/devices/T-TDES/status", {"status": "inactive"})
    status, _, body = _parse(platform, partner, good, "T-TDES")
    assert (status, body["errCode"]) == (409, 1203)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(device_type=st.sampled_from(["terminal", "audio-reader", "", "x", None, 5]),
       payload=st.one_of(st.text(max_size=200), st.binary(max_size=120).map(lambda b: b.hex()), st.none(),
                         st.integers()),
       ksn=st.one_of(st.none(), st.text(max_size=30), st.binary(min_size=10, max_size=12).map(lambda b: b.hex())),
       serial=st.sampled_from(["T-TDES", "A-TDES", "T-AES", "A-AES"]))
def test_random_payloads_never_500(platform, partner, device_type, payload, ksn, serial):
    status, _, body = _parse(platform, partner, {"deviceType": device_type, "devicePayload": payload, "ksn": ksn},
                             serial)
    assert status in (200, 400, 409), body
    assert body["success"] is (status == 200)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_payloads_never_500(platform, partner, data):
    mode = data.draw(st.sampled_from(["keyed", "track1", "track2", "emv57", "emv5a"]))
    fields = simulator.terminal_payload(CARD, mode)
    audio = simulator.audio_reader_payload(CARD, "swiped", framed=data.draw(st.booleans()))
    target, serial = data.draw(st.sampled_from([(fields, "T-TDES"), (audio, "A-TDES")]))
    payload = target["devicePayload"]
    pos = data.draw(st.integers(0, len(payload) - 1))
    mutated = payload[:pos] + data.draw(st.sampled_from("0123456789ABCDEF")) + payload[pos + 1:]
    mutated = mutated[: data.draw(st.integers(0, len(mutated)))] if data.draw(st.booleans()) else mutated
    status, _, body = _parse(platform, partner, {**target, "devicePayload": mutated}, serial)
    assert status in (200, 400), body


def test_hsm_adapter_calls_payment_cryptography_with_dukpt_attributes():
    """AWS Payment Cryptography has no moto data plane: botocore's Stubber checks the exact request."""
    import boto3
    from botocore.stub import Stubber

    from vaultcore.devices.decryptors import PaymentCryptographyDukpt
    from vaultcore.devices.registry import Bdk

    client = boto3.client("payment-cryptography-data", region_name="us-east-1", aws_access_key_id="x",
                          aws_secret_access_key="x")
    arn = "arn:aws:payment-cryptography:us-east-1:123456789012:key/abcdefgh12345678"
    with Stubber(client) as stub:
        stub.add_response("decrypt_data", {"KeyArn": arn, "KeyCheckValue": "08D7B4", "PlainText": "3B34"}, {
            "KeyIdentifier": arn, "CipherText": "00112233445566778899AABBCCDDEEFF",
            "DecryptionAttributes": {"Dukpt": {
                "KeySerialNumber": "FFFF9876543210E00001", "Mode": "CBC", "DukptKeyDerivationType": "TDES_2KEY",
                "DukptKeyVariant": "REQUEST", "InitializationVector": "0000000000000000"}}})
        stub.add_client_error("decrypt_data", service_error_code="ValidationException", http_status_code=400)
        adapter = PaymentCryptographyDukpt(client)
        bdk = Bdk("hsm", "tdes", "08D7B4", None, arn)
        assert adapter.decrypt(bdk, bytes.fromhex("FFFF9876543210E00001"), bytes.fromhex(
            "00112233445566778899AABBCCDDEEFF"), "data") == b";4"
        from vaultcore.errors import ValidationError

        with pytest.raises(ValidationError) as err:
            adapter.decrypt(bdk, bytes.fromhex("FFFF9876543210E00001"), b"\x00" * 8, "data")
        assert err.value.code == 2600
        stub.assert_no_pending_responses()


def test_response_is_json_serialisable_and_carries_no_cvv_in_extracted(platform, partner):
    status, _, body = _parse(platform, partner, simulator.terminal_payload(CARD, "keyed"), "T-TDES")
    assert status == 200 and "CVV" not in json.dumps(body["extracted"])


# --- published ID TECH frames (tests/vectors/idtech_frames.json) through the parser service ---------------

FRAMES = {e["id"]: e for e in json.loads(
    (Path(__file__).parent.parent / "vectors" / "idtech_frames.json").read_text())["entries"]}
MS246 = FRAMES["ms246-original-3track-frame"]


@pytest.fixture
def idtech_partner(platform, partner):
    """The fixture's partner with two more audio readers: one on the manuals' demo BDK, one on another BDK."""
    assert TDES_BDK == MS246["bdk"]  # the fixture's TDES BDK is the ID TECH manuals' demo BDK
    admin(platform, "POST", "/admin/v1/bdks", {"bdk": "11" * 16, "scheme": "tdes", "bdkId": "bdk-other"})
    for serial, bdk in (("A-IDTECH", "bdk-t1"), ("A-OTHER", "bdk-other")):
        status, _ = admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/devices",
                          {"serial": serial, "deviceType": "audio-reader", "bdkId": bdk})
        assert status == 201
    return partner


def _reader(platform, partner, payload, serial="A-IDTECH"):
    return _parse(platform, partner, {"deviceType": "audio-reader", "devicePayload": payload}, serial)


@pytest.mark.parametrize("frame_id", list(FRAMES))
def test_published_frames_through_the_parser(platform, idtech_partner, frame_id):
    entry = FRAMES[frame_id]
    status, _, body = _reader(platform, idtech_partner, entry["frame_hex"])
    assert status == 200, body
    assert body["meta"] == {"device": "audio-reader", "serial": "A-IDTECH", "mode": "swiped"}
    assert body["track1"]["ascii"] == entry["expected_t1"][:-1]  # LRC character stripped
    assert body["track2"]["ascii"] == entry["expected_t2"][:-1]
    assert body["track2"]["length"] == len(entry["expected_t2"]) - 1
    # ISO/IEC 7813 name "SURNAME/FIRST MIDDLE.TITLE": the title is not part of the first name
    assert body["extracted"] == {"PAN": "4266841088889999", "EXPY": "0908", "Surname": "BUSH JR",
                                 "FirstName": "GEORGE W", "ServiceCode": "101", "Discretionary": "10000046"}
    assert "4266841088889999" not in body["track1"]["masked"] + body["track2"]["masked"]
    assert "track3" not in body  # interface.md returns tracks 1 and 2; track 3 is never echoed


def test_published_frame_bare_and_lowercase(platform, idtech_partner):
    card_data = MS246["frame_hex"][6:-6].lower()
    status, _, body = _reader(platform, idtech_partner, card_data)
    assert status == 200, body
    assert body["extracted"]["PAN"] == "4266841088889999"


def test_published_frames_refused_with_documented_codes(platform, idtech_partner):
    from vaultcore.cards import reader_formats as rf

    data = rf.unframe(bytes.fromhex(MS246["frame_hex"]))
    message = rf.parse_audio_message(data)
    hash_at = data.index(message.hashes[0])
    cipher_at = data.index(message.segments[0].ciphertext)

    def flipped(i):
        bad = bytearray(data)
        bad[i] ^= 0x01
        return rf.frame(bytes(bad)).hex()

    cases = [
        ("A-OTHER", MS246["frame_hex"], 2140),  # wrong BDK: the hashes refuse it, never a wrong card
        ("A-IDTECH", flipped(hash_at + 5), 2140),
        ("A-IDTECH", flipped(cipher_at + 40), 2140),
        ("A-IDTECH", MS246["frame_hex"][:-2], 2150),
        ("A-IDTECH", MS246["frame_hex"] + "00", 2150),
        ("A-IDTECH", rf.frame(data[:-1]).hex(), 2110),
        ("A-IDTECH", data[:-3].hex(), 2110),
        ("A-IDTECH", MS246["frame_hex"][:-6] + "00" + MS246["frame_hex"][-4:], 2130),
        ("A-IDTECH", "zz" + MS246["frame_hex"], 2100),
        ("A-AES", MS246["frame_hex"], 2110),  # an AES device reads 16-byte blocks and a 12-byte KSN
        ("A-AES", FRAMES["enhanced-built-around-ksn02-ciphertexts"]["frame_hex"], 2110),
    ]
    for serial, payload, err in cases:
        status, _, body = _reader(platform, idtech_partner, payload, serial)
        assert (status, body["errCode"]) == (400, err), (serial, err, body)
        # no card digits in the refusal (the random 25-digit messageId is left out: it holds "4266" by chance)
        assert body["reference"] == "ref-1" and "4266" not in json.dumps({k: v for k, v in body.items()
                                                                          if k != "messageId"})


def test_unhashed_unimag_frame_with_a_wrong_key_or_corruption(platform, idtech_partner):
    from vaultcore.cards import reader_formats as rf

    entry = FRAMES["unimag-ii-layout-built-around-ksn02-ciphertexts"]
    status, _, body = _reader(platform, idtech_partner, entry["frame_hex"], "A-OTHER")
    assert (status, body["errCode"]) == (400, 2140)  # no hashes: charset, LRC and masked layout refuse it
    data = bytearray(rf.unframe(bytes.fromhex(entry["frame_hex"])))
    data[-40] ^= 0x01  # a T2 ciphertext byte
    status, _, body = _reader(platform, idtech_partner, rf.frame(bytes(data)).hex())
    assert (status, body["errCode"]) == (400, 2140)


@pytest.mark.parametrize("scheme, serial", [("tdes", "A-TDES"), ("aes128", "A-AES")])
@pytest.mark.parametrize("payload_format", ["enhanced", "unimag-ii"])
@pytest.mark.parametrize("framed", [False, True])
def test_enhanced_round_trip(platform, partner, scheme, serial, payload_format, framed):
    fields = simulator.audio_reader_payload(CARD, "swiped", scheme=scheme, framed=framed,
                                            payload_format=payload_format)
    status, _, body = _parse(platform, partner, fields, serial)
    assert status == 200, body
    assert body["extracted"]["PAN"] == CARD.pan and body["extracted"]["Surname"] == "SMITH"


def test_enhanced_cipher_must_suit_the_device_key(platform, partner):
    # ID TECH readers with TDES DUKPT keys set to AES: the TDES data key is the AES-128 key
    aes_on_tdes = simulator.audio_reader_payload(CARD, "swiped", payload_format="enhanced", aes_data_key=True)
    status, _, body = _parse(platform, partner, aes_on_tdes, "A-TDES")
    assert status == 200, body
    assert body["extracted"]["PAN"] == CARD.pan
    # a TDES-cipher enhanced payload (field 8 bit 4 clear) for a device whose BDK is AES DUKPT: refused
    # before any decryption
    from vaultcore.cards import reader_formats as rf

    t2 = simulator.track2(CARD)
    tdes_on_aes = rf.build_enhanced_message((b"", t2, b""), {2: bytes(-(-len(t2) // 8) * 8)},
                                            bytes.fromhex(simulator.DEFAULT_KSN["aes128"]))
    status, _, body = _parse(platform, partner, {"deviceType": "audio-reader", "devicePayload": tdes_on_aes.hex()},
                             "A-AES")
    assert (status, body["errCode"]) == (400, 2120)


def test_enhanced_pin_key_flag_uses_the_pin_variant(platform, partner):
    fields = simulator.audio_reader_payload(CARD, "swiped", payload_format="enhanced", variant="pin")
    status, _, body = _parse(platform, partner, fields, "A-TDES")
    assert status == 200, body
    # the same payload with field 8 bit 6 cleared is decrypted with the data key: wrong key, 2140
    payload = bytearray(bytes.fromhex(fields["devicePayload"]))
    payload[5] &= ~0x40
    status, _, body = _parse(platform, partner, {**fields, "devicePayload": payload.hex()}, "A-TDES")
    assert (status, body["errCode"]) == (400, 2140)


def test_hsm_adapter_refuses_a_foreign_cipher():
    from vaultcore.devices.decryptors import PaymentCryptographyDukpt, cipher_usable
    from vaultcore.devices.registry import Bdk
    from vaultcore.errors import ValidationError

    arn = "arn:aws:payment-cryptography:us-east-1:123456789012:key/abcdefgh12345678"
    with pytest.raises(ValidationError) as err:
        PaymentCryptographyDukpt(object()).decrypt(Bdk("hsm", "tdes", "08D7B4", None, arn), bytes(10), bytes(16),
                                                   "data", "aes")
    assert err.value.code == 2605
    assert cipher_usable("tdes", "aes") and cipher_usable("tdes", None) and not cipher_usable("aes128", "tdes")
