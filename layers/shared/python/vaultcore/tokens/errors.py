"""Public errors of the tokenization service (codes 3000-3099), shared by the service, the endpoint and the
management routes.

Every message names the field, template or rule at fault, never a value, a token or a key: messages are
returned to callers and logged (PCI DSS 3.3, 10.2). 3010 is deliberately one message for every bfid that does
not verify (malformed, forged, altered, another partner's, unknown or retired key version), so a caller cannot
probe which case applies.

| code | HTTP | meaning |
|---|---|---|
| 3000 | 400 | templateRef missing or not a string |
| 3001 | 400 | templateRef unknown for this partner (404 on the management API) |
| 3002 | 400 | a field name is not in the template |
| 3003 | 400 | a value (or token) is not valid for its field: characters, Luhn, MMYY, ABA checksum, e-mail ... |
| 3004 | 400 | a value (or token) is shorter or longer than the field allows |
| 3005 | 400 | the same field name appears twice in values |
| 3010 | 400 | the bfid is invalid (malformed, forged, altered, another partner's, retired key version) |
| 3011 | 400 | nothing stored under the bfid, or its one-hour read window has passed |
| 3012 | 400 | the field is irreversible: its tokens are never detokenized |
| 3013 | 400 | the field is outside its active window |
| 3014 | 400 | the bfid was issued for another templateRef |
| 3015 | 400 | a token was not issued under the bfid (wrong, mistyped or another bfid's token; field not tokenized) |
| 3016 | 400 | too many distinct tokens for one bfid (its text would exceed 1,024 characters) |
| 3017 | 400 | the bfid was deleted: nothing under it detokenizes or reads again |
| 3018 | 409 | the bfid's tokens were read already (read succeeds once per bfid) |
| 3019 | 400 | the bfid's tokens were not kept for read (tokenize with ?omit=1 or ?omit=2) |
| 3020 | 400 | values missing, empty, not an array, or more than 64 entries |
| 3021 | 400 | a values entry is not an object with string name and value |
| 3022 | 400 | omit is not a boolean (body) or not 0, 1 or 2 (query) |
| 3023 | 400 | the Idempotency-Key header of read is not 1 to 255 printable ASCII characters |
| 3040 | 403 | the partner does not hold the detokenize permission |
| 3041 | 403 | the template's accessMode does not allow detokenization |
| 3042 | 400 | batch entries (`batches` or `items`) missing, empty, not an array, or more than the batch limit |
| 3043 | 400 | (batch item) the item is not an object, or its reference is not a string of at most 50 characters |
| 3044 | 503 | (batch item) not processed: the request's work budget ran out; send the item again |
| 3045 | 403 | the tokenization's use policy refuses this use: an iFrame capture (or gateway capture) is used only by its
  account, through the gateway; an eToken once |
| 3046 | 400 | a CVV is never kept, returned or detokenized from a token (vault_token_card_verification) |
| 3030 | 400 | device headers sent but the template has no card number field to fill |
| 3050 | 400 | management: the template definition is invalid (the message says which member and rule) |
| 3060 | 404 | management: no such tokenization key version |
| 3061 | 409 | management: the current key version cannot be retired (rotate first) |
| 3062 | 409 | management: a concurrent key rotation won; retry |
"""

from __future__ import annotations

from vaultcore.errors import Conflict, NotFound, PermissionDenied, ValidationError

__all__ = [
    "TokenServiceError",
    "TokenNotFound",
    "TokenConflict",
    "TEMPLATE_REF_MISSING",
    "TEMPLATE_UNKNOWN",
    "FIELD_UNKNOWN",
    "VALUE_INVALID",
    "VALUE_LENGTH",
    "FIELD_DUPLICATE",
    "BFID_INVALID",
    "READ_WINDOW",
    "FIELD_IRREVERSIBLE",
    "FIELD_INACTIVE",
    "BFID_OTHER_TEMPLATE",
    "TOKEN_NOT_ISSUED",
    "TOO_MANY_TOKENS",
    "VALUES_MISSING",
    "VALUES_ENTRY",
    "OMIT_INVALID",
    "IDEMPOTENCY_KEY_INVALID",
    "BFID_DELETED",
    "ALREADY_READ",
    "NOT_READABLE",
    "DETOKENIZE_NOT_PERMITTED",
    "ACCESS_MODE_REFUSED",
    "BATCH_ITEMS",
    "BATCH_ITEM_INVALID",
    "BATCH_BUDGET",
    "POLICY_REFUSED",
    "CVV_REFUSED",
    "PolicyRefused",
    "TokenPermissionDenied",
    "NO_CARD_FIELD",
    "TEMPLATE_INVALID",
    "KEY_VERSION_UNKNOWN",
    "KEY_CURRENT",
    "KEY_ROTATION_RACE",
    "BFID_INVALID_MESSAGE",
]

TEMPLATE_REF_MISSING = 3000
TEMPLATE_UNKNOWN = 3001
FIELD_UNKNOWN = 3002
VALUE_INVALID = 3003
VALUE_LENGTH = 3004
FIELD_DUPLICATE = 3005
BFID_INVALID = 3010
READ_WINDOW = 3011
FIELD_IRREVERSIBLE = 3012
FIELD_INACTIVE = 3013
BFID_OTHER_TEMPLATE = 3014
TOKEN_NOT_ISSUED = 3015
TOO_MANY_TOKENS = 3016
VALUES_MISSING = 3020
VALUES_ENTRY = 3021
OMIT_INVALID = 3022
IDEMPOTENCY_KEY_INVALID = 3023
BFID_DELETED = 3017
ALREADY_READ = 3018
NOT_READABLE = 3019
DETOKENIZE_NOT_PERMITTED = 3040
ACCESS_MODE_REFUSED = 3041
BATCH_ITEMS = 3042
BATCH_ITEM_INVALID = 3043
BATCH_BUDGET = 3044
POLICY_REFUSED = 3045
CVV_REFUSED = 3046
NO_CARD_FIELD = 3030
TEMPLATE_INVALID = 3050
KEY_VERSION_UNKNOWN = 3060
KEY_CURRENT = 3061
KEY_ROTATION_RACE = 3062

BFID_INVALID_MESSAGE = "The bfid is not valid."


class TokenServiceError(ValidationError):
    """A tokenization request cannot be served; ``code`` is one of this module's 30xx codes (HTTP 400)."""

    code = BFID_INVALID
    status = 400
    default_message = BFID_INVALID_MESSAGE


class TokenNotFound(NotFound):
    """Management API: a template or key version does not exist (HTTP 404, 30xx code)."""


class TokenConflict(Conflict):
    """Management API: the request conflicts with the key ring's state (HTTP 409, 30xx code)."""


class TokenPermissionDenied(PermissionDenied):
    """The secure API's detokenize endpoints: the partner or the template does not allow it (HTTP 403, 3040/3041)."""


class PolicyRefused(TokenPermissionDenied):
    """3045: the tokenization's use policy refuses this use (:mod:`vaultcore.tokens.policy`). ``reason`` says which
    rule (``account``, ``custom_id``, ``method``, ``used``, ``path``), for the gateway's own error codes only: the
    message is the same for every reason, so a caller learns nothing of another account's tokenizations."""

    code = POLICY_REFUSED
    default_message = ("The tokenization's use policy does not allow this use: it is used only by its account, "
                       "through the gateway.")

    def __init__(self, reason: str) -> None:
        super().__init__(self.default_message, code=POLICY_REFUSED)
        self.reason = reason
