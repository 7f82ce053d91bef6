"""The management function's dispatch: each route module is imported when a request first needs it.

The management API's routes live in six modules (one per domain), and together they import nearly every domain
of vaultcore (gateway accounts, proxy configurations, token keys, wallets, postbacks, devices). Importing them all
at init cost more than half of the management function's cold start (bench/bench_cold_start.py), while a request
needs one. So this module knows which module serves which paths (:data:`MODULES`, the first match wins), imports
that one before dispatching, and imports all of them for a path none of its patterns names (the 404 or 405 answer
then comes from the complete route table, as before). ``tests/unit/test_admin_routes.py`` checks that every
registered route is reached through its own module and that no path two modules could both serve exists, so the
answers (including 405 with its ``Allow`` header) are those of the complete table.
"""

from __future__ import annotations

import importlib
import re

from vaultcore.admin import router
from vaultcore.api.http import Request, Response

__all__ = ["dispatch", "MODULES", "ALL_MODULES", "module_for", "register_all"]

#: (path pattern, route module of ``vaultcore.admin``): the first match wins, so the more specific come first.
MODULES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(pattern), module) for pattern, module in (
    (r"^/admin/v1/accounts/[^/]+/deliveries(?:/|$)", "postbacks"),
    (r"^/admin/v1/postbacks(?:/|$)", "postbacks"),
    (r"^/admin/v1/accounts/[^/]+/(?:wallet|fraud-client)(?:/|$)", "wallet"),
    (r"^/admin/v1/wallet(?:/|$)", "wallet"),
    (r"^/admin/v1/accounts(?:/|$)", "accounts"),
    (r"^/admin/v1/partners/[^/]+/(?:proxy-configurations|proxy-logs)(?:/|$)", "proxy"),
    (r"^/admin/v1/partners/[^/]+/(?:templates|token-keys|permissions|detokenizations)(?:/|$)", "tokens"),
    (r"^/admin/v1/(?:partners|bdks|device-types)(?:/|$)", "foundation"),
))
#: Every route module (a module added to the management API goes here, and into MODULES).
ALL_MODULES = ("accounts", "foundation", "postbacks", "proxy", "tokens", "wallet")


def module_for(path: str) -> str | None:
    """The route module that serves ``path``, or None when no pattern names it."""
    for pattern, module in MODULES:
        if pattern.match(path):
            return module
    return None


def _load(modules: tuple[str, ...]) -> None:
    for module in modules:
        importlib.import_module(f"vaultcore.admin.{module}")  # registers its routes once (sys.modules caches it)


def register_all() -> None:
    """Import every route module (the complete route table: the contract tests, an unknown path)."""
    _load(ALL_MODULES)


def dispatch(request: Request) -> Response:
    module = module_for(request.path)
    _load((module,) if module else ALL_MODULES)
    return router.dispatch(request)
