"""One entry point for DUKPT data decryption across schemes, used by the device adapters and the simulator.

Schemes (what a BDK record's ``scheme`` names):

* ``tdes``: ANSI X9.24-1:2009 TDES DUKPT, two-key BDK, 10-byte KSN, TDES-CBC (8-byte blocks).
* ``aes128``: ANSI X9.24-3-2017 AES DUKPT, AES-128 BDK, 12-byte KSN, AES-128 working keys, AES-CBC.
* ``aes256``: AES-256 BDK, 12-byte KSN. Choice: the working keys are AES-256 too. X9.24-3 allows any
  type up to the BDK's; AES-256 keeps the BDK's strength and costs one more AES block per derivation
  step, which is negligible. Readers configured for AES-128 working keys under an AES-256 BDK need
  :func:`vaultcore.crypto.dukpt_aes.working_key` with ``KeyType.AES128`` directly.

Key variants (:class:`KeyVariant`):

* ``data`` (default): TDES -- data request variant through the X9.24-1:2009 A.4.1 one-way function,
  the "data key" of ID TECH-family readers; AES -- key usage "data encryption, encrypt" (3000), the key
  the device encrypts with (X9.24-3-2017 6.3.6).
* ``data_response``: TDES -- data response variant through the one-way function; AES -- usage
  "data encryption, decrypt" (3001), the key for data the host sends back.
* ``pin``: TDES -- PIN variant without the one-way function (what MagTek readers use for card data by
  default); AES -- usage "PIN encryption" (1000).

CBC with a zero IV unless one is given. :func:`decrypt` returns every decrypted byte, padding included:
how to strip it (track LRC, zero padding, TLV) is the payload layout's business.

>>> bdk = bytes.fromhex("0123456789ABCDEFFEDCBA9876543210")
>>> ksn = bytes.fromhex("FFFF9876543210E00001")
>>> decrypt("tdes", bdk, ksn, bytes.fromhex("D0911CD510047AC6AEE9CE8AFEDA9301")).hex().upper()
'1234567890ABCDEFFEDCBA0987654321'

Errors: :class:`KsnError` (code 2400) for a KSN the scheme cannot use; :class:`DecryptionError` (2601
ciphertext empty or not a whole number of blocks, 2602 IV of the wrong length). Both are ``ValueError``.
A BDK of the wrong length or an unknown scheme is a configuration bug: plain ``ValueError``.
"""

from __future__ import annotations

from enum import StrEnum

from vaultcore.crypto import dukpt_aes, dukpt_tdes
from vaultcore.crypto.dukpt_tdes import DecryptionError, KsnError

__all__ = [
    "Scheme",
    "KeyVariant",
    "KsnError",
    "DecryptionError",
    "ksn_length",
    "block_size",
    "bdk_length",
    "data_key",
    "decrypt",
    "encrypt",
    "zero_pad",
]


class Scheme(StrEnum):
    """A DUKPT scheme: the BDK's algorithm and, with it, KSN length, cipher and block size."""

    TDES = "tdes"
    AES128 = "aes128"
    AES256 = "aes256"


class KeyVariant(StrEnum):
    """Which working key of the transaction encrypts the data (see the module docstring)."""

    DATA = "data"
    DATA_RESPONSE = "data_response"
    PIN = "pin"


_KSN_LENGTH = {
    Scheme.TDES: dukpt_tdes.KSN_LENGTH,
    Scheme.AES128: dukpt_aes.KSN_LENGTH,
    Scheme.AES256: dukpt_aes.KSN_LENGTH,
}
_BLOCK_SIZE = {
    Scheme.TDES: dukpt_tdes.BLOCK_SIZE,
    Scheme.AES128: dukpt_aes.BLOCK_SIZE,
    Scheme.AES256: dukpt_aes.BLOCK_SIZE,
}
_BDK_LENGTH = {Scheme.TDES: 16, Scheme.AES128: 16, Scheme.AES256: 32}
_AES_USAGE = {
    KeyVariant.DATA: dukpt_aes.KeyUsage.DATA_ENCRYPT,
    KeyVariant.DATA_RESPONSE: dukpt_aes.KeyUsage.DATA_DECRYPT,
    KeyVariant.PIN: dukpt_aes.KeyUsage.PIN_ENCRYPTION,
}
_AES_TYPE = {Scheme.AES128: dukpt_aes.KeyType.AES128, Scheme.AES256: dukpt_aes.KeyType.AES256}


def _scheme(scheme: Scheme | str) -> Scheme:
    try:
        return Scheme(scheme)
    except ValueError:
        raise ValueError("unknown DUKPT scheme") from None


def _variant(variant: KeyVariant | str) -> KeyVariant:
    try:
        return KeyVariant(variant)
    except ValueError:
        raise ValueError("unknown DUKPT key variant") from None


def ksn_length(scheme: Scheme | str) -> int:
    """KSN length in bytes: 10 for TDES (X9.24-1), 12 for AES (X9.24-3)."""
    return _KSN_LENGTH[_scheme(scheme)]


def block_size(scheme: Scheme | str) -> int:
    """Cipher block size in bytes: 8 for TDES, 16 for AES."""
    return _BLOCK_SIZE[_scheme(scheme)]


def bdk_length(scheme: Scheme | str) -> int:
    """BDK length in bytes: 16 (two-key TDES or AES-128) or 32 (AES-256)."""
    return _BDK_LENGTH[_scheme(scheme)]


def data_key(scheme: Scheme | str, bdk: bytes, ksn: bytes, variant: KeyVariant | str = KeyVariant.DATA) -> bytes:
    """The working key that encrypts device data for this transaction (see the module docstring)."""
    scheme, variant = _scheme(scheme), _variant(variant)
    if not isinstance(bdk, bytes | bytearray) or len(bdk) != _BDK_LENGTH[scheme]:
        raise ValueError(f"BDK must be {_BDK_LENGTH[scheme]} bytes for scheme {scheme.value}")
    if scheme is Scheme.TDES:
        if variant is KeyVariant.PIN:
            return dukpt_tdes.derive_working_key(bdk, ksn, dukpt_tdes.Variant.PIN)
        return dukpt_tdes.data_key(bdk, ksn, response=variant is KeyVariant.DATA_RESPONSE)
    return dukpt_aes.working_key(bdk, ksn, _AES_USAGE[variant], _AES_TYPE[scheme])


def zero_pad(data: bytes, size: int) -> bytes:
    """Right-pad with 0x00 to a multiple of ``size`` (the card readers' padding; nothing added if aligned)."""
    return bytes(data) + bytes(-len(data) % size)


def decrypt(
    scheme: Scheme | str,
    bdk: bytes,
    ksn: bytes,
    ciphertext: bytes,
    variant: KeyVariant | str = KeyVariant.DATA,
    iv: bytes | None = None,
) -> bytes:
    """CBC-decrypt device data under this transaction's key; returns all blocks, padding included."""
    scheme = _scheme(scheme)
    size = _BLOCK_SIZE[scheme]
    # Checked before any derivation: a malformed payload must not cost a key derivation.
    if not isinstance(ciphertext, bytes | bytearray) or not ciphertext or len(ciphertext) % size:
        raise DecryptionError(f"ciphertext length must be a positive multiple of {size} bytes", code=2601)
    if iv is not None and (not isinstance(iv, bytes | bytearray) or len(iv) != size):
        raise DecryptionError(f"IV must be {size} bytes", code=2602)
    key = data_key(scheme, bdk, ksn, variant)
    if scheme is Scheme.TDES:
        return dukpt_tdes.tdes_cbc_decrypt(key, ciphertext, iv)
    return dukpt_aes.aes_cbc_decrypt(key, ciphertext, iv)


def encrypt(
    scheme: Scheme | str,
    bdk: bytes,
    ksn: bytes,
    plaintext: bytes,
    variant: KeyVariant | str = KeyVariant.DATA,
    iv: bytes | None = None,
) -> bytes:
    """What a device does: zero-pad to the block size and CBC-encrypt (used by the simulator and tests)."""
    scheme = _scheme(scheme)
    if not plaintext:
        raise ValueError("plaintext is empty")
    padded = zero_pad(plaintext, _BLOCK_SIZE[scheme])
    key = data_key(scheme, bdk, ksn, variant)
    if scheme is Scheme.TDES:
        return dukpt_tdes.tdes_cbc_encrypt(key, padded, iv)
    return dukpt_aes.aes_cbc_encrypt(key, padded, iv)
