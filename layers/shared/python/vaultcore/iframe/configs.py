"""Payment iFrame configurations: validation and storage (Registry, typed keys like the accounts').

Registry item ``IFRAMECONF#<account_id>`` / ``CONFIG#<id>``: ``accountId``, ``id`` (20 hex digits),
``config`` (the validated members below), ``createdAt``, ``updatedAt``. At most :data:`MAX_CONFIGURATIONS` per
account. Members, as the original names them (every member is checked; an unknown one is refused, 901):

==================== ==================================================================================
``label``            1-64 printable characters (required)
``language``         ``en`` (default) or ``es``: the field labels and messages inside the iframe
``timeout``          seconds an instance (its bearer token) lives: 60-3600, default 900
``currency``         ISO 4217, default ``USD``
``allowedPaymentMethods`` non-empty subset of ``CARD``, ``ACH`` (default ``["CARD"]``)
``allowedParentDomains`` 1-10 host sources (:mod:`vaultcore.iframe.domains`; required)
``cardSettings``     ``cvv``: ``required`` (default) / ``optional`` / ``omit``; ``billingAddress``: ``address1``,
                     ``address2``, ``city``, ``state``, ``zip``, each ``required`` / ``optional`` / ``omit``
                     (default: ``zip`` optional, the others omitted)
``antiFraud``        boolean (default false); true needs the account option ``fraud_scoring`` and a fraud
                     client id (903)
==================== ==================================================================================
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from vaultcore import clock
from vaultcore.cache import ContainerCache
from vaultcore.iframe import domains
from vaultcore.iframe.errors import ACCOUNT_NOT_READY, CONFIG_INVALID, NOT_FOUND, IframeError
from vaultcore.settings import settings
from vaultcore.store import registry

__all__ = ["MAX_CONFIGURATIONS", "MEMBERS", "SETTINGS", "validate", "create", "list_configs", "get", "patch",
           "delete", "load", "CONFIG_ID", "public_view"]

MAX_CONFIGURATIONS = 50
CONFIG_ID = re.compile(r"[a-f0-9]{20}")
MEMBERS = ("label", "language", "timeout", "currency", "allowedPaymentMethods", "allowedParentDomains",
           "cardSettings", "antiFraud")
SETTINGS = ("required", "optional", "omit")
ADDRESS_FIELDS = ("address1", "address2", "city", "state", "zip")
LANGUAGES = ("en", "es")
METHODS = ("CARD", "ACH")
TIMEOUT_RANGE = (60, 3600)
_LABEL = re.compile(r"[^\x00-\x1f\x7f]{1,64}")
_cache: ContainerCache[dict[str, Any]] = ContainerCache("record_cache_seconds", max_items=1024)


def _bad(member: str, rule: str) -> IframeError:
    return IframeError(CONFIG_INVALID, f"{member}: {rule}.")


def _setting(value: Any, member: str) -> str:
    if value not in SETTINGS:
        raise _bad(member, "must be required, optional or omit")
    return str(value)


def _card_settings(raw: Any) -> dict[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict) or set(raw) - {"cvv", "billingAddress"}:
        raise _bad("cardSettings", "must be an object with cvv and billingAddress only")
    address = raw.get("billingAddress", {})
    if not isinstance(address, dict) or set(address) - set(ADDRESS_FIELDS):
        raise _bad("cardSettings.billingAddress", "must be an object with " + ", ".join(ADDRESS_FIELDS) + " only")
    defaults = {"address1": "omit", "address2": "omit", "city": "omit", "state": "omit", "zip": "optional"}
    return {"cvv": _setting(raw.get("cvv", "required"), "cardSettings.cvv"),
            "billingAddress": {k: _setting(address.get(k, defaults[k]), f"cardSettings.billingAddress.{k}")
                               for k in ADDRESS_FIELDS}}


def validate(body: Any, *, cert: bool, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The configuration ``body`` describes (over ``base`` for a PATCH), every member checked; 901 otherwise."""
    from vaultcore.gateway.currencies import is_currency

    if not isinstance(body, dict):
        raise IframeError(CONFIG_INVALID, "The body must be one JSON object.")
    unknown = sorted(set(body) - set(MEMBERS))
    if unknown:
        raise _bad(str(unknown[0])[:64], "unknown member")
    raw = {**(base or {}), **body}
    if base is not None and "cardSettings" in body and isinstance(body["cardSettings"], dict) and isinstance(
            base.get("cardSettings"), dict):
        merged = {**base["cardSettings"], **body["cardSettings"]}
        if isinstance(body["cardSettings"].get("billingAddress"), dict):
            merged["billingAddress"] = {**base["cardSettings"].get("billingAddress", {}),
                                        **body["cardSettings"]["billingAddress"]}
        raw["cardSettings"] = merged
    label = raw.get("label")
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise _bad("label", "1 to 64 printable characters (required)")
    language = raw.get("language", "en")
    if language not in LANGUAGES:
        raise _bad("language", "one of " + ", ".join(LANGUAGES))
    timeout = raw.get("timeout", 900)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not TIMEOUT_RANGE[0] <= timeout <= TIMEOUT_RANGE[1]:
        raise _bad("timeout", f"an integer number of seconds, {TIMEOUT_RANGE[0]} to {TIMEOUT_RANGE[1]}")
    currency = raw.get("currency", "USD")
    if not isinstance(currency, str) or not is_currency(currency.upper()):
        raise _bad("currency", "an ISO 4217 currency code")
    methods = raw.get("allowedPaymentMethods", ["CARD"])
    if (not isinstance(methods, list) or not methods or any(m not in METHODS for m in methods)
            or len(set(methods)) != len(methods)):
        raise _bad("allowedPaymentMethods", "a non-empty list of CARD and ACH without repeats")
    if "allowedParentDomains" not in raw:
        raise _bad("allowedParentDomains", "required")
    try:
        parents = domains.normalise_sources(raw["allowedParentDomains"], cert=cert)
    except domains.DomainError as exc:
        raise _bad("allowedParentDomains", str(exc)) from None
    anti_fraud = raw.get("antiFraud", False)
    if not isinstance(anti_fraud, bool):
        raise _bad("antiFraud", "a boolean")
    return {"label": label, "language": language, "timeout": timeout, "currency": currency.upper(),
            "allowedPaymentMethods": list(methods), "allowedParentDomains": parents,
            "cardSettings": _card_settings(raw.get("cardSettings")), "antiFraud": anti_fraud}


def _check_account(account: Any, config: dict[str, Any]) -> None:
    if not account.partner_id:
        raise IframeError(ACCOUNT_NOT_READY, "The account has no tokenization partner: eTokens are tokenized under "
                                             "it.")
    if config["antiFraud"]:
        from vaultcore.fraud.collector import active_client_ids

        if not account.option("fraud_scoring") or not active_client_ids(account.account_id):
            raise IframeError(ACCOUNT_NOT_READY, "antiFraud needs the account option fraud_scoring and a fraud "
                                                 "client id.")


def _pk(account_id: str) -> str:
    return f"IFRAMECONF#{account_id}"


def public_view(item: dict[str, Any]) -> dict[str, Any]:
    return {"id": item["id"], **item["config"], "createdAt": item.get("createdAt"), "updatedAt": item.get("updatedAt")}


def create(account: Any, body: Any) -> dict[str, Any]:
    config = validate(body, cert=settings().is_cert)
    _check_account(account, config)
    if len(registry.query_prefix(_pk(account.account_id), "CONFIG#", limit=MAX_CONFIGURATIONS)) >= MAX_CONFIGURATIONS:
        raise IframeError(CONFIG_INVALID, f"An account has at most {MAX_CONFIGURATIONS} configurations: delete one.")
    now = int(clock.now())
    item = {"pk": _pk(account.account_id), "sk": "CONFIG#" + (config_id := secrets.token_hex(10)),
            "accountId": account.account_id, "id": config_id, "config": config, "createdAt": now, "updatedAt": now}
    registry.put_new(item)
    return public_view(item)


def list_configs(account: Any) -> list[dict[str, Any]]:
    items = registry.query_prefix(_pk(account.account_id), "CONFIG#", limit=MAX_CONFIGURATIONS)
    return [public_view(i) for i in sorted(items, key=lambda i: (i.get("createdAt", 0), i["id"]))]


def _item(account_id: str, config_id: str, *, consistent: bool = True) -> dict[str, Any]:
    item = registry.get(_pk(account_id), "CONFIG#" + config_id, consistent=consistent) \
        if CONFIG_ID.fullmatch(config_id) else None
    if item is None:
        raise IframeError(NOT_FOUND, "No such payment iFrame configuration.")
    return item


def get(account: Any, config_id: str) -> dict[str, Any]:
    return public_view(_item(account.account_id, config_id))


def patch(account: Any, config_id: str, body: Any) -> dict[str, Any]:
    item = _item(account.account_id, config_id)
    config = validate(body, cert=settings().is_cert, base=item["config"])
    _check_account(account, config)
    try:
        updated = registry.update_fields(_pk(account.account_id), "CONFIG#" + config_id,
                                         {"config": config, "updatedAt": int(clock.now())})
    except registry.ConditionFailed:
        raise IframeError(NOT_FOUND, "No such payment iFrame configuration.") from None
    _cache.invalidate((account.account_id, config_id))
    return public_view(updated)


def delete(account: Any, config_id: str) -> None:
    _item(account.account_id, config_id)
    registry.delete(_pk(account.account_id), "CONFIG#" + config_id)
    _cache.invalidate((account.account_id, config_id))


def load(account_id: str, config_id: str) -> dict[str, Any] | None:
    """The configuration members (cached per container for RECORD_CACHE_SECONDS), or None when it is gone."""

    def loader() -> dict[str, Any]:
        item = registry.get(_pk(account_id), "CONFIG#" + config_id, consistent=True)
        return item["config"] if item else {}

    return _cache.get_or_load((account_id, config_id), loader) or None
