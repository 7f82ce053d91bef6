"""A request-signing client written from `interface.md` ("Authentication", rule 4) alone.

It imports nothing from the platform (no ``vaultcore``, no ``local``): it is what an integrator writes from
the spec, so the tests that use it prove the platform accepts the spec's scheme, not its own helper's.

    response = lowercase hex HMAC-SHA-256(shared key, string to hash)
    string to hash = "POST" SP path LF nonce LF timestamp LF LF lowercase-hex SHA-256(body exactly as sent)

"keyed with the shared key": the key is the ``hmacKey`` text exactly as the operator issued it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit


def string_to_hash(path: str, nonce: str, timestamp: int, body: bytes) -> str:
    return "POST " + path + "\n" + nonce + "\n" + str(timestamp) + "\n" + "\n" + hashlib.sha256(body).hexdigest()


def authorization(partner_id: str, shared_key: str | bytes, path: str, body: bytes, *, nonce: str | None = None,
                  timestamp: int | None = None) -> str:
    key = shared_key.encode("utf-8") if isinstance(shared_key, str) else shared_key
    nonce = nonce or secrets.token_hex(12)
    timestamp = int(time.time()) if timestamp is None else timestamp
    response = hmac.new(key, string_to_hash(path, nonce, timestamp, body).encode("utf-8"), hashlib.sha256).hexdigest()
    return f'Hmac username="{partner_id}", nonce="{nonce}", timestamp="{timestamp}", response="{response}"'


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, method="POST",
                                 headers={"Content-Type": "application/json", "Accept": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def signed_post(url: str, partner_id: str, shared_key: str, payload: dict | bytes,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], dict]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode("utf-8")
    auth = authorization(partner_id, shared_key, urlsplit(url).path, body)
    status, hdrs, data = post(url, body, {"Authorization": auth, **(headers or {})})
    return status, hdrs, json.loads(data) if data else {}
