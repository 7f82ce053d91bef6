"""The gateway's read of an eToken: once, retry-aware, bound to the account and the instance's ``customId``.

Issue 27 moved the rules into the tokens service, which every path goes through: an eToken's policy (owner
account, ``custom_id``, tender; once-only; the CVV's token and salt removed by the first read) is written with its
tokens (:mod:`vaultcore.iframe.capture`) and checked by :func:`vaultcore.tokens.service.gateway_read`, for
``etoken=`` and for the ``bfid=`` read step alike, and by every detokenization (:mod:`vaultcore.tokens.policy`).
The gateway's refusals: gone, expired or another account's 306 (one answer: it tells nothing of another account's
eTokens), another ``custom_id`` 216, another tender 106, used already (by ``etoken=`` or ``bfid=``) 309. A refused
request reads nothing: the eToken stays good for the right one. Ten concurrent SALEs with one eToken: exactly one
passes (tests/integration/test_iframe.py).
"""

from __future__ import annotations

from vaultcore.gateway.errors import E
from vaultcore.tokens.policy import CVV_FIELDS

__all__ = ["CVV_FIELD", "ETOKEN_USED"]

CVV_FIELD = next(iter(CVV_FIELDS))  # vault_token_card_verification
ETOKEN_USED = E.ETOKEN_USED  # 309, docs/integrators/gateway.md "Gateway error codes": the eToken has already been read
