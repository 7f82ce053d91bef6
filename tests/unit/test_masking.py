"""Masking (PCI DSS 3.4: first six / last four at most) and the log scrubber redact_text."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from vaultcore.cards import masking
from vaultcore.cards.luhn import luhn_check_digit
from vaultcore.cards.masking import (
    MASK_PATTERNS,
    REDACTED,
    apply_pattern,
    mask_keyed,
    mask_pan,
    mask_track1,
    mask_track2,
    redact_text,
)
from vaultcore.cards.tracks import parse_track1, parse_track2

VECTORS = Path(__file__).resolve().parent.parent / "vectors"
TRACKS = json.loads((VECTORS / "tracks.json").read_text())["entries"]

HMAC_RESPONSE = "3f0c" * 16  # 64 lowercase hex characters


def _clear_digits(masked: str) -> int:
    return sum(ch.isdigit() for ch in masked)


# ----------------------------------------------------------------------------------------------- mask_pan


@pytest.mark.parametrize(
    ("pan", "masked"),
    [
        ("4242424242424242", "424242******4242"),
        ("378282246310005", "378282*****0005"),
        ("4242424242424242424", "424242*********2424"),
        ("4222222222222", "422222***2222"),
        ("4242 4242 4242 4242", "4242 42** **** 4242"),
        ("3782-822463-10005", "3782-82****-*0005"),
        ("123456789012", "12******9012"),  # short: at most half in clear, the last four first
        ("12345678", "****5678"),
        ("123456", "***456"),
        ("1234", "**34"),
        ("1", "*"),
        ("", ""),
    ],
)
def test_mask_pan(pan: str, masked: str) -> None:
    assert mask_pan(pan) == masked


@given(st.text(alphabet="0123456789", min_size=1, max_size=19))
def test_mask_pan_never_shows_more_than_pci_allows(pan: str) -> None:
    masked = mask_pan(pan)
    assert len(masked) == len(pan)
    clear = _clear_digits(masked)
    assert clear <= 10
    if len(pan) < 13:
        assert clear <= len(pan) // 2
    else:
        assert masked[:6] == pan[:6] and masked[-4:] == pan[-4:]
    assert mask_pan(masked) == masked  # idempotent


# ----------------------------------------------------------------------------------------------- tracks


@pytest.mark.parametrize(
    ("track", "masked"),
    [
        ("%B4242424242424242^SMITH/JOHN^2512101123456?", "%B424242******4242^S***H/J**N^****101******?"),
        ("B4242424242424242^SMITH/JOHN^2512101123456", "B424242******4242^S***H/J**N^****101******"),
        (
            "%B4266841088889999^BUSH JR/GEORGE W.MR^0809101100001100000000046000000?!",
            "%B426684******9999^B**H J*/G****E W.M*^****101************************?*",
        ),
        (
            "%B6011785948493759^DOE/JOHN L                ^^^0000000      00998000000?",
            "%B601178******3759^D*E/J**N L                ^^^*******      ***********?",
        ),
        ("%B5452300551227189^HOGAN/PAUL      ^^321?", "%B545230******7189^H***N/P**L      ^^321?"),
        (
            "%B4717270000000000^^0000000000000000000000000000000?",
            "%B471727******0000^^****000************************?",
        ),
        ("%B4242424242424242^A/B^?", "%B424242******4242^A/B^?"),
    ],
)
def test_mask_track1(track: str, masked: str) -> None:
    assert mask_track1(track) == masked


@pytest.mark.parametrize(
    ("track", "masked"),
    [
        (";4242424242424242=25121011234?0", ";424242******4242=****101****?*"),
        ("4242424242424242=25121011234", "424242******4242=****101****"),
        (";4242424242424242===1234?", ";424242******4242===****?"),
        ("4716916000001234D18099011234", "471691******1234D****901****"),
        ("3540599999991047d080501234567F", "354059******1047d****012******"),
        ("B3540599999991047D080501234567F000000000000", "B354059******1047D****012******************"),
    ],
)
def test_mask_track2(track: str, masked: str) -> None:
    assert mask_track2(track) == masked


@pytest.mark.parametrize("entry", [e for e in TRACKS if "raw" in e], ids=lambda e: e["id"])
def test_masked_vector_tracks_hide_pan_expiry_and_discretionary(entry: dict) -> None:
    raw = entry["raw"]
    pan = entry["expected"].get("pan", "4717270000000000")
    if entry.get("track") == 1:
        masked = mask_track1(raw)
    elif entry.get("track") in (2, "emv_track2_equivalent"):
        masked = mask_track2(raw)
    else:
        masked = redact_text(raw)
    expected = entry["expected"]
    assert len(masked) == len(raw)
    assert pan not in masked
    assert pan[:6] in masked and pan[-4:] in masked
    after_pan = masked[masked.index(pan[-4:]) + 4 :]
    if expected.get("expiration"):
        assert expected["expiration"] not in after_pan
    if expected.get("discretionary_data"):
        assert expected["discretionary_data"] not in after_pan
    if entry.get("track") == 1:
        service = parse_track1(raw).service_code or ""
    elif entry.get("track") in (2, "emv_track2_equivalent"):
        service = parse_track2(raw).service_code or ""
    else:
        service, after_pan = "", ""  # two tracks: the checks above cover them
    # After the PAN only the service code stays in clear.
    assert not any(ch.isdigit() for ch in after_pan.replace(service, "", 1))
    assert pan not in redact_text(raw)
    assert redact_text(masked) == masked


@pytest.mark.parametrize("text", ["not a track", "%Bgarbage", ";12=", "4242424242424242", ""])
def test_track_maskers_mask_everything_they_cannot_read(text: str) -> None:
    for masker in (mask_track1, mask_track2):
        masked = masker(text)
        assert len(masked) == len(text)
        assert "4242424242" not in masked
    assert mask_track1("not a track") == "*** * *****"


@pytest.mark.parametrize(
    ("keyed", "masked"),
    [
        ("4242424242424242=2512=123", "424242******4242=****=***"),
        ("4242424242424242=2512", "424242******4242=****"),
        ("4242424242424242", "424242******4242"),
        ("378282246310005==1234", "378282*****0005==****"),
        ("", ""),
    ],
)
def test_mask_keyed(keyed: str, masked: str) -> None:
    assert mask_keyed(keyed) == masked


# ----------------------------------------------------------------------------------------------- patterns


@pytest.mark.parametrize(
    ("pattern", "value", "masked"),
    [
        ("all", "4242424242424242", "****************"),
        ("all", "secret", "******"),
        ("all", "", ""),
        ("fourPlainFourMasked", "4242424242424242", "4242****4242****"),
        ("fourPlainFourMasked", "42424242424242424", "4242****4242****4"),
        ("fourPlainFourMasked", "123456789012", "1234****90**"),  # short: at most half in clear
        ("fourPlainFourMasked", "1234", "12**"),
        ("fourPlainFourMasked", "123", "1**"),
        ("allButFirstSixLastFour", "4242424242424242", "424242******4242"),
        ("allButFirstSixLastFour", "4242 4242 4242 4242", "4242 4*********4242"),  # characters, not digits
        ("allButFirstSixLastFour", "1234567890", "1*****7890"),  # short: half, the last four first
        ("allButFirstOneLastFour", "4242424242424242", "4***********4242"),
        ("allButFirstOneLastFour", "1234567890", "1*****7890"),
        ("allButFirstOneLastFour", "12345678901", "1******8901"),
        ("allButFirstOneLastFour", "1234567890123", "1********0123"),
        ("allButFirstOneLastFour", "12345", "***45"),
        ("allAsRedacted", "4242424242424242", "[REDACTED]"),
        ("allAsRedacted", "", "[REDACTED]"),
    ],
)
def test_apply_pattern(pattern: str, value: str, masked: str) -> None:
    assert apply_pattern(value, pattern) == masked


def test_every_pattern_is_covered() -> None:
    assert set(MASK_PATTERNS) == {
        "all",
        "fourPlainFourMasked",
        "allButFirstSixLastFour",
        "allButFirstOneLastFour",
        "allAsRedacted",
    }


@pytest.mark.parametrize("pattern", ["", "none", "ALL", "firstSixLastFour"])
def test_apply_pattern_rejects_unknown_patterns(pattern: str) -> None:
    with pytest.raises(ValueError, match="unknown mask pattern"):
        apply_pattern("4242424242424242", pattern)


@given(st.sampled_from(MASK_PATTERNS), st.text(max_size=40))
def test_patterns_never_show_more_than_half_of_a_short_value(pattern: str, value: str) -> None:
    masked = apply_pattern(value, pattern)
    if pattern == "allAsRedacted":
        assert masked == REDACTED
        return
    assert len(masked) == len(value)
    clear = sum(1 for a, b in zip(value, masked, strict=True) if b != "*" and a == b and a != "*")
    if len(value) < 13:
        assert clear <= len(value) // 2
    if pattern in ("allButFirstSixLastFour", "allButFirstOneLastFour"):
        assert clear <= 10


# ----------------------------------------------------------------------------------------------- redact_text

REDACTIONS = [
    ("card 4242424242424242 declined", "card 424242******4242 declined"),
    ("card 4242 4242 4242 4242 exp 12/25", "card 4242 42** **** 4242 exp 12/25"),
    ("card 4242-4242-4242-4242.", "card 4242-42**-****-4242."),
    ("amex 378282246310005, ok", "amex 378282*****0005, ok"),
    ("pan+expiry 4242 4242 4242 4242 1225", "pan+expiry 4242 42** **** 4242 1225"),
    ("order 12 7000 0000 0000 0005 done", "order 12 7000 00** **** 0005 done"),
    ("tlv 5A084242424242424242 end", "tlv 5A08424242******4242 end"),
    ("glued 42424242424242421225", "glued 424242******42421225"),
    ("test card 4124939999999990", "test card 412493******9990"),
    ('{"card_number":"4000000000000002"}', '{"card_number":"400000******0002"}'),
    ("card_number=4242424242424241&zip=1", "card_number=424242******4241&zip=1"),  # fails Luhn, still masked
    ("pan: 4242 4242 4242 4241", "pan: 4242 42** **** 4241"),
    (
        "track %B4266841088889999^BUSH JR/GEORGE W.MR^0809101100001100000000046000000?! read",
        "track %B426684******9999^B**H J*/G****E W.M*^****101************************?* read",
    ),
    ("t2 ;4266841088889999=080910110000046?0 read", "t2 ;426684******9999=****101********?* read"),
    ("t2 ;4266841088889999=080910110000046?. read", "t2 ;426684******9999=****101********?. read"),
    ("bare 4266841088889999=080910110000046", "bare 426684******9999=****101********"),
    ("emv 4716916000001234D18099011234 done", "emv 471691******1234D****901**** done"),
    ("emv 4716916000001234d18099011234F", "emv 471691******1234d****901*****"),
    ("key 0123456789ABCDEFFEDCBA9876543210 done", "key [hex:32] done"),
    ("block=" + "85A8A7F9390FD19EABC40B5D624190287D729923D9EDAFE9F24773388A9A1BEF", "block=[hex:64]"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [REDACTED]"),
    ("authorization=Bearer eyJhbGciOi.eyJzdWIi.sig", "authorization=Bearer [REDACTED]"),
    ('{"Authorization": "Bearer abc.def", "x": 1}', '{"Authorization": "Bearer [REDACTED]", "x": 1}'),
    ("{'Authorization': 'raw-api-key-value'}", "{'Authorization': '[REDACTED]'}"),
    ("Authorization: Hmac opaque-blob", "Authorization: Hmac [REDACTED]"),
    (
        f'Authorization: Hmac username="p1", nonce="n-1", timestamp="1700000000", response="{HMAC_RESPONSE}"',
        'Authorization: Hmac username="p1", nonce="[REDACTED]", timestamp="1700000000", response="[REDACTED]"',
    ),
    (
        f"Authorization: Hmac username=p1, nonce=n-1, timestamp=1700000000, response={HMAC_RESPONSE}",
        "Authorization: Hmac username=p1, nonce=[REDACTED], timestamp=1700000000, response=[REDACTED]",
    ),
    (
        '{"headers": {"Authorization": "Hmac username=\\"p1\\", nonce=\\"n1\\", timestamp=1, response=\\"ab12\\""}}',
        '{"headers": {"Authorization": "Hmac username=\\"p1\\", nonce=\\"[REDACTED]\\", timestamp=1, '
        'response=\\"[REDACTED]\\""}}',
    ),
    (
        'Digest username="p1", realm="api", nonce="abc", uri="/x", cnonce="def", response="0a1b"',
        'Digest username="p1", realm="api", nonce="[REDACTED]", uri="/x", cnonce="[REDACTED]", response="[REDACTED]"',
    ),
    (
        '{"partnerId": "p1", "partnerKey": "s3cr3t-key", "cvv": 123, "card_verification": "999"}',
        '{"partnerId": "p1", "partnerKey": "[REDACTED]", "cvv": "[REDACTED]", "card_verification": "[REDACTED]"}',
    ),
    (
        "account_id=123456789012&api_accesskey=e6f157d2-66cf-43d5-8a56-c4c57d5760d7&card_verification=123&zip=1",
        "account_id=123456789012&api_accesskey=[REDACTED]&card_verification=[REDACTED]&zip=1",
    ),
    (
        '{\\"partnerKey\\": \\"k1\\", \\"cvv\\": 12}',
        '{\\"partnerKey\\": \\"[REDACTED]\\", \\"cvv\\": \\"[REDACTED]\\"}',
    ),
    ("{'partnerKey': 'k1', 'CVV': None}", "{'partnerKey': '[REDACTED]', 'CVV': '[REDACTED]'}"),
    ("cvv: 1234 rejected", "cvv: [REDACTED] rejected"),
    # a CVV's token is never kept either (PCI DSS 3.3.1): as JSON, form data and XML
    ("vault_token_card_verification=123 transaction_type=SALE", "vault_token_card_verification=[REDACTED] "
     "transaction_type=SALE"),
    ('{"bfid": "djE6", "vault_token_card_verification": "834"}',
     '{"bfid": "djE6", "vault_token_card_verification": "[REDACTED]"}'),
    ("<vault_token_card_verification>834</vault_token_card_verification>",
     "<vault_token_card_verification>[REDACTED]</vault_token_card_verification>"),
    ('"secret": "c2VjcmV0LWtleQ=="', '"secret": "[REDACTED]"'),
    ('"Discretionary": "1000123456789"', '"Discretionary": "[REDACTED]"'),
    (
        "<cvv>123</cvv><card_number>4242424242424242</card_number>",
        "<cvv>[REDACTED]</cvv><card_number>424242******4242</card_number>",
    ),
    ("<PartnerKey>abc</PartnerKey>", "<PartnerKey>[REDACTED]</PartnerKey>"),
]


@pytest.mark.parametrize(("text", "expected"), REDACTIONS)
def test_redact_text(text: str, expected: str) -> None:
    # Given a log line with card data or secrets / When redacted / Then exactly the sensitive parts change
    assert redact_text(text) == expected
    # ... and redacting again changes nothing.
    assert redact_text(expected) == expected


ORDINARY = [
    "",
    "partner p1 validated device 12345678 in 35 ms",
    "transaction_id=123456789012 transaction_type=AUTHORIZATION tender_type=CARD amount=10.00",
    "request e6f157d2-66cf-43d5-8a56-c4c57d5760d7 at 2024-01-15T12:30:45.123Z",
    "Root=1-5759e988-bd862e3fe1be46a994272793",
    "timestamp=1700000000 count=1 status=200",
    "Authentication required. errCode=1003",
    "vault_token_card_number=9000000000000002 bfid=djE6YWJjfGRlZnx0cGwx",
    "messageId=4242424242424242123456789",
    '{"messageId": "1234567890123456789012345", "ksn": "62994901190000000002"}',
    "ksn FFFF9876543210E00001 counter 1",
    "level2_zip=12345-6789 phone 415-555-2671",
    "cvv check failed; authorization declined",
    "card ending 4242, expiry 12/25, brand Visa",
    "an odd number 1234567812345678 fails Luhn",
    "deadbeef cafebabe 0123456789abcdef",
    "HMAC computed for POST /api/v1/partners/p1/configurations/c1",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_redact_text_leaves_ordinary_text_alone(text: str) -> None:
    assert redact_text(text) == text


def _luhn_pan(body: str) -> str:
    return body + luhn_check_digit(body)


pan16 = st.text(alphabet="0123456789", min_size=15, max_size=15).map(_luhn_pan)
# The payment-card brands (Visa, MasterCard 51-55 / 2221-2720, Discover, JCB) that issue 16-digit PANs.
branded_pan16 = st.one_of(
    st.sampled_from(["4", "51", "52", "53", "54", "55", "2221", "2500", "2720", "6011", "65", "3528", "3589"]).flatmap(
        lambda prefix: st.text(alphabet="0123456789", min_size=15 - len(prefix), max_size=15 - len(prefix)).map(
            lambda rest: _luhn_pan(prefix + rest)
        )
    )
)
boundary = st.characters(blacklist_characters="0123456789")


@settings(max_examples=300)
@given(prefix=st.text(max_size=40), pan=pan16, suffix=st.text(max_size=40), left=boundary, right=boundary)
@example(prefix="", pan="4242424242424242", suffix="", left=" ", right=" ")
@example(prefix="5", pan="7000000000000005", suffix="1", left=" ", right="-")
def test_any_luhn_valid_pan_in_random_text_is_masked(prefix: str, pan: str, suffix: str, left: str, right: str) -> None:
    # Given any Luhn-valid 16-digit PAN set off from random text by a non-digit
    text = prefix + left + pan + right + suffix
    # When redacted / Then the PAN is gone
    assert pan not in redact_text(text)


@settings(max_examples=300)
@given(
    prefix=st.text(alphabet="0123456789 -=abxyz:", max_size=16),
    pan=branded_pan16,
    suffix=st.text(alphabet="0123456789 -=abxyz?", max_size=16),
)
@example(prefix="5A08", pan="4242424242424242", suffix="")
@example(prefix="0000000", pan="4242424242424242", suffix="000000000")
def test_a_branded_pan_glued_to_other_digits_is_masked(prefix: str, pan: str, suffix: str) -> None:
    assert pan not in redact_text(prefix + pan + suffix)


@settings(max_examples=300)
@given(st.lists(st.one_of(st.text(max_size=20), pan16, st.sampled_from([r[0] for r in REDACTIONS])), max_size=6))
def test_redact_text_is_idempotent(parts: list[str]) -> None:
    text = " ".join(parts)
    once = redact_text(text)
    assert redact_text(once) == once


def test_redact_text_has_no_catastrophic_backtracking() -> None:
    hostile = [
        "1 " * 5000,
        "Hmac " + "a=b " * 3000,
        "%B" + "1" * 19 + "^" + "A" * 5000,
        "cvv=" + '"' + "\\" * 5000,
        "Authorization: " + " " * 5000,
        "0" * 100_000,
    ]
    for text in hostile:
        start = time.perf_counter()
        redact_text(text)
        assert time.perf_counter() - start < 2.0


# ---------------------------------------------------------------------- redact_text's candidate search
# redact_text finds where each step's pattern can match with byte-string operations in C and tries the pattern
# there only. It must give exactly what running every pattern over the whole text gives: the reference below is
# the steps as plain ``pattern.sub`` calls (no gate, no candidate list), repeated until nothing changes.


def _reference_once(text: str) -> str:
    text = masking._AUTH_TOKEN_RE.sub(masking._redact_auth_token, text)
    text = masking._PARAM_AUTH_RE.sub(masking._redact_param_auth, text)
    text = masking._KV_RE.sub(masking._redact_kv, text)
    text = masking._XML_SECRET_RE.sub(masking._redact_xml, text)
    text = masking._TRACK1_RE.sub(masking._redact_track1, text)
    text = masking._TRACK2_RE.sub(masking._redact_track2, text)
    text = masking._HEX_RE.sub(masking._redact_hex, text)
    return masking._PAN_CANDIDATE_RE.sub(masking._redact_pan, text)


def reference_redact_text(text: str) -> str:
    for _ in range(masking._MAX_PASSES):
        redacted = _reference_once(text)
        if redacted == text:
            break
        text = redacted
    return text


def _spellings(alternative: str) -> list[str]:
    """Every string an alternative of _SECRET_KEYS / _PAN_KEYS matches (they use only ``[_-]?`` and ``x?``)."""
    out = [""]
    i = 0
    while i < len(alternative):
        if alternative.startswith("[_-]?", i):
            out = [s + sep for s in out for sep in ("", "_", "-")]
            i += 5
        elif i + 1 < len(alternative) and alternative[i + 1] == "?":
            out = [s + opt for s in out for opt in ("", alternative[i])]
            i += 2
        else:
            out = [s + alternative[i] for s in out]
            i += 1
    return out


KEY_SPELLINGS = sorted({s for alt in (masking._SECRET_KEYS + "|" + masking._PAN_KEYS).split("|")
                        for s in _spellings(alt)})


def test_every_key_spelling_holds_a_stem_at_a_listed_offset():
    # The key step is tried only where a stem sits at one of its offsets from the key's first character.
    assert len(KEY_SPELLINGS) > 40
    for spelling in KEY_SPELLINGS:
        assert re.fullmatch(f"(?:{masking._SECRET_KEYS}|{masking._PAN_KEYS})", spelling)
        assert any(spelling.encode()[offset:].startswith(stem) for stem, offsets in masking._KEY_STEMS
                   for offset in offsets), spelling


NON_ASCII = ["\u0130", "\u0131", "\u017f", "\u212a", "é", "Ж", "€", "\u00a0", "\u2028", "\ud800", "😀"]
_digits = st.text(alphabet="0123456789", min_size=1, max_size=24)
_grouped_pan = branded_pan16.flatmap(
    lambda pan: st.sampled_from([" ", "-", "  ", " -", ""]).map(
        lambda sep: sep.join(pan[i : i + 4] for i in range(0, 16, 4))))
_key_value = st.builds(
    lambda key, case, sep, value: (key.upper() if case == 1 else key.title() if case == 2 else key) + sep + value,
    st.sampled_from(KEY_SPELLINGS + ["ſecret", "\u212aey", "prİmary_account_number", "vault_token_card_number",
                                     "card", "x-api"]),
    st.integers(0, 2),
    st.sampled_from([": ", "=", '": "', "': '", '\\": \\"', " = ", ":", '"=', "\\=", '\\"']),
    st.one_of(pan16, _digits, st.sampled_from(['"abc"', "null", "12 34", "[REDACTED]", "4242 4242-4242 4242",
                                               "x y", "'q'", '\\"v\\"', "*", "<"])),
)
_auth = st.builds(
    lambda name, sep, scheme, cred: name + sep + scheme + cred,
    st.sampled_from(["Authorization", "authorization", "AUTHORİZATİON", "Proxy-Authorization", "xproxy-authorization",
                     "9authorization", "proxy-authorization"]),
    st.sampled_from([": ", "=", '": "', "\\\": \\\"", ":"]),
    st.sampled_from(["", "Basic ", "Bearer ", "Hmac ", "Digest ", "hmac ", "token "]),
    st.sampled_from(["dXNlcjpwYXNz", 'username="p1", nonce="n-1", response="ab"', "nonce=x, signature=y",
                     "[REDACTED]", '\\"q\\"', "4242424242424242", "a=b"]),
)
_fragment = st.one_of(
    st.text(alphabet="0123456789 -=Dd;%^?B*:\"'\\<>/&,[]{}abcdefABCFxyz_\n", max_size=12),
    st.sampled_from(NON_ASCII),
    _digits,
    pan16,
    branded_pan16,
    _grouped_pan,
    _key_value,
    _auth,
    st.sampled_from([r[0] for r in REDACTIONS] + ORDINARY + [e["raw"] for e in TRACKS if "raw" in e]),
    st.text(alphabet="0123456789abcdefABCDEF", min_size=28, max_size=40),
    st.sampled_from(["<cvv>", "</cvv>", "<CVV>", "<PartnerKey>", "</PartnerKey>", "<card_number>", "^", "%B", ";",
                     "=", "D", "?", "messageId=", "ksn: ", "hmac", "digest", " ", "  ", "-"]),
)


@settings(max_examples=800, deadline=None)
@given(st.lists(_fragment, max_size=10).map("".join))
def test_redact_text_equals_every_pattern_applied_to_the_whole_text(text: str) -> None:
    assert redact_text(text) == reference_redact_text(text)


@pytest.mark.parametrize(
    "text",
    [r[0] for r in REDACTIONS] + [r[1] for r in REDACTIONS] + ORDINARY
    + [e["raw"] for e in TRACKS if "raw" in e]
    + [
        "1 " * 5000,
        "Hmac " + "a=b " * 3000,
        "%B" + "1" * 19 + "^" + "A" * 5000,
        "cvv=" + '"' + "\\" * 5000,
        "Authorization: " + " " * 5000,
        "0" * 100_000,
        "4" * 30 + "=" + "1" * 40 + "D" * 3,
        ";" + "4" * 19 + "=" + "2512",
        "x" + "42424242424242421" * 5,
        " - ".join(["4242"] * 10),
        "\u017fecret: hunter2 and \u212aey=abc and prİmary_account_number=4242424242424241",
        "café 4242424242424242 Ж " * 50,
    ],
)
def test_redact_text_equals_the_reference_on_known_and_hostile_texts(text: str) -> None:
    assert redact_text(text) == reference_redact_text(text)


def _json_body(size: int) -> str:
    doc: dict[str, Any] = {"cards": [{"number": "4000056655665556", "cvv": "123"}],
                           "headers": {"Authorization": "Basic abc"}, "items": []}
    item = {"sku": "ABC-1234", "qty": 2, "desc": "lorem ipsum dolor sit amet", "price": "19.99",
            "ref": "0123456789abcdef0123456789abcdef", "card_number": "4242 4242 4242 4242", "note": "Ωmega"}
    while len(json.dumps(doc, ensure_ascii=False)) < size:
        doc["items"].append(item)
    return json.dumps(doc, ensure_ascii=False, indent=2)


def _xml_body(size: int) -> str:
    item = ("<item><sku>ABC-1234</sku><pan>4111111111111111</pan><cvv>123</cvv><track>;4266841088889999=08091011"
            "00000046?0</track><desc>lorem ipsum</desc></item>")
    return "<order>" + item * (size // len(item) + 1) + "</order>"


@pytest.mark.parametrize("body", [_json_body(32 * 1024), _xml_body(32 * 1024)], ids=["json", "xml"])
def test_redact_text_equals_the_reference_on_whole_bodies(body: str) -> None:
    redacted = redact_text(body)
    assert redacted == reference_redact_text(body)
    assert "4000056655665556" not in redacted and "4111111111111111" not in redacted and "Basic abc" not in redacted


def test_keys_spelled_with_characters_ignorecase_folds_are_redacted() -> None:
    # re.IGNORECASE matches U+017F to s, U+212A to k and U+0130 to i: such spellings are keys too
    assert redact_text("\u017fecret: hunter2") == "\u017fecret: [REDACTED]"
    assert redact_text('{"\u212aey": "abc"}') == '{"\u212aey": "[REDACTED]"}'
    assert redact_text("AUTHORİZATİON: Bearer xyz") == "AUTHORİZATİON: Bearer [REDACTED]"


def test_positions_survive_non_ascii_text() -> None:
    # Characters outside ASCII (one code point, any width in UTF-8) do not shift what is masked
    text = "Ж😀é\ud800 4242424242424242 ключ=1 key=secret-value 0123456789abcdef0123456789abcdef Ω"
    assert redact_text(text) == "Ж😀é\ud800 424242******4242 ключ=1 key=[REDACTED] [hex:32] Ω"
