"""Issue 18 in-process: every conditional write on a money or authentication path recognises a retry of itself.

The fault modelled here is the one that broke money correctness: DynamoDB applies a write, its answer is lost,
and the SDK sends the same request again. :class:`LostAnswers` does exactly that at the AWS boundary: it makes
the real call (moto applies it), throws the answer away, and makes the same call again, whose answer (or error)
the platform gets. :class:`NoAnswers` models DynamoDB that applies (or not) and then stops answering, so the
platform cannot tell what happened. The end-to-end form, over real HTTP with a fault-injecting proxy between the
platform's own AWS client and a moto server, is tests/e2e/test_faults_e2e.py.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError

from tests.helpers import admin, call
from tests.postback_receiver import Receiver
from vaultcore import clock
from vaultcore.gateway.errors import E
from vaultcore.settings import settings

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageTypeDef

PATH = "/api/qsapi/3.8"
VISA = "4242424242424242"
# The modules that bound `dynamodb` at import: the money and authentication paths.
MODULES = ("vaultcore.gateway.store", "vaultcore.gateway.idempotency", "vaultcore.postback.deliveries",
           "vaultcore.store.nonces")


class _Wrapped:
    def __init__(self, real: Any, operations: set[str], behaviour: Any) -> None:
        self._real, self._operations, self._behaviour = real, operations, behaviour
        self.faults: list[str] = []

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._real, name)
        if name not in self._operations:
            return method

        def faulty(**kwargs: Any) -> Any:
            return self._behaviour(self, name, method, kwargs)

        return faulty


def _lost_answer(wrapper: _Wrapped, name: str, method: Any, kwargs: dict) -> Any:
    try:
        method(**kwargs)  # applied by DynamoDB; the answer never arrives
    except Exception:  # noqa: BLE001 - whatever it answered is lost too
        pass
    wrapper.faults.append(name)
    return method(**kwargs)  # the SDK's retry: the same request again


def _no_answer(apply: bool):
    def behaviour(wrapper: _Wrapped, name: str, method: Any, kwargs: dict) -> Any:
        if apply and not wrapper.faults:
            try:
                method(**kwargs)
            except Exception:  # noqa: BLE001
                pass
        wrapper.faults.append(name)
        raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    return behaviour


@pytest.fixture
def faults(platform, monkeypatch):
    """``faults(operations, behaviour)`` puts a faulty DynamoDB client in front of the money paths."""
    import importlib

    from vaultcore.store.aws import dynamodb

    def install(operations: set[str], behaviour: Any = _lost_answer) -> _Wrapped:
        wrapper = _Wrapped(dynamodb(), operations, behaviour)
        for module in MODULES:
            monkeypatch.setattr(importlib.import_module(module), "dynamodb", lambda: wrapper)
        return wrapper

    def remove() -> None:
        for module in MODULES:
            monkeypatch.setattr(importlib.import_module(module), "dynamodb", dynamodb)

    install.remove = remove  # type: ignore[attr-defined]
    return install


WRITES = {"put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item"}


def _account(platform, postback_url: str | None = None) -> dict:
    status, account = admin(platform, "POST", "/admin/v1/accounts", {"options": {}, "postback_url": postback_url})
    assert status == 201, account
    return account


def _sale(platform, account: dict, key: str | None = None, amount: str = "10.00") -> tuple[int, dict, dict]:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    return call(platform, "GatewayFunction", "POST", PATH, json.dumps({
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"], "transaction_type": "SALE",
        "tender_type": "CARD", "card_number": VISA, "card_expiration": "1230", "transaction_amount": amount,
        "currency": "USD"}), headers, resource=PATH)


def _transactions(account: dict) -> list[dict]:
    from vaultcore.store.ddb import from_item

    # The account's items are spread over shards (issue 29): a consistent scan of the (small) test table
    ddb = boto3.client("dynamodb", region_name="us-east-1")
    items = ddb.scan(TableName=settings().transactions_table, FilterExpression="account_id = :a",
                     ExpressionAttributeValues={":a": {"S": account["account_id"]}}, ConsistentRead=True)["Items"]
    return [from_item(i) for i in items]


def _approved(account: dict) -> list[dict]:
    return [t for t in _transactions(account) if t.get("transaction_approved")]


def _queued(platform) -> list[MessageTypeDef]:
    platform.pump_streams()  # the Deliveries stream relay queues what the gateway recorded
    sqs = boto3.client("sqs", region_name="us-east-1")
    out: list[MessageTypeDef] = []
    while True:
        got = sqs.receive_message(QueueUrl=settings().postback_queue_url, MaxNumberOfMessages=10,
                                  AttributeNames=["All"]).get("Messages", [])
        if not got:
            return out
        out.extend(got)


# ------------------------------------------------------------------------------------------------ the gateway
def test_a_sale_whose_every_write_answer_is_lost_charges_once_and_answers(platform, faults):
    receiver = Receiver()
    try:
        account = _account(platform, receiver.url + "/ok")
        wrapper = faults(WRITES)
        status, headers, sale = _sale(platform, account, key="order-1")
        # the idempotency claim and the transaction (one PutItem, flagged for its postback: issue 29) were each
        # sent twice; no "complete" write: the recorded transaction answers the replay below
        assert wrapper.faults.count("put_item") >= 2 and set(wrapper.faults) == {"put_item"}
        assert status == 200 and sale["transaction_approved"] is True, sale
        (recorded,) = _approved(account)
        assert recorded["transaction_id"] == sale["transaction_id"]
        status, headers, replay = _sale(platform, account, key="order-1")
        assert status == 200 and headers.get("Idempotent-Replayed") == "true"
        assert replay["transaction_id"] == sale["transaction_id"] and len(_approved(account)) == 1
        (message,) = _queued(platform)
        assert json.loads(message["Body"])["transaction_id"] == sale["transaction_id"]
    finally:
        receiver.close()


def test_a_capture_whose_answers_are_lost_captures_once(platform, faults):
    account = _account(platform)
    status, _, auth = call(platform, "GatewayFunction", "POST", PATH, {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
        "transaction_type": "AUTHORIZATION", "tender_type": "CARD", "card_number": VISA, "card_expiration": "1230",
        "transaction_amount": "20.00", "currency": "USD"})
    assert auth["transaction_approved"] is True
    wrapper = faults(WRITES)
    status, _, capture = call(platform, "GatewayFunction", "POST", PATH, {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
        "transaction_type": "CAPTURE", "token_id": auth["transaction_id"], "transaction_amount": "20.00"})
    assert "update_item" in wrapper.faults
    assert status == 200 and capture["authorization_message"] == "CAPTURED", capture
    captures = [t for t in _transactions(account) if t["transaction_type"] == "CAPTURE"]
    assert [c["transaction_id"] for c in captures] == [capture["transaction_id"]]


def test_a_lost_answer_on_the_outcome_is_settled_by_reading_back(platform, faults):
    """The transaction write was applied but DynamoDB stopped answering: the fence finds this request's own item."""
    account = _account(platform)
    wrapper = faults({"put_item"}, _apply_then_drop_once())
    status, _, sale = _sale(platform, account)
    assert wrapper.faults and status == 200 and sale["transaction_approved"] is True, sale
    assert [t["transaction_id"] for t in _approved(account)] == [sale["transaction_id"]]


def _apply_then_drop_once():
    """The first transaction put is applied and its answer lost for good (every retry of the SDK too); after
    that, DynamoDB answers again (the fence's put and read)."""
    def behaviour(wrapper: _Wrapped, name: str, method: Any, kwargs: dict) -> Any:
        is_transaction = kwargs.get("TableName") == settings().transactions_table and "writer" in kwargs.get("Item", {})
        if is_transaction and kwargs["Item"]["writer"]["S"] != "#fence" and not wrapper.faults:
            method(**kwargs)
            wrapper.faults.append(name)
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")
        return method(**kwargs)

    return behaviour


def test_an_unknown_outcome_is_never_reported_as_nothing_charged_and_the_key_settles_it(platform, faults):
    """DynamoDB down at the transaction write: error 1 'outcome unknown' (HTTP 500), the key stays held; after
    its lock the retry with the same key fences the id and charges exactly once."""
    account = _account(platform)
    faults({"transact_write_items", "put_item"}, _only_transactions(_no_answer(apply=False)))
    status, _, first = _sale(platform, account, key="order-unknown")
    assert status == 500 and first["error_code"] == E.INTERNAL
    assert "unknown" in first["error_message"] and "nothing was charged" not in first["error_message"]
    faults.remove()
    status, _, busy = _sale(platform, account, key="order-unknown")
    assert status == 409 and busy["error_code"] == E.IDEMPOTENCY_IN_PROGRESS  # not released: it may be charged
    clock.set_offset(31)
    status, _, retry = _sale(platform, account, key="order-unknown")
    assert status == 200 and retry["transaction_approved"] is True
    assert [t["transaction_id"] for t in _approved(account)] == [retry["transaction_id"]]
    status, headers, replay = _sale(platform, account, key="order-unknown")
    assert headers.get("Idempotent-Replayed") == "true" and replay["transaction_id"] == retry["transaction_id"]


def _only_transactions(behaviour):
    def only(wrapper: _Wrapped, name: str, method: Any, kwargs: dict) -> Any:
        if kwargs.get("TableName") == settings().transactions_table or name == "transact_write_items":
            return behaviour(wrapper, name, method, kwargs)
        return method(**kwargs)

    return only


def test_a_write_that_certainly_did_not_land_says_so_and_frees_the_key(platform, faults):
    """The transaction write fails but the fence lands: nothing was charged, for certain; the key is released."""
    account = _account(platform)
    state = {"failed": False}

    def first_write_fails(wrapper: _Wrapped, name: str, method: Any, kwargs: dict) -> Any:
        item = kwargs.get("Item", {})
        if (kwargs.get("TableName") == settings().transactions_table and not state["failed"]
                and item.get("writer", {}).get("S") != "#fence"):
            state["failed"] = True
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")
        return method(**kwargs)

    faults({"put_item"}, first_write_fails)
    status, _, first = _sale(platform, account, key="order-free")
    assert status == 500 and "nothing was charged" in first["error_message"]
    status, _, retry = _sale(platform, account, key="order-free")  # released: runs again at once
    assert status == 200 and retry["transaction_approved"] is True
    assert [t["transaction_id"] for t in _approved(account)] == [retry["transaction_id"]]


def test_a_sale_killed_after_its_write_gets_its_postback_from_the_stream(platform, monkeypatch):
    """The request dies right after the transaction write (its delivery item in the same TransactWriteItems):
    the Deliveries stream relay queues the postback all the same, once; the replay of the key queues nothing."""
    from vaultcore import metrics

    account = _account(platform, "http://127.0.0.1:9/ok")

    def die(*args, **kwargs):
        raise RuntimeError("the container was killed")

    with monkeypatch.context() as patched:
        patched.setattr(metrics, "gateway_outcome", die)  # the first thing the request does after the write
        assert _sale(platform, account, key="order-killed")[0] == 500  # the handler's last resort answer
    (recorded,) = _approved(account)
    (message,) = _queued(platform)
    assert json.loads(message["Body"])["delivery_id"] == recorded["delivery_id"]
    clock.set_offset(31)
    status, headers, replay = _sale(platform, account, key="order-killed")
    assert status == 200 and headers.get("Idempotent-Replayed") == "true"
    assert replay["transaction_id"] == recorded["transaction_id"]
    assert _queued(platform) == []  # nothing more: the stream has no new delivery


def test_a_sale_killed_after_its_write_without_a_key_gets_its_postback(platform, monkeypatch):
    from vaultcore import metrics

    account = _account(platform, "http://127.0.0.1:9/ok")
    monkeypatch.setattr(metrics, "gateway_outcome", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("killed")))
    assert _sale(platform, account)[0] == 500
    (recorded,) = _approved(account)
    (message,) = _queued(platform)
    assert json.loads(message["Body"])["transaction_id"] == recorded["transaction_id"]


# ------------------------------------------------------------------------------------------------ nonces
def test_a_signed_request_whose_nonce_answer_is_lost_is_not_a_replay(platform, faults):
    import base64
    import hashlib
    import hmac
    import time
    import uuid

    status, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "Nonce partner", "apiSecurity": "hmac"})
    assert status == 201
    key = base64.b64decode(partner["hmacKey"])
    body = json.dumps({"reference": "r1"}).encode()
    path = "/api/partner/validate"

    def signed(nonce: str) -> dict:
        ts = str(int(time.time()))
        text = f"POST {path}\n{nonce}\n{ts}\n\n{hashlib.sha256(body).hexdigest()}"
        mac = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
        return {"Content-Type": "application/json", "Authorization":
                f'Hmac username="{partner["partnerId"]}", nonce="{nonce}", timestamp="{ts}", response="{mac}"'}

    wrapper = faults({"put_item"})
    nonce = uuid.uuid4().hex
    status, _, answer = call(platform, "PartnerValidateFunction", "POST", path, body, signed(nonce))
    assert "put_item" in wrapper.faults
    assert status == 200 and answer.get("success") is True, answer
    faults.remove()
    status, _, replayed = call(platform, "PartnerValidateFunction", "POST", path, body, signed(nonce))
    assert status == 401 and replayed["errCode"] == 1003  # a real replay still is one


# ------------------------------------------------------------------------------------------------ postbacks
def test_a_delivery_write_whose_answer_is_lost_is_still_attempt_one(platform, faults):
    """The one Deliveries write after the POST (issue 29: no claim before it on the SQS FIFO queue) is applied and
    its answer lost: its SDK retry is recognised as itself, the delivery is recorded as attempt 1, delivered, and a
    second copy is not POSTed."""
    receiver = Receiver()
    try:
        account = _account(platform, receiver.url + "/ok")
        status, _, sale = _sale(platform, account)
        (m,) = _queued(platform)
        wrapper = faults({"update_item", "batch_write_item"})
        record = {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                  "attributes": m["Attributes"], "messageAttributes": {}, "eventSource": "aws:sqs",
                  "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:PostbackFifoQueue.fifo", "awsRegion": "us-east-1"}
        assert platform.invoke("PostbackFunction", {"Records": [record]}) == {"batchItemFailures": []}
        assert "update_item" in wrapper.faults
        (delivered,) = receiver.delivered("/ok")
        assert delivered["headers"]["Vault-Delivery-Attempt"] == "1"
        # the message is recorded delivered: a second copy is not POSTed
        assert platform.invoke("PostbackFunction", {"Records": [record]}) == {"batchItemFailures": []}
        assert len(receiver.delivered("/ok")) == 1
    finally:
        receiver.close()


# ------------------------------------------------------------------------------------------------ issue 20
def test_a_refund_and_a_reversal_whose_answers_are_lost_move_money_once(platform, faults):
    account = _account(platform)
    creds = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
    _, _, sale = _sale(platform, account)
    _, _, auth = call(platform, "GatewayFunction", "POST", PATH, {
        **creds, "transaction_type": "AUTHORIZATION", "tender_type": "CARD", "card_number": VISA,
        "card_expiration": "1230", "transaction_amount": "20.00"})
    wrapper = faults(WRITES)
    _, _, refund = call(platform, "GatewayFunction", "POST", PATH, {
        **creds, "transaction_type": "REFUND", "token_id": sale["transaction_id"], "transaction_amount": "4.00"})
    _, _, reversal = call(platform, "GatewayFunction", "POST", PATH, {
        **creds, "transaction_type": "REVERSAL", "token_id": auth["transaction_id"]})
    assert "update_item" in wrapper.faults
    assert refund["authorization_message"] == "REFUND" and reversal["authorization_message"] == "APPROVED"
    faults.remove()
    items = {t["transaction_id"]: t for t in _transactions(account)}
    original = items[sale["transaction_id"]]
    assert original["refundable_cents"] == 600 and original["refund_ids"] == {refund["transaction_id"]}
    assert items[auth["transaction_id"]]["reversed_by"] == reversal["transaction_id"]
    assert sorted(t["transaction_type"] for t in items.values()) == ["AUTHORIZATION", "REFUND", "REVERSAL", "SALE"]


def _claim_applied_then_unanswered(undo: bool):
    """The idempotency claim (a PutItem on the Idempotency table) is applied and then every answer is lost (the
    SDK's retries too); with ``undo``, DynamoDB answers again from the next call on, else it stays down."""
    def behaviour(wrapper: _Wrapped, name: str, method: Any, kwargs: dict) -> Any:
        if kwargs.get("TableName") != settings().idempotency_table:
            return method(**kwargs)
        if name == "put_item" and not wrapper.faults:
            method(**kwargs)
            wrapper.faults.append(name)
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")
        if not undo and wrapper.faults:
            wrapper.faults.append(name)
            raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")
        return method(**kwargs)

    return behaviour


def test_a_claim_whose_answer_is_lost_is_undone_so_the_retry_runs_at_once(platform, faults):
    """Issue 26 (the self-collision seen under parallel load): the claim landed but its answer never came, so the
    request answers "nothing was charged; retry" -- and before, left its own lock behind: the retry it was told
    to make got 601 for 30 s. Now the claim is undone first, and the retry runs."""
    account = _account(platform)
    wrapper = faults({"put_item", "delete_item"}, _claim_applied_then_unanswered(undo=True))
    status, _, first = _sale(platform, account, key="order-claim-lost")
    assert wrapper.faults == ["put_item"]
    assert status == 500 and "nothing was charged" in first["error_message"], first
    faults.remove()
    status, _, retry = _sale(platform, account, key="order-claim-lost")
    assert status == 200 and retry["transaction_approved"] is True, retry
    assert [t["transaction_id"] for t in _approved(account)] == [retry["transaction_id"]]


def test_a_claim_that_can_be_neither_confirmed_nor_undone_is_an_unknown_outcome(platform, faults):
    """When the undo fails too, the key may be held: "outcome unknown" (retry with the same key after the lock),
    never "nothing was charged" followed by a 601."""
    account = _account(platform)
    wrapper = faults({"put_item", "delete_item"}, _claim_applied_then_unanswered(undo=False))
    status, _, first = _sale(platform, account, key="order-claim-stuck")
    assert wrapper.faults[:2] == ["put_item", "delete_item"]
    assert status == 500 and "unknown" in first["error_message"], first
    faults.remove()
    status, _, busy = _sale(platform, account, key="order-claim-stuck")
    assert status == 409 and busy["error_code"] == E.IDEMPOTENCY_IN_PROGRESS  # within the lock: documented
    clock.set_offset(31)
    status, _, retry = _sale(platform, account, key="order-claim-stuck")
    assert status == 200 and retry["transaction_approved"] is True
    assert [t["transaction_id"] for t in _approved(account)] == [retry["transaction_id"]]
