"""Webhook endpoints end to end against the runner: clients generated from the original's PayConex v4 document and
from ours, a real HTTP receiver, and the postbacks' fault stack.

* The original's generated client runs createWebhook, listWebhooks, getWebhook, updateWebhook and deleteWebhook
  unchanged (its `Webhook` enum offers only ``ACCOUNT_UPDATER_BATCH_UPDATES``, which is accepted and never sent);
  every answer is valid against the original's schema of its status and parses into its models.
* Our generated client registers a ``PAYCONEX_BATCH_SETTLEMENT`` endpoint on a local receiver (loopback: allowed
  only because the local runner sets ``VAULT_ALLOW_LOCAL_EGRESS``); a QSAPI SETTLE-BATCH reaches it exactly once,
  signed with the endpoint's secret (checked with the integrators' page's own snippet); then the test delivery,
  the endpoint's delivery log and a redelivery, and the secret's rotation (two signatures).
* URLs the SSRF guard refuses are 422 with the member named.
* The postbacks' fault scenario of a lost relay answer (SendMessageBatch applied, answer lost: two copies of each
  delivery) with every delivery-log write after a POST failing: each endpoint gets one 2xx per delivery, no
  (delivery id, attempt) POSTed twice, none lost.
"""

from __future__ import annotations

import base64
import importlib
import json
import re
import time
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.e2e.conftest import Runner
from tests.e2e.http import admin, post_json, wait_until
from tests.e2e.original_contract import check, document
from tests.e2e.test_original_payconex_iframe_e2e import client_module  # noqa: F401 - a fixture
from tests.postback_receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
DOC_PAGE = ROOT / "docs" / "integrators" / "webhook-endpoints.md"
OPERATIONS = ("createWebhook", "listWebhooks", "getWebhook", "updateWebhook", "deleteWebhook")
SETTLEMENT = "PAYCONEX_BATCH_SETTLEMENT"



def _verifier() -> Any:
    """The integrators' page's verify_webhook, run as published."""
    [code] = re.findall(r"```python\n(.*?)```", DOC_PAGE.read_text(), re.S)
    scope: dict[str, Any] = {}
    exec(compile(code, str(DOC_PAGE), "exec"), scope)  # noqa: S102 - the published sample
    return scope["verify_webhook"]


def _account(base_url: str) -> dict[str, Any]:
    status, account = admin(base_url, "POST", "/admin/v1/accounts",
                            {"options": {"tokenization": False, "token_payments": False}})
    assert status == 201, account
    return account


def _basic(account: dict[str, Any]) -> str:
    return base64.b64encode(f"{account['account_id']}:{account['api_accesskey']}".encode()).decode()


def _settle(base_url: str, account: dict[str, Any]) -> dict[str, Any]:
    status, body = post_json(base_url + "/api/qsapi/3.8", {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"], "response_format": "JSON",
        "transaction_type": "SETTLE-BATCH", "currency": "USD"})
    assert status == 200 and body["error"] is False, body
    return body


def _v4(base_url: str, account: dict[str, Any], method: str, suffix: str = "", body: Any = None
        ) -> tuple[int, dict[str, str], Any]:
    """One call with the stdlib client (its answer checked against openapi/gateway.json: tests/e2e/contract.py)."""
    from tests.e2e.http import request

    status, headers, data = request(f"{base_url}/api/v4/accounts/{account['account_id']}/webhooks{suffix}", body,
                                    {"Authorization": "Basic " + _basic(account)}, method)
    return status, headers, json.loads(data) if data else None


# ------------------------------------------------------------------------------------- the original's client
def _original(module: ModuleType, name: str) -> ModuleType:
    return importlib.import_module(f"{module.__name__}.api.webhooks.{name}")


def test_the_originals_generated_client_runs_every_webhook_operation(runner: Runner, request: Any) -> None:
    # the original's generated client: the payment iFrame test's module fixture (imported above), by name
    original: ModuleType = request.getfixturevalue("client_module")
    doc = document()
    models = importlib.import_module(f"{original.__name__}.models")
    account = _account(runner.base_url)
    account_id = account["account_id"]
    client = original.AuthenticatedClient(base_url=runner.base_url, token=_basic(account), prefix="Basic")
    http = client.get_httpx_client()
    seen: set[str] = set()

    def call(name: str, **kwargs: Any) -> Any:
        api = _original(original, name)
        return http.request(**api._get_kwargs(account_id=account_id, **kwargs)), api

    webhook = models.Webhook.from_dict({"url": "https://merchant.example.com/hooks/updates",
                                        "event": "ACCOUNT_UPDATER_BATCH_UPDATES"})
    response, api = call("create_webhook", body=webhook)
    created = check(doc, "createWebhook", response)
    assert response.status_code == 201 and created["event"] == "ACCOUNT_UPDATER_BATCH_UPDATES", created
    assert isinstance(api._parse_response(client=client, response=response), models.WebhookResponse)
    seen.add("createWebhook")
    webhook_id = created["id"]

    response, api = call("list_webhooks")
    listed = check(doc, "listWebhooks", response)
    assert response.status_code == 200 and [w["id"] for w in listed] == [webhook_id]
    assert response.headers["X-Total"] == "1"
    assert all(isinstance(w, models.WebhookResponse) for w in api._parse_response(client=client, response=response))
    seen.add("listWebhooks")

    response, api = call("get_webhook", webhook_id=webhook_id)
    got = check(doc, "getWebhook", response)
    assert response.status_code == 200 and got["url"] == created["url"] and "secret" not in got
    seen.add("getWebhook")

    changed = models.Webhook.from_dict({"url": "https://merchant.example.com/hooks/v2",
                                        "event": "ACCOUNT_UPDATER_BATCH_UPDATES"})
    response, api = call("update_webhook", webhook_id=webhook_id, body=changed)
    updated = check(doc, "updateWebhook", response)
    assert response.status_code == 200 and updated["url"] == "https://merchant.example.com/hooks/v2"
    assert isinstance(api._parse_response(client=client, response=response), models.WebhookResponse)
    seen.add("updateWebhook")

    # refusals: the SSRF guard (422 naming url), another caller (401), an unknown id (404): ApiViolation each
    bad = models.Webhook.from_dict({"url": "https://169.254.169.254/latest", "event": "ACCOUNT_UPDATER_BATCH_UPDATES"})
    response, api = call("create_webhook", body=bad)
    refused = check(doc, "createWebhook", response)
    assert response.status_code == 422 and refused["details"][0]["source"] == "url", refused
    assert isinstance(api._parse_response(client=client, response=response), models.ApiViolation)
    response, _ = call("get_webhook", webhook_id="00000000-0000-4000-8000-000000000000")
    assert check(doc, "getWebhook", response)["errorType"] == "not_found" and response.status_code == 404
    stranger = original.AuthenticatedClient(base_url=runner.base_url, prefix="Basic",
                                                 token=base64.b64encode(f"{account_id}:wrong".encode()).decode())
    response = stranger.get_httpx_client().request(**_original(original, "list_webhooks")._get_kwargs(
        account_id=account_id))
    assert check(doc, "listWebhooks", response)["errorType"] == "authentication" and response.status_code == 401

    response, _ = call("delete_webhook", webhook_id=webhook_id)
    assert check(doc, "deleteWebhook", response) is None and response.status_code == 204
    response, _ = call("get_webhook", webhook_id=webhook_id)
    assert response.status_code == 404
    seen.add("deleteWebhook")
    assert seen == set(OPERATIONS)


def test_the_originals_webhook_operations_are_the_five() -> None:
    doc = document()
    found = {op["operationId"] for path, item in doc["paths"].items() if "/webhooks" in path
             for op in item.values() if isinstance(op, dict) and "operationId" in op}
    assert found == set(OPERATIONS)


# ------------------------------------------------------------------------------------- our client, a receiver
@pytest.fixture(scope="module")
def ours() -> ModuleType:
    from tests.e2e.test_generated_clients_e2e import _opc

    return _opc("gateway")


def test_a_settlement_reaches_the_endpoint_once_signed_then_test_log_redelivery_rotation(
        runner: Runner, ours: ModuleType) -> None:
    models = importlib.import_module(f"{ours.__name__}.models")
    api = importlib.import_module(f"{ours.__name__}.api.webhooks")
    account = _account(runner.base_url)
    client = ours.AuthenticatedClient(base_url=runner.base_url, token=_basic(account), prefix="Basic")
    receiver = Receiver()
    verify = _verifier()
    try:
        create = importlib.import_module(f"{api.__name__}.create_webhook")
        out = create.sync_detailed(account_id=account["account_id"], client=client, body=models.WebhookCreate.from_dict(
            {"url": receiver.url + "/ok/settled", "event": SETTLEMENT}))
        assert out.status_code == 201 and isinstance(out.parsed, models.WebhookCreated), out.content
        created = json.loads(out.content)
        settled = _settle(runner.base_url, account)
        posted = wait_until(lambda: receiver.delivered("/ok/settled"))
        time.sleep(3)  # room for a duplicate to show: there must be none
        assert len(receiver.delivered("/ok/settled")) == 1 and receiver.count("/ok/settled") == 1
        event = verify(posted[0]["body"], posted[0]["headers"]["Vault-Signature"], created["secret"])
        assert event["event"] == SETTLEMENT and event["webhookId"] == created["id"]
        assert event["data"]["transactionId"] == settled["transaction_id"]
        assert event["id"] == posted[0]["headers"]["Vault-Delivery-Id"]

        test = importlib.import_module(f"{api.__name__}.test_webhook").sync_detailed(
            account_id=account["account_id"], webhook_id=created["id"], client=client)
        assert test.status_code == 202, test.content
        test_id = json.loads(test.content)["deliveryId"]
        wait_until(lambda: [r for r in receiver.delivered("/ok/settled") if r["headers"]["Vault-Delivery-Id"] == test_id])

        log = importlib.import_module(f"{api.__name__}.list_webhook_deliveries").sync_detailed(
            account_id=account["account_id"], webhook_id=created["id"], client=client)
        assert log.status_code == 200, log.content
        attempts = json.loads(log.content)
        assert {a["deliveryId"] for a in attempts} == {event["id"], test_id}
        assert all(a["status"] == "delivered" for a in attempts)

        again = importlib.import_module(f"{api.__name__}.redeliver_webhook_delivery").sync_detailed(
            account_id=account["account_id"], webhook_id=created["id"], delivery_id=event["id"], client=client)
        assert again.status_code == 202, again.content
        redelivered = wait_until(lambda: [r for r in receiver.delivered("/ok/settled")
                                     if r["headers"]["Vault-Delivery-Id"] == event["id"]
                                     and r["headers"]["Vault-Delivery-Attempt"] == "2"])
        assert json.loads(redelivered[0]["body"]) == event

        status, _, rotated = _v4(runner.base_url, account, "POST", f"/{created['id']}/rotate-secret",
                                 {"overlapSeconds": 3600})
        assert status == 201, rotated
        settled = _settle(runner.base_url, account)
        second = wait_until(lambda: [r for r in receiver.delivered("/ok/settled")
                                if json.loads(r["body"])["data"].get("transactionId") == settled["transaction_id"]])
        header = second[0]["headers"]["Vault-Signature"]
        assert header.count("v1=") == 2
        for secret in (created["secret"], rotated["secret"]):
            assert verify(second[0]["body"], header, secret)["data"]["batchId"] == event["data"]["batchId"] + 1
    finally:
        receiver.close()


@pytest.mark.parametrize("url", ["https://169.254.169.254/latest/meta-data", "https://10.0.0.7/hook",
                                 "https://metadata.internal/hook", "https://2852039166/hook", "ftp://example.com/h",
                                 "https://user:pw@merchant.example.com/h"])
def test_urls_the_ssrf_guard_refuses(runner: Runner, url: str) -> None:
    account = runner.demo["account"]
    status, _, refused = _v4(runner.base_url, account, "POST", "", {"url": url, "event": SETTLEMENT})
    assert status == 422 and refused["errorType"] == "invalid_request", refused
    assert refused["details"] == [{"detail": refused["details"][0]["detail"], "source": "url"}]
    assert url not in json.dumps(refused)


def test_missing_members_and_unknown_events_are_422(runner: Runner) -> None:
    account = runner.demo["account"]
    for body, member in (({"url": "https://merchant.example.com/h"}, "event"),
                         ({"url": "https://merchant.example.com/h", "event": "SALE"}, "event"),
                         ({"event": SETTLEMENT}, "url")):
        status, _, refused = _v4(runner.base_url, account, "POST", "", body)
        assert status == 422 and refused["details"][0]["source"] == member, refused


# ------------------------------------------------------------------------------------- the postbacks' fault
@pytest.fixture(scope="module")
def stack(tmp_path_factory: Any) -> Any:
    from tests.faults import harness

    yield from harness.stack_for_tests(tmp_path_factory, "faults-webhooks")


def test_lost_relay_answers_and_failing_log_writes_zero_lost_zero_duplicated(stack: Any) -> None:
    """tests/faults/delivery_scenarios.py placement 4 with webhook endpoints, on the SQS FIFO postback queue: the
    relay's SendMessageBatch is applied and its answer lost (each delivery sent twice with one deduplication id),
    and every delivery-log write after a POST (the Deliveries UpdateItem that appends the attempt) answers 500;
    then anything left is given time to come back."""
    from tests.faults.delivery_scenarios import LEASE_SECONDS, LOG_WRITE_FAILS
    from tests.faults.harness import admin as stack_admin
    from tests.faults.harness import http

    status, account = stack_admin(stack.base_url, "POST", "/admin/v1/accounts",
                                  {"options": {"tokenization": False, "token_payments": False}})
    assert status == 201, account
    paths = ("/ok/wh-fault-a", "/ok/wh-fault-b")
    auth = {"Authorization": "Basic " + _basic(account), "Content-Type": "application/json"}
    base = f"{stack.base_url}/api/v4/accounts/{account['account_id']}/webhooks"
    for path in paths:
        status, _, raw, error = http(base, json.dumps({"url": stack.receiver.url + path, "event": SETTLEMENT})
                                     .encode(), auth)
        assert status == 201, (raw, error)
    stack.proxy.clear(counts=True)
    settlements = 2
    for n in range(settlements):
        stack.proxy.set_rules([LOG_WRITE_FAILS, {"mode": "lost_answer", "operations": ["AmazonSQS.SendMessageBatch"],
                                                 "count": 1}])
        form = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
                "response_format": "JSON", "transaction_type": "SETTLE-BATCH", "currency": "USD"}
        status, _, raw, error = http(stack.base_url + "/api/qsapi/3.8", json.dumps(form).encode(),
                                     {"Content-Type": "application/json"})
        assert status == 200 and json.loads(raw)["error"] is False, (raw, error)
        wait_until(lambda n=n: stack.proxy.counts.get("lost_answer AmazonSQS.SendMessageBatch", 0) >= n + 1, 20)
    stack.proxy.set_rules([LOG_WRITE_FAILS])

    def posts() -> list[dict[str, Any]]:
        with stack.receiver.lock:
            return [r for r in stack.receiver.requests if r["path"] in paths]

    wait_until(lambda: sum(1 for r in posts() if r["status"] == 200) >= settlements * len(paths), 90)
    time.sleep(5)  # the log writes' own retries of the last one
    stack.proxy.clear()
    copies = stack.proxy.counts.get("lost_answer AmazonSQS.SendMessageBatch", 0)
    failed_writes = stack.proxy.counts.get("http_5xx DynamoDB_20120810.UpdateItem", 0)
    time.sleep(LEASE_SECONDS + 12)  # anything still in the queue comes back meanwhile: none may POST again
    requests = posts()
    ok = Counter(r["headers"]["Vault-Delivery-Id"] for r in requests if r["status"] == 200)
    per_attempt = Counter((r["headers"]["Vault-Delivery-Id"], r["headers"]["Vault-Delivery-Attempt"])
                          for r in requests)
    summary = {"copies_queued": copies, "log_writes_failed": failed_writes, "posts": len(requests),
               "deliveries": len(ok)}
    print(json.dumps(summary))
    assert copies >= settlements and failed_writes > 0, summary
    assert len(ok) == settlements * len(paths), summary  # 0 lost: one delivery per settlement and endpoint
    assert set(ok.values()) == {1}, summary  # 0 duplicated: one 2xx per delivery
    assert set(per_attempt.values()) == {1}, summary  # each attempt POSTed once
    for path in paths:
        assert sum(1 for r in requests if r["path"] == path and r["status"] == 200) == settlements


@pytest.mark.parametrize("applied", [False, True], ids=["send-dropped", "send-applied"])
def test_sigkill_between_the_stream_read_and_the_send(stack: Any, applied: bool) -> None:
    """tests/faults/harness.py sigkill_between_stream_read_and_send with webhook endpoints: the runner is SIGKILLed
    while its stream relay holds the settlement's deliveries (its SendMessageBatch held by the proxy), the send
    then dropped or applied with its answer lost; the restarted runner reads the stream again (every earlier
    delivery too): 0 lost, one 2xx per delivery, each attempt POSTed once, earlier deliveries not POSTed again."""
    from tests.faults.harness import admin as stack_admin
    from tests.faults.harness import http

    hold = 4.0
    status, account = stack_admin(stack.base_url, "POST", "/admin/v1/accounts",
                                  {"options": {"tokenization": False, "token_payments": False}})
    assert status == 201, account
    name = "applied" if applied else "dropped"
    paths = (f"/ok/wh-kill-{name}-a", f"/ok/wh-kill-{name}-b")
    auth = {"Authorization": "Basic " + _basic(account), "Content-Type": "application/json"}
    for path in paths:
        status, _, raw, error = http(f"{stack.base_url}/api/v4/accounts/{account['account_id']}/webhooks",
                                     json.dumps({"url": stack.receiver.url + path, "event": SETTLEMENT}).encode(),
                                     auth)
        assert status == 201, (raw, error)
    with stack.receiver.lock:
        before = Counter((r["headers"].get("Vault-Delivery-Id"), r["headers"].get("Vault-Delivery-Attempt"))
                         for r in stack.receiver.requests)
    stack.proxy.clear(counts=True)
    mode = "delay" if applied else "reset_after"
    stack.proxy.set_rules([{"mode": mode, "operations": ["AmazonSQS.SendMessageBatch"], "seconds": hold}])
    form = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
            "response_format": "JSON", "transaction_type": "SETTLE-BATCH", "currency": "USD"}
    status, _, raw, error = http(stack.base_url + "/api/qsapi/3.8", json.dumps(form).encode(),
                                 {"Content-Type": "application/json"})
    assert status == 200 and json.loads(raw)["error"] is False, (raw, error)
    wait_until(lambda: stack.proxy.counts.get(f"{mode} AmazonSQS.SendMessageBatch", 0) > 0, 10)  # in its send
    stack.kill_runner()
    stack.proxy.clear()
    with stack.receiver.lock:
        delivered_at_kill = sum(1 for r in stack.receiver.requests if r["path"] in paths)
    time.sleep(hold + 0.5)  # the held send is dropped or applied by now
    stack.start_runner()

    def posts() -> list[dict[str, Any]]:
        with stack.receiver.lock:
            return list(stack.receiver.requests)

    wait_until(lambda: sum(1 for r in posts() if r["path"] in paths and r["status"] == 200) >= len(paths), 90)
    time.sleep(5)  # room for a copy to show: there must be none
    requests = posts()
    mine = [r for r in requests if r["path"] in paths]
    ok = Counter(r["headers"]["Vault-Delivery-Id"] for r in mine if r["status"] == 200)
    per_attempt = Counter((r["headers"].get("Vault-Delivery-Id"), r["headers"].get("Vault-Delivery-Attempt"))
                          for r in requests)
    summary = {"delivered_at_kill": delivered_at_kill, "starts": stack.starts, "posts": len(mine),
               "deliveries": len(ok)}
    print(json.dumps(summary))
    assert delivered_at_kill == 0 and stack.starts >= 2, summary
    assert len(ok) == len(paths) and set(ok.values()) == {1}, summary  # 0 lost, 0 delivered twice
    assert all(n == 1 for n in per_attempt.values()), summary  # each attempt POSTed once, earlier ones included
    assert all(per_attempt[key] == n for key, n in before.items()), summary
