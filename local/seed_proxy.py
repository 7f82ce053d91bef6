"""Demo proxy configurations for the demo HMAC partner, pointing at the runner's echo page (local.pages).

- ``proxyTokenizeConfig``: the card number at ``$.card.number`` becomes a token (template DEMO); the bfid comes
  back in the ``vault-id`` response header.
- ``proxyConfig``: the token at ``$.card.number`` becomes the clear card number again (send the ``vault-id``
  header) and is forwarded to the echo page, signed with the partner's HMAC key; the stored log masks it.
"""

from __future__ import annotations

import base64
from typing import Any

from local.admin_client import admin

CARD_PATH = {"transformationSource": "body", "transformationType": "jsonpath", "transformationPath": "$.card.number"}


def _config(partner: dict[str, Any], base_url: str, method: str) -> dict[str, Any]:
    secret = base64.b64decode(partner["hmacKey"]).decode("ascii")
    return {
        "proxy": {
            "authorization": {"type": "hmac", "username": partner["partnerId"], "secret": secret},
            "method": "post",
            "target": f"{base_url}/_local/echo",
            "logSettings": {
                "requestMasks": [{**CARD_PATH, "pattern": "allButFirstSixLastFour"}],
                "responseMasks": [{"transformationSource": "body", "transformationType": "regex",
                                   "transformationPath": r"\d{13,19}", "pattern": "allButFirstSixLastFour"}],
            },
        },
        "actions": [{
            "type": "tokenization", "method": method, "templateRef": "DEMO", "model": "sync",
            "authorization": {"type": "passthrough"},
            "substitutions": [{**CARD_PATH, "fieldName": "vault_token_card_number"}],
        }],
    }


def seed_proxy(base_url: str, demo: dict[str, Any]) -> dict[str, Any]:
    partner = demo["partner"]
    out: dict[str, Any] = {}
    for key, method in (("proxyTokenizeConfig", "tokenize"), ("proxyConfig", "detokenize")):
        created = admin(base_url, "POST", f"/admin/v1/partners/{partner['partnerId']}/proxy-configurations",
                        _config(partner, base_url, method))
        ref = created["configReferenceID"]
        out[key] = {"configReferenceID": ref, "method": method,
                    "url": f"{base_url}/api/v1/partners/{partner['partnerId']}/configurations/{ref}"}
    return out
