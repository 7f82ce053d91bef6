"""The parser endpoint in-process on moto: simulator round trips, errors, the HSM adapter, no 500s."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import admin, call
from vaultcore.devices import simulator
from vaultcore.devices.simulator import Card

TDES_BDK = simulator.DEFAULT_BDK["tdes"]
AES_BDK = simulator.DEFAULT_BDK["aes128"]


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
