"""Issue 20 in-process on moto: REFUND (partial, repeated, full = VOID), REVERSAL, partial capture, verification,
and the races that must never move money twice: concurrent refunds never exceed the original amount, and a
reversal racing a capture ends with exactly one of them."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers import admin, call
from vaultcore.gateway.errors import E

PATH = "/api/qsapi/3.8"
VISA = "4242424242424242"


class Merchant:
    def __init__(self, platform) -> None:
        status, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}})
        assert status == 201, account
        self.platform = platform
        self.creds = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}

    def post(self, **variables) -> dict:
        status, _, body = call(self.platform, "GatewayFunction", "POST", PATH, json.dumps({**self.creds, **variables}),
                               {"Content-Type": "application/json"}, resource=PATH)
        assert status == 200, body
        return body

    def sale(self, amount: str = "10.00", ttype: str = "SALE") -> dict:
        body = self.post(transaction_type=ttype, tender_type="CARD", card_number=VISA, card_expiration="1230",
                         transaction_amount=amount, currency="USD")
        assert body["transaction_approved"] is True, body
        return body

    def refund(self, token_id: str, amount: str) -> dict:
        return self.post(transaction_type="REFUND", token_id=token_id, transaction_amount=amount)

    def reverse(self, token_id: str, **extra) -> dict:
        return self.post(transaction_type="REVERSAL", token_id=token_id, **extra)

    def capture(self, token_id: str, amount: str) -> dict:
        return self.post(transaction_type="CAPTURE", token_id=token_id, transaction_amount=amount)

    def report(self, transaction_id: str) -> dict:
        status, _, body = call(self.platform, "ReportingFunction", "POST", "/api/rsapi/v1/transactions",
                               {**self.creds, "transaction_id": transaction_id})
        assert status == 200, body
        return body["transaction"]


@pytest.fixture
def merchant(platform) -> Merchant:
    return Merchant(platform)


def test_partial_refunds_until_the_amount_is_used_up_then_refused(merchant):
    sale = merchant.sale("10.00")
    first = merchant.refund(sale["transaction_id"], "4.00")
    assert first["transaction_approved"] is True and first["authorization_message"] == "REFUND"
    assert first["transaction_type"] == "REFUND" and first["token_id"] == sale["transaction_id"]
    assert first["transaction_amount"] == 4.0 and first["last4"] == "4242"
    over = merchant.refund(sale["transaction_id"], "6.01")
    assert over["error_code"] == E.REFUND_AMOUNT and over["error_message"] == "INVALID REFUND AMOUNT"
    rest = merchant.refund(sale["transaction_id"], "6.00")
    assert rest["authorization_message"] == "REFUND"  # the whole amount, but not in one refund: not a void
    again = merchant.refund(sale["transaction_id"], "0.01")
    assert again["error_message"] == "INVALID REFUND AMOUNT"


def test_a_full_refund_before_settlement_is_a_void(merchant):
    sale = merchant.sale("12.34")
    void = merchant.refund(sale["transaction_id"], "12.34")
    assert void["transaction_approved"] is True and void["authorization_message"] == "VOID"
    assert merchant.refund(sale["transaction_id"], "0.01")["error_message"] == "INVALID REFUND AMOUNT"


def test_refunds_of_unknown_or_unrefundable_transactions_are_refused(merchant):
    assert merchant.refund("999999999999", "1.00")["error_message"] == "Invalid token_id"
    auth = merchant.sale("5.00", "AUTHORIZATION")
    assert merchant.refund(auth["transaction_id"], "1.00")["error_code"] == E.NOT_REFUNDABLE
    capture = merchant.capture(auth["transaction_id"], "3.00")
    assert merchant.refund(capture["transaction_id"], "3.00")["authorization_message"] == "VOID"
    other = Merchant(merchant.platform)
    assert other.refund(merchant.sale("1.00")["transaction_id"], "1.00")["error_message"] == "Invalid token_id"


def test_ten_concurrent_refunds_never_exceed_the_original_amount(merchant):
    sale = merchant.sale("5.00")
    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda _: merchant.refund(sale["transaction_id"], "1.00"), range(10)))
    approved = [a for a in answers if a.get("transaction_approved")]
    refused = [a for a in answers if not a.get("transaction_approved")]
    assert len(approved) == 5 and all(a["error_message"] == "INVALID REFUND AMOUNT" for a in refused)
    assert len({a["transaction_id"] for a in approved}) == 5


def test_reversal_of_an_authorization_and_a_second_reversal(merchant):
    auth = merchant.sale("20.00", "AUTHORIZATION")
    void = merchant.reverse(auth["transaction_id"])
    assert void["transaction_approved"] is True and void["authorization_message"] == "APPROVED"
    assert void["transaction_type"] == "REVERSAL" and void["transaction_amount"] == 20.0
    twice = merchant.reverse(auth["transaction_id"])
    assert twice["error_code"] == E.ALREADY_REVERSED and twice["error_message"] == "TRANSACTION ID ALREADY REVERSED"
    assert merchant.capture(auth["transaction_id"], "20.00")["error_code"] == E.ALREADY_REVERSED


def test_reversal_of_a_sale_and_what_cannot_be_reversed(merchant):
    sale = merchant.sale("8.00")
    assert merchant.reverse(sale["transaction_id"], transaction_amount="7.00")["error_code"] == E.AMOUNT
    assert merchant.reverse(sale["transaction_id"], transaction_amount="8.00")["authorization_message"] == "APPROVED"
    assert merchant.refund(sale["transaction_id"], "1.00")["error_code"] == E.NOT_REFUNDABLE
    refunded = merchant.sale("8.00")
    merchant.refund(refunded["transaction_id"], "1.00")
    assert merchant.reverse(refunded["transaction_id"])["error_code"] == E.NOT_REVERSIBLE
    auth = merchant.sale("8.00", "AUTHORIZATION")
    merchant.capture(auth["transaction_id"], "8.00")
    assert merchant.reverse(auth["transaction_id"])["error_code"] == E.NOT_REVERSIBLE
    assert merchant.reverse("999999999999")["error_message"] == "Invalid token_id"


def test_a_reversal_racing_a_capture_ends_with_exactly_one(merchant):
    for _ in range(3):
        auth = merchant.sale("9.00", "AUTHORIZATION")

        def act(i: int, token: str = auth["transaction_id"]) -> dict:
            return merchant.capture(token, "9.00") if i % 2 else merchant.reverse(token)

        with ThreadPoolExecutor(10) as pool:
            answers = list(pool.map(act, range(10)))
        winners = [a for a in answers if a.get("transaction_approved")]
        assert len(winners) == 1, answers


def test_partial_capture_and_verification(merchant):
    auth = merchant.sale("30.00", "AUTHORIZATION")
    capture = merchant.capture(auth["transaction_id"], "12.50")
    assert capture["authorization_message"] == "CAPTURED" and capture["transaction_amount"] == 12.5
    assert merchant.capture("999999999999", "1.00")["error_message"] == "Invalid token_id"
    verify = merchant.sale("0.00", "AUTHORIZATION")
    assert verify["authorization_message"] == "APPROVED" and verify["transaction_amount"] == 0.0
    assert merchant.capture(verify["transaction_id"], "0.01")["error_code"] == E.NOT_CAPTURABLE
    zero_sale = merchant.post(transaction_type="SALE", tender_type="CARD", card_number=VISA, card_expiration="1230",
                              transaction_amount="0.00")
    assert zero_sale["error_code"] == E.AMOUNT


# ------------------------------------------------------------------------------------------------ STORE, CREDIT,
# FORCE, SETTLE-BATCH, ACH lifecycle and RSAPI statuses
@pytest.fixture
def shop(platform) -> Merchant:
    """An account with a tokenization partner (STORE keeps vault tokens) and credits on."""
    status, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "Lifecycle partner", "apiSecurity": "hmac"})
    assert status == 201
    status, account = admin(platform, "POST", "/admin/v1/accounts", {
        "partnerId": partner["partnerId"], "options": {"tokenization": True, "credit": True}})
    assert status == 201, account
    m = Merchant.__new__(Merchant)
    m.platform = platform
    m.creds = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
    return m


def _table_texts(platform) -> str:
    import boto3

    from vaultcore.settings import settings

    ddb = boto3.client("dynamodb", region_name="us-east-1")
    return json.dumps([ddb.scan(TableName=t)["Items"] for t in (settings().transactions_table,
                                                                 settings().tokens_table)])


def test_store_then_pay_with_the_stored_card(shop):
    stored = shop.post(transaction_type="STORE", card_number=VISA, card_expiration="1230")
    assert stored["transaction_approved"] is True and stored["last4"] == "4242"
    assert stored["transaction_type"] == "STORE" and stored["transaction_amount"] == 0.0
    sale = shop.post(transaction_type="SALE", token_id=stored["transaction_id"], transaction_amount="15.00",
                     reissue="true")
    assert sale["transaction_approved"] is True and sale["last4"] == "4242" and sale["transaction_amount"] == 15.0
    auth = shop.post(transaction_type="AUTHORIZATION", token_id=stored["transaction_id"], transaction_amount="3.00")
    assert auth["transaction_approved"] is True
    assert shop.post(transaction_type="SALE", token_id=sale["transaction_id"],
                     transaction_amount="1.00")["error_code"] == E.STORED_NOT_FOUND
    unreadable = shop.post(transaction_type="STORE", card_number="4242424242424241", card_expiration="1230")
    assert unreadable["error_code"] == E.CARD_DATA_UNREADABLE and unreadable["error_message"] == "CARD DATA UNREADABLE"
    bank = shop.post(transaction_type="STORE", bank_account_number="000123456789", bank_routing_number="011000015")
    assert bank["transaction_approved"] is True and bank["tender_type"] == "ACH", bank
    assert VISA not in _table_texts(shop.platform) and "000123456789" not in _table_texts(shop.platform)


def test_store_needs_a_tokenization_partner(merchant):
    refused = merchant.post(transaction_type="STORE", card_number=VISA, card_expiration="1230")
    assert refused["error_code"] == E.NO_TOKENIZATION_PARTNER


def test_credit_is_off_unless_enabled_and_limited(shop, merchant):
    credit = shop.post(transaction_type="CREDIT", card_number=VISA, card_expiration="1230", transaction_amount="25.00")
    assert credit["transaction_approved"] is True and credit["authorization_message"] == "CREDIT"
    assert credit["transaction_type"] == "CREDIT"
    off = merchant.post(transaction_type="CREDIT", tender_type="CARD", card_number=VISA, card_expiration="1230",
                        transaction_amount="1.00")
    assert off["error_code"] == E.CREDIT_OFF
    too_big = shop.post(transaction_type="CREDIT", card_number=VISA, card_expiration="1230",
                        transaction_amount="10000.01")
    assert too_big["error_code"] == E.CREDIT_LIMIT


def test_concurrent_credits_never_exceed_the_daily_limit(shop):
    from vaultcore.gateway.service import CREDIT_DAILY_CENTS

    each = CREDIT_DAILY_CENTS // 5 // 100  # five fit in a day
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda _: shop.post(transaction_type="CREDIT", card_number=VISA, card_expiration="1230",
                                                    transaction_amount=f"{each}.00"), range(8)))
    assert sum(1 for a in answers if a.get("transaction_approved")) == 5
    assert all(a["error_code"] == E.CREDIT_LIMIT for a in answers if not a.get("transaction_approved"))


def test_force_posts_an_offline_authorization(merchant):
    force = merchant.post(transaction_type="FORCE", card_number=VISA, card_expiration="1230",
                          transaction_amount="42.00", authorization_code="ab12cd")
    assert force["transaction_approved"] is True and force["authorization_code"] == "AB12CD"
    assert force["transaction_type"] == "FORCE"
    missing = merchant.post(transaction_type="FORCE", card_number=VISA, card_expiration="1230",
                            transaction_amount="42.00")
    assert missing["error_code"] == E.MISSING
    assert merchant.refund(force["transaction_id"], "2.00")["authorization_message"] == "REFUND"


def test_settle_batch_statuses_and_the_ach_lifecycle(merchant, platform):
    sale = merchant.sale("10.00")
    refunded = merchant.sale("10.00")
    merchant.refund(refunded["transaction_id"], "3.00")
    voided = merchant.sale("10.00")
    merchant.refund(voided["transaction_id"], "10.00")
    auth = merchant.sale("10.00", "AUTHORIZATION")
    captured = merchant.sale("10.00", "AUTHORIZATION")
    merchant.capture(captured["transaction_id"], "10.00")
    ach = merchant.post(transaction_type="SALE", bank_account_number="000123456789", bank_routing_number="011000015",
                        transaction_amount="50.00")
    assert ach["transaction_approved"] is True and ach["authorization_message"] == "PENDING"
    returned = merchant.post(transaction_type="SALE", bank_account_number="000000000001",
                             bank_routing_number="011000015", transaction_amount="60.00")
    declined = merchant.post(transaction_type="SALE", tender_type="CARD", card_number="4000000000000002",
                             card_expiration="1230", transaction_amount="1.00")

    def status(tx: dict) -> str:
        return merchant.report(tx["transaction_id"])["status"]

    assert [status(t) for t in (sale, refunded, voided, auth, captured, ach, declined)] == [
        "APPROVED", "REFUNDED", "VOIDED", "APPROVED", "CAPTURED", "PENDING", "DECLINED"]
    assert merchant.report(refunded["transaction_id"])["refunded_amount"] == 3.0
    assert merchant.report(sale["transaction_id"])["batch_id"] == 1

    settled = merchant.post(transaction_type="SETTLE-BATCH")
    assert settled["transaction_approved"] is True and settled["authorization_message"] == "SETTLED"
    assert settled["batch_id"] == 1
    assert [status(t) for t in (sale, ach, returned)] == ["SETTLED", "SETTLED", "RETURNED"]
    assert merchant.report(returned["transaction_id"])["ach_return_code"] == "R01"
    # after settlement: a full refund is a refund, not a void; a sale cannot be reversed any more
    refund = merchant.refund(sale["transaction_id"], "10.00")
    assert refund["authorization_message"] == "REFUND"
    later = merchant.sale("5.00")
    assert merchant.report(later["transaction_id"])["batch_id"] == 2
    status_code, _, batch = call(platform, "ReportingFunction", "POST", "/api/rsapi/v1/transactions",
                                 {**merchant.creds, "batch_id": "2"})
    assert {t["transaction_id"] for t in batch["transactions"]} == {later["transaction_id"], refund["transaction_id"]}
    assert {t["status"] for t in batch["transactions"]} == {"APPROVED"}
    status_code, _, first = call(platform, "ReportingFunction", "POST", "/api/rsapi/v1/transactions",
                                 {**merchant.creds, "batch_id": "1", "limit": "100"})
    assert sale["transaction_id"] in {t["transaction_id"] for t in first["transactions"]}
    sale2 = merchant.sale("5.00")
    merchant.post(transaction_type="SETTLE-BATCH")
    assert merchant.reverse(sale2["transaction_id"])["error_code"] == E.NOT_REVERSIBLE


def test_store_keeps_an_iframe_etoken_beyond_its_read_window(shop):
    from vaultcore import clock
    from vaultcore.tokens.service import tokenize_values

    _, account = admin(shop.platform, "GET", f"/admin/v1/accounts/{shop.creds['account_id']}")
    made = tokenize_values(account["partnerId"], "GATEWAY", [("vault_token_card_number", "378282246310005"),
                                                             ("vault_token_card_expiration", "0931")])
    stored = shop.post(transaction_type="STORE", etoken=made.bfid)
    assert stored["transaction_approved"] is True and stored["last4"] == "0005"
    clock.set_offset(2 * 3600)  # the eToken's one-hour read window is over; the STORE's tokens still pay
    sale = shop.post(transaction_type="SALE", token_id=stored["transaction_id"], transaction_amount="9.00")
    assert sale["transaction_approved"] is True and sale["last4"] == "0005"


def test_store_refuses_an_etoken_with_other_card_data(shop):
    tracks = "%B4242424242424242^DOE/JANE^30121010000000000000?"
    for extra in ({"card_tracks": tracks}, {"card_number": VISA}, {"card_verification": "123"}):
        refused = shop.post(transaction_type="STORE", etoken="b" * 60, **extra)
        assert refused["error_code"] == E.PAYMENT_DATA, extra


def test_every_transaction_type_posts_back_and_an_ach_return_does_too(platform):
    import boto3

    from vaultcore.settings import settings

    status, account = admin(platform, "POST", "/admin/v1/accounts",
                            {"options": {"credit": True}, "postback_url": "http://127.0.0.1:9/postbacks"})
    assert status == 201
    m = Merchant.__new__(Merchant)
    m.platform, m.creds = platform, {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
    sale = m.sale("10.00")
    m.refund(sale["transaction_id"], "1.00")
    auth = m.sale("10.00", "AUTHORIZATION")
    m.reverse(auth["transaction_id"])
    m.post(transaction_type="CREDIT", card_number=VISA, card_expiration="1230", transaction_amount="2.00")
    m.post(transaction_type="FORCE", card_number=VISA, card_expiration="1230", transaction_amount="3.00",
           authorization_code="ZZ99ZZ")
    returned = m.post(transaction_type="SALE", bank_account_number="000000000002", bank_routing_number="011000015",
                      transaction_amount="7.00")
    m.post(transaction_type="SETTLE-BATCH")
    platform.pump_streams()  # the Deliveries stream relay queues the postbacks (the ACH return's too)
    sqs = boto3.client("sqs", region_name="us-east-1")
    bodies = []
    while True:
        got = sqs.receive_message(QueueUrl=settings().postback_queue_url, MaxNumberOfMessages=10).get("Messages", [])
        if not got:
            break
        bodies.extend(json.loads(g["Body"])["response"] for g in got)
    types = sorted(b["transaction_type"] for b in bodies)
    assert types == sorted(["SALE", "REFUND", "AUTHORIZATION", "REVERSAL", "CREDIT", "FORCE", "SALE", "SETTLE-BATCH",
                            "SALE"])  # the ACH SALE, then its return
    (ret,) = [b for b in bodies if b.get("status") == "RETURNED"]
    assert ret["transaction_id"] == returned["transaction_id"] and ret["ach_return_code"] == "R02"
