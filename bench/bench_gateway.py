"""Gateway figures: a warm SALE with card data and auto-tokenization through the handler (latency and DynamoDB
round trips, target <= 3), the same with an idempotency key, a bfid-only token payment, a capture, a REFUND beside
the SALE (issue 20), and the cold import of the gateway and reporting functions. Prints JSON."""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

from bench.common import ROOT, cold_import_ms, in_process_platform, percentile


def _measure(platform, make_event, n: int) -> dict:
    from vaultcore.store.aws import ddb_calls, reset_ddb_calls

    times, calls = [], []
    for i in range(n + 20):
        event = make_event(i)
        reset_ddb_calls()
        t = time.perf_counter()
        out = platform.invoke("GatewayFunction", event)
        elapsed = (time.perf_counter() - t) * 1000
        body = json.loads(out["body"])
        assert out["statusCode"] == 200 and body["transaction_approved"], body
        if i >= 20:  # warm only
            times.append(elapsed)
            calls.append(ddb_calls())
    return {"median_ms": round(statistics.median(times), 3), "p95_ms": percentile(times, 0.95),
            "dynamodb_round_trips": max(calls)}


def warm_in_process(n: int = 200) -> dict:
    from tests.helpers import admin, api_event, call

    with in_process_platform() as platform:
        _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "bench", "apiSecurity": "hmac"})
        _, acct = admin(platform, "POST", "/admin/v1/accounts", {"partnerId": partner["partnerId"], "options": {
            "tokenization": True, "token_payments": True}})
        creds = {"account_id": acct["account_id"], "api_accesskey": acct["api_accesskey"]}
        sale = {**creds, "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
                "card_expiration": "1230", "card_verification": "123", "transaction_amount": "10.00", "zip": "12345"}

        def event(body, headers=None):
            return api_event("POST", "/api/qsapi/3.8", body, headers)

        result: dict[str, Any] = {"sale_card_auto_tokenized": _measure(platform, lambda i: event(sale), n),
                                  "sale_with_idempotency_key": _measure(
                                      platform, lambda i: event(sale, {"Idempotency-Key": f"bench-{i}"}), n)}
        first = json.loads(platform.invoke("GatewayFunction", event(sale))["body"])
        _, _, report = call(platform, "ReportingFunction", "POST", "/api/rsapi/v1/transactions",
                            {**creds, "transaction_id": first["transaction_id"], "include_fields": "bfid"})
        bfid_only = {**creds, "transaction_type": "SALE", "tender_type": "CARD", "transaction_amount": "1.00",
                     "bfid": report["transaction"]["bfid"]}
        result["sale_bfid_only_token_payment"] = _measure(platform, lambda i: event(bfid_only), n)
        auths = [json.loads(platform.invoke("GatewayFunction", event({**sale, "transaction_type": "AUTHORIZATION"}))
                            ["body"])["transaction_id"] for _ in range(n + 20)]
        result["capture"] = _measure(platform, lambda i: event({**creds, "transaction_type": "CAPTURE",
                                                                "transaction_amount": "10.00",
                                                                "token_id": auths[i]}), n)
        # issue 20: a REFUND beside the plain SALE it refunds (same run, same account)
        sales = [json.loads(platform.invoke("GatewayFunction", event(sale))["body"])["transaction_id"]
                 for _ in range(n + 20)]
        result["refund"] = _measure(platform, lambda i: event({**creds, "transaction_type": "REFUND",
                                                               "transaction_amount": "4.00", "token_id": sales[i]}), n)
        result["refund_added_ms_vs_sale"] = round(result["refund"]["median_ms"]
                                                  - result["sale_card_auto_tokenized"]["median_ms"], 3)
    result["note"] = "moto in-process stands in for DynamoDB and KMS; round trips are what a deployed stack pays"
    return result


def main() -> dict:
    result = {
        "cold_import_ms_median_app_and_first_call_route": {
            name: cold_import_ms(ROOT / "functions" / name / "app.py") for name in ("gateway", "reporting")},
        "in_process": warm_in_process(),
        "target": "warm SALE with card data and auto-tokenization: at most 3 DynamoDB round trips",
    }
    print(json.dumps({"gateway": result}, indent=2))
    return result


if __name__ == "__main__":
    main()
