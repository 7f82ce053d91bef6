"""Authentication end to end through the handlers on moto: every failure is the byte-identical 1003 body."""

from __future__ import annotations

import base64
import json

import pytest

from tests.helpers import admin, api_event
from vaultcore import clock
from vaultcore.api.responses import AUTH_REQUIRED_BODY
from vaultcore.auth.hmac_scheme import build_hmac_header, hmac_response, string_to_hash

PATH = "/api/partner/validate"


@pytest.fixture
def partner(platform):
    status, body = admin(platform, "POST", "/admin/v1/partners", {"name": "Acme", "apiSecurity": "hmac"})
    assert status == 201
    body["key"] = base64.b64decode(body["hmacKey"])
    return body


def _validate(platform, headers, body=b'{"reference": "r-1"}'):
    return platform.invoke("PartnerValidateFunction", api_event("POST", PATH, body, headers))


def test_valid_signature_succeeds_once(platform, partner):
    header = build_hmac_header(partner["partnerId"], partner["key"], PATH, b'{"reference": "r-1"}')
    first = _validate(platform, {"Authorization": header})
    assert first["statusCode"] == 200
    payload = json.loads(first["body"])
    assert payload["success"] is True and payload["reference"] == "r-1"
    assert len(payload["messageId"]) == 25 and payload["messageId"].isdigit()
    second = _validate(platform, {"Authorization": header})
    assert (second["statusCode"], second["body"]) == (401, AUTH_REQUIRED_BODY)


def _cases(partner):
    pid, key = partner["partnerId"], partner["key"]
    body = b'{"reference": "r-1"}'
    now = int(clock.now())

    def signed(**kw):
        return build_hmac_header(kw.get("user", pid), kw.get("key", key), kw.get("path", PATH), kw.get("body", body),
                                 timestamp=kw.get("ts", now))

    good = signed()
    resp = good.split('response="')[1][:-1]
    return {
        "no header": {},
        "malformed header": {"Authorization": "Hmac this is not it"},
        "missing property": {"Authorization": good.split(", response=")[0]},
        "wrong response": {"Authorization": good.replace(resp, "0" * 64)},
        "uppercase response": {"Authorization": good.replace(resp, resp.upper())},
        "stale timestamp": {"Authorization": signed(ts=now - 15 * 60 - 1)},
        "future timestamp": {"Authorization": signed(ts=now + 120)},
        "unknown partner": {"Authorization": signed(user="nobody")},
        "wrong key": {"Authorization": signed(key=b"0" * 64)},
        "signed other path": {"Authorization": signed(path="/api/device/validate")},
        "signed other body": {"Authorization": signed(body=b'{"reference": "r-2"}')},
        "non-ascii junk": {"Authorization": "Hmac usérname=\"ü\""},
        "digest scheme": {"Authorization": good.replace("Hmac", "Digest")},
        "basic for hmac partner": {"Authorization": "Basic " + base64.b64encode(f"{pid}:whatever".encode()).decode()},
        "basic garbage": {"Authorization": "Basic %%%"},
    }


def test_every_failure_is_byte_identical(platform, partner):
    for name, headers in _cases(partner).items():
        out = _validate(platform, headers)
        assert (out["statusCode"], out["body"]) == (401, AUTH_REQUIRED_BODY), name


def test_disabled_partner_gets_1003_and_enabled_again_works(platform, partner):
    assert admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/disable")[0] == 200
    header = build_hmac_header(partner["partnerId"], partner["key"], PATH, b"{}")
    assert _validate(platform, {"Authorization": header}, b"{}")["body"] == AUTH_REQUIRED_BODY
    admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/enable")
    header = build_hmac_header(partner["partnerId"], partner["key"], PATH, b"{}")
    assert _validate(platform, {"Authorization": header}, b"{}")["statusCode"] == 200


def test_expired_nonce_item_counts_as_absent(platform, partner):
    """DynamoDB deletes expired items lazily: a nonce past its expiresAt must be reusable."""
    body = b"{}"
    ts = int(clock.now())
    header = build_hmac_header(partner["partnerId"], partner["key"], PATH, body, nonce="n-exp", timestamp=ts)
    assert _validate(platform, {"Authorization": header}, body)["statusCode"] == 200
    clock.set_offset(16 * 60 + 61)  # the item is still in the table, but past its expiry attribute
    header = build_hmac_header(partner["partnerId"], partner["key"], PATH, body, nonce="n-exp",
                               timestamp=int(clock.now()))
    assert _validate(platform, {"Authorization": header}, body)["statusCode"] == 200


def test_nonce_is_not_burned_by_a_forged_request(platform, partner):
    ts = int(clock.now())
    forged = build_hmac_header(partner["partnerId"], b"wrong", PATH, b"{}", nonce="n-1", timestamp=ts)
    assert _validate(platform, {"Authorization": forged}, b"{}")["statusCode"] == 401
    real = build_hmac_header(partner["partnerId"], partner["key"], PATH, b"{}", nonce="n-1", timestamp=ts)
    assert _validate(platform, {"Authorization": real}, b"{}")["statusCode"] == 200


def test_rotated_hmac_key_overlaps_then_expires(platform, partner):
    status, rotated = admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/rotate",
                            {"kind": "hmacKey", "overlapSeconds": 600})
    assert status == 200 and rotated["hmacKeyVersion"] == 2
    new_key = base64.b64decode(rotated["hmacKey"])
    for key in (partner["key"], new_key):
        h = build_hmac_header(partner["partnerId"], key, PATH, b"{}")
        assert _validate(platform, {"Authorization": h}, b"{}")["statusCode"] == 200
    clock.set_offset(601)
    from tests.conftest import reset_platform_state

    offset = clock.offset()
    reset_platform_state()
    clock.set_offset(offset)
    old = build_hmac_header(partner["partnerId"], partner["key"], PATH, b"{}", timestamp=int(clock.now()))
    assert _validate(platform, {"Authorization": old}, b"{}")["body"] == AUTH_REQUIRED_BODY
    new = build_hmac_header(partner["partnerId"], new_key, PATH, b"{}", timestamp=int(clock.now()))
    assert _validate(platform, {"Authorization": new}, b"{}")["statusCode"] == 200


def test_key_partner_may_use_basic(platform):
    _, p = admin(platform, "POST", "/admin/v1/partners", {"name": "KeyCo", "apiSecurity": "key"})
    basic = "Basic " + base64.b64encode(f"{p['partnerId']}:{p['partnerKey']}".encode()).decode()
    assert _validate(platform, {"Authorization": basic}, b"{}")["statusCode"] == 200
    wrong = "Basic " + base64.b64encode(f"{p['partnerId']}:nope".encode()).decode()
    assert _validate(platform, {"Authorization": wrong}, b"{}")["body"] == AUTH_REQUIRED_BODY


def test_a_partner_created_without_api_security_is_on_key_security(platform):
    """In cert the default is the original platform's onboarding: Basic with partnerId:partnerKey works, and so does HMAC."""
    status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Moved Over Inc"})
    assert (status, p["apiSecurity"]) == (201, "key")
    basic = "Basic " + base64.b64encode(f"{p['partnerId']}:{p['partnerKey']}".encode()).decode()
    assert _validate(platform, {"Authorization": basic}, b"{}")["statusCode"] == 200
    signed = build_hmac_header(p["partnerId"], p["hmacKey"].encode(), PATH, b"{}", timestamp=int(clock.now()))
    assert _validate(platform, {"Authorization": signed}, b"{}")["statusCode"] == 200


def test_in_production_a_partner_created_without_api_security_is_hmac_only(platform, monkeypatch):
    """HMAC is the scheme the original requires in production: there the default is `hmac`, and Basic is refused."""
    from vaultcore.settings import reset_settings

    monkeypatch.setenv("ENVIRONMENT", "prod")
    reset_settings()
    try:
        status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Production Co"})
        assert (status, p["apiSecurity"]) == (201, "hmac")
    finally:
        monkeypatch.setenv("ENVIRONMENT", "cert")
        reset_settings()
    basic = "Basic " + base64.b64encode(f"{p['partnerId']}:{p['partnerKey']}".encode()).decode()
    assert _validate(platform, {"Authorization": basic}, b"{}")["body"] == AUTH_REQUIRED_BODY
    signed = build_hmac_header(p["partnerId"], p["hmacKey"].encode(), PATH, b"{}", timestamp=int(clock.now()))
    assert _validate(platform, {"Authorization": signed}, b"{}")["statusCode"] == 200


def test_an_hmac_partner_refuses_its_own_valid_basic_credentials(platform, partner):
    """The spec's rule: a partner whose API security is HMAC accepts HMAC only, even with the right key."""
    basic = "Basic " + base64.b64encode(f"{partner['partnerId']}:{partner['partnerKey']}".encode()).decode()
    assert _validate(platform, {"Authorization": basic}, b"{}")["body"] == AUTH_REQUIRED_BODY


def test_reference_longer_than_50_is_a_validation_error(platform, partner):
    body = json.dumps({"reference": "x" * 51}).encode()
    header = build_hmac_header(partner["partnerId"], partner["key"], PATH, body)
    out = _validate(platform, {"Authorization": header}, body)
    payload = json.loads(out["body"])
    assert out["statusCode"] == 400 and payload["errCode"] == 1002 and "messageId" not in payload
    assert "reference" not in payload  # an error never echoes an input it rejected as invalid (issue 18)


def test_path_with_stage_prefix_is_accepted(platform, partner):
    """On execute-api URLs the client signs /<stage>/api/...; API Gateway's `path` drops the stage."""
    body = b"{}"
    ts = int(clock.now())
    sig = hmac_response(partner["key"], string_to_hash("/cert" + PATH, "n-stage", ts, body))
    header = f'Hmac username="{partner["partnerId"]}", nonce="n-stage", timestamp={ts}, response="{sig}"'
    event = api_event("POST", PATH, body, {"Authorization": header})
    event["requestContext"]["path"] = "/cert" + PATH
    assert platform.invoke("PartnerValidateFunction", event)["statusCode"] == 200


def test_the_issued_key_signs_and_the_legacy_decoded_form_can_be_switched_off(platform, partner, monkeypatch):
    from vaultcore.settings import reset_settings

    issued = partner["hmacKey"].encode()
    body = b'{"reference": "r-1"}'
    assert _validate(platform, {"Authorization": build_hmac_header(partner["partnerId"], issued, PATH, body)}
                     )["statusCode"] == 200
    legacy = build_hmac_header(partner["partnerId"], partner["key"], PATH, body)
    monkeypatch.setenv("HMAC_ACCEPT_DECODED_KEY", "0")
    reset_settings()
    refused = _validate(platform, {"Authorization": legacy})
    assert (refused["statusCode"], refused["body"]) == (401, AUTH_REQUIRED_BODY)
    assert _validate(platform, {"Authorization": build_hmac_header(partner["partnerId"], issued, PATH, body)}
                     )["statusCode"] == 200
