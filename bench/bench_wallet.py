"""Wallet and fraud figures: pure token verify+decrypt cost, warm decrypt_wallet_payment (DynamoDB round trips
included), warm score_payment and its round trips, the pure scoring rules, and the new functions' cold imports.
Prints JSON."""

from __future__ import annotations

import json
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime

from bench.common import LAYER, ROOT, cold_import_ms, in_process_platform


def _median_ms(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(samples), 3)


def main() -> dict:
    if str(LAYER) not in sys.path:
        sys.path.insert(0, str(LAYER))
    from tests.helpers import admin, call
    from tests.wallet_support import new_merchant, wallet_body
    from vaultcore.crypto import wallet_token as wt
    from vaultcore.fraud.scoring import RiskFacts, score
    from vaultcore.fraud.service import score_payment
    from vaultcore.store.aws import ddb_calls, reset_ddb_calls
    from vaultcore.wallet.payments import decrypt_wallet_payment

    merchant = new_merchant()
    results: dict = {}
    token = merchant.token()
    now = datetime.now(UTC)
    results["pure_verify_signature_ms"] = _median_ms(lambda: wt.verify_signature(token, [merchant.chain.root_pem], now), 50)
    results["pure_decrypt_ec_v1_ms"] = _median_ms(
        lambda: wt.decrypt_ec_v1(token, merchant.key_pem, merchant_certificate_pem=merchant.cert_pem), 50)
    facts = RiskFacts(device_data=True, distinct_cards_on_device_24h=2, card_uses_1h=3, avs_response="A")
    results["pure_scoring_rules_us"] = round(_median_ms(lambda: score(facts), 2000) * 1000, 2)
    with in_process_platform() as platform:
        _, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {"fraud_scoring": True}})
        account_id = account["account_id"]
        admin(platform, "PUT", f"/admin/v1/accounts/{account_id}/wallet", wallet_body(merchant))
        _, client = admin(platform, "POST", f"/admin/v1/accounts/{account_id}/fraud-client")
        tokens = [json.dumps(merchant.token()) for _ in range(41)]
        decrypt_wallet_payment(account_id, tokens.pop(), "10.00", "USD")  # warm: settings, KMS unwrap
        times, calls = [], []
        for payload in tokens:
            reset_ddb_calls()
            t = time.perf_counter()
            decrypt_wallet_payment(account_id, payload, "10.00", "USD")
            times.append((time.perf_counter() - t) * 1000)
            calls.append(ddb_calls())
        results["warm_decrypt_wallet_payment"] = {"median_ms": round(statistics.median(times), 3),
                                                  "dynamodb_calls": max(calls)}
        score_times, score_calls = [], []
        for i in range(40):
            dvci = str(uuid.uuid4())
            call(platform, "CollectorFunction", "POST", f"/cdn/cs/{client['client_id']}/collect",
                 json.dumps({"dvci": dvci, "pid": f"p{i}", "signals": {"userAgent": f"bench {i}"}}),
                 path_params={"client_id": client["client_id"]}, resource="/cdn/cs/{client_id}/collect")
            reset_ddb_calls()
            t = time.perf_counter()
            score_payment(account_id, dvci, "4242424242424242", "Y")
            score_times.append((time.perf_counter() - t) * 1000)
            score_calls.append(ddb_calls())
        results["warm_score_payment"] = {"median_ms": round(statistics.median(score_times[1:]), 3),
                                         "dynamodb_calls": max(score_calls[1:])}
    for name in ("collector", "wallet_session", "wallet_domain", "checkout"):
        app_ms, route_ms = cold_import_ms(ROOT / "functions" / name / "app.py", runs=3)
        results[f"cold_import_ms_{name}"] = {"app": app_ms, "first_call_route": route_ms}
    print(json.dumps({"wallet_fraud": results}, indent=2))
    return results


if __name__ == "__main__":
    main()
