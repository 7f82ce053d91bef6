"""Decryptx's ``POST /api/decrypt`` and ``GET /api/healthcheck`` in-process on moto: named values of one device
decrypted with its BDK (hex and base64, a CBC vector, the hasCcData check), each value failing on its own, the
request errors, and the health check of a device's key."""

from __future__ import annotations

import base64

import pytest

from tests.helpers import admin, call
from vaultcore.crypto import dukpt
from vaultcore.crypto.dukpt import Scheme
from vaultcore.devices import simulator

TDES_BDK = simulator.DEFAULT_BDK[Scheme.TDES]
KSN = bytes.fromhex("FFFF9876543210E00001")
TRACK1 = b"%B4761739001010010^SMITH/JOHN^25122010000000000?"
IV = bytes(range(1, 9))


@pytest.fixture
def partner(platform):
    _, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Decryptx Co"})  # key security: body credentials
    admin(platform, "POST", "/admin/v1/bdks", {"bdk": TDES_BDK, "scheme": "tdes", "bdkId": "bdk-dx"})
    status, _ = admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/devices",
                      {"serial": "DX-1", "deviceType": "terminal", "bdkId": "bdk-dx"})
    assert status == 201
    return p


def _sealed(plain: bytes, iv: bytes | None = None) -> bytes:
    return dukpt.encrypt("tdes", bytes.fromhex(TDES_BDK), KSN, plain, "data", iv)


def _decrypt(platform, partner, encrypted, encoding="hex", **extra):
    code = (lambda b: b.hex().upper()) if encoding == "hex" else (lambda b: base64.b64encode(b).decode())
    params = {"sequenceNumber": code(KSN), "encoding": encoding, **extra.pop("params", {})}
    body = {"partnerId": partner["partnerId"], "partnerKey": partner["partnerKey"], "reference": "dx-1",
            "serial": "DX-1", "decryptionParameters": params,
            "encrypted": [{"name": n, "value": code(v) if isinstance(v, bytes) else v} for n, v in encrypted],
            **extra}
    return call(platform, "ParserFunction", "POST", "/api/decrypt", body)


def test_values_decrypt_in_hex_and_base64_padding_included(platform, partner):
    status, _, out = _decrypt(platform, partner, [("track1", _sealed(TRACK1))])
    assert status == 200 and out["reference"] == "dx-1" and len(out["messageId"]) == 25, out
    [value] = out["decrypted"]
    assert (value["name"], value["failed"], value["code"]) == ("track1", False, "")
    assert bytes.fromhex(value["value"]) == dukpt.zero_pad(TRACK1, 8)  # as the original: padding included
    status, _, out = _decrypt(platform, partner, [("t1", _sealed(TRACK1, IV))], encoding="base64",
                              params={"cbcVector": base64.b64encode(IV).decode()})
    assert status == 200 and base64.b64decode(out["decrypted"][0]["value"]).rstrip(b"\0") == TRACK1, out


def test_each_value_fails_on_its_own(platform, partner):
    values = [("good", _sealed(TRACK1)), ("short", b"\x01\x02\x03"), ("no card", _sealed(b"hello world")),
              ("clear", b"4761739001010010")]
    status, _, out = _decrypt(platform, partner, values)
    assert status == 200, out
    assert [(v["name"], v["failed"], v["code"]) for v in out["decrypted"]] == [
        ("good", False, ""), ("short", True, "2601"), ("no card", True, "2105"), ("clear", True, "2105")]
    assert all(v["value"] == "" for v in out["decrypted"][1:])
    status, _, out = _decrypt(platform, partner, values[2:3], hasCcData="0")  # no card-data check asked
    assert status == 200 and bytes.fromhex(out["decrypted"][0]["value"]).rstrip(b"\0") == b"hello world"


def test_request_errors(platform, partner):
    cases = [
        ({"encrypted": []}, 400, 2101),
        ({"params": {"encoding": "base32"}}, 400, 2102),
        ({"params": {"sequenceNumber": "zz"}}, 400, 2102),
        ({"params": {"sequenceNumber": "FFFF"}}, 400, 2400),
        ({"hasCcData": "yes"}, 400, 2102),
        ({"serial": "NOPE"}, 409, 1202),
        ({"partnerKey": "wrong"}, 401, 1105),
    ]
    for extra, status_code, code in cases:
        encrypted = extra.pop("encrypted", [("t1", _sealed(TRACK1))])
        status, _, out = _decrypt(platform, partner, encrypted, **extra)
        assert (status, out["errCode"], out["success"]) == (status_code, code, False), (extra, out)
    too_many = [(f"v{i}", _sealed(TRACK1)) for i in range(101)]
    assert _decrypt(platform, partner, too_many)[2]["errCode"] == 2101


def test_healthcheck_checks_credentials_device_and_key(platform, partner):
    query = {"partnerId": partner["partnerId"], "partnerKey": partner["partnerKey"], "serial": "DX-1",
             "reference": "hc"}
    status, _, out = call(platform, "ParserFunction", "GET", "/api/healthcheck", query=query)
    assert status == 200 and out["decrypted"] == [] and out["reference"] == "hc", out
    status, _, out = call(platform, "ParserFunction", "GET", "/api/healthcheck", query={**query, "serial": "NOPE"})
    assert (status, out["errCode"]) == (409, 1202)
    status, _, out = call(platform, "ParserFunction", "GET", "/api/healthcheck",
                          query={**query, "partnerKey": "wrong"})
    assert (status, out["errCode"]) == (401, 1105)


def test_decrypt_ext_records_counts_and_mirrors_them(platform, partner, caplog):
    body = {"partnerId": partner["partnerId"], "partnerKey": partner["partnerKey"], "reference": "ext-1",
            "serial": "DX-1", "encrypted": 3, "decrypted": 2, "success": True, "ip": "10.0.0.1"}
    status, _, out = call(platform, "ParserFunction", "POST", "/api/decrypt-ext", body)
    assert status == 200 and (out["success"], out["decrypted"], out["reference"]) == (True, 2, "ext-1"), out
    assert any(getattr(r, "event", None) == "decrypt_external" and r.encrypted == 3 for r in caplog.records)
    status, _, out = call(platform, "ParserFunction", "POST", "/api/decrypt-ext", {**body, "success": False})
    assert (status, out["success"]) == (200, False)  # mirrored, as the original
    for bad, code, http in (({"decrypted": -1}, 2101, 400), ({"success": "yes"}, 2101, 400),
                            ({"serial": "NOPE"}, 1202, 409)):
        status, _, out = call(platform, "ParserFunction", "POST", "/api/decrypt-ext", {**body, **bad})
        assert (status, out["errCode"]) == (http, code), (bad, out)
