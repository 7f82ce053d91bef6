"""Decryptx, as the original's clients call it: ``POST /api/decrypt`` and ``GET /api/healthcheck`` (parser API).

``POST /api/decrypt`` decrypts up to :data:`MAX_VALUES` named values read from one device, for readers whose
payload is not one of the two layouts the parser reads (:mod:`vaultcore.devices.parser`). Body: the caller's
credentials (``partnerId``/``partnerKey`` of a key-security partner, or an ``Authorization`` header), ``serial``
and ``clientId`` of a device registered to the partner (1202 unknown, 1203 inactive: HTTP 409), ``reference``,
``hasCcData`` (``"1"``, the default, or ``"0"``), ``decryptionParameters`` ``{sequenceNumber, cbcVector,
encoding}`` and ``encrypted: [{name, value}]``. ``encoding`` (``base64``, the default, or ``hex``) is how the
values, the sequence number (the DUKPT KSN) and the CBC vector are written, and how the decrypted values are
answered. Each value is decrypted with the device's BDK and its profile's key variant by the same decryptors as
the parser (software DUKPT, or the HSM for HSM-held keys), padding included, as the original answers.

The answer is ``{success, messageId, reference?, decrypted: [{name, value, failed, code, message}]}``, one entry
per value in order: a value succeeds or fails on its own (``failed``, the public ``code`` as a string and a fixed
``message``: 2601 not whole blocks, 2602 wrong vector length, 2600 the HSM refused, 2105 the card-data check).
Request errors (2101 ``encrypted``, 2102 encoding, 2400 sequence number) fail the call. With ``hasCcData`` "1" a
value whose input already holds a card number, or whose output holds none, fails with 2105: the original's
check that encrypted data is what it claims to be.

Clear values go only into the answer to the authenticated partner (as the parser answers them): nothing here
logs a value, a KSN or a key; messages are fixed texts.

``POST /api/decrypt-ext`` records a decryption done elsewhere, as the original's logging hook: the caller and the
device are checked as for ``decrypt``; the counts (never a value) go to the log and the outcome to the
DecryptResults metric (:func:`decrypt_external_endpoint`).

``GET /api/healthcheck?partnerId=&partnerKey=&serial=&clientId=&reference=`` checks what a decryption needs for
that device without a payload: the credentials (1101-1105), the device (1202/1203), its BDK (the key store or the
HSM answers) and the DUKPT engine: a synthetic block encrypted and decrypted under the device's BDK and a
synthetic KSN (an HSM key: one decryption). The original's ``encryptedName``/``encryptedValue`` carry no sequence
number, so they are not decrypted (docs/integrators/parser.md); the answer is ``{success: true, messageId,
reference?, decrypted: []}``.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from typing import Any

from vaultcore import metrics
from vaultcore.api.http import Request, Response
from vaultcore.api.secure import json_object_body, reference_of, success
from vaultcore.auth.authenticator import authenticate
from vaultcore.cards.luhn import luhn_valid
from vaultcore.crypto import dukpt
from vaultcore.devices.decryptors import decryptor_for
from vaultcore.devices.parser import ParserError, active_device
from vaultcore.devices.profiles import profile_for
from vaultcore.devices.registry import Bdk, Device, bdk_key_material, load_bdk
from vaultcore.errors import DependencyError, ValidationError, VaultError
from vaultcore.logs import get_logger

__all__ = ["decrypt_endpoint", "decrypt_external_endpoint", "healthcheck_endpoint", "MAX_VALUES", "ENCRYPTED_INVALID", "ENCODING_INVALID",
           "CARD_DATA_CHECK"]

#: Values per decrypt call (the original's limit).
MAX_VALUES = 100
ENCRYPTED_INVALID = 2101
ENCODING_INVALID = 2102
CARD_DATA_CHECK = 2105
_log = get_logger("devices.decryptx")
#: 13 to 19 digits, alone or inside text: a card number if Luhn-valid (the hasCcData check).
_DIGIT_RUNS = re.compile(r"\d{13,19}")


def _decode(text: Any, encoding: str, what: str) -> bytes:
    """``text`` in ``encoding`` (hex: an even number of hex digits; base64: standard, padded) as bytes."""
    if not isinstance(text, str) or not text:
        raise ValidationError(f"{what} must be a non-empty {encoding} string.", code=ENCODING_INVALID)
    try:
        if encoding == "hex":
            return bytes.fromhex(text)
        return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        raise ValidationError(f"{what} is not valid {encoding}.", code=ENCODING_INVALID) from None


def _encode(data: bytes, encoding: str) -> str:
    return data.hex().upper() if encoding == "hex" else base64.b64encode(data).decode("ascii")


def _holds_card_number(data: bytes) -> bool:
    text = data.decode("latin-1")
    return any(luhn_valid(m) for m in _DIGIT_RUNS.findall(text))


def _device(partner_id: str, serial: Any, client_id: Any) -> tuple[Device, Bdk]:
    device = active_device(partner_id, serial, client_id, serial_name="serial")
    bdk = load_bdk(device.bdk_id)
    if bdk is None:
        raise DependencyError("Internal error: the device's key is not available.")
    return device, bdk


def _variant(device: Device) -> str:
    profile = profile_for(device.device_type)
    return profile.key_variant if profile is not None else dukpt.KeyVariant.DATA.value


def _parameters(body: dict[str, Any], bdk: Bdk) -> tuple[str, bytes, bytes | None]:
    """(encoding, KSN, CBC vector or None) of ``decryptionParameters``."""
    params = body.get("decryptionParameters")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ValidationError("decryptionParameters must be an object.", code=ENCODING_INVALID)
    encoding = params.get("encoding", "base64")
    if encoding not in ("base64", "hex"):
        raise ValidationError("decryptionParameters.encoding must be base64 or hex.", code=ENCODING_INVALID)
    if not params.get("sequenceNumber"):
        raise ParserError("decryptionParameters.sequenceNumber (the DUKPT KSN) is required.", code=2400)
    ksn = _decode(params["sequenceNumber"], encoding, "decryptionParameters.sequenceNumber")
    if len(ksn) != dukpt.ksn_length(bdk.scheme):
        raise ParserError("The sequence number has the wrong length for this device's key.", code=2400)
    vector = params.get("cbcVector")
    iv = _decode(vector, encoding, "decryptionParameters.cbcVector") if vector not in (None, "") else None
    return encoding, ksn, iv


def _entries(body: dict[str, Any]) -> list[tuple[str, str]]:
    raw = body.get("encrypted")
    if not isinstance(raw, list) or not raw or len(raw) > MAX_VALUES:
        raise ValidationError(f"encrypted must be an array of 1 to {MAX_VALUES} values.", code=ENCRYPTED_INVALID)
    out = []
    for i, entry in enumerate(raw):
        if not (isinstance(entry, dict) and isinstance(entry.get("name"), str)
                and isinstance(entry.get("value"), str) and entry["value"]):
            raise ValidationError(f"encrypted[{i}] must have a string name and a non-empty string value.",
                                  code=ENCRYPTED_INVALID)
        out.append((entry["name"], entry["value"]))
    return out


def _echo(reference: str | None) -> str:
    """The original's answers always carry ``reference`` (its document requires it): empty when none was sent."""
    return "" if reference is None else reference


def _failed(name: str, code: int, message: str) -> dict[str, Any]:
    return {"name": name, "value": "", "failed": True, "code": str(code), "message": message}


def _decrypt_one(bdk: Bdk, ksn: bytes, iv: bytes | None, variant: str, encoding: str, check_card: bool,
                 name: str, value: str) -> dict[str, Any]:
    ciphertext = _decode(value, encoding, f"the value of {name[:64]}")
    if check_card and _holds_card_number(ciphertext):
        return _failed(name, CARD_DATA_CHECK, "The value holds a card number in clear: it was not encrypted.")
    try:
        plaintext = decryptor_for(bdk).decrypt(bdk, ksn, ciphertext, variant, iv=iv)
    except dukpt.KsnError:
        raise ParserError("The sequence number is not a valid KSN.", code=2400) from None
    except dukpt.DecryptionError as exc:
        code = getattr(exc, "code", 2601)
        return _failed(name, code, "The value cannot be decrypted (length or vector).")
    except ValidationError as exc:  # the HSM refused this value (2600), or cannot use the key's variant (2605)
        return _failed(name, exc.code, "The value cannot be decrypted with this device's key.")
    if check_card and not _holds_card_number(plaintext):
        return _failed(name, CARD_DATA_CHECK, "The decrypted value holds no card number (hasCcData is 1).")
    return {"name": name, "value": _encode(plaintext, encoding), "failed": False, "code": "", "message": ""}


def decrypt_endpoint(request: Request) -> Response:
    try:
        response = _decrypt(request)
    except VaultError as exc:
        metrics.decrypt_result(exc.code)  # the DecryptResults metric, by public code, as the parser's
        raise
    metrics.decrypt_result("success")
    return response


def _decrypt(request: Request) -> Response:
    body = json_object_body(request)
    reference = reference_of(body)
    caller = authenticate(request, body, body_credentials=True)
    has_cc = body.get("hasCcData", "1")
    if has_cc not in ("1", "0"):
        raise ValidationError('hasCcData must be "1" or "0".', code=ENCODING_INVALID)
    device, bdk = _device(caller.partner_id, body.get("serial"), body.get("clientId"))
    encoding, ksn, iv = _parameters(body, bdk)
    entries = _entries(body)
    variant = _variant(device)
    decrypted = [_decrypt_one(bdk, ksn, iv, variant, encoding, has_cc == "1", name, value)
                 for name, value in entries]
    return success({"decrypted": decrypted}, _echo(reference))


def _count(body: dict[str, Any], member: str) -> int:
    value = body.get(member)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value != int(value) \
            or value > 1_000_000:
        raise ValidationError(f"{member} must be a whole number of values.", code=ENCRYPTED_INVALID)
    return int(value)


def decrypt_external_endpoint(request: Request) -> Response:
    """``POST /api/decrypt-ext``: the original's record of a decryption done elsewhere (a partner's own HSM). The
    caller and its device are checked as for ``decrypt``; the outcome is counted in the DecryptResults metric
    (``success``, or 1303 "nothing could be decrypted") and logged as counts only (``encrypted``, ``decrypted``, serial), never a
    value. The answer mirrors ``success``, ``reference`` and ``decrypted``, as the original's."""
    body = json_object_body(request)
    reference = reference_of(body)
    caller = authenticate(request, body, body_credentials=True)
    device, _bdk = _device(caller.partner_id, body.get("serial"), body.get("clientId"))
    encrypted, decrypted = _count(body, "encrypted"), _count(body, "decrypted")
    succeeded = body.get("success")
    if not isinstance(succeeded, bool):
        raise ValidationError("success must be true or false.", code=ENCRYPTED_INVALID)
    metrics.decrypt_result("success" if succeeded else 1303)  # 1303: nothing could be decrypted
    _log.info("external decryption recorded", extra={
        "partner_id": caller.partner_id, "serial": device.serial, "encrypted": encrypted, "decrypted": decrypted,
        "succeeded": succeeded, "event": "decrypt_external"})
    return success({"success": succeeded, "decrypted": decrypted}, _echo(reference))


def healthcheck_endpoint(request: Request) -> Response:
    """The device-level health check of the module docstring (credentials in the query, as the original)."""
    query = request.query
    body: dict[str, Any] = {k: query[k] for k in ("partnerId", "partnerKey", "reference") if k in query}
    reference = reference_of(body)
    caller = authenticate(request, body, body_credentials=True)
    device, bdk = _device(caller.partner_id, query.get("serial"), query.get("clientId"))
    variant = _variant(device)
    # A synthetic KSN (random key set id, counter 1): no device ever used it, and it costs one derivation.
    ksn = secrets.token_bytes(dukpt.ksn_length(bdk.scheme) - 3) + b"\x00\x00\x01"
    block = secrets.token_bytes(dukpt.block_size(bdk.scheme))
    if bdk.hsm_key_arn:
        decryptor_for(bdk).decrypt(bdk, ksn, block, variant)  # the HSM answers: its plaintext is unknown
    else:
        sealed = dukpt.encrypt(bdk.scheme, bdk_key_material(bdk), ksn, block, variant)
        if decryptor_for(bdk).decrypt(bdk, ksn, sealed, variant) != block:
            raise VaultError("Internal error: the decryption engine failed its round trip.")
    return success({"decrypted": []}, _echo(reference))
