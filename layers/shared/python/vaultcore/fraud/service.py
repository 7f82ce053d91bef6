"""Fraud scoring of a payment: stored device signals and keyed card fingerprints -> :class:`FraudResult`.

:func:`score_payment` is what the gateway calls (account option ``fraud_scoring`` on and a ``device_trans_id``
sent). It gathers the facts of :class:`vaultcore.fraud.scoring.RiskFacts` and applies the pure rules:

* device signals for ``device_trans_id`` under the account's active collector client ids
  (:func:`vaultcore.fraud.collector.device_signals`): present or not, reused or not, the device's UTC offset;
* the card: ``card_fp`` = keyed HMAC-SHA-256 of the card number (:mod:`vaultcore.fraud.keys`; PCI DSS 3.5.1),
  never the number;
* cards per device: an item ``DEVCARDS#<account>#<device_id>`` / ``<card_fp>`` (24 h) per card seen on the
  device, counted live (distinct by construction: one item per card);
* card velocity: an item ``CARDUSE#<account>#<card_fp>`` / ``<ms timestamp>#<random>`` (24 h) per use,
  counted for the last hour and the last 24 hours;
* the AVS answer of the processor, and the issuer country where known (:mod:`vaultcore.fraud.bins`).

DynamoDB round trips for a scored payment: one read of the device report, one BatchWriteItem (both usage
items), then the cards-per-device count and the two velocity counts (5; the client-id list and the
fingerprint key are cached per container).
"""

from __future__ import annotations

import secrets
from typing import Any

from vaultcore import clock
from vaultcore.fraud import bins, collector
from vaultcore.fraud.keys import fingerprint
from vaultcore.fraud.scoring import FraudResult, RiskFacts, score
from vaultcore.logs import get_logger
from vaultcore.store import signals
from vaultcore.wallet.errors import W, WalletError

__all__ = ["FraudResult", "score_payment", "USAGE_TTL_SECONDS"]

USAGE_TTL_SECONDS = 24 * 3600
_log = get_logger("fraud.service")


def _ms_key(ms: int) -> str:
    return f"{ms:015d}"


def score_payment(account_id: str, device_trans_id: str, card_number: str, avs_response: str | None = None,
                  *, card_country: str | None = None) -> FraudResult:
    """Score one payment. ``card_number`` is used in memory only, to compute its keyed fingerprint."""
    if not isinstance(device_trans_id, str) or not collector.DEVICE_TRANS_ID.match(device_trans_id):
        raise WalletError(W.FRAUD_DEVICE_ID)
    now = clock.now()
    now_s, now_ms = int(now), int(now * 1000)
    report: dict[str, Any] | None = collector.device_signals(account_id, device_trans_id)
    card_fp = fingerprint("card", card_number)
    usage_pk = f"CARDUSE#{account_id}#{card_fp}"
    items = [{"pk": usage_pk, "sk": f"{_ms_key(now_ms)}#{secrets.token_hex(4)}",
              "expiresAt": now_s + USAGE_TTL_SECONDS}]
    device_pk = None
    if report is not None:
        device_pk = f"DEVCARDS#{account_id}#{report['device_id']}"
        items.append({"pk": device_pk, "sk": card_fp, "expiresAt": now_s + USAGE_TTL_SECONDS, "lastSeen": now_s})
    signals.put_many(items)
    cards_on_device = signals.count_live(device_pk, now_s) if device_pk else 0
    uses_hour = signals.count_live(usage_pk, now_s, sk_at_least=_ms_key(now_ms - 3600 * 1000))
    uses_day = signals.count_live(usage_pk, now_s)
    device = (report or {}).get("signals") or {}
    offset = device.get("tzOffset")
    facts = RiskFacts(
        device_data=report is not None,
        device_reused=bool((report or {}).get("reused")),
        distinct_cards_on_device_24h=cards_on_device,
        card_uses_1h=uses_hour,
        card_uses_24h=uses_day,
        avs_response=avs_response,
        device_utc_offset_minutes=int(offset) if isinstance(offset, int | float) else None,
        card_country=card_country or bins.card_country(card_number),
    )
    result = score(facts)
    _log.info("payment scored", extra={"account_id": account_id, "count": result.score,
                                       "reason": ":".join((result.recommendation, *result.reasons))})
    return result
