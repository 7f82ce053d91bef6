"""Webhook endpoints on moto: CRUD with the original's statuses, the SSRF guard, PAYCONEX_BATCH_SETTLEMENT through
the postback machinery (outbox, relay, sender) signed with the endpoint's secret, rotation with overlap, test
deliveries, the endpoint's delivery log and redelivery, and a lost SendMessageBatch answer (two copies): one POST.
Faults are placed at the AWS boundary (:mod:`tests.aws_faults`); nothing sleeps."""

from __future__ import annotations

import base64
import json

import pytest

from tests.aws_faults import AwsFaults
from tests.helpers import admin, call
from tests.integration.test_lifecycle_delivery import _Context, _copies
from tests.postback_receiver import Receiver
from vaultcore import clock
from vaultcore.webhooks import delivery, endpoints

BASE = "/api/v4/accounts/{account_id}/webhooks"
SETTLE = {"transaction_type": "SETTLE-BATCH", "currency": "USD"}


class Merchant:
    def __init__(self, platform, postback_url: str | None = None) -> None:
        self.platform = platform
        body = {"options": {}, **({"postback_url": postback_url} if postback_url else {})}
        status, account = admin(platform, "POST", "/admin/v1/accounts", body)
        assert status == 201, account
        self.account_id = account["account_id"]
        self.creds = {"account_id": self.account_id, "api_accesskey": account["api_accesskey"]}
        self.basic = "Basic " + base64.b64encode(f"{self.account_id}:{account['api_accesskey']}".encode()).decode()

    def api(self, method: str, suffix: str = "", body=None, *, webhook_id: str = "", delivery_id: str = "",
            auth: str | None = None, query=None):
        resource = BASE + suffix
        params = {"account_id": self.account_id, "webhook_id": webhook_id, "delivery_id": delivery_id}
        path = resource
        for name, value in params.items():
            path = path.replace("{" + name + "}", value)
        status, headers, payload = call(self.platform, "WebhooksFunction", method, path, body,
                                        {"Authorization": auth if auth is not None else self.basic},
                                        resource=resource, query=query,
                                        path_params={k: v for k, v in params.items() if "{" + k + "}" in resource})
        return status, headers, payload

    def register(self, url: str, event: str = endpoints.SETTLEMENT) -> dict:
        status, _, created = self.api("POST", "", {"url": url, "event": event})
        assert status == 201, created
        return created

    def settle(self) -> dict:
        status, _, body = call(self.platform, "GatewayFunction", "POST", "/api/qsapi/3.8", {**self.creds, **SETTLE},
                               resource="/api/qsapi/3.8")
        assert status == 200 and body["error"] is False, body
        return body


def _deliver(platform, n: int) -> None:
    import boto3

    from vaultcore.settings import settings

    handler = platform.modules["PostbackFunction"].lambda_handler
    records = _copies(platform, n)
    assert handler({"Records": records}, _Context(30)) == {"batchItemFailures": []}
    sqs = boto3.client("sqs", region_name="us-east-1")
    for record in records:  # acknowledged: deleted, as the event source mapping does (a FIFO group moves on)
        sqs.delete_message(QueueUrl=settings().postback_queue_url, ReceiptHandle=record["receiptHandle"])


def test_crud_with_the_originals_statuses_and_list_convention(platform):
    shop = Merchant(platform)
    created = shop.register("https://hooks.example.com/settled")
    assert set(created) == {"id", "url", "event", "secret", "createdAt", "updatedAt"}
    assert created["secret"].startswith("whsec_") and len(created["secret"]) == 70
    wid = created["id"]
    assert endpoints.WEBHOOK_ID.fullmatch(wid)
    status, headers, listed = shop.api("GET")
    assert status == 200 and [w["id"] for w in listed] == [wid] and "secret" not in listed[0]
    assert headers["X-Total"] == "1" and headers["X-Current_page"] == "1"
    status, _, got = shop.api("GET", "/{webhook_id}", webhook_id=wid)
    assert status == 200 and got["url"] == "https://hooks.example.com/settled" and "secret" not in got
    status, _, patched = shop.api("PATCH", "/{webhook_id}", {"url": "https://hooks.example.com/v2",
                                                            "event": endpoints.ACCOUNT_UPDATER}, webhook_id=wid)
    assert status == 200 and patched["url"] == "https://hooks.example.com/v2"
    assert patched["event"] == endpoints.ACCOUNT_UPDATER
    assert shop.api("DELETE", "/{webhook_id}", webhook_id=wid)[0] == 204
    status, _, missing = shop.api("GET", "/{webhook_id}", webhook_id=wid)
    assert status == 404 and missing["errorType"] == "not_found"
    assert shop.api("DELETE", "/{webhook_id}", webhook_id="not-a-uuid")[0] == 404
    # another account's endpoint is not found through this account, and its credentials don't open this path
    other = Merchant(platform)
    theirs = other.register("https://hooks.example.com/other")
    assert shop.api("GET", "/{webhook_id}", webhook_id=theirs["id"])[0] == 404
    assert shop.api("GET", auth=other.basic)[0] == 401


@pytest.mark.parametrize("body, member", [
    ({"url": "https://hooks.example.com/x"}, "event"),
    ({"url": "https://hooks.example.com/x", "event": "SALE_DONE"}, "event"),
    ({"event": endpoints.SETTLEMENT}, "url"),
    ({"url": "ftp://hooks.example.com/x", "event": endpoints.SETTLEMENT}, "url"),
    ({"url": "https://169.254.169.254/latest/meta-data", "event": endpoints.SETTLEMENT}, "url"),
    ({"url": "https://10.0.0.1/x", "event": endpoints.SETTLEMENT}, "url"),
    ({"url": "https://metadata.internal/x", "event": endpoints.SETTLEMENT}, "url"),
    ({"url": "https://hooks.example.com/x", "event": endpoints.SETTLEMENT, "secret": "mine"}, "secret"),
])
def test_invalid_members_and_urls_the_ssrf_guard_refuses_are_422(platform, body, member):
    shop = Merchant(platform)
    status, _, refused = shop.api("POST", "", body)
    assert status == 422, refused
    assert refused["errorType"] == "invalid_request" and refused["details"][0]["source"] == member
    assert "169.254" not in json.dumps(refused)  # the guard's messages never echo the URL
    assert shop.api("GET")[2] == []


def test_the_maximum_of_endpoints_per_account(platform, monkeypatch):
    monkeypatch.setattr(endpoints, "MAX_ENDPOINTS", 2)
    shop = Merchant(platform)
    shop.register("https://hooks.example.com/1")
    shop.register("https://hooks.example.com/2")
    status, _, refused = shop.api("POST", "", {"url": "https://hooks.example.com/3", "event": endpoints.SETTLEMENT})
    assert status == 422 and "at most 2" in refused["details"][0]["detail"]


def test_settlement_reaches_every_endpoint_once_signed_with_its_own_secret(platform):
    receiver = Receiver()
    try:
        shop = Merchant(platform, postback_url=receiver.url + "/postback")
        first = shop.register(receiver.url + "/ok/a")
        second = shop.register(receiver.url + "/ok/b")
        shop.register(receiver.url + "/ok/updater", endpoints.ACCOUNT_UPDATER)  # another event: nothing sent
        settled = shop.settle()
        _deliver(platform, 3)  # the SETTLE-BATCH's postback and one delivery per settlement endpoint
        assert len(receiver.delivered("/postback")) == 1 and receiver.count("/ok/updater") == 0
        for created, path in ((first, "/ok/a"), (second, "/ok/b")):
            [posted] = receiver.delivered(path)
            body = json.loads(posted["body"])
            assert body["event"] == endpoints.SETTLEMENT and body["webhookId"] == created["id"]
            assert body["accountId"] == shop.account_id and body["id"] == posted["headers"]["Vault-Delivery-Id"]
            assert body["data"]["transactionId"] == settled["transaction_id"] and body["data"]["batchId"] == 1
            header = posted["headers"]["Vault-Signature"]
            assert header.count("v1=") == 1
            assert delivery.verify(created["secret"].encode(), header, posted["body"], int(clock.now()))
            other = second if created is first else first
            assert not delivery.verify(other["secret"].encode(), header, posted["body"], int(clock.now()))
        # the endpoint's delivery log: the attempt, and only this endpoint's
        status, headers, log = shop.api("GET", "/{webhook_id}/deliveries", webhook_id=first["id"])
        assert status == 200 and headers["X-Total"] == "1"
        assert log[0]["status"] == "delivered" and log[0]["httpStatus"] == 200 and log[0]["attempt"] == 1
        # a second settlement is a new batch, a new delivery per endpoint
        shop.settle()
        _deliver(platform, 3)
        assert len(receiver.delivered("/ok/a")) == 2
        assert len({r["headers"]["Vault-Delivery-Id"] for r in receiver.delivered("/ok/")}) == 4
    finally:
        receiver.close()


def test_rotation_signs_with_both_secrets_during_the_overlap_then_the_new_one(platform, frozen_clock):
    receiver = Receiver()
    try:
        shop = Merchant(platform)
        created = shop.register(receiver.url + "/ok")
        status, _, rotated = shop.api("POST", "/{webhook_id}/rotate-secret", {"overlapSeconds": 3600},
                                      webhook_id=created["id"])
        assert status == 201 and rotated["secret"] != created["secret"]
        assert rotated["previousSecretExpiresAt"] == int(frozen_clock) + 3600
        shop.settle()
        _deliver(platform, 1)
        [posted] = receiver.delivered("/ok")
        header = posted["headers"]["Vault-Signature"]
        assert header.count("v1=") == 2
        for secret in (created["secret"], rotated["secret"]):
            assert delivery.verify(secret.encode(), header, posted["body"], int(clock.now()))
        clock.set_offset(3601)  # after the overlap: the new secret alone
        status, _, test = shop.api("POST", "/{webhook_id}/test", webhook_id=created["id"])
        assert status == 202
        _deliver(platform, 1)
        posted = receiver.delivered("/ok")[-1]
        assert posted["headers"]["Vault-Delivery-Id"] == test["deliveryId"]
        assert json.loads(posted["body"])["event"] == "VAULT_WEBHOOK_TEST"
        assert posted["headers"]["Vault-Signature"].count("v1=") == 1
        assert delivery.verify(rotated["secret"].encode(), posted["headers"]["Vault-Signature"], posted["body"],
                               int(clock.now()))
        # a rotation with no overlap retires the old secret at once
        status, _, again = shop.api("POST", "/{webhook_id}/rotate-secret", {"overlapSeconds": 0},
                                    webhook_id=created["id"])
        assert status == 201
        item = endpoints.load(shop.account_id, created["id"])
        assert len(endpoints.live_secrets(item, clock.now())) == 1
        assert shop.api("POST", "/{webhook_id}/rotate-secret", {"overlapSeconds": -1},
                        webhook_id=created["id"])[0] == 422
    finally:
        receiver.close()


def test_redelivery_and_a_deleted_endpoint(platform):
    receiver = Receiver()
    try:
        shop = Merchant(platform)
        created = shop.register(receiver.url + "/ok")
        _, _, test = shop.api("POST", "/{webhook_id}/test", webhook_id=created["id"])
        _deliver(platform, 1)
        status, _, queued = shop.api("POST", "/{webhook_id}/deliveries/{delivery_id}/redeliver",
                                     webhook_id=created["id"], delivery_id=test["deliveryId"])
        assert status == 202 and queued["deliveryId"] == test["deliveryId"]
        _deliver(platform, 1)
        posts = [r for r in receiver.delivered("/ok") if r["headers"]["Vault-Delivery-Id"] == test["deliveryId"]]
        assert [p["headers"]["Vault-Delivery-Attempt"] for p in posts] == ["1", "2"]
        # a delivery id of another endpoint (or none) is not found
        other = shop.register(receiver.url + "/ok/other")
        assert shop.api("POST", "/{webhook_id}/deliveries/{delivery_id}/redeliver", webhook_id=other["id"],
                        delivery_id=test["deliveryId"])[0] == 404
        # deleted before its delivery: abandoned, nothing POSTed
        shop.api("POST", "/{webhook_id}/test", webhook_id=other["id"])
        assert shop.api("DELETE", "/{webhook_id}", webhook_id=other["id"])[0] == 204
        _deliver(platform, 1)
        assert receiver.count("/ok/other") == 0
    finally:
        receiver.close()


def test_a_lost_relay_answer_sends_twice_and_the_endpoint_gets_one_post(platform, monkeypatch):
    """The postbacks' fault (issue 28 placement 4): the stream relay's SendMessageBatch applied, its answer lost,
    so the batch is sent again with the same FIFO deduplication ids: each settlement delivery is queued once; one
    POST per endpoint."""
    receiver = Receiver()
    try:
        shop = Merchant(platform)
        shop.register(receiver.url + "/ok/a")
        shop.register(receiver.url + "/ok/b")
        sqs = AwsFaults.install("sqs", monkeypatch)
        shop.settle()
        sqs.lose_answer("send_message_batch")
        handler = platform.modules["PostbackFunction"].lambda_handler
        records = _copies(platform, 2)
        assert "lose:send_message_batch" in sqs.injected
        sqs.clear()
        for record in records:  # one at a time, as two different invocations would
            assert handler({"Records": [record]}, _Context(30)) == {"batchItemFailures": []}
        assert receiver.count("/ok/a") == 1 and receiver.count("/ok/b") == 1
    finally:
        receiver.close()


def test_scopes_are_checked_before_any_work(platform):
    """A real API key of ``pcx:webhooks:read`` (created through the key operations): it lists, and every change is
    refused with 403 naming the scope, before anything is written."""
    shop = Merchant(platform)
    created = shop.register("https://hooks.example.com/x")
    status, _, key = call(platform, "ApiKeysFunction", "POST", f"/api/v4/accounts/{shop.account_id}/api-keys",
                          {"label": "read hooks", "scopes": ["pcx:webhooks:read"], "methods": ["BASIC"]},
                          {"Authorization": shop.basic}, resource="/api/v4/accounts/{account_id}/api-keys",
                          path_params={"account_id": shop.account_id})
    assert status == 201, key
    reader = "Basic " + base64.b64encode(f"{key['id']}:{key['secret']}".encode()).decode()
    assert shop.api("GET", auth=reader)[0] == 200
    status, _, refused = shop.api("POST", "", {"url": "https://hooks.example.com/y", "event": endpoints.SETTLEMENT},
                                  auth=reader)
    assert status == 403 and "pcx:webhooks:create" in refused["value"]
    for method, suffix, scope in (("PATCH", "/{webhook_id}", "update"), ("DELETE", "/{webhook_id}", "delete"),
                                  ("POST", "/{webhook_id}/rotate-secret", "update"),
                                  ("POST", "/{webhook_id}/test", "update")):
        status, _, refused = shop.api(method, suffix, {}, webhook_id=created["id"], auth=reader)
        assert status == 403 and refused["errorType"] == "authorization", (method, suffix, refused)
        assert f"pcx:webhooks:{scope}" in refused["value"], refused
    status, _, listed = shop.api("GET")
    assert status == 200 and len(listed) == 1 and listed[0]["url"] == "https://hooks.example.com/x"


def _sale(shop: Merchant) -> dict:
    status, _, body = call(shop.platform, "GatewayFunction", "POST", "/api/qsapi/3.8", {
        **shop.creds, "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
        "card_expiration": "1230", "transaction_amount": "5.00", "currency": "USD"}, resource="/api/qsapi/3.8")
    assert status == 200 and body["transaction_approved"] is True, body
    return body


def _delivery_items(platform, account_id: str) -> list[dict]:
    import boto3

    from vaultcore.settings import settings

    items = boto3.client("dynamodb", region_name="us-east-1").scan(TableName=settings().deliveries_table)["Items"]
    return [i for i in items if i["account_id"]["S"].startswith(account_id + "#") and
            i["attempt_key"]["S"].startswith(("DLV#", "MSG#"))]  # a delivery's item (MSG#: the version before)


def test_transactions_reach_the_endpoints_of_our_transaction_event(platform):
    receiver = Receiver()
    try:
        shop = Merchant(platform)
        created = shop.register(receiver.url + "/ok/tx", endpoints.TRANSACTION)
        shop.register(receiver.url + "/ok/settled")  # the settlement endpoint gets no transaction
        sale = _sale(shop)
        _deliver(platform, 1)
        [posted] = receiver.delivered("/ok/tx")
        body = json.loads(posted["body"])
        assert body["event"] == endpoints.TRANSACTION and body["webhookId"] == created["id"]
        assert body["data"]["transaction_id"] == sale["transaction_id"] and body["data"]["last4"] == "4242"
        assert "4242424242424242" not in posted["body"].decode()
        assert delivery.verify(created["secret"].encode(), posted["headers"]["Vault-Signature"], posted["body"],
                               int(clock.now()))
        assert receiver.count("/ok/settled") == 0
        # a SETTLE-BATCH is a transaction too: one delivery to each event's endpoint
        shop.settle()
        _deliver(platform, 2)
        assert len(receiver.delivered("/ok/tx")) == 2 and len(receiver.delivered("/ok/settled")) == 1
    finally:
        receiver.close()


def test_a_returned_ach_debit_reaches_the_transaction_event_as_the_postback_url_gets_it(platform):
    """VAULT_TRANSACTION carries every transaction postback, the ACH return's too: written in the return's own
    DynamoDB transaction, with a delivery id of its own (the debit's own delivery is another)."""
    receiver = Receiver()
    try:
        shop = Merchant(platform, postback_url=receiver.url + "/postback")
        shop.register(receiver.url + "/ok/tx", endpoints.TRANSACTION)
        status, _, debit = call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", {
            **shop.creds, "transaction_type": "SALE", "tender_type": "ACH", "bank_account_number": "000000000001",
            "bank_routing_number": "011000015", "transaction_amount": "7.00", "currency": "USD"},
            resource="/api/qsapi/3.8")
        assert status == 200 and debit["transaction_approved"] is True, debit
        shop.settle()
        _deliver(platform, 6)  # to each: the debit, the SETTLE-BATCH and the return
        for path in ("/postback", "/ok/tx"):
            posted = receiver.delivered(path)
            entries = [json.loads(p["body"]) for p in posted]
            entries = [e["responses"][0] if "responses" in e else e["data"] for e in entries]
            assert sorted(e.get("status", "") for e in entries if e["transaction_id"] == debit["transaction_id"]) \
                == sorted([debit.get("status", ""), "RETURNED"]), (path, entries)
            (returned,) = [e for e in entries if e.get("status") == "RETURNED"]
            assert returned["ach_return_code"] == "R01"
        ids = [p["headers"]["Vault-Delivery-Id"] for p in receiver.delivered("/ok/tx")]
        assert len(set(ids)) == 3
    finally:
        receiver.close()


def test_an_account_without_endpoints_writes_no_delivery_with_its_sale(platform):
    shop = Merchant(platform)  # no postback URL, no endpoint: the SALE is one PutItem, as before
    _sale(shop)
    assert _delivery_items(platform, shop.account_id) == []


def test_what_endpoints_cost_the_payment_path(platform):
    """A warm SALE of an account without endpoints makes the calls it made before (no Registry read, one write);
    with a VAULT_TRANSACTION endpoint, its delivery rides in the SALE's TransactWriteItems (no extra call); a
    SETTLE-BATCH reads the endpoints once (consistent Query) and writes one more item per endpoint."""
    from tests.aws_calls import AwsCalls

    plain = Merchant(platform)
    _sale(plain)  # warm: the account and its (empty) endpoint list are cached
    with AwsCalls() as calls:
        _sale(plain)
    print(json.dumps({"warm_sale_without_endpoints": dict(calls.by_operation)}))
    assert "dynamodb.Query" not in calls.by_operation
    assert calls.by_operation["dynamodb.PutItem"] + calls.by_operation["dynamodb.TransactWriteItems"] == 1
    assert "dynamodb.TransactWriteItems" not in calls.by_operation  # one PutItem, as without this feature

    hooked = Merchant(platform)
    hooked.register("https://hooks.example.com/tx", endpoints.TRANSACTION)
    for n in (1, 2, 3):
        hooked.register(f"https://hooks.example.com/s{n}")
    _sale(hooked)
    with AwsCalls() as calls:
        _sale(hooked)
    writes = [p for op, p in calls.params if op == "dynamodb.TransactWriteItems"]
    print(json.dumps({"warm_sale_with_a_transaction_endpoint": dict(calls.by_operation),
                      "items_written": len(writes[0]["TransactItems"])}))
    assert "dynamodb.Query" not in calls.by_operation and len(writes) == 1
    assert len(writes[0]["TransactItems"]) == 2  # the SALE and its one delivery
    with AwsCalls() as calls:
        hooked.settle()
    writes = [p for op, p in calls.params if op == "dynamodb.TransactWriteItems"]
    print(json.dumps({"settle_batch_with_3_settlement_endpoints": dict(calls.by_operation),
                      "items_written": len(writes[0]["TransactItems"])}))
    assert len(writes) == 1 and len(writes[0]["TransactItems"]) == 1 + 3 + 1  # the record, 3 settlement, 1 tx
    queries = [p for op, p in calls.params if op == "dynamodb.Query" and p.get("ConsistentRead")]
    assert len(queries) == 1


def _key(shop: Merchant, scopes: list[str]) -> str:
    status, _, key = call(shop.platform, "ApiKeysFunction", "POST", f"/api/v4/accounts/{shop.account_id}/api-keys",
                          {"label": "hooks", "scopes": scopes, "methods": ["BASIC"]}, {"Authorization": shop.basic},
                          resource="/api/v4/accounts/{account_id}/api-keys",
                          path_params={"account_id": shop.account_id})
    assert status == 201, key
    return "Basic " + base64.b64encode(f"{key['id']}:{key['secret']}".encode()).decode()


def test_the_transaction_event_needs_the_scope_that_reads_transactions(platform):
    """Review of issue 31: VAULT_TRANSACTION sends every transaction (the postback's entry: names, expiry, last
    four, and with token_data_in_postback the bfid and vault tokens) to the endpoint's URL. A key of
    pcx:webhooks:* alone could register (or move) such an endpoint and read, at its own URL, what only
    pcx:payments:read may read: that event, and changing the URL of an endpoint of it, need pcx:payments:read too."""
    shop = Merchant(platform)
    hooks_only = _key(shop, ["pcx:webhooks:*"])
    status, _, refused = shop.api("POST", "", {"url": "https://hooks.example.com/tx", "event": endpoints.TRANSACTION},
                                  auth=hooks_only)
    assert status == 403 and refused["errorType"] == "authorization" and "pcx:payments:read" in refused["value"]
    settled = shop.api("POST", "", {"url": "https://hooks.example.com/s", "event": endpoints.SETTLEMENT},
                       auth=hooks_only)
    assert settled[0] == 201, settled
    status, _, refused = shop.api("PATCH", "/{webhook_id}", {"event": endpoints.TRANSACTION},
                                  webhook_id=settled[2]["id"], auth=hooks_only)
    assert status == 403 and "pcx:payments:read" in refused["value"]
    theirs = shop.register("https://hooks.example.com/tx", endpoints.TRANSACTION)  # the account key
    status, _, refused = shop.api("PATCH", "/{webhook_id}", {"url": "https://attacker.example.net/tx"},
                                  webhook_id=theirs["id"], auth=hooks_only)
    assert status == 403 and "pcx:payments:read" in refused["value"]
    assert shop.api("GET", "/{webhook_id}", webhook_id=theirs["id"])[2]["url"] == "https://hooks.example.com/tx"
    # moving it off the event is no read either way; with pcx:payments:read the event is the key's to register
    both = _key(shop, ["pcx:webhooks:*", "pcx:payments:read"])
    created = shop.api("POST", "", {"url": "https://hooks.example.com/tx2", "event": endpoints.TRANSACTION},
                       auth=both)
    assert created[0] == 201, created
    assert shop.api("PATCH", "/{webhook_id}", {"url": "https://hooks.example.com/tx3"}, webhook_id=created[2]["id"],
                    auth=both)[0] == 200


@pytest.mark.parametrize("url", ["https://hooks.example.com/cards/4242424242424242",
                                 "https://hooks.example.com/?pan=4242%204242%204242%204242",
                                 "https://hooks.example.com/4242.4242.4242.4242/x"])
def test_a_webhook_url_never_holds_a_card_number(platform, url):
    shop = Merchant(platform)
    status, _, refused = shop.api("POST", "", {"url": url, "event": endpoints.SETTLEMENT})
    assert status == 422 and refused["details"][0]["source"] == "url", refused
    assert "4242" not in json.dumps(refused)
    created = shop.register("https://hooks.example.com/ok")
    status, _, refused = shop.api("PATCH", "/{webhook_id}", {"url": url}, webhook_id=created["id"])
    assert status == 422 and refused["details"][0]["source"] == "url", refused
    assert [w["url"] for w in shop.api("GET")[2]] == ["https://hooks.example.com/ok"]
