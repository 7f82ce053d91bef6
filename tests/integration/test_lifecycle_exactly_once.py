"""Issue 28 in-process: the lifecycle's exactly-once, one placed DynamoDB fault per test (placements 1, 2, 3, 5, 6).

Each fault is placed at the AWS boundary only: :class:`Placed` stands in for the DynamoDB client of the gateway's
modules and makes one named call (picked by operation and a predicate on its arguments) fail ``count`` times --
``before`` (DynamoDB never applied it: a 503 after the SDK's retries), ``after`` (applied, then no answer) -- and
passes every other call to moto untouched. Clients retry exactly as docs/integrators/gateway.md says (same key,
same variables; after "outcome unknown", once the 30-second lock has passed). After each scenario
:func:`reconcile` checks the books against the tables and RSAPI:

* Σ refund records = ``refunded_amount`` = what the clients were told, and ``refund_ids`` names exactly them;
* the day's credit counter = Σ approved credits (and its takers are exactly them);
* statuses agree (RSAPI VOIDED / REFUNDED);
* one record per key.

The clock is pinned (``vaultcore.clock`` offset) to noon UTC of today, so a "+31 s" step never crosses a day.
"""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from tests.helpers import admin, call
from vaultcore import clock
from vaultcore.settings import settings

PATH = "/api/qsapi/3.8"
VISA = "4242424242424242"
DECLINED_CARD = "4000000000000002"  # the sandbox's generic decline (500)
MODULES = ("vaultcore.gateway.store", "vaultcore.gateway.idempotency", "vaultcore.gateway.batches",
           "vaultcore.postback.deliveries")
NOTHING_CHARGED = "nothing was charged"


# ------------------------------------------------------------------------------------------------ the placed fault
class Placed:
    """The real DynamoDB client, except that calls of ``operation`` matching ``when(kwargs)`` fail ``count``
    times: ``mode`` ``before`` (not applied: ServiceUnavailable), ``after`` (applied, then the connection
    drops) or ``lost`` (applied, its answer lost, and the SDK sends the same request again)."""

    def __init__(self, real: Any, operations: tuple[str, ...], when: Any, count: int, mode: str) -> None:
        self._real, self._operations, self._when, self._mode = real, operations, when, mode
        self.left = count
        self.hits = 0

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)
        if name not in self._operations:
            return method

        def placed(**kwargs: Any) -> Any:
            if self.left > 0 and self._when(kwargs):
                self.left -= 1
                self.hits += 1
                if self._mode in ("after", "lost"):
                    try:
                        method(**kwargs)
                    except Exception:  # noqa: BLE001 - whatever it answered is lost too
                        pass
                    if self._mode == "lost":
                        return method(**kwargs)
                    raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")
                raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "placed fault"},
                                   "ResponseMetadata": {"HTTPStatusCode": 503}}, name)  # type: ignore[typeddict-item]
            return method(**kwargs)

        return placed


@pytest.fixture
def place(platform, monkeypatch):
    """``place(operations, when, count=1, mode="before")`` puts one fault in front of the gateway's DynamoDB
    (``operations``: one client method name, or several separated by spaces)."""
    import importlib

    from vaultcore.store.aws import dynamodb

    def install(operation: str, when: Any, count: int = 1, mode: str = "before") -> Placed:
        wrapper = Placed(dynamodb(), tuple(operation.split()), when, count, mode)
        for module in MODULES:
            monkeypatch.setattr(importlib.import_module(module), "dynamodb", lambda: wrapper)
        return wrapper

    return install


@pytest.fixture
def noon(platform):
    """Pin the platform's clock to 12:00:00 UTC today; ``noon(+31)`` moves it on."""
    now = time.time()
    base = (int(now) // 86400) * 86400 + 12 * 3600 - now

    def at(seconds: float = 0.0) -> None:
        clock.set_offset(base + seconds)

    at(0)
    return at


def _tx_table(kwargs: dict) -> bool:
    return kwargs.get("TableName") == settings().transactions_table


def _is_batch_read(kwargs: dict) -> bool:
    return _tx_table(kwargs) and kwargs.get("Key", {}).get("transaction_id", {}).get("S") == "BATCHES"


def _is_complete(kwargs: dict) -> bool:
    return (kwargs.get("TableName") == settings().idempotency_table
            and ":done" in kwargs.get("ExpressionAttributeValues", {}))


def _sets_voided_by(operation: str):
    def when(kwargs: dict) -> bool:
        updates = [kwargs] if operation == "update_item" else [
            t["Update"] for t in kwargs.get("TransactItems", []) if "Update" in t]
        return any("voided_by" in u.get("UpdateExpression", "") for u in updates)

    return when


def _credit_record(kwargs: dict) -> bool:
    items = [kwargs.get("Item", {})] + [t["Put"]["Item"] for t in kwargs.get("TransactItems", []) if "Put" in t]
    return any(i.get("transaction_type", {}).get("S") == "CREDIT" and i.get("writer", {}).get("S") != "#fence"
               for i in items)


def _fence(kwargs: dict) -> bool:
    return _tx_table(kwargs) and kwargs.get("Item", {}).get("writer", {}).get("S") == "#fence"


# ------------------------------------------------------------------------------------------------ clients
class Merchant:
    def __init__(self, platform, **options: Any) -> None:
        body: dict[str, Any] = {"options": options}
        if options.get("tokenization"):
            status, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "Issue 28", "apiSecurity": "hmac"})
            assert status == 201
            body["partnerId"] = partner["partnerId"]
        status, account = admin(platform, "POST", "/admin/v1/accounts", body)
        assert status == 201, account
        self.platform = platform
        self.account_id = account["account_id"]
        self.creds = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
        self.told: dict[str, dict] = {}  # key -> the approved answer the client was given (first or replay)

    def post(self, key: str | None = None, **variables: Any) -> tuple[int, dict, dict]:
        headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
        status, hdrs, body = call(self.platform, "GatewayFunction", "POST", PATH,
                                  json.dumps({**self.creds, **variables}), headers, resource=PATH)
        if key and status == 200 and body.get("transaction_approved"):
            seen = self.told.setdefault(key, body)
            assert seen["transaction_id"] == body["transaction_id"], ("one record per key", key, seen, body)
        return status, hdrs, body

    def retry(self, key: str, on_unknown: Any = None, **variables: Any) -> tuple[int, dict, dict]:
        """As the integration guide says: error 1 "nothing was charged" -> retry at once; "outcome unknown" ->
        retry with the same key after 30 s (``on_unknown`` moves the clock); 601 -> the same."""
        for _ in range(4):
            status, hdrs, body = self.post(key, **variables)
            if status == 500 and NOTHING_CHARGED in str(body.get("error_message")):
                continue
            if status in (500, 409):
                assert on_unknown is not None, body
                on_unknown()
                continue
            return status, hdrs, body
        raise AssertionError(f"no settled answer for {key}: {status} {body}")

    def sale(self, amount: str = "10.00") -> dict:
        status, _, body = self.post(transaction_type="SALE", tender_type="CARD", card_number=VISA,
                                    card_expiration="1230", transaction_amount=amount, currency="USD")
        assert status == 200 and body["transaction_approved"] is True, body
        return body

    def report(self, transaction_id: str) -> dict:
        status, _, body = call(self.platform, "ReportingFunction", "POST", "/api/rsapi/v1/transactions",
                               {**self.creds, "transaction_id": transaction_id})
        assert status == 200, body
        return body["transaction"]

    def items(self) -> list[dict]:
        from vaultcore.store.ddb import from_item

        # The account's items are spread over shards (issue 29): a consistent scan of the (small) test table
        ddb = boto3.client("dynamodb", region_name="us-east-1")
        out = ddb.scan(TableName=settings().transactions_table, FilterExpression="account_id = :a",
                       ExpressionAttributeValues={":a": {"S": self.account_id}}, ConsistentRead=True)["Items"]
        return [from_item(i) for i in out]


def _cents(amount: Any) -> int:
    return round(float(amount) * 100)


def reconcile(m: Merchant) -> dict[str, list[str]]:
    """The invariants of issue 28 against the tables and RSAPI; returns the violations by name."""
    from vaultcore.gateway.service import CREDIT_DAILY_CENTS

    items = m.items()
    records = {i["transaction_id"]: i for i in items if i.get("created_at") is not None}
    told = {body["transaction_id"]: body for body in m.told.values()}
    v: dict[str, list[str]] = {"refunds": [], "credits": [], "statuses": [], "one_record_per_key": []}
    for original in records.values():
        if "refundable_cents" not in original:
            continue
        oid = original["transaction_id"]
        refunds = [r for r in records.values()
                   if r.get("transaction_type") == "REFUND" and r.get("token_id") == oid and r.get("transaction_approved")]
        recorded = sum(int(r["transaction_cents"]) for r in refunds)
        refunded = int(original.get("refunded_cents") or 0)
        told_cents = sum(_cents(b["transaction_amount"]) for b in told.values()
                         if b.get("transaction_type") == "REFUND" and b.get("token_id") == oid)
        if not recorded == refunded == told_cents:
            v["refunds"].append(f"{oid}: records {recorded}, refunded_cents {refunded}, told {told_cents}")
        if set(original.get("refund_ids") or ()) != {r["transaction_id"] for r in refunds}:
            v["refunds"].append(f"{oid}: refund_ids {original.get('refund_ids')} vs records "
                                f"{sorted(r['transaction_id'] for r in refunds)}")
        if int(original["refundable_cents"]) != int(original["transaction_cents"]) - refunded:
            v["refunds"].append(f"{oid}: refundable {original['refundable_cents']} + refunded {refunded} "
                                f"!= {original['transaction_cents']}")
        status = m.report(oid)["status"]
        voids = [r for r in refunds if r.get("authorization_message") == "VOID"]
        expected = "VOIDED" if voids else ("REFUNDED" if refunded else None)
        if expected and status != expected:
            v["statuses"].append(f"{oid}: RSAPI {status}, expected {expected}")
    approved_credits: dict[str, int] = {}
    for r in records.values():
        if r.get("transaction_type") == "CREDIT" and r.get("transaction_approved"):
            approved_credits[r["transaction_id"]] = int(r["transaction_cents"])
    for counter in (i for i in items if str(i["transaction_id"]).startswith("CREDITS#")):
        used = CREDIT_DAILY_CENTS - int(counter["remaining"])
        takers = set(counter.get("takers") or ())
        if used != sum(approved_credits.values()) or takers != set(approved_credits):
            v["credits"].append(f"{counter['transaction_id']}: used {used} by {sorted(takers)}; approved credits "
                                f"{approved_credits}")
    for key, body in m.told.items():
        if body["transaction_id"] not in records:
            v["one_record_per_key"].append(f"{key}: told {body['transaction_id']}, no record")
    kinds = ("REFUND", "CREDIT", "REVERSAL", "CAPTURE")
    unkeyed = {r["transaction_id"] for r in records.values()
               if r.get("transaction_type") in kinds and r.get("transaction_approved")} - set(told)
    if unkeyed:
        v["one_record_per_key"].append(f"approved records no client was told of: {sorted(unkeyed)}")
    return {k: x for k, x in v.items() if x}


# ------------------------------------------------------------------------------------------------ placement 1
def test_a_full_refund_whose_batch_read_fails_is_made_once_or_not_at_all(platform, place, noon):
    """The account's batch read (full refund only) answering 503 three times used to come after the refund was
    applied, with no undo: a phantom refund, 410 on the keyed retry, REFUNDED in RSAPI."""
    m = Merchant(platform)
    sale = m.sale("10.00")
    fault = place("get_item", _is_batch_read, count=1)
    status, _, first = m.post("refund-1", transaction_type="REFUND", token_id=sale["transaction_id"],
                              transaction_amount="10.00")
    assert fault.hits == 1
    assert status == 500 and NOTHING_CHARGED in first["error_message"], first
    status, _, refund = m.retry("refund-1", transaction_type="REFUND", token_id=sale["transaction_id"],
                                transaction_amount="10.00")
    assert status == 200 and refund["transaction_approved"] is True, refund
    assert refund["authorization_message"] == "VOID"
    assert reconcile(m) == {}
    assert m.report(sale["transaction_id"])["status"] == "VOIDED"


# ------------------------------------------------------------------------------------------------ placement 3
def test_declined_credits_take_nothing_from_the_daily_limit(platform, noon):
    """Two declined 10,000.00 credits used to leave 5,000.00 of the day's 25,000.00: a good one was refused 421."""
    m = Merchant(platform, credit=True)
    for n in range(2):
        status, _, declined = m.post(f"declined-{n}", transaction_type="CREDIT", card_number=DECLINED_CARD,
                                     card_expiration="1230", transaction_amount="10000.00")
        assert status == 200 and declined["transaction_approved"] is False, declined
    for n in range(2):
        status, _, good = m.post(f"good-{n}", transaction_type="CREDIT", card_number=VISA, card_expiration="1230",
                                 transaction_amount="10000.00")
        assert good["transaction_approved"] is True, good
    assert reconcile(m) == {}


def test_a_declined_credit_whose_record_outcome_is_unknown_takes_nothing_after_the_keyed_retry(platform, place, noon):
    """Declines take nothing under faults too: the declined record's write applied but unanswered, the keyed
    retry finds it."""
    m = Merchant(platform, credit=True)
    variables = {"transaction_type": "CREDIT", "card_number": DECLINED_CARD, "card_expiration": "1230",
                 "transaction_amount": "10000.00"}
    place("put_item transact_write_items", lambda kw: _credit_record(kw) or _fence(kw), count=2,
          mode="after")
    status, _, declined = m.retry("declined-unknown", on_unknown=lambda: noon(31), **variables)
    assert declined["transaction_approved"] is False, declined
    assert reconcile(m) == {}
    status, _, good = m.post("good", transaction_type="CREDIT", card_number=VISA, card_expiration="1230",
                             transaction_amount="10000.00")
    assert good["transaction_approved"] is True, good
    assert reconcile(m) == {}


# ------------------------------------------------------------------------------------------------ placement 2
def test_the_keyed_retry_of_an_unknown_credit_gives_back_the_fenced_attempts_allowance(platform, place, noon):
    """"Outcome unknown" (the credit's write and its fence both unanswered, not applied), then the keyed retry
    after 30 s: the first attempt is fenced, and its share of the day used to stay taken (1 credit, 2 shares)."""
    m = Merchant(platform, credit=True)
    variables = {"transaction_type": "CREDIT", "card_number": VISA, "card_expiration": "1230",
                 "transaction_amount": "1000.00"}
    fault = place("put_item transact_write_items", lambda kw: _credit_record(kw) or _fence(kw), count=2)
    status, _, first = m.post("credit-1", **variables)
    assert fault.hits == 2 and status == 500 and "unknown" in first["error_message"], first
    noon(31)
    status, headers, credit = m.retry("credit-1", on_unknown=lambda: noon(62), **variables)
    assert status == 200 and credit["transaction_approved"] is True, credit
    assert reconcile(m) == {}


# ------------------------------------------------------------------------------------------------ placement 6
@pytest.mark.parametrize("kind", ["SALE", "REFUND"])
def test_a_replay_of_an_approved_operation_whose_complete_write_failed_is_answered_at_once(platform, place, noon,
                                                                                          kind):
    """The idempotency "complete" write failing used to leave the key INPROGRESS: its replay got 409/601 for
    30 s. The transaction record is the truth: the replay answers it, with Idempotent-Replayed. Since issue 29
    (cost per operation) the recorded transaction is the key's answer and no "complete" write is made at all
    (the placed fault never fires): the same replays, from the record."""
    m = Merchant(platform)
    if kind == "SALE":
        variables = {"transaction_type": "SALE", "tender_type": "CARD", "card_number": VISA,
                     "card_expiration": "1230", "transaction_amount": "10.00", "currency": "USD"}
    else:
        sale = m.sale("10.00")
        variables = {"transaction_type": "REFUND", "token_id": sale["transaction_id"], "transaction_amount": "4.00"}
    fault = place("update_item", _is_complete, count=1)
    status, _, first = m.post("op-1", **variables)
    assert fault.hits == 0 and status == 200 and first["transaction_approved"] is True, first
    status, headers, replay = m.post("op-1", **variables)
    assert status == 200 and headers.get("Idempotent-Replayed") == "true", (status, replay)
    assert replay == first
    status, headers, again = m.post("op-1", **variables)  # the replay repaired the record: a plain replay now
    assert status == 200 and headers.get("Idempotent-Replayed") == "true" and again == first
    assert reconcile(m) == {}


# ------------------------------------------------------------------------------------------------ placement 5
@pytest.mark.parametrize("operation", ["update_item", "transact_write_items"])
def test_a_void_is_reflected_in_rsapi_when_its_mark_write_fails(platform, place, noon, operation):
    """A full refund answered VOID used to leave the SALE REFUNDED for good when the VOID mark write failed."""
    m = Merchant(platform)
    sale = m.sale("12.34")
    place(operation, _sets_voided_by(operation), count=1)
    status, _, void = m.retry("void-1", on_unknown=lambda: noon(31), transaction_type="REFUND",
                              token_id=sale["transaction_id"], transaction_amount="12.34")
    assert status == 200 and void["authorization_message"] == "VOID", void
    assert m.report(sale["transaction_id"])["status"] == "VOIDED"
    assert reconcile(m) == {}


def test_a_keyed_replay_repairs_a_void_recorded_without_its_mark(platform, noon):
    """A VOID recorded before the mark was written with it (main's separate write failed): the keyed replay sets
    the mark, and RSAPI shows VOIDED."""
    from vaultcore.gateway import store

    m = Merchant(platform)
    sale = m.sale("5.55")
    variables = {"transaction_type": "REFUND", "token_id": sale["transaction_id"], "transaction_amount": "5.55"}
    status, _, void = m.post("void-legacy", **variables)
    assert void["authorization_message"] == "VOID"
    boto3.client("dynamodb", region_name="us-east-1").update_item(
        TableName=settings().transactions_table, UpdateExpression="REMOVE voided_by",
        Key=store.key_for_write(m.account_id, sale["transaction_id"]))
    assert m.report(sale["transaction_id"])["status"] == "REFUNDED"  # as main left it
    status, headers, replay = m.post("void-legacy", **variables)
    assert headers.get("Idempotent-Replayed") == "true" and replay == void
    assert m.report(sale["transaction_id"])["status"] == "VOIDED"
    assert reconcile(m) == {}


# ------------------------------------------------------------------------------------------------ retries of one write
def test_the_one_transaction_of_a_void_and_of_a_declined_credit_recognises_its_own_retry(platform, place, noon):
    """The VOID's mark and a declined CREDIT's give-back are written with their item in one TransactWriteItems:
    every answer lost and the same request sent again (its second application fails a condition) is still this
    request's write -- one answer, nothing undone, nothing given back twice."""
    m = Merchant(platform, credit=True)
    sale = m.sale("7.00")
    fault = place("transact_write_items", lambda kw: True, count=10, mode="lost")
    status, _, void = m.post("void", transaction_type="REFUND", token_id=sale["transaction_id"],
                             transaction_amount="7.00")
    assert status == 200 and void["authorization_message"] == "VOID", void
    status, _, declined = m.post("declined", transaction_type="CREDIT", card_number=DECLINED_CARD,
                                 card_expiration="1230", transaction_amount="10000.00")
    assert status == 200 and declined["transaction_approved"] is False, declined
    assert fault.hits == 2
    assert m.report(sale["transaction_id"])["status"] == "VOIDED"
    assert reconcile(m) == {}
    for n in range(2):
        status, _, good = m.post(f"good-{n}", transaction_type="CREDIT", card_number=VISA, card_expiration="1230",
                                 transaction_amount="10000.00")
        assert good["transaction_approved"] is True, good
    assert reconcile(m) == {}


def test_a_credit_whose_take_is_unanswered_gives_it_back_before_saying_nothing_was_charged(platform, place, noon):
    """The allowance take applied but unanswered: given back (conditional on the credit's id) before the
    answer "nothing was charged"; the retry then has the whole day."""
    m = Merchant(platform, credit=True)
    variables = {"transaction_type": "CREDIT", "card_number": VISA, "card_expiration": "1230",
                 "transaction_amount": "10000.00"}

    def take(kwargs: dict) -> bool:
        return str(kwargs.get("Key", {}).get("transaction_id", {}).get("S", "")).startswith("CREDITS#") and \
            "takers :ids" in kwargs.get("UpdateExpression", "") and "ADD" in kwargs.get("UpdateExpression", "")

    fault = place("update_item", take, count=1, mode="after")
    status, _, first = m.post("credit-take", **variables)
    assert fault.hits == 1 and status == 500 and NOTHING_CHARGED in first["error_message"], first
    assert reconcile(m) == {}
    for n in range(2):
        status, _, credit = m.retry(f"credit-{n}", **variables)
        assert credit["transaction_approved"] is True, credit
    assert reconcile(m) == {}


def test_a_refund_undo_that_fails_on_the_keyed_retry_keeps_the_outcome_unknown(platform, place, noon):
    """Takeover of a fenced REFUND whose undo (revert) fails: "outcome unknown" again, never "nothing was
    charged" with the amount still taken; the next keyed retry gives it back and refunds once."""
    m = Merchant(platform)
    sale = m.sale("10.00")
    variables = {"transaction_type": "REFUND", "token_id": sale["transaction_id"], "transaction_amount": "4.00"}

    def refund_item_or_fence(kwargs: dict) -> bool:
        item = kwargs.get("Item", {})
        return _tx_table(kwargs) and (item.get("transaction_type", {}).get("S") == "REFUND" or _fence(kwargs))

    place("put_item", refund_item_or_fence, count=2)  # the refund's item and its fence: outcome unknown
    status, _, first = m.post("refund-u", **variables)
    assert status == 500 and "unknown" in first["error_message"], first
    noon(31)
    place("update_item", lambda kw: "DELETE refund_ids" in kw.get("UpdateExpression", ""), count=1)
    status, _, second = m.post("refund-u", **variables)
    assert status == 500 and "unknown" in second["error_message"], second
    noon(62)
    status, _, refund = m.retry("refund-u", on_unknown=lambda: noon(93), **variables)
    assert status == 200 and refund["transaction_approved"] is True, refund
    assert reconcile(m) == {}
