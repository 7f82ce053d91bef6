"""Known-answer tests for AES DUKPT (ANSI X9.24-3-2017) over every entry of tests/vectors/dukpt_aes.json."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from hypothesis import given
from hypothesis import strategies as st

from vaultcore.crypto import dukpt_aes as a

VECTORS = json.loads((Path(__file__).parent.parent / "vectors" / "dukpt_aes.json").read_text())
ENTRIES = VECTORS["entries"]
h = bytes.fromhex
WORKING = {
    "pin_key": a.KeyUsage.PIN_ENCRYPTION,
    "mac_generation_key": a.KeyUsage.MAC_GENERATION,
    "data_encryption_encrypt_key": a.KeyUsage.DATA_ENCRYPT,
}
TYPES = {"aes128": a.KeyType.AES128, "aes256": a.KeyType.AES256}


def by_type(kind: str) -> list[dict]:
    return [e for e in ENTRIES if e["type"] == kind]


def ids(entries: list[dict]) -> list[str]:
    return [e["id"] for e in entries]


def aes_ecb_decrypt(key: bytes, block: bytes) -> bytes:
    return Cipher(algorithms.AES(key), modes.ECB()).decryptor().update(block)


def test_entry_types_are_all_covered():
    assert {e["type"] for e in ENTRIES} == {"initial_key", "transaction_keys", "derivation_key_only"}


def test_key_usage_and_algorithm_codes_match_the_vector_conventions():
    conv = VECTORS["conventions"]
    usages = {name: int(code, 16) for name, code in conv["key_usage"].items()}
    assert usages["pin_encryption"] == a.KeyUsage.PIN_ENCRYPTION.value
    assert usages["mac_generation"] == a.KeyUsage.MAC_GENERATION.value
    assert usages["mac_verification"] == a.KeyUsage.MAC_VERIFICATION.value
    assert usages["data_encrypt"] == a.KeyUsage.DATA_ENCRYPT.value
    assert usages["data_decrypt"] == a.KeyUsage.DATA_DECRYPT.value
    assert usages["data_both"] == a.KeyUsage.DATA_BOTH.value
    assert usages["key_derivation_initial_key"] == a.KeyUsage.KEY_DERIVATION_INITIAL.value
    algs = {name: int(code, 16) for name, code in conv["algorithm"].items()}
    assert algs["AES-128"] == a.KeyType.AES128.algorithm
    assert algs["AES-256"] == a.KeyType.AES256.algorithm
    assert algs["2TDEA"] == a.KeyType.TDES2.algorithm


@pytest.mark.parametrize("entry", by_type("initial_key"), ids=ids(by_type("initial_key")))
def test_initial_key(entry):
    bdk = h(entry["bdk"])
    assert a.key_type_for(bdk).name == entry["bdk_type"].replace("-", "")
    initial = a.derive_initial_key(bdk, h(entry["initial_key_id"]))
    assert initial.hex().upper() == entry["initial_key"]
    # The published derivation data (one block per 128 key bits) is what the BDK encrypted into the key
    blocks = entry["derivation_data"]
    blocks = [blocks] if isinstance(blocks, str) else blocks
    assert len(blocks) * 16 == len(initial)
    for i, block in enumerate(blocks):
        assert aes_ecb_decrypt(bdk, initial[16 * i : 16 * (i + 1)]).hex().upper() == block


@pytest.mark.parametrize("entry", by_type("transaction_keys"), ids=ids(by_type("transaction_keys")))
def test_transaction_keys(entry):
    bdk, ksn = h(entry["bdk"]), h(entry["ksn"])
    # Given the KSN, the counter is the published one
    assert a.parse_ksn(ksn).counter == entry["transaction_counter"]
    # The initial key (from the whole KSN) and the derivation key match
    initial = a.derive_initial_key(bdk, ksn)
    assert initial.hex().upper() == entry["initial_key"]
    derivation = a.derive_derivation_key(initial, ksn)
    assert derivation.hex().upper() == entry["derivation_key"]
    # Every published working key, both from the derivation key and end to end from the BDK
    checked = 0
    for prefix, usage in WORKING.items():
        for suffix, key_type in TYPES.items():
            name = f"{prefix}_{suffix}"
            if name not in entry:
                continue
            assert a.derive_working_key(derivation, ksn, usage, key_type).hex().upper() == entry[name]
            assert a.working_key(bdk, ksn, usage, key_type).hex().upper() == entry[name]
            checked += 1
    assert checked == (6 if entry["bdk_type"] == "AES-256" else 3)
    # PIN block ISO 9564 format 4 when present
    if "encrypted_pin_block_iso4" in entry:
        pin, pan = entry["pin"], entry["pan"]
        pin_field, pan_field = h(entry["plain_pin_field_iso4"]), h(entry["plain_pan_field_iso4"])
        assert pin_field.hex().upper().startswith(f"4{len(pin)}{pin}".ljust(16, "A"))
        assert pan_field.hex().upper() == f"{len(pan) - 12}{pan}".ljust(32, "0")
        pin_key = h(entry["pin_key_aes128"])
        first = a.aes_cbc_encrypt(pin_key, pin_field)
        encrypted = a.aes_cbc_encrypt(pin_key, bytes(x ^ y for x, y in zip(first, pan_field, strict=True)))
        assert encrypted.hex().upper() == entry["encrypted_pin_block_iso4"]


@pytest.mark.parametrize("entry", by_type("derivation_key_only"), ids=ids(by_type("derivation_key_only")))
def test_derivation_key_only(entry):
    bdk, ksn = h(entry["bdk"]), h(entry["ksn"])
    initial = a.derive_initial_key(bdk, ksn)
    assert initial.hex().upper() == entry["initial_key"]
    counter = int.from_bytes(ksn[8:], "big")
    assert counter == entry["transaction_counter"]
    if counter.bit_count() > 16:
        # An originating device never uses this counter: the public path refuses it ...
        with pytest.raises(a.KsnError, match=r"^KSN transaction counter has more than 16 one-bits$"):
            a.derive_derivation_key(initial, ksn)
        # ... and the explicit host-side opt-out still reproduces the published key
        derived = a.derive_derivation_key(initial, ksn, enforce_max_one_bits=False)
    else:
        derived = a.derive_derivation_key(initial, ksn)
    assert derived.hex().upper() == entry["derivation_key"]


# --- KSN validation ---------------------------------------------------------------------------------

BDK128 = h("FEDCBA9876543210F1F1F1F1F1F1F1F1")


@pytest.mark.parametrize("ksn", [b"", bytes(10), bytes(13), "123456789012345600000001"])
def test_ksn_wrong_length(ksn):
    with pytest.raises(a.KsnError, match=r"^KSN must be 12 bytes$") as info:
        a.parse_ksn(ksn)
    assert info.value.code == 2400


def test_ksn_zero_counter():
    with pytest.raises(a.KsnError, match=r"^KSN transaction counter is zero$"):
        a.working_key(BDK128, h("123456789012345600000000"), a.KeyUsage.DATA_ENCRYPT)
    with pytest.raises(a.KsnError, match="is zero"):
        a.derive_derivation_key(BDK128, h("123456789012345600000000"), enforce_max_one_bits=False)


def test_ksn_too_many_one_bits():
    with pytest.raises(a.KsnError, match=r"^KSN transaction counter has more than 16 one-bits$"):
        a.parse_ksn(h("12345678901234560001FFFF"))
    assert a.parse_ksn(h("1234567890123456FFFF0000")).counter == 0xFFFF0000


# --- keys and ciphers -------------------------------------------------------------------------------


@pytest.mark.parametrize("bdk", [bytes(8), bytes(17), bytes(64)])
def test_bdk_wrong_length(bdk):
    with pytest.raises(ValueError, match=r"^AES DUKPT key must be 16, 24 or 32 bytes$"):
        a.working_key(bdk, h("123456789012345600000001"), a.KeyUsage.DATA_ENCRYPT)


def test_working_key_cannot_be_stronger_than_bdk():
    with pytest.raises(ValueError, match=r"^working key cannot be stronger than the BDK$"):
        a.working_key(BDK128, h("123456789012345600000001"), a.KeyUsage.DATA_ENCRYPT, a.KeyType.AES256)


def test_usages_give_distinct_keys_and_tdes_types_have_their_lengths():
    ksn = h("123456789012345600000001")
    keys = {u: a.working_key(BDK128, ksn, u) for u in a.KeyUsage}
    assert len(set(keys.values())) == len(keys)
    assert len(a.working_key(BDK128, ksn, a.KeyUsage.DATA_ENCRYPT, a.KeyType.TDES2)) == 16
    aes192 = a.working_key(h("00" * 24), ksn, a.KeyUsage.DATA_ENCRYPT)
    assert len(aes192) == 24


@pytest.mark.parametrize("data", [b"", bytes(8), bytes(17)])
def test_decrypt_rejects_partial_blocks(data):
    with pytest.raises(a.DecryptionError, match=r"^ciphertext length must be a positive multiple of 16 bytes$") as info:
        a.aes_cbc_decrypt(bytes(16), data)
    assert info.value.code == 2601


def test_bad_iv_and_unpadded_encrypt():
    with pytest.raises(a.DecryptionError, match=r"^IV must be 16 bytes$"):
        a.aes_cbc_decrypt(bytes(16), bytes(16), iv=bytes(8))
    with pytest.raises(ValueError, match=r"^data length must be a multiple of 16 bytes$"):
        a.aes_cbc_encrypt(bytes(16), bytes(15))


@given(
    key=st.sampled_from([16, 32]).flatmap(lambda n: st.binary(min_size=n, max_size=n)),
    blocks=st.integers(min_value=1, max_value=4),
    fill=st.binary(min_size=64, max_size=64),
)
def test_cbc_round_trip(key, blocks, fill):
    data = fill[: 16 * blocks]
    assert a.aes_cbc_decrypt(key, a.aes_cbc_encrypt(key, data)) == data


def test_doctests():
    assert doctest.testmod(a).failed == 0
