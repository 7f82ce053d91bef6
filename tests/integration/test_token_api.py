"""Issue 21 in-process on moto: read (once per bfid, retry-aware, 10 concurrent reads), tokenize ?omit=1/2,
delete (revocation everywhere: detokenize, read, the gateway's read step, the proxy's service call), detokenize
with the permission and accessMode, audit records and their listing, batches (item errors, limit, budget),
template validation and the health checks; a property test of the new endpoints (documented 4xx, never 500)."""

from __future__ import annotations

import base64
import json
import threading

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tests.helpers import admin, call
from vaultcore.auth.hmac_scheme import build_hmac_header
from vaultcore.cards.luhn import luhn_check_digit
from vaultcore.settings import settings
from vaultcore.store.aws import client
from vaultcore.tokens import service

PAN = "4111111111111111"
FIELDS = [
    {"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
    {"name": "vault_token_card_expiration", "type": "date", "format": "NONE", "minLength": 4, "maxLength": 4},
    {"name": "secret_code", "type": "field", "format": "NONE", "irreversible": True},
]
VALUES = {"vault_token_card_number": PAN, "vault_token_card_expiration": "1229"}


def _partner(platform, access_mode="detokenize", permission=False):
    status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Token API", "apiSecurity": "hmac"})
    assert status == 201
    template = {"templateRef": "CARDS", "fields": FIELDS}
    if access_mode:
        template["accessMode"] = access_mode
    status, t = admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/templates", template)
    assert status == 201, t
    if permission:
        status, out = admin(platform, "PUT", f"/admin/v1/partners/{p['partnerId']}/permissions", {"detokenize": True})
        assert status == 200 and out["permissions"] == {"detokenize": True}, out
    return p


@pytest.fixture
def partner(platform):
    return _partner(platform, permission=True)


def post(platform, partner, path, body, query=None, headers=None):
    raw = json.dumps(body).encode() if not isinstance(body, bytes) else body
    auth = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), path, raw)
    return call(platform, "TokenizeFunction", "POST", path, raw, {"Authorization": auth, **(headers or {})},
                query=query)


def tokenize(platform, partner, values=VALUES, omit=None, **extra):
    body = {"reference": "r-1", "templateRef": "CARDS", "values": [{"name": k, "value": v} for k, v in values.items()],
            **extra}
    status, _, out = post(platform, partner, "/api/tokenization/tokenize", body,
                          query=None if omit is None else {"omit": str(omit)})
    assert status == 200, out
    return out


def _values(answer):
    return {v["name"]: v["value"] for v in answer["values"]}


# ---------------------------------------------------------------------------------------- omit and read


def test_omit_1_leaves_values_out_and_read_answers_them_once(platform, partner):
    answer = tokenize(platform, partner, omit=1)
    assert "values" not in answer
    status, _, read = post(platform, partner, "/api/tokenization/read", {"reference": "rd", "bfid": answer["bfid"]})
    assert status == 200 and read["reference"] == "rd" and read["bfid"] == answer["bfid"], read
    tokens = _values(read)
    assert set(tokens) == set(VALUES) and tokens["vault_token_card_number"] != PAN
    status, _, again = post(platform, partner, "/api/tokenization/read", {"bfid": answer["bfid"]})
    assert (status, again["errCode"]) == (409, 3018), again
    # the gateway's read step is independent of the partner's read
    assert service.read_stored_tokens(partner["partnerId"], answer["bfid"]) == tokens


def test_omit_2_answers_values_and_keeps_them_readable(platform, partner):
    answer = tokenize(platform, partner, omit=2)
    status, _, read = post(platform, partner, "/api/tokenization/read", {"bfid": answer["bfid"]})
    assert status == 200 and _values(read) == _values(answer)


def test_without_omit_nothing_is_kept_for_read_and_bad_omit_is_3022(platform, partner):
    answer = tokenize(platform, partner)
    status, _, out = post(platform, partner, "/api/tokenization/read", {"bfid": answer["bfid"]})
    assert (status, out["errCode"]) == (409, 3019)
    for bad in ("3", "yes", ""):
        body = {"templateRef": "CARDS", "values": [{"name": "vault_token_card_number", "value": PAN}]}
        status, _, out = post(platform, partner, "/api/tokenization/tokenize", body, query={"omit": bad})
        assert (status, out["errCode"]) == (400, 3022), bad
    # the body's boolean omit is ?omit=1
    status, _, out = post(platform, partner, "/api/tokenization/tokenize",
                          {"templateRef": "CARDS", "omit": True,
                           "values": [{"name": "vault_token_card_number", "value": PAN}]})
    assert status == 200 and "values" not in out
    status, _, read = post(platform, partner, "/api/tokenization/read", {"bfid": out["bfid"]})
    assert status == 200


def test_read_outside_the_window_or_of_a_forged_bfid(platform, partner):
    from vaultcore import clock

    answer = tokenize(platform, partner, omit=1)
    clock.set_offset(service.READ_WINDOW_SECONDS + 1)  # (the HMAC header would be stale: the service directly)
    with pytest.raises(service.TokenServiceError) as err:
        service.read_tokens_once(partner["partnerId"], answer["bfid"], "r")
    assert err.value.code == 3011
    clock.set_offset(0)
    for bfid in (answer["bfid"][:-2] + "AA", None, 7):
        status, _, out = post(platform, partner, "/api/tokenization/read", {"bfid": bfid})
        assert (status, out["errCode"]) == (409, 3010)
    other = _partner(platform)
    status, _, out = post(platform, other, "/api/tokenization/read", {"bfid": answer["bfid"]})
    assert (status, out["errCode"]) == (409, 3010)


def test_ten_concurrent_reads_one_success(platform, partner):
    answer = tokenize(platform, partner, omit=1)
    statuses: list[int] = []
    barrier = threading.Barrier(10)

    def read():
        barrier.wait()
        status, _, out = post(platform, partner, "/api/tokenization/read", {"bfid": answer["bfid"]})
        statuses.append(status if status == 200 else out["errCode"])

    threads = [threading.Thread(target=read) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200] + [3018] * 9, statuses


def test_a_retried_read_write_is_recognised(platform, partner):
    """The SDK's retry of a claim whose answer was lost carries the same read id: it succeeds again."""
    from vaultcore.store import tokens as token_store

    answer = tokenize(platform, partner, omit=1)
    info, _, _ = service.verify_bfid(partner["partnerId"], answer["bfid"])
    first = service.read_tokens_once(partner["partnerId"], answer["bfid"], "read-id-1")
    # the same write again (what a retry sends): accepted, same tokens
    assert service.read_tokens_once(partner["partnerId"], answer["bfid"], "read-id-1") == first
    with pytest.raises(service.TokenConflict) as err:
        service.read_tokens_once(partner["partnerId"], answer["bfid"], "read-id-2")
    assert err.value.code == 3018
    item = token_store.get_token_item(info.scope)
    assert item["partner_read_by"] == "read-id-1" and "gateway_read_by" not in item


# ---------------------------------------------------------------------------------------------- delete


def test_delete_revokes_everywhere_and_is_idempotent(platform, partner):
    answer = tokenize(platform, partner, omit=2)
    tokens = _values(answer)
    bfid = answer["bfid"]
    for _ in range(2):
        status, _, out = post(platform, partner, "/api/tokenization/delete", {"reference": "d", "bfid": bfid})
        assert status == 200 and out["deleted"] is True and out["bfid"] == bfid, out
    service.reset_caches()  # another container: the revocation record, not this one's cache, refuses
    status, _, out = post(platform, partner, "/api/tokenization/read", {"bfid": bfid})
    assert (status, out["errCode"]) == (409, 3017)
    status, _, out = post(platform, partner, "/api/tokenization/detokenize",
                          {"bfid": bfid, "values": [{"name": "vault_token_card_number",
                                                     "value": tokens["vault_token_card_number"]}]})
    assert (status, out["errCode"]) == (409, 3017)
    for fn in (lambda: service.read_stored_tokens(partner["partnerId"], bfid),
               lambda: service.detokenize_values(partner["partnerId"], bfid, tokens),
               lambda: service.detokenize_pairs(partner["partnerId"], bfid, list(tokens.items())),
               lambda: service.tokenize_values(partner["partnerId"], "CARDS", [("vault_token_card_number", PAN)],
                                               bfid=bfid)):
        with pytest.raises(service.TokenServiceError) as err:
            fn()
        assert err.value.code == 3017
    # the stored tokens are gone, the record holds no value
    items = client("dynamodb").scan(TableName=settings().tokens_table)["Items"]
    text = json.dumps(items)
    assert PAN not in text and tokens["vault_token_card_number"] not in text
    assert any(i["bfid"]["S"].startswith("revoked#") for i in items)


def test_the_revocation_check_costs_one_get_item(platform, partner):
    from vaultcore.store.aws import ddb_calls, reset_ddb_calls

    answer = tokenize(platform, partner)
    service.reset_caches()
    service.detokenize_values(partner["partnerId"], answer["bfid"], _values(answer))  # warm keys and templates
    service._not_revoked.clear()
    reset_ddb_calls()
    service.detokenize_values(partner["partnerId"], answer["bfid"], _values(answer))
    assert ddb_calls() == 1
    reset_ddb_calls()
    service.detokenize_values(partner["partnerId"], answer["bfid"], _values(answer))  # within the 1 s bound
    assert ddb_calls() == 0


# ------------------------------------------------------------------------------- detokenize and audit


def test_detokenize_needs_the_permission_and_the_access_mode(platform):
    p = _partner(platform)
    answer = tokenize(platform, p)
    body = {"reference": "dt", "bfid": answer["bfid"], "values": answer["values"]}
    status, _, out = post(platform, p, "/api/tokenization/detokenize", body)
    assert (status, out["errCode"]) == (403, 3040) and "messageId" in out and out["reference"] == "dt"
    status, perms = admin(platform, "GET", f"/admin/v1/partners/{p['partnerId']}/permissions")
    assert perms == {"partnerId": p["partnerId"], "permissions": {"detokenize": False}}
    admin(platform, "PUT", f"/admin/v1/partners/{p['partnerId']}/permissions", {"detokenize": True})
    status, _, out = post(platform, p, "/api/tokenization/detokenize", body, headers={"X-Forwarded-For": "x"})
    assert status == 200 and _values(out) == VALUES and out["reference"] == "dt", out
    # a template published with accessMode tokenize withdraws detokenization for its earlier bfids too
    status, _ = admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/templates",
                      {"templateRef": "CARDS", "fields": FIELDS})
    assert status == 201
    status, _, out = post(platform, p, "/api/tokenization/detokenize", body)
    assert (status, out["errCode"]) == (403, 3041)
    # the audit record of the one detokenization: partner, bfid, field names, time, source IP, never a value
    status, page = admin(platform, "GET", f"/admin/v1/partners/{p['partnerId']}/detokenizations")
    assert status == 200 and len(page["records"]) == 1, page
    record = page["records"][0]
    assert record["bfid"] == answer["bfid"] and record["fields"] == sorted(VALUES)
    assert record["sourceIp"] == "127.0.0.1" and record["operation"] == "detokenize" and record["at"] > 0
    raw = json.dumps(client("dynamodb").scan(TableName=settings().audit_table)["Items"])
    assert PAN not in raw and "1229" not in raw and _values(answer)["vault_token_card_number"] not in raw


def test_detokenize_refuses_irreversible_and_not_issued_tokens(platform, partner):
    answer = tokenize(platform, partner, values={**VALUES, "secret_code": "abc12"})
    tokens = _values(answer)
    bfid = answer["bfid"]
    status, _, out = post(platform, partner, "/api/tokenization/detokenize",
                          {"bfid": bfid, "values": [{"name": "secret_code", "value": tokens["secret_code"]}]})
    assert (status, out["errCode"]) == (409, 3012)
    wrong = PAN[:6] + "000000" + PAN[-4:]
    status, _, out = post(platform, partner, "/api/tokenization/detokenize",
                          {"bfid": bfid, "values": [{"name": "vault_token_card_number", "value": wrong}]})
    assert (status, out["errCode"]) == (409, 3015)
    status, page = admin(platform, "GET", f"/admin/v1/partners/{partner['partnerId']}/detokenizations")
    assert page["records"] == []  # refused detokenizations reveal nothing and leave no record


def test_audit_listing_pages(platform, partner):
    answer = tokenize(platform, partner)
    for _ in range(5):
        status, _, _ = post(platform, partner, "/api/tokenization/detokenize",
                            {"bfid": answer["bfid"], "values": answer["values"][:1]})
        assert status == 200
    seen, token = [], None
    while True:
        query = {"limit": "2", **({"nextToken": token} if token else {})}
        status, page = admin(platform, "GET", f"/admin/v1/partners/{partner['partnerId']}/detokenizations",
                             query=query)
        assert status == 200 and len(page["records"]) <= 2
        seen += [r["auditId"] for r in page["records"]]
        token = page.get("nextToken")
        if not token:
            break
    assert len(seen) == len(set(seen)) == 5 and seen == sorted(seen, reverse=True)
    for bad in ({"limit": "0"}, {"limit": "x"}, {"nextToken": "zz"}):
        status, out = admin(platform, "GET", f"/admin/v1/partners/{partner['partnerId']}/detokenizations",
                            query=bad)
        assert (status, out["errCode"]) == (400, 400), bad
    status, _ = admin(platform, "GET", "/admin/v1/partners/nobody123/detokenizations")
    assert status == 404


# ---------------------------------------------------------------------------------------------- batches


def _card(i: int) -> str:
    body = "4" + f"{i:014d}"
    return body + str(luhn_check_digit(body))


def test_batch_tokenize_then_detokenize_with_item_errors(platform, partner):
    items = [{"reference": f"i-{i}", "templateRef": "CARDS",
              "values": [{"name": "vault_token_card_number", "value": _card(i)}]} for i in range(50)]
    items[17]["values"][0]["value"] = "4111111111111112"  # Luhn
    items[30] = {"reference": "i-30", "templateRef": "NOPE", "values": items[30]["values"]}
    items[31] = "not an object"
    status, _, out = post(platform, partner, "/api/tokenization/batch/tokenize", {"reference": "b", "items": items})
    assert status == 200 and out["reference"] == "b" and len(out["items"]) == 50, out
    assert [it["itemIndex"] for it in out["items"]] == list(range(50))
    bad = {it["itemIndex"]: (it["itemReference"], it["errCode"]) for it in out["items"] if "errCode" in it}
    assert bad == {17: ("i-17", 3003), 30: ("i-30", 3001), 31: (None, 3043)}
    assert (out["succeeded"], out["failed"]) == (47, 3)
    good = [it for it in out["items"] if "errCode" not in it]
    detok = [{"reference": it["itemReference"], "bfid": it["bfid"], "values": it["values"]} for it in good]
    detok[3]["values"] = [{"name": "vault_token_card_number", "value": "4000000000000000"}]
    status, _, back = post(platform, partner, "/api/tokenization/batch/detokenize", {"items": detok})
    assert status == 200 and len(back["items"]) == len(detok)
    for i, it in enumerate(back["items"]):
        assert it["itemIndex"] == i and it["itemReference"] == detok[i]["reference"]
        if i == 3:
            assert it["errCode"] == 3015
        else:
            original = int(it["itemReference"][2:])
            assert it["values"] == [{"name": "vault_token_card_number", "value": _card(original)}]
    status, page = admin(platform, "GET", f"/admin/v1/partners/{partner['partnerId']}/detokenizations",
                         query={"limit": "100"})
    assert len(page["records"]) == len(detok) - 1
    assert {r["operation"] for r in page["records"]} == {"batch/detokenize"}


def test_batch_detokenize_sees_deletions_and_needs_the_permission(platform, partner):
    answers = [tokenize(platform, partner) for _ in range(3)]
    post(platform, partner, "/api/tokenization/delete", {"bfid": answers[1]["bfid"]})
    service.reset_caches()
    items = [{"reference": str(i), "bfid": a["bfid"], "values": a["values"]} for i, a in enumerate(answers)]
    status, _, out = post(platform, partner, "/api/tokenization/batch/detokenize", {"items": items})
    assert [it.get("errCode") for it in out["items"]] == [None, 3017, None]
    other = _partner(platform)
    status, _, out = post(platform, other, "/api/tokenization/batch/detokenize", {"items": items})
    assert (status, out["errCode"]) == (403, 3040)


def test_batch_limits_and_budget(platform, partner, monkeypatch):
    for items in ([], None, "x", [{}] * 1001):
        status, _, out = post(platform, partner, "/api/tokenization/batch/tokenize", {"items": items})
        assert (status, out["errCode"]) == (400, 3042)
    from vaultcore.tokens import endpoints

    monkeypatch.setattr(endpoints, "BATCH_BUDGET_SECONDS", 1e-9)
    items = [{"templateRef": "CARDS", "values": [{"name": "vault_token_card_number", "value": _card(i)}]}
             for i in range(5)]
    status, _, out = post(platform, partner, "/api/tokenization/batch/tokenize", {"items": items})
    assert status == 200 and [it.get("errCode") for it in out["items"]][1:] == [3044] * 4


# --------------------------------------------------------------------------- template validate, health


def test_template_validate(platform, partner):
    status, _, out = post(platform, partner, "/api/template/validate", {"reference": "v", "templateRef": "CARDS"})
    assert status == 200 and out["exists"] and out["active"] and out["usable"] and out["detokenize"] is True
    assert out["fields"] == [f["name"] for f in FIELDS] and out["accessMode"] == "detokenize"
    status, _, out = post(platform, partner, "/api/template/validate", {"templateRef": "GATEWAY"})
    assert status == 200 and out["builtin"] is True and out["detokenize"] is False
    # the original's ValidateResponse: 200 means usable; an unknown ref (or one in another case) is an error
    for ref in ("MISSING", "cards"):
        status, _, out = post(platform, partner, "/api/template/validate", {"templateRef": ref})
        assert (status, out["errCode"], len(out["messageId"])) == (409, 3001, 25), out
    status, _, out = post(platform, partner, "/api/template/validate", {})
    assert (status, out["errCode"]) == (400, 3000)


def test_healthchecks_need_no_credentials_and_reveal_nothing(platform):
    for path in ("/api/healthcheck/tokenize", "/api/healthcheck/detokenize"):
        status, _, out = call(platform, "TokenizeFunction", "GET", path)
        assert status == 200 and set(out) == {"success", "messageId", "status"} and out["status"] == "ok"


def test_every_new_endpoint_answers_1003_without_credentials(platform):
    for path in ("/api/tokenization/detokenize", "/api/tokenization/read", "/api/tokenization/delete",
                 "/api/tokenization/batch/tokenize", "/api/tokenization/batch/detokenize", "/api/tokenization/batch/read",
                 "/api/tokenization/batch/delete", "/api/template/validate"):
        status, _, out = call(platform, "TokenizeFunction", "POST", path, b'{"bfid": "x"}')
        # the original's ErrorResponse: a messageId, and nothing else that could differ between causes
        assert status == 401 and out == {"success": False, "errMessage": "Authentication required.", "errCode": 1003,
                                         "messageId": out["messageId"]}


def test_the_signature_covers_the_path_not_the_query(platform, partner):
    body = json.dumps({"templateRef": "CARDS", "values": [{"name": "vault_token_card_number", "value": PAN}]})
    auth = build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]),
                             "/api/tokenization/tokenize?omit=1", body.encode())
    status, _, _ = call(platform, "TokenizeFunction", "POST", "/api/tokenization/tokenize", body,
                        {"Authorization": auth}, query={"omit": "1"})
    assert status == 401


# ------------------------------------------------------------------------------------------------ fuzz

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                     max_leaves=12)
_BODIES = st.fixed_dictionaries({}, optional={
    "reference": _JSON, "bfid": _JSON | st.text(alphabet="ABCDEFabcdef0123456789-_", min_size=30, max_size=120),
    "values": _JSON | st.lists(st.fixed_dictionaries({"name": st.sampled_from(["vault_token_card_number",
                                                                                "secret_code", "x"]),
                                                      "value": st.text(max_size=20)}), max_size=3),
    "items": st.lists(_JSON, max_size=3), "templateRef": _JSON | st.sampled_from(["CARDS", "GATEWAY"]),
}) | _JSON
_DOCUMENTED = {1001, 1002, 1006, 3000, 3001, 3002, 3003, 3004, 3005, 3010, 3011, 3012, 3013, 3014, 3015, 3017,
               3018, 3019, 3020, 3021, 3040, 3041, 3042}


@hsettings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(["/api/tokenization/detokenize", "/api/tokenization/read", "/api/tokenization/delete",
                             "/api/tokenization/batch/tokenize", "/api/tokenization/batch/detokenize",
                             "/api/template/validate"]), body=_BODIES)
def test_fuzzed_bodies_get_documented_4xx_never_500(platform, path, body):
    global _FUZZ_PARTNER
    if _FUZZ_PARTNER.get(id(platform)) is None:
        _FUZZ_PARTNER = {id(platform): _partner(platform, permission=True)}
    p = _FUZZ_PARTNER[id(platform)]
    status, _, out = post(platform, p, path, json.dumps(body).encode())
    assert status < 500, out
    if status != 200:
        assert out["errCode"] in _DOCUMENTED and status in (400, 403, 409), out
    else:
        for item in out.get("items", []):
            assert "bfid" in item or item["errCode"] in _DOCUMENTED | {3043, 3044}, item


_FUZZ_PARTNER: dict = {}
