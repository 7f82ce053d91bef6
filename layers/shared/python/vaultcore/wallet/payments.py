"""Wallet payments: ``apay_payload`` -> a verified, decrypted, single-use :class:`WalletCard`.

:func:`decrypt_wallet_payment` is the one entry point the gateway (``tender_type=APay``) and the ``/payments``
format call. In order, each step refusing with its documented 7xx code (:mod:`vaultcore.wallet.errors`):

1. the account's wallet settings (701);
2. the payload: JSON text or base64 of it, full token or ``paymentData`` (702, 703);
3. the signature (RFC 5652 detached CMS): chain to the account's trust roots or the stack default (715 when
   none, 708), digest and ECDSA (707), signing time within 5 minutes (709). Skipped only when the account's
   ``verify_signature`` is false AND the stack is the certification environment. The ``error_message`` of a
   707, 708 or 709 says which check failed (:data:`vaultcore.wallet.errors.SIGNATURE_REFUSALS`: an expired
   signing certificate, an unknown root, a signature that does not verify, ...);
4. EC_v1 decryption with the account's payment processing key (704, 705, 706);
5. the amount and currency of the request must be the token's (711, 710), the payment data complete (713) and
   the card not expired (714);
6. single use: the token's ``header.transactionId`` is claimed with one conditional put in the Signals table
   (kept 30 days, far beyond the 5-minute signing window); a second use is refused (712) even when the first
   payment was declined, since a wallet token authorizes exactly one payment attempt.

Logs carry the account id, the step and the refusal reason only: never the token, the device account number,
the cryptogram or key material.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from vaultcore import clock
from vaultcore.crypto import wallet_token as wt
from vaultcore.logs import get_logger
from vaultcore.settings import settings as platform_settings
from vaultcore.store import signals
from vaultcore.wallet import settings as wallet_settings
from vaultcore.wallet.errors import W, WalletError, signature_refusal
from vaultcore.wallet.token_payload import (
    WalletCard,
    WalletPayloadError,
    card_from_payment_data,
    check_amount_and_currency,
    parse_apay_payload,
    payment_network,
    token_transaction_id,
)

__all__ = ["WalletCard", "decrypt_wallet_payment", "REPLAY_RETENTION_SECONDS"]

REPLAY_RETENTION_SECONDS = 30 * 24 * 3600
_log = get_logger("wallet.payments")
_REASON_CODES = {
    "bad_format": W.PAYLOAD_MALFORMED,
    "unsupported_version": W.UNSUPPORTED_VERSION,
    "key_mismatch": W.KEY_MISMATCH,
    "decrypt_failed": W.DECRYPT_FAILED,
    "signature_invalid": W.SIGNATURE_INVALID,
    "chain_invalid": W.CHAIN_INVALID,
    "signing_time_out_of_window": W.SIGNING_TIME,
}


def _refuse(account_id: str, code: int, step: str, message: str | None = None,
            detail: str | None = None) -> WalletError:
    extra: dict[str, Any] = {"account_id": account_id, "reason": step, "code": code}
    if detail is not None:
        extra["detail"] = detail
    _log.info("wallet token refused", extra=extra)
    return WalletError(code, message)


def decrypt_wallet_payment(account_id: str, apay_payload: Any, amount: str, currency: str) -> WalletCard:
    ws = wallet_settings.get_wallet_settings(account_id)
    if ws is None:
        raise _refuse(account_id, W.NOT_CONFIGURED, "settings")
    try:
        token = parse_apay_payload(apay_payload)
        transaction_id = token_transaction_id(token)
    except WalletPayloadError as exc:
        raise _refuse(account_id, exc.code, "parse") from None

    now = clock.now()
    if ws.verify_signature or not platform_settings().is_cert:
        roots = wallet_settings.trust_roots_for(ws)
        if not roots:
            raise _refuse(account_id, W.NO_TRUST_ROOT, "trust-roots")
        try:
            wt.verify_signature(token, roots, now=datetime.fromtimestamp(now, UTC))
        except wt.WalletTokenError as exc:
            code, message = signature_refusal(exc.detail, _REASON_CODES.get(exc.reason, W.SIGNATURE_INVALID))
            raise _refuse(account_id, code, exc.reason, message, exc.detail) from None

    secrets = wallet_settings.load_secrets(ws)
    try:
        decrypted = wt.decrypt_ec_v1(token, secrets.payment_processing_private_key, ws.merchant_identifier,
                                     secrets.payment_processing_certificate)
    except wt.WalletTokenError as exc:
        raise _refuse(account_id, _REASON_CODES.get(exc.reason, W.DECRYPT_FAILED), exc.reason) from None

    try:
        check_amount_and_currency(decrypted, amount, currency)
        card = card_from_payment_data(decrypted, transaction_id, payment_network(token),
                                      datetime.fromtimestamp(now, UTC).date())
    except WalletPayloadError as exc:
        raise _refuse(account_id, exc.code, "payment-data") from None
    finally:
        decrypted.clear()  # the clear payment data lives no longer than needed

    if not signals.claim(f"WALLETTXN#{transaction_id}", "USED", int(now) + REPLAY_RETENTION_SECONDS, int(now),
                         {"account_id": account_id}):
        raise _refuse(account_id, W.REPLAYED, "replay")
    _log.info("wallet token accepted", extra={"account_id": account_id, "event": "wallet-accepted"})
    return card
