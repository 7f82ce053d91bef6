"""What a card-present SALE adds to a plain keyed SALE (issue 20, item 9), measured in the same run.

Three kinds of warm SALE through the gateway handler, in-process on moto, interleaved request by request so that
drift hits them alike, on one account with auto-tokenization (the demo account's options):

* ``keyed``: card_number + card_expiration + card_verification;
* ``swiped``: the same card as card_tracks (track 1 + track 2, parsed and LRC-checked);
* ``p2pe``: a TDES DUKPT terminal payload (track 1 of the same card: one encrypted field) of a registered device, made by the
  simulator with a fresh KSN counter per request (outside the measurement), decrypted by the parser's function.

Printed per request: ``cpu_ms`` (this process's CPU, ``time.process_time``, median; moto runs in-process so the
absolute figure includes the AWS stand-in, the difference between kinds does not), ``wall_ms`` (median), and the
AWS calls by operation (DynamoDB, KMS, SQS; tests/aws_calls.AwsCalls) — most after warm-up, and the first request
of each kind (cold device/BDK caches). ``decrypt_only_cpu_ms``: the parser's ``decrypt_for_partner`` alone.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import time
from collections import Counter

SALES = 150
WARM_UP = 15
PAN = "4761739001010010"


def _ksn(counter: int) -> bytes:
    # TDES KSN: 59-bit initial KSN then a 21-bit counter (ANSI X9.24-1); at most 10 bits set
    base = int("FFFF9876543210E00000", 16) & ~((1 << 21) - 1)
    return (base | counter).to_bytes(10, "big")


def _counters(n: int) -> list[int]:
    out: list[int] = []
    c = 1
    while len(out) < n:
        if bin(c).count("1") <= 10:
            out.append(c)
        c += 1
    return out


def _run() -> dict:
    from bench.common import in_process_platform
    from tests.aws_calls import AwsCalls
    from tests.helpers import admin, api_event
    from vaultcore.crypto.dukpt import Scheme
    from vaultcore.devices import simulator
    from vaultcore.devices.simulator import Card

    card = Card(pan=PAN, expiry="3012", name="SMITH/JOHN", cvv="123")
    track1 = simulator.track1(card).decode("latin-1")
    track2 = simulator.track2(card).decode("latin-1")
    with in_process_platform() as platform:
        admin(platform, "POST", "/admin/v1/bdks", {"bdk": simulator.DEFAULT_BDK[Scheme.TDES], "scheme": "tdes",
                                                   "bdkId": "bench-tdes"})
        _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "bench", "apiSecurity": "hmac"})
        pid = partner["partnerId"]
        admin(platform, "POST", f"/admin/v1/partners/{pid}/devices",
              {"serial": "BENCH-TERM", "deviceType": "terminal", "bdkId": "bench-tdes"})
        _, acct = admin(platform, "POST", "/admin/v1/accounts", {"partnerId": pid, "options": {
            "tokenization": True, "token_payments": True}})
        base = {"account_id": acct["account_id"], "api_accesskey": acct["api_accesskey"], "transaction_type": "SALE",
                "tender_type": "CARD", "transaction_amount": "10.00"}
        total = SALES + WARM_UP
        payloads = [simulator.terminal_payload(card, "track1", ksn=_ksn(c)) for c in _counters(total)]
        bodies = {
            "keyed": lambda i: {**base, "card_number": PAN, "card_expiration": "1230", "card_verification": "123"},
            "swiped": lambda i: {**base, "card_tracks": track1 + track2},
            "p2pe": lambda i: {**base, "device_type": "terminal", "device_serial": "BENCH-TERM",
                               "ksn": payloads[i]["ksn"], "device_payload": payloads[i]["devicePayload"]},
        }
        cpu: dict[str, list[float]] = {k: [] for k in bodies}
        wall: dict[str, list[float]] = {k: [] for k in bodies}
        calls: dict[str, Counter[str]] = {k: Counter() for k in bodies}
        first: dict[str, dict[str, int]] = {}
        for i in range(total):
            for kind, make in bodies.items():
                event = api_event("POST", "/api/qsapi/3.8", make(i))
                with AwsCalls() as counted:
                    c0, w0 = time.process_time(), time.perf_counter()
                    out = platform.invoke("GatewayFunction", event)
                    c1, w1 = time.process_time(), time.perf_counter()
                body = json.loads(out["body"])
                assert out["statusCode"] == 200 and body["transaction_approved"], (kind, body)
                if i == 0:
                    first[kind] = dict(counted.by_operation)
                if i >= WARM_UP:
                    cpu[kind].append((c1 - c0) * 1000)
                    wall[kind].append((w1 - w0) * 1000)
                    calls[kind].update(counted.by_operation)
        from vaultcore.devices.parser import decrypt_for_partner

        decrypt = []
        for i in range(WARM_UP, total):
            c0 = time.process_time()
            decrypt_for_partner(pid, "terminal", "BENCH-TERM", payloads[i]["devicePayload"], payloads[i]["ksn"])
            decrypt.append((time.process_time() - c0) * 1000)
    per: dict[str, dict] = {}
    for kind in bodies:
        ops = {op: round(n / SALES, 2) for op, n in sorted(calls[kind].items())}
        per[kind] = {"cpu_ms": round(statistics.median(cpu[kind]), 3), "wall_ms": round(statistics.median(wall[kind]), 3),
                     "aws_calls_per_sale": round(sum(calls[kind].values()) / SALES, 2), "aws_calls_by_operation": ops,
                     "first_request_aws_calls": first[kind]}
    keyed = per["keyed"]
    return {
        "sales_per_kind": SALES,
        "per_sale": per,
        "added_vs_keyed": {kind: {"cpu_ms": round(per[kind]["cpu_ms"] - keyed["cpu_ms"], 3),
                                  "wall_ms": round(per[kind]["wall_ms"] - keyed["wall_ms"], 3),
                                  "aws_calls": round(per[kind]["aws_calls_per_sale"] - keyed["aws_calls_per_sale"], 2)}
                           for kind in ("swiped", "p2pe")},
        "decrypt_only_cpu_ms": round(statistics.median(decrypt), 3),
        "note": "in-process moto stands in for DynamoDB/KMS (its CPU is in cpu_ms); the added figures are the "
                "card-present code's own",
    }


def main() -> dict:
    with contextlib.redirect_stdout(io.StringIO()):  # the handlers' log lines and metrics
        result = _run()
    print(json.dumps({"card_present": result}, indent=2))
    return result


if __name__ == "__main__":
    main()
