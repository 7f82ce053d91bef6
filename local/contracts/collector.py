"""The collector API (CollectorApi): the fraud device-collection script and the endpoint it reports to."""

from __future__ import annotations

from typing import Any

from local.contracts import errors
from local.contracts.common import codes, document, obj, parameter, ref, response, text
from vaultcore.fraud.collector import _MAX_BODY, _PID, DEVICE_TRANS_ID

CLIENT_ID = r"[a-f0-9]{20}"


def build() -> dict[str, Any]:
    n, s = {"type": "number"}, {"type": "string"}
    schemas = {
        "CollectorErrorCode": codes(errors.COLLECTOR_CODES, "`errCode` of the collector's error body."),
        "CollectorError": obj({"success": {"const": False}, "errCode": ref("CollectorErrorCode"), "errMessage": s},
                              ("success", "errCode", "errMessage")),
        "Signals": obj({
            "userAgent": s, "languages": {"type": "array", "items": s, "maxItems": 10}, "timeZone": s,
            "tzOffset": {"type": ["number", "null"], "description": "Minutes; bounded to -840..840."},
            "screen": obj({"width": n, "height": n, "colorDepth": n, "pixelRatio": n}, closed=False),
            "platform": s, "hardwareConcurrency": n, "cookieEnabled": {"type": "boolean"},
            "webdriver": {"type": "boolean"}, "canvasHash": s,
        }, closed=False, description="What the script gathers. Only these members are kept, each bounded (texts "
                                     "cut at 35-512 characters, numbers clamped); the rest is dropped."),
        "Report": obj({
            "dvci": text(DEVICE_TRANS_ID, "The device transaction id (the script tag's `dvci`): sent as "
                                          "`device_trans_id` in the gateway call."),
            "pid": text(_PID, "The page load's id: a second page load reporting the same dvci flags it `reused`."),
            "sid": text(description="The script tag's session id (debugging), cut at 64 characters."),
            "signals": ref("Signals"),
        }, ("dvci", "pid", "signals"), closed=False),
        "ReportReceived": obj({"received": {"const": True},
                               "reused": {"type": "boolean",
                                          "description": "The dvci was reported by another page load."}},
                              ("received", "reused")),
    }
    client = parameter("client_id", "path", "The account's collector client id (`POST /admin/v1/accounts/{id}/"
                                            "fraud-client`); unknown or disabled: 404.", text(CLIENT_ID))
    paths = {
        "/cdn/cs/{client_id}": {"get": {
            "operationId": "collectorScript", "tags": ["collector"], "summary": "The collector script",
            "description": "Requested as `/cdn/cs/<client_id>.js` (API Gateway path parameters are whole segments, "
                           "so `{client_id}` is `<client_id>.js` here; without `.js`: 404). Include it on every "
                           "checkout page: `<script id=\"bcn\" dvc=\"a\" dvct=\"800\" dvci=\"<new GUID>\" "
                           "sid=\"<session>\" src=\"{collector_url}/cdn/cs/<client_id>.js\"></script>`.",
            "security": [{}],
            "parameters": [parameter("client_id", "path", "`<client_id>.js`.", text(CLIENT_ID + r"\.js"))],
            "responses": {
                "200": response("The script.", content={"application/javascript": {"schema": s}}),
                "404": response("Unknown or disabled client id.", ref("CollectorError")),
                "400": response("Refused by the input gate (400).", ref("CollectorError")),
                "500": response("Internal error (1).", ref("CollectorError")),
            },
        }},
        "/cdn/cs/{client_id}/collect": {"post": {
            "operationId": "collectorReport", "tags": ["collector"], "summary": "A device report",
            "description": f"Posted once per page load by the script (text/plain JSON: no preflight, no cookies), "
                           f"at most {_MAX_BODY} bytes. Stored 24 hours by client id and dvci.",
            "security": [{}],
            "parameters": [client],
            "requestBody": {"required": True, "content": {"text/plain": {"schema": ref("Report")},
                                                          "application/json": {"schema": ref("Report")}}},
            "responses": {
                "200": response("Stored.", ref("ReportReceived")),
                "400": response("Invalid report (400).", ref("CollectorError")),
                "404": response("Unknown or disabled client id (404).", ref("CollectorError")),
                "413": response("The report is over 8 KiB (413).", ref("CollectorError")),
                "500": response("Internal error (1).", ref("CollectorError")),
            },
        }},
    }
    return document(
        api="collector", title="Vault fraud collector API",
        description="The device-collection script and its report endpoint (docs/integrators/fraud-scoring.md). Errors: "
                    "`{success: false, errCode, errMessage}`.",
        paths=paths, schemas=schemas, tags=[{"name": "collector"}])
