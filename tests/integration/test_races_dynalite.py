"""The money and authentication races on a second DynamoDB implementation (dynalite, tests/dynalite.py).

The same conditional writes the gateway, the HMAC check and the tokenization API's one-time read make, through the platform's own AWS client (the
JSON-protocol client Lambda uses), with many threads at once against dynalite's per-item locking. The moto
versions of these races are in test_gateway_lifecycle.py, test_gateway.py and test_exactly_once.py.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest

from tests.dynalite import dynalite_server

TABLES = ("TransactionsV2Table", "NoncesTable", "IdempotencyTable", "TokensTable")
ACCOUNT = "123456789012"


@pytest.fixture(scope="module")
def endpoint():
    with dynalite_server() as url:
        yield url


@pytest.fixture
def dynalite(endpoint, monkeypatch):
    """The template's tables (fresh names per test) on dynalite; vaultcore's clients pointed at it."""
    import uuid

    from local.template import load_template, parameters_with_defaults, render
    from tests.conftest import reset_platform_state

    for name in ("AWS_PROFILE", "VAULT_AWS_SDK"):
        monkeypatch.delenv(name, raising=False)
    creds = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
             "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}
    for k, v in creds.items():
        monkeypatch.setenv(k, v)
    template = load_template()
    resources = render(template, parameters_with_defaults(template, {"Environment": "cert"}))
    ddb = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=endpoint, aws_access_key_id="testing",
                       aws_secret_access_key="testing")
    suffix = uuid.uuid4().hex[:8]
    for logical in TABLES:
        props = resources[logical]["Properties"]
        name = f"{logical}-{suffix}"
        kwargs = {"TableName": name, "BillingMode": "PAY_PER_REQUEST", "KeySchema": props["KeySchema"],
                  "AttributeDefinitions": props["AttributeDefinitions"]}
        for index in ("LocalSecondaryIndexes", "GlobalSecondaryIndexes"):
            if index in props:
                kwargs[index] = props[index]
        ddb.create_table(**kwargs)
        env = {"TransactionsV2Table": "TRANSACTIONS_TABLE", "NoncesTable": "NONCES_TABLE",
               "IdempotencyTable": "IDEMPOTENCY_TABLE", "TokensTable": "TOKENS_TABLE"}[logical]
        monkeypatch.setenv(env, name)
    reset_platform_state()
    yield ddb
    reset_platform_state()


def _sale(amount_cents: int, transaction_id: str = "500000000001", **extra) -> None:
    from vaultcore.gateway import store

    item = {"account_id": ACCOUNT, "transaction_id": transaction_id, "created_at": 1_700_000_000,
            "transaction_type": "SALE", "transaction_approved": True, "transaction_cents": amount_cents,
            "refundable_cents": amount_cents, "currency": "USD", **extra}
    assert store.record_transaction(item, "seed-writer") == store.Recorded.WRITTEN


def test_ten_concurrent_refunds_never_exceed_the_amount(dynalite):
    from vaultcore.gateway import store

    _sale(500)
    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(lambda i: store.refund_transaction(ACCOUNT, "500000000001", f"60000000000{i}", 100,
                                                                   1_700_000_100)[0], range(10)))
    assert results.count(True) == 5
    item = store.get_transaction(ACCOUNT, "500000000001", consistent=True)
    assert item["refundable_cents"] == 0 and item["refunded_cents"] == 500 and len(item["refund_ids"]) == 5


def test_a_reversal_racing_a_capture_ends_with_exactly_one(dynalite):
    from vaultcore.gateway import store

    for n in range(5):
        auth = f"70000000000{n}"
        _sale(900, auth, transaction_type="AUTHORIZATION", auth_status="authorized", authorized_cents=900,
              auth_expires_at=2_000_000_000)

        def act(i: int, auth: str = auth) -> bool:
            if i % 2:
                return store.capture_authorization(ACCOUNT, auth, f"80000000000{i}", 900, 1_700_000_100, None)[0]
            return store.reverse_transaction(ACCOUNT, auth, f"90000000000{i}", 1_700_000_100)[0]

        with ThreadPoolExecutor(10) as pool:
            assert list(pool.map(act, range(10))).count(True) == 1


def test_one_nonce_is_accepted_once(dynalite):
    from vaultcore.store.nonces import claim_nonce

    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(lambda _: claim_nonce("partner1", "nonce-1", 1_700_000_000, 1_700_000_900),
                                range(10)))
    assert results.count(True) == 1


def test_concurrent_credits_never_exceed_the_allowance(dynalite):
    from vaultcore.gateway import store

    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(lambda i: store.take_allowance(ACCOUNT, "CREDITS#2026-11-24", 1000, 300,
                                                               f"c{i}"), range(10)))
    assert results.count(True) == 3


def test_one_idempotency_key_is_claimed_once(dynalite):
    from vaultcore.gateway import idempotency

    with ThreadPoolExecutor(10) as pool:
        claims = list(pool.map(lambda i: idempotency.claim(ACCOUNT, "order-7", "f" * 64, f"10000000000{i}",
                                                           1_700_000_000), range(10)))
    assert [c.state for c in claims].count("new") == 1


def test_ten_concurrent_reads_of_one_bfid_give_one_success(dynalite):
    """Issue 21: the partner's read of a bfid succeeds once (store.tokens.claim_partner_read)."""
    from vaultcore.store import tokens

    tokens.put_tokens("b" * 60, "partner1", "TPL", 1, 1, {"card": "tok"}, 1_700_000_000, 1_700_003_600,
                      readable=True)
    with ThreadPoolExecutor(10) as pool:
        claims = list(pool.map(lambda i: tokens.claim_partner_read("b" * 60, "partner1", f"read-{i}",
                                                                   1_700_000_100), range(10)))
    assert sum(1 for c in claims if c is not None) == 1


def test_listing_merges_the_shards_in_order_on_dynalite(dynalite, monkeypatch):
    """Issue 29: the spread listing (every shard's index page, merged newest first) on a second implementation:
    ties of created_at by id, small pages across shard boundaries, a window inside the range."""
    import random

    from tests.conftest import reset_platform_state
    from vaultcore.gateway import store

    monkeypatch.setenv("TRANSACTION_SHARDS", "4")
    reset_platform_state()
    rng = random.Random(29)
    items = [{"account_id": ACCOUNT, "transaction_id": str(tid), "created_at": 1_700_000_000 + rng.randrange(0, 60, 3),
              "transaction_type": "SALE", "transaction_approved": True, "transaction_cents": 100,
              "refundable_cents": 100, "currency": "USD"} for tid in rng.sample(range(10**11, 10**12), 40)]
    for item in items:
        assert store.record_transaction(item, "w") == store.Recorded.WRITTEN
    newest_first = sorted(items, key=lambda i: (i["created_at"], i["transaction_id"]), reverse=True)
    for start, end, limit in ((1_700_000_000, 1_700_000_060, 3), (1_700_000_012, 1_700_000_030, 2)):
        listed, position = [], None
        while True:
            page, position = store.list_transactions(ACCOUNT, start, end, limit, position)
            assert len(page) <= limit
            listed += [i["transaction_id"] for i in page]
            if position is None:
                break
        assert listed == [i["transaction_id"] for i in newest_first if start <= i["created_at"] <= end]
