"""KMS envelope encryption of secrets at rest, with a per-container cache of unwrapped secrets.

A wrapped secret is stored as ``{"k": <KMS CiphertextBlob>, "n": <GCM nonce>, "c": <ciphertext>}`` (base64).
The KMS encryption context and the GCM AAD both carry ``context`` (owner and purpose), so CloudTrail shows
whose key was unwrapped and a blob moved to another record does not open.

Unwrapped secrets are cached in memory for ``KEY_CACHE_SECONDS`` (default 300): a warm request costs no KMS
call, and a disabled or rotated key stops working within that bound.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from vaultcore.cache import ContainerCache
from vaultcore.crypto.envelope import EnvelopeError, aad_for, open_sealed, seal
from vaultcore.errors import DependencyError
from vaultcore.settings import settings
from vaultcore.store.aws import client
from vaultcore.store.ddb import aws_errors

__all__ = ["wrap_secret", "unwrap_secret"]

_cache: ContainerCache[bytes] = ContainerCache("key_cache_seconds", max_items=4096)


def wrap_secret(secret: bytes, context: dict[str, str]) -> dict[str, str]:
    with aws_errors("key wrapping"):
        out = client("kms").generate_data_key(KeyId=settings().kms_key_id, KeySpec="AES_256",
                                              EncryptionContext=context)
    data_key = out["Plaintext"]
    nonce, ct = seal(data_key, secret, aad_for(context))
    del data_key
    return {"k": base64.b64encode(out["CiphertextBlob"]).decode(), "n": base64.b64encode(nonce).decode(),
            "c": base64.b64encode(ct).decode()}


def unwrap_secret(envelope: dict[str, Any], context: dict[str, str]) -> bytes:
    cache_key = hashlib.sha256((envelope["c"] + "|" + aad_for(context).decode()).encode()).hexdigest()
    cached = _cache.get(cache_key)
    if cached is not None:
        return cached
    with aws_errors("key unwrapping"):
        out = client("kms").decrypt(CiphertextBlob=base64.b64decode(envelope["k"]), EncryptionContext=context,
                                    KeyId=settings().kms_key_id)
    try:
        secret = open_sealed(out["Plaintext"], base64.b64decode(envelope["n"]), base64.b64decode(envelope["c"]),
                             aad_for(context))
    except EnvelopeError as exc:
        raise DependencyError("Internal error: a stored key failed authentication.") from exc
    _cache.put(cache_key, secret)
    return secret
