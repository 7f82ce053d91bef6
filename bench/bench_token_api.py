"""Issue 21's figures: batch tokenize and detokenize throughput (items/s) at 10, 100 and 1,000 items beside the
single-call path, the server CPU of a 1,000-card batch (goal: 100 ms), and the revocation check's added cost per
detokenization. Prints JSON.

In-process (the handler invoked as Lambda would, HMAC-signed), with moto in-process standing in for DynamoDB:
``cpu_ms`` is this process's CPU for the invocation (``time.process_time``), which **includes moto's own handling
of the DynamoDB calls** (the nonce claim; for detokenize batches the BatchGetItem of the revocation records and
the BatchWriteItem of the audit records), so it overstates Lambda's CPU; ``cpu_ms_without_store`` is the same
batch with those two store steps replaced by no-ops (what the function itself spends, the nonce claim aside).
The DynamoDB round trips are counted exactly. Real DynamoDB adds network waits (not CPU): one GetItem per single
detokenization, ceil(n/100) BatchGetItem and ceil(n/25) BatchWriteItem per detokenize batch.
"""

from __future__ import annotations

import base64
import json
import statistics
import sys
import time

from bench.common import LAYER, in_process_platform

FIELDS = [{"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"}]
SIZES = (10, 100, 1000)


def main(repeats: int = 5, single_calls: int = 200) -> dict:
    if str(LAYER) not in sys.path:
        sys.path.insert(0, str(LAYER))
    from tests.helpers import admin, api_event
    from vaultcore.auth.hmac_scheme import build_hmac_header
    from vaultcore.cards.luhn import luhn_check_digit
    from vaultcore.store import audit
    from vaultcore.store import tokens as token_store
    from vaultcore.store.aws import ddb_calls, reset_ddb_calls
    from vaultcore.tokens import service

    with in_process_platform() as platform:
        _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "bench", "apiSecurity": "hmac"})
        pid, key = partner["partnerId"], base64.b64decode(partner["hmacKey"])
        admin(platform, "POST", f"/admin/v1/partners/{pid}/templates",
              {"templateRef": "BENCH", "accessMode": "detokenize", "fields": FIELDS})
        admin(platform, "PUT", f"/admin/v1/partners/{pid}/permissions", {"detokenize": True})

        def invoke(path: str, payload: dict) -> tuple[dict, float, float, int]:
            body = json.dumps(payload).encode()
            event = api_event("POST", path, body, {"Authorization": build_hmac_header(pid, key, path, body)})
            reset_ddb_calls()
            c, t = time.process_time(), time.perf_counter()
            out = platform.invoke("TokenizeFunction", event)
            wall, cpu = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
            assert out["statusCode"] == 200, out["body"][:300]
            return json.loads(out["body"]), wall, cpu, ddb_calls()

        pans = [(b := "4" + f"{i:014d}") + luhn_check_digit(b) for i in range(max(SIZES))]
        # single calls: one card number per tokenize, one per detokenize
        singles_t, singles_d, bfids = [], [], []
        for i in range(single_calls + 10):
            out, wall, _, _ = invoke("/api/tokenization/tokenize",
                                     {"templateRef": "BENCH", "values": [{"name": FIELDS[0]["name"], "value": pans[i]}]})
            bfids.append((out["bfid"], out["values"]))
            if i >= 10:
                singles_t.append(wall)
        for bfid, values in bfids[: single_calls + 10]:
            _, wall, _, _ = invoke("/api/tokenization/detokenize", {"bfid": bfid, "values": values})
            singles_d.append(wall)
        singles_d = singles_d[10:]
        result: dict = {"single_call": {
            "tokenize_items_per_s": round(1000 / statistics.median(singles_t), 1),
            "tokenize_median_ms": round(statistics.median(singles_t), 3),
            "detokenize_items_per_s": round(1000 / statistics.median(singles_d), 1),
            "detokenize_median_ms": round(statistics.median(singles_d), 3)}, "batches": {}}

        for n in SIZES:
            items = [{"reference": f"i-{i}", "templateRef": "BENCH",
                      "values": [{"name": FIELDS[0]["name"], "value": pans[i]}]} for i in range(n)]
            tok_wall, tok_cpu, tok_calls, last = [], [], 0, None
            for _ in range(repeats):
                last, wall, cpu, tok_calls = invoke("/api/tokenization/batch/tokenize", {"items": items})
                tok_wall.append(wall)
                tok_cpu.append(cpu)
            assert last is not None and last["succeeded"] == n
            detok = [{"reference": it["itemReference"], "bfid": it["bfid"], "values": it["values"]}
                     for it in last["items"]]
            det_wall, det_cpu, det_calls = [], [], 0
            for _ in range(repeats):
                service._not_revoked.clear()  # every bfid looked up again (no "not deleted" answer cached)
                out, wall, cpu, det_calls = invoke("/api/tokenization/batch/detokenize", {"items": detok})
                assert out["succeeded"] == n
                det_wall.append(wall)
                det_cpu.append(cpu)
            # the same detokenize batch without the store steps (revocation lookup, audit write): no-ops
            saved = (token_store.revoked_among, audit.write_records)
            token_store.revoked_among = lambda scopes: set()  # type: ignore[assignment]
            audit.write_records = lambda *a, **k: None  # type: ignore[assignment]
            bare = []
            try:
                for _ in range(repeats):
                    service._not_revoked.clear()
                    bare.append(invoke("/api/tokenization/batch/detokenize", {"items": detok})[2])
            finally:
                token_store.revoked_among, audit.write_records = saved
            med = statistics.median
            result["batches"][str(n)] = {
                "tokenize": {"items_per_s": round(n / med(tok_wall) * 1000, 1), "wall_ms": round(med(tok_wall), 2),
                             "cpu_ms": round(med(tok_cpu), 2), "dynamodb_calls": tok_calls},
                "detokenize": {"items_per_s": round(n / med(det_wall) * 1000, 1), "wall_ms": round(med(det_wall), 2),
                               "cpu_ms": round(med(det_cpu), 2), "cpu_ms_without_store": round(med(bare), 2),
                               "dynamodb_calls": det_calls},
            }

        # the revocation check per detokenization: the service call with and without it (cache cleared each time)
        made = service.tokenize_values(pid, "BENCH", [(FIELDS[0]["name"], pans[0])], store=False)
        pairs = list(made.values.items())

        def timed(check: bool, n: int = 300) -> tuple[float, float]:
            saved = service._check_revocation
            if not check:
                service._check_revocation = lambda scope: None  # type: ignore[assignment]
            walls, cpus = [], []
            try:
                for _ in range(n):
                    service._not_revoked.clear()
                    c, t = time.process_time(), time.perf_counter()
                    service.detokenize_pairs(pid, made.bfid, pairs)
                    walls.append((time.perf_counter() - t) * 1000)
                    cpus.append((time.process_time() - c) * 1000)
            finally:
                service._check_revocation = saved
            return statistics.median(walls), statistics.median(cpus)

        timed(True, 20)
        with_wall, with_cpu = timed(True)
        without_wall, without_cpu = timed(False)
        reset_ddb_calls()
        service._not_revoked.clear()
        service.detokenize_pairs(pid, made.bfid, pairs)
        result["revocation_check"] = {
            "dynamodb_calls_per_detokenization": ddb_calls(),
            "detokenize_ms_with": round(with_wall, 4), "detokenize_ms_without": round(without_wall, 4),
            "added_ms": round(with_wall - without_wall, 4), "added_cpu_ms": round(with_cpu - without_cpu, 4),
            "note": "in-process moto: the added time is moto answering one GetItem plus the client's signing and "
                    "parsing; in AWS add one in-region round trip (a few ms of waiting, no CPU). Cached 1 s per "
                    "container when not deleted.",
        }
        thousand = result["batches"]["1000"]
        result["goal_1000_cards_cpu_ms"] = {"goal": 100, "batch_tokenize_cpu_ms": thousand["tokenize"]["cpu_ms"],
                                            "batch_detokenize_cpu_ms_without_store":
                                                thousand["detokenize"]["cpu_ms_without_store"]}
    print(json.dumps({"token_api": result}, indent=2))
    return result


if __name__ == "__main__":
    main()
