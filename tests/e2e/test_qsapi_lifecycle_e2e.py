"""Issue 20's acceptance against `make run`: a QSAPI client written from the spec (tests/qsapi_client.py, importing
nothing from vaultcore) runs every operation of the lifecycle over real HTTP, and each answer carries the messages
clients of the original compare against. Then the tables and the runner's logs hold no card number or track."""

from __future__ import annotations

import json
import time

import boto3
import pytest

from tests.helpers import table_dump
from tests.qsapi_client import QsapiClient

VISA = "4242424242424242"
TRACKS = "%B4242424242424242^DOE/JANE^30121010000000000000?;4242424242424242=30121010000000000000?"


@pytest.fixture(scope="module")
def client(runner) -> QsapiClient:
    account = runner.demo["account"]
    return QsapiClient(runner.base_url, account["account_id"], account["api_accesskey"])


def card(**extra):
    return {"tender_type": "CARD", "card_number": VISA, "card_expiration": "1230", **extra}


def test_sale_decline_and_an_invalid_login(client, runner):
    sale = client.sale("10.00", **card())
    assert sale["transaction_approved"] is True and sale["authorization_message"] == "APPROVED"
    assert sale["keyed"] is True and sale["swiped"] is False
    declined = client.sale("1.01", **card())  # the certification sandbox's decline amount
    assert declined["transaction_approved"] is False and declined["authorization_message"] == "DECLINED"
    stranger = QsapiClient(runner.base_url, client.account_id, "not-the-access-key")
    refused = stranger.sale("10.00", **card())
    assert refused["error"] is True and refused["transaction_approved"] is False and "transaction_id" not in refused


def test_authorize_then_full_and_partial_captures(client):
    full = client.authorize("20.00", **card())
    assert client.capture(full["transaction_id"], "20.00")["authorization_message"] == "CAPTURED"
    partial = client.authorize("20.00", **card())
    captured = client.capture(partial["transaction_id"], "7.50")
    assert captured["authorization_message"] == "CAPTURED" and captured["transaction_amount"] == 7.5
    assert client.status_of(partial["transaction_id"]) == "CAPTURED"
    assert client.capture("999999999999", "1.00")["error_message"] == "Invalid token_id"


def test_refunds_voids_and_verification(client):
    whole = client.sale("30.00", **card())
    assert client.refund(whole["transaction_id"], "30.00")["authorization_message"] == "VOID"
    assert client.status_of(whole["transaction_id"]) == "VOIDED"
    part = client.sale("30.00", **card())
    assert client.refund(part["transaction_id"], "10.00")["authorization_message"] == "REFUND"
    over = client.refund(part["transaction_id"], "20.01")
    assert over["error"] is True and over["error_message"] == "INVALID REFUND AMOUNT"
    record = client.report(transaction_id=part["transaction_id"])["transaction"]
    assert record["status"] == "REFUNDED" and record["refunded_amount"] == 10.0

    auth = client.authorize("15.00", **card())
    assert client.void(auth["transaction_id"])["authorization_message"] == "APPROVED"
    again = client.void(auth["transaction_id"])
    assert again["error"] is True and again["error_message"] == "TRANSACTION ID ALREADY REVERSED"
    verify = client.authorize("0.00", **card())
    assert verify["transaction_approved"] is True and verify["authorization_message"] == "APPROVED"


def test_store_then_purchase_with_the_stored_card_and_a_credit(client):
    stored = client.store(card_number=VISA, card_expiration="1230")
    assert stored["transaction_approved"] is True and stored["last4"] == "4242"
    purchase = client.sale("12.00", token_id=stored["transaction_id"], reissue="true")
    assert purchase["transaction_approved"] is True and purchase["last4"] == "4242"
    unreadable = client.store(card_number="4242424242424241", card_expiration="1230")
    assert unreadable["error_message"] == "CARD DATA UNREADABLE"
    credit = client.credit("5.00", card_number=VISA, card_expiration="1230")
    assert credit["transaction_approved"] is True and credit["authorization_message"] == "CREDIT"


def test_a_card_present_sale(client):
    swiped = client.sale("3.00", tender_type="CARD", card_tracks=TRACKS)
    assert swiped["transaction_approved"] is True and swiped["swiped"] is True and swiped["keyed"] is False
    assert swiped["last4"] == "4242"


def test_an_ach_sale_is_pending_settles_or_is_returned(client):
    pending = client.sale("40.00", bank_account_number="000123456789", bank_routing_number="011000015")
    returned = client.sale("41.00", bank_account_number="000000000001", bank_routing_number="011000015")
    assert pending["authorization_message"] == "PENDING" and returned["authorization_message"] == "PENDING"
    assert client.status_of(pending["transaction_id"]) == "PENDING"
    settled = client.settle()
    assert settled["authorization_message"] == "SETTLED" and settled["batch_id"] >= 1
    assert client.status_of(pending["transaction_id"]) == "SETTLED"
    record = client.report(transaction_id=returned["transaction_id"])["transaction"]
    assert record["status"] == "RETURNED" and record["ach_return_code"] == "R01"
    batch = client.report(batch_id=str(settled["batch_id"]), limit="100")["transactions"]
    assert {pending["transaction_id"], returned["transaction_id"]} <= {t["transaction_id"] for t in batch}


def test_a_p2pe_sale(client):
    """As the docs do it: the reader simulator (a separate process, as a card reader is) encrypts a track for
    the demo terminal; the client sends the encrypted payload and never holds the card number."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "vaultcore.devices.simulator", "--device-type", "terminal", "--mode",
                          "track1", "--pan", "4761739001010010", "--expiry", "3012", "--name", "SMITH/JOHN"],
                         capture_output=True, text=True, check=True, timeout=60)
    payload = json.loads(out.stdout)
    sale = client.sale("4.00", tender_type="CARD", device_type="terminal", device_serial="DEMO-TERM-0001",
                       ksn=payload["ksn"], device_payload=payload["devicePayload"])
    assert sale["transaction_approved"] is True, sale
    assert sale["swiped"] is True and sale["keyed"] is False and sale["last4"] == "0010"
    assert sale["first_name"] == "JOHN" and sale["last_name"] == "SMITH"


def test_zz_no_card_number_or_track_is_stored_or_logged(runner):
    time.sleep(0.5)  # the last log lines
    ddb = boto3.client("dynamodb", region_name="us-east-1", endpoint_url=runner.demo["awsEndpoint"],
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    dump = table_dump(ddb)  # deflated postback messages inflated: scanned too
    for secret in (VISA, "4242424242424241", "000123456789", "30121010000000000000", "DOE/JANE", "4761739001010010",
                   "SMITH/JOHN"):
        assert secret not in dump
        assert secret not in runner.logs()
