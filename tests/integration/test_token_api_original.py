"""The tokenization API in the original's forms (issue 30), in-process on moto: batches with ``batches`` and a
top-level ``templateRef`` (first failed entry fails the request, naming it), ``batch/read`` and ``batch/delete``,
``delete`` answering the tokens it deletes; our ``items`` form still answers per item on the same paths; the use
policy holds on every batch path (a CVV is refused, a deleted bfid stays deleted); the health checks really
tokenize and detokenize with Basic auth (a partner created as the original onboards it)."""

from __future__ import annotations

import base64

import pytest

from tests.helpers import admin, call
from tests.integration.test_token_api import _card, _partner, post, tokenize
from vaultcore.tokens import service


@pytest.fixture
def partner(platform):
    return _partner(platform, permission=True)


def _batch(values_per_entry):
    return [{"reference": f"e-{i}", "values": [{"name": "vault_token_card_number", "value": v}]}
            for i, v in enumerate(values_per_entry)]


def test_original_batch_tokenize_and_detokenize(platform, partner):
    status, _, out = post(platform, partner, "/api/tokenization/batch/tokenize",
                          {"reference": "b-1", "templateRef": "CARDS", "batches": _batch([_card(1), _card(2)])})
    assert status == 200, out
    assert out["reference"] == "b-1" and len(out["messageId"]) == 25 and "items" not in out
    assert [e["reference"] for e in out["batches"]] == ["e-0", "e-1"]
    assert all(set(e) == {"reference", "bfid", "values"} for e in out["batches"])
    detok = [{"reference": e["reference"], "bfid": e["bfid"], "values": e["values"]} for e in out["batches"]]
    status, _, back = post(platform, partner, "/api/tokenization/batch/detokenize", {"reference": "d-1",
                                                                                     "batches": detok})
    assert status == 200 and back["reference"] == "d-1", back
    assert [e["values"] for e in back["batches"]] == [[{"name": "vault_token_card_number", "value": _card(i)}]
                                                      for i in (1, 2)]
    status, page = admin(platform, "GET", f"/admin/v1/partners/{partner['partnerId']}/detokenizations")
    assert len(page["records"]) == 2


def test_original_batch_fails_whole_naming_its_first_failed_entry(platform, partner):
    entries = _batch([_card(1), "4111111111111112", "nope"])  # the second fails Luhn (3003)
    status, _, out = post(platform, partner, "/api/tokenization/batch/tokenize",
                          {"templateRef": "CARDS", "batches": entries})
    assert (status, out["errCode"], out["itemIndex"], out["itemReference"]) == (409, 3003, 1, "e-1"), out
    assert len(out["messageId"]) == 25  # the original's ErrorResponse
    good = tokenize(platform, partner)
    detok = [{"reference": "ok", "bfid": good["bfid"], "values": good["values"]},
             {"reference": "bad", "bfid": "not-a-bfid", "values": good["values"]}]
    status, _, out = post(platform, partner, "/api/tokenization/batch/detokenize", {"batches": detok})
    assert (status, out["errCode"], out["itemIndex"], out["itemReference"]) == (409, 3010, 1, "bad"), out
    status, page = admin(platform, "GET", f"/admin/v1/partners/{partner['partnerId']}/detokenizations")
    assert page["records"] == []  # a failed request answered no value, so it audited none


def test_our_items_form_keeps_answering_per_item_and_batches_wins(platform, partner):
    items = [{"templateRef": "CARDS", "values": [{"name": "vault_token_card_number", "value": v}]}
             for v in (_card(3), "4111111111111112")]
    status, _, out = post(platform, partner, "/api/tokenization/batch/tokenize", {"items": items})
    assert status == 200 and (out["succeeded"], out["failed"]) == (1, 1) and out["items"][1]["errCode"] == 3003
    both = {"templateRef": "CARDS", "batches": _batch([_card(4)]), "items": items}
    status, _, out = post(platform, partner, "/api/tokenization/batch/tokenize", both)
    assert status == 200 and "items" not in out and len(out["batches"]) == 1, out


def test_batch_tokenize_with_omit_keeps_for_batch_read_once(platform, partner):
    status, _, out = post(platform, partner, "/api/tokenization/batch/tokenize",
                          {"templateRef": "CARDS", "batches": _batch([_card(5), _card(6)])}, query={"omit": "1"})
    assert status == 200 and all("values" not in e for e in out["batches"]), out
    reads = [{"reference": e["reference"], "bfid": e["bfid"]} for e in out["batches"]]
    reads.append({"reference": "forged", "bfid": "A" * 40})
    status, _, got = post(platform, partner, "/api/tokenization/batch/read", {"reference": "r", "batches": reads})
    assert status == 200 and got["reference"] == "r", got
    assert [len(e.get("values", [])) for e in got["batches"]] == [1, 1, 0]
    assert (got["batches"][2]["itemIndex"], got["batches"][2]["errCode"]) == (2, 3010)
    status, _, again = post(platform, partner, "/api/tokenization/batch/read", {"batches": reads[:1]})
    assert again["batches"][0]["errCode"] == 3018  # read is once per bfid, in a batch too


def test_delete_answers_the_tokens_it_deletes(platform, partner):
    kept = tokenize(platform, partner, omit=2)
    status, _, out = post(platform, partner, "/api/tokenization/delete", {"bfid": kept["bfid"]})
    assert status == 200 and out["deleted"] is True, out
    assert sorted(map(str, out["values"])) == sorted(map(str, kept["values"]))
    status, _, again = post(platform, partner, "/api/tokenization/delete", {"bfid": kept["bfid"]})
    assert (status, again["values"]) == (200, [])  # idempotent; nothing left to answer
    plain = tokenize(platform, partner)  # not kept for read: deleted all the same, nothing answered
    status, _, out = post(platform, partner, "/api/tokenization/delete", {"bfid": plain["bfid"]})
    assert (status, out["values"], out["deleted"]) == (200, [], True)


def test_batch_delete_revokes_each_entry(platform, partner):
    answers = [tokenize(platform, partner, omit=2) for _ in range(2)]
    status, _, out = post(platform, partner, "/api/tokenization/batch/delete",
                          {"batches": [{"reference": str(i), "bfid": a["bfid"]} for i, a in enumerate(answers)]})
    assert status == 200 and [len(e["values"]) for e in out["batches"]] == [2, 2], out
    service.reset_caches()
    detok = [{"bfid": a["bfid"], "values": a["values"]} for a in answers]
    status, _, back = post(platform, partner, "/api/tokenization/batch/detokenize", {"batches": detok})
    assert (status, back["errCode"], back["itemIndex"]) == (409, 3017, 0), back


def test_a_cvv_stays_refused_in_the_original_batch_form(platform):
    status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "CVV Co", "apiSecurity": "hmac"})
    fields = [{"name": "vault_token_card_verification", "type": "card", "format": "NONE", "minLength": 3,
               "maxLength": 4}]
    status, t = admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/templates",
                      {"templateRef": "CVV", "fields": fields})
    assert status == 201, t
    status, _, out = post(platform, p, "/api/tokenization/batch/tokenize", {
        "templateRef": "CVV", "batches": [{"values": [{"name": "vault_token_card_verification", "value": "123"}]}]})
    assert (status, out["errCode"], out["itemIndex"]) == (409, 3046, 0), out


def _basic_partner(platform, permission):
    """A partner as the original onboards it (no apiSecurity: key security, Basic), with a detokenize template."""
    status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Moved Over"})
    assert status == 201 and p["apiSecurity"] == "key"
    fields = [{"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
              {"name": "zip", "type": "field", "format": "NONE"}]
    admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/templates",
          {"templateRef": "HC", "fields": fields, "accessMode": "detokenize"})
    if permission:
        admin(platform, "PUT", f"/admin/v1/partners/{p['partnerId']}/permissions", {"detokenize": True})
    basic = base64.b64encode(f"{p['partnerId']}:{p['partnerKey']}".encode()).decode()
    return p, {"Authorization": f"Basic {basic}"}


def test_health_checks_really_tokenize_and_detokenize_with_basic_auth(platform):
    p, auth = _basic_partner(platform, permission=True)
    query = {"templateRef": "HC", "reference": "hc-1", "fieldNames": "vault_token_card_number|zip",
             "fieldValues": f"{_card(7)}|30301"}
    status, _, out = call(platform, "TokenizeFunction", "GET", "/api/healthcheck/tokenize", headers=auth,
                          query=query)
    assert status == 200 and out["reference"] == "hc-1", out
    tokens = {v["name"]: v["value"] for v in out["values"]}
    assert tokens.keys() == {"vault_token_card_number", "zip"} and tokens["vault_token_card_number"] != _card(7)
    query = {"bfid": out["bfid"], "fieldNames": "vault_token_card_number|zip",
             "fieldValues": f"{tokens['vault_token_card_number']}|{tokens['zip']}"}
    status, _, back = call(platform, "TokenizeFunction", "GET", "/api/healthcheck/detokenize", headers=auth,
                           query=query)
    assert status == 200 and {v["name"]: v["value"] for v in back["values"]} == {
        "vault_token_card_number": _card(7), "zip": "30301"}, back
    status, page = admin(platform, "GET", f"/admin/v1/partners/{p['partnerId']}/detokenizations")
    assert [r["operation"] for r in page["records"]] == ["detokenize"]  # audited like detokenize
    status, _, out = call(platform, "TokenizeFunction", "GET", "/api/healthcheck/tokenize",
                          query={"templateRef": "HC", "fieldNames": "zip", "fieldValues": "1"})
    assert (status, out["errCode"]) == (401, 1003)  # the real check needs credentials
    status, _, out = call(platform, "TokenizeFunction", "GET", "/api/healthcheck/tokenize", headers=auth,
                          query={"templateRef": "HC", "fieldNames": "zip|vault_token_card_number",
                                 "fieldValues": "1"})
    assert (status, out["errCode"]) == (400, 3021)


def test_the_detokenize_health_check_keeps_detokenize_s_permission(platform):
    _p, auth = _basic_partner(platform, permission=False)
    status, _, out = call(platform, "TokenizeFunction", "GET", "/api/healthcheck/tokenize", headers=auth,
                          query={"templateRef": "HC", "fieldNames": "zip", "fieldValues": "30301"})
    assert status == 200, out
    status, _, back = call(platform, "TokenizeFunction", "GET", "/api/healthcheck/detokenize", headers=auth,
                           query={"bfid": out["bfid"], "fieldNames": "zip", "fieldValues": out["values"][0]["value"]})
    assert (status, back["errCode"]) == (403, 3040)


def test_a_batch_read_or_delete_entry_that_is_not_a_bfid_fails_alone(platform, partner):
    kept = tokenize(platform, partner, omit=2)
    for path in ("/api/tokenization/batch/read", "/api/tokenization/batch/delete"):
        entries = [[None, None], {"reference": "x", "bfid": "0" * 300}, {"bfid": kept["bfid"]}]
        status, _, out = post(platform, partner, path, {"batches": entries})
        assert status == 200, out
        assert [(e.get("itemIndex"), e.get("errCode")) for e in out["batches"][:2]] == [(0, 3043), (1, 3010)]
        assert "bfid" not in out["batches"][1]  # what it refused is never echoed
        assert out["batches"][2]["bfid"] == kept["bfid"] and len(out["batches"][2]["values"]) == 2
