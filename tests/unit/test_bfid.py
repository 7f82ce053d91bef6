"""bfid: round trip, integrity (every character), length limits, key derivation."""

from __future__ import annotations

import base64
import hashlib
import hmac
import string

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from vaultcore.tokens import bfid as bfid_module
from vaultcore.tokens.bfid import (
    BFID_MAX_LENGTH,
    BFID_MIN_LENGTH,
    BfidError,
    BfidInfo,
    derive_subkeys,
    hkdf_sha256,
    new_bfid,
    parse_bfid,
    peek_bfid_unverified,
)

MAC_KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
B64URL = string.ascii_letters + string.digits + "-_"


def make(**kwargs) -> str:
    args = {"mac_key": MAC_KEY, "key_version": 3, "template_ref": "GATEWAY", "partner_id": "partner-42"}
    args.update(kwargs)
    return new_bfid(**args)


def test_round_trip():
    # Given a bfid issued at a known time with a known nonce
    text = make(issued_at=1_700_000_000, nonce=bytes(range(16)))
    # When it is parsed with the same key
    info = parse_bfid(MAC_KEY, text, expected_partner_id="partner-42")
    # Then every field comes back
    assert info == BfidInfo("partner-42", 3, "GATEWAY", bytes(range(16)), 1_700_000_000)
    assert BFID_MIN_LENGTH <= len(text) <= BFID_MAX_LENGTH and set(text) <= set(B64URL)
    assert peek_bfid_unverified(text) == ("partner-42", 3)


def test_fresh_bfids_are_unique_and_current():
    texts = {make() for _ in range(200)}
    assert len(texts) == 200
    infos = [parse_bfid(MAC_KEY, t) for t in texts]
    assert len({i.nonce for i in infos}) == 200
    assert all(i.issued_at > 1_700_000_000 for i in infos)


def test_payload_is_versioned_and_names_key_version_and_template():
    raw = base64.urlsafe_b64decode(make() + "==")
    assert raw.startswith(b"v1\x00\x03") and b"GATEWAY" in raw and b"partner-42" in raw


def test_tampering_with_any_character_is_refused():
    text = make()
    for i, ch in enumerate(text):
        for repl in {B64URL[(B64URL.index(ch) + 1) % 64], B64URL[(B64URL.index(ch) + 32) % 64]}:
            with pytest.raises(BfidError):
                parse_bfid(MAC_KEY, text[:i] + repl + text[i + 1 :])


def test_truncation_extension_and_padding_are_refused():
    text = make()
    for bad in (text[:-1], text[:-4], text + "A", text + "AAAA", text + "=", text[:40]):
        with pytest.raises(BfidError):
            parse_bfid(MAC_KEY, bad)


def test_non_canonical_last_character_is_refused():
    # A base64 character whose unused low bits differ decodes to the same bytes: refused, so one bfid has one spelling.
    text = make(partner_id="p1")  # 45+... bytes: the length is not a multiple of 3, the last character has spare bits
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    assert len(raw) % 3 != 0
    last = B64URL.index(text[-1])
    twin = text[:-1] + B64URL[last ^ 1]
    assert base64.urlsafe_b64decode(twin + "=" * (-len(twin) % 4)) == raw
    with pytest.raises(BfidError, match="not canonical"):
        parse_bfid(MAC_KEY, twin)


def test_wrong_key_or_partner_is_refused():
    text = make()
    with pytest.raises(BfidError, match="not valid"):
        parse_bfid(OTHER_KEY, text)
    with pytest.raises(BfidError, match="another partner"):
        parse_bfid(MAC_KEY, text, expected_partner_id="partner-43")


def test_forged_structure_with_wrong_tag_is_refused():
    raw = base64.urlsafe_b64decode(make() + "==")
    forged = raw[:-16] + bytes(16)
    with pytest.raises(BfidError, match="not valid"):
        parse_bfid(MAC_KEY, base64.urlsafe_b64encode(forged).rstrip(b"=").decode())


def test_unknown_version_is_refused_even_with_a_valid_tag():
    raw = base64.urlsafe_b64decode(make() + "==")
    payload = b"v2" + raw[2:-16]
    tag = hmac.new(MAC_KEY, payload, hashlib.sha256).digest()[:16]
    with pytest.raises(BfidError, match="unknown format"):
        parse_bfid(MAC_KEY, base64.urlsafe_b64encode(payload + tag).rstrip(b"=").decode())


@pytest.mark.parametrize(
    "bad",
    [None, 42, "", "A" * 29, "A" * 151, "é" * 60, "A" * 59 + "+", "A" * 59 + "/", "A" * 61, "AAAA" * 16],
)
def test_malformed_input_is_refused(bad):
    with pytest.raises(BfidError):
        parse_bfid(MAC_KEY, bad)
    with pytest.raises(BfidError):
        peek_bfid_unverified(bad)


def test_length_limits():
    shortest = make(partner_id="p", template_ref="T")
    assert len(shortest) == 60
    # 69 bytes of partner id and template reference fit exactly in 150 characters
    longest = make(partner_id="p" * 37, template_ref="T" * 32)
    assert len(longest) == BFID_MAX_LENGTH
    assert parse_bfid(MAC_KEY, longest).partner_id == "p" * 37
    with pytest.raises(BfidError, match="take 70 bytes together; at most 69 fit"):
        make(partner_id="p" * 38, template_ref="T" * 32)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"key_version": 0}, "key version must be an integer from 1 to 65535"),
        ({"key_version": 65536}, "key version"),
        ({"key_version": True}, "key version"),
        ({"partner_id": ""}, "partner id must be a non-empty printable string"),
        ({"template_ref": "a\nb"}, "template reference must be"),
        ({"issued_at": -1}, "issued_at"),
        ({"nonce": bytes(8)}, "nonce must be 16 bytes"),
    ],
)
def test_new_bfid_argument_errors(kwargs, message):
    with pytest.raises(BfidError, match=message):
        make(**kwargs)


def test_mac_key_must_be_long_enough():
    with pytest.raises(ValueError, match="at least 16 bytes"):
        make(mac_key=bytes(8))
    with pytest.raises(ValueError, match="at least 16 bytes"):
        parse_bfid(bytes(8), make())


def test_error_messages_do_not_echo_the_bfid():
    text = make()
    bad = text[:-2] + ("A" if text[-2] != "A" else "B") + text[-1]
    with pytest.raises(BfidError) as exc:
        parse_bfid(MAC_KEY, bad)
    assert bad not in str(exc.value) and bad[:20] not in str(exc.value)


# ------------------------------------------------------------------------------------------------- subkeys


def test_hkdf_matches_rfc5869_test_case_1():
    ikm = bytes.fromhex("0b" * 22)
    salt = bytes.fromhex("000102030405060708090a0b0c")
    info = bytes.fromhex("f0f1f2f3f4f5f6f7f8f9")
    assert hkdf_sha256(ikm, info, 42, salt) == bytes.fromhex(
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"
    )


def test_derive_subkeys():
    master = bytes(range(100, 132))
    ff1_key, mac_key = derive_subkeys(master)
    assert len(ff1_key) == len(mac_key) == 32 and ff1_key != mac_key and master not in (ff1_key, mac_key)
    assert derive_subkeys(master) == (ff1_key, mac_key)
    assert derive_subkeys(bytes(32))[0] != ff1_key
    expected = HKDF(hashes.SHA256(), 32, bfid_module._HKDF_SALT, bfid_module._INFO_FF1).derive(master)
    assert ff1_key == expected
    with pytest.raises(ValueError, match="at least 32 bytes"):
        derive_subkeys(bytes(16))
