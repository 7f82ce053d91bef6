"""Issue 31 in-process on moto: v4 payments (init, a QSAPI SALE of the init id, details, level 3 PATCH before and
after settlement, PAN refusal) and dynamic descriptors (CRUD, the list's search and pages, the per-account maximum,
a SALE naming one echoes the processor's statement line in the QSAPI answer and the RSAPI record)."""

from __future__ import annotations

import base64
import json
import re

import boto3
import pytest

from tests.helpers import admin, call, table_dump
from vaultcore.gateway.errors import E

PAY = "/api/v4/accounts/{account_id}/payments"
DD = "/api/v4/accounts/{account_id}/dynamic_descriptors"
CARD = "4242424242424242"
META = {"description": "order 1001", "customer": {"name": "Jane Smith", "email": "jsmith@example.com",
                                                  "phone": "+14441234321",
                                                  "billingAddress": {"address1": "123 Plain St", "city": "Atlanta",
                                                                     "state": "GA", "country": "USA"}},
        "level2": {"orderId": "1001", "tax": "1.00"},
        "level3": {"summaryCommodityCode": "ABCD", "freightAmount": "2.00"},
        "items": [{"quantity": "1", "description": "Widget", "unitCost": "10.00", "lineItemTotal": "10.00"}],
        "trace": {"source": "web", "tags": ["web"]}}


class Merchant:
    def __init__(self, platform) -> None:
        self.platform = platform
        status, account = admin(platform, "POST", "/admin/v1/accounts", {})
        assert status == 201, account
        self.account_id = account["account_id"]
        self.creds = {"account_id": self.account_id, "api_accesskey": account["api_accesskey"]}
        self.basic = "Basic " + base64.b64encode(f"{self.account_id}:{account['api_accesskey']}".encode()).decode()

    def v4(self, function: str, resource: str, method: str, body=None, *, query=None, **params):
        params = {"account_id": self.account_id, **params}
        path = resource
        for name, value in params.items():
            path = path.replace("{" + name + "}", value)
        return call(self.platform, function, method, path, body, {"Authorization": self.basic}, resource=resource,
                    path_params=params, query=query)

    def pay(self, function: str = "PaymentsV4Function", **kw):
        return self.v4(function, **kw)

    def qsapi(self, **variables) -> dict:
        sale = {"transaction_type": "SALE", "tender_type": "CARD", "card_number": CARD, "card_expiration": "1239",
                "transaction_amount": "10.00"}
        status, _, body = call(self.platform, "GatewayFunction", "POST", "/api/qsapi/3.8",
                               json.dumps({**self.creds, **(sale if variables.get("transaction_type") is None
                                                            else {}), **variables}),
                               {"Content-Type": "application/json"}, resource="/api/qsapi/3.8")
        assert status in (200, 500), body
        return body


def _init(m: Merchant, body=None):
    return m.v4("PaymentsV4Function", PAY + "/init", "POST", META if body is None else body)


def _details(m: Merchant, transaction_id: str):
    return m.v4("PaymentsV4Function", PAY + "/{transaction_id}", "GET", transaction_id=transaction_id)


def _patch(m: Merchant, transaction_id: str, body):
    return m.v4("PaymentsV4Function", PAY + "/{transaction_id}", "PATCH", body, transaction_id=transaction_id)


def test_init_charge_read_patch_settle_then_patch_refused(platform):
    m = Merchant(platform)
    status, _, init = _init(m)
    assert status == 201 and re.fullmatch(r"[1-9][0-9]{11}", init["id"]) and init["status"] == "INITIALIZED"
    assert init["level3"] == META["level3"] and init["items"] == META["items"] and init["trace"]["timestamp"]
    tid = init["id"]
    status, _, before = _details(m, tid)
    assert status == 200 and before["status"] == "INITIALIZED" and before["description"] == "order 1001"

    sale = m.qsapi(transaction_id=tid)
    assert sale["transaction_id"] == tid and sale["transaction_approved"] is True, sale
    again = m.qsapi(transaction_id=tid)  # an init id charges once
    assert again["error_code"] == E.INIT_USED and again.get("transaction_id") != tid, again

    status, _, read = _details(m, tid)
    assert status == 200 and read["status"] == "APPROVED" and read["id"] == tid, read
    assert read["card"] == {"brand": "VISA", "last4": "4242", "expiry": "1239"}
    assert read["amounts"] == {"currency": "USD", "total": "10.00"} and read["auth"]["message"] == "APPROVED"
    assert read["transaction"]["transaction_id"] == tid and read["customer"] == META["customer"]

    level3 = {"summaryCommodityCode": "WXYZ", "dutyAmount": "1.00"}
    status, _, patched = _patch(m, tid, {"level3": level3, "customer": {"name": "Jane Q Smith"},
                                         "items": [{"quantity": "2", "description": "Widget"}]})
    assert status == 200 and patched["level3"] == level3 and patched["customer"]["name"] == "Jane Q Smith"
    assert patched["customer"]["email"] == "jsmith@example.com" and patched["items"][0]["quantity"] == "2"

    settle = m.qsapi(transaction_type="SETTLE-BATCH")
    assert settle["transaction_approved"] is True, settle
    status, _, refused = _patch(m, tid, {"level3": {"dutyAmount": "9.00"}})
    assert status == 422 and refused["errorType"] == "invalid_request" and refused["errCode"] == 930, refused
    status, _, after = _details(m, tid)
    assert after["level3"] == level3  # unchanged


def test_a_sale_without_init_is_readable_and_patchable_and_costs_no_meta_write(platform):
    m = Merchant(platform)
    sale = m.qsapi()
    tid = sale["transaction_id"]
    assert "PAYMETA#" not in table_dump(boto3.client("dynamodb", region_name="us-east-1"))  # no init: no meta item
    status, _, read = _details(m, tid)
    assert status == 200 and read["status"] == "APPROVED" and "level3" not in read
    status, _, patched = _patch(m, tid, {"level3": {"freightAmount": "1.00"}})
    assert status == 200 and patched["level3"] == {"freightAmount": "1.00"} and patched["status"] == "APPROVED"
    status, _, missing = _details(m, "100000000001")
    assert status == 404 and missing["errorType"] == "not_found"


def test_unknown_or_foreign_init_ids_are_refused(platform):
    m, other = Merchant(platform), Merchant(platform)
    status, _, init = _init(other, {})
    assert status == 201
    assert m.qsapi(transaction_id=init["id"])["error_code"] == E.INIT_ID  # another account's init
    assert m.qsapi(transaction_id="123")["error_code"] == E.INIT_ID
    status, _, foreign = _details(m, init["id"])
    assert status == 404


@pytest.mark.parametrize("where", [
    {"description": "card 4242424242424242"},
    {"customer": {"name": "4242 4242 4242 4242"}},
    {"level2": {"orderId": "4242-4242-4242-4242"}},
    {"level3": {"vatInvoiceRefNumber": "4242424242424242"}},
    {"items": [{"description": "x", "productCode": "y"}, {"alternateTaxId": "4000000000000002"}]},
    {"trace": {"tags": ["4242424242424242"]}},
    {"shippingAddress": {"recipient": "J", "address1": "5555555555554444", "city": "A", "state": "GA",
                         "country": "USA"}},
    {"unknown": "4242424242424242"},
])
def test_a_pan_anywhere_in_the_meta_is_refused_and_never_echoed_or_stored(platform, where):
    m = Merchant(platform)
    status, _, refused = _init(m, where)
    assert status == 422 and refused["errorType"] == "invalid_request", refused
    text = json.dumps(refused)
    digits = re.sub(r"\D", "", json.dumps(where))
    assert digits[-16:] not in re.sub(r"\D", "", text)
    sale = m.qsapi()
    status, _, refused = _patch(m, sale["transaction_id"], {k: v for k, v in where.items() if k != "level2"}
                                or {"description": "4242424242424242"})
    assert status == 422 and digits[-16:] not in re.sub(r"\D", "", json.dumps(refused))
    dump = table_dump(boto3.client("dynamodb", region_name="us-east-1"))
    assert digits[-16:] not in re.sub(r"[ -]", "", dump) and CARD not in dump  # nothing stored the PAN


def test_meta_schema_is_the_originals(platform):
    m = Merchant(platform)
    for body, member in (({"random": "x"}, "random"), ({"level3": {"summaryCommodityCode": "ABCDE"}},
                                                        "level3.summaryCommodityCode"),
                         ({"customer": {"phone": "14441234321"}}, "customer.phone"),
                         ({"shippingAddress": {"address1": "x"}}, "shippingAddress.recipient"),
                         ({"trace": {"timestamp": "yesterday"}}, "trace.timestamp"),
                         ({"items": [{"quantity": 1}]}, "items[0].quantity")):
        status, _, refused = _init(m, body)
        assert status == 422 and refused["details"][0]["source"] == member, (body, refused)


def test_descriptors_crud_search_pages_limit_and_a_sale_echoes_one(platform, monkeypatch):
    m = Merchant(platform)
    body = {"name": "Store001", "city": "Kansas City", "state": "MO", "descriptor": "PayConex Store 001"}
    status, _, created = m.v4("DynamicDescriptorsFunction", DD, "POST", body)
    assert status == 201 and re.fullmatch(r"ddesc_[0-9a-f]{32}", created["id"]), created
    did = created["id"]
    status, _, other = m.v4("DynamicDescriptorsFunction", DD, "POST", {**body, "name": "Kiosk", "descriptor": "Kiosk 2"})
    assert status == 201
    status, headers, listed = m.v4("DynamicDescriptorsFunction", DD, "GET")
    assert status == 200 and {d["id"] for d in listed} == {did, other["id"]} and headers["X-Total"] == "2"
    status, headers, found = m.v4("DynamicDescriptorsFunction", DD, "GET", query={"query": "kiosk"})
    assert [d["id"] for d in found] == [other["id"]]
    status, headers, page = m.v4("DynamicDescriptorsFunction", DD, "GET", query={"page": "2", "limit": "1"})
    assert page == listed[1:] and headers["X-Last-Page"] == "2"
    status, _, read = m.v4("DynamicDescriptorsFunction", DD + "/{id}", "GET", id=did)
    assert status == 200 and read == created
    status, _, patched = m.v4("DynamicDescriptorsFunction", DD + "/{id}", "PATCH", {"city": "Atlanta", "state": "GA"},
                              id=did)
    assert status == 200 and (patched["city"], patched["state"], patched["name"]) == ("Atlanta", "GA", "Store001")
    status, _, bad = m.v4("DynamicDescriptorsFunction", DD, "POST", {**body, "name": "not alnum!"})
    assert status == 422 and bad["details"][0]["source"] == "name"

    sale = m.qsapi(dynamic_descriptor_id=did)
    assert sale["dynamic_descriptor_id"] == did and sale["dynamic_descriptor"] == "PayConex Store 001 Atlanta GA"
    plain = m.qsapi()
    assert "dynamic_descriptor" not in plain and "dynamic_descriptor_id" not in plain
    status, _, record = call(platform, "ReportingFunction", "POST", "/api/rsapi/v1/transactions",
                             json.dumps({**m.creds, "transaction_id": sale["transaction_id"]}),
                             {"Content-Type": "application/json"}, resource="/api/rsapi/v1/transactions")
    assert status == 200 and json.dumps(record).count("PayConex Store 001 Atlanta GA") == 1, record
    stranger = Merchant(platform)
    assert stranger.qsapi(dynamic_descriptor_id=did)["error_code"] == E.DESCRIPTOR

    status, _, _ = m.v4("DynamicDescriptorsFunction", DD + "/{id}", "DELETE", id=did)
    assert status == 204
    status, _, gone = m.v4("DynamicDescriptorsFunction", DD + "/{id}", "GET", id=did)
    assert status == 404 and gone["errorType"] == "not_found"
    assert m.qsapi(dynamic_descriptor_id=did)["error_code"] == E.DESCRIPTOR

    monkeypatch.setenv("DYNAMIC_DESCRIPTORS_MAX", "1")  # the account has one (Kiosk) left
    status, _, full = m.v4("DynamicDescriptorsFunction", DD, "POST", body)
    assert status == 422 and full["errCode"] == 940, full


def test_the_seam_costs_nothing_without_init_or_descriptor_and_two_reads_with_an_init(platform):
    """A SALE without ``transaction_id`` or ``dynamic_descriptor_id`` makes no call the two features add (no
    PAYMETA or DDESC read, no write beyond the SALE's own); with an init id: two consistent GetItems (the meta,
    and the transaction id not used yet); with a descriptor: one GetItem. Counted on the AWS clients."""
    from tests.aws_calls import AwsCalls

    m = Merchant(platform)
    m.qsapi()  # warm: the account and its key are cached per container

    def keys(calls: AwsCalls) -> list[str]:
        return [json.dumps(p.get("Key") or p.get("Item") or {}) for _, p in calls.params]

    with AwsCalls(("dynamodb",)) as plain:
        m.qsapi()
    assert not any("PAYMETA#" in k or "DDESC#" in k for k in keys(plain))
    status, _, init = _init(m, {})
    with AwsCalls(("dynamodb",)) as charged:
        assert m.qsapi(transaction_id=init["id"])["transaction_id"] == init["id"]
    extra = sorted(charged.by_operation - plain.by_operation)
    assert extra == ["dynamodb.GetItem"] and charged.by_operation["dynamodb.GetItem"] \
        - plain.by_operation["dynamodb.GetItem"] == 2, (charged.by_operation, plain.by_operation)
    writes = {op: n for op, n in charged.by_operation.items() if "Get" not in op and "Query" not in op}
    assert writes == {op: n for op, n in plain.by_operation.items() if "Get" not in op and "Query" not in op}
    status, _, created = m.v4("DynamicDescriptorsFunction", DD, "POST", {"name": "A1", "city": "Atlanta",
                                                                        "state": "GA", "descriptor": "A One"})
    with AwsCalls(("dynamodb",)) as named:
        assert m.qsapi(dynamic_descriptor_id=created["id"])["dynamic_descriptor"] == "A One Atlanta GA"
    assert named.by_operation["dynamodb.GetItem"] - plain.by_operation["dynamodb.GetItem"] == 1


def test_concurrent_patches_all_apply(platform):
    """Four PATCHes of one transaction at once, each changing another member of the billing address: each write is
    conditional on the version it read, so all four apply (a PATCH loses a race only to another one's commit, and
    each commits once: four need at most four attempts, records._ATTEMPTS is five)."""
    from concurrent.futures import ThreadPoolExecutor

    m = Merchant(platform)
    status, _, init = _init(m)
    tid = init["id"]
    changes = {"address2": "Unit 4", "zip": "30301", "company": "Acme", "address1": "1 Peachtree St"}
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda kv: _patch(m, tid, {"customer": {"billingAddress": dict([kv])}}),
                                changes.items()))
    assert [a[0] for a in answers] == [200] * 4, answers
    status, _, read = _details(m, tid)
    assert read["customer"]["billingAddress"] == {**META["customer"]["billingAddress"], **changes}


def test_authentication_comes_first_and_is_the_uniform_answer(platform):
    """A wrong key, or the caller's key on another account's path: the uniform 401 (ApiViolation
    ``authentication``) on every operation, before anything is read or validated."""
    m, other = Merchant(platform), Merchant(platform)
    status, _, init = _init(other, {})
    wrong = "Basic " + base64.b64encode(f"{m.account_id}:wrong".encode()).decode()
    cases = [("PaymentsV4Function", PAY + "/init", "POST", {"random": "4242424242424242"}, {}),
             ("PaymentsV4Function", PAY + "/{transaction_id}", "GET", None, {"transaction_id": init["id"]}),
             ("PaymentsV4Function", PAY + "/{transaction_id}", "PATCH", {"level3": {}}, {"transaction_id": init["id"]}),
             ("DynamicDescriptorsFunction", DD, "GET", None, {}), ("DynamicDescriptorsFunction", DD, "POST", {}, {}),
             ("DynamicDescriptorsFunction", DD + "/{id}", "DELETE", None, {"id": "ddesc_" + "0" * 32})]
    for function, resource, method, body, params in cases:
        for auth, account_id in ((wrong, m.account_id), (m.basic, other.account_id)):
            params_all = {"account_id": account_id, **params}
            path = resource
            for name, value in params_all.items():
                path = path.replace("{" + name + "}", value)
            status, _, answer = call(platform, function, method, path, body, {"Authorization": auth},
                                     resource=resource, path_params=params_all)
            assert status == 401 and answer["errorType"] == "authentication", (resource, method, answer)
            assert answer["value"] == "Authorization" and "4242" not in json.dumps(answer)
