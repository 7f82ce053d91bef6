"""Issue 29 item 7 on moto: a stack of the previous design (Transactions keyed by account, LSI byCreatedAt) moves to
the spread table without losing a transaction, and RSAPI answers exactly as before.

The data is written by the previous release's own store (tests/integration/v1_store.py and v1_batches.py, frozen
copies) through the gateway handler, into a table of the previous schema (as template.yaml declared it then).
Every RSAPI answer (date listings page by page with their tokens, batch listings, lookups by id) is recorded
with that code, then asked again of the new code: during the switch-over (the new table empty or partly filled,
the old one named by TRANSACTIONS_LEGACY_TABLE), after the backfill, and after the fallback is removed. They
must be byte-for-byte the same JSON, next_token values included (a listing begun before the switch continues
after it). Refunds and captures of migrated transactions, and a change made during the switch-over that the
backfill must not overwrite, are checked too.
"""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from tests.conftest import reset_platform_state
from tests.helpers import admin, call
from tests.integration import v1_batches, v1_store
from vaultcore import clock
from vaultcore.gateway.errors import E

PATH = "/api/qsapi/3.8"
RSAPI = "/api/rsapi/v1/transactions"
VISA = "4242424242424242"
OLD_TABLE = "TransactionsTable-previous"
DAY = 24 * 3600


def _create_old_table(client: Any = None, name: str = OLD_TABLE) -> None:
    """The previous design's table, as template.yaml declared it before issue 29 (on moto, or ``client``'s)."""
    (client or boto3.client("dynamodb", region_name="us-east-1")).create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "account_id", "AttributeType": "S"},
                              {"AttributeName": "transaction_id", "AttributeType": "S"},
                              {"AttributeName": "created_at", "AttributeType": "N"}],
        KeySchema=[{"AttributeName": "account_id", "KeyType": "HASH"},
                   {"AttributeName": "transaction_id", "KeyType": "RANGE"}],
        LocalSecondaryIndexes=[{"IndexName": "byCreatedAt", "Projection": {"ProjectionType": "ALL"},
                                "KeySchema": [{"AttributeName": "account_id", "KeyType": "HASH"},
                                              {"AttributeName": "created_at", "KeyType": "RANGE"}]}])


class Merchant:
    def __init__(self, platform: Any) -> None:
        status, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {"credit": True}})
        assert status == 201, account
        self.platform = platform
        self.creds = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}

    def post(self, **variables: Any) -> dict:
        status, _, body = call(self.platform, "GatewayFunction", "POST", PATH, json.dumps({**self.creds, **variables}),
                               {"Content-Type": "application/json"}, resource=PATH)
        assert status == 200, body
        return body

    def sale(self, amount: str = "10.00", ttype: str = "SALE") -> dict:
        body = self.post(transaction_type=ttype, tender_type="CARD", card_number=VISA, card_expiration="1230",
                         transaction_amount=amount, currency="USD")
        assert body["transaction_approved"] is True, body
        return body

    def rsapi(self, **variables: Any) -> dict:
        status, _, body = call(self.platform, "ReportingFunction", "POST", RSAPI, {**self.creds, **variables})
        assert status == 200, body
        return body


def _swap(monkeypatch: pytest.MonkeyPatch, store_module: Any, batches_module: Any) -> None:
    from vaultcore.admin import accounts as admin_accounts
    from vaultcore.gateway import reporting, service

    for module in (service, reporting):
        monkeypatch.setattr(module, "store", store_module)
        monkeypatch.setattr(module, "batches", batches_module)
    monkeypatch.setattr(admin_accounts, "transactions", store_module)


def _use_previous_release(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gateway and RSAPI of the previous release: its store and batches, on the old table."""
    monkeypatch.setenv("TRANSACTIONS_TABLE", OLD_TABLE)
    _swap(monkeypatch, v1_store, v1_batches)
    reset_platform_state()


def _use_this_release(monkeypatch: pytest.MonkeyPatch, table: str, legacy: str | None) -> None:
    from vaultcore.gateway import batches, store

    offset = clock.now() - clock.time.time()
    _swap(monkeypatch, store, batches)
    monkeypatch.setenv("TRANSACTIONS_TABLE", table)
    monkeypatch.setenv("TRANSACTION_SHARDS", "8")  # small: 8 shards for a few dozen transactions of one merchant
    if legacy:
        monkeypatch.setenv("TRANSACTIONS_LEGACY_TABLE", legacy)
    else:
        monkeypatch.delenv("TRANSACTIONS_LEGACY_TABLE", raising=False)
    reset_platform_state()  # a new container: cold caches (the clock's offset is kept, as the test set it)
    clock.set_offset(offset)


def _history(m: Merchant, base: float) -> dict[str, Any]:
    """A merchant's history over four days: ties within a second, authorizations and captures, refunds (one a
    VOID), a reversal, a credit (its daily counter item), two settlements (the BATCHES item), an ACH return."""
    ids: dict[str, Any] = {"sales": []}
    for i in range(30):
        # 30 sales over three days, several in the same second (ties are ordered by transaction id)
        clock.set_offset(base - 3 * DAY + (i // 3) * 7200)
        ids["sales"].append(m.sale(f"{10 + i}.00")["transaction_id"])
    clock.set_offset(base - 2 * DAY)
    auth = m.sale("20.00", "AUTHORIZATION")["transaction_id"]
    ids["auth_open"] = m.sale("7.00", "AUTHORIZATION")["transaction_id"]
    ids["capture"] = m.post(transaction_type="CAPTURE", token_id=auth, transaction_amount="15.00")["transaction_id"]
    ids["refund"] = m.post(transaction_type="REFUND", token_id=ids["sales"][0], transaction_amount="4.00")
    assert m.post(transaction_type="REFUND", token_id=ids["sales"][1],
                  transaction_amount="11.00")["authorization_message"] == "VOID"
    ids["reversal"] = m.post(transaction_type="REVERSAL", token_id=ids["sales"][2])["transaction_id"]
    ids["credit"] = m.post(transaction_type="CREDIT", tender_type="CARD", card_number=VISA, card_expiration="1230",
                           transaction_amount="3.00")["transaction_id"]
    ids["ach"] = m.post(transaction_type="SALE", bank_account_number="000000000001", bank_routing_number="011000015",
                        transaction_amount="60.00")["transaction_id"]
    clock.set_offset(base - DAY)
    assert m.post(transaction_type="SETTLE-BATCH")["batch_id"] == 1
    clock.set_offset(base - 3600)
    ids["late"] = [m.sale("5.00")["transaction_id"] for _ in range(4)]
    clock.set_offset(base)
    ids["count"] = 43  # 30 sales, 2 authorizations, a capture, a refund, a void, a reversal, a credit, an ACH
    #                    sale, a settlement, 4 sales
    return ids


def _answers(m: Merchant, ids: dict[str, Any], *, base: float, first_pages: dict[str, str] | None = None
             ) -> dict[str, Any]:
    """Every RSAPI answer about the history (JSON text, so that the comparison is exact)."""
    from datetime import UTC, datetime

    noon = clock.now()  # the clock stands at noon (offset ``base``) when the answers are asked for
    start = datetime.fromtimestamp(noon - 4 * DAY, UTC).strftime("%Y-%m-%d")
    end = datetime.fromtimestamp(noon, UTC).strftime("%Y-%m-%d")
    out: dict[str, Any] = {}
    # (variables, page sizes): small pages cross shard and tie boundaries; 100 is the whole range at once
    listings = {"range": ({"start_date": start, "end_date": end}, ("3", "100")),
                "batch1": ({"batch_id": "1"}, ("4",)), "batch2": ({"batch_id": "2"}, ("1",)),
                "default": ({}, ("1", "2"))}
    for name, (variables, limits) in listings.items():
        for limit in limits:
            pages, token = [], (first_pages or {}).get(f"{name}/{limit}")
            while True:
                page = m.rsapi(limit=limit, **variables, **({"next_token": token} if token else {}))
                pages.append(json.dumps(page, sort_keys=True))
                token = page["next_token"]
                if not token:
                    break
            out[f"{name}/{limit}"] = pages
    every = [*ids["sales"], ids["auth_open"], ids["capture"], ids["reversal"], ids["credit"], ids["ach"], *ids["late"]]
    out["lookups"] = [json.dumps(m.rsapi(transaction_id=t), sort_keys=True) for t in every]
    return out


def _normal(answers: dict[str, Any]) -> dict[str, Any]:
    """The answers, without a listing's trailing empty page and the token that led to it.

    The previous release answered a full last page with a next_token whenever DynamoDB's Query returned a
    LastEvaluatedKey: on DynamoDB whenever the page was full, on moto whenever the partition held more items, in
    the range or not; the next page was then empty. The merge knows whether more follow and says so: that
    trailing empty page is the one difference, and everything else must be the same, tokens included.
    """
    out: dict[str, Any] = {}
    for name, pages in answers.items():
        if name == "lookups":
            out[name] = pages
            continue
        parsed = [json.loads(p) for p in pages]
        if len(parsed) > 1 and parsed[-1]["transactions"] == [] and parsed[-1]["next_token"] is None:
            parsed.pop()
            parsed[-1]["next_token"] = None
        out[name] = [json.dumps(p, sort_keys=True) for p in parsed]
    return out


def _first_tokens(answers: dict[str, Any]) -> dict[str, str]:
    """The next_token of each listing's first page (to continue, with the new code, a listing begun before)."""
    return {name: json.loads(pages[0])["next_token"] for name, pages in answers.items()
            if name != "lookups" and len(pages) > 1}


def test_migration_keeps_every_answer_and_every_transaction(platform, frozen_clock, monkeypatch, tmp_path, capsys):
    import os

    from vaultcore.gateway import migrate, store

    base = frozen_clock - frozen_clock % DAY + 12 * 3600 - frozen_clock  # the clock's offset to noon UTC today
    new_table = os.environ["TRANSACTIONS_TABLE"]
    _create_old_table()
    m = Merchant(platform)

    _use_previous_release(monkeypatch)
    ids = _history(m, base)
    before = _answers(m, ids, base=base)
    assert len(before["range/3"]) == 15 and len(json.loads(before["range/100"][0])["transactions"]) == ids["count"]
    old_count = len(boto3.client("dynamodb", region_name="us-east-1").scan(TableName=OLD_TABLE)["Items"])

    # Switch-over: the new code, the new table still empty, the old one named
    _use_this_release(monkeypatch, new_table, OLD_TABLE)
    assert _normal(_answers(m, ids, base=base)) == _normal(before)
    # a listing begun with the previous release continues with this one, token for token
    tokens = _first_tokens(before)
    assert len(tokens) == 5  # every listing of small pages
    continued = _answers(m, ids, base=base, first_pages=tokens)
    assert _normal(continued) == _normal({k: before[k][1:] if k in tokens else before[k] for k in before})
    # A change during the switch-over: the refunded sale is copied on first change, then refunded again
    again = m.post(transaction_type="REFUND", token_id=ids["sales"][0], transaction_amount="1.00")
    assert again["authorization_message"] == "REFUND" and again["transaction_approved"] is True
    over = m.post(transaction_type="REFUND", token_id=ids["sales"][0], transaction_amount="5.01")
    assert over["error_code"] == E.REFUND_AMOUNT  # 10.00 - 4.00 - 1.00 left: the legacy refund counted
    during = _answers(m, ids, base=base)
    assert during != before  # that refund shows (its own record, the sale's refunded amount)

    # The backfill: everything copied once; a second run copies nothing; nothing overwritten
    assert migrate.verify(OLD_TABLE, new_table).missing  # before the backfill: most items only in the old table
    state = tmp_path / "backfill.json"
    first = migrate.backfill(OLD_TABLE, new_table, segments=3, state_path=state, page_size=7)
    assert (first.scanned, first.copied + first.present) == (old_count, old_count)
    assert first.present == 1  # the sale copied on change above
    resumed = migrate.backfill(OLD_TABLE, new_table, segments=3, state_path=state)
    assert resumed.scanned == 0  # every segment is done in the state file: nothing to read again
    second = migrate.backfill(OLD_TABLE, new_table, segments=3)  # from scratch: nothing copied twice
    assert (second.copied, second.present) == (0, old_count)
    assert migrate.main(["--from", OLD_TABLE, "--to", new_table, "--verify"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {
        "scanned": old_count, "missing": 0, "first_missing": []}
    assert _answers(m, ids, base=base) == during
    record = m.rsapi(transaction_id=ids["sales"][0])["transaction"]
    assert record["refunded_amount"] == 5.0  # the change made during the switch-over survived the backfill

    # The fallback removed: the same answers from the new table alone (but for the refund made since)
    _use_this_release(monkeypatch, new_table, None)
    assert _answers(m, ids, base=base) == during
    # items are spread over the shards, and none is keyed the old way
    items = boto3.client("dynamodb", region_name="us-east-1").scan(TableName=new_table)["Items"]
    mine = [i for i in items if i["account_id"]["S"] == m.creds["account_id"]]
    assert len({i["pk"]["S"] for i in mine}) >= 4  # 40-odd random ids on 8 shards: 3 or fewer is ~1e-17
    assert all(i["pk"]["S"] == store.partition_key(m.creds["account_id"],
                                                   store.shard_of(i["transaction_id"]["S"], 8)) for i in mine)

    # Migrated transactions behave as before: capture of an open authorization, refund of a settled sale
    capture = m.post(transaction_type="CAPTURE", token_id=ids["auth_open"], transaction_amount="7.00")
    assert capture["transaction_approved"] is True
    assert m.rsapi(transaction_id=ids["auth_open"])["transaction"]["status"] == "CAPTURED"
    refund = m.post(transaction_type="REFUND", token_id=ids["sales"][5], transaction_amount=f"{15}.00")
    assert refund["authorization_message"] == "REFUND"  # settled in batch 1: a refund, not a void
    assert m.post(transaction_type="REVERSAL", token_id=ids["sales"][6])["error_code"] == E.NOT_REVERSIBLE
    settle = m.post(transaction_type="SETTLE-BATCH")
    assert settle["batch_id"] == 2  # the migrated BATCHES item: batch 1 closed before the switch

