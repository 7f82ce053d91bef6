"""Wallet (701-719) and fraud scoring (720-729) error codes, in the gateway's ``error_code`` space.

The gateway reserves 7xx for wallets (700 was "wallet payments not enabled on this platform yet", the
placeholder this issue replaces). These codes appear in gateway transaction responses (``error_code``), in
the wallet session endpoint's error body and as ``refusalReasonCode`` in the ``/payments`` format. The table
"Wallet and fraud error codes" of docs/integrators/wallets.md is :data:`WALLET_ERROR_MESSAGES`.

Messages never carry a token, a device account number, a cryptogram or a key.
"""

from __future__ import annotations

from vaultcore.errors import VaultError

__all__ = ["W", "WALLET_ERROR_MESSAGES", "SIGNATURE_REFUSALS", "signature_refusal", "WalletError"]


class W:
    NOT_CONFIGURED = 701
    PAYLOAD_MISSING = 702
    PAYLOAD_MALFORMED = 703
    UNSUPPORTED_VERSION = 704
    KEY_MISMATCH = 705
    DECRYPT_FAILED = 706
    SIGNATURE_INVALID = 707
    CHAIN_INVALID = 708
    SIGNING_TIME = 709
    AMOUNT_MISMATCH = 710
    CURRENCY_MISMATCH = 711
    REPLAYED = 712
    PAYMENT_DATA = 713
    CARD_EXPIRED = 714
    NO_TRUST_ROOT = 715
    REFERRER = 716
    IDENTITY_MISSING = 717
    MERCHANT_ID = 718
    VALIDATION_FAILED = 719
    FRAUD_REJECT = 720
    FRAUD_DEVICE_ID = 721


WALLET_ERROR_MESSAGES: dict[int, str] = {
    W.NOT_CONFIGURED: "Wallet payments are not configured for this account.",
    W.PAYLOAD_MISSING: "apay_payload is required for tender_type APay.",
    W.PAYLOAD_MALFORMED: "apay_payload must be the wallet payment token as JSON text or base64 of it.",
    W.UNSUPPORTED_VERSION: "The wallet token version is not supported (EC_v1 only).",
    W.KEY_MISMATCH: "The wallet token was not encrypted for this merchant's payment processing key.",
    W.DECRYPT_FAILED: "The wallet token could not be decrypted.",
    W.SIGNATURE_INVALID: "The wallet token signature is invalid.",
    W.CHAIN_INVALID: "The wallet token signer does not chain to a configured trust root.",
    W.SIGNING_TIME: "The wallet token was signed outside the accepted window (5 minutes).",
    W.AMOUNT_MISMATCH: "transaction_amount does not match the amount in the wallet token.",
    W.CURRENCY_MISMATCH: "currency does not match the currency in the wallet token.",
    W.REPLAYED: "This wallet token has already been used.",
    W.PAYMENT_DATA: "The wallet token's payment data is incomplete or of an unsupported type.",
    W.CARD_EXPIRED: "The wallet card has expired.",
    W.NO_TRUST_ROOT: "No wallet trust root is configured (account or platform default).",
    W.REFERRER: "referrer is not one of the account's wallet domains.",
    W.IDENTITY_MISSING: "The account has no merchant identity certificate for wallet sessions.",
    W.MERCHANT_ID: "merchant_id does not match the account's wallet merchant identifier.",
    W.VALIDATION_FAILED: "The wallet vendor's merchant validation failed.",
    W.FRAUD_REJECT: "DECLINED: FRAUD SCREENING",
    W.FRAUD_DEVICE_ID: "device_trans_id must be 1 to 64 letters, digits, hyphens or underscores.",
}

#: Why a token's signature was refused (issue 18): the verifier's stable ``detail``
#: (:mod:`vaultcore.crypto.wallet_token`) -> (code, ``error_message``). Same codes and HTTP status as before,
#: one message per cause; docs/integrators/wallets.md "Wallet and fraud error codes" lists them. A message names the
#: failing check only: never a certificate, a key, a subject name or a time from the token.
SIGNATURE_REFUSALS: dict[str, tuple[int, str]] = {
    # 707: the CMS signature itself
    "cms_malformed": (W.SIGNATURE_INVALID, "The wallet token signature is invalid: it is not a well-formed CMS "
                                           "SignedData."),
    "algorithm": (W.SIGNATURE_INVALID, "The wallet token signature is invalid: its algorithm is not ECDSA with "
                                       "SHA-256."),
    "attributes_missing": (W.SIGNATURE_INVALID, "The wallet token signature is invalid: its contentType or "
                                                "messageDigest attribute is missing."),
    "signing_time_missing": (W.SIGNATURE_INVALID, "The wallet token signature is invalid: its signingTime attribute "
                                                  "is missing."),
    "signing_time_invalid": (W.SIGNATURE_INVALID, "The wallet token signature is invalid: its signingTime attribute "
                                                  "is not a valid time."),
    "signer_missing": (W.SIGNATURE_INVALID, "The wallet token signature is invalid: the signing certificate is not "
                                            "included."),
    "digest_mismatch": (W.SIGNATURE_INVALID, "The wallet token signature is invalid: the token's signed fields do "
                                             "not match the signed digest (the token was altered)."),
    "signer_key_type": (W.SIGNATURE_INVALID, "The wallet token signature is invalid: the signing certificate does "
                                             "not hold an EC key."),
    "signature_mismatch": (W.SIGNATURE_INVALID, "The wallet token signature is invalid: it does not verify with the "
                                                "signing certificate's key."),
    # 708: the signing certificate and its chain at the time of the payment
    "unknown_root": (W.CHAIN_INVALID, WALLET_ERROR_MESSAGES[W.CHAIN_INVALID]),
    "certificate_signature": (W.CHAIN_INVALID, "The wallet token signer's chain is invalid: a certificate's "
                                               "signature does not verify with its issuer's key."),
    "chain_too_long": (W.CHAIN_INVALID, "The wallet token signer's chain is longer than 5 certificates."),
    "signer_expired": (W.CHAIN_INVALID, "The wallet token signing certificate has expired."),
    "signer_not_yet_valid": (W.CHAIN_INVALID, "The wallet token signing certificate is not yet valid."),
    "issuer_expired": (W.CHAIN_INVALID, "An issuing certificate of the wallet token signer (intermediate or "
                                        "trust root) has expired."),
    "issuer_not_yet_valid": (W.CHAIN_INVALID, "An issuing certificate of the wallet token signer (intermediate "
                                              "or trust root) is not yet valid."),
    "critical_extension": (W.CHAIN_INVALID, "The wallet token signer's chain is invalid: a certificate has an "
                                            "unknown critical extension."),
    "signer_key_usage": (W.CHAIN_INVALID, "The wallet token signing certificate is not for digital signatures."),
    "issuer_not_ca": (W.CHAIN_INVALID, "The wallet token signer's chain is invalid: an issuing certificate is not "
                                       "a CA."),
    "path_length": (W.CHAIN_INVALID, "The wallet token signer's chain is invalid: an issuing certificate's path "
                                     "length constraint is exceeded."),
    "issuer_key_usage": (W.CHAIN_INVALID, "The wallet token signer's chain is invalid: an issuing certificate may "
                                          "not sign certificates."),
    "leaf_marker": (W.CHAIN_INVALID, "The wallet token signing certificate lacks the wallet vendor's leaf marker "
                                     "(OID 1.2.840.113635.100.6.29)."),
    "intermediate_marker": (W.CHAIN_INVALID, "The wallet token signer's intermediate certificate lacks the wallet "
                                             "vendor's marker (OID 1.2.840.113635.100.6.2.14)."),
    "trust_root_unreadable": (W.CHAIN_INVALID, "A configured wallet trust root is not a readable PEM certificate."),
    "no_trust_root": (W.NO_TRUST_ROOT, WALLET_ERROR_MESSAGES[W.NO_TRUST_ROOT]),
    # 709: the signing time
    "signing_time_too_old": (W.SIGNING_TIME, "The wallet token was signed more than 5 minutes ago."),
    "signing_time_in_future": (W.SIGNING_TIME, "The wallet token's signing time is more than 5 minutes ahead of "
                                               "the platform's clock."),
}


def signature_refusal(detail: str, default_code: int) -> tuple[int, str]:
    """(code, message) for a signature refusal's ``detail``; an unknown detail keeps ``default_code``'s text."""
    return SIGNATURE_REFUSALS.get(detail, (default_code, WALLET_ERROR_MESSAGES[default_code]))


class WalletError(VaultError):
    """A wallet or fraud refusal with its 7xx code. HTTP 200 by default, like every gateway failure."""

    code = W.DECRYPT_FAILED
    status = 200

    def __init__(self, code: int, message: str | None = None, *, status: int = 200) -> None:
        super().__init__(message or WALLET_ERROR_MESSAGES.get(code, "Wallet error."), code=code, status=status)
