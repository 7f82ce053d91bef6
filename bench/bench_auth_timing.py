"""Failures that look alike in time (issue 12): the median time of each cause of the uniform 1003 and of the
gateway's 102, over interleaved samples, beside a successful request measured in the same run.

Every cause is sampled in turn (round robin), so drift of the machine affects all of them alike. Unknown ids
are measured twice: one fixed id probed repeatedly, and a fresh id on every probe (the attacker's best case).
Prints JSON; the spread is (max median - min median) / min median over the failure causes.
"""

from __future__ import annotations

import json
import os
import secrets
import statistics
import time
from collections.abc import Callable

from bench.common import in_process_platform

os.environ["LOG_LEVEL"] = "ERROR"  # thousands of expected authentication failures: their warnings are noise here

SAMPLES = 1000


def _spread(medians: dict[str, float]) -> float:
    return round((max(medians.values()) - min(medians.values())) / min(medians.values()) * 100, 1)


def _interleave(cases: dict[str, Callable[[], Callable[[], dict]]], expect: dict[str, Callable[[dict], bool]],
                samples: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(samples + 20):
        for name, make in cases.items():
            invoke = make()
            t = time.perf_counter()
            out = invoke()
            elapsed = (time.perf_counter() - t) * 1000
            assert expect[name](out), (name, out)
            if i >= 20:
                times[name].append(elapsed)
    return {name: round(statistics.median(v), 3) for name, v in times.items()}


def partner_failures(samples: int = SAMPLES) -> dict:
    from tests.helpers import admin, api_event
    from vaultcore import clock
    from vaultcore.auth.hmac_scheme import build_hmac_header

    with in_process_platform() as platform:
        _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "bench", "apiSecurity": "hmac"})
        _, disabled = admin(platform, "POST", "/admin/v1/partners", {"name": "off", "apiSecurity": "hmac"})
        admin(platform, "POST", f"/admin/v1/partners/{disabled['partnerId']}/disable")
        pid, key = partner["partnerId"], partner["hmacKey"].encode()
        path, body = "/api/partner/validate", b'{"reference": "timing"}'
        used = build_hmac_header(pid, key, path, body)
        first = platform.invoke("PartnerValidateFunction", api_event("POST", path, body, {"Authorization": used}))
        assert first["statusCode"] == 200

        def call(header: str) -> Callable[[], dict]:
            event = api_event("POST", path, body, {"Authorization": header})
            return lambda: platform.invoke("PartnerValidateFunction", event)

        now = int(clock.now())
        cases = {
            "success (reference)": lambda: call(build_hmac_header(pid, key, path, body)),
            "unknown partner (same id)": lambda: call(build_hmac_header("nosuchpartner", key, path, body)),
            "unknown partner (fresh id)": lambda: call(build_hmac_header("p" + secrets.token_hex(8), key, path, body)),
            "disabled partner": lambda: call(build_hmac_header(disabled["partnerId"], disabled["hmacKey"].encode(),
                                                               path, body)),
            "wrong signature": lambda: call(build_hmac_header(pid, b"wrong key", path, body)),
            "stale timestamp": lambda: call(build_hmac_header(pid, key, path, body, timestamp=now - 3600)),
            "reused nonce": lambda: call(used),
        }
        expect = {name: (lambda out: out["statusCode"] == 401) for name in cases}
        expect["success (reference)"] = lambda out: out["statusCode"] == 200
        medians = _interleave(cases, expect, samples)
    failures = {k: v for k, v in medians.items() if k != "success (reference)"}
    return {"samples_per_cause": samples, "median_ms": medians, "failure_spread_percent": _spread(failures),
            "target": "every failure median within 15% of the others"}


def gateway_failures(samples: int = SAMPLES) -> dict:
    from tests.helpers import admin, api_event

    with in_process_platform() as platform:
        _, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}})
        _, off = admin(platform, "POST", "/admin/v1/accounts", {"options": {}})
        admin(platform, "PATCH", f"/admin/v1/accounts/{off['account_id']}", {"status": "disabled"})
        sale = {"transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
                "card_expiration": "1230", "transaction_amount": "1.00"}

        def call(account_id: str, key: str) -> Callable[[], dict]:
            event = api_event("POST", "/api/qsapi/3.8", json.dumps({"account_id": account_id, "api_accesskey": key,
                                                                     **sale}).encode(),
                              {"Content-Type": "application/json"})
            return lambda: platform.invoke("GatewayFunction", event)

        def fresh_id() -> str:
            return str(secrets.randbelow(10**12)).zfill(12)

        cases = {
            "unknown account (same id)": lambda: call("000000000001", account["api_accesskey"]),
            "unknown account (fresh id)": lambda: call(fresh_id(), account["api_accesskey"]),
            "wrong access key": lambda: call(account["account_id"], "0" * 32),
            "disabled account": lambda: call(off["account_id"], off["api_accesskey"]),
        }

        def is_102(out: dict) -> bool:
            return json.loads(out["body"]).get("error_code") == 102

        medians = _interleave(cases, {name: is_102 for name in cases}, samples)
    return {"samples_per_cause": samples, "median_ms": medians, "failure_spread_percent": _spread(medians),
            "target": "every failure median within 15% of the others"}


def main(samples: int = SAMPLES) -> dict:
    out = {"hmac_1003_causes": partner_failures(samples), "gateway_102_causes": gateway_failures(samples)}
    print(json.dumps({"auth_timing": out}, indent=2))
    return out


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python"))
    main(int(sys.argv[1]) if len(sys.argv) > 1 else SAMPLES)
