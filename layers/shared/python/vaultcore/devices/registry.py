"""Devices and their base derivation keys (BDKs).

A BDK is imported once (clear hex, or two or three clear key components each with its key check value as a key
ceremony delivers them, in cert only; in prod an AWS Payment Cryptography key ARN, so the clear key never exists
outside the HSM) and stored KMS-wrapped with its key check value. A device is registered to one
partner under ``serial`` + ``clientId``: serials must be unique per partner when no client id is used.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any

from vaultcore import clock
from vaultcore.cache import ContainerCache
from vaultcore.crypto.kcv import kcv_aes, kcv_tdes
from vaultcore.devices.profiles import profile_for, profile_names
from vaultcore.errors import Conflict, NotFound, ValidationError
from vaultcore.settings import settings
from vaultcore.store import registry
from vaultcore.store.keys import unwrap_secret, wrap_secret

__all__ = ["Device", "Bdk", "import_bdk", "get_bdk", "load_bdk", "bdk_key_material", "register_device",
           "find_device", "load_device", "list_devices", "set_device_status", "SCHEMES"]

SCHEMES = {"tdes": 16, "aes128": 16, "aes256": 32}
_HEX = re.compile(r"[0-9A-Fa-f]+")
_SERIAL = re.compile(r"[A-Za-z0-9._:\-]{1,64}")
_KCV = re.compile(r"[0-9A-Fa-f]{6}")
_HSM_ARN = re.compile(r"arn:aws[a-z-]*:payment-cryptography:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9]+")
_device_cache: ContainerCache[Device] = ContainerCache("record_cache_seconds", 4096)
_bdk_cache: ContainerCache[Bdk] = ContainerCache("record_cache_seconds", 1024)


@dataclass(frozen=True)
class Bdk:
    bdk_id: str
    scheme: str
    kcv: str
    envelope: dict[str, str] | None
    hsm_key_arn: str | None

    def public_view(self) -> dict[str, Any]:
        view: dict[str, Any] = {"bdkId": self.bdk_id, "scheme": self.scheme, "kcv": self.kcv}
        if self.hsm_key_arn:
            view["hsmKeyArn"] = self.hsm_key_arn
        return view


@dataclass(frozen=True)
class Device:
    partner_id: str
    serial: str
    client_id: str
    device_type: str
    bdk_id: str
    firmware: str
    status: str

    def public_view(self) -> dict[str, Any]:
        return {"partnerId": self.partner_id, "serial": self.serial, "clientId": self.client_id or None,
                "deviceType": self.device_type, "bdkId": self.bdk_id, "firmware": self.firmware or None,
                "status": self.status}


def _kcv(scheme: str, key: bytes) -> str:
    return kcv_tdes(key) if scheme == "tdes" else kcv_aes(key)


def _clear_key_from_components(scheme: str, components: Any) -> bytes:
    """The key the components XOR into, each component checked against its own KCV first.

    Refusals name the component by its index and never echo a component or a computed check value.
    """
    size = SCHEMES[scheme]
    if not isinstance(components, list) or not 2 <= len(components) <= 3:
        raise ValidationError("components must be a list of 2 or 3 key components.")
    parts: list[bytes] = []
    kcvs: list[str] = []
    for index, item in enumerate(components):
        name = f"components[{index}]"
        if not isinstance(item, dict):
            raise ValidationError(f"{name} must be an object with component (hex) and kcv (6 hex characters).")
        hex_value, kcv = item.get("component"), item.get("kcv")
        # Spaces are allowed: ceremony forms print components and check values in groups of four.
        hex_value = hex_value.replace(" ", "") if isinstance(hex_value, str) else None
        if hex_value is None or not _HEX.fullmatch(hex_value) or len(hex_value) % 2:
            raise ValidationError(f"{name}.component must be hex.")
        kcv = kcv.replace(" ", "") if isinstance(kcv, str) else None
        if kcv is None or not _KCV.fullmatch(kcv):
            raise ValidationError(f"{name}.kcv (6 hex characters, the component's key check value) is required.")
        parts.append(bytes.fromhex(hex_value))
        kcvs.append(kcv.upper())
    if len({len(p) for p in parts}) != 1:
        raise ValidationError("components must all have the same length.")
    if len(parts[0]) != size:
        raise ValidationError(f"each component must be {2 * size} hex characters for scheme {scheme}.")
    if len(set(parts)) != len(parts):
        raise ValidationError("components must be different from each other (a component is repeated).")
    for index, (part, kcv) in enumerate(zip(parts, kcvs, strict=True)):
        if _kcv(scheme, part) != kcv:
            raise ValidationError(f"components[{index}].kcv does not match components[{index}].component.")
    key = bytes(size)
    for part in parts:
        key = bytes(a ^ b for a, b in zip(key, part, strict=True))
    if not any(key):
        raise ValidationError("components combine into an all-zero key.")
    return key


def import_bdk(body: dict[str, Any]) -> dict[str, Any]:
    scheme = body.get("scheme")
    if not isinstance(scheme, str) or scheme not in SCHEMES:
        raise ValidationError("scheme must be one of tdes, aes128, aes256.")
    bdk_id = body.get("bdkId") or "bdk-" + secrets.token_hex(6)
    if not isinstance(bdk_id, str) or not re.fullmatch(r"[A-Za-z0-9_\-]{3,64}", bdk_id):
        raise ValidationError("bdkId must be 3 to 64 letters, digits, '-' or '_'.")
    item: dict[str, Any] = {"pk": f"BDK#{bdk_id}", "sk": "KEY", "type": "bdk", "bdkId": bdk_id, "scheme": scheme,
                            "createdAt": int(clock.now())}
    given = [name for name in ("bdk", "components", "hsmKeyArn") if body.get(name) is not None]
    if len(given) > 1:
        raise ValidationError("Give one of bdk, components or hsmKeyArn.")
    if body.get("hsmKeyArn") is not None:
        arn = body["hsmKeyArn"]
        if not isinstance(arn, str) or not _HSM_ARN.fullmatch(arn):
            raise ValidationError("hsmKeyArn must be an AWS Payment Cryptography key ARN.")
        kcv = body.get("kcv")
        if not isinstance(kcv, str) or not re.fullmatch(r"[0-9A-Fa-f]{6}", kcv):
            raise ValidationError("kcv (6 hex characters, as AWS Payment Cryptography reports it) is required with hsmKeyArn.")
        item.update(hsmKeyArn=arn, kcv=kcv.upper())
    else:
        if not settings().is_cert:
            raise ValidationError("Clear BDKs (bdk or components) are accepted in the certification environment "
                                  "only; use hsmKeyArn.")
        expected = body.get("kcv")
        if expected is not None and (not isinstance(expected, str) or not _KCV.fullmatch(expected)):
            raise ValidationError("kcv must be 6 hex characters.")
        if body.get("components") is not None:
            key = _clear_key_from_components(scheme, body["components"])
        else:
            clear = body.get("bdk")
            if not isinstance(clear, str) or not _HEX.fullmatch(clear) or len(clear) != 2 * SCHEMES[scheme]:
                raise ValidationError(f"bdk (or components) must be {2 * SCHEMES[scheme]} hex characters for "
                                      f"scheme {scheme}.")
            key = bytes.fromhex(clear)
        item["kcv"] = _kcv(scheme, key)
        if expected is not None and expected.upper() != item["kcv"]:
            raise ValidationError("kcv does not match the key's check value.")
        item["wrapped"] = wrap_secret(key, {"purpose": "bdk", "bdkId": bdk_id})
        del key
    try:
        registry.put_new(item)
    except registry.ConditionFailed as exc:
        raise Conflict("A BDK with this bdkId already exists.") from exc
    return {"bdkId": bdk_id, "scheme": scheme, "kcv": item["kcv"], **({"hsmKeyArn": item["hsmKeyArn"]}
                                                                      if "hsmKeyArn" in item else {})}


def _bdk_from_item(item: dict[str, Any]) -> Bdk:
    return Bdk(item["bdkId"], item["scheme"], item["kcv"], item.get("wrapped"), item.get("hsmKeyArn"))


def get_bdk(bdk_id: str) -> Bdk:
    item = registry.get(f"BDK#{bdk_id}", "KEY")
    if item is None:
        raise NotFound("BDK not found.")
    return _bdk_from_item(item)


def load_bdk(bdk_id: str) -> Bdk | None:
    cache = _bdk_cache

    def load() -> Bdk | None:
        item = registry.get(f"BDK#{bdk_id}", "KEY")
        return _bdk_from_item(item) if item else None

    return cache.get_or_load(bdk_id, load)


def bdk_key_material(bdk: Bdk) -> bytes:
    """The clear BDK (software mode), unwrapped through the per-container key cache."""
    if bdk.envelope is None:
        raise ValueError("BDK is held in an HSM")
    return unwrap_secret(bdk.envelope, {"purpose": "bdk", "bdkId": bdk.bdk_id})


def _device_from_item(item: dict[str, Any]) -> Device:
    return Device(item["partnerId"], item["serial"], item.get("clientId", ""), item["deviceType"], item["bdkId"],
                  item.get("firmware", ""), item.get("status", "active"))


def _sk(serial: str, client_id: str) -> str:
    return f"DEVICE#{serial}#{client_id}"


def register_device(partner_id: str, body: dict[str, Any]) -> dict[str, Any]:
    serial = body.get("serial")
    device_type = body.get("deviceType")
    bdk_id = body.get("bdkId")
    # Optional members are absent or of their type: null is no value the management document allows.
    client_id = body.get("clientId", "")
    firmware = body.get("firmware", "")
    status = body.get("status", "active")
    if "clientId" in body and client_id == "":
        raise ValidationError("clientId must be 1 to 64 letters, digits, '.', '_', ':' or '-'.")
    if not isinstance(serial, str) or not _SERIAL.fullmatch(serial):
        raise ValidationError("serial is required (1 to 64 letters, digits, '.', '_', ':' or '-').")
    if not isinstance(device_type, str) or profile_for(device_type) is None:
        raise ValidationError(f"deviceType must be one of {', '.join(profile_names())}.")
    if not isinstance(client_id, str) or (client_id and not _SERIAL.fullmatch(client_id)):
        raise ValidationError("clientId must be 1 to 64 letters, digits, '.', '_', ':' or '-'.")
    if not isinstance(firmware, str) or len(firmware) > 64:
        raise ValidationError("firmware must be a string of at most 64 characters.")
    if status not in ("active", "inactive"):
        raise ValidationError("status must be 'active' or 'inactive'.")
    if not isinstance(bdk_id, str) or load_bdk(bdk_id) is None:
        raise ValidationError("bdkId must name an imported BDK.")
    from vaultcore.partners.service import get_partner

    get_partner(partner_id)
    same_serial = registry.query_prefix(f"PARTNER#{partner_id}", f"DEVICE#{serial}#")
    if same_serial and (not client_id or any(not d.get("clientId") for d in same_serial)):
        # Without client ids every serial must be unique (spec: Partner credentials, clientId).
        raise Conflict("A device with this serial is already registered; use a distinct clientId.")
    item = {"pk": f"PARTNER#{partner_id}", "sk": _sk(serial, client_id), "type": "device", "partnerId": partner_id,
            "serial": serial, "clientId": client_id, "deviceType": device_type, "bdkId": bdk_id,
            "firmware": firmware, "status": status, "createdAt": int(clock.now())}
    try:
        registry.put_new(item)
    except registry.ConditionFailed as exc:
        raise Conflict("This serial and clientId are already registered.") from exc
    return _device_from_item(item).public_view()


def find_device(partner_id: str, serial: str, client_id: str | None) -> Device | None:
    item = registry.get(f"PARTNER#{partner_id}", _sk(serial, client_id or ""))
    return _device_from_item(item) if item else None


def load_device(partner_id: str, serial: str, client_id: str | None) -> Device | None:
    """Cached per container (bounded lifetime): a warm decrypt costs no registry read."""
    cache = _device_cache
    return cache.get_or_load((partner_id, serial, client_id or ""), lambda: find_device(partner_id, serial, client_id))


def list_devices(partner_id: str) -> list[dict[str, Any]]:
    return [_device_from_item(i).public_view() for i in registry.query_prefix(f"PARTNER#{partner_id}", "DEVICE#")]


def set_device_status(partner_id: str, serial: str, client_id: str, status: str) -> dict[str, Any]:
    if status not in ("active", "inactive"):
        raise ValidationError("status must be 'active' or 'inactive'.")
    try:
        item = registry.update_fields(f"PARTNER#{partner_id}", _sk(serial, client_id), {"status": status})
    except registry.ConditionFailed as exc:
        raise NotFound("Device not found.") from exc
    cache = _device_cache
    cache.invalidate((partner_id, serial, client_id))
    return _device_from_item(item).public_view()
