"""Key check values (pure).

- TDES: the leftmost 3 bytes of TDES-ECB(key, 8 zero bytes) (ANSI X9.24-1 A.3 convention).
- AES: the leftmost 3 bytes of AES-CMAC(key, 16 zero bytes) (ANSI X9.24-3-2017 / X9.143 convention, as AWS
  Payment Cryptography reports with its CMAC algorithm; X9.24-1:2017 A.3: AES check values use CMAC only).

Both are checked against published values (payShield 10k, TR-31/X9.143 examples, the ANSI test BDK's 08D7B4)
in tests/unit/test_kcv.py; tests/vectors/bdk_components.json records the sources.
"""

from __future__ import annotations

__all__ = ["kcv_tdes", "kcv_aes"]


def kcv_tdes(key: bytes) -> str:
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
    from cryptography.hazmat.primitives.ciphers import Cipher, modes

    if len(key) not in (16, 24):
        raise ValueError("TDES key must be 16 or 24 bytes")
    full = key + key[:8] if len(key) == 16 else key
    enc = Cipher(TripleDES(full), modes.ECB()).encryptor()  # noqa: S305 - KCV is defined over one ECB block
    return (enc.update(b"\x00" * 8) + enc.finalize())[:3].hex().upper()


def kcv_aes(key: bytes) -> str:
    from cryptography.hazmat.primitives.ciphers import algorithms
    from cryptography.hazmat.primitives.cmac import CMAC

    if len(key) not in (16, 24, 32):
        raise ValueError("AES key must be 16, 24 or 32 bytes")
    c = CMAC(algorithms.AES(key))
    c.update(b"\x00" * 16)
    return c.finalize()[:3].hex().upper()
