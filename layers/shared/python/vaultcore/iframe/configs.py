"""Payment iFrame configurations: validation and storage (Registry, typed keys like the accounts').

Registry item ``IFRAMECONF#<account_id>`` / ``CONFIG#<id>``: ``accountId``, ``id`` (``ifr_`` + 32 hex digits, the
original's form; configurations made before it have 20 hex digits and keep working), ``config`` (the validated
members below), ``createdAt``, ``updatedAt``. At most :data:`MAX_CONFIGURATIONS` per account. Members, as the
original PayConex v4 API names them (every member is checked; an unknown one is refused, 901):

======================== ==============================================================================
``label``                1-100 printable characters (required)
``language``             ``ENGLISH`` (default), ``SPANISH``, ``GERMAN``, ``FRENCH``, ``ITALIAN``; ``en`` and ``es``
                         are accepted as ``ENGLISH`` and ``SPANISH`` (our first vocabulary). The frame's labels
                         and messages: English and Spanish translated, the others in English (:mod:`.page`)
``timeout``              seconds an instance (its bearer token) lives: 60-1800, default 300
``currency``             ISO 4217, default ``USD``
``allowedPaymentMethods`` non-empty subset of ``CARD``, ``ACH`` (default ``["CARD"]``); ``CLICK_TO_PAY`` refused
``allowedParentDomains`` 0-10 host sources (:mod:`vaultcore.iframe.domains`; required, may be empty: then the frame
                         is embeddable nowhere, ``frame-ancestors 'none'``, and is used top-level by its instance
                         only, the merchant reading the result with ``GET .../instance/{id}``)
``cardSettings``         ``cvv``, ``billingAddress``, ``contactInfo``, ``savePaymentOption``: each ``required`` /
                         ``optional`` / ``omit`` (defaults ``required``, ``optional``, ``omit``, ``omit``).
                         ``billingAddress`` also takes our per-field object (``address1``, ``address2``, ``city``,
                         ``state``, ``zip``), answered in the extension member ``billingAddressFields``
``achSettings``          ``savePaymentOption``: ``required`` / ``optional`` / ``omit`` (default ``omit``)
``clickToPaySettings``   refused (901): Click to Pay is not offered
``antiFraud``            boolean (default false); true needs the account option ``fraud_scoring`` and a fraud
                         client id (903)
======================== ==============================================================================

``savePaymentOption`` defaults to ``omit``, not to the original's ``required``: a saved card is a reusable
payment token of the account (a STORE), which a merchant asks for, never gets unasked.
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
           "delete", "load", "CONFIG_ID", "public_view", "LANGUAGES", "LANGUAGE_ALIASES", "language_code",
           "BILLING_PRESETS", "billing_mode"]

MAX_CONFIGURATIONS = 50
CONFIG_ID = re.compile(r"ifr_[0-9a-f]{32}|[a-f0-9]{20}")  # the original's form, and ours before it
MEMBERS = ("label", "language", "timeout", "currency", "allowedPaymentMethods", "allowedParentDomains",
           "cardSettings", "achSettings", "antiFraud")
SETTINGS = ("required", "optional", "omit")
ADDRESS_FIELDS = ("address1", "address2", "city", "state", "zip")
LANGUAGES = ("ENGLISH", "SPANISH", "GERMAN", "FRENCH", "ITALIAN")
LANGUAGE_ALIASES = {"en": "ENGLISH", "es": "SPANISH"}
#: language -> the BCP 47 code of its translation (the page falls back to English where it has none)
_CODES = {"ENGLISH": "en", "SPANISH": "es", "GERMAN": "de", "FRENCH": "fr", "ITALIAN": "it"}
METHODS = ("CARD", "ACH")
UNSUPPORTED_METHODS = ("CLICK_TO_PAY",)
TIMEOUT_RANGE = (60, 1800)
DEFAULT_TIMEOUT = 300
CARD_SETTINGS = ("cvv", "billingAddress", "contactInfo", "savePaymentOption")
_CARD_DEFAULTS = {"cvv": "required", "contactInfo": "omit", "savePaymentOption": "omit"}
#: billingAddress as the original's one setting -> the fields it shows (address2 is never required)
BILLING_PRESETS: dict[str, dict[str, str]] = {
    "required": {"address1": "required", "address2": "optional", "city": "required", "state": "required",
                 "zip": "required"},
    "optional": dict.fromkeys(ADDRESS_FIELDS, "optional"),
    "omit": dict.fromkeys(ADDRESS_FIELDS, "omit"),
}
_BILLING_DEFAULT = {"address1": "omit", "address2": "omit", "city": "omit", "state": "omit", "zip": "optional"}
_LABEL = re.compile(r"[^\x00-\x1f\x7f]{1,100}")
_cache: ContainerCache[dict[str, Any]] = ContainerCache("record_cache_seconds", max_items=1024)


def _bad(member: str, rule: str) -> IframeError:
    return IframeError(CONFIG_INVALID, f"{member}: {rule}.")


def _setting(value: Any, member: str) -> str:
    if value not in SETTINGS:
        raise _bad(member, "must be required, optional or omit")
    return str(value)


def language_code(language: str) -> str:
    """The page's translation code of a stored language (``en`` / ``es`` of configurations made before)."""
    return _CODES.get(LANGUAGE_ALIASES.get(language, language), "en")


def billing_mode(fields: dict[str, str]) -> str:
    """The original's one ``billingAddress`` setting for our per-field modes: required when a field is, omit
    when none is shown, optional otherwise."""
    modes = set(fields.values())
    return "required" if "required" in modes else "optional" if "optional" in modes else "omit"


def _billing(raw: Any, base: dict[str, str] | None) -> dict[str, str]:
    if raw is None:
        return dict(base or _BILLING_DEFAULT)
    if isinstance(raw, str):
        return dict(BILLING_PRESETS[_setting(raw, "cardSettings.billingAddress")])
    if not isinstance(raw, dict) or set(raw) - set(ADDRESS_FIELDS):
        raise _bad("cardSettings.billingAddress", "required, optional or omit (or an object with "
                   + ", ".join(ADDRESS_FIELDS) + " only)")
    merged = {**(base or _BILLING_DEFAULT), **raw}  # our object form: per field, merged over the stored ones
    return {k: _setting(merged[k], f"cardSettings.billingAddress.{k}") for k in ADDRESS_FIELDS}


def _card_settings(raw: Any, base: dict[str, Any] | None) -> dict[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _bad("cardSettings", "must be an object")
    unknown = sorted(set(raw) - set(CARD_SETTINGS))
    if unknown:
        raise _bad(f"cardSettings.{str(unknown[0])[:40]}", "unknown member")
    base = base or {}
    out: dict[str, Any] = {k: _setting(raw.get(k, base.get(k, default)), f"cardSettings.{k}") for k, default in _CARD_DEFAULTS.items()}
    out["billingAddress"] = _billing(raw.get("billingAddress"), base.get("billingAddress"))
    return out


def _ach_settings(raw: Any, base: dict[str, Any] | None) -> dict[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict) or set(raw) - {"savePaymentOption"}:
        raise _bad("achSettings", "must be an object with savePaymentOption only")
    return {"savePaymentOption": _setting(raw.get("savePaymentOption", (base or {}).get("savePaymentOption", "omit")),
                                          "achSettings.savePaymentOption")}


def validate(body: Any, *, cert: bool, base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The configuration ``body`` describes (over ``base`` for a PATCH), every member checked; 901 otherwise."""
    from vaultcore.gateway.currencies import is_currency

    if not isinstance(body, dict):
        raise IframeError(CONFIG_INVALID, "The body must be one JSON object.")
    if "clickToPaySettings" in body:
        raise _bad("clickToPaySettings", "Click to Pay is not offered by this platform")
    unknown = sorted(set(body) - set(MEMBERS))
    if unknown:
        raise _bad(str(unknown[0])[:64], "unknown member")
    raw = {**(base or {}), **body}
    label = raw.get("label")
    if not isinstance(label, str) or not _LABEL.fullmatch(label):
        raise _bad("label", "1 to 100 printable characters (required)")
    language = raw.get("language", "ENGLISH")
    language = LANGUAGE_ALIASES.get(language, language) if isinstance(language, str) else language
    if language not in LANGUAGES:
        raise _bad("language", "one of " + ", ".join(LANGUAGES))
    timeout = raw.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, float) and timeout.is_integer():
        timeout = int(timeout)  # the original's document types it as a number: 600.0 is 600 seconds
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not TIMEOUT_RANGE[0] <= timeout <= TIMEOUT_RANGE[1]:
        raise _bad("timeout", f"an integer number of seconds, {TIMEOUT_RANGE[0]} to {TIMEOUT_RANGE[1]}")
    currency = raw.get("currency", "USD")
    if not isinstance(currency, str) or not is_currency(currency.upper()):
        raise _bad("currency", "an ISO 4217 currency code")
    methods = raw.get("allowedPaymentMethods", ["CARD"])
    if isinstance(methods, list) and any(m in UNSUPPORTED_METHODS for m in methods):
        raise _bad("allowedPaymentMethods", "CLICK_TO_PAY is not offered by this platform")
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
    base_card = (base or {}).get("cardSettings") if isinstance((base or {}).get("cardSettings"), dict) else None
    card = _card_settings(body.get("cardSettings") if base is not None else raw.get("cardSettings"), base_card)
    base_ach = (base or {}).get("achSettings") if isinstance((base or {}).get("achSettings"), dict) else None
    ach = _ach_settings(body.get("achSettings") if base is not None else raw.get("achSettings"), base_ach)
    return {"label": label, "language": language, "timeout": timeout, "currency": currency.upper(),
            "allowedPaymentMethods": list(methods), "allowedParentDomains": parents, "cardSettings": card,
            "achSettings": ach, "antiFraud": anti_fraud}


def normalised(config: dict[str, Any]) -> dict[str, Any]:
    """A stored configuration in today's vocabulary: one made before the original's members (``en``, no
    ``contactInfo``, ``savePaymentOption`` or ``achSettings``) reads as it behaved."""
    card = config.get("cardSettings") or {}
    return {**config, "language": LANGUAGE_ALIASES.get(config.get("language", "ENGLISH"), config.get("language")),
            "cardSettings": {**_CARD_DEFAULTS, **card, "billingAddress": card.get("billingAddress") or
                             dict(_BILLING_DEFAULT)},
            "achSettings": config.get("achSettings") or {"savePaymentOption": "omit"}}


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
    """The original's ``IframeResponse`` (``billingAddress`` its one setting) and our extension members
    ``billingAddressFields`` (the fields it shows), ``antiFraud``, ``createdAt``, ``updatedAt``."""
    config = normalised(item["config"])
    card = config["cardSettings"]
    return {"id": item["id"], **config,
            "cardSettings": {**card, "billingAddress": billing_mode(card["billingAddress"])},
            "billingAddressFields": card["billingAddress"], "createdAt": item.get("createdAt"),
            "updatedAt": item.get("updatedAt")}


def create(account: Any, body: Any) -> dict[str, Any]:
    config = validate(body, cert=settings().is_cert)
    _check_account(account, config)
    if len(registry.query_prefix(_pk(account.account_id), "CONFIG#", limit=MAX_CONFIGURATIONS)) >= MAX_CONFIGURATIONS:
        raise IframeError(CONFIG_INVALID, f"An account has at most {MAX_CONFIGURATIONS} configurations: delete one.")
    now = int(clock.now())
    item = {"pk": _pk(account.account_id), "sk": "CONFIG#" + (config_id := "ifr_" + secrets.token_hex(16)),
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
    config = validate(body, cert=settings().is_cert, base=normalised(item["config"]))
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
        return normalised(item["config"]) if item else {}

    return _cache.get_or_load((account_id, config_id), loader) or None
