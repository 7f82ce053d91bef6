"""bfid: round trip, integrity (every character), length limits, key derivation, token tags (versions 2 and 3),
version 3 (the small-domain construction marker) and version-1 and -2 compatibility."""

from __future__ import annotations

import base64
import hashlib
import hmac
import string
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from vaultcore.tokens import bfid as bfid_module
from vaultcore.tokens.bfid import (
    BFID_MAX_LENGTH,
    BFID_MIN_LENGTH,
    BFID_TEXT_MAX_LENGTH,
    BFID_VERSION,
    OWNER_TAG_BYTES,
    OWNER_VERSION,
    PREFIX_CIPHER_VERSION,
    BfidError,
    BfidInfo,
    derive_subkeys,
    derive_tag_key,
    draft_bfid,
    hkdf_sha256,
    new_bfid,
    owner_matches,
    owner_tag,
    parse_bfid,
    peek_bfid_unverified,
    seal_bfid,
    token_issued,
    token_tag,
)

MAC_KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
B64URL = string.ascii_letters + string.digits + "-_"


def make(**kwargs) -> str:
    args: dict[str, Any] = {"mac_key": MAC_KEY, "key_version": 3, "template_ref": "GATEWAY", "partner_id": "partner-42"}
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
    assert raw.startswith(b"v4\x00\x03") and b"GATEWAY" in raw and b"partner-42" in raw
    raw = base64.urlsafe_b64decode(make(version=2) + "==")
    assert raw.startswith(b"v2\x00\x03") and b"GATEWAY" in raw and b"partner-42" in raw
    raw = base64.urlsafe_b64decode(make(version=1) + "==")
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
    payload = b"v5" + raw[2:-16]
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


def test_derive_tag_key():
    master = bytes(range(100, 132))
    tag_key = derive_tag_key(master)
    assert tag_key == HKDF(hashes.SHA256(), 32, bfid_module._HKDF_SALT, bfid_module._INFO_TAG).derive(master)
    assert tag_key.hex() == "e38c4db5388a8952673c1349d08fbc0eee38b3559f2e36ee6916d81525fb3fc7"
    assert tag_key not in derive_subkeys(master)
    with pytest.raises(ValueError, match="at least 32 bytes"):
        derive_tag_key(bytes(16))


# ------------------------------------------------------------------------------ token tags (version 2)

TAG_KEY = bytes(range(64, 96))
CARD, EXPIRY = "vault_token_card_number", "vault_token_card_expiration"
CARD_TOKEN, EXPIRY_TOKEN = "4111118316051111", "0731"
KNOWN_SCOPE = "djIAAwBlU_EAAAECAwQFBgcICQoLDA0ODwpwYXJ0bmVyLTQyB0dBVEVXQVk"
KNOWN_BFID = "djIAAwBlU_EAAAECAwQFBgcICQoLDA0ODwpwYXJ0bmVyLTQyB0dBVEVXQVkAKZgxDgFGLsGLuVDeJtAxpX2JMljq8xSurg"


def known_draft(version: int = 2) -> BfidInfo:
    """The known core as version 2 (the known answers below predate version 3, whose layout is the same)."""
    return draft_bfid(3, "GATEWAY", "partner-42", issued_at=1_700_000_000, nonce=bytes(range(16)), version=version)


def issued(info: BfidInfo, *pairs: tuple[int, str, str]) -> str:
    """Seal ``info`` with the tags of (field index, field name, token) triples."""
    return seal_bfid(MAC_KEY, info, [(i, token_tag(TAG_KEY, info.scope, name, tok)) for i, name, tok in pairs])


def test_token_tag_known_answer():
    # Given a fixed key, bfid core and tokens
    info = known_draft()
    assert info.scope == KNOWN_SCOPE and info.version == 2 and info.tags == ()
    # Then the tags are fixed (32 bits) and are the documented construction
    card_tag = token_tag(TAG_KEY, info.scope, CARD, CARD_TOKEN)
    assert card_tag.hex() == "2998310e"
    assert token_tag(TAG_KEY, info.scope, EXPIRY, EXPIRY_TOKEN).hex() == "462ec18b"
    message = b"vaultcore/tokens/token-tag/v2\x00" + KNOWN_SCOPE.encode() + b"\x00" + CARD.encode() + b"\x00" + \
        CARD_TOKEN.encode()
    assert card_tag == hmac.new(TAG_KEY, message, hashlib.sha256).digest()[:4]
    # And the scope is the core of the layout: version, key version, issue time, nonce, partner, template
    core = base64.urlsafe_b64decode(KNOWN_SCOPE + "=")
    assert core == (b"v2\x00\x03" + (1_700_000_000).to_bytes(5, "big") + bytes(range(16)) + b"\x0apartner-42"
                    + b"\x07GATEWAY")


def test_sealed_bfid_known_answer_and_parse():
    # When the known core is sealed with the card number and expiry tags (fields 0 and 1 of GATEWAY)
    text = issued(known_draft(), (0, CARD, CARD_TOKEN), (1, EXPIRY, EXPIRY_TOKEN))
    # Then the text is fixed: core, then index + tag per token, then the 128-bit MAC over all of it
    assert text == KNOWN_BFID
    raw = base64.urlsafe_b64decode(text + "==")
    assert raw[:-16].endswith(b"\x00" + bytes.fromhex("2998310e") + b"\x01" + bytes.fromhex("462ec18b"))
    assert raw[-16:] == hmac.new(MAC_KEY, raw[:-16], hashlib.sha256).digest()[:16]
    info = parse_bfid(MAC_KEY, text, expected_partner_id="partner-42")
    assert (info.version, info.scope, info.key_version, info.issued_at) == (2, KNOWN_SCOPE, 3, 1_700_000_000)
    assert info.tags == ((0, bytes.fromhex("2998310e")), (1, bytes.fromhex("462ec18b")))
    assert peek_bfid_unverified(text) == ("partner-42", 3)


KNOWN_SCOPE_V3 = "djMAAwBlU_EAAAECAwQFBgcICQoLDA0ODwpwYXJ0bmVyLTQyB0dBVEVXQVk"
KNOWN_BFID_V3 = "djMAAwBlU_EAAAECAwQFBgcICQoLDA0ODwpwYXJ0bmVyLTQyB0dBVEVXQVkAPy51LwEDDQ2YrYKjpwm0M3IvWvY6oFn8Gw"


def test_version_3_known_answer_same_layout_other_marker():
    # Given the known core drafted now (version 3: small-domain tokens by the prefix cipher)
    info = draft_bfid(3, "GATEWAY", "partner-42", issued_at=1_700_000_000, nonce=bytes(range(16)), version=3)
    assert info.version == PREFIX_CIPHER_VERSION == 3 and BFID_VERSION == 4  # issue 27: version 4 is issued now
    # Then its core is version 2's with the marker "v3": another scope, so other tweaks and tags
    assert info.scope == KNOWN_SCOPE_V3 != KNOWN_SCOPE
    core = base64.urlsafe_b64decode(KNOWN_SCOPE_V3 + "=")
    assert core == b"v3" + base64.urlsafe_b64decode(KNOWN_SCOPE + "=")[2:]
    assert token_tag(TAG_KEY, info.scope, CARD, CARD_TOKEN).hex() == "3f2e752f"
    text = issued(info, (0, CARD, CARD_TOKEN), (1, EXPIRY, EXPIRY_TOKEN))
    assert text == KNOWN_BFID_V3 and len(text) == len(KNOWN_BFID)
    parsed = parse_bfid(MAC_KEY, text, expected_partner_id="partner-42")
    assert (parsed.version, parsed.scope, parsed.key_version) == (3, KNOWN_SCOPE_V3, 3)
    assert token_issued(TAG_KEY, parsed, 0, CARD, CARD_TOKEN)
    assert not token_issued(TAG_KEY, parsed, 1, EXPIRY, "0732")
    # a version-2 tag does not vouch under version 3 (the version is part of the scope), nor the reverse
    assert not token_issued(TAG_KEY, parse_bfid(MAC_KEY, issued(known_draft(), (0, CARD, "4111110000001111"))), 0,
                            CARD, CARD_TOKEN)
    # the version is MAC'd: changing the marker of a valid version-3 bfid to v2 is refused
    raw = base64.urlsafe_b64decode(text + "==")
    with pytest.raises(BfidError, match="not valid"):
        parse_bfid(MAC_KEY, base64.urlsafe_b64encode(b"v2" + raw[2:]).rstrip(b"=").decode())


def test_a_version_2_bfid_extends_as_version_2():
    # Given a version-2 bfid issued before version 3 existed
    old = parse_bfid(MAC_KEY, issued(known_draft(), (0, CARD, CARD_TOKEN)))
    assert old.version == 2
    # When tokens are added under it, it stays version 2 with the same scope (its tokens are made as before)
    extended = parse_bfid(MAC_KEY, issued(old, (1, EXPIRY, EXPIRY_TOKEN)))
    assert (extended.version, extended.scope) == (2, KNOWN_SCOPE)
    assert issued(old, (1, EXPIRY, EXPIRY_TOKEN)) == KNOWN_BFID
    # and only versions 2 to 5 can be drafted or carry tags, version 5 only with its owner tag
    for version in (1, 6):
        with pytest.raises(BfidError, match="version 2, 3, 4 or 5"):
            draft_bfid(3, "GATEWAY", "partner-42", version=version)
    with pytest.raises(BfidError, match="needs an owner tag"):
        draft_bfid(3, "GATEWAY", "partner-42", version=5)
    with pytest.raises(BfidError, match="bfid version must be 1, 2, 3 or 4"):
        make(version=5)


def test_only_issued_tokens_pass_the_tag_check():
    info = parse_bfid(MAC_KEY, KNOWN_BFID)
    assert token_issued(TAG_KEY, info, 0, CARD, CARD_TOKEN)
    assert token_issued(TAG_KEY, info, 1, EXPIRY, EXPIRY_TOKEN)
    # a wrong token: one digit changed, the README's example token, a value in clear
    assert not token_issued(TAG_KEY, info, 0, CARD, "4111118316051112")
    assert not token_issued(TAG_KEY, info, 0, CARD, "4242420017564242")
    assert not token_issued(TAG_KEY, info, 0, CARD, "4111111111111111")
    # a token of another field, or checked under another field's index
    assert not token_issued(TAG_KEY, info, 1, EXPIRY, CARD_TOKEN)
    assert not token_issued(TAG_KEY, info, 1, CARD, CARD_TOKEN)
    # a field the bfid holds no tag for (not tokenized under it): refused whatever the token
    assert not token_issued(TAG_KEY, info, 3, "vault_token_bank_account_number", CARD_TOKEN)
    # the tag key of another partner (or key version) does not make the tag
    assert not token_issued(bytes(32), info, 0, CARD, CARD_TOKEN)


def test_a_token_of_another_bfid_is_refused():
    # Given two bfids of the same partner, template and key, each issued with its own card token
    first = parse_bfid(MAC_KEY, issued(known_draft(), (0, CARD, CARD_TOKEN)))
    other_draft = draft_bfid(3, "GATEWAY", "partner-42", issued_at=1_700_000_000, nonce=bytes(range(1, 17)))
    other = parse_bfid(MAC_KEY, issued(other_draft, (0, CARD, "4111110000001111")))
    # Then neither vouches for the other's token (the tag is bound to the bfid's core)
    assert token_issued(TAG_KEY, other, 0, CARD, "4111110000001111")
    assert not token_issued(TAG_KEY, first, 0, CARD, "4111110000001111")
    assert not token_issued(TAG_KEY, other, 0, CARD, CARD_TOKEN)
    # even when both issued the same token text
    same = parse_bfid(MAC_KEY, issued(other_draft, (0, CARD, CARD_TOKEN)))
    assert same.tags != first.tags and token_issued(TAG_KEY, same, 0, CARD, CARD_TOKEN)


def test_version_1_bfids_still_verify_without_tags():
    # Given a bfid of the former layout (no token tags)
    text = make(version=1, issued_at=1_700_000_000, nonce=bytes(range(16)))
    info = parse_bfid(MAC_KEY, text, expected_partner_id="partner-42")
    # Then it parses as version 1, its scope is its own text (the tweak its tokens were made with)
    assert (info.version, info.tags, info.scope) == (1, (), text)
    # and any token passes the tag check: old tokens keep detokenizing (the FF1 result is not checked)
    assert token_issued(TAG_KEY, info, 0, CARD, CARD_TOKEN) and token_issued(TAG_KEY, info, 5, "x", "anything")
    # a version-1 bfid cannot carry tags
    with pytest.raises(BfidError, match="only a version-2, -3, -4 or -5 bfid"):
        seal_bfid(MAC_KEY, info, [(0, bytes(4))])
    # a version-1 payload with trailing bytes (tags) is not a version-1 bfid
    payload = base64.urlsafe_b64decode(text + "==")[:-16] + b"\x00" + bytes(4)
    forged = payload + hmac.new(MAC_KEY, payload, hashlib.sha256).digest()[:16]
    with pytest.raises(BfidError, match="unknown format"):
        parse_bfid(MAC_KEY, base64.urlsafe_b64encode(forged).rstrip(b"=").decode())


def test_sealing_merges_sorts_and_is_idempotent():
    info = known_draft()
    card = (0, CARD, CARD_TOKEN)
    expiry = (1, EXPIRY, EXPIRY_TOKEN)
    # any order, duplicates: one spelling
    assert issued(info, expiry, card, card) == KNOWN_BFID
    # extending a parsed bfid with a tag it holds gives the same text; with a new one, the same scope
    only_card = parse_bfid(MAC_KEY, issued(info, card))
    assert issued(parse_bfid(MAC_KEY, KNOWN_BFID), card) == KNOWN_BFID
    extended = issued(only_card, expiry)
    assert extended == KNOWN_BFID and parse_bfid(MAC_KEY, extended).scope == only_card.scope
    # the earlier bfid still vouches for its own token only
    assert token_issued(TAG_KEY, only_card, 0, CARD, CARD_TOKEN)
    assert not token_issued(TAG_KEY, only_card, 1, EXPIRY, EXPIRY_TOKEN)
    # a field tokenized twice (proxy: one field at several paths) holds two tags; both tokens pass
    twice = parse_bfid(MAC_KEY, issued(info, card, (0, CARD, "4111119999991111")))
    assert len(twice.tags) == 2 and token_issued(TAG_KEY, twice, 0, CARD, "4111119999991111")
    assert token_issued(TAG_KEY, twice, 0, CARD, CARD_TOKEN)


def test_tags_out_of_order_are_refused_even_with_a_valid_mac():
    raw = base64.urlsafe_b64decode(KNOWN_BFID + "==")[:-16]
    core, entries = raw[:-10], raw[-10:]
    for bad in (core + entries[5:] + entries[:5], core + entries[:5] + entries[:5], core + entries[:7]):
        forged = bad + hmac.new(MAC_KEY, bad, hashlib.sha256).digest()[:16]
        with pytest.raises(BfidError, match="unknown format"):
            parse_bfid(MAC_KEY, base64.urlsafe_b64encode(forged).rstrip(b"=").decode())


def test_tampering_with_any_character_of_a_tagged_bfid_is_refused():
    for i, ch in enumerate(KNOWN_BFID):
        bad = KNOWN_BFID[:i] + B64URL[(B64URL.index(ch) + 1) % 64] + KNOWN_BFID[i + 1 :]
        with pytest.raises(BfidError):
            parse_bfid(MAC_KEY, bad)


def test_tag_sizes_and_limits():
    # 5 bytes per token: the gateway's sets (card + expiry, bank account + routing) fit its 150 characters with
    # the built-in GATEWAY template and any partner id (up to 40 characters), four tags too
    pairs = [(i, f"f{i}", "tok") for i in range(5)]
    longest_partner = draft_bfid(1, "GATEWAY", "p" * 40)
    assert len(issued(longest_partner, *pairs[:2])) == 134 and len(issued(longest_partner, *pairs[:4])) == 147
    assert len(issued(draft_bfid(1, "DEMO", "demo"), *pairs[:4])) == 95
    # a bfid of many tokens grows up to 1,024 characters, then sealing refuses
    longest = draft_bfid(1, "T" * 32, "p" * 37)
    many = [(i % 256, f"f{i}", str(i)) for i in range(131)]
    text = issued(longest, *many)
    assert BFID_MAX_LENGTH < len(text) <= BFID_TEXT_MAX_LENGTH and len(parse_bfid(MAC_KEY, text).tags) == 131
    with pytest.raises(BfidError, match="too many token tags"):
        issued(longest, *many, (200, "f", "one more"))
    with pytest.raises(BfidError, match="must be 4 bytes"):
        seal_bfid(MAC_KEY, longest, [(0, bytes(5))])
    with pytest.raises(BfidError, match="field index"):
        seal_bfid(MAC_KEY, longest, [(256, bytes(4))])
    with pytest.raises(BfidError):
        parse_bfid(MAC_KEY, "A" * (BFID_TEXT_MAX_LENGTH + 3))
    # a version-1 text longer than 150 characters is refused before its MAC is computed
    with pytest.raises(BfidError, match="unknown format"):
        parse_bfid(MAC_KEY, "djEA" + "A" * 152)


# ------------------------------------------------------------------------------ version 5: the owner tag


def _independent_owner_tag(mac_key: bytes, account_id: str) -> bytes:
    """The documented construction, with cryptography's HKDF (not the module's) and the stdlib's HMAC."""
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"vaultcore/tokens/hkdf-salt/v1",
               info=b"vaultcore/tokens/owner-tag-hmac-sha256/v1").derive(mac_key)
    return hmac.new(key, b"vaultcore/tokens/owner-tag/v1\x00" + account_id.encode(), hashlib.sha256).digest()[:8]


def test_the_owner_tag_is_the_documented_construction():
    for account in ("120615752", "a", "acct-" + "9" * 40):
        assert owner_tag(MAC_KEY, account) == _independent_owner_tag(MAC_KEY, account)
    assert len(owner_tag(MAC_KEY, "120615752")) == OWNER_TAG_BYTES
    # another partner's key, another account: another tag
    assert owner_tag(OTHER_KEY, "120615752") != owner_tag(MAC_KEY, "120615752")
    assert owner_tag(MAC_KEY, "120615753") != owner_tag(MAC_KEY, "120615752")


def test_a_version_5_bfid_carries_its_owner_in_the_macd_core():
    # Given a gateway capture's bfid bound to account 120615752, with its two token tags
    draft = draft_bfid(3, "GATEWAY", "partner-42", issued_at=1_700_000_000, nonce=bytes(range(16)),
                       owner_tag=owner_tag(MAC_KEY, "120615752"))
    assert draft.version == OWNER_VERSION
    text = issued(draft, (0, CARD, CARD_TOKEN), (1, EXPIRY, EXPIRY_TOKEN))
    info = parse_bfid(MAC_KEY, text, expected_partner_id="partner-42")
    # Then the owner is part of the scope (the tokens and the Tokens item are bound to it) and verifies
    assert info.version == 5 and info.owner_tag == owner_tag(MAC_KEY, "120615752") and info.scope == draft.scope
    assert info.scope != draft_bfid(3, "GATEWAY", "partner-42", issued_at=1_700_000_000, nonce=bytes(range(16)),
                                    owner_tag=owner_tag(MAC_KEY, "120615753")).scope
    assert owner_matches(MAC_KEY, info, "120615752")
    assert not owner_matches(MAC_KEY, info, "120615753") and not owner_matches(MAC_KEY, info, None)
    assert token_issued(TAG_KEY, info, 0, CARD, CARD_TOKEN)
    # and an unbound bfid matches no account
    assert not owner_matches(MAC_KEY, parse_bfid(MAC_KEY, make()), "120615752")
    # When one bit of the owner tag is changed, the bfid no longer verifies
    raw = bytearray(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    owner_at = 2 + 2 + 5 + 16 + 1 + len("partner-42") + 1 + len("GATEWAY")
    raw[owner_at] ^= 1
    altered = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    with pytest.raises(BfidError, match="not valid"):
        parse_bfid(MAC_KEY, altered)
    # and a truncated version-5 core is refused as malformed, not read as a shorter owner
    core = base64.urlsafe_b64decode(draft.scope + "=" * (-len(draft.scope) % 4))[:-3]
    forged = base64.urlsafe_b64encode(core + hmac.new(MAC_KEY, core, hashlib.sha256).digest()[:16]).rstrip(b"=")
    with pytest.raises(BfidError):
        parse_bfid(MAC_KEY, forged.decode())


def test_a_gateway_capture_bfid_fits_the_gateway_for_every_partner_id():
    # The longest partner id the platform issues (40 characters) with GATEWAY and the two tags of a capture
    draft = draft_bfid(65535, "GATEWAY", "p" * 40, owner_tag=owner_tag(MAC_KEY, "9" * 20))
    text = issued(draft, (0, CARD, CARD_TOKEN), (1, EXPIRY, EXPIRY_TOKEN))
    assert len(text) <= BFID_MAX_LENGTH
    # and ids too long to leave room for the owner tag are refused when drafted, not cut
    with pytest.raises(BfidError, match="at most 61"):
        draft_bfid(3, "GATEWAY", "p" * 55, owner_tag=owner_tag(MAC_KEY, "1"))
