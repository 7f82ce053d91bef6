"""The HMAC header scheme: parsing of every documented form, the string to hash and signatures."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultcore.auth.hmac_scheme import (
    HeaderError,
    build_hmac_header,
    content_hash,
    hmac_response,
    parse_authorization,
    responses_equal,
    string_to_hash,
)

RESP = "a" * 64


@pytest.mark.parametrize("header", [
    f'Hmac username="p1", nonce="n1", timestamp="1700000000", response="{RESP}"',
    f'Hmac username="p1", nonce="n1", timestamp=1700000000, response="{RESP}"',
    f'HMAC response="{RESP}",timestamp=1700000000,nonce="n1",username="p1"',
    f'  hmac   username = "p1" ,  nonce="n1" , timestamp = "1700000000",response="{RESP}"  ',
    f"Hmac username=p1, nonce=n1, timestamp=1700000000, response={RESP}",
])
def test_accepts_every_documented_form(header):
    creds = parse_authorization(header)
    assert (creds.method, creds.username, creds.nonce, creds.timestamp, creds.response) == (
        "HMAC", "p1", "n1", 1700000000, RESP)


@pytest.mark.parametrize("header, reason", [
    ("", "missing"),
    ("Bearer abc", "unknown scheme"),
    ('Hmac username="p1", nonce="n1", timestamp="1700000000"', "missing property"),
    (f'Hmac username="p1", nonce="n1", timestamp="17x", response="{RESP}"', "bad timestamp"),
    (f'Hmac username="p1", username="p2", nonce="n1", timestamp="1", response="{RESP}"', "duplicate"),
    (f'Hmac username="p1" nonce="n1" timestamp="1" response="{RESP}"', "malformed"),
    (f'Hmac username="pé", nonce="n1", timestamp="1", response="{RESP}"', "non-ASCII"),
    ('Hmac username="p1", nonce="", timestamp="1", response="x"', "missing property"),
    ("Hmac " + "x" * 2000, "too long"),
])
def test_refuses_malformed_headers(header, reason):
    with pytest.raises(HeaderError, match=reason):
        parse_authorization(header)


def test_string_to_hash_is_exactly_the_specified_layout():
    body = b' {"reference": "r"}\n'
    expected = "POST /api/partner/validate\nnonce-1\n1700000000\n\n" + hashlib.sha256(body).hexdigest()
    assert string_to_hash("/api/partner/validate", "nonce-1", 1700000000, body) == expected
    assert content_hash(body) == hashlib.sha256(body).hexdigest()  # leading/trailing whitespace included


def test_response_is_lowercase_hex_hmac_sha256():
    message = string_to_hash("/p", "n", 1, b"{}")
    assert hmac_response(b"k", message) == hmac.new(b"k", message.encode(), hashlib.sha256).hexdigest()
    assert hmac_response(b"k", message).islower()


def test_built_header_parses_and_verifies():
    header = build_hmac_header("p1", b"key", "/api/x", b"{}", nonce="abc", timestamp=1700000000)
    creds = parse_authorization(header)
    assert responses_equal(hmac_response(b"key", string_to_hash("/api/x", "abc", 1700000000, b"{}")), creds.response)


def test_compare_handles_non_ascii_without_raising():
    assert responses_equal("abc", "ab\udcff") is False


@given(st.text(max_size=300))
def test_parser_never_raises_anything_but_header_error(text):
    try:
        parse_authorization(text)
    except HeaderError:
        pass


# ------------------------------------------------------------------------------------------------ key forms
def test_the_issued_key_signs_byte_for_byte_and_the_decoded_form_is_the_legacy_alternative():
    from vaultcore.auth.hmac_scheme import accepted_key_forms, legacy_decoded_form

    decoded = b"f3a9" * 16  # the shape of a stored secret: 64 lowercase hex characters
    issued = __import__("base64").b64encode(decoded)
    assert accepted_key_forms(issued) == [("issued", issued), ("decoded", decoded)]
    assert accepted_key_forms(issued, accept_decoded=False) == [("issued", issued)]
    # Keys that are not base64 text have no decoded form: authdebug's default key `secret` among them.
    assert legacy_decoded_form(b"secret") is None and accepted_key_forms(b"secret") == [("issued", b"secret")]
    assert legacy_decoded_form(b"abc$") is None and legacy_decoded_form(b"") is None


def test_a_spec_only_signature_with_the_issued_key_matches_ours():
    """The spec's string to hash built by hand with the stdlib on one side, our header builder on the other."""
    issued = b"ZjNhOWYzYTlmM2E5ZjNhOWYzYTlmM2E5ZjNhOWYzYTlmM2E5ZjNhOWYzYTlmM2E5ZjNhOWYzYTlmM2E5ZjNhOQ=="
    body = b' {"reference": "r"} \n'
    text = "POST /api/partner/validate\nn-1\n1700000000\n\n" + hashlib.sha256(body).hexdigest()
    theirs = hmac.new(issued, text.encode(), hashlib.sha256).hexdigest()
    header = build_hmac_header("p1", issued, "/api/partner/validate", body, nonce="n-1", timestamp=1700000000)
    assert parse_authorization(header).response == theirs
