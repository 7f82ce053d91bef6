"""Tokenization figures: warm POST /api/tokenization/tokenize in-process (four fields, HMAC), its DynamoDB
round trips, and service throughput (tokens per second) for tokenize, detokenize and the read step. Prints JSON.

moto in-process stands in for DynamoDB and KMS, so latencies include moto's Python request handling; the
round-trip counts are exact (counted on the boto3 client).
"""

from __future__ import annotations

import base64
import json
import statistics
import sys
import time

from bench.common import LAYER, in_process_platform, percentile

PATH = "/api/tokenization/tokenize"
VALUES = [("vault_token_card_number", "4111111111111111"), ("vault_token_card_expiration", "1229"),
          ("vault_token_email", "jane.doe@example.com"), ("vault_token_zip", "94107")]
FIELDS = [
    {"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
    {"name": "vault_token_card_expiration", "type": "date", "format": "NONE", "minLength": 4, "maxLength": 4},
    {"name": "vault_token_email", "type": "email", "format": "NONE"},
    {"name": "vault_token_zip", "type": "address", "format": "NONE", "minLength": 3, "maxLength": 10},
]


def _rate(fn, n: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - t)


def main(n: int = 300) -> dict:
    if str(LAYER) not in sys.path:
        sys.path.insert(0, str(LAYER))
    from tests.helpers import admin, api_event
    from vaultcore.auth.hmac_scheme import build_hmac_header
    from vaultcore.store.aws import ddb_calls, reset_ddb_calls
    from vaultcore.tokens.service import detokenize_values, read_stored_tokens, tokenize_values

    with in_process_platform() as platform:
        _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "bench", "apiSecurity": "hmac"})
        pid, key = partner["partnerId"], base64.b64decode(partner["hmacKey"])
        admin(platform, "POST", f"/admin/v1/partners/{pid}/templates", {"templateRef": "BENCH", "fields": FIELDS})
        body = json.dumps({"reference": "bench", "templateRef": "BENCH",
                           "values": [{"name": k, "value": v} for k, v in VALUES]}).encode()
        times, calls = [], []
        for i in range(n + 20):
            event = api_event("POST", PATH, body, {"Authorization": build_hmac_header(pid, key, PATH, body)})
            reset_ddb_calls()
            t = time.perf_counter()
            out = platform.invoke("TokenizeFunction", event)
            elapsed = (time.perf_counter() - t) * 1000
            assert out["statusCode"] == 200, out
            if i >= 20:  # warm only
                times.append(elapsed)
                calls.append(ddb_calls())
        result = tokenize_values(pid, "BENCH", VALUES)
        per_call = len(VALUES)
        reset_ddb_calls()
        tokenize_values(pid, "BENCH", VALUES, store=False)
        detokenize_values(pid, result.bfid, result.values)
        pure_calls = ddb_calls()
        figures = {
            "tokenize_endpoint_warm_4_fields": {
                "median_ms": round(statistics.median(times), 3), "p95_ms": percentile(times, 0.95),
                "dynamodb_round_trips_per_request": max(calls),
                "dynamodb_round_trips_detail": "HMAC nonce claim (conditional put) + one Tokens UpdateItem",
                "tokens_per_second": round(per_call * 1000 / statistics.median(times)),
            },
            "service_tokens_per_second": {
                "tokenize_values_store_false": round(per_call * _rate(
                    lambda: tokenize_values(pid, "BENCH", VALUES, store=False), n)),
                "tokenize_values_stored": round(per_call * _rate(lambda: tokenize_values(pid, "BENCH", VALUES), n)),
                "detokenize_values": round(per_call * _rate(lambda: detokenize_values(pid, result.bfid,
                                                                                      result.values), n)),
                "read_stored_tokens_calls_per_second": round(_rate(lambda: read_stored_tokens(pid, result.bfid), n)),
            },
            "dynamodb_round_trips_warm_tokenize_store_false_plus_detokenize": pure_calls,
            "note": "moto in-process stands in for DynamoDB/KMS; keys come from the container cache when warm",
        }
    print(json.dumps({"tokens": figures}, indent=2))
    return figures


if __name__ == "__main__":
    main()
