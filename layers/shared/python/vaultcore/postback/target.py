"""Where one account's postbacks go and how they are signed: the record the gateway's accounts hand the sender.

Below both :mod:`vaultcore.gateway.accounts` (which builds it from the account's profile) and
:mod:`vaultcore.postback.sender` (which caches and uses it), so that neither has to import the other to name it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PostbackTarget"]


@dataclass(frozen=True)
class PostbackTarget:
    url: str
    api_accesskey: str
    secret: bytes

    def __repr__(self) -> str:  # never print the key or the secret
        return "PostbackTarget(<redacted>)"
