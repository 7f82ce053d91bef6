"""The prefix cipher (small-domain permutation): known answers, a reference written from the construction,
bijection over whole domains, tweak and key separation, input checks."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultcore.crypto.prefix_cipher import MAX_DOMAIN, PrefixCipher, PrefixCipherError

KEY = bytes(range(32))
TWEAK = bytes(range(16))


def reference_table(key: bytes, tweak: bytes, n: int) -> list[int]:
    """E(x) for every x, straight from the module docstring: AES every counter block, sort by (h_i, s_i)."""
    k_t = hmac.new(key, b"vaultcore/crypto/prefix-cipher/v1\x00" + len(tweak).to_bytes(2, "big") + tweak
                   + n.to_bytes(4, "big"), hashlib.sha256).digest()
    aes = Cipher(algorithms.AES(k_t), modes.ECB()).encryptor()
    blocks = (2 * n + 15) // 16
    stream = b"".join(aes.update(j.to_bytes(16, "big")) for j in range(blocks))
    ties = [aes.update(b"\x01" + bytes(11) + i.to_bytes(4, "big")) for i in range(n)]
    keys = [(stream[i] * 256 + stream[n + i], ties[i]) for i in range(n)]
    order = sorted(range(n), key=keys.__getitem__)
    table = [0] * n
    for rank, x in enumerate(order):
        table[x] = rank
    return table


def table(cipher: PrefixCipher) -> list[int]:
    return [cipher.encrypt_int(x) for x in range(cipher.n)]


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (100, [63, 0, 58, 45, 22]),
        (1000, [540, 73, 312, 140, 190]),
        (10000, [4437, 1481, 7581, 7532, 3061]),
    ],
)
def test_known_answers(n, expected):
    # Given a fixed key, tweak and domain / Then x = 0, 1, 2, n/2, n-1 have fixed images, and they invert
    cipher = PrefixCipher(KEY, TWEAK, n)
    xs = (0, 1, 2, n // 2, n - 1)
    assert [cipher.encrypt_int(x) for x in xs] == expected
    assert [cipher.decrypt_int(y) for y in expected] == list(xs)


@pytest.mark.parametrize("n", [2, 3, 100, 257, 1000, 3844])
def test_matches_the_reference_construction(n):
    # 3844 (two CARD62 characters) has ~110 pairs sharing a 16-bit h: the 128-bit tie-break decides their order
    assert table(PrefixCipher(KEY, TWEAK, n)) == reference_table(KEY, TWEAK, n)


@pytest.mark.parametrize("n", [1000, 10_000])
def test_bijection_over_the_whole_domain(n):
    cipher = PrefixCipher(KEY, TWEAK, n)
    images = table(cipher)
    assert sorted(images) == list(range(n))
    assert [cipher.decrypt_int(y) for y in images] == list(range(n))


def test_largest_domain_agrees_with_the_reference_on_a_sample():
    reference = reference_table(KEY, TWEAK, MAX_DOMAIN)
    assert sorted(reference) == list(range(MAX_DOMAIN))
    cipher = PrefixCipher(KEY, TWEAK, MAX_DOMAIN)
    for x in range(0, MAX_DOMAIN, 331):
        assert cipher.encrypt_int(x) == reference[x]
        assert cipher.decrypt_int(reference[x]) == x


def test_tweak_domain_and_key_each_give_another_permutation():
    base = table(PrefixCipher(KEY, TWEAK, 1000))
    assert table(PrefixCipher(KEY, TWEAK[:-1] + b"\x00", 1000)) != base
    assert table(PrefixCipher(bytes(32), TWEAK, 1000)) != base
    assert table(PrefixCipher(KEY, TWEAK, 1001))[:1000] != base
    # tweaks are length-prefixed: T and T || 0x00 are different tweaks
    assert table(PrefixCipher(KEY, TWEAK + b"\x00", 1000)) != base


def test_images_look_uniform():
    # Position 0 over many tweaks: every image appears, none far more than the others (a coarse sanity check)
    n = 100
    counts = [0] * n
    for i in range(3000):
        counts[PrefixCipher(KEY, i.to_bytes(4, "big"), n).encrypt_int(0)] += 1
    assert min(counts) > 5 and max(counts) < 70


@settings(max_examples=60, deadline=None)
@given(key=st.binary(min_size=32, max_size=32), tweak=st.binary(max_size=40), n=st.integers(2, 5000),
       data=st.data())
def test_round_trips(key, tweak, n, data):
    x = data.draw(st.integers(0, n - 1))
    cipher = PrefixCipher(key, tweak, n)
    y = cipher.encrypt_int(x)
    assert 0 <= y < n and cipher.decrypt_int(y) == x


@pytest.mark.parametrize(
    ("key", "tweak", "n", "message"),
    [
        (bytes(8), b"", 100, "key must be at least 16 bytes"),
        ("k" * 32, b"", 100, "key must be at least 16 bytes"),
        (KEY, "tweak", 100, "tweak must be bytes"),
        (KEY, b"", 1, "domain must be an integer from 2 to 32768"),
        (KEY, b"", MAX_DOMAIN + 1, "domain must be an integer"),
        (KEY, b"", True, "domain must be an integer"),
    ],
)
def test_rejects_bad_parameters(key, tweak, n, message):
    with pytest.raises(PrefixCipherError, match=message):
        PrefixCipher(key, tweak, n)


@pytest.mark.parametrize("x", [-1, 100, 1.5, None])
def test_rejects_inputs_outside_the_domain(x):
    cipher = PrefixCipher(KEY, TWEAK, 100)
    for op in (cipher.encrypt_int, cipher.decrypt_int):
        with pytest.raises(PrefixCipherError, match="outside the domain"):
            op(x)
