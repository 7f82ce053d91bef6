"""Parser figures: warm decrypts per second per mode and scheme (through the handler, in-process on moto),
the bare DUKPT derivation cost, their ratio, and DynamoDB round trips per warm decrypt. Prints JSON."""

from __future__ import annotations

import json
import statistics
import time

from bench.common import in_process_platform


def _bare_dukpt_ms(scheme: str, n: int = 2000) -> float:
    from vaultcore.crypto import dukpt
    from vaultcore.devices import simulator

    bdk = bytes.fromhex(simulator.DEFAULT_BDK[dukpt.Scheme(scheme)])
    # worst case for TDES: 10 one-bits in the counter
    ksn = bytes.fromhex("FFFF9876543210E003FF" if scheme == "tdes" else "1234567890123456000003FF")
    t = time.perf_counter()
    for _ in range(n):
        dukpt.data_key(scheme, bdk, ksn)
    return (time.perf_counter() - t) * 1000 / n


def main() -> dict:
    from tests.helpers import admin, api_event
    from vaultcore.crypto.dukpt import Scheme
    from vaultcore.devices import simulator
    from vaultcore.store.aws import ddb_calls, reset_ddb_calls

    card = simulator.Card(pan="4761739001010010", expiry="2512", name="SMITH/JOHN", cvv="123")
    results: dict = {}
    with in_process_platform() as platform:
        _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "bench", "apiSecurity": "key"})
        admin(platform, "POST", "/admin/v1/bdks", {"bdk": simulator.DEFAULT_BDK[Scheme.TDES], "scheme": "tdes",
                                                    "bdkId": "b-tdes"})
        admin(platform, "POST", "/admin/v1/bdks", {"bdk": simulator.DEFAULT_BDK[Scheme.AES128], "scheme": "aes128",
                                                    "bdkId": "b-aes"})
        for serial, dtype, bdk in (("T-tdes", "terminal", "b-tdes"), ("T-aes128", "terminal", "b-aes"),
                                   ("A-tdes", "audio-reader", "b-tdes"), ("A-aes128", "audio-reader", "b-aes")):
            admin(platform, "POST", f"/admin/v1/partners/{partner['partnerId']}/devices",
                  {"serial": serial, "deviceType": dtype, "bdkId": bdk})
        for scheme in ("tdes", "aes128"):
            bare = _bare_dukpt_ms(scheme)
            results[f"bare_dukpt_derivation_ms_{scheme}"] = round(bare, 4)
            cases = [(f"terminal-{m}", simulator.terminal_payload(card, m, scheme=scheme), f"T-{scheme}")
                     for m in simulator.TERMINAL_MODES]
            cases.append(("audio-reader-swiped", simulator.audio_reader_payload(card, "swiped", scheme=scheme),
                          f"A-{scheme}"))
            for name, fields, serial in cases:
                body = json.dumps({"partnerId": partner["partnerId"], "partnerKey": partner["partnerKey"],
                                   "deviceSerial": serial, **fields})
                event = api_event("POST", "/api/decrypt/parser", body)
                platform.invoke("ParserFunction", event)  # warm the caches
                times, calls = [], []
                for _ in range(300):
                    reset_ddb_calls()
                    t = time.perf_counter()
                    out = platform.invoke("ParserFunction", event)
                    times.append((time.perf_counter() - t) * 1000)
                    calls.append(ddb_calls())
                    assert out["statusCode"] == 200
                median = statistics.median(times)
                results[f"{scheme}/{name}"] = {"decrypts_per_second": round(1000 / median),
                                               "median_ms": round(median, 3),
                                               "ratio_to_bare_derivation": round(median / bare, 1),
                                               "dynamodb_calls_per_request": max(calls)}
    print(json.dumps({"parser": results}, indent=2))
    return results


if __name__ == "__main__":
    main()
