"""The error-code tables of the documents, taken from the code's own tables where it has them.

* proxy ``code``: :data:`vaultcore.proxy.errors.PROXY_CODES` (status and meaning);
* gateway ``error_code``: :data:`vaultcore.gateway.errors.ERROR_MESSAGES` (with the wallet and fraud codes of
  :mod:`vaultcore.wallet.errors` merged in) plus 0;
* tokenization codes: the constants of :mod:`vaultcore.tokens.errors` (a constant without a meaning here fails
  the build: a new code must be documented);
* proxy configuration codes (management): :data:`vaultcore.proxy.errors.CONFIG_CODES`.

The secure API and parser codes are spread over the authenticator, the device and decryption modules; their
table is here, and ``tests/unit/test_openapi_contracts.py`` checks it against the tables of docs/integrators/*.md.
"""

from __future__ import annotations

from vaultcore.gateway.errors import ERROR_MESSAGES, FIELD_CODES, client_text
from vaultcore.proxy.errors import CONFIG_CODES, PROXY_CODES
from vaultcore.tokens import errors as token_errors

#: errCode -> meaning (HTTP status in brackets) of the secure API and parser, without the tokenization codes.
SECURE_CODES: dict[int, str] = {
    1: "Internal error: a dependency (key store, decryption service) is unavailable; never a stack trace (HTTP 500).",
    1001: "The request body is not a JSON object (HTTP 400).",
    1002: "`reference` is not a string or longer than 50 characters (HTTP 400).",
    1003: "Authentication required: every authentication failure, one uniform body whatever the cause (HTTP 401).",
    1006: "Refused by the input gate: body too large, JSON nested deeper than 32 or with an array over 10,000 items "
          "or an object over 1,000 members, a lone surrogate, too many or too long headers or query parameters, "
          "text that is not UTF-8 (HTTP 400).",
    1007: "No such route: a path the API does not have (HTTP 404; API Gateway's own answer, whose `messageId` is "
          "its request id).",
    1101: "Body credentials: `partnerId` missing (HTTP 400).",
    1102: "Body credentials: `partnerKey` missing (HTTP 400).",
    1103: "Body credentials of a key-security partner: partner not found (HTTP 401).",
    1104: "Body credentials of a key-security partner: partner disabled (HTTP 401).",
    1105: "Body credentials of a key-security partner: wrong partner key (HTTP 401).",
    1201: "Device serial missing (HTTP 400).",
    1202: "Device not registered to this partner (HTTP 409).",
    1203: "Device not active (HTTP 409).",
    1204: "Device firmware does not match the registered firmware (HTTP 409).",
    1205: "`clientId` is not a string: omit it, or send null, for a device registered without one (HTTP 400).",
    1303: "Nothing could be decrypted (empty plaintext) (HTTP 400).",
    2000: "`deviceType` missing (HTTP 400).",
    2001: "`deviceType` unknown, or not the registered device's type (HTTP 400).",
    2100: "Device payload missing or not hexadecimal, or a payload format the device type does not send (HTTP 400).",
    2101: "Decryptx `decrypt`: `encrypted` missing, empty, more than 100 values, or an entry without a string "
          "`name` and a non-empty string `value`; `decrypt-ext`: a count that is not a whole number, or `success` "
          "not a boolean (HTTP 400).",
    2102: "Decryptx `decrypt`: `decryptionParameters.encoding` not `base64` or `hex`, a value, `sequenceNumber` "
          "or `cbcVector` not in that encoding, or `hasCcData` not \"1\" or \"0\" (HTTP 400).",
    2105: "Decryptx `decrypt`, per value (`hasCcData` \"1\"): the value holds a card number before decryption, "
          "or none after it (the value's `code`, HTTP 200).",
    2110: "Payload size cannot be split into the fields its lengths and flags declare (HTTP 400).",
    2120: "Unsupported status or flags, no encrypted track 1/2, or a payload cipher the device's BDK cannot use "
          "(HTTP 400).",
    2130: "Device frame LRC or checksum wrong (HTTP 400).",
    2140: "The decrypted tracks match no consistent hash reading, or an unhashed track fails its checks (wrong key "
          "or corrupted payload) (HTTP 400).",
    2150: "Device frame malformed (length field, ETX) (HTTP 400).",
    2400: "KSN missing, wrong length, zero counter or too many counter bits set (HTTP 400).",
    2600: "The HSM could not decrypt (HTTP 400).",
    2601: "Ciphertext not a whole number of blocks (HTTP 400).",
    2602: "Wrong IV length (HTTP 400).",
    2603: "The decrypted data is neither a track, EMV data nor a keyed entry (usually the wrong key or variant) "
          "(HTTP 400).",
    2604: "EMV data unreadable (HTTP 400).",
    2605: "Key variant (or AES under a TDES BDK) not available with HSM keys (HTTP 400).",
    2800: "No card number in the decrypted data (HTTP 400).",
}

#: The codes the parser API answers (no firmware check, no tokenization).
PARSER_CODES = {c: m for c, m in SECURE_CODES.items() if c != 1204}

#: Tokenization codes (3000-3099): meaning, and whether only the management API answers them.
TOKEN_CODES: dict[int, tuple[str, bool]] = {
    3000: ("`templateRef` missing or not a string (HTTP 400).", False),
    3001: ("`templateRef` unknown for this partner (HTTP 400; management API: 404).", False),
    3002: ("A field name is not in the template (HTTP 400).", False),
    3003: ("A value (or token) is not valid for its field: characters, Luhn, MMYY, ABA, e-mail, too few characters "
           "to encrypt (HTTP 400).", False),
    3004: ("A value (or token) is shorter or longer than the field allows (HTTP 400).", False),
    3005: ("The same field name appears twice in `values` (HTTP 400).", False),
    3010: ("The bfid is not valid: malformed, forged, altered, another partner's, retired key version (HTTP 400).",
           False),
    3011: ("Nothing stored under the bfid, or its one-hour read window has passed (HTTP 400).", False),
    3012: ("The field is irreversible (HTTP 400).", False),
    3013: ("The field is outside its active window (HTTP 400).", False),
    3014: ("The bfid was issued for another `templateRef` (HTTP 400).", False),
    3015: ("A token was not issued under the bfid (wrong or mistyped token, another bfid's token, a field not "
           "tokenized under it) (HTTP 400).", False),
    3016: ("Too many distinct tokens under one bfid (its text would exceed 1,024 characters) (HTTP 400).", False),
    3017: ("The bfid was deleted (`POST /api/tokenization/delete`): nothing under it detokenizes or reads again "
           "(HTTP 400; proxy and gateway refuse it too).", False),
    3018: ("The bfid's tokens were read already: `read` succeeds once per bfid (HTTP 409).", False),
    3019: ("The bfid's tokens were not kept for `read`: tokenize with `?omit=1` or `?omit=2` (HTTP 400).", False),
    3020: ("`values` missing, empty, not an array, or more than 64 entries (HTTP 400).", False),
    3021: ("A `values` entry is not `{name, value}` with string members (HTTP 400).", False),
    3022: ("`omit` is not a boolean (body), or not 0, 1 or 2 (query) (HTTP 400).", False),
    3023: ("`read`: the `Idempotency-Key` header is not 1 to 255 printable ASCII characters (HTTP 400).", False),
    3030: ("Device headers sent but the template has no `vault_token_card_number` (HTTP 400).", False),
    3040: ("The partner does not hold the detokenize permission (management API; off by default) (HTTP 403).",
           False),
    3041: ("The template's `accessMode` does not allow detokenization (its latest version decides) (HTTP 403).",
           False),
    3042: ("Batch: `batches` (or `items`) missing, empty, not an array, or more than 1,000 entries (HTTP 400).",
           False),
    3043: ("Batch item: not an object, or its `reference` is not a string of at most 50 characters (in the "
           "item's entry).", False),
    3044: ("Batch item: not processed, the request's work budget (5 s) ran out; send it again (in the item's "
           "entry).", False),
    3045: ("The tokenization's use policy refuses this use: an iFrame capture is used only by its merchant "
           "account, through the gateway (`read` still returns its tokens once, never the CVV's) (HTTP 403).",
           False),
    3046: ("A CVV (`vault_token_card_verification`) is never tokenized (but by a payment iFrame capture), "
           "returned or detokenized from a token: send it in clear with the authorization (HTTP 400).", False),
    3050: ("Invalid template: the message names the member and the rule (HTTP 400).", True),
    3060: ("No such tokenization key version (HTTP 404).", True),
    3061: ("The current key version cannot be retired: rotate first (HTTP 409).", True),
    3062: ("A concurrent key rotation won: retry (HTTP 409).", True),
}


def token_code_constants() -> set[int]:
    """Every tokenization code the tokenization service defines (its module's integer constants)."""
    return {getattr(token_errors, name) for name in token_errors.__all__
            if isinstance(getattr(token_errors, name), int)}


def _check_token_codes() -> None:
    missing = token_code_constants() - set(TOKEN_CODES)
    if missing:
        raise SystemExit(f"tokenization codes without a meaning in local/contracts/errors.py: {sorted(missing)}")


def secure_table() -> dict[int, str]:
    """Secure API: authentication, input, device and decryption codes and the tokenization endpoint's codes."""
    _check_token_codes()
    return {**SECURE_CODES, **{c: m for c, (m, admin_only) in TOKEN_CODES.items() if not admin_only}}


def proxy_table() -> dict[int, str]:
    return {code: f"{meaning} (HTTP {status})" for code, (status, meaning) in PROXY_CODES.items()}


#: QSAPI and RSAPI codes answered with another HTTP status than 200 (every other failure is HTTP 200, an
#: input-gate refusal too).
GATEWAY_STATUS = {1: 500, 601: 409}
GATEWAY_NOTES = {100: " Also a request refused by the input gate (docs/integrators/errors.md, \"Input limits "
                      "(every API)\"); HTTP 200 like every gateway failure."}


def gateway_table() -> dict[int, str]:
    table = {0: "No error."}
    for code, message in ERROR_MESSAGES.items():
        status = GATEWAY_STATUS.get(code)
        answered = ("Invalid <variable>" if code in FIELD_CODES and FIELD_CODES[code] is None
                    else client_text(code, message) if code in FIELD_CODES or code in (201, 202) else None)
        prefix = f"`{answered}`: " if answered and answered != message else ""  # issue 20: the text clients get
        table[code] = prefix + message + GATEWAY_NOTES.get(code, "") + (f" (HTTP {status})" if status else "")
    return table

#: Management API errCodes of its own (not tokenization or proxy configuration codes).
ADMIN_CODES: dict[int, str] = {
    1: "Internal error: a dependency is unavailable (HTTP 500).",
    400: "Invalid request: the message names the member and the rule; also a request refused by the input gate "
         "(HTTP 400).",
    404: "No such resource (partner, BDK, device, account, transaction, configuration, ...) (HTTP 404).",
    405: "Method not allowed on this resource (HTTP 405, with the `Allow` header naming the resource's methods).",
    409: "Conflict: the resource already exists (partner id, BDK id, device serial, wallet domain) (HTTP 409).",
}


def management_table() -> dict[int, str]:
    _check_token_codes()
    table = dict(ADMIN_CODES)
    table.update({c: m for c, (m, admin_only) in TOKEN_CODES.items() if admin_only or c == 3001})
    table.update({code: f"Proxy configuration: {meaning} (HTTP 400)" for code, meaning in CONFIG_CODES.items()})
    return table


#: The collector's errCodes (management error family).
COLLECTOR_CODES: dict[int, str] = {
    1: "Internal error (HTTP 500).",
    400: "The report is not a JSON object, or `dvci`, `pid` or `signals` is invalid; or refused by the input "
         "gate (HTTP 400).",
    404: "Unknown or disabled client id, or a script path without `.js` (HTTP 404).",
    413: "The report is larger than 8 KiB, whether the input gate or the route measured it (HTTP 413).",
}
