"""Envelope encryption of secrets at rest (pure part): AES-256-GCM under a KMS data key.

The data key is generated and wrapped by KMS (:mod:`vaultcore.store.keys`); this module only seals and opens
with a clear data key that lives in memory for the duration of the call. The additional authenticated data
binds a sealed secret to its owner and purpose, so a wrapped key copied onto another record fails to open
(NIST SP 800-38D, AAD).
"""

from __future__ import annotations

import json
import os

# Imported with the module (Lambda init), not on the first unwrap: every KMS-enveloped secret goes through here.
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["seal", "open_sealed", "aad_for", "EnvelopeError"]


class EnvelopeError(ValueError):
    """A sealed secret failed authentication (wrong key, wrong context, or tampering)."""


def aad_for(context: dict[str, str]) -> bytes:
    return json.dumps(context, sort_keys=True, separators=(",", ":")).encode("utf-8")


def seal(data_key: bytes, plaintext: bytes, aad: bytes) -> tuple[bytes, bytes]:
    nonce = os.urandom(12)
    return nonce, AESGCM(data_key).encrypt(nonce, plaintext, aad)


def open_sealed(data_key: bytes, nonce: bytes, ciphertext: bytes, aad: bytes) -> bytes:
    try:
        return AESGCM(data_key).decrypt(nonce, ciphertext, aad)
    except InvalidTag as exc:
        raise EnvelopeError("sealed secret failed authentication") from exc
