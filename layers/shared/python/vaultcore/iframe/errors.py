"""Payment iFrame error codes: ``{success: false, errCode, errMessage}`` (the management API's body, DESIGN.md §5).

Configurations, instances and submissions answer these (docs/integrators/iframe.md "Payment iFrame error codes"); the
page itself never shows a code to the shopper: the client library gets it through ``onError`` (``code`` names below).
"""

from __future__ import annotations

from vaultcore.errors import VaultError

__all__ = ["IframeError", "CODES", "CONFIG_INVALID", "INSTANCE_INVALID", "ACCOUNT_NOT_READY", "TOKEN_INVALID",
           "SUBMISSION_LIMIT", "SUBMISSION_INVALID", "METHOD_NOT_ALLOWED", "NOT_FOUND", "BODY_INVALID",
           "ONERROR_CODES"]

BODY_INVALID = 400  # the body is not one JSON object (or the input gate refused the request)
NOT_FOUND = 404  # no such configuration of this account
CONFIG_INVALID = 901  # a configuration member is missing or invalid (the message names it)
INSTANCE_INVALID = 902  # an instance request member is invalid
ACCOUNT_NOT_READY = 903  # the account has no tokenization partner, or antiFraud without fraud scoring
TOKEN_INVALID = 904  # the bearer token is unknown, expired, or its configuration is gone (HTTP 401)
SUBMISSION_LIMIT = 905  # the bearer token has used its submissions (HTTP 409)
SUBMISSION_INVALID = 906  # a submitted field is invalid (the message names the field, never its value)
METHOD_NOT_ALLOWED = 907  # the payment method is not allowed by the configuration (HTTP 403)

#: errCode -> (HTTP status, meaning): the table of docs/integrators/iframe.md.
CODES: dict[int, tuple[int, str]] = {
    BODY_INVALID: (400, "the body is not one JSON object, or the input gate refused the request"),
    1003: (401, "authentication failed (HTTP Basic `account_id:api_accesskey`, or the path's account is not "
                "the caller's, or the account refused until the end of a window in which it failed 20 times: "
                "Gateway authentication in the gateway's documentation); one answer for every cause"),
    NOT_FOUND: (404, "no such configuration of this account"),
    CONFIG_INVALID: (400, "a configuration member is missing or invalid (the message names it)"),
    INSTANCE_INVALID: (400, "an instance request member is invalid (the message names it)"),
    ACCOUNT_NOT_READY: (409, "the account has no tokenization partner, or `antiFraud` without the account option "
                             "`fraud_scoring` and a fraud client id"),
    TOKEN_INVALID: (401, "the bearer token is unknown or expired, or its configuration was deleted"),
    SUBMISSION_LIMIT: (409, "the bearer token has used its submissions (SUBMISSION_LIMIT)"),
    SUBMISSION_INVALID: (400, "a submitted field is invalid (the message names the field, never its value)"),
    METHOD_NOT_ALLOWED: (403, "the payment method is not allowed by the configuration"),
}

#: ``onError({code})`` of the client library (checkout.js) -> meaning.
ONERROR_CODES: dict[str, str] = {
    "TOKEN_INVALID": "the bearer token is unknown, expired or its configuration was deleted: no fields are shown",
    "ORIGIN_NOT_ALLOWED": "the page's origin is not in allowedParentDomains (the browser also refuses the frame: "
                          "CSP frame-ancestors); no fields are shown",
    "FRAME_TIMEOUT": "the iframe did not report within loadTimeoutMs (default 10 s): refused by the browser "
                     "(CSP frame-ancestors) or unreachable",
    "SUBMISSION_LIMIT": "the bearer token has used its submissions: start a new instance",
    "VALIDATION": "submit() found invalid fields (they are marked in the iframe); `fields` names them",
    "SUBMISSION_FAILED": "the platform refused the submission (`errCode` tells why) or could not be reached",
    "BAD_OPTIONS": "mount() was called without a bearerToken or a container",
}


class IframeError(VaultError):
    """A payment iFrame failure with a documented errCode and its HTTP status (:data:`CODES`)."""

    def __init__(self, code: int, message: str | None = None) -> None:
        status, meaning = CODES[code]
        super().__init__(message or meaning[:1].upper() + meaning[1:] + ".", code=code, status=status)
