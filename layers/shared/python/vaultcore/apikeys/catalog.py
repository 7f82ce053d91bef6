"""The scopes an API key may hold: the original's ``APIKeyScopes``, each with description, category and level.

The original's document enumerates 37 scopes in ``APIKeyScopes`` (the members ``CreateApiKeyRequest.scopes`` and
``ListApiKeyScopesEntry.scope`` take) and describes them in its "Scope documentation" table; the descriptions below
are that table's. ``GET /api/v4/api-key-scopes`` answers exactly these (a client generated from the original's
document validates ``scope`` against that enum), and a key may be given only these.

* ``level`` ("Child scopes have a higher level"): the depth below the area, ``pcx:<area>:*`` is 0,
  ``pcx:<area>:<action>`` and ``pcx:<area>:<sub>:*`` are 1, ``pcx:<area>:<sub>:<action>`` is 2;
* ``enabled``: whether this platform has the operations the scope allows. Account Updater and the v4 Apple Pay
  operations are not offered here (3-D Secure and the account updater are left for later); a key may still hold
  such a scope (it allows nothing until the operations exist).

A wildcard (``pcx:iframe:*``) allows every scope below it (:func:`vaultcore.v4.auth.grants`). The account's own
``api_accesskey`` holds ``pcx:*``, every scope, which no key can be given (it is not in the enum).
"""

from __future__ import annotations

from typing import Any

__all__ = ["SCOPES", "SCOPE_NAMES", "entries", "level_of", "LIST_SCOPES", "grants"]

# category, [(scope, description)], enabled here
_TABLE: tuple[tuple[str, bool, tuple[tuple[str, str], ...]], ...] = (
    ("Account Updater", False, (
        ("pcx:account_updater:results:read", "View Account Updater results"),
        ("pcx:account_updater:schedules:create", "Create an Account Updater Schedule"),
        ("pcx:account_updater:schedules:delete", "Delete an Account Updater Schedule"),
        ("pcx:account_updater:schedules:patch", "Update an Account Updater Schedule"),
        ("pcx:account_updater:schedules:post", "Add data to Account Updater Schedule"))),
    ("API Keys", True, (
        ("pcx:api_key:*", "Perform all API Key actions"),
        ("pcx:api_key:create", "Create API Key"),
        ("pcx:api_key:delete", "Delete API Key"),
        ("pcx:api_key:read", "View API Key settings"),
        ("pcx:api_key:update", "Update API Key settings"))),
    ("Apple Pay", False, (
        ("pcx:apple_pay:*", "Perform all Apple Pay actions"),
        ("pcx:apple_pay:account:*", "Perform all actions on Apple Pay Accounts"),
        ("pcx:apple_pay:account:create", "Create an Apple Pay Account"),
        ("pcx:apple_pay:account:view", "View an Apple Pay Account settings"),
        ("pcx:apple_pay:session:get", "Fetch an ApplePay session"))),
    ("Dynamic Descriptors", True, (
        ("pcx:dynamic_descriptors:*", "Perform all Dynamic Descriptor actions"),
        ("pcx:dynamic_descriptors:create", "Create a Dynamic Descriptor"),
        ("pcx:dynamic_descriptors:delete", "Delete a Dynamic Descriptor"),
        ("pcx:dynamic_descriptors:read", "View a Dynamic Descriptor details"),
        ("pcx:dynamic_descriptors:update", "Update a Dynamic Descriptor"))),
    ("Payment iFrame", True, (
        ("pcx:iframe:*", "Perform all secure iframe checkout related actions"),
        ("pcx:iframe:create", "Create a secure iframe checkout"),
        ("pcx:iframe:delete", "Delete a secure iframe checkout"),
        ("pcx:iframe:instance:*", "Perform all secure iframe checkout instance actions"),
        ("pcx:iframe:instance:create", "Create a secure iframe checkout instance"),
        ("pcx:iframe:instance:read", "View a secure iframe checkout instance details"),
        ("pcx:iframe:read", "View a secure iframe checkout details"),
        ("pcx:iframe:update", "Update a secure iframe checkout settings"))),
    ("Payments", True, (
        ("pcx:payments:*", "Perform all Payment related actions"),
        ("pcx:payments:create", "Initialize a Payment"),
        ("pcx:payments:read", "View Payment Details"),
        ("pcx:payments:update", "Update a Payment"))),
    ("Webhooks", True, (
        ("pcx:webhooks:*", "Perform all Webhook related actions"),
        ("pcx:webhooks:create", "Create a Webhook"),
        ("pcx:webhooks:delete", "Delete a Webhook"),
        ("pcx:webhooks:read", "View Webhook details"),
        ("pcx:webhooks:update", "Update a Webhook"))),
)


def level_of(scope: str) -> int:
    """The scope's depth below its area: ``pcx:iframe:*`` 0, ``pcx:iframe:read`` 1, ``pcx:iframe:instance:read`` 2."""
    parts = scope.split(":")[2:]  # below "pcx:<area>"
    return len(parts) - 1 if parts and parts[-1] == "*" else len(parts)


#: scope -> its ListApiKeyScopesEntry (the original's members: scope, description, category, level, enabled)
SCOPES: dict[str, dict[str, Any]] = {
    scope: {"scope": scope, "description": description, "category": category, "level": level_of(scope),
            "enabled": enabled}
    for category, enabled, rows in _TABLE for scope, description in rows}
SCOPE_NAMES = frozenset(SCOPES)

#: The scopes that may read the catalog. The original names ``pcx:api_key_scopes:read`` only, but leaves it out
#: of its own ``APIKeyScopes`` enum, so that no key created through its document could ever hold it: a key that
#: may read or create keys may read the catalog too (the account's own key holds every scope).
LIST_SCOPES = ("pcx:api_key_scopes:read", "pcx:api_key:read", "pcx:api_key:create")


def entries() -> list[dict[str, Any]]:
    """Every scope's ListApiKeyScopesEntry, in the catalog's order (by category, as the original's table)."""
    return [dict(entry) for entry in SCOPES.values()]


def grants(granted: frozenset[str], needed: str) -> bool:
    """Whether scopes ``granted`` allow ``needed``: the scope itself, or a wildcard over one of its parents
    (``pcx:iframe:*`` allows ``pcx:iframe:instance:read``; ``pcx:*`` allows everything). ``needed`` may be a
    wildcard itself: ``pcx:iframe:*`` is allowed by ``pcx:iframe:*`` or ``pcx:*`` only.

    Here, below both the v4 authentication (vaultcore.v4.auth, which exports it) and the gateway's use of keys
    (vaultcore.apikeys.gateway), so that neither imports the other."""
    if needed in granted:
        return True
    parts = needed.split(":")
    return any(":".join(parts[:n]) + ":*" in granted for n in range(1, len(parts)))
