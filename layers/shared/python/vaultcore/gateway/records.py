"""The gateway transaction response of a stored transaction item (pure: no I/O).

One definition for every reader of a transaction item: the direct QSAPI answer and a keyed replay
(:mod:`vaultcore.gateway.service`), the reporting interface, and the postback outbox relay, which builds a
postback from the Transactions table's stream image (:func:`vaultcore.gateway.postbacks.message_from_item`). It
lives apart from the service so that the relay does not import the payment flow (processor calls, the wallet,
token services) to format a response.
"""

from __future__ import annotations

from typing import Any

from vaultcore.gateway import processor

__all__ = ["RESPONSE_FIELDS", "response_from_item"]

#: The gateway transaction response, in this order; (name, always present).
RESPONSE_FIELDS: tuple[tuple[str, bool], ...] = (
    ("transaction_id", True), ("tender_type", True), ("transaction_timestamp", True), ("card_brand", True),
    ("transaction_type", True), ("last4", True), ("card_expiration", True), ("authorization_code", True),
    ("authorization_message", True), ("request_amount", True), ("transaction_amount", True),
    ("first_name", False), ("last_name", False), ("keyed", True), ("swiped", True), ("entry_mode", True),
    ("transaction_approved", True), ("avs_response", False), ("cvv2_response", False),
    ("transaction_description", False), ("balance", False), ("currency", True),
    ("custom_id", False), ("token_id", False), ("batch_id", False),
    ("dynamic_descriptor_id", False), ("dynamic_descriptor", False),  # echoed when a SALE names one
    ("error", True), ("error_code", True),
    ("error_message", True), ("error_msg", True),
)


def response_from_item(item: dict[str, Any]) -> dict[str, Any]:
    """The transaction response of a stored transaction (the direct answer is built the same way)."""
    out: dict[str, Any] = {}
    for name, always in RESPONSE_FIELDS:
        if name in ("request_amount", "transaction_amount"):
            out[name] = round(int(item.get(name.replace("amount", "cents"), 0)) / 100, 2)
        elif name == "balance":  # issue 20: echoed when sent, a number like the amounts
            if item.get("balance_cents") is not None:
                out[name] = round(int(item["balance_cents"]) / 100, 2)
        elif name == "card_brand":  # the original's capitals, also for records stored before them (issue 20)
            out[name] = processor.gateway_brand(item.get(name))
        elif always or item.get(name) is not None:
            out[name] = item.get(name)
    return out
