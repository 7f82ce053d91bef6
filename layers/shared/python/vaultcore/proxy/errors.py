"""Public error codes of the proxy (spec "Errors": ``{success: false, code, message}``) and of its management.

The spec fixes 8001/500, 8003/401 and 8004/403 and says "HTTP 400 code mapping for the proxy: not shown"; the
400 codes below are this platform's, documented in docs/integrators/proxy.md ("Proxy error codes"). Every message
is a fixed text or names a configuration member, a header name or an upstream error code: never a body, a value, a
URL or an address (the caller controls them and they may carry card data or secrets).

Configuration (management API) errors use the admin family ``{success: false, errCode, errMessage}`` with the
82xx codes below and HTTP 400.
"""

from __future__ import annotations

from vaultcore.errors import PermissionDenied, ValidationError

__all__ = [
    "ProxyError",
    "ProxyConfigError",
    "proxy_denied",
    "INTERNAL",
    "AUTHENTICATION",
    "PERMISSION_DENIED",
    "PAYLOAD_INVALID",
    "PAYLOAD_TOO_LARGE",
    "PARSER_FAILED",
    "TOKENIZATION_FAILED",
    "VAULT_ID_INVALID",
    "PASSTHROUGH_HEADER_MISSING",
    "VALUE_NOT_SUBSTITUTABLE",
    "CONTENT_TYPE_UNSUPPORTED",
    "XML_DOCTYPE_REFUSED",
    "REGEX_TIMEOUT",
    "TARGET_REFUSED",
    "TARGET_UNREACHABLE",
    "TARGET_TIMEOUT",
    "TARGET_RESPONSE_TOO_LARGE",
    "FORWARD_INVALID",
    "REQUIRED_UNMATCHED",
    "TOKEN_NOT_ISSUED",
    "RESPONSE_UNPROCESSABLE",
    "RESPONSE_ACTION_FAILED",
    "RESPONSE_PHASE_CODES",
    "CONFIG_INVALID",
    "CONFIG_PATH_INVALID",
    "CONFIG_REGEX_UNSAFE",
    "CONFIG_TARGET_REFUSED",
    "CONFIG_CREDENTIALS_MISMATCH",
    "PROXY_CODES",
    "CONFIG_CODES",
]

INTERNAL = 8001
AUTHENTICATION = 8003
PERMISSION_DENIED = 8004

PAYLOAD_INVALID = 8100
PAYLOAD_TOO_LARGE = 8101
PARSER_FAILED = 8102
TOKENIZATION_FAILED = 8103
VAULT_ID_INVALID = 8104
PASSTHROUGH_HEADER_MISSING = 8105
VALUE_NOT_SUBSTITUTABLE = 8106
CONTENT_TYPE_UNSUPPORTED = 8107
XML_DOCTYPE_REFUSED = 8108
REGEX_TIMEOUT = 8109
TARGET_REFUSED = 8110
TARGET_UNREACHABLE = 8111
TARGET_TIMEOUT = 8112
TARGET_RESPONSE_TOO_LARGE = 8113
FORWARD_INVALID = 8114
REQUIRED_UNMATCHED = 8115
TOKEN_NOT_ISSUED = 8116
RESPONSE_UNPROCESSABLE = 8117
RESPONSE_ACTION_FAILED = 8118
#: The codes of a failure after the target answered (response actions): the target received the request.
RESPONSE_PHASE_CODES = frozenset({RESPONSE_UNPROCESSABLE, RESPONSE_ACTION_FAILED})

CONFIG_INVALID = 8200
CONFIG_PATH_INVALID = 8201
CONFIG_REGEX_UNSAFE = 8202
CONFIG_TARGET_REFUSED = 8203
CONFIG_CREDENTIALS_MISMATCH = 8204

#: code -> (HTTP status, meaning) of the proxy endpoint; the table of docs/integrators/proxy.md is generated from the
#: same words.
PROXY_CODES: dict[int, tuple[int, str]] = {
    INTERNAL: (500, "Internal or unexpected error (the proxy log holds the detail)."),
    AUTHENTICATION: (401, "Authentication error (any cause: the body never says which)."),
    PERMISSION_DENIED: (403, "Permission denied: the path's partner is not the authenticated one, the configuration "
                             "does not exist for this partner, or an action's authorization no longer matches "
                             "the partner's credentials."),
    PAYLOAD_INVALID: (400, "The body cannot be parsed as its Content-Type says (JSON, XML, URL-form, UTF-8 text)."),
    PAYLOAD_TOO_LARGE: (400, "The body exceeds a cap: 1 MiB, JSON depth 32, JSON array length 10,000, 1,000 form "
                             "fields, or the forwarded request exceeds 1 MiB."),
    PARSER_FAILED: (400, "The parser action failed: dev-* headers missing, device unknown or inactive, payload "
                         "undecryptable (the message carries the parser's own 1xxx/2xxx code)."),
    TOKENIZATION_FAILED: (400, "Tokenization or detokenization failed: unknown template or field, invalid value or "
                               "token (the message carries the tokenization service's 3xxx code)."),
    VAULT_ID_INVALID: (400, "The vault-id header is missing (a detokenize action found tokens) or is not a token "
                            "identifier of this partner."),
    PASSTHROUGH_HEADER_MISSING: (400, "The header named by the passthrough authorization's headerName is missing."),
    VALUE_NOT_SUBSTITUTABLE: (400, "A value at a configured path is an object or array, or a substituted value "
                                   "cannot be written (too many matches, invalid replacement)."),
    CONTENT_TYPE_UNSUPPORTED: (400, "The configuration addresses the body with jsonpath/xpath but the Content-Type "
                                    "is missing or not JSON, XML or URL-form."),
    XML_DOCTYPE_REFUSED: (400, "The XML body has a DOCTYPE or entity declaration (XXE, billion laughs): refused "
                               "before parsing."),
    REGEX_TIMEOUT: (400, "The configuration's patterns ran out of time on this body: one regex search over its "
                         "0.5 s limit, or all the pattern work of the request (regex, jsonpath, xpath; substitutions "
                         "and masks) over 2 s in all. The request was not forwarded (a response action reports it as 8118; a "
                         "response mask only keeps the response body out of the stored log)."),
    TARGET_REFUSED: (400, "The target is refused by the egress policy (not https, IP literal, internal name, or a "
                          "name resolving to a loopback, private, link-local, metadata or reserved address)."),
    TARGET_UNREACHABLE: (400, "The target could not be resolved or connected to (DNS, TCP or TLS failure)."),
    TARGET_TIMEOUT: (400, "The target did not answer within the time budget (25 s in all)."),
    TARGET_RESPONSE_TOO_LARGE: (400, "The target's response exceeds 4 MiB."),
    FORWARD_INVALID: (400, "The request to forward is invalid (a header value with CR/LF or non-Latin-1 text)."),
    REQUIRED_UNMATCHED: (400, "A substitution marked required matched nothing in the request (the message names it "
                              "as actions[i].substitutions[j]); nothing was forwarded."),
    TOKEN_NOT_ISSUED: (400, "A token at a detokenize path was not issued under the vault-id (a wrong or mistyped "
                            "token, another vault-id's token, or a field not tokenized under it; tokenization code "
                            "3015); nothing was forwarded."),
    RESPONSE_UNPROCESSABLE: (400, "Response actions are configured but the target's response body cannot be "
                                  "processed: it does not parse as its Content-Type (JSON, XML, URL-form, UTF-8 "
                                  "text), exceeds a cap, has a DOCTYPE, or is not the kind a jsonpath/xpath needs. "
                                  "The target received the request; its response was withheld (never returned in "
                                  "clear)."),
    RESPONSE_ACTION_FAILED: (400, "A response action failed on the target's response: a value is not valid for its "
                                  "field, a required response substitution matched nothing, an object or array at a "
                                  "path, a regex over its time budget (the message carries the underlying 81xx/3xxx "
                                  "code). The target received the request; its response was withheld."),
}

#: code -> meaning of configuration errors (management API, HTTP 400).
CONFIG_CODES: dict[int, str] = {
    CONFIG_INVALID: "The configuration document is invalid (missing or unknown member, wrong type or enum value, "
                    "source/type rule, limits); the message names the member.",
    CONFIG_PATH_INVALID: "A jsonpath or xpath does not compile or uses a construct outside the supported subset.",
    CONFIG_REGEX_UNSAFE: "A regular expression does not compile, is too long, or is too slow on adversarial input "
                         "(a search over 1 MiB built from its own characters takes more than 0.5 s).",
    CONFIG_TARGET_REFUSED: "target is refused by the egress policy (https only, no IP literal, no internal name).",
    CONFIG_CREDENTIALS_MISMATCH: "A basic/hmac authorization's username/password/secret is not the partner's own.",
}


class ProxyError(ValidationError):
    """A 400 of the proxy endpoint, with one of the 81xx codes above."""

    code = PAYLOAD_INVALID
    status = 400


class ProxyConfigError(ValidationError):
    """A configuration refused by validation (management API), with one of the 82xx codes above."""

    code = CONFIG_INVALID
    status = 400


def proxy_denied() -> PermissionDenied:
    """The one 8004 answer: the same text whether the configuration is missing or belongs to someone else."""
    return PermissionDenied("Permission denied.", code=PERMISSION_DENIED)
