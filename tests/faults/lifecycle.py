"""Issue 28: the lifecycle traffic under faults, end to end, and its reconciliation (shared by
``tests/e2e/test_lifecycle_faults_e2e.py``, the short form, and ``bench/bench_faults.py``, the long form).

On the stack of :mod:`tests.faults.harness` (moto process <- fault proxy <- runner subprocess). One account per
run (credits on, a tokenization partner), several rounds of these flows at once, every request with its own
``Idempotency-Key``:

* AUTHORIZATION -> partial CAPTURE -> repeated partial REFUNDs of the capture -> REVERSAL of the authorization
  (refused: captured);
* SALE -> full REFUND racing a REVERSAL (exactly one wins);
* CREDITs to the daily limit, declined ones among them (declines take nothing);
* STORE -> SALE by ``token_id``.

Clients behave as docs/integrators/gateway.md says: "nothing was charged" -> the same request again at once;
"outcome unknown", no answer or 601 -> the same key once the 30-second lock has lapsed (after the faults are off,
as :meth:`Scenario.replay_keys` does). Then :func:`reconcile` checks, against the tables and RSAPI:

* ``refunds``: Σ refund records = ``refunded_cents`` = what the clients were told; ``refund_ids`` = the records;
* ``credits``: the day's counter = Σ approved credits (and its takers are exactly them);
* ``statuses``: RSAPI VOIDED / REFUNDED / CAPTURED agree with the records, never both captured and reversed;
* ``one_record_per_key``: a key's answers name one transaction, every approved record was told to its client;
* ``undocumented_answers``: every answer is in openapi/*.json.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
import urllib.parse
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from tests.faults.aws_fault_proxy import Rule
from tests.faults.harness import DDB_WRITES, HELD_SECONDS, Stack, _contract_check, http

CARD = "4242424242424242"
DECLINED_CARD = "4000000000000002"
CREDIT_DAILY_CENTS = 2_500_000
LIFECYCLE_INVARIANTS = ("refunds", "credits", "statuses", "one_record_per_key", "undocumented_answers")
DDB_ALL = ["DynamoDB_20120810.*"]

#: The six fault runs of issue 28's acceptance: mode -> proxy rules.
MODES: dict[str, list[Rule | dict[str, Any]]] = {
    "lost": [{"mode": "lost_answer", "operations": DDB_WRITES, "probability": 0.3}],
    "5xx": [{"mode": "http_5xx", "operations": DDB_ALL, "probability": 0.3, "status": 503}],
    "throttle": [{"mode": "throttle", "operations": DDB_ALL, "probability": 0.3}],
    "reset": [{"mode": "reset_before", "operations": DDB_ALL, "probability": 0.3}],
    "mixed": [{"mode": "lost_answer", "operations": DDB_WRITES, "probability": 0.15},
              {"mode": "http_5xx", "operations": DDB_ALL, "probability": 0.1, "status": 503},
              {"mode": "throttle", "operations": DDB_ALL, "probability": 0.1},
              {"mode": "reset_before", "operations": DDB_ALL, "probability": 0.1}],
    "lost60": [{"mode": "lost_answer", "operations": DDB_WRITES, "probability": 0.6}],
}


@dataclass
class Op:
    """One keyed operation and every answer its client got (first, retries, replays)."""
    key: str
    form: dict[str, str]
    answers: list[tuple[int, dict[str, Any] | None, dict[str, str], float]] = field(default_factory=list)

    @property
    def final(self) -> tuple[int, dict[str, Any] | None]:
        status, body, _, _ = self.answers[-1]
        return status, body

    @property
    def approved(self) -> dict[str, Any] | None:
        status, body = self.final
        return body if status == 200 and isinstance(body, dict) and body.get("transaction_approved") else None

    @property
    def settled(self) -> bool:
        status, body = self.final
        if status == 200:
            return True
        if status == 500 and isinstance(body, dict) and "nothing was charged" in str(body.get("error_message")):
            return True  # certain: nothing recorded (the client may give up or retry)
        return False


class Lifecycle:
    def __init__(self, stack: Stack, name: str) -> None:
        self.stack, self.name = stack, name
        self.ops: list[Op] = []
        self.lock = threading.Lock()
        self.undocumented: list[str] = []
        partner = stack.hmac_partner()
        self.account = stack.account(None, credit=True, tokenization=True, partnerId=partner["partnerId"])
        self.creds = {"account_id": self.account["account_id"], "api_accesskey": self.account["api_accesskey"],
                      "response_format": "JSON"}

    # ------------------------------------------------------------------------------------------ requests
    def _send(self, op: Op) -> tuple[int, dict[str, Any] | None]:
        url = self.stack.base_url + "/api/qsapi/3.8"
        body = urllib.parse.urlencode({**self.creds, **op.form}).encode()
        status, hdrs, raw, _ = http(url, body, {"Content-Type": "application/x-www-form-urlencoded",
                                                "Idempotency-Key": op.key})
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = None
        if status:
            problems = _contract_check("POST", url, status, hdrs, raw)
            if problems:
                with self.lock:
                    self.undocumented.append(f"{op.key} {status}: {problems[:2]}")
        op.answers.append((status, parsed, hdrs, time.monotonic()))
        return status, parsed

    def op(self, kind: str, **form: str) -> Op:
        """Send one keyed operation; "nothing was charged" -> again at once (at most 3 times)."""
        op = Op(f"{self.name}-{kind}-{secrets.token_hex(5)}", {k: v for k, v in form.items()})
        with self.lock:
            self.ops.append(op)
        for _ in range(3):
            self._send(op)
            status, body = op.final
            if not (status == 500 and isinstance(body, dict) and "nothing was charged" in str(body.get("error_message"))):
                break
        return op

    def settle_held(self, workers: int = 4) -> None:
        """Faults off: every operation without a final answer sent again with its key, once its lock lapsed."""
        for _ in range(3):
            held = [op for op in self.ops if not op.settled]
            if not held:
                return
            wait_until = max(op.answers[-1][3] for op in held) + HELD_SECONDS + 1.5
            time.sleep(max(0.0, wait_until - time.monotonic()))
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(self._send, held))

    # ------------------------------------------------------------------------------------------ flows
    def flow_capture_refunds(self, n: int) -> None:
        auth = self.op("auth", transaction_type="AUTHORIZATION", tender_type="CARD", card_number=CARD,
                       card_expiration="1230", transaction_amount=f"{50 + n}.00")
        if not auth.approved:
            return
        auth_id = auth.approved["transaction_id"]
        capture = self.op("capture", transaction_type="CAPTURE", token_id=auth_id, transaction_amount="30.00")
        if capture.approved:
            for _ in range(3):
                self.op("refund", transaction_type="REFUND", token_id=capture.approved["transaction_id"],
                        transaction_amount="5.00")
        self.op("reversal", transaction_type="REVERSAL", token_id=auth_id)

    def flow_refund_races_reversal(self, n: int) -> None:
        sale = self.op("sale", transaction_type="SALE", tender_type="CARD", card_number=CARD,
                       card_expiration="1230", transaction_amount=f"{20 + n}.00")
        if not sale.approved:
            return
        sale_id = sale.approved["transaction_id"]
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda f: f(), [
                lambda: self.op("void", transaction_type="REFUND", token_id=sale_id,
                                transaction_amount=f"{20 + n}.00"),
                lambda: self.op("reversal", transaction_type="REVERSAL", token_id=sale_id)]))

    def flow_credits(self, n: int) -> None:
        """A declined 10,000.00 credit, then two good 5,000.00 ones (two flows a round reach the day's limit)."""
        self.op("credit", transaction_type="CREDIT", card_number=DECLINED_CARD, card_expiration="1230",
                transaction_amount="10000.00")
        for _ in range(2):
            self.op("credit", transaction_type="CREDIT", card_number=CARD, card_expiration="1230",
                    transaction_amount="5000.00")

    def flow_store_then_pay(self, n: int) -> None:
        store = self.op("store", transaction_type="STORE", card_number=CARD, card_expiration="1230")
        if store.approved:
            self.op("stored-sale", transaction_type="SALE", token_id=store.approved["transaction_id"],
                    transaction_amount=f"{30 + n}.00")

    def run(self, rounds: int, workers: int) -> None:
        flows = [self.flow_capture_refunds, self.flow_refund_races_reversal, self.flow_credits, self.flow_credits,
                 self.flow_store_then_pay]
        jobs = [(f, n) for n in range(rounds) for f in flows]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda job: job[0](job[1]), jobs))

    # ------------------------------------------------------------------------------------------ reconciliation
    def report(self, transaction_id: str) -> dict[str, Any]:
        url = self.stack.base_url + "/api/rsapi/v1/transactions"
        body = urllib.parse.urlencode({**self.creds, "transaction_id": transaction_id}).encode()
        status, _, raw, error = http(url, body, {"Content-Type": "application/x-www-form-urlencoded"})
        assert status == 200, (status, raw, error)
        return json.loads(raw)["transaction"]

    def reconcile(self) -> dict[str, list[str]]:
        v: dict[str, list[str]] = {name: [] for name in LIFECYCLE_INVARIANTS}
        v["undocumented_answers"] = list(self.undocumented)
        account_id = self.account["account_id"]
        items = [i for i in self.stack.scan("TransactionsV2Table") if i.get("account_id") == account_id]
        records = {str(i["transaction_id"]): i for i in items
                   if i.get("writer") != "#fence" and i.get("created_at") is not None}
        told: dict[str, dict[str, Any]] = {}
        for op in self.ops:
            ids = {str(b.get("transaction_id")) for s, b, _, _ in op.answers
                   if s == 200 and isinstance(b, dict) and b.get("transaction_approved")}
            if len(ids) > 1:
                v["one_record_per_key"].append(f"{op.key}: answers name {sorted(ids)}")
            if op.approved:
                told[str(op.approved["transaction_id"])] = op.approved
            if not op.settled:
                v["one_record_per_key"].append(f"{op.key}: no final answer ({op.final[0]})")
        for tid, r in records.items():
            if r.get("transaction_approved") and r.get("transaction_type") != "SETTLE-BATCH" and tid not in told:
                v["one_record_per_key"].append(f"{tid} ({r.get('transaction_type')}) approved, told to no client")
        for tid in told:
            if tid not in records:
                v["one_record_per_key"].append(f"{tid}: told approved, no record")
        refunds_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in records.values():
            if r.get("transaction_type") == "REFUND" and r.get("transaction_approved"):
                refunds_of[str(r.get("token_id"))].append(r)
        for oid, original in records.items():
            if original.get("refundable_cents") is None:
                continue
            refunds = refunds_of.get(oid, [])
            recorded = sum(int(r["transaction_cents"]) for r in refunds)
            refunded = int(original.get("refunded_cents") or 0)
            told_cents = sum(int(round(float(b["transaction_amount"]) * 100)) for b in told.values()
                             if b.get("transaction_type") == "REFUND" and str(b.get("token_id")) == oid)
            if not recorded == refunded == told_cents:
                v["refunds"].append(f"{oid}: records {recorded}, refunded_cents {refunded}, told {told_cents}")
            if {str(x) for x in original.get("refund_ids") or ()} != {str(r["transaction_id"]) for r in refunds}:
                v["refunds"].append(f"{oid}: refund_ids {sorted(original.get('refund_ids') or ())} vs records "
                                    f"{sorted(str(r['transaction_id']) for r in refunds)}")
            if int(original["refundable_cents"]) + refunded != int(original["transaction_cents"]):
                v["refunds"].append(f"{oid}: refundable + refunded != amount")
            voided = original.get("reversed_by") or any(r.get("authorization_message") == "VOID" for r in refunds)
            if original.get("reversed_by") and refunds:
                v["statuses"].append(f"{oid}: both reversed and refunded")
            expected = "VOIDED" if voided else ("REFUNDED" if refunded else None)
            status = self.report(oid).get("status")
            if expected and status != expected:
                v["statuses"].append(f"{oid}: RSAPI {status}, expected {expected}")
        for oid, auth in records.items():
            if auth.get("transaction_type") != "AUTHORIZATION" or not auth.get("transaction_approved"):
                continue
            if auth.get("auth_status") == "captured" and auth.get("reversed_by"):
                v["statuses"].append(f"{oid}: both captured and reversed")
            captures = [r for r in records.values() if r.get("transaction_type") == "CAPTURE"
                        and str(r.get("token_id")) == oid and r.get("transaction_approved")]
            if len(captures) > 1 or (captures and auth.get("auth_status") != "captured"):
                v["statuses"].append(f"{oid}: {len(captures)} capture records, auth_status {auth.get('auth_status')}")
        credits = {tid: int(r["transaction_cents"]) for tid, r in records.items()
                   if r.get("transaction_type") == "CREDIT" and r.get("transaction_approved")}
        for counter in (i for i in items if str(i["transaction_id"]).startswith("CREDITS#")):
            used = CREDIT_DAILY_CENTS - int(counter["remaining"])
            takers = {str(t) for t in counter.get("takers") or ()}
            if used != sum(credits.values()) or takers != set(credits):
                v["credits"].append(f"{counter['transaction_id']}: used {used} by {len(takers)} takers; "
                                    f"approved credits {sum(credits.values())} in {len(credits)}")
        if sum(credits.values()) > CREDIT_DAILY_CENTS:
            v["credits"].append(f"credits {sum(credits.values())} exceed the day's limit")
        return v

    def summary(self, violations: dict[str, list[str]]) -> dict[str, Any]:
        answers = [(op.key.split("-")[-2], s, (b or {}).get("error_code")) for op in self.ops for s, b, _, _ in op.answers]
        return {
            "scenario": self.name, "operations": len(self.ops), "requests": len(answers),
            "answers": dict(sorted(Counter(f"{k}:{s}:{c}" for k, s, c in answers).items())),
            "violations": {k: len(x) for k, x in violations.items()},
            "faults": {k: n for k, n in sorted(self.stack.proxy.counts.items()) if not k.startswith("forwarded")},
        }


def lifecycle_under_faults(stack: Stack, mode: str, rounds: int = 2, workers: int = 4
                           ) -> tuple[Lifecycle, dict[str, list[str]]]:
    """The lifecycle flows while ``MODES[mode]`` faults DynamoDB; then faults off, held keys settled, reconciled."""
    lc = Lifecycle(stack, f"lifecycle-{mode}")
    stack.proxy.clear(counts=True)
    stack.proxy.set_rules(MODES[mode])
    try:
        lc.run(rounds, workers)
    finally:
        stack.proxy.clear()
    lc.settle_held(workers)
    return lc, lc.reconcile()
