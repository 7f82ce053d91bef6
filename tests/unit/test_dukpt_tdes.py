"""Known-answer tests for TDES DUKPT (ANSI X9.24-1:2009) over every entry of tests/vectors/dukpt_tdes.json."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultcore.crypto import dukpt_tdes as t

VECTORS = json.loads((Path(__file__).parent.parent / "vectors" / "dukpt_tdes.json").read_text())
ENTRIES = VECTORS["entries"]
MASKS = {k: bytes.fromhex(v) for k, v in VECTORS["conventions"]["variant_masks"].items()}
h = bytes.fromhex


def by_type(kind: str) -> list[dict]:
    return [e for e in ENTRIES if e["type"] == kind]


def ids(entries: list[dict]) -> list[str]:
    return [e["id"] for e in entries]


def xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def zero_pad(data: bytes) -> bytes:
    return data + bytes(-len(data) % 8)


def retail_mac(key: bytes, data: bytes) -> bytes:
    """ISO 9797-1 MAC algorithm 3, padding method 1: single-DES CBC under K1, then D(K2), E(K1)."""
    k1, k2 = key[:8], key[8:]
    last = t.tdes_cbc_encrypt(k1 + k1, zero_pad(data))[-8:]  # K1||K1 expands to single DES
    return t.tdes_cbc_encrypt(k1 + k1, t.tdes_cbc_decrypt(k2 + k2, last))


def iso0_pin_block(pin: str, pan: str) -> bytes:
    """ISO 9564-1 format 0: PIN field XOR PAN field (12 rightmost digits without the check digit)."""
    pan = pan.rstrip("Ff")
    pin_field = h(f"0{len(pin)}{pin}".ljust(16, "F"))
    pan_field = h("0000" + pan[-13:-1])
    return xor(pin_field, pan_field)


def test_entry_types_are_all_covered():
    # Given the vector file, every entry type is one this module tests (a new type must get a test).
    assert {e["type"] for e in ENTRIES} == {"ipek", "transaction_keys", "pin_decrypt"}


@pytest.mark.parametrize("entry", [e for e in ENTRIES if "ipek" in e], ids=ids([e for e in ENTRIES if "ipek" in e]))
def test_ipek(entry):
    assert t.derive_ipek(h(entry["bdk"]), h(entry["ksn"])).hex().upper() == entry["ipek"]


@pytest.mark.parametrize("entry", by_type("transaction_keys"), ids=ids(by_type("transaction_keys")))
def test_transaction_keys(entry):
    bdk, ksn = h(entry["bdk"]), h(entry["ksn"])
    # Given the KSN, its counter is the one published
    assert t.parse_ksn(ksn).counter == entry["counter"]
    # When deriving the current key from the IPEK
    base = t.derive_current_key(h(entry["ipek"]), ksn)
    # Then the base key and every variant match
    assert base.hex().upper() == entry["base_key_no_variant"]
    assert t.apply_variant(base, t.Variant.PIN).hex().upper() == entry["pin_key"]
    assert t.apply_variant(base, t.Variant.MAC_REQUEST).hex().upper() == entry["mac_request_key"]
    assert t.apply_variant(base, t.Variant.MAC_RESPONSE).hex().upper() == entry["mac_response_key"]
    assert t.apply_variant(base, t.Variant.DATA_REQUEST).hex().upper() == entry["data_request_variant_key"]
    assert t.apply_variant(base, t.Variant.DATA_RESPONSE) == xor(base, MASKS["data_response"])
    assert t.one_way_function(h(entry["data_request_variant_key"])).hex().upper() == entry["data_key_owf"]
    # And the BDK-level helpers agree with the step-by-step chain
    assert t.derive_working_key(bdk, ksn, t.Variant.PIN).hex().upper() == entry["pin_key"]
    assert t.derive_working_key(bdk, ksn, t.Variant.NONE) == base
    assert t.data_key(bdk, ksn).hex().upper() == entry["data_key_owf"]
    assert t.data_key(bdk, ksn, response=True) == t.one_way_function(xor(base, MASKS["data_response"]))


@pytest.mark.parametrize("entry", by_type("transaction_keys"), ids=ids(by_type("transaction_keys")))
def test_transaction_pin_mac_and_data(entry):
    pin_key = h(entry["pin_key"])
    # PIN: the ISO-0 block built from PIN and PAN is the published clear block and encrypts to the published one
    clear = iso0_pin_block(entry["pin"], entry["pan"])
    assert clear.hex().upper() == entry["clear_pin_block_iso0"]
    assert t.tdes_cbc_encrypt(pin_key, clear).hex().upper() == entry["encrypted_pin_block"]
    assert t.tdes_cbc_decrypt(pin_key, h(entry["encrypted_pin_block"])) == clear
    # MAC request / response (ISO 9797-1 algorithm 3, 4 leftmost bytes)
    mac_input = entry["mac_input_ascii"].encode()
    assert retail_mac(h(entry["mac_request_key"]), mac_input)[:4].hex().upper() == entry["mac_request"]
    assert retail_mac(h(entry["mac_response_key"]), mac_input)[:4].hex().upper() == entry["mac_response"]
    # Data request: TDES-CBC, zero IV, zero padding, key through the one-way function
    plain = zero_pad(entry["encrypted_request_input_ascii_zero_padded"].encode())
    assert t.tdes_cbc_encrypt(h(entry["data_key_owf"]), plain).hex().upper() == entry["encrypted_request"]
    assert t.tdes_cbc_decrypt(h(entry["data_key_owf"]), h(entry["encrypted_request"])) == plain


@pytest.mark.parametrize("entry", by_type("pin_decrypt"), ids=ids(by_type("pin_decrypt")))
def test_pin_decrypt(entry):
    bdk, ksn = h(entry["bdk"]), h(entry["ksn"])
    if "ipek" in entry:
        assert t.derive_ipek(bdk, ksn).hex().upper() == entry["ipek"]
    pin_key = t.derive_working_key(bdk, ksn, t.Variant.PIN)
    assert pin_key.hex().upper() == entry["pin_key"]
    clear = t.tdes_cbc_decrypt(pin_key, h(entry["encrypted_pin_block"]))
    assert clear.hex().upper() == entry["clear_pin_block"]
    if entry["pin_block_format"] == "ISO-0":
        assert clear == iso0_pin_block(entry["pin"], entry["pan"])
        assert xor(clear, h("0000" + entry["pan"].rstrip("Ff")[-13:-1])).hex().upper() == entry["pin_field"]
    else:  # ISO-1: 1 || PIN length || PIN || fill; 16 bytes here, CBC with zero IV
        text = clear.hex()
        assert text[0] == "1"
        assert text[2 : 2 + int(text[1], 16)] == entry["pin"]


# --- KSN validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("ksn", [b"", bytes(9), bytes(11), "FFFF9876543210E00001"])
def test_ksn_wrong_length(ksn):
    with pytest.raises(t.KsnError, match=r"^KSN must be 10 bytes$") as info:
        t.parse_ksn(ksn)
    assert info.value.code == 2400


def test_ksn_zero_counter():
    with pytest.raises(t.KsnError, match=r"^KSN transaction counter is zero$"):
        t.parse_ksn(h("FFFF9876543210E00000"))
    # The IPEK ignores the counter, so a zero counter is fine there (X9.24-1 A.6)
    assert t.derive_ipek(h("0123456789ABCDEFFEDCBA9876543210"), h("FFFF9876543210E00000"))


def test_ksn_too_many_one_bits():
    # 0x0FFE00 has 11 one-bits: no originating device produces it
    with pytest.raises(t.KsnError, match=r"^KSN transaction counter has more than 10 one-bits$"):
        t.parse_ksn(h("FFFF9876543210EFFE00"))
    with pytest.raises(t.KsnError, match="more than 10 one-bits"):
        t.data_key(h("0123456789ABCDEFFEDCBA9876543210"), h("FFFF9876543210EFFE00"))
    # 10 one-bits is the maximum and is accepted
    assert t.parse_ksn(h("FFFF9876543210EFFC00")).counter == 0x0FFC00


def test_counter_is_rightmost_21_bits():
    # Byte 7 = 0xE0: its top three bits belong to the device id, not to the counter
    parsed = t.parse_ksn(h("FFFF9876543210E00001"))
    assert parsed.counter == 1
    assert parsed.initial == h("FFFF9876543210E00000")


# --- keys and ciphers -------------------------------------------------------------------------------


@pytest.mark.parametrize("bdk", [bytes(8), bytes(24), bytes(15)])
def test_bdk_wrong_length(bdk):
    with pytest.raises(ValueError, match=r"^BDK must be 16 bytes \(two-key TDES\)$"):
        t.derive_ipek(bdk, h("FFFF9876543210E00001"))


@pytest.mark.parametrize("data", [b"", bytes(7), bytes(9)])
def test_decrypt_rejects_partial_blocks(data):
    with pytest.raises(t.DecryptionError, match=r"^ciphertext length must be a positive multiple of 8 bytes$") as info:
        t.tdes_cbc_decrypt(bytes(16), data)
    assert info.value.code == 2601


def test_bad_iv_and_unpadded_encrypt():
    with pytest.raises(t.DecryptionError, match=r"^IV must be 8 bytes$") as info:
        t.tdes_cbc_decrypt(bytes(16), bytes(8), iv=bytes(16))
    assert info.value.code == 2602
    with pytest.raises(ValueError, match=r"^data length must be a multiple of 8 bytes$"):
        t.tdes_cbc_encrypt(bytes(16), bytes(5))


def test_errors_never_echo_key_or_ksn():
    ksn = h("FFFF9876543210EFFE00")
    with pytest.raises(t.KsnError) as info:
        t.parse_ksn(ksn)
    assert ksn.hex() not in str(info.value).lower()


def test_explicit_iv_differs_from_zero_iv():
    key, data = bytes(range(16)), bytes(16)
    assert t.tdes_cbc_encrypt(key, data, iv=b"\x01" * 8) != t.tdes_cbc_encrypt(key, data)


@given(
    key=st.binary(min_size=16, max_size=16), data=st.binary(min_size=8, max_size=64).filter(lambda d: len(d) % 8 == 0)
)
def test_cbc_round_trip(key, data):
    assert t.tdes_cbc_decrypt(key, t.tdes_cbc_encrypt(key, data)) == data


@given(counter=st.integers(min_value=1, max_value=(1 << 21) - 1).filter(lambda c: c.bit_count() <= 10))
def test_valid_counters_derive(counter):
    ksn = (int.from_bytes(h("FFFF9876543210E00000"), "big") | counter).to_bytes(10, "big")
    assert len(t.data_key(h("0123456789ABCDEFFEDCBA9876543210"), ksn)) == 16


def test_doctests():
    assert doctest.testmod(t).failed == 0
