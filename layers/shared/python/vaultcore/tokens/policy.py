"""A tokenization's use policy (issue 27): who may use its tokens, how often, and which fields come back in clear.

The policy is written with the tokens, on the stored tokenization record, and checked in one place, the tokens
service (:mod:`vaultcore.tokens.service`), which every path that reads or detokenizes goes through: the gateway
(``etoken=``, the ``bfid=`` read step, detokenize-only and reissue payments, ``token_id`` of a STORE), the
tokenization API (``read``, ``detokenize`` and their batch forms) and the proxy's detokenize action. The entry
points carry no copy of these rules; they only say who is asking (an :class:`Actor`).

The policy of a tokenization (:class:`Owner`):

* **owner**: always its partner (the bfid names it and is MAC'd with the partner's key). An iFrame capture is also
  bound to the merchant account, the instance's ``custom_id`` and its tender (CARD or ACH); a gateway capture
  (auto-tokenization, rule 7) to its account. The Tokens item carries ``owner_account``, ``owner_custom_id`` and
  ``owner_method``. Because tokens are vaultless and outlive the one-hour item, the account binding is also kept
  for good: an iFrame capture's on the scope's durable record (:mod:`vaultcore.store.tokens`), a gateway
  capture's sealed in its bfid (version 5, an owner tag in the MAC'd core: :mod:`vaultcore.tokens.bfid`), which
  costs the SALE no write (:func:`check_sealed`).
* **uses**: ``once`` for an eToken of the iFrame: its one read, by ``etoken=`` or by the ``bfid=`` read step,
  consumes it for every path (``gateway_read_by``); every eToken read with ``etoken=`` is consumed likewise. The
  partner's ``read`` is once per bfid (``partner_read_by``).
* **clear fields** (:func:`check_clear`):

  - a CVV (:data:`CVV_FIELDS`) is sensitive authentication data: its clear value goes only to the processor, in
    the first authorization of the iFrame capture that took it (the consuming read step). No path returns its
    token or detokenizes it (3046); token payments, tokenize calls (single, batch, proxy: only
    an iFrame capture takes a CVV) and proxy detokenize substitutions that name it are refused;
  - every other field of a bound tokenization comes back in clear only to the gateway, for its account (3045
    to the tokenization API and the proxy, to another account, or on a refused path); the fields of an unbound
    tokenization to its partner under the template's ``accessMode`` and the partner's detokenize permission
    (checked by the API) and to the gateway and the proxy.

CVV tokens are not reversible with the partner's key alone (:func:`cvv_scope`): the CVV is enciphered under the
scope *and* a random 128-bit per-capture salt. An iFrame capture keeps the salt in its Tokens item until the first
read, which removes the salt with the CVV's token in the same conditional write; no other tokenization takes a
CVV. After the first authorization, or after the hour (the item's ``expiresAt``, checked on every read, then its TTL deletion), no salt remains, hence
no key material that could turn a CVV token back into the CVV (docs/design/security.md).

:class:`Actor`, :class:`Owner` are written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a
dataclass costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import secrets
from typing import Any, Literal

from vaultcore.plain import Frozen, init
from vaultcore.tokens.bfid import BfidInfo, owner_matches
from vaultcore.tokens.errors import CVV_REFUSED, PolicyRefused, TokenServiceError

__all__ = ["CVV_FIELDS", "CVV_SALT", "Actor", "Owner", "PARTNER", "PROXY", "gateway_actor", "is_cvv",
           "cvv_scope", "new_cvv_salt", "check_clear", "check_sealed", "cvv_refused", "owner_of_item"]

#: Fields that hold a card verification value (the GATEWAY template's, and any template's field of that name).
CVV_FIELDS = frozenset({"vault_token_card_verification"})
#: The Tokens item attribute that holds an iFrame capture's CVV salt until its first read.
CVV_SALT = "cvv_salt"
_CVV_LABEL = "#cvv#"


class Actor(Frozen):
    """Who asks for tokens or clear values: ``gateway`` (for ``account_id``), ``api`` (the partner's tokenization
    API) or ``proxy`` (the partner's proxy configuration)."""

    __slots__ = ("kind", "account_id")
    kind: Literal["gateway", "api", "proxy"]
    account_id: str | None

    def __init__(self, kind: Literal['gateway', 'api', 'proxy'], account_id: str | None = None) -> None:
        init(self, kind=kind, account_id=account_id)


#: The partner itself, through the tokenization API (the least privileged actor: the default).
PARTNER = Actor("api")
#: The partner's proxy configuration.
PROXY = Actor("proxy")


def gateway_actor(account_id: str) -> Actor:
    return Actor("gateway", account_id)


class Owner(Frozen):
    """The policy a tokenization is stored with (module docstring). ``durable``: the account binding is also
    written to the scope's durable record (iFrame captures: their tokens can reach the partner through
    ``read``); ``sealed``: the binding is sealed in the bfid instead (version 5: gateway captures, no extra
    write); ``extra``: other attributes of the Tokens item (the iFrame's instance and device id)."""

    __slots__ = ("account_id", "custom_id", "method", "once", "durable", "sealed", "extra")
    account_id: str
    custom_id: str | None
    method: str | None
    once: bool
    durable: bool
    sealed: bool
    extra: tuple[tuple[str, str], ...]

    def __init__(self, account_id: str, custom_id: str | None = None, method: str | None = None, once: bool = False,
                 durable: bool = False, sealed: bool = False, extra: tuple[tuple[str, str], ...] = ()) -> None:
        init(self, account_id=account_id, custom_id=custom_id, method=method, once=once, durable=durable, sealed=sealed,
             extra=extra)

    def item_attributes(self) -> dict[str, Any]:
        out: dict[str, Any] = {"owner_account": self.account_id}
        if self.custom_id is not None:
            out["owner_custom_id"] = self.custom_id
        if self.method is not None:
            out["owner_method"] = self.method
        if self.once:
            out["uses"] = "once"
        out.update(dict(self.extra))
        return out


def owner_of_item(item: dict[str, Any]) -> str | None:
    """The account a Tokens item is bound to (``iframe_account``: items written before issue 27)."""
    owner = item.get("owner_account", item.get("iframe_account"))
    return owner if isinstance(owner, str) and owner else None


def is_cvv(name: str) -> bool:
    return name in CVV_FIELDS


def new_cvv_salt() -> str:
    return secrets.token_urlsafe(16)


def cvv_scope(scope: str, salt: str) -> str:
    """The engine scope a CVV is enciphered under: the bfid's scope and the per-capture salt (module docstring)."""
    return scope + _CVV_LABEL + salt


def cvv_refused(name: str = "vault_token_card_verification") -> TokenServiceError:
    return TokenServiceError(f"Field {name} holds a CVV: a CVV is never kept, returned or detokenized from a "
                             "token; send it in clear with the authorization.", code=CVV_REFUSED)


def check_clear(owner_account: str | None, actor: Actor, names: list[str]) -> None:
    """May ``actor`` have the clear values of ``names`` of a tokenization bound to ``owner_account`` (None:
    unbound)? 3046 for a CVV field (whoever asks), 3045 for a bound tokenization outside its account's gateway."""
    for name in names:
        if is_cvv(name):
            raise cvv_refused(name)
    if owner_account is None:
        return
    if actor.kind != "gateway":
        raise PolicyRefused("path")
    if actor.account_id != owner_account:
        raise PolicyRefused("account")


def check_sealed(mac_key: bytes, info: BfidInfo, actor: Actor) -> None:
    """The binding a version-5 bfid carries for good (module docstring): only its account's gateway may read or
    detokenize it; 3045 for any other path or account, whether or not the Tokens item still exists."""
    if not info.owner_tag:
        return
    if actor.kind != "gateway":
        raise PolicyRefused("path")
    if not owner_matches(mac_key, info, actor.account_id):
        raise PolicyRefused("account")
