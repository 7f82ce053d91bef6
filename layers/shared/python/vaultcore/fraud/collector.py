"""Device collection: fraud client ids, the collector script and the endpoint it reports to.

Client ids (spec: "issued by the operator") are created through the management API for a gateway account:

* Registry ``FRAUDCLIENT#<client_id>`` / ``CLIENT``: ``account_id``, ``status`` (active | disabled);
* Registry ``FRAUDACCOUNT#<account_id>`` / ``CLIENTS``: the account's client ids (scoring looks signals up
  under each active one).

``GET /cdn/cs/{client_id}.js`` serves :file:`collector.js` for an active client id (404 otherwise; API Gateway
path parameters are whole segments, so the route is ``/cdn/cs/{client_id}`` and the ``.js`` suffix is
required here). ``POST /cdn/cs/{client_id}/collect`` stores what the script sends, in the Signals table:

    pk ``DEVICE#<client_id>#<device_trans_id>``, sk ``SIGNALS``: ``signals`` (validated, bounded), ``device_id``
    (keyed HMAC of the stable signals: the same browser gets the same id across page loads, which the
    cards-per-device rule counts by), ``pid`` (the page load that first reported this id), ``reused``,
    ``reports``, ``expiresAt`` (24 hours; treated as absent once past).

A device transaction id must be new on every page load (spec). A report carrying a known id from ANOTHER page
load (a different ``pid``) sets ``reused``; further reports of the same page load are accepted silently.

Nothing here reads card data: the script never touches form fields. The source IP is not stored.
"""

from __future__ import annotations

import json
import re
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Any

from vaultcore import clock
from vaultcore.api.http import Request, Response, json_response
from vaultcore.cache import ContainerCache
from vaultcore.errors import NotFound, ValidationError
from vaultcore.fraud.keys import fingerprint
from vaultcore.logs import get_logger
from vaultcore.store import registry, signals

__all__ = [
    "SIGNAL_TTL_SECONDS",
    "DEVICE_TRANS_ID",
    "create_client",
    "list_clients",
    "disable_client",
    "active_client_ids",
    "device_signals",
    "device_report",
    "collector_route",
    "serve_script",
    "collect",
]

SIGNAL_TTL_SECONDS = 24 * 3600
DEVICE_TRANS_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_CLIENT_ID = re.compile(r"^[a-f0-9]{20}$")
_PID = re.compile(r"^[A-Za-z0-9]{1,40}$")
_MAX_BODY = 8192
_log = get_logger("fraud.collector")
_records: ContainerCache[Any] = ContainerCache("record_cache_seconds", max_items=2048)


# ------------------------------------------------------------------------------------------- client ids


def _client_view(client_id: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"client_id": client_id, "account_id": item["account_id"], "status": item.get("status", "active"),
            "script_path": f"/cdn/cs/{client_id}.js", "created_at": item.get("created_at")}


def create_client(account_id: str) -> dict[str, Any]:
    from vaultcore.wallet.merchants import require_account

    require_account(account_id)
    client_id = secrets.token_hex(10)
    item = {"pk": f"FRAUDCLIENT#{client_id}", "sk": "CLIENT", "account_id": account_id, "status": "active",
            "created_at": int(clock.now())}
    registry.put_new(item)
    current = registry.get(f"FRAUDACCOUNT#{account_id}", "CLIENTS", consistent=True) or {}
    ids = [*current.get("client_ids", []), client_id][-10:]
    registry.put({"pk": f"FRAUDACCOUNT#{account_id}", "sk": "CLIENTS", "client_ids": ids})
    _records.invalidate(("account", account_id))
    return _client_view(client_id, item)


def list_clients(account_id: str) -> list[dict[str, Any]]:
    from vaultcore.wallet.merchants import require_account

    require_account(account_id)
    ids = (registry.get(f"FRAUDACCOUNT#{account_id}", "CLIENTS", consistent=True) or {}).get("client_ids", [])
    out = []
    for client_id in ids:
        item = registry.get(f"FRAUDCLIENT#{client_id}", "CLIENT", consistent=True)
        if item is not None:
            out.append(_client_view(client_id, item))
    return out


def disable_client(account_id: str, client_id: str) -> dict[str, Any]:
    item = registry.get(f"FRAUDCLIENT#{client_id}", "CLIENT", consistent=True) if _CLIENT_ID.match(client_id) else None
    if item is None or item.get("account_id") != account_id:
        raise NotFound("Fraud client not found.")
    item = registry.update_fields(f"FRAUDCLIENT#{client_id}", "CLIENT", {"status": "disabled"})
    _records.invalidate(("client", client_id))
    _records.invalidate(("account", account_id))
    return _client_view(client_id, item)


def _client_account(client_id: str) -> str | None:
    """The account of an active client id (cached), or None."""
    if not _CLIENT_ID.match(client_id):
        return None

    def load() -> str:
        item = registry.get(f"FRAUDCLIENT#{client_id}", "CLIENT") or {}
        return item.get("account_id", "") if item.get("status") == "active" else ""

    return _records.get_or_load(("client", client_id), load) or None


def active_client_ids(account_id: str) -> list[str]:
    def load() -> list[str]:
        ids = (registry.get(f"FRAUDACCOUNT#{account_id}", "CLIENTS") or {}).get("client_ids", [])
        return [cid for cid in ids if _client_account(cid) == account_id]

    cached = _records.get(("account", account_id))
    if cached is None:
        cached = load()
        _records.put(("account", account_id), cached)
    return list(cached)


def device_signals(account_id: str, device_trans_id: str) -> dict[str, Any] | None:
    """The stored report for this device transaction id under any of the account's active client ids."""
    now = int(clock.now())
    for client_id in active_client_ids(account_id)[-3:][::-1]:
        item = signals.get(f"DEVICE#{client_id}#{device_trans_id}", "SIGNALS", now)
        if item is not None:
            return item
    return None


def device_report(account_id: str, client_id: str, device_trans_id: str) -> dict[str, Any]:
    """What was stored for one device transaction id (management API: the operator's view of a report)."""
    item = registry.get(f"FRAUDCLIENT#{client_id}", "CLIENT", consistent=True) if _CLIENT_ID.match(client_id) else None
    if item is None or item.get("account_id") != account_id or not DEVICE_TRANS_ID.match(device_trans_id):
        raise NotFound("Device report not found.")
    report = signals.get(f"DEVICE#{client_id}#{device_trans_id}", "SIGNALS", int(clock.now()))
    if report is None:
        raise NotFound("Device report not found.")
    return {k: report.get(k) for k in ("client_id", "device_trans_id", "sid", "signals", "device_id", "reused",
                                       "reports", "first_seen", "last_seen", "expiresAt")}


# ------------------------------------------------------------------------------------------- the script


@lru_cache(maxsize=1)
def _script() -> str:
    return (Path(__file__).with_name("collector.js")).read_text(encoding="utf-8")


def _client_from_path(request: Request, suffix: str) -> str:
    raw = request.path_params.get("client_id", "")
    if suffix:
        if not raw.endswith(suffix):
            raise NotFound("Not found.")
        raw = raw[: -len(suffix)]
    if _client_account(raw) is None:
        raise NotFound("Not found.")
    return raw


def serve_script(request: Request) -> Response:
    _client_from_path(request, ".js")
    return Response(200, _script(), {
        "Content-Type": "application/javascript; charset=utf-8", "Cache-Control": "public, max-age=300",
        "X-Content-Type-Options": "nosniff", "Access-Control-Allow-Origin": "*"})


# ------------------------------------------------------------------------------------------- collection


def _text(value: Any, high: int) -> str:
    return value[:high] if isinstance(value, str) else ""


_DECIMALS = 6  # what a screen size or pixel ratio needs; the stored number stays within DynamoDB's number type


def _number(value: Any, low: float, high: float) -> float | int:
    """A reported number, clamped to ``low..high`` and rounded to 6 decimal places: a browser sends any JSON
    number (``1e-200`` too), and DynamoDB stores 38 significant digits with exponents -130..125, so a value
    outside that (an underflow) must not reach the item (it would fail the write: HTTP 500)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return 0
    clamped = min(max(value, low), high)
    return clamped if isinstance(clamped, int) else round(float(clamped), _DECIMALS)


def _clean_signals(raw: Any) -> dict[str, Any]:
    """Keep the documented members only, each bounded: the stored item stays small and holds no surprises."""
    if not isinstance(raw, dict):
        raise ValidationError("signals must be an object.")
    screen: dict[str, Any] = raw["screen"] if isinstance(raw.get("screen"), dict) else {}
    languages: list[Any] = raw["languages"] if isinstance(raw.get("languages"), list) else []
    offset = raw.get("tzOffset")
    return {
        "userAgent": _text(raw.get("userAgent"), 512),
        "languages": [_text(x, 35) for x in languages[:10] if isinstance(x, str)],
        "timeZone": _text(raw.get("timeZone"), 64),
        "tzOffset": int(_number(offset, -840, 840)) if isinstance(offset, int | float) and not isinstance(offset, bool) else None,
        "screen": {k: _number(screen.get(k), 0, 100000) for k in ("width", "height", "colorDepth", "pixelRatio")},
        "platform": _text(raw.get("platform"), 64),
        "hardwareConcurrency": int(_number(raw.get("hardwareConcurrency"), 0, 1024)),
        "cookieEnabled": raw.get("cookieEnabled") is True,
        "webdriver": raw.get("webdriver") is True,
        "canvasHash": _text(raw.get("canvasHash"), 128),
    }


def _device_id(clean: dict[str, Any]) -> str:
    stable = json.dumps([clean["userAgent"], clean["languages"], clean["timeZone"], clean["screen"],
                         clean["platform"], clean["hardwareConcurrency"], clean["canvasHash"]], sort_keys=True)
    return fingerprint("device", stable)


def collect(request: Request) -> Response:
    client_id = _client_from_path(request, "")
    account_id = _client_account(client_id)
    if len(request.body) > _MAX_BODY:
        raise ValidationError("The report is too large.", code=413, status=413)
    body = request.json()
    if not isinstance(body, dict):
        raise ValidationError("The report must be a JSON object.")
    dvci, pid = body.get("dvci"), body.get("pid")
    if not isinstance(dvci, str) or not DEVICE_TRANS_ID.match(dvci):
        raise ValidationError("dvci must be 1 to 64 letters, digits, hyphens or underscores.")
    if not isinstance(pid, str) or not _PID.match(pid):
        raise ValidationError("pid must be 1 to 40 letters or digits.")
    clean = _clean_signals(body.get("signals"))
    now = int(clock.now())
    pk = f"DEVICE#{client_id}#{dvci}"
    fresh = signals.claim(pk, "SIGNALS", now + SIGNAL_TTL_SECONDS, now, {
        "account_id": account_id, "client_id": client_id, "device_trans_id": dvci, "sid": _text(body.get("sid"), 64),
        "pid": pid, "signals": clean, "device_id": _device_id(clean), "reused": False, "reports": 1,
        "first_seen": now, "last_seen": now})
    reused = False
    if not fresh:
        existing = signals.get(pk, "SIGNALS", now) or {}
        reused = existing.get("pid") != pid or bool(existing.get("reused"))
        fields: dict[str, Any] = {"last_seen": now}
        if reused:
            fields["reused"] = True
        signals.update_fields(pk, "SIGNALS", fields, add={"reports": 1})
        if reused:
            _log.warning("device transaction id reused", extra={"account_id": account_id, "event": "dvci-reused"})
    return json_response(200, {"received": True, "reused": reused}, {"Access-Control-Allow-Origin": "*"})


def collector_route(request: Request) -> Response:
    """The CollectorFunction's one route: the script (GET) or a report (POST)."""
    if request.method == "GET":
        return serve_script(request)
    return collect(request)
