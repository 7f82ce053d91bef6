"""Issue 21's acceptance over HTTP against the runner, with the client written from the spec (tests/spec_client.py,
which imports nothing from vaultcore; nor does this module): tokenize with ?omit=1, read once, delete, then a
detokenize of that bfid refused; a batch of 1,000 card numbers whose bad items 17 and 503 are named by their
errors; a detokenize refused without the permission and allowed with it, its audit record listed; health checks
without credentials; 10 concurrent reads of one bfid give one success."""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests import spec_client
from tests.e2e.http import admin

TOKENIZE = "/api/tokenization/tokenize"


def _luhn(body: str) -> str:
    total = 0
    for i, ch in enumerate(reversed(body)):
        d = int(ch)
        if i % 2 == 0:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return body + str((10 - total % 10) % 10)


@pytest.fixture(scope="module")
def partner(runner):
    """A partner of its own (permissions change), with a template whose accessMode allows detokenization."""
    status, p = admin(runner.base_url, "POST", "/admin/v1/partners", {"name": "Spec client", "apiSecurity": "hmac"})
    assert status == 201
    status, t = admin(runner.base_url, "POST", f"/admin/v1/partners/{p['partnerId']}/templates", {
        "templateRef": "REVEAL", "accessMode": "detokenize",
        "fields": [{"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"}]})
    assert status == 201, t
    return p


def _post(runner, partner, path, payload):
    status, _, body = spec_client.signed_post(runner.base_url + path, partner["partnerId"], partner["hmacKey"],
                                              payload)
    return status, body


def _card_values(pan):
    return [{"name": "vault_token_card_number", "value": pan}]


def test_tokenize_omit_read_once_delete_then_detokenize_refused(runner, partner):
    admin(runner.base_url, "PUT", f"/admin/v1/partners/{partner['partnerId']}/permissions", {"detokenize": True})
    # ?omit=1: the query string is not signed (the client signs the path)
    status, out = _post(runner, partner, TOKENIZE + "?omit=1",
                        {"reference": "acc-1", "templateRef": "REVEAL", "values": _card_values("4242424242424242")})
    assert status == 200 and "values" not in out, out
    bfid = out["bfid"]
    status, read = _post(runner, partner, "/api/tokenization/read", {"bfid": bfid})
    assert status == 200 and read["values"][0]["name"] == "vault_token_card_number", read
    token = read["values"][0]["value"]
    status, again = _post(runner, partner, "/api/tokenization/read", {"bfid": bfid})
    assert (status, again["errCode"]) == (409, 3018)
    status, _ = _post(runner, partner, "/api/tokenization/detokenize",
                      {"bfid": bfid, "values": [{"name": "vault_token_card_number", "value": token}]})
    assert status == 200
    for _ in range(2):  # idempotent
        status, out = _post(runner, partner, "/api/tokenization/delete", {"reference": "del", "bfid": bfid})
        assert status == 200 and out["deleted"] is True
    status, out = _post(runner, partner, "/api/tokenization/detokenize",
                        {"bfid": bfid, "values": [{"name": "vault_token_card_number", "value": token}]})
    assert (status, out["errCode"]) == (409, 3017)


def test_a_batch_of_1000_with_bad_items_17_and_503(runner, partner):
    pans = [_luhn("4" + f"{i:014d}") for i in range(1000)]
    pans[17] = pans[17][:-1] + str((int(pans[17][-1]) + 1) % 10)  # Luhn broken
    pans[503] = "42424242"  # too short
    items = [{"reference": f"item-{i}", "templateRef": "REVEAL", "values": _card_values(p)}
             for i, p in enumerate(pans)]
    status, out = _post(runner, partner, "/api/tokenization/batch/tokenize", {"reference": "batch", "items": items})
    assert status == 200 and len(out["items"]) == 1000, out.get("errMessage")
    errors = {it["itemIndex"]: it for it in out["items"] if "errCode" in it}
    assert sorted(errors) == [17, 503]
    assert errors[17]["itemReference"] == "item-17" and errors[17]["errCode"] == 3003
    assert errors[503]["itemReference"] == "item-503" and errors[503]["errCode"] == 3004
    admin(runner.base_url, "PUT", f"/admin/v1/partners/{partner['partnerId']}/permissions", {"detokenize": True})
    good = [it for it in out["items"] if "bfid" in it]
    status, back = _post(runner, partner, "/api/tokenization/batch/detokenize",
                         {"items": [{"reference": it["itemReference"], "bfid": it["bfid"], "values": it["values"]}
                                    for it in good]})
    assert status == 200 and back["failed"] == 0 and back["succeeded"] == 998, back.get("errMessage")
    for it in back["items"]:
        assert it["values"][0]["value"] == pans[int(it["itemReference"].split("-")[1])]


def test_detokenize_refused_without_the_permission_allowed_with_it_and_audited(runner, partner):
    base = runner.base_url
    admin(base, "PUT", f"/admin/v1/partners/{partner['partnerId']}/permissions", {"detokenize": False})
    status, out = _post(runner, partner, TOKENIZE, {"templateRef": "REVEAL", "values": _card_values("4111111111111111")})
    assert status == 200
    request = {"reference": "dt", "bfid": out["bfid"], "values": out["values"]}
    status, refused = _post(runner, partner, "/api/tokenization/detokenize", request)
    assert (status, refused["errCode"]) == (403, 3040)
    status, perms = admin(base, "PUT", f"/admin/v1/partners/{partner['partnerId']}/permissions", {"detokenize": True})
    assert perms["permissions"]["detokenize"] is True
    status, clear = _post(runner, partner, "/api/tokenization/detokenize", request)
    assert status == 200 and clear["values"] == _card_values("4111111111111111")
    status, page = admin(base, "GET", f"/admin/v1/partners/{partner['partnerId']}/detokenizations?bfid="
                         + out["bfid"])
    assert status == 200 and len(page["records"]) == 1, page
    record = page["records"][0]
    assert record["fields"] == ["vault_token_card_number"] and record["sourceIp"] and "4111111111111111" not in \
        json.dumps(page)


def test_ten_concurrent_reads_one_success(runner, partner):
    status, out = _post(runner, partner, TOKENIZE + "?omit=1",
                        {"templateRef": "REVEAL", "values": _card_values("4242424242424242")})
    assert status == 200
    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(lambda _: _post(runner, partner, "/api/tokenization/read", {"bfid": out["bfid"]}),
                                range(10)))
    assert sorted(s for s, _ in results) == [200] + [409] * 9


def test_template_validate_and_health_checks(runner, partner):
    status, out = _post(runner, partner, "/api/template/validate", {"templateRef": "REVEAL"})
    assert status == 200 and out["exists"] and out["fields"] == ["vault_token_card_number"]
    for kind in ("tokenize", "detokenize"):
        with urllib.request.urlopen(runner.base_url + f"/api/healthcheck/{kind}", timeout=30) as resp:
            body = json.loads(resp.read())
        assert resp.status == 200 and body["status"] == "ok" and set(body) == {"success", "messageId", "status"}
