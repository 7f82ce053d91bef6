"""Tokenization figures: warm POST /api/tokenization/tokenize in-process (four fields, HMAC), its DynamoDB
round trips, and service throughput (tokens per second) for tokenize, detokenize and the read step; the token
engine per value length (3, 4, 9 and 16 digits: the construction of version-3 bfids beside the cycle walking of
version-1/2 bfids, both measured in this run); and the log scrubber redact_text on 1 KB / 32 KB / 100 KB bodies
beside json.loads + json.dumps of the same body. Prints JSON.

moto in-process stands in for DynamoDB and KMS, so latencies include moto's Python request handling; the
round-trip counts are exact (counted on the boto3 client). The engine and masking figures use no AWS at all.
"""

from __future__ import annotations

import base64
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial

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


def _samples_ms(fn: Callable[[], object], n: int) -> list[float]:
    fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _summary(samples: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(samples), 4), "mean_ms": round(statistics.fmean(samples), 4),
            "p95_ms": round(percentile(samples, 0.95), 4)}


def engine_figures(n: int = 300) -> dict:
    """tokenize_value (and detokenize_value) per digit count, one fresh bfid per call (a bfid is one tokenization;
    nothing is cached across bfids): ``bfid_version=3`` (now) beside ``bfid_version=2`` (the cycle walking every
    short value went through before, called explicitly)."""
    from vaultcore.tokens.engine import detokenize_value, small_domain_construction, tokenize_value
    from vaultcore.tokens.templates import FieldType, TemplateField

    key = os.urandom(32)
    value = "4111111111111111"
    out: dict = {}
    for digits in (3, 4, 9, 16):
        field = TemplateField("bench", FieldType.BANK, min_length=3, max_length=19)
        clear = value[-digits:]
        row: dict = {}
        for label, version in (("now_bfid_v3", 3), ("cycle_walk_bfid_v2", 2)):
            # 3 digits cycle-walked take ~10 ms a call: fewer samples there
            count = max(40, n // 5) if (digits == 3 and version == 2) else n
            scopes = iter([os.urandom(12).hex() for _ in range(count + 1)])

            def tokenize_once(f: TemplateField = field, v: int = version, c: str = clear,
                              s: Iterator[str] = scopes) -> str:
                return tokenize_value(key, next(s), f, c, bfid_version=v)

            samples = _samples_ms(tokenize_once, count)
            row[label] = {"construction": small_domain_construction(10**digits, version), **_summary(samples),
                          "samples": count}
        scope = os.urandom(12).hex()
        token = tokenize_value(key, scope, field, clear)
        row["now_bfid_v3"]["detokenize_median_ms"] = round(statistics.median(_samples_ms(
            partial(detokenize_value, key, scope, field, token), n)), 4)
        row["speedup_median"] = round(row["cycle_walk_bfid_v2"]["median_ms"] / row["now_bfid_v3"]["median_ms"], 1)
        out[f"{digits}_digits"] = row
    return out


def _proxy_json_body(size: int) -> str:
    """bench_proxy's JSON payload shape (cards and items) with the clear card number, as a request log holds it."""
    doc: dict = {"cards": [{"number": "4000056655665556"}], "items": []}
    item = {"sku": "ABC-1234", "qty": 2, "desc": "lorem ipsum dolor sit amet", "price": "19.99"}
    while len(json.dumps(doc)) < size:
        doc["items"].append(item)
    return json.dumps(doc)


def _json_round_trip(text: str) -> str:
    return json.dumps(json.loads(text))


def masking_figures(n: int = 60) -> dict:
    """redact_text (the last layer of proxy log masking, run on request and response) per body size, beside
    json.loads + json.dumps of the same body (the target: at most 2x) and beside every pattern run with re.sub over
    the whole text (what redact_text did before it searched candidates; the result is identical)."""
    from tests.unit.test_masking import reference_redact_text
    from vaultcore.cards.masking import redact_text

    out: dict = {}
    for label, size in (("1KB", 1024), ("32KB", 32 * 1024), ("100KB", 100 * 1024)):
        body = _proxy_json_body(size)
        assert redact_text(body) == reference_redact_text(body) and "4000056655665556" not in redact_text(body)
        mask = statistics.median(_samples_ms(partial(redact_text, body), n))
        roundtrip = statistics.median(_samples_ms(partial(_json_round_trip, body), n))
        before = statistics.median(_samples_ms(partial(reference_redact_text, body), max(5, n // 10)))
        out[label] = {"bytes": len(body), "redact_text_ms": round(mask, 4), "json_loads_dumps_ms": round(roundtrip, 4),
                      "ratio_to_json": round(mask / roundtrip, 2), "re_sub_whole_text_ms": round(before, 3)}
    return out


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
    figures["engine_per_digit_count"] = engine_figures(n)
    figures["log_masking_redact_text"] = masking_figures()
    print(json.dumps({"tokens": figures}, indent=2))
    return figures


if __name__ == "__main__":
    main()
