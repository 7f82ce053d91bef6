"""The two places the gateway's SALE / AUTHORIZATION flow calls into wallets and fraud scoring.

Kept here, beside the wallet and fraud code, so the gateway's own edits are a few delimited lines:

* :func:`wallet_payment` (``tender_type=APay``): ``apay_payload`` -> the device account number, expiry and the
  wallet facts stored with the transaction (ECI, network; never the cryptogram, never the number);
* :func:`fraud_screen` (after the processor's answer, because the AVS result is one of the rules): when the
  account option ``fraud_scoring`` is on and the request carries ``device_trans_id``, score the payment; a
  ``reject`` turns an approval into a decline with error 720 (nothing is captured or settled: the sandbox
  authorization is simply not kept). The score, recommendation and reasons are stored with the transaction.

Scoring fails open: if the scoring store is unavailable the payment proceeds unscored
(``fraud_recommendation`` ``unscored``), because refusing every payment when a risk signal store is down is the
worse failure for a merchant; the event is logged as an error for the operator.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from vaultcore.errors import DependencyError
from vaultcore.logs import get_logger
from vaultcore.wallet.errors import W

__all__ = ["wallet_payment", "fraud_screen", "FRAUD_FIELDS"]

FRAUD_FIELDS = ("fraud_score", "fraud_recommendation", "fraud_reasons")
_log = get_logger("gateway.hooks")


def wallet_payment(account_id: str, values: dict[str, str], amount: str, currency: str
                   ) -> tuple[dict[str, str], dict[str, Any]]:
    """``(card values for the processor, fields stored with the transaction)`` of a wallet payment."""
    from vaultcore.wallet.payments import decrypt_wallet_payment

    card = decrypt_wallet_payment(account_id, values.get("apay_payload"), amount, currency)
    return ({"card_number": card.pan, "card_expiration": card.expiry_mmyy},
            {"tender_type": "APay", "wallet_eci": card.eci, "wallet_network": card.network,
             "entry_mode": "wallet", "keyed": False})


def fraud_screen(account: Any, device_trans_id: str | None, card_number: str | None, outcome: Any
                 ) -> tuple[Any, dict[str, Any]]:
    """``(outcome, fields)``: the processor outcome (declined with 720 on ``reject``) and the fraud fields."""
    if not device_trans_id or not card_number or not account.option("fraud_scoring"):
        return outcome, {}
    from vaultcore.fraud.service import score_payment

    try:
        result = score_payment(account.account_id, device_trans_id, card_number, outcome.avs_response)
    except DependencyError:
        _log.error("fraud scoring unavailable", extra={"account_id": account.account_id})
        return outcome, {"fraud_recommendation": "unscored", "fraud_reasons": ["scoring_unavailable"]}
    fields = {"fraud_score": result.score, "fraud_recommendation": result.recommendation,
              "fraud_reasons": list(result.reasons)}
    if result.recommendation == "reject" and outcome.approved:
        outcome = dataclasses.replace(outcome, approved=False, error_code=W.FRAUD_REJECT, authorization_code=None,
                                      authorization_message="DECLINED")
    return outcome, fields

