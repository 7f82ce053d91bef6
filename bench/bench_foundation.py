"""Foundation figures: cold import of every function, warm partner/validate in-process and over HTTP,
DynamoDB round trips per request. Prints JSON."""

from __future__ import annotations

import base64
import json
import statistics
import time
import urllib.request

from bench.common import ROOT, cold_import_ms, in_process_platform, percentile, runner_subprocess


def cold_imports() -> dict[str, dict[str, float]]:
    """Per function: app.py import (what Lambda's init imports) and the route module the first call imports."""
    out = {}
    for p in sorted((ROOT / "functions").glob("*/app.py")):
        app_ms, route_ms = cold_import_ms(p)
        out[p.parent.name] = {"app_import_ms": app_ms, "first_call_route_import_ms": route_ms,
                              "total_ms": round(app_ms + route_ms, 1)}
    return out


def warm_in_process(n: int = 300) -> dict[str, float]:
    from tests.helpers import admin, api_event
    from vaultcore.auth.hmac_scheme import build_hmac_header
    from vaultcore.store.aws import ddb_calls, reset_ddb_calls

    with in_process_platform() as platform:
        _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "bench", "apiSecurity": "hmac"})
        key = base64.b64decode(partner["hmacKey"])
        path, body = "/api/partner/validate", b'{"reference": "bench"}'
        times, calls = [], []
        for i in range(n + 20):
            event = api_event("POST", path, body, {"Authorization": build_hmac_header(partner["partnerId"], key,
                                                                                    path, body)})
            reset_ddb_calls()
            t = time.perf_counter()
            out = platform.invoke("PartnerValidateFunction", event)
            elapsed = (time.perf_counter() - t) * 1000
            assert out["statusCode"] == 200, out
            if i >= 20:  # warm only
                times.append(elapsed)
                calls.append(ddb_calls())
    return {"median_ms": round(statistics.median(times), 3), "p95_ms": percentile(times, 0.95),
            "dynamodb_calls_per_request": max(calls), "note": "moto in-process stands in for DynamoDB/KMS"}


def warm_http(n: int = 200) -> dict[str, float]:
    from vaultcore.auth.hmac_scheme import build_hmac_header

    with runner_subprocess() as (base_url, demo):
        partner = demo["partner"]
        key = base64.b64decode(partner["hmacKey"])
        path, body = "/api/partner/validate", b'{"reference": "bench"}'
        times = []
        for i in range(n + 20):
            req = urllib.request.Request(base_url + path, data=body, method="POST", headers={
                "Authorization": build_hmac_header(partner["partnerId"], key, path, body),
                "Content-Type": "application/json"})
            t = time.perf_counter()
            with urllib.request.urlopen(req) as resp:
                resp.read()
            if i >= 20:
                times.append((time.perf_counter() - t) * 1000)
    return {"median_ms": round(statistics.median(times), 3), "p95_ms": percentile(times, 0.95)}


def main() -> dict:
    result = {"cold_import_median": cold_imports(), "partner_validate_in_process": warm_in_process(),
              "partner_validate_http_local_runner": warm_http()}
    print(json.dumps({"foundation": result}, indent=2))
    return result


if __name__ == "__main__":
    main()
