"""Issue 28, placements 4, 7 and 8 as fault scenarios on the harness's stack (tests/faults/harness.py): the
short form is ``tests/e2e/test_faults_delivery_e2e.py``, the long form ``python -m bench.bench_faults``.

* :func:`delivery_copies_log_write_failing` (placement 4), on the SQS FIFO postback queue (issue 29): keyed SALEs,
  each with the stream relay's SendMessageBatch answer lost once (the postback sent twice with one deduplication
  id: queued once by SQS; a copy queued later waits in the delivery's message group), while every delivery-log
  write after a POST -- the Deliveries UpdateItem that appends the attempt (``list_append``) -- answers 500, until
  every postback has been answered 2xx once; then anything left is given time to come back (the queue's visibility
  timeout in the harness). The sender's second write, "delivered" alone, is not failed (as before: the fault is
  the log write). Invariant (harness): one 2xx per delivery id, no (delivery id, attempt) pair POSTed twice.
* :func:`reads_with_lost_claim_answers` (placement 7): bfids tokenized with ``?omit=1``, then one keyed
  ``read`` per bfid -- the first one with every answer of its claim lost (the claim applied, a 500 after the
  client's retries), the others while 60% of UpdateItem answers are lost -- each retried with its
  ``Idempotency-Key`` until it gets an answer, and one rival read per bfid without a key. Invariants: ``reads_unrecovered`` (the keyed reader never got the tokens),
  ``reads_by_two_readers`` (the rival got them too), ``reads_inconsistent`` (two answers of one bfid differ).
* :func:`paging_at_the_clients_pace` (placement 8): SALEs, then RSAPI pages of the default range (the last 24
  hours) asked for ``pace`` seconds apart while 30% of Query calls answer 503 (a page that still fails is asked
  for again with the same token). Invariants: ``pages_refused`` (803 or any other refusal), ``pages_missing``
  (an approved SALE of the range in no page), ``pages_duplicated``.

The scenarios fail on the code before issue 28 (``FAULTS_PLATFORM_COMMIT``): a second 2xx for a delivery id
(attempt 2), 3018 for the keyed reader's retry, 803 for page 2.
"""

from __future__ import annotations

import json
import secrets
import time
import urllib.parse
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tests.faults.harness import CARD, Answer, Scenario, Stack, http, sign

__all__ = ["delivery_copies_log_write_failing", "reads_with_lost_claim_answers", "paging_at_the_clients_pace",
           "LEASE_SECONDS", "LOG_WRITE_FAILS"]

#: How long the scenario waits for a copy to come back: the postback function's 30 s timeout, plus 1 s (SQS FIFO
#: hands out another message of a delivery only once the one in flight is deleted or visible again).
LEASE_SECONDS = 31.0


# ------------------------------------------------------------------------------------------------ placement 4
#: The delivery-log write after each POST: the Deliveries UpdateItem that appends the attempt to the delivery's log.
LOG_WRITE_FAILS: dict[str, Any] = {"mode": "http_5xx", "operations": ["DynamoDB_20120810.UpdateItem"],
                                   "table": "DeliveriesTable", "contains": "list_append"}


def delivery_copies_log_write_failing(stack: Stack, sales: int = 4, settle_seconds: float = LEASE_SECONDS + 12,
                                      postback_wait: float = 60.0) -> tuple[Scenario, dict[str, list[str]]]:
    sc = Scenario(stack, "delivery-copies")
    sc.account = stack.account(sc.postback_path)
    stack.proxy.clear(counts=True)
    keys = [f"{sc.name}-{i:04d}-{secrets.token_hex(3)}" for i in range(sales)]
    for key in keys:  # the relay's send of each SALE's postback loses its answer once: its retry sends it again
        stack.proxy.set_rules([LOG_WRITE_FAILS, {"mode": "lost_answer",
                                                 "operations": ["AmazonSQS.SendMessageBatch"], "count": 1}])
        sc.sale(key, "copies")
        deadline = time.monotonic() + 10
        while stack.proxy.counts.get("lost_answer AmazonSQS.SendMessageBatch", 0) < keys.index(key) + 1 \
                and time.monotonic() < deadline:  # the relay reads the stream within a second
            time.sleep(0.05)
    # the delivery-log writes keep failing until each postback has been answered 2xx once, and a little longer
    # (the write's own retries of the last one)
    stack.proxy.set_rules([LOG_WRITE_FAILS])
    sc.wait_postbacks(postback_wait, settle=5.0)
    stack.proxy.clear()
    sc.notes["copies_queued"] = stack.proxy.counts.get("lost_answer AmazonSQS.SendMessageBatch", 0)
    sc.notes["log_writes_failed"] = stack.proxy.counts.get("http_5xx DynamoDB_20120810.UpdateItem", 0)
    time.sleep(settle_seconds)  # anything still in the queue comes back meanwhile: none may POST again
    snapshot = sc.charged_snapshot()
    return sc, sc.check(snapshot=snapshot)


# ------------------------------------------------------------------------------------------------ placement 7
def _tokenize_for_read(sc: Scenario, key: str) -> str | None:
    assert sc.partner is not None
    path = "/api/tokenization/tokenize"
    body = json.dumps({"reference": key[:50], "templateRef": sc.partner["templateRef"], "values": [
        {"name": "vault_token_card_number", "value": CARD},
        {"name": "vault_token_card_expiration", "value": "1230"}]}).encode()
    headers = {"Content-Type": "application/json",
               "Authorization": sign(sc.partner["partnerId"], sc.partner["hmacKey"], path, body)}
    url = sc.stack.base_url + path + "?omit=1"
    sent = time.monotonic()
    status, hdrs, raw, error = http(url, body, headers)
    answer = sc._answer("tokenize", key, "tokenize-omit", "POST", url, status, hdrs, raw, error, sent)
    return answer.body.get("bfid") if status == 200 and isinstance(answer.body, dict) else None


def _read(sc: Scenario, bfid: str, key: str, phase: str, idempotency_key: str | None) -> Answer:
    assert sc.partner is not None
    path = "/api/tokenization/read"
    body = json.dumps({"reference": key[:50], "bfid": bfid}).encode()
    headers = {"Content-Type": "application/json",
               "Authorization": sign(sc.partner["partnerId"], sc.partner["hmacKey"], path, body)}
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    sent = time.monotonic()
    status, hdrs, raw, error = http(sc.stack.base_url + path, body, headers)
    return sc._answer("read", key, phase, "POST", sc.stack.base_url + path, status, hdrs, raw, error, sent)


def _tokens(answer: Answer) -> dict[str, str] | None:
    if answer.status != 200 or not isinstance(answer.body, dict) or answer.body.get("success") is not True:
        return None
    return {v["name"]: v["value"] for v in answer.body.get("values") or []}


def reads_with_lost_claim_answers(stack: Stack, bfids: int = 12, probability: float = 0.6, retries: int = 6,
                                  workers: int = 4) -> tuple[Scenario, dict[str, list[str]]]:
    sc = Scenario(stack, "read-lost-claim")
    sc.partner = stack.hmac_partner()
    stack.proxy.clear(counts=True)
    made = [b for b in (_tokenize_for_read(sc, f"{sc.name}-t{i:03d}") for i in range(bfids)) if b]
    keyed: dict[str, list[Answer]] = {}
    rivals: dict[str, Answer] = {}

    random_fault: dict[str, Any] = {"mode": "lost_answer", "operations": ["DynamoDB_20120810.UpdateItem"],
                                    "probability": probability}

    def reader(bfid: str, placed: bool = False) -> None:
        key = f"{sc.name}-{secrets.token_hex(6)}"
        answers = [_read(sc, bfid, key, "read", key)]
        if placed:
            stack.proxy.set_rules([random_fault])
        rivals[bfid] = _read(sc, bfid, key + "-rival", "rival", None)  # another reader, no key
        for _ in range(retries):  # the caller retries with its key until it gets an answer
            if answers[-1].status not in (0, 500, 502, 503, 504):
                break
            answers.append(_read(sc, bfid, key, "read-retry", key))
        keyed[bfid] = answers

    # The placed fault first: every answer of the first bfid's claim lost (all the client's attempts), so its read
    # answers 500 with the claim applied; then the random faults, for its retries and the others.
    stack.proxy.set_rules([{"mode": "lost_answer", "operations": ["DynamoDB_20120810.UpdateItem"]}])
    if made:
        reader(made[0], placed=True)
    stack.proxy.set_rules([random_fault])
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(reader, made[1:]))
    stack.proxy.clear()
    for bfid, answers in keyed.items():  # faults off: one last retry for a caller still without an answer
        if answers[-1].status in (0, 500, 502, 503, 504):
            answers.append(_read(sc, bfid, answers[0].key, "read-after-faults", answers[0].key))
    v = sc.check(postbacks=False)
    v.update({"reads_unrecovered": [], "reads_by_two_readers": [], "reads_inconsistent": []})
    for bfid, answers in keyed.items():
        got = [t for t in map(_tokens, answers) if t is not None]
        if not got:
            v["reads_unrecovered"].append(f"{bfid[:16]}…: {[(a.phase, a.status, a.code) for a in answers]}")
        if any(g != got[0] for g in got):
            v["reads_inconsistent"].append(f"{bfid[:16]}…: {len(got)} different answers")
        rival = rivals.get(bfid)
        if rival is not None and _tokens(rival) is not None and got:
            v["reads_by_two_readers"].append(f"{bfid[:16]}…: the keyed reader and a reader without a key")
    sc.notes["bfids"] = len(made)
    sc.notes["first_reads_500"] = sum(1 for a in keyed.values() if a[0].status >= 500 or a[0].status == 0)
    sc.notes["rivals_3018"] = sum(1 for a in rivals.values() if a.code == 3018)
    return sc, v


# ------------------------------------------------------------------------------------------------ placement 8
def _page(sc: Scenario, token: str | None, limit: int, phase: str) -> Answer:
    assert sc.account is not None
    form = {"account_id": sc.account["account_id"], "api_accesskey": sc.account["api_accesskey"],
            "limit": str(limit), **({"next_token": token} if token else {})}
    url = sc.stack.base_url + "/api/rsapi/v1/transactions"
    sent = time.monotonic()
    status, hdrs, raw, error = http(url, urllib.parse.urlencode(form).encode(),
                                    {"Content-Type": "application/x-www-form-urlencoded"})
    return sc._answer("rsapi", token or "first", phase, "POST", url, status, hdrs, raw, error, sent)


def paging_at_the_clients_pace(stack: Stack, sales: int = 7, limit: int = 2, pace: float = 1.5,
                               probability: float = 0.3, retries: int = 5) -> tuple[Scenario, dict[str, list[str]]]:
    sc = Scenario(stack, "rsapi-paging")
    sc.account = stack.account(None)
    stack.proxy.clear(counts=True)
    keys = [f"{sc.name}-{i:04d}-{secrets.token_hex(3)}" for i in range(sales)]
    for key in keys:
        sc.sale(key, "sales")
    stack.proxy.set_rules([{"mode": "http_5xx", "status": 503, "operations": ["DynamoDB_20120810.Query"],
                            "probability": probability}])
    listed: list[str] = []
    v: dict[str, list[str]] = {"pages_refused": [], "pages_missing": [], "pages_duplicated": []}
    token: str | None = None
    for page in range(sales + 2):
        for _attempt in range(retries):  # a page that failed (500) is asked for again with the same token
            answer = _page(sc, token, limit, f"page-{page + 1}")
            if answer.status == 200:
                break
        body = answer.body if isinstance(answer.body, dict) else {}
        if answer.status != 200 or body.get("error") is not False:
            v["pages_refused"].append(f"page {page + 1}: HTTP {answer.status} {answer.code} {answer.message[:80]}")
            break
        listed += [str(t["transaction_id"]) for t in body.get("transactions") or []]
        token = body.get("next_token")
        if not token:
            break
        time.sleep(pace)  # the client's pace: the default range moves on meanwhile
    stack.proxy.clear()
    approved = {str(t["transaction_id"]) for t in stack.approved_transactions(sc.account["account_id"])}
    v["pages_missing"] = sorted(approved - set(listed))
    v["pages_duplicated"] = sorted(tx for tx, n in Counter(listed).items() if n > 1)
    base = sc.check(postbacks=False)
    base.update(v)
    sc.notes["pages"] = sum(1 for a in sc.answers if a.kind == "rsapi" and a.status == 200)
    sc.notes["listed"] = len(listed)
    return sc, base
