"""Device collection (client ids, script, reports, reuse) and fraud scoring on stored signals — on moto."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.helpers import admin, call
from vaultcore import clock
from vaultcore.fraud.service import score_payment
from vaultcore.store.aws import dynamodb
from vaultcore.wallet.errors import W, WalletError

SIGNALS = {"userAgent": "Mozilla/5.0 (X11; Linux x86_64) Test", "languages": ["en-US", "en"],
           "timeZone": "America/New_York", "tzOffset": -300,
           "screen": {"width": 1920, "height": 1080, "colorDepth": 24, "pixelRatio": 1},
           "platform": "Linux x86_64", "hardwareConcurrency": 8, "cookieEnabled": True, "webdriver": False,
           "canvasHash": "ab" * 32}


@pytest.fixture
def account(platform):
    return admin(platform, "POST", "/admin/v1/accounts", {"options": {"fraud_scoring": True}})[1]


@pytest.fixture
def client_id(platform, account):
    status, body = admin(platform, "POST", f"/admin/v1/accounts/{account['account_id']}/fraud-client")
    assert status == 201 and body["script_path"] == f"/cdn/cs/{body['client_id']}.js"
    return body["client_id"]


def script(platform, name):
    out = platform.invoke("CollectorFunction", {
        "resource": "/cdn/cs/{client_id}", "path": f"/cdn/cs/{name}", "httpMethod": "GET", "headers": {},
        "pathParameters": {"client_id": name}, "requestContext": {}, "body": None})
    return out


def report(platform, client_id, dvci, pid="page1", signals=None, **extra):
    body = json.dumps({"dvci": dvci, "sid": "sess-1", "pid": pid, "dvc": "a", "signals": signals or SIGNALS, **extra})
    return call(platform, "CollectorFunction", "POST", f"/cdn/cs/{client_id}/collect", body,
                headers={"Content-Type": "text/plain"}, resource="/cdn/cs/{client_id}/collect",
                path_params={"client_id": client_id})


def test_the_script_is_served_for_known_client_ids_only(platform, account, client_id):
    out = script(platform, f"{client_id}.js")
    assert out["statusCode"] == 200 and out["headers"]["Content-Type"].startswith("application/javascript")
    assert 'getElementById("bcn")' in out["body"] and "/collect" in out["body"] and "dvci" in out["body"]
    for name in ("0123456789abcdef0123.js", client_id, f"{client_id}.css", "../../etc.js"):
        assert script(platform, name)["statusCode"] == 404
    # A disabled client id stops working.
    status, body = admin(platform, "DELETE", f"/admin/v1/accounts/{account['account_id']}/fraud-client/{client_id}")
    assert status == 200 and body["status"] == "disabled"
    from vaultcore.cache import reset_container_caches as reset_caches

    reset_caches()
    assert script(platform, f"{client_id}.js")["statusCode"] == 404
    assert admin(platform, "POST", "/admin/v1/accounts/999999999999/fraud-client")[0] == 404


def test_reports_are_stored_with_a_ttl_and_a_reused_id_is_flagged(platform, account, client_id):
    dvci = str(uuid.uuid4())
    status, _, body = report(platform, client_id, dvci)
    assert status == 200 and body == {"received": True, "reused": False}
    assert report(platform, client_id, dvci)[2]["reused"] is False  # the same page load reporting again
    assert report(platform, client_id, dvci, pid="page2")[2]["reused"] is True  # another page load: reuse
    items = dynamodb().scan(TableName="SignalsTable")["Items"]
    item = next(i for i in items if i["pk"]["S"] == f"DEVICE#{client_id}#{dvci}")
    assert item["reused"]["BOOL"] is True and int(item["reports"]["N"]) == 3
    assert int(item["expiresAt"]["N"]) - clock.now() > 23 * 3600
    assert item["signals"]["M"]["timeZone"]["S"] == "America/New_York" and len(item["device_id"]["S"]) == 32
    status, view = admin(platform, "GET", f"/admin/v1/accounts/{account['account_id']}/fraud-client/{client_id}/devices/{dvci}")
    assert status == 200 and view["signals"]["canvasHash"] == "ab" * 32 and view["reused"] is True
    assert admin(platform, "GET", f"/admin/v1/accounts/{account['account_id']}/fraud-client/{client_id}/devices/nope")[0] == 404
    # Bounded and validated input.
    assert report(platform, client_id, "bad id!")[0] == 400
    assert report(platform, client_id, dvci, pid="")[0] == 400
    assert report(platform, client_id, "x", signals={**SIGNALS, "userAgent": "u" * 20_000})[0] == 413
    assert report(platform, "0123456789abcdef0123", dvci)[0] == 404


def test_expired_reports_count_as_absent(platform, account, client_id):
    dvci = str(uuid.uuid4())
    report(platform, client_id, dvci)
    clock.set_offset(25 * 3600)
    result = score_payment(account["account_id"], dvci, "4242424242424242", "Y")
    assert "no_device_data" in result.reasons
    assert report(platform, client_id, dvci, pid="later")[2]["reused"] is False  # an expired item is free again


def test_scoring_accepts_a_clean_payment_and_reviews_one_without_device_data(platform, account, client_id):
    dvci = str(uuid.uuid4())
    report(platform, client_id, dvci)
    result = score_payment(account["account_id"], dvci, "4242424242424242", "Y")
    assert (result.score, result.recommendation, result.reasons) == (0, "accept", ())
    result = score_payment(account["account_id"], str(uuid.uuid4()), "4124939999999990", "Y")
    assert (result.recommendation, result.reasons) == ("review", ("no_device_data",))
    with pytest.raises(WalletError) as excinfo:
        score_payment(account["account_id"], "bad id", "4242424242424242")
    assert excinfo.value.code == W.FRAUD_DEVICE_ID


def test_many_cards_on_one_device_reject_and_no_card_number_is_stored(platform, account, client_id):
    cards = ["4242424242424242", "4000056655665556", "5555555555554444", "378282246310005", "6011111111111117"]
    outcomes = []
    for card in cards:
        dvci = str(uuid.uuid4())  # a new page load each time, the same browser (same signals, same device id)
        report(platform, client_id, dvci, pid=dvci.replace("-", "")[:20])
        outcomes.append(score_payment(account["account_id"], dvci, card, "Y"))
    assert [o.recommendation for o in outcomes] == ["accept", "accept", "review", "review", "reject"]
    assert "many_cards_on_device" in outcomes[-1].reasons
    raw = json.dumps(dynamodb().scan(TableName="SignalsTable")["Items"])
    assert not any(card in raw or card[-8:] in raw for card in cards)


def test_card_velocity_avs_and_timezone(platform, account, client_id):
    account_id = account["account_id"]
    results = []
    for _ in range(6):
        dvci = str(uuid.uuid4())
        report(platform, client_id, dvci, pid=dvci[:8])
        results.append(score_payment(account_id, dvci, "4242424242424242", "Y"))
    assert [("card_velocity" in r.reasons) for r in results] == [False, False, True, True, True, True]
    assert results[-1].score == 45
    dvci = str(uuid.uuid4())
    report(platform, client_id, dvci, pid="jp", signals={**SIGNALS, "userAgent": "another browser"})
    result = score_payment(account_id, dvci, "4000003920000003", "N")  # a JP card on a New York clock, AVS N
    assert result.reasons == ("avs_mismatch", "timezone_country_mismatch") and result.score == 55


# ------------------------------------------------------------------------------------- in the gateway


def sale(platform, account, card, **extra):
    body = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"], "transaction_type": "SALE",
            "tender_type": "CARD", "card_number": card, "card_expiration": "1230", "transaction_amount": "5.00",
            "zip": "10001", **extra}
    return call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", body)[2]


def rsapi(platform, account, transaction_id, **extra):
    body = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
            "transaction_id": transaction_id, **extra}
    return call(platform, "ReportingFunction", "POST", "/api/rsapi/v1/transactions", body)[2]


def test_gateway_scores_stores_reports_and_rejects(platform, account, client_id):
    cards = ["4242424242424242", "5555555555554444", "378282246310005", "6011111111111117", "4124939999999990"]
    answers = []
    for card in cards:
        dvci = str(uuid.uuid4())
        report(platform, client_id, dvci, pid=dvci.replace("-", "")[:12])
        answers.append(sale(platform, account, card, device_trans_id=dvci))
    assert [a["transaction_approved"] for a in answers] == [True, True, True, True, False]
    rejected = answers[-1]
    assert (rejected["error"], rejected["error_code"], rejected["authorization_message"]) == (True, 720, "DECLINED")
    assert rejected["error_message"] == "DECLINED: FRAUD SCREENING" and rejected["transaction_amount"] == 0
    # Stored with the transaction (transaction detail) ...
    status, detail = admin(platform, "GET", f"/admin/v1/accounts/{account['account_id']}/transactions/"
                                            f"{rejected['transaction_id']}")
    assert status == 200 and detail["fraud_recommendation"] == "reject" and detail["fraud_score"] >= 70
    assert "many_cards_on_device" in detail["fraud_reasons"]
    # ... and in the reporting interface only when asked (include_fields, or the account option).
    assert "fraud_score" not in rsapi(platform, account, rejected["transaction_id"])["transaction"]
    record = rsapi(platform, account, rejected["transaction_id"],
                   include_fields="fraud_score,fraud_recommendation")["transaction"]
    assert record["fraud_recommendation"] == "reject" and "fraud_reasons" not in record
    admin(platform, "PATCH", f"/admin/v1/accounts/{account['account_id']}", {"options": {"fraud_in_rsapi": True}})
    record = rsapi(platform, account, answers[0]["transaction_id"])["transaction"]
    assert (record["fraud_score"], record["fraud_recommendation"]) == (0, "accept")


def test_no_scoring_without_the_option_or_the_device_id(platform, account, client_id):
    no_device = sale(platform, account, "4242424242424242")
    status, detail = admin(platform, "GET", f"/admin/v1/accounts/{account['account_id']}/transactions/"
                                            f"{no_device['transaction_id']}")
    assert "fraud_score" not in detail
    _, plain = admin(platform, "POST", "/admin/v1/accounts", {})
    answer = sale(platform, plain, "4242424242424242", device_trans_id="abc-123")
    detail = admin(platform, "GET", f"/admin/v1/accounts/{plain['account_id']}/transactions/{answer['transaction_id']}")[1]
    assert answer["transaction_approved"] is True and "fraud_score" not in detail
    # Scored without collected signals: review, and still approved.
    answer = sale(platform, account, "4242424242424242", device_trans_id="never-collected")
    detail = admin(platform, "GET", f"/admin/v1/accounts/{account['account_id']}/transactions/{answer['transaction_id']}")[1]
    assert answer["transaction_approved"] is True and detail["fraud_recommendation"] == "review"
    assert detail["fraud_reasons"] == ["no_device_data"]
