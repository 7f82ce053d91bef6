"""POST /api/device/validate: is this device registered to this partner, active, on the expected firmware?

Errors (public facts): 1201 serial missing (400); 1202 not found, 1203 not active, 1204 firmware mismatch (409).
Ours: 1205 ``clientId`` not a string (400; omit it or send null for a device registered without one).
Firmware is compared only when both the registry and the request know it. The device record is the parser's
per-container cached one (``load_device``): a warm call costs only the HMAC nonce; a device disabled through the
management API stops validating within RECORD_CACHE_SECONDS, as it stops decrypting.
"""

from __future__ import annotations

from vaultcore.api.http import Request, Response
from vaultcore.api.secure import json_object_body, reference_of, success
from vaultcore.auth.authenticator import authenticate
from vaultcore.devices.registry import load_device
from vaultcore.errors import Conflict, ValidationError

__all__ = ["device_validate"]


def device_validate(request: Request) -> Response:
    body = json_object_body(request)
    reference = reference_of(body)
    caller = authenticate(request, body, body_credentials=True)
    serial = body.get("serial")
    if not isinstance(serial, str) or not serial.strip():
        raise ValidationError("serial is required.", code=1201)
    client_id = body.get("clientId")
    if client_id is not None and not isinstance(client_id, str):
        raise ValidationError("clientId must be a string (or null).", code=1205)
    device = load_device(caller.partner_id, serial.strip(), client_id)  # cached as the parser's (RECORD_CACHE_SECONDS)
    if device is None:
        raise Conflict("Device not found.", code=1202)
    if device.status != "active":
        raise Conflict("Device is not active.", code=1203)
    firmware = body.get("firmware")
    if isinstance(firmware, str) and firmware and device.firmware and firmware != device.firmware:
        raise Conflict("Device firmware does not match the registered firmware.", code=1204)
    return success({}, reference)
