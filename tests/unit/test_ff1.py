"""FF1 (NIST SP 800-38G): known answers, a literal reference implementation, domain rules, performance."""

from __future__ import annotations

import doctest
import json
import math
import os
import random
import string
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultcore.crypto import ff1 as ff1_module
from vaultcore.crypto.ff1 import (
    FF1,
    MIN_DOMAIN,
    DomainTooSmall,
    FF1Error,
    PreparedFF1,
    decrypt_numerals,
    encrypt_numerals,
    min_length,
)

VECTORS = json.loads((Path(__file__).parent.parent / "vectors" / "fpe.json").read_text())
FF1_ENTRIES = [e for e in VECTORS["entries"] if e["algorithm"] == "FF1"]
RADIX62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def _numerals(entry: dict, which: str) -> list[int]:
    if f"{which}_numerals" in entry:
        return entry[f"{which}_numerals"]
    return [entry["alphabet"].index(ch) for ch in entry[which]]


# ------------------------------------------------------------------ literal reference (SP 800-38G Algorithm 7/8)


def _ref_ff1(key: bytes, tweak: bytes, x: list[int], radix: int, decrypt: bool = False) -> list[int]:
    """Written straight from the standard, with numeral strings and AES-CBC for the PRF: no shortcuts shared
    with the implementation under test."""

    def num(s: list[int]) -> int:
        return sum(d * radix ** (len(s) - 1 - i) for i, d in enumerate(s))

    def strm(v: int, m: int) -> list[int]:
        return [(v // radix ** (m - 1 - i)) % radix for i in range(m)]

    def ciph(block: bytes) -> bytes:
        e = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
        return e.update(block) + e.finalize()

    def prf(data: bytes) -> bytes:
        e = Cipher(algorithms.AES(key), modes.CBC(bytes(16))).encryptor()
        return (e.update(data) + e.finalize())[-16:]

    n, t = len(x), len(tweak)
    u, v = n // 2, n - n // 2
    a, b_ = x[:u], x[u:]
    bits = 0
    while 2**bits < radix**v:  # ceil(v * log2(radix)) without floating point
        bits += 1
    b = math.ceil(bits / 8)
    d = 4 * math.ceil(b / 4) + 4
    p = bytes([1, 2, 1]) + radix.to_bytes(3, "big") + bytes([10, u % 256]) + n.to_bytes(4, "big") + t.to_bytes(4, "big")

    def round_y(i: int, half: list[int]) -> int:
        q = tweak + bytes((-t - b - 1) % 16) + bytes([i]) + num(half).to_bytes(b, "big")
        r = prf(p + q)
        s = r
        for j in range(1, math.ceil(d / 16)):
            s += ciph(bytes(x_ ^ y_ for x_, y_ in zip(r, j.to_bytes(16, "big"), strict=True)))
        return int.from_bytes(s[:d], "big")

    if not decrypt:
        for i in range(10):
            m = u if i % 2 == 0 else v
            c = (num(a) + round_y(i, b_)) % radix**m
            a, b_ = b_, strm(c, m)
    else:
        for i in range(9, -1, -1):
            m = u if i % 2 == 0 else v
            c = (num(b_) - round_y(i, a)) % radix**m
            b_, a = a, strm(c, m)
    return a + b_


# --------------------------------------------------------------------------------------------- known answers


def test_vectors_cover_every_nist_sample():
    ids = {e["id"] for e in FF1_ENTRIES}
    assert {f"nist-ff1-sample-{i}" for i in range(1, 10)} <= ids


@pytest.mark.parametrize("entry", FF1_ENTRIES, ids=[e["id"] for e in FF1_ENTRIES])
def test_known_answer_numerals(entry):
    # Given a published FF1 sample
    key, tweak, radix = bytes.fromhex(entry["key"]), bytes.fromhex(entry["tweak"]), entry["radix"]
    pt, ct = _numerals(entry, "plaintext"), _numerals(entry, "ciphertext")
    # When / Then encryption gives the published ciphertext and decryption the plaintext
    assert encrypt_numerals(key, tweak, pt, radix) == ct
    assert decrypt_numerals(key, tweak, ct, radix) == pt
    # and the literal reference agrees (validates the reference used by the property tests below)
    assert _ref_ff1(key, tweak, pt, radix) == ct


@pytest.mark.parametrize("entry", [e for e in FF1_ENTRIES if "alphabet" in e], ids=lambda e: e["id"])
def test_known_answer_alphabet(entry):
    key, tweak = bytes.fromhex(entry["key"]), bytes.fromhex(entry["tweak"])
    cipher = FF1(key, entry["alphabet"])
    assert cipher.encrypt(entry["plaintext"], tweak) == entry["ciphertext"]
    assert cipher.decrypt(entry["ciphertext"], tweak) == entry["plaintext"]


def test_module_doctests():
    assert doctest.testmod(ff1_module).failed == 0


# ------------------------------------------------------------------------------------------ property tests


@settings(max_examples=150, deadline=None)
@given(
    key=st.binary(min_size=32, max_size=32),
    tweak=st.binary(max_size=40),
    radix=st.sampled_from([2, 10, 26, 36, 62, 255, 1000, 65536]),
    data=st.data(),
)
def test_matches_reference_and_round_trips(key, tweak, radix, data):
    # Lengths up to 120 exercise the multi-block Q tail and d > 16 (several AES blocks in S).
    n = data.draw(st.integers(min_value=min_length(radix), max_value=max(min_length(radix), 120 if radix <= 62 else 8)))
    x = data.draw(st.lists(st.integers(0, radix - 1), min_size=n, max_size=n))
    y = encrypt_numerals(key, tweak, x, radix)
    assert y == _ref_ff1(key, tweak, x, radix)
    assert decrypt_numerals(key, tweak, y, radix) == x
    assert _ref_ff1(key, tweak, y, radix, decrypt=True) == x


@pytest.mark.parametrize(
    ("radix", "n", "tweak_len"), [(62, 100, 0), (10, 200, 33), (2, 300, 7), (36, 64, 16), (65536, 20, 5)]
)
def test_long_inputs_match_reference(radix, n, tweak_len):
    # Long halves put NUM_radix(B) across several blocks of Q and need d > 16 (extra AES blocks in S): the
    # general path, which the NIST samples (all short) do not reach.
    rng = random.Random(n)
    key, tweak = rng.randbytes(32), rng.randbytes(tweak_len)
    x = [rng.randrange(radix) for _ in range(n)]
    prepared = PreparedFF1(key, tweak, radix, n)
    assert prepared._fast is None  # the general path is the one under test
    y = encrypt_numerals(key, tweak, x, radix)
    assert y == _ref_ff1(key, tweak, x, radix)
    assert decrypt_numerals(key, tweak, y, radix) == x


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=RADIX62, min_size=4, max_size=100), tweak=st.binary(max_size=32))
def test_radix62_round_trip(text, tweak):
    cipher = FF1(bytes(range(32)), RADIX62)
    token = cipher.encrypt(text, tweak)
    assert len(token) == len(text) and set(token) <= set(RADIX62)
    assert cipher.decrypt(token, tweak) == text


def test_radix62_tweak_changes_ciphertext():
    cipher = FF1(bytes(range(32)), RADIX62)
    assert cipher.encrypt("HelloWorld42", b"a") != cipher.encrypt("HelloWorld42", b"b")


def test_prepared_ff1_is_a_permutation_of_the_minimum_domain_sample():
    ff1 = PreparedFF1(os.urandom(32), b"t", 1000, 2)
    outs = {ff1.encrypt_int(x) for x in range(5000)}
    assert len(outs) == 5000 and max(outs) < MIN_DOMAIN
    assert all(ff1.decrypt_int(ff1.encrypt_int(x)) == x for x in range(0, MIN_DOMAIN, 99_991))


# -------------------------------------------------------------------------------------------------- domain


@pytest.mark.parametrize(("radix", "shortest"), [(2, 20), (10, 6), (26, 5), (36, 4), (62, 4), (1000, 2), (65536, 2)])
def test_minimum_domain(radix, shortest):
    key = bytes(32)
    assert min_length(radix) == shortest
    assert radix**shortest >= MIN_DOMAIN > radix ** (shortest - 1) or shortest == 2
    encrypt_numerals(key, b"", [1] * shortest, radix)
    with pytest.raises(DomainTooSmall, match=r"below the minimum of 1,000,000"):
        encrypt_numerals(key, b"", [1] * (shortest - 1), radix)


def test_domain_too_small_is_a_value_error_and_names_the_needed_length():
    with pytest.raises(ValueError, match="radix 10 needs at least 6 numerals"):
        FF1(bytes(32), "0123456789").encrypt("12345")


@pytest.mark.parametrize("key", [b"", bytes(15), bytes(20), bytes(33), "k" * 32])
def test_rejects_bad_keys(key):
    with pytest.raises(FF1Error, match="16, 24 or 32 bytes"):
        FF1(key, "0123456789")


@pytest.mark.parametrize("radix", [0, 1, 65537, True])
def test_rejects_bad_radix(radix):
    with pytest.raises(FF1Error, match="radix must be"):
        encrypt_numerals(bytes(32), b"", [0] * 30, radix)


def test_rejects_numerals_out_of_range():
    with pytest.raises(FF1Error, match="from 0 to 9"):
        encrypt_numerals(bytes(32), b"", [0, 1, 2, 3, 4, 10], 10)


def test_rejects_characters_outside_alphabet_without_echoing_them():
    with pytest.raises(FF1Error, match="position 3 is not in the alphabet") as exc:
        FF1(bytes(32), "0123456789").encrypt("412X111111")
    assert "X" not in str(exc.value)


def test_rejects_duplicate_alphabet_and_non_bytes_tweak():
    with pytest.raises(FF1Error, match="distinct"):
        FF1(bytes(32), "00123456789")
    with pytest.raises(FF1Error, match="tweak must be bytes"):
        FF1(bytes(32), "0123456789").encrypt("123456", "tweak")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------- performance
