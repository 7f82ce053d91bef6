"""AES DUKPT host-side key derivation (ANSI X9.24-3-2017) and AES-CBC.

Pure functions, bytes in and bytes out.

* KSN: 12 bytes = Initial Key ID (8 bytes: BDK ID 4 || derivation ID 4) || 32-bit transaction counter
  (X9.24-3-2017 6.1). An originating device never uses a counter with more than 16 one-bits (6.1,
  ``MAX_WORK = 16``): :func:`parse_ksn` rejects such KSNs and a zero counter.
* Key derivation function (6.3.2 / 6.3.3): NIST SP 800-108 counter mode with AES-ECB as the PRF; each
  16-byte block of derivation data is ``01 || block counter || key usage (2) || algorithm (2) ||
  length in bits (2) || 8 bytes of data``.
* Initial key (6.3.4, usage 8001): data = IKID. Intermediate derivation keys (6.3.5, usage 8000): one step per
  one-bit of the counter, most significant first, data = derivation ID || counter bits set so far; the
  derivation key has the BDK's type. Working keys (6.3.6): data = derivation ID || full counter, usage as
  in :class:`KeyUsage`, type as in :class:`KeyType` (never stronger than the BDK).

Known-answer example (X9.24-3-2017 supplement test vectors, AES-128 BDK, counter 1)::

    >>> bdk = bytes.fromhex("FEDCBA9876543210F1F1F1F1F1F1F1F1")
    >>> ksn = bytes.fromhex("123456789012345600000001")
    >>> working_key(bdk, ksn, KeyUsage.DATA_ENCRYPT).hex().upper()
    'A35C412EFD41FDB98B69797C02DCD08F'

Errors: :class:`~vaultcore.crypto.dukpt_tdes.KsnError` (2400) and
:class:`~vaultcore.crypto.dukpt_tdes.DecryptionError` (2601/2602), the same classes as the TDES module so
one ``except`` serves both schemes. A key of the wrong length or a working key stronger than the BDK is a
configuration bug: plain ``ValueError``. Messages never include keys, KSNs or data.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from vaultcore.crypto.dukpt_tdes import DecryptionError, KsnError

__all__ = [
    "BLOCK_SIZE",
    "KSN_LENGTH",
    "IKID_LENGTH",
    "MAX_COUNTER_ONE_BITS",
    "KsnError",
    "DecryptionError",
    "AesKsn",
    "KeyType",
    "KeyUsage",
    "parse_ksn",
    "key_type_for",
    "derive_initial_key",
    "derive_derivation_key",
    "derive_working_key",
    "working_key",
    "aes_cbc_encrypt",
    "aes_cbc_decrypt",
]

BLOCK_SIZE = 16
KSN_LENGTH = 12
IKID_LENGTH = 8
MAX_COUNTER_ONE_BITS = 16
_ZERO_IV = bytes(BLOCK_SIZE)
_ECB = modes.ECB()  # noqa: S305 - the X9.24-3 KDF is AES-ECB on single derivation-data blocks


class KeyType(Enum):
    """X9.24-3-2017 Table 3 "Key Type": (algorithm indicator, length in bits)."""

    TDES2 = (0x0000, 128)
    TDES3 = (0x0001, 192)
    AES128 = (0x0002, 128)
    AES192 = (0x0003, 192)
    AES256 = (0x0004, 256)

    @property
    def algorithm(self) -> int:
        return self.value[0]

    @property
    def bits(self) -> int:
        return self.value[1]

    @property
    def length(self) -> int:
        return self.value[1] // 8


class KeyUsage(Enum):
    """X9.24-3-2017 Table 2 "Key Usage Indicator"."""

    KEY_ENCRYPTION = 0x0002
    PIN_ENCRYPTION = 0x1000
    MAC_GENERATION = 0x2000
    MAC_VERIFICATION = 0x2001
    MAC_BOTH = 0x2002
    DATA_ENCRYPT = 0x3000
    DATA_DECRYPT = 0x3001
    DATA_BOTH = 0x3002
    KEY_DERIVATION = 0x8000
    KEY_DERIVATION_INITIAL = 0x8001


_AES_TYPES = {16: KeyType.AES128, 24: KeyType.AES192, 32: KeyType.AES256}


@dataclass(frozen=True, slots=True)
class AesKsn:
    """A parsed 12-byte KSN: Initial Key ID (8 bytes) and 32-bit transaction counter."""

    ikid: bytes
    counter: int

    @property
    def derivation_id(self) -> bytes:
        """The rightmost 4 bytes of the IKID, used in every derivation-data block after the initial key."""
        return self.ikid[4:]


def key_type_for(key: bytes) -> KeyType:
    """The AES key type of a BDK or derivation key, from its length (16, 24 or 32 bytes)."""
    if not isinstance(key, bytes | bytearray) or len(key) not in _AES_TYPES:
        raise ValueError("AES DUKPT key must be 16, 24 or 32 bytes")
    return _AES_TYPES[len(key)]


def _split_ksn(ksn: bytes) -> AesKsn:
    if not isinstance(ksn, bytes | bytearray) or len(ksn) != KSN_LENGTH:
        raise KsnError(f"KSN must be {KSN_LENGTH} bytes")
    return AesKsn(ikid=bytes(ksn[:IKID_LENGTH]), counter=int.from_bytes(ksn[IKID_LENGTH:], "big"))


def parse_ksn(ksn: bytes) -> AesKsn:
    """Validate a transaction KSN (X9.24-3-2017 6.1) and split it.

    >>> parse_ksn(bytes.fromhex("123456789012345600000008")).counter
    8
    """
    parsed = _split_ksn(ksn)
    if parsed.counter == 0:
        raise KsnError("KSN transaction counter is zero")
    if parsed.counter.bit_count() > MAX_COUNTER_ONE_BITS:
        raise KsnError(f"KSN transaction counter has more than {MAX_COUNTER_ONE_BITS} one-bits")
    return parsed


def _derive(key: bytes, usage: KeyUsage, key_type: KeyType, data: bytes) -> bytes:
    """X9.24-3-2017 6.3.2 key derivation function: AES-ECB of one derivation-data block per 128 bits."""
    header = usage.value.to_bytes(2, "big") + key_type.algorithm.to_bytes(2, "big") + key_type.bits.to_bytes(2, "big")
    blocks = b"".join(b"\x01" + i.to_bytes(1, "big") + header + data for i in range(1, -(-key_type.length // 16) + 1))
    # One ECB call over all blocks: the blocks are independent, and one context costs less than two.
    return Cipher(algorithms.AES(bytes(key)), _ECB).encryptor().update(blocks)[: key_type.length]


def derive_initial_key(bdk: bytes, ikid_or_ksn: bytes) -> bytes:
    """Initial DUKPT key from the BDK and the Initial Key ID (X9.24-3-2017 6.3.4, usage 8001).

    Accepts the 8-byte IKID or a whole 12-byte KSN (its counter is ignored). The initial key has the
    BDK's type.
    """
    bdk_type = key_type_for(bdk)
    if isinstance(ikid_or_ksn, bytes | bytearray) and len(ikid_or_ksn) == IKID_LENGTH:
        ikid = bytes(ikid_or_ksn)
    else:
        ikid = _split_ksn(ikid_or_ksn).ikid
    return _derive(bdk, KeyUsage.KEY_DERIVATION_INITIAL, bdk_type, ikid)


def derive_derivation_key(initial_key: bytes, ksn: bytes, *, enforce_max_one_bits: bool = True) -> bytes:
    """The intermediate derivation key for this KSN's counter (X9.24-3-2017 6.3.5, usage 8000).

    ``enforce_max_one_bits=False`` lets a host reproduce keys for counters a device would never use
    (more than 16 one-bits); only the published test vectors need it. A zero counter is always refused.
    """
    key_type = key_type_for(initial_key)
    parsed = parse_ksn(ksn) if enforce_max_one_bits else _split_ksn(ksn)
    if parsed.counter == 0:
        raise KsnError("KSN transaction counter is zero")
    key = bytes(initial_key)
    so_far = 0
    bit = 1 << 31
    while bit:
        if parsed.counter & bit:
            so_far |= bit
            key = _derive(key, KeyUsage.KEY_DERIVATION, key_type, parsed.derivation_id + so_far.to_bytes(4, "big"))
        bit >>= 1
    return key


def derive_working_key(derivation_key: bytes, ksn: bytes, usage: KeyUsage, key_type: KeyType | None = None) -> bytes:
    """A working key from an intermediate derivation key (X9.24-3-2017 6.3.6).

    ``key_type`` defaults to the derivation key's own type. A working key cannot be stronger than the
    key it is derived from (6.3.6): asking for one raises ``ValueError``.
    """
    base_type = key_type_for(derivation_key)
    key_type = key_type or base_type
    if key_type.bits > base_type.bits:
        raise ValueError("working key cannot be stronger than the BDK")
    parsed = _split_ksn(ksn)
    return _derive(derivation_key, usage, key_type, parsed.derivation_id + parsed.counter.to_bytes(4, "big"))


def working_key(bdk: bytes, ksn: bytes, usage: KeyUsage, key_type: KeyType | None = None) -> bytes:
    """BDK + KSN -> initial key -> derivation key -> working key for ``usage`` (default type: the BDK's)."""
    parsed = parse_ksn(ksn)
    initial = derive_initial_key(bdk, parsed.ikid)
    return derive_working_key(derive_derivation_key(initial, ksn), ksn, usage, key_type)


def _check_iv(iv: bytes | None) -> bytes:
    if iv is None:
        return _ZERO_IV
    if not isinstance(iv, bytes | bytearray) or len(iv) != BLOCK_SIZE:
        raise DecryptionError(f"IV must be {BLOCK_SIZE} bytes", code=2602)
    return bytes(iv)


def _check_aes_key(key: bytes) -> None:
    key_type_for(key)


def aes_cbc_encrypt(key: bytes, data: bytes, iv: bytes | None = None) -> bytes:
    """AES-CBC encryption, IV zero unless given. ``data`` must already be padded to 16 bytes."""
    _check_aes_key(key)
    iv = _check_iv(iv)
    if len(data) % BLOCK_SIZE:
        raise ValueError(f"data length must be a multiple of {BLOCK_SIZE} bytes")
    enc = Cipher(algorithms.AES(bytes(key)), modes.CBC(iv)).encryptor()
    return enc.update(data) + enc.finalize()


def aes_cbc_decrypt(key: bytes, data: bytes, iv: bytes | None = None) -> bytes:
    """AES-CBC decryption, IV zero unless given. No padding is removed."""
    _check_aes_key(key)
    iv = _check_iv(iv)
    if not data or len(data) % BLOCK_SIZE:
        raise DecryptionError(f"ciphertext length must be a positive multiple of {BLOCK_SIZE} bytes", code=2601)
    dec = Cipher(algorithms.AES(bytes(key)), modes.CBC(iv)).decryptor()
    return dec.update(data) + dec.finalize()
