"""Foundation figures: Lambda init of every function (app.py import, with .pyc, this venv's interpreter), warm
partner/validate in-process and over HTTP, DynamoDB round trips per request. Prints JSON. Init + first request
on python3.13, with and without .pyc, beside a naive handler: bench_cold_start.py."""

from __future__ import annotations

import base64
import json
import statistics
import time
import urllib.request

from bench.common import INTERPRETER, ROOT, cold_import_ms, in_process_platform, percentile, runner_subprocess


def cold_imports() -> dict[str, object]:
    """Per function: Lambda's init (app.py import: the route and the AWS clients), with .pyc; the first request is
    not in it (bench_cold_start.py has init + first request)."""
    out: dict[str, object] = {"mode": "with .pyc (compiled first), init only, no request", "interpreter": INTERPRETER}
    for p in sorted((ROOT / "functions").glob("*/app.py")):
        app_ms, route_ms = cold_import_ms(p)
        out[p.parent.name] = {"init_ms": app_ms, "route_import_left_for_first_call_ms": route_ms}
    return out


def warm_in_process(n: int = 300) -> dict[str, float | str]:
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
    result = {"init_median_with_pyc": cold_imports(), "partner_validate_in_process": warm_in_process(),
              "partner_validate_http_local_runner": warm_http()}
    print(json.dumps({"foundation": result}, indent=2))
    return result


if __name__ == "__main__":
    main()
