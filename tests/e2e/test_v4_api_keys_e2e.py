"""API keys through ``make run``'s runner, with clients generated from the original's document and from ours.

* Every API-key operation (``createApiKey``, ``listApiKeys``, ``getApiKey``, ``updateApiKey``, ``deleteApiKey``,
  ``listApiKeyScopes``) sent by the client openapi-python-client generates from the original's PayConex v4
  document (unmodified; ``../shared/original-contracts``, skipped without it) and by the one from
  ``openapi/gateway.json``; each answer is checked against the original's schema of its status (formats checked)
  and, through :func:`tests.e2e.contract.check`, against ours.
* A key of exact scopes works, a missing scope is 403 with the scope named; a key of ``pcx:payments:read`` reads a
  transaction (RSAPI and v4 payments) and gets 403 on SALE, CREDIT, key creation, webhooks, payments/init and
  dynamic descriptors; an expired and a disabled key get the
  uniform 1003, and the runner's AuthenticationFailures lines count them by cause; a key of one account cannot
  touch another; the payment iFrame's seven operations run with a key of ``pcx:iframe:*`` (Basic and HMAC) and
  refuse a key without the operation's scope.

One contradiction inside the original's document is settled here as its intent reads: ``ApiKeyExtended`` adds
``secret`` to ``ApiKey`` through ``allOf``, but ``ApiKey`` forbids additional properties, so a literal JSON Schema
validator refuses every ``ApiKeyExtended`` that carries the secret it exists for. The check validates
``ApiKeyExtended`` as ``ApiKey``'s members plus ``secret``, closed, with the document's other contradictions
(tests/e2e/original_contract.py lists them all).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import re
import time
from types import ModuleType
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.e2e import original_contract
from tests.e2e.conftest import Runner
from tests.e2e.http import admin, post_json, request
from tests.e2e.original_contract import ORIGINAL, document, example, generate
from tests.e2e.original_contract import check as check_original
from tests.e2e.test_generated_clients_e2e import _opc
from vaultcore.auth.hmac_scheme import hmac_response, string_to_hash

OPERATIONS = ("create_api_key", "list_api_keys", "get_api_key", "update_api_key", "delete_api_key",
              "list_api_key_scopes")
CARD = "4242424242424242"



def _with_key_operations(module: ModuleType) -> ModuleType:
    for op in OPERATIONS:
        importlib.import_module(f"{module.__name__}.api.api_keys.{op}")  # every operation is generated
    return module


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return document()


@pytest.fixture(scope="module")
def original() -> ModuleType:
    return _with_key_operations(generate(ORIGINAL, "original-payconex"))


@pytest.fixture(scope="module")
def ours() -> ModuleType:
    return _with_key_operations(_opc("gateway"))  # our document's client, as tests/e2e/test_generated_clients_e2e


def check(doc: dict[str, Any], operation_id: str, response: Any) -> Any:
    """The answer is the original's for ``operation_id`` and valid against our document too."""
    return check_original(doc, operation_id, response, ours=True)


def _call(module: ModuleType, client: Any, name: str, **kwargs: Any) -> Any:
    """One operation, sent exactly as the generated client builds it (its ``_get_kwargs``), on its httpx client."""
    api = importlib.import_module(f"{module.__name__}.api.api_keys.{name}")
    return client.get_httpx_client().request(**api._get_kwargs(**kwargs))


def _parse(module: ModuleType, client: Any, name: str, response: Any) -> Any:
    """The answer as the generated client parses it (its model of the status's schema)."""
    api = importlib.import_module(f"{module.__name__}.api.api_keys.{name}")
    return api._parse_response(client=client, response=response)


def _client(module: ModuleType, runner: Runner, user: str, password: str) -> Any:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return module.AuthenticatedClient(base_url=runner.base_url, token=token, prefix="Basic")


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def _create(runner: Runner, account_id: str, accesskey: str, **members: Any) -> dict[str, Any]:
    status, key = post_json(f"{runner.base_url}/api/v4/accounts/{account_id}/api-keys",
                            {"label": "e2e key", **members}, _basic(account_id, accesskey))
    assert status == 201, key
    return key


def _emf_after(runner: Runner, seen: int, timeout: float = 5.0) -> list[dict[str, Any]]:
    """AuthenticationFailures lines the runner wrote after the first ``seen`` lines of its stdout."""
    deadline = time.monotonic() + timeout
    while True:
        lines = runner.stdout.read_text(errors="replace").splitlines()[seen:]
        found = [json.loads(line) for line in lines if line.startswith('{"_aws"') and "AuthenticationFailures" in line]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _lines(runner: Runner) -> int:
    return len(runner.stdout.read_text(errors="replace").splitlines())


@pytest.fixture(scope="module")
def account(runner: Runner) -> dict[str, str]:
    """A merchant account of its own (CREDIT enabled), so that its keys and payments touch nothing else."""
    status, created = admin(runner.base_url, "POST", "/admin/v1/accounts", {"options": {"credit": True}})
    assert status == 201, created
    return {"account_id": created["account_id"], "api_accesskey": created["api_accesskey"]}


# ------------------------------------------------------------------------------------------------ the tests
def test_every_api_key_operation_of_the_originals_generated_client(runner: Runner, doc: dict[str, Any],
                                                                   original: ModuleType,
                                                                   account: dict[str, str]) -> None:
    module, account_id = original, account["account_id"]
    models = importlib.import_module(f"{module.__name__}.models")
    client = _client(module, runner, account_id, account["api_accesskey"])
    seen: set[str] = set()
    body = example(doc, {"$ref": "#/components/schemas/CreateApiKeyRequest"})
    # the document's example names its own account (120615523104): a key may only name accounts the caller has
    assert body["accounts"] == ["120615523104"]
    response = _call(module, client, "create_api_key", account_id=account_id,
                     body=models.CreateApiKeyRequest.from_dict(body))
    refused = check(doc, "createApiKey", response)
    assert response.status_code == 403 and refused["errorType"] == "authorization" and "120615523104" in refused["value"]
    body["accounts"] = [account_id]
    response = _call(module, client, "create_api_key", account_id=account_id,
                     body=models.CreateApiKeyRequest.from_dict(body))
    created = check(doc, "createApiKey", response)
    assert response.status_code == 201 and re.fullmatch(r"api_[0-9a-f]{32}", created["id"]), created
    assert re.fullmatch(doc["components"]["parameters"]["ApiKeyId"]["schema"]["pattern"], created["id"])
    assert (created["label"], created["scopes"], created["methods"]) == (body["label"], body["scopes"],
                                                                         body["methods"])
    assert re.fullmatch(r"[0-9a-f]{32}", created["secret"]) and "expiresAt" in created
    # the generated model: openapi-python-client folds ApiKeyExtended into the closed ApiKey and drops `secret`
    # (the document's contradiction again); a client of the original reads the secret from the raw answer
    parsed = _parse(module, client, "create_api_key", response)
    assert parsed.id == created["id"] and parsed.label == created["label"]
    seen.add("createApiKey")

    response = _call(module, client, "list_api_keys", account_id=account_id)
    listed = check(doc, "listApiKeys", response)
    assert response.status_code == 200 and created["id"] in [k["id"] for k in listed]
    assert all("secret" not in k for k in listed) and int(response.headers["X-Total"]) == len(listed)
    response = _call(module, client, "list_api_keys", account_id=account_id, query="no such label")
    assert check(doc, "listApiKeys", response) == []
    seen.add("listApiKeys")

    response = _call(module, client, "get_api_key", account_id=account_id, resource_id=created["id"])
    read = check(doc, "getApiKey", response)
    assert response.status_code == 200 and read == {k: v for k, v in created.items() if k != "secret"}
    seen.add("getApiKey")

    update = example(doc, {"$ref": "#/components/schemas/UpdateApiKeyRequest"})
    update["accounts"] = [account_id]
    update["enabled"] = False
    response = _call(module, client, "update_api_key", account_id=account_id, resource_id=created["id"],
                     body=models.UpdateApiKeyRequest.from_dict(update))
    updated = check(doc, "updateApiKey", response)
    assert response.status_code == 200 and updated["enabled"] is False and updated["id"] == created["id"]
    seen.add("updateApiKey")

    response = _call(module, client, "list_api_key_scopes")
    scopes = check(doc, "listApiKeyScopes", response)
    assert response.status_code == 200
    assert {s["scope"] for s in scopes} == set(doc["components"]["schemas"]["APIKeyScopes"]["enum"])
    for entry in scopes:
        models.ListApiKeyScopesEntry.from_dict(entry)
    seen.add("listApiKeyScopes")

    response = _call(module, client, "delete_api_key", account_id=account_id, resource_id=created["id"])
    assert check(doc, "deleteApiKey", response) is None and response.status_code == 204
    # deleted: a second delete finds nothing (the original documents 404 for delete, not for get)
    response = _call(module, client, "delete_api_key", account_id=account_id, resource_id=created["id"])
    assert response.status_code == 404 and check(doc, "deleteApiKey", response)["errorType"] == "not_found"
    seen.add("deleteApiKey")
    assert seen == {original_contract.operation(doc, o)[2]["operationId"] for o in (
        "createApiKey", "listApiKeys", "getApiKey", "updateApiKey", "deleteApiKey", "listApiKeyScopes")}


def test_a_key_of_exact_scopes_runs_every_operation_of_our_generated_client(runner: Runner, doc: dict[str, Any],
                                                                            ours: ModuleType,
                                                                            account: dict[str, str]) -> None:
    """A key of ``pcx:api_key:*`` (which allows the scope list too) manages keys through our document's client;
    a key of ``pcx:api_key:read`` reads them and gets 403, the scope named, on the rest."""
    module, account_id = ours, account["account_id"]
    models = importlib.import_module(f"{module.__name__}.models")
    manager = _create(runner, account_id, account["api_accesskey"], scopes=["pcx:api_key:*"], methods=["BASIC"])
    client = _client(module, runner, manager["id"], manager["secret"])
    response = _call(module, client, "create_api_key", account_id=account_id, body=models.CreateApiKeyRequest(
        label="reader", scopes=[models.APIKeyScopes("pcx:api_key:read")], expires_in="1 day"))
    reader = check(doc, "createApiKey", response)
    assert response.status_code == 201 and reader["scopes"] == ["pcx:api_key:read"]
    for name, kwargs, operation in (("list_api_keys", {}, "listApiKeys"),
                                    ("get_api_key", {"resource_id": reader["id"]}, "getApiKey")):
        response = _call(module, client, name, account_id=account_id, **kwargs)
        assert response.status_code == 200 and check(doc, operation, response)
    response = _call(module, client, "update_api_key", account_id=account_id, resource_id=reader["id"],
                     body=models.UpdateApiKeyRequest(label="reader two"))
    assert response.status_code == 200 and check(doc, "updateApiKey", response)["label"] == "reader two"
    response = _call(module, client, "list_api_key_scopes")
    assert response.status_code == 200 and len(check(doc, "listApiKeyScopes", response)) == 37

    narrow = _client(module, runner, reader["id"], reader["secret"])
    response = _call(module, narrow, "get_api_key", account_id=account_id, resource_id=manager["id"])
    assert response.status_code == 200 and "secret" not in check(doc, "getApiKey", response)
    for name, kwargs, operation, scope in (
            ("create_api_key", {"body": models.CreateApiKeyRequest(
                label="more", scopes=[models.APIKeyScopes("pcx:api_key:read")])}, "createApiKey",
             "pcx:api_key:create"),
            ("update_api_key", {"resource_id": manager["id"], "body": models.UpdateApiKeyRequest(enabled=False)},
             "updateApiKey", "pcx:api_key:update"),
            ("delete_api_key", {"resource_id": manager["id"]}, "deleteApiKey", "pcx:api_key:delete")):
        response = _call(module, narrow, name, account_id=account_id, **kwargs)
        refused = check(doc, operation, response)
        assert response.status_code == 403 and refused["errorType"] == "authorization", refused
        assert scope in refused["value"], refused
    response = _call(module, client, "delete_api_key", account_id=account_id, resource_id=reader["id"])
    assert response.status_code == 204 and check(doc, "deleteApiKey", response) is None


def _qsapi(runner: Runner, account_id: str, accesskey: str, **variables: str) -> tuple[int, dict[str, Any]]:
    status, body = post_json(runner.base_url + "/api/qsapi/3.8", urlencode(
        {"account_id": account_id, "api_accesskey": accesskey, "transaction_amount": "10.00", **variables}),
        {"Content-Type": "application/x-www-form-urlencoded"})
    return status, body


PAYMENT = {"tender_type": "CARD", "card_number": CARD, "card_expiration": "1230", "card_verification": "123",
           "payment_type": "ECOMMERCE", "currency": "USD"}


def test_a_payments_read_key_reads_a_transaction_and_nothing_else(runner: Runner, account: dict[str, str]) -> None:
    account_id, accesskey = account["account_id"], account["api_accesskey"]
    payer = _create(runner, account_id, accesskey, scopes=["pcx:payments:create"], methods=["BASIC"])
    reader = _create(runner, account_id, accesskey, scopes=["pcx:payments:read"], methods=["BASIC"])
    status, sale = _qsapi(runner, account_id, f"{payer['id']}:{payer['secret']}", transaction_type="SALE",
                          **PAYMENT)
    assert status == 200 and sale["transaction_approved"] is True, sale
    as_reader = f"{reader['id']}:{reader['secret']}"
    status, report = post_json(runner.base_url + "/api/rsapi/v1/transactions", {
        "account_id": account_id, "api_accesskey": as_reader, "transaction_id": sale["transaction_id"]})
    assert status == 200 and report["transaction"]["transaction_id"] == sale["transaction_id"], report
    for ttype in ("SALE", "CREDIT"):
        status, refused = _qsapi(runner, account_id, as_reader, transaction_type=ttype, **PAYMENT)
        assert (status, refused["error_code"]) == (403, 103), refused
        assert "pcx:payments:create" in refused["error_message"] or "pcx:payments:update" in refused["error_message"]
    status, refused = post_json(f"{runner.base_url}/api/v4/accounts/{account_id}/api-keys",
                                {"label": "more", "scopes": ["pcx:payments:read"]}, _basic(reader["id"], reader["secret"]))
    assert status == 403 and "pcx:api_key:create" in refused["value"]
    status, refused = post_json(f"{runner.base_url}/api/v4/accounts/{account_id}/payment-iframe",
                                {"label": "x", "allowedParentDomains": []}, _basic(reader["id"], reader["secret"]))
    assert status == 403 and "pcx:iframe:create" in refused["value"]
    # the merchants' other v4 operations: the transaction reads, every change is refused with its scope named
    reader_auth = _basic(reader["id"], reader["secret"])
    base = f"{runner.base_url}/api/v4/accounts/{account_id}"
    status, details = post_json(f"{base}/payments/{sale['transaction_id']}", None, reader_auth, "GET")
    assert status == 200 and details["id"] == sale["transaction_id"], details
    for url, body, scope in ((f"{base}/webhooks", {"url": "https://example.com/hook", "event":
                                                   "PAYCONEX_BATCH_SETTLEMENT"}, "pcx:webhooks:create"),
                             (f"{base}/payments/init", {"description": "x"}, "pcx:payments:create"),
                             (f"{base}/dynamic_descriptors", {"name": "x", "descriptor": "X"},
                              "pcx:dynamic_descriptors:create")):
        status, refused = post_json(url, body, reader_auth)
        assert status == 403 and scope in refused["value"], (url, refused)
    status, refused = post_json(f"{base}/webhooks", None, reader_auth, "GET")
    assert status == 403 and "pcx:webhooks:read" in refused["value"], refused


def test_expired_and_disabled_keys_get_1003_and_the_metric_counts_them(runner: Runner,
                                                                       account: dict[str, str]) -> None:
    account_id, accesskey = account["account_id"], account["api_accesskey"]
    url = f"{runner.base_url}/api/v4/accounts/{account_id}/api-keys"
    expiring = _create(runner, account_id, accesskey, scopes=["pcx:api_key:read"], expiresIn="1 hour")
    disabled = _create(runner, account_id, accesskey, scopes=["pcx:api_key:read"], enabled=False)
    assert request(url, None, _basic(expiring["id"], expiring["secret"]), method="GET")[0] == 200
    seen = _lines(runner)
    status, refused = post_json(url, None, _basic(disabled["id"], disabled["secret"]), method="GET")
    assert status == 401 and refused["errorType"] == "authentication" and refused["errCode"] == 1003
    clock = runner.base_url + "/_local/clock"
    assert post_json(clock, {"offsetSeconds": 3601})[0] == 200
    try:
        status, expired = post_json(url, None, _basic(expiring["id"], expiring["secret"]), method="GET")
    finally:
        assert post_json(clock, {"offsetSeconds": 0})[1] == {"offsetSeconds": 0.0}
    assert (status, expired) == (401, {**refused, "traceId": expired["traceId"]})  # the same answer
    counted: list[tuple[int, str, str]] = []
    deadline = time.monotonic() + 5
    while len(counted) < 2 and time.monotonic() < deadline:  # both lines are written by now (the answers came)
        counted = [(d["AuthenticationFailures"], d["Cause"], d["Api"]) for d in _emf_after(runner, seen)]
        time.sleep(0.05)
    assert counted == [(1, "disabled", "iframe"), (1, "expired", "iframe")], counted


def test_a_key_of_one_account_cannot_touch_another(runner: Runner, account: dict[str, str]) -> None:
    status, other = admin(runner.base_url, "POST", "/admin/v1/accounts", {})
    assert status == 201, other
    key = _create(runner, account["account_id"], account["api_accesskey"], scopes=["pcx:api_key:*", "pcx:iframe:*",
                                                                                   "pcx:payments:*"])
    auth = _basic(key["id"], key["secret"])
    assert request(f"{runner.base_url}/api/v4/accounts/{account['account_id']}/payment-iframe", None, auth,
                   method="GET")[0] == 200
    for path in ("payment-iframe", "api-keys"):
        status, refused = post_json(f"{runner.base_url}/api/v4/accounts/{other['account_id']}/{path}", None, auth,
                                    method="GET")
        assert status == 401 and refused["errCode"] == 1003, (path, refused)
    status, refused = _qsapi(runner, other["account_id"], f"{key['id']}:{key['secret']}", transaction_type="SALE",
                             **PAYMENT)
    assert (status, refused["error_code"]) == (200, 102)
    status, refused = post_json(f"{runner.base_url}/api/v4/accounts/{account['account_id']}/api-keys",
                                {"label": "wider", "scopes": ["pcx:iframe:read"], "accounts": [other["account_id"]]},
                                _basic(account["account_id"], account["api_accesskey"]))
    assert status == 403 and other["account_id"] in refused["value"]


def test_the_payment_iframe_operations_with_scoped_keys(runner: Runner, doc: dict[str, Any],
                                                       original: ModuleType) -> None:
    """The seven iFrame operations with a key of ``pcx:iframe:*`` (the account needs a partner: the demo's);
    one by HMAC, two by the original's generated client; a key of ``pcx:iframe:read`` reads and is refused the
    rest, the scope named."""
    status, merchant = admin(runner.base_url, "POST", "/admin/v1/accounts", {
        "partnerId": runner.demo["partner"]["partnerId"], "options": {"token_payments": True}})
    assert status == 201, merchant
    account_id = merchant["account_id"]
    full = _create(runner, account_id, merchant["api_accesskey"], scopes=["pcx:iframe:*"])
    reader = _create(runner, account_id, merchant["api_accesskey"], scopes=["pcx:iframe:read"])
    base = f"{runner.base_url}/api/v4/accounts/{account_id}/payment-iframe"
    auth = _basic(full["id"], full["secret"])
    status, config = post_json(base, {"label": "Shop", "allowedParentDomains": []}, auth)
    assert status == 201, config
    cid = config["id"]
    assert post_json(base, None, auth, method="GET")[0] == 200
    assert post_json(f"{base}/{cid}", None, auth, method="GET")[0] == 201
    assert post_json(f"{base}/{cid}", {"language": "SPANISH"}, auth, method="PATCH")[0] == 201
    status, instance = post_json(f"{base}/{cid}/instance/init", {"label": "order 1"}, auth)
    assert status == 201, instance
    # the instance read signed with HMAC by the same key (methods ALL): over GET and the path; a signature made
    # for POST (the secure API's method) does not match
    path = f"/api/v4/accounts/{account_id}/payment-iframe/{cid}/instance/{instance['id']}"

    def hmac_header(verb: str) -> dict[str, str]:
        nonce, ts = "e2e-" + os.urandom(6).hex(), int(time.time())
        response = hmac_response(full["secret"].encode(), string_to_hash(path, nonce, ts, b"", verb))
        return {"Authorization": f'Hmac username="{full["id"]}", nonce="{nonce}", timestamp="{ts}", '
                                 f'response="{response}"'}

    assert post_json(runner.base_url + path, None, hmac_header("GET"), method="GET")[0] == 201
    assert post_json(runner.base_url + path, None, hmac_header("POST"), method="GET")[0] == 401
    # the original's generated client, with the key as its Basic credentials
    client = _client(original, runner, full["id"], full["secret"])
    for name, kwargs, operation, status in (("list_payment_iframes", {}, "listPaymentIframes", 200),
                                            ("get_iframe", {"iframe_id": cid}, "getIframe", 201)):
        api = importlib.import_module(f"{original.__name__}.api.payment_iframe.{name}")
        response = client.get_httpx_client().request(**api._get_kwargs(account_id=account_id, **kwargs))
        assert response.status_code == status and check(doc, operation, response), (name, response.content[:300])
    reader_client = _client(original, runner, reader["id"], reader["secret"])
    api = importlib.import_module(f"{original.__name__}.api.payment_iframe.delete_iframe")
    response = reader_client.get_httpx_client().request(**api._get_kwargs(account_id=account_id, iframe_id=cid))
    refused = check(doc, "deleteIframe", response)
    assert response.status_code == 403 and "pcx:iframe:delete" in refused["value"]
    narrow = _basic(reader["id"], reader["secret"])
    assert post_json(f"{base}/{cid}", None, narrow, method="GET")[0] == 201
    for method, url, body, scope in (("POST", base, {"label": "x", "allowedParentDomains": []}, "pcx:iframe:create"),
                                     ("PATCH", f"{base}/{cid}", {"language": "ENGLISH"}, "pcx:iframe:update"),
                                     ("POST", f"{base}/{cid}/instance/init", {"label": "o"},
                                      "pcx:iframe:instance:create"),
                                     ("GET", runner.base_url + path, None, "pcx:iframe:instance:read"),
                                     ("DELETE", f"{base}/{cid}", None, "pcx:iframe:delete")):
        status, refused = post_json(url, body, narrow, method=method)
        assert status == 403 and scope in refused["value"], (method, url, refused)
    assert post_json(f"{base}/{cid}", None, auth, method="DELETE")[0] == 204
