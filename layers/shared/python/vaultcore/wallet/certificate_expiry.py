"""The daily wallet certificate check: how long the stored Apple Pay certificates have left.

Apple's payment processing and merchant identity certificates expire (25 months after issue). When the payment
processing certificate expires, Apple Pay tokens encrypted to it can no longer be checked (708/709); when the
merchant identity certificate expires, Apple refuses the merchant session (the checkout's wallet button stops
working). Neither fails loudly before the day, so this check runs once a day (template:
WalletCertificateCheckFunction) and publishes:

* ``WalletCertificateDaysLeft``: the fewest whole days left over every account's certificates (negative once
  expired); ``WalletCertificateExpiryAlarm`` fires when it is below ``WalletCertificateWarningDays`` (30);
* ``WalletCertificatesExpiring``: how many certificates are inside that window;

and logs one warning per certificate inside the window, naming the account and the certificate's role and expiry
(public facts: the expiry is shown by ``GET /admin/v1/accounts/{account_id}/wallet`` too; no key, no certificate
body). The expiry dates come from the public facts stored beside the KMS envelope when the certificates were
put (``vaultcore.wallet.settings``), so the check makes no KMS call and unwraps no key.

Why a Scan: the settings items have no index by expiry, and one daily read of the Registry (configuration items
only: partners, devices, accounts, templates) costs less than keeping an index in step with every settings write.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from vaultcore import clock, metrics
from vaultcore.logs import clear_request_context, get_logger, set_request_context
from vaultcore.store import registry

__all__ = ["check", "expiring_certificates", "ROLES", "DEFAULT_WARNING_DAYS"]

_log = get_logger("wallet.certificates")

#: The certificate roles and the public fact holding each one's expiry (vaultcore.wallet.settings ``public``).
ROLES = {"payment_processing": "payment_processing_certificate_not_after",
         "merchant_identity": "merchant_identity_not_after"}
DEFAULT_WARNING_DAYS = 30
_DAY_S = 86400


def _warning_days() -> int:
    raw = os.environ.get("WALLET_CERTIFICATE_WARNING_DAYS", "")
    return int(raw) if raw.isdigit() else DEFAULT_WARNING_DAYS


def expiring_certificates(items: list[dict[str, Any]], *, now: float,
                          warning_days: int) -> tuple[float | None, list[dict[str, Any]], int]:
    """From wallet settings items: (fewest days left, the certificates inside the window, certificates seen).

    Days are whole days, rounded down (a certificate with 29.9 days left has 29): the alarm compares with
    ``warning_days`` and must fire on the day the window opens, not a day late."""
    fewest: float | None = None
    inside: list[dict[str, Any]] = []
    seen = 0
    for item in items:
        public = item.get("public") or {}
        for role, fact in ROLES.items():
            not_after = public.get(fact)
            if not isinstance(not_after, str):
                continue
            try:
                expires = datetime.fromisoformat(not_after).timestamp()
            except ValueError:
                continue  # not written by this platform: nothing to measure
            seen += 1
            days_left = (expires - now) // _DAY_S
            fewest = days_left if fewest is None else min(fewest, days_left)
            if days_left < warning_days:
                inside.append({"account_id": item.get("account_id"), "role": role, "not_after": not_after,
                               "days_left": int(days_left)})
    inside.sort(key=lambda c: (c["days_left"], str(c["account_id"]), c["role"]))
    return fewest, inside, seen


def check(event: dict[str, Any] | None = None, context: Any = None) -> dict[str, Any]:
    """The scheduled handler: read every account's wallet settings, publish the metrics, warn per certificate."""
    set_request_context(getattr(context, "aws_request_id", None))
    try:
        warning_days = _warning_days()
        items = registry.scan_kind("WALLET#", "SETTINGS", attributes=("account_id", "public"))
        fewest, inside, seen = expiring_certificates(items, now=clock.now(), warning_days=warning_days)
        metrics.wallet_certificates(fewest, len(inside))
        for certificate in inside:
            _log.warning("wallet certificate expires soon" if certificate["days_left"] >= 0
                         else "wallet certificate has expired", extra=certificate)
        _log.info("wallet certificates checked", extra={"count": seen, "expiring": len(inside)})
        return {"certificates": seen, "fewestDaysLeft": None if fewest is None else int(fewest),
                "warningDays": warning_days, "expiring": inside}
    finally:
        metrics.flush(context)
        clear_request_context()
