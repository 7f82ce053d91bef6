"""The DUKPT facade: schemes, variants, data keys, encrypt/decrypt and its errors."""

from __future__ import annotations

import doctest
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vaultcore.crypto import dukpt, dukpt_aes, dukpt_tdes
from vaultcore.crypto.dukpt import DecryptionError, KeyVariant, KsnError, Scheme

VECTORS = Path(__file__).parent.parent / "vectors"
TDES = json.loads((VECTORS / "dukpt_tdes.json").read_text())["entries"]
AES = json.loads((VECTORS / "dukpt_aes.json").read_text())["entries"]
h = bytes.fromhex

BDK = h("0123456789ABCDEFFEDCBA9876543210")
KSN = h("FFFF9876543210E00001")
AES_BDK = {
    Scheme.AES128: h("FEDCBA9876543210F1F1F1F1F1F1F1F1"),
    Scheme.AES256: h("FEDCBA9876543210F1F1F1F1F1F1F1F1" * 2),
}
AES_KSN = h("123456789012345600000001")


def keys_for(scheme: Scheme) -> tuple[bytes, bytes]:
    return (BDK, KSN) if scheme is Scheme.TDES else (AES_BDK[scheme], AES_KSN)


def test_scheme_properties():
    assert [s.value for s in Scheme] == ["tdes", "aes128", "aes256"]
    assert (dukpt.ksn_length("tdes"), dukpt.block_size(Scheme.TDES), dukpt.bdk_length("tdes")) == (10, 8, 16)
    assert (dukpt.ksn_length("aes128"), dukpt.block_size("aes128"), dukpt.bdk_length("aes128")) == (12, 16, 16)
    assert (dukpt.ksn_length("aes256"), dukpt.block_size("aes256"), dukpt.bdk_length("aes256")) == (12, 16, 32)
    with pytest.raises(ValueError, match=r"^unknown DUKPT scheme$"):
        dukpt.ksn_length("des")


@pytest.mark.parametrize("entry", [e for e in TDES if e["type"] == "transaction_keys"], ids=lambda e: e["id"])
def test_tdes_variants_match_vectors(entry):
    bdk, ksn = h(entry["bdk"]), h(entry["ksn"])
    assert dukpt.data_key("tdes", bdk, ksn).hex().upper() == entry["data_key_owf"]
    assert dukpt.data_key("tdes", bdk, ksn, KeyVariant.PIN).hex().upper() == entry["pin_key"]
    assert dukpt.data_key("tdes", bdk, ksn, "data_response") == dukpt_tdes.data_key(bdk, ksn, response=True)
    plain = entry["encrypted_request_input_ascii_zero_padded"].encode()
    assert dukpt.encrypt("tdes", bdk, ksn, plain).hex().upper() == entry["encrypted_request"]


@pytest.mark.parametrize("entry", [e for e in AES if e["type"] == "transaction_keys"], ids=lambda e: e["id"])
def test_aes_variants_match_vectors(entry):
    bdk, ksn = h(entry["bdk"]), h(entry["ksn"])
    scheme = Scheme.AES128 if entry["bdk_type"] == "AES-128" else Scheme.AES256
    suffix = "aes128" if scheme is Scheme.AES128 else "aes256"  # AES256 scheme: AES-256 working keys
    assert dukpt.data_key(scheme, bdk, ksn).hex().upper() == entry[f"data_encryption_encrypt_key_{suffix}"]
    assert dukpt.data_key(scheme, bdk, ksn, "pin").hex().upper() == entry[f"pin_key_{suffix}"]
    response = dukpt_aes.working_key(bdk, ksn, dukpt_aes.KeyUsage.DATA_DECRYPT)
    assert dukpt.data_key(scheme, bdk, ksn, KeyVariant.DATA_RESPONSE) == response


def test_doc_example_and_idtech_library_vector():
    # Data key e00008 (Dukpt.NET / java-dukpt): the ID TECH data key encrypts the HOGAN track 1
    bdk, ksn = BDK, h("FFFF9876543210E00008")
    cipher = h(
        "411D405D7DEDB9D84797F045559721E8C06A5565FFB3B4050509277E5F80072E2410E0E6ADCBB614419700A9173807BA27C4E9D80BE67A2C32498032B200A7E3"
    )
    plain = dukpt.decrypt("tdes", bdk, ksn, cipher)
    assert plain.rstrip(b"\0") == b"%B5452300551227189^HOGAN/PAUL      ^08043210000000725000000?"
    assert doctest.testmod(dukpt).failed == 0


@pytest.mark.parametrize("scheme", list(Scheme))
@pytest.mark.parametrize("variant", list(KeyVariant))
def test_round_trip_every_scheme_and_variant(scheme, variant):
    bdk, ksn = keys_for(scheme)
    plain = b";4761739001010010=25122011143878089?0"
    cipher = dukpt.encrypt(scheme, bdk, ksn, plain, variant)
    assert len(cipher) % dukpt.block_size(scheme) == 0
    assert dukpt.decrypt(scheme, bdk, ksn, cipher, variant) == dukpt.zero_pad(plain, dukpt.block_size(scheme))
    # Another variant does not decrypt it
    other = next(v for v in KeyVariant if v is not variant)
    assert dukpt.decrypt(scheme, bdk, ksn, cipher, other) != dukpt.zero_pad(plain, dukpt.block_size(scheme))


@given(data=st.binary(min_size=1, max_size=80), iv=st.binary(min_size=16, max_size=16))
def test_round_trip_with_iv(data, iv):
    for scheme in Scheme:
        bdk, ksn = keys_for(scheme)
        size = dukpt.block_size(scheme)
        cipher = dukpt.encrypt(scheme, bdk, ksn, data, iv=iv[:size])
        assert dukpt.decrypt(scheme, bdk, ksn, cipher, iv=iv[:size]) == dukpt.zero_pad(data, size)


@pytest.mark.parametrize(("scheme", "size"), [(Scheme.TDES, 8), (Scheme.AES128, 16), (Scheme.AES256, 16)])
@pytest.mark.parametrize("length", [0, 1, 7, 9, 15, 17])
def test_decrypt_rejects_partial_blocks(scheme, size, length):
    bdk, ksn = keys_for(scheme)
    with pytest.raises(
        DecryptionError, match=rf"^ciphertext length must be a positive multiple of {size} bytes$"
    ) as info:
        dukpt.decrypt(scheme, bdk, ksn, bytes(length))
    assert info.value.code == 2601


def test_decrypt_rejects_bad_iv():
    with pytest.raises(DecryptionError, match=r"^IV must be 8 bytes$") as info:
        dukpt.decrypt("tdes", BDK, KSN, bytes(8), iv=bytes(16))
    assert info.value.code == 2602


@pytest.mark.parametrize(
    ("scheme", "ksn", "message"),
    [
        ("tdes", AES_KSN, r"^KSN must be 10 bytes$"),
        ("aes128", KSN, r"^KSN must be 12 bytes$"),
        ("tdes", h("FFFF9876543210E00000"), r"^KSN transaction counter is zero$"),
        ("aes256", h("123456789012345600000000"), r"^KSN transaction counter is zero$"),
    ],
)
def test_ksn_errors(scheme, ksn, message):
    bdk = keys_for(Scheme(scheme))[0]
    with pytest.raises(KsnError, match=message) as info:
        dukpt.decrypt(scheme, bdk, ksn, bytes(16))
    assert info.value.code == 2400


def test_bdk_length_and_variant_are_checked():
    with pytest.raises(ValueError, match=r"^BDK must be 32 bytes for scheme aes256$"):
        dukpt.data_key("aes256", bytes(16), AES_KSN)
    with pytest.raises(ValueError, match=r"^unknown DUKPT key variant$"):
        dukpt.data_key("tdes", BDK, KSN, "mac")
    with pytest.raises(ValueError, match=r"^plaintext is empty$"):
        dukpt.encrypt("tdes", BDK, KSN, b"")


def test_errors_are_value_errors_with_codes():
    assert issubclass(KsnError, ValueError) and issubclass(DecryptionError, ValueError)
    assert dukpt_aes.KsnError is KsnError is dukpt_tdes.KsnError
