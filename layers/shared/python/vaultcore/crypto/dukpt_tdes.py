"""TDES DUKPT host-side key derivation (ANSI X9.24-1:2009, Annex A) and TDES-CBC.

Pure functions, bytes in and bytes out. Keys are two-key TDES (16 bytes, K1||K2); they are expanded to
K1||K2||K1 before use, which is the same cipher and avoids the deprecation of two-key TripleDES.

Derivation chain (the host side of A.2/A.3, what a host security module computes):

* :func:`derive_ipek` -- initial PIN encryption key from the BDK and the KSN with its counter cleared (A.6).
* :func:`derive_current_key` -- the non-reversible key generation process (A.2, "NRKGP") run once per
  one-bit of the 21-bit transaction counter, most significant first: the device's current (base) key.
* :func:`apply_variant` -- XOR with a variant mask (A.6 / 2009 Table A-1): PIN, MAC request, MAC response,
  data request, data response.
* :func:`one_way_function` -- A.4.1: the data variant encrypted with itself, giving the data encryption
  key that card readers (ID TECH and others) use. MagTek readers use the PIN variant without it.

Known-answer example (ANSI X9.24-1:2009 A.4, first transaction)::

    >>> bdk = bytes.fromhex("0123456789ABCDEFFEDCBA9876543210")
    >>> ksn = bytes.fromhex("FFFF9876543210E00001")
    >>> derive_ipek(bdk, ksn).hex().upper()
    '6AC292FAA1315B4D858AB3A3D7D5933A'
    >>> derive_working_key(bdk, ksn, Variant.PIN).hex().upper()
    '042666B49184CF5C68DE9628D0397B36'
    >>> data_key(bdk, ksn).hex().upper()
    '448D3F076D8304036A55A3D7E0055A78'

Errors: :class:`KsnError` (public code 2400) for a KSN of the wrong length, a zero counter or a counter
with more than 10 one-bits (an originating device never produces one, X9.24-1:2009 A.2 "MAX 10 one-bits");
:class:`DecryptionError` (2601/2602) for ciphertext or IV of the wrong length. Both are ``ValueError``
subclasses shared with :mod:`vaultcore.crypto.dukpt_aes` and :mod:`vaultcore.crypto.dukpt`. Messages
never include key material, the KSN or data. A key of the wrong length is a configuration bug, not a
payload problem: it raises a plain ``ValueError``.

Nothing here caches keys: every call derives from its arguments (Python cannot wipe ``bytes``, so the best
we can do is not to keep references).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes

__all__ = [
    "BLOCK_SIZE",
    "KSN_LENGTH",
    "KEY_LENGTH",
    "COUNTER_BITS",
    "MAX_COUNTER_ONE_BITS",
    "KsnError",
    "DecryptionError",
    "TdesKsn",
    "Variant",
    "parse_ksn",
    "derive_ipek",
    "derive_current_key",
    "apply_variant",
    "one_way_function",
    "derive_working_key",
    "data_key",
    "tdes_cbc_encrypt",
    "tdes_cbc_decrypt",
]

BLOCK_SIZE = 8
KSN_LENGTH = 10
KEY_LENGTH = 16
COUNTER_BITS = 21
MAX_COUNTER_ONE_BITS = 10

_COUNTER_MASK = (1 << COUNTER_BITS) - 1
# A.6: the IPEK's right half is computed under BDK XOR this mask; NRKGP uses the same mask (A.2).
_KEY_MASK = bytes.fromhex("C0C0C0C000000000C0C0C0C000000000")
_ZERO_IV = bytes(BLOCK_SIZE)
_ECB = modes.ECB()  # noqa: S305 - DUKPT derivation is defined on single ECB blocks; stateless, no key inside


class KsnError(ValueError):
    """The key serial number is unusable (public code 2400). The message never contains the KSN."""

    code = 2400


class DecryptionError(ValueError):
    """Ciphertext or IV cannot be decrypted as given (public codes 2600-2606).

    2601: ciphertext empty or not a multiple of the cipher block size; 2602: IV of the wrong length.
    """

    code = 2600

    def __init__(self, message: str, *, code: int = 2600) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class TdesKsn:
    """A parsed 10-byte KSN: the initial KSN (counter bits cleared) and the 21-bit transaction counter."""

    initial: bytes
    counter: int


class Variant(Enum):
    """X9.24-1:2009 Table A-1 variant masks (XORed into both halves of the current key)."""

    NONE = bytes(16)
    PIN = bytes.fromhex("00000000000000FF00000000000000FF")
    MAC_REQUEST = bytes.fromhex("000000000000FF00000000000000FF00")
    MAC_RESPONSE = bytes.fromhex("00000000FF00000000000000FF000000")
    DATA_REQUEST = bytes.fromhex("0000000000FF00000000000000FF0000")
    DATA_RESPONSE = bytes.fromhex("000000FF00000000000000FF00000000")


def _xor(a: bytes, b: bytes) -> bytes:
    return (int.from_bytes(a, "big") ^ int.from_bytes(b, "big")).to_bytes(len(a), "big")


def _check_key(key: bytes, what: str) -> None:
    if not isinstance(key, bytes | bytearray) or len(key) != KEY_LENGTH:
        raise ValueError(f"{what} must be {KEY_LENGTH} bytes (two-key TDES)")


def _tdes(key16: bytes) -> TripleDES:
    # K1||K2||K1 is two-key TDES; spelling it out keeps `cryptography` from warning about 16-byte keys.
    return TripleDES(bytes(key16) + bytes(key16[:8]))


def _tdes_ecb_encrypt(key16: bytes, data: bytes) -> bytes:
    # ECB on whole blocks has nothing to flush, so finalize() is skipped: derivation runs up to 23 of
    # these per call and the context set-up dominates its cost.
    return Cipher(_tdes(key16), _ECB).encryptor().update(data)


def _des_encrypt(key8: bytes, block: bytes) -> bytes:
    # Single DES = TDES with K1=K2=K3; the NRKGP (A.2) is defined on single-length DES.
    return Cipher(TripleDES(key8 * 3), _ECB).encryptor().update(block)


def _counter(ksn: bytes) -> int:
    return int.from_bytes(ksn[-3:], "big") & _COUNTER_MASK


def parse_ksn(ksn: bytes) -> TdesKsn:
    """Validate a transaction KSN (X9.24-1:2009 A.2) and split it into initial KSN and counter.

    Rejects a KSN that is not 10 bytes, a zero counter (the counter of an IPEK, never of a transaction)
    and a counter with more than 10 one-bits (never produced by an originating device).

    >>> parse_ksn(bytes.fromhex("FFFF9876543210E00008")).counter
    8
    """
    if not isinstance(ksn, bytes | bytearray) or len(ksn) != KSN_LENGTH:
        raise KsnError(f"KSN must be {KSN_LENGTH} bytes")
    counter = _counter(ksn)
    if counter == 0:
        raise KsnError("KSN transaction counter is zero")
    if counter.bit_count() > MAX_COUNTER_ONE_BITS:
        raise KsnError(f"KSN transaction counter has more than {MAX_COUNTER_ONE_BITS} one-bits")
    initial = (int.from_bytes(ksn, "big") & ~_COUNTER_MASK).to_bytes(KSN_LENGTH, "big")
    return TdesKsn(initial=initial, counter=counter)


def derive_ipek(bdk: bytes, ksn: bytes) -> bytes:
    """Initial PIN encryption key (X9.24-1:2009 A.6 "Derive initial key").

    Left half: TDES-encrypt the leftmost 8 bytes of the KSN with the counter cleared under the BDK;
    right half: the same under BDK XOR C0C0C0C000000000C0C0C0C000000000. The counter is ignored, so
    a KSN whose counter is zero is accepted here (only its length is checked).
    """
    _check_key(bdk, "BDK")
    if not isinstance(ksn, bytes | bytearray) or len(ksn) != KSN_LENGTH:
        raise KsnError(f"KSN must be {KSN_LENGTH} bytes")
    # Clearing the 21 counter bits of the 80-bit KSN clears bits of bytes 7-9; the IPEK uses bytes 0-7.
    block = ((int.from_bytes(ksn, "big") & ~_COUNTER_MASK) >> 16).to_bytes(8, "big")
    return _tdes_ecb_encrypt(bdk, block) + _tdes_ecb_encrypt(_xor(bdk, _KEY_MASK), block)


def _nrkgp(key: bytes, register: bytes) -> bytes:
    """Non-reversible key generation process (X9.24-1:2009 A.2, "Non-reversible Key Generation Process")."""
    right = key[8:]
    new_right = _xor(_des_encrypt(key[:8], _xor(register, right)), right)
    masked = _xor(key, _KEY_MASK)
    m_right = masked[8:]
    new_left = _xor(_des_encrypt(masked[:8], _xor(register, m_right)), m_right)
    return new_left + new_right


def derive_current_key(ipek: bytes, ksn: bytes) -> bytes:
    """The device's current (base) key for this KSN, no variant (X9.24-1:2009 A.2 / A.3).

    Starting from the IPEK and the rightmost 8 KSN bytes with the counter cleared, each one-bit of the
    counter (most significant first) is set in the register and the key is replaced by NRKGP(key, register).
    At most 10 iterations, because :func:`parse_ksn` rejects counters with more one-bits.
    """
    _check_key(ipek, "IPEK")
    counter = parse_ksn(ksn).counter
    register = int.from_bytes(ksn[2:], "big") & ~_COUNTER_MASK
    key = bytes(ipek)
    bit = 1 << (COUNTER_BITS - 1)
    while bit:
        if counter & bit:
            register |= bit
            key = _nrkgp(key, register.to_bytes(8, "big"))
        bit >>= 1
    return key


def apply_variant(key: bytes, variant: Variant) -> bytes:
    """XOR a variant mask into a current key (X9.24-1:2009 Table A-1)."""
    _check_key(key, "key")
    return _xor(key, variant.value)


def one_way_function(variant_key: bytes) -> bytes:
    """X9.24-1:2009 A.4.1 (figure A-2): encrypt each half of the data variant with the variant itself.

    Data key = TDES-ECB_V(V[0:8]) || TDES-ECB_V(V[8:16]), V the two-key data variant. One ECB call over
    both blocks gives exactly that.
    """
    _check_key(variant_key, "variant key")
    return _tdes_ecb_encrypt(variant_key, variant_key)


def derive_working_key(bdk: bytes, ksn: bytes, variant: Variant, *, one_way: bool = False) -> bytes:
    """BDK + KSN -> IPEK -> current key -> variant (-> A.4.1 one-way function when ``one_way``)."""
    parse_ksn(ksn)  # refuse a bad KSN before spending any cipher operation on it
    key = apply_variant(derive_current_key(derive_ipek(bdk, ksn), ksn), variant)
    return one_way_function(key) if one_way else key


def data_key(bdk: bytes, ksn: bytes, *, response: bool = False) -> bytes:
    """Data encryption key: data request (or response) variant through the A.4.1 one-way function.

    This is the key card readers of the ID TECH family call the "data key" (see tests/vectors/idtech.json).
    """
    variant = Variant.DATA_RESPONSE if response else Variant.DATA_REQUEST
    return derive_working_key(bdk, ksn, variant, one_way=True)


def _check_iv(iv: bytes | None) -> bytes:
    if iv is None:
        return _ZERO_IV
    if not isinstance(iv, bytes | bytearray) or len(iv) != BLOCK_SIZE:
        raise DecryptionError(f"IV must be {BLOCK_SIZE} bytes", code=2602)
    return bytes(iv)


def tdes_cbc_encrypt(key: bytes, data: bytes, iv: bytes | None = None) -> bytes:
    """Two-key TDES-CBC encryption, IV zero unless given. ``data`` must already be padded."""
    _check_key(key, "key")
    iv = _check_iv(iv)
    if len(data) % BLOCK_SIZE:
        raise ValueError(f"data length must be a multiple of {BLOCK_SIZE} bytes")
    enc = Cipher(_tdes(key), modes.CBC(iv)).encryptor()
    return enc.update(data) + enc.finalize()


def tdes_cbc_decrypt(key: bytes, data: bytes, iv: bytes | None = None) -> bytes:
    """Two-key TDES-CBC decryption, IV zero unless given. No padding is removed (callers know the layout)."""
    _check_key(key, "key")
    iv = _check_iv(iv)
    if not data or len(data) % BLOCK_SIZE:
        raise DecryptionError(f"ciphertext length must be a positive multiple of {BLOCK_SIZE} bytes", code=2601)
    dec = Cipher(_tdes(key), modes.CBC(iv)).decryptor()
    return dec.update(data) + dec.finalize()
