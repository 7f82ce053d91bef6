"""Postbacks end to end: a SALE through the local runner reaches a real HTTP receiver started by the test.

A dedicated runner uses a one-second retry schedule and a receive count of 5 (runner-only overrides of the
template's schedule and maxReceiveCount), so retries and the dead-letter queue happen within seconds.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.e2e.http import admin, post_json
from tests.postback_receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
MAX_RECEIVES = 5


@pytest.fixture(scope="module")
def fast_runner(tmp_path_factory):
    state = tmp_path_factory.mktemp("postback-runner")
    out, err = state / "stdout.log", state / "stderr.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "local.runner", "--port", "0", "--state-dir", str(state), "--quiet-banner",
         "--no-seed", "--env", "POSTBACK_RETRY_SCHEDULE=1", "--max-receive-count", str(MAX_RECEIVES)],
        cwd=ROOT, env=env, stdout=open(out, "wb"), stderr=open(err, "wb"))
    deadline = time.monotonic() + 60
    base_url = None
    while time.monotonic() < deadline and base_url is None:
        assert proc.poll() is None, err.read_text()
        m = re.search(r"Local platform listening on (http://\S+)", err.read_text())
        base_url = m.group(1) if m and (state / "demo.json").exists() else None
        time.sleep(0.1)
    assert base_url
    yield base_url, out, err
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def receiver():
    r = Receiver()
    yield r
    r.close()


def _account(base_url: str, postback_url: str) -> dict:
    status, account = admin(base_url, "POST", "/admin/v1/accounts",
                            {"options": {"tokenization": False, "token_payments": False}, "postback_url": postback_url})
    assert status == 201, account
    return account


def _sale(base_url: str, account: dict, amount: str = "10.00") -> dict:
    status, body = post_json(base_url + "/api/qsapi/3.8", {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"], "response_format": "JSON",
        "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
        "card_expiration": "1230", "card_verification": "123", "transaction_amount": amount, "currency": "USD"})
    assert status == 200 and body["transaction_approved"] is True, body
    return body


def _wait(predicate, seconds: float = 30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("condition not met in time")


def _verify(request: dict, account: dict) -> dict:
    raw = request["body"]
    parts = dict(p.split("=", 1) for p in request["headers"]["Vault-Signature"].split(","))
    expected = hmac.new(account["postback_secret"].encode(), parts["t"].encode() + b"." + raw,
                        hashlib.sha256).hexdigest()
    assert hmac.compare_digest(expected, parts["v1"])
    body = json.loads(raw)
    assert body["hash"] == hashlib.sha256(
        f"{account['account_id']},{account['api_accesskey']},{body['timestamp']}".encode()).hexdigest()
    assert str(body["timestamp"]) == parts["t"]
    return body


def test_sale_delivers_one_postback_whose_hash_and_signature_verify(fast_runner, receiver):
    base_url, _, _ = fast_runner
    account = _account(base_url, receiver.url + "/ok/a1")
    sale = _sale(base_url, account)
    request = _wait(lambda: receiver.delivered("/ok/a1"))[0]
    body = _verify(request, account)
    assert list(body) == ["account_id", "timestamp", "count", "hash", "responses"]
    assert body["count"] == 1 and body["account_id"] == account["account_id"]
    entry = body["responses"][0]
    assert entry["transaction_id"] == sale["transaction_id"] and entry["account_id"] == account["account_id"]
    assert "4242424242424242" not in request["body"].decode()
    time.sleep(2)
    assert len(receiver.delivered("/ok/a1")) == 1  # exactly one


def test_flaky_receiver_gets_it_after_three_failures_with_one_delivery_id(fast_runner, receiver):
    base_url, _, _ = fast_runner
    account = _account(base_url, receiver.url + "/flaky/3")
    sale = _sale(base_url, account)
    ok = _wait(lambda: receiver.delivered("/flaky/3"))
    attempts = [r for r in receiver.requests if r["path"] == "/flaky/3"]
    assert [r["status"] for r in attempts] == [500, 500, 500, 200]
    assert len({r["headers"]["Vault-Delivery-Id"] for r in attempts}) == 1
    assert [r["headers"]["Vault-Delivery-Attempt"] for r in attempts] == ["1", "2", "3", "4"]
    _verify(ok[0], account)
    status, log = admin(base_url, "GET", f"/admin/v1/accounts/{account['account_id']}/deliveries"
                                         f"?transaction_id={sale['transaction_id']}")
    assert status == 200
    assert sorted(a["attempt"] for a in log["attempts"]) == [1, 2, 3, 4]
    assert sorted(a["status"] for a in log["attempts"]) == ["delivered", "failed", "failed", "failed"]
    assert all(a["duration_ms"] >= 0 for a in log["attempts"])
    assert {a["http_status"] for a in log["attempts"]} == {500, 200}


def test_dead_letter_queue_then_redrive_delivers(fast_runner, receiver):
    base_url, _, _ = fast_runner
    account = _account(base_url, receiver.url + "/down")
    sale = _sale(base_url, account)
    path = f"/admin/v1/accounts/{account['account_id']}/deliveries?transaction_id={sale['transaction_id']}"

    def dead():
        log = admin(base_url, "GET", path)[1]["attempts"]
        return any(a["status"] == "dead-lettered" for a in log) and log

    log = _wait(dead, 40)
    assert len(log) == MAX_RECEIVES
    time.sleep(2)  # the message reaches the DLQ on the next receive after its last attempt
    receiver.recovered.set()
    moved = _wait(lambda: admin(base_url, "POST", "/admin/v1/postbacks/redrive", {})[1]["moved"], 20)
    assert moved >= 1
    delivered = _wait(lambda: receiver.delivered("/down"))
    _verify(delivered[0], account)
    ids = {r["headers"]["Vault-Delivery-Id"] for r in receiver.requests if r["path"] == "/down"}
    assert len(ids) == 1  # the same delivery id before and after the DLQ


def test_burst_of_200_transactions_each_delivered_once(fast_runner, receiver):
    base_url, _, _ = fast_runner
    account = _account(base_url, receiver.url + "/ok/burst")
    with ThreadPoolExecutor(max_workers=8) as pool:
        sales = list(pool.map(lambda i: _sale(base_url, account, f"{1 + i / 100:.2f}"), range(200)))
    ids = {s["transaction_id"] for s in sales}
    assert len(ids) == 200
    _wait(lambda: len(receiver.delivered("/ok/burst")) >= 200, 90)
    time.sleep(2)
    delivered = receiver.delivered("/ok/burst")
    by_delivery = {r["headers"]["Vault-Delivery-Id"] for r in delivered}
    assert len(delivered) == 200 and len(by_delivery) == 200  # none twice
    assert {json.loads(r["body"])["responses"][0]["transaction_id"] for r in delivered} == ids


def test_postback_logs_hold_no_secrets(fast_runner, receiver):
    _, out, err = fast_runner
    logs = out.read_text() + err.read_text()
    assert "4242424242424242" not in logs and "Vault-Signature" not in logs and "v1=" not in logs
