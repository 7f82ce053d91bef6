"""Management API: partners, credential rotation, BDKs, devices and device-type profiles (DESIGN.md §5)."""

from __future__ import annotations

from vaultcore.admin.router import created, json_body, ok, route
from vaultcore.api.http import Request, Response
from vaultcore.devices import registry as devices
from vaultcore.devices.profiles import PROFILES
from vaultcore.errors import NotFound, ValidationError
from vaultcore.partners import service as partners


@route("POST", "/admin/v1/partners")
def create_partner(request: Request) -> Response:
    body = json_body(request)
    if "partnerId" in body and body["partnerId"] is None:  # optional, but a string when sent (no null)
        raise ValidationError("partnerId must be 3 to 40 letters or digits.")
    return created(partners.create_partner(body.get("name"), body.get("apiSecurity", partners.default_api_security()), body.get("partnerId")))


@route("GET", "/admin/v1/partners/{partner_id}")
def get_partner(request: Request, partner_id: str) -> Response:
    return ok(partners.get_partner(partner_id).public_view())


@route("POST", "/admin/v1/partners/{partner_id}/disable")
def disable_partner(request: Request, partner_id: str) -> Response:
    return ok(partners.set_partner_status(partner_id, "disabled").public_view())


@route("POST", "/admin/v1/partners/{partner_id}/enable")
def enable_partner(request: Request, partner_id: str) -> Response:
    return ok(partners.set_partner_status(partner_id, "active").public_view())


@route("POST", "/admin/v1/partners/{partner_id}/rotate")
def rotate(request: Request, partner_id: str) -> Response:
    body = json_body(request)
    overlap = body.get("overlapSeconds", partners.DEFAULT_OVERLAP_SECONDS)
    return ok(partners.rotate_credential(partner_id, body.get("kind", ""), overlap))


@route("POST", "/admin/v1/bdks")
def import_bdk(request: Request) -> Response:
    return created(devices.import_bdk(json_body(request)))


@route("GET", "/admin/v1/bdks/{bdk_id}")
def get_bdk(request: Request, bdk_id: str) -> Response:
    return ok(devices.get_bdk(bdk_id).public_view())


@route("POST", "/admin/v1/partners/{partner_id}/devices")
def register_device(request: Request, partner_id: str) -> Response:
    return created(devices.register_device(partner_id, json_body(request)))


@route("GET", "/admin/v1/partners/{partner_id}/devices")
def list_devices(request: Request, partner_id: str) -> Response:
    return ok({"devices": devices.list_devices(partner_id)})


@route("GET", "/admin/v1/partners/{partner_id}/devices/{serial}")
def get_device(request: Request, partner_id: str, serial: str) -> Response:
    device = devices.find_device(partner_id, serial, request.query.get("clientId"))
    if device is None:
        raise NotFound("Device not found.")
    return ok(device.public_view())


@route("PUT", "/admin/v1/partners/{partner_id}/devices/{serial}/status")
def set_device_status(request: Request, partner_id: str, serial: str) -> Response:
    body = json_body(request)
    return ok(devices.set_device_status(partner_id, serial, request.query.get("clientId", ""), body.get("status", "")))


@route("GET", "/admin/v1/device-types")
def device_types(request: Request) -> Response:
    return ok({"deviceTypes": [p.to_dict() for p in PROFILES.values()]})
