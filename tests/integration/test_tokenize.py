"""Tokenization in-process on moto: the tokenize endpoint, the service API (detokenize, read step), bfid
verification before any Tokens lookup, key rotation and retirement, the read window, template versions and
device payloads."""

from __future__ import annotations

import base64
import json
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import admin, call
from vaultcore import clock
from vaultcore.api.responses import TOKENIZATION_DATA_CODES
from vaultcore.auth.hmac_scheme import build_hmac_header
from vaultcore.cards.luhn import luhn_check_digit
from vaultcore.devices import simulator
from vaultcore.devices.simulator import Card
from vaultcore.store.aws import client, ddb_calls, reset_ddb_calls
from vaultcore.tokens import service
from vaultcore.tokens.service import (
    TokenServiceError,
    detokenize_pairs,
    detokenize_values,
    read_stored_tokens,
    tokenize_values,
)

PATH = "/api/tokenization/tokenize"
PAN = "4111111111111111"
FIELDS = [
    {"name": "vault_token_card_number", "type": "card", "format": "FIRST_SIX_LAST_FOUR"},
    {"name": "vault_token_card_expiration", "type": "date", "format": "NONE", "minLength": 4, "maxLength": 4},
    {"name": "email", "type": "email", "format": "NONE"},
    {"name": "zip", "type": "address", "format": "NONE", "minLength": 3, "maxLength": 10},
    {"name": "routing", "type": "routing", "format": "NONE"},
    {"name": "vault_token_first_name", "type": "field", "format": "NONE"},
    {"name": "vault_token_last_name", "type": "field", "format": "NONE"},
]
VALUES = {"vault_token_card_number": PAN, "vault_token_card_expiration": "1229", "email": "jane.doe@example.com",
          "zip": "94107-1234"}


def _partner(platform, security="hmac", fields=FIELDS, ref="DEMO"):
    status, p = admin(platform, "POST", "/admin/v1/partners", {"name": "Tokens Inc", "apiSecurity": security})
    assert status == 201
    status, t = admin(platform, "POST", f"/admin/v1/partners/{p['partnerId']}/templates",
                      {"templateRef": ref, "name": "demo", "fields": fields})
    assert status == 201, t
    return p


@pytest.fixture
def partner(platform):
    return _partner(platform)


def _auth(partner, body: bytes) -> dict[str, str]:
    if "hmacKey" in partner and partner.get("apiSecurity") == "hmac":
        return {"Authorization": build_hmac_header(partner["partnerId"], base64.b64decode(partner["hmacKey"]), PATH,
                                                   body)}
    creds = base64.b64encode(f"{partner['partnerId']}:{partner['partnerKey']}".encode()).decode()
    return {"Authorization": f"Basic {creds}"}


def tokenize(platform, partner, values=VALUES, ref="DEMO", headers=None, **extra):
    body = {"reference": "ref-1", "templateRef": ref, **extra}
    if values is not None:
        body["values"] = [{"name": k, "value": v} for k, v in values.items()]
    raw = json.dumps(body).encode()
    return call(platform, "TokenizeFunction", "POST", PATH, raw, {**_auth(partner, raw), **(headers or {})})


def _tokens(answer) -> dict[str, str]:
    return {v["name"]: v["value"] for v in answer["values"]}


def _scan(platform, table: str) -> list[dict]:
    return client("dynamodb").scan(TableName=table)["Items"]


def _code(exc_info) -> int:
    return exc_info.value.code


# ------------------------------------------------------------------------------------------- round trips


def test_tokenize_endpoint_round_trip_through_detokenize(platform, partner):
    status, _, answer = tokenize(platform, partner)
    assert status == 200, answer
    assert answer["success"] is True and answer["reference"] == "ref-1" and len(answer["messageId"]) == 25
    assert 30 <= len(answer["bfid"]) <= 150
    tokens = _tokens(answer)
    assert set(tokens) == set(VALUES)
    card = tokens["vault_token_card_number"]
    assert card != PAN and card[:6] == PAN[:6] and card[-4:] == PAN[-4:] and card.isdigit() and len(card) == 16
    assert tokens["email"].count("@") == 1 and tokens["zip"][5] == "-"
    assert detokenize_values(partner["partnerId"], answer["bfid"], tokens) == VALUES
    # the read step gives the same tokens, and the stored item holds tokens, never a clear value
    assert read_stored_tokens(partner["partnerId"], answer["bfid"]) == tokens
    dump = json.dumps(_scan(platform, "TokensTable")) + json.dumps(_scan(platform, "RegistryTable"))
    for value in VALUES.values():
        assert value not in dump
    assert card in dump


def test_same_value_field_and_bfid_give_the_same_token_a_new_bfid_another(platform, partner):
    pid = partner["partnerId"]
    first = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN), ("email", "a@b.co")])
    again = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN), ("email", "a@b.co")], bfid=first.bfid)
    assert again.bfid == first.bfid and again.values == first.values
    other = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN), ("email", "a@b.co")])
    assert other.bfid != first.bfid
    assert other.values["vault_token_card_number"] != first.values["vault_token_card_number"]
    # the same value in another field of the same bfid is another token
    both = tokenize_values(pid, "DEMO", [("zip", "12345"), ("vault_token_first_name", "12345")])
    assert both.values["zip"] != both.values["vault_token_first_name"]
    # tokens added under a given bfid merge into its stored item; the bfid comes back extended with their tags
    # (same scope), and the given bfid keeps reading and detokenizing only the tokens it was issued with
    extended = tokenize_values(pid, "DEMO", [("zip", "12345")], bfid=first.bfid)
    assert len(extended.bfid) in (len(first.bfid) + 6, len(first.bfid) + 7)  # 5 bytes: field index + 32-bit tag
    assert set(read_stored_tokens(pid, extended.bfid)) == {"vault_token_card_number", "email", "zip"}
    assert set(read_stored_tokens(pid, first.bfid)) == {"vault_token_card_number", "email"}
    assert detokenize_values(pid, extended.bfid, {**first.values, **extended.values})["zip"] == "12345"
    with pytest.raises(TokenServiceError) as err:
        detokenize_values(pid, first.bfid, extended.values)
    assert _code(err) == 3015
    # a given bfid must name the template asked for
    with pytest.raises(TokenServiceError) as err:
        tokenize_values(pid, "GATEWAY", [("vault_token_zip", "12345")], bfid=first.bfid)
    assert _code(err) == 3014
    assert repr(first).count(PAN[6:12]) == 0 and "values" not in repr(first)


def test_builtin_gateway_template_for_every_partner(platform, partner):
    pid = partner["partnerId"]
    values = [("vault_token_card_number", "4242424242424242"), ("vault_token_card_expiration", "0130"),
              ("vault_token_card_verification", "123"), ("vault_token_bank_routing_number", "011000015"),
              ("vault_token_bank_account_number", "000123456789"), ("vault_token_zip", "10001")]
    with pytest.raises(TokenServiceError) as err:  # issue 27: only an iFrame capture takes a CVV
        tokenize_values(pid, "GATEWAY", values, store=False)
    assert _code(err) == 3046
    values = values[:2] + values[3:]
    result = tokenize_values(pid, "GATEWAY", values, store=False)
    assert result.template_ref == "GATEWAY" and result.template_version == 1
    assert detokenize_values(pid, result.bfid, result.values) == dict(values)
    with pytest.raises(TokenServiceError) as err:  # store=False wrote nothing
        read_stored_tokens(pid, result.bfid)
    assert _code(err) == 3011


# ---------------------------------------------------------------------------------------- bfid verification


def _flips(bfid: str):
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for i, ch in enumerate(bfid):
        yield bfid[:i] + alphabet[(alphabet.index(ch) + 1) % len(alphabet)] + bfid[i + 1:]


def test_forged_or_altered_bfid_is_refused_before_any_tokens_read(platform, partner):
    pid = partner["partnerId"]
    result = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN)])
    tokens_reads: list[str] = []

    def record(params, **_kw):
        if params.get("TableName") == "TokensTable":
            tokens_reads.append(params.get("TableName"))

    ddb = client("dynamodb")
    ddb.meta.events.register("provide-client-params.dynamodb.GetItem", record)
    assert read_stored_tokens(pid, result.bfid)  # warm caches; the hook sees these reads:
    assert tokens_reads == ["TokensTable"] * 2  # the revocation record (issue 21: deletion) and the item
    tokens_reads.clear()
    worst = 0
    for forged in list(_flips(result.bfid)) + [result.bfid[:-1], result.bfid + "A", "x" * 40, ""]:
        for op in (lambda b: read_stored_tokens(pid, b),
                   lambda b: detokenize_values(pid, b, result.values)):
            reset_ddb_calls()
            with pytest.raises(TokenServiceError) as err:
                op(forged)
            assert _code(err) == 3010 and err.value.message == "The bfid is not valid."
            worst = max(worst, ddb_calls())
    assert tokens_reads == []
    # at most one Registry read (an unknown key version named by a flipped byte), once per version per 10 s
    assert worst <= 1
    # another partner cannot use the bfid: the same 3010, with no DynamoDB call at all
    other = _partner(platform, ref="OTHER")
    reset_ddb_calls()
    for op in (lambda: read_stored_tokens(other["partnerId"], result.bfid),
               lambda: detokenize_values(other["partnerId"], result.bfid, result.values),
               lambda: tokenize_values(other["partnerId"], "DEMO", [("zip", "123")], bfid=result.bfid)):
        with pytest.raises(TokenServiceError) as err:
            op()
        assert _code(err) == 3010
    assert ddb_calls() == 0 and tokens_reads == []


# ---------------------------------------------------------------------------------------------- key ring


def test_rotation_keeps_old_tokens_until_the_version_is_retired(platform, partner):
    pid = partner["partnerId"]
    keys_path = f"/admin/v1/partners/{pid}/token-keys"
    v1 = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN), ("email", "x@y.io")])
    assert v1.key_version == 1
    status, ring = admin(platform, "GET", keys_path)
    assert status == 200 and [(k["version"], k["status"]) for k in ring["keys"]] == [(1, "current")]
    status, rotated = admin(platform, "POST", keys_path + "/rotate")
    assert (status, rotated["version"], rotated["status"]) == (201, 2, "current")
    v2 = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN)])
    assert v2.key_version == 2
    # a new container (cold caches) sees the same ring
    service.reset_caches()
    assert detokenize_values(pid, v1.bfid, v1.values)["vault_token_card_number"] == PAN
    assert read_stored_tokens(pid, v1.bfid) == v1.values
    assert detokenize_values(pid, v2.bfid, v2.values) == {"vault_token_card_number": PAN}
    assert [(k["version"], k["status"]) for k in admin(platform, "GET", keys_path)[1]["keys"]] == [
        (1, "active"), (2, "current")]
    # the current version is never retired; unknown versions are 404
    assert admin(platform, "POST", keys_path + "/2/retire") == (409, {
        "success": False, "errCode": 3061, "errMessage": "The current tokenization key cannot be retired; rotate first."})
    assert admin(platform, "POST", keys_path + "/9/retire")[1]["errCode"] == 3060
    assert admin(platform, "POST", keys_path + "/abc/retire")[1]["errCode"] == 3060
    status, retired = admin(platform, "POST", keys_path + "/1/retire")
    assert (status, retired["status"]) == (200, "retired") and "retiredAt" in retired
    assert admin(platform, "POST", keys_path + "/1/retire")[1]["status"] == "retired"  # idempotent
    for op in (lambda: detokenize_values(pid, v1.bfid, v1.values), lambda: read_stored_tokens(pid, v1.bfid),
               lambda: tokenize_values(pid, "DEMO", [("zip", "123")], bfid=v1.bfid)):
        with pytest.raises(TokenServiceError) as err:
            op()
        assert _code(err) == 3010
    assert detokenize_values(pid, v2.bfid, v2.values) == {"vault_token_card_number": PAN}
    # the retired version's wrapped key material is gone from the registry (crypto-shredding)
    items = [i for i in _scan(platform, "RegistryTable") if i["sk"]["S"].startswith("TOKENKEY#")]
    assert {i["sk"]["S"]: "env" in i for i in items} == {"TOKENKEY#000001": False, "TOKENKEY#000002": True}
    assert admin(platform, "GET", "/admin/v1/partners/nobody/token-keys")[0] == 404


def test_concurrent_first_uses_agree_on_one_key(platform):
    from vaultcore.tokens import keys

    pid = "racer"
    barrier = threading.Barrier(6)
    got: list[bytes] = []

    def first_use():
        barrier.wait()
        got.append(keys.current_keys(pid).ff1_key)

    threads = [threading.Thread(target=first_use) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 6 and len(set(got)) == 1
    items = [i for i in _scan(platform, "RegistryTable") if i["pk"]["S"] == f"PARTNER#{pid}"]
    assert [i["sk"]["S"] for i in items] == ["TOKENKEY#000001"]


# ------------------------------------------------------------------------------------------- read window


def test_read_window_is_one_hour_even_when_the_item_is_still_there(platform, partner):
    pid = partner["partnerId"]
    result = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN)])
    clock.set_offset(3599)
    assert read_stored_tokens(pid, result.bfid) == result.values
    clock.set_offset(3601)
    with pytest.raises(TokenServiceError) as err:
        read_stored_tokens(pid, result.bfid)
    assert _code(err) == 3011
    items = _scan(platform, "TokensTable")
    # moto (like DynamoDB) has not deleted it; the item's key is the bfid's scope (its core, without the tags)
    assert [i["bfid"]["S"] for i in items] == [service._verify(pid, result.bfid)[0].scope]
    assert 3600 <= int(items[0]["expiresAt"]["N"]) - int(items[0]["createdAt"]["N"]) <= 3601
    # detokenization with the tokens in hand is not bound to the read window
    assert detokenize_values(pid, result.bfid, result.values) == {"vault_token_card_number": PAN}


# ------------------------------------------------------------------------------ detokenization integrity

README_EXAMPLE_TOKEN = "4242420017564242"  # README "Walkthrough": a well-formed card token of no bfid of ours


def test_a_token_not_issued_under_the_bfid_is_refused_before_ff1(platform, partner, monkeypatch):
    pid = partner["partnerId"]
    made = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN), ("vault_token_card_expiration", "1229")])
    other = tokenize_values(pid, "DEMO", [("vault_token_card_number", "5555555555554444"), ("zip", "30301")])
    token = made.values["vault_token_card_number"]
    typo = token[:8] + str((int(token[8]) + 1) % 10) + token[9:]
    assert detokenize_values(pid, made.bfid, made.values)["vault_token_card_number"] == PAN  # warm caches
    ff1_calls: list[str] = []
    real = service.detokenize_value
    monkeypatch.setattr(service, "detokenize_value", lambda *a, **k: ff1_calls.append("ff1") or real(*a, **k))
    refused = [
        {"vault_token_card_number": typo},  # a typo
        {"vault_token_card_number": README_EXAMPLE_TOKEN},  # the README's example token
        {"vault_token_card_number": other.values["vault_token_card_number"]},  # another bfid's token
        {"vault_token_card_number": PAN},  # a clear value sent as a token
        {"vault_token_card_expiration": made.values["vault_token_card_number"][-4:]},  # a token of another field
        {"zip": other.values["zip"]},  # a field never tokenized under this bfid (well-formed token)
        {**made.values, "zip": "30301"},  # one bad token among good ones: nothing comes back
    ]
    for tokens in refused:
        reset_ddb_calls()
        with pytest.raises(TokenServiceError) as err:
            detokenize_values(pid, made.bfid, tokens)
        assert _code(err) == 3015 and err.value.message.endswith("was not issued under this bfid.")
        assert ddb_calls() == 0  # no store lookup: the tags travel in the bfid
    assert ff1_calls == []  # refused before FF1 ran (nothing was turned into a wrong clear value)
    # the genuine tokens still detokenize; malformed tokens keep their own codes (checked before the tag)
    assert detokenize_values(pid, made.bfid, made.values) == {"vault_token_card_number": PAN,
                                                               "vault_token_card_expiration": "1229"}
    with pytest.raises(TokenServiceError) as err:
        detokenize_values(pid, made.bfid, {"vault_token_card_number": "not-a-card-token"})
    assert _code(err) == 3003
    # the read step returns only tokens the bfid vouches for
    assert read_stored_tokens(pid, made.bfid) == made.values


def test_detokenize_pairs_takes_many_tokens_of_one_field_in_one_call(platform, partner, monkeypatch):
    """The batch API (the proxy's): one bfid verification for any number of tokens, a field any number of times,
    results in order; every token is checked (form, tag) before FF1 runs for any, with detokenize_values' codes."""
    pid = partner["partnerId"]
    pans = ["4111111111111111", "5555555555554444", "4000056655665556"]
    first = tokenize_values(pid, "DEMO", [("vault_token_card_number", pans[0]), ("zip", "30301")])
    bfid, cards = first.bfid, [first.values["vault_token_card_number"]]
    for pan in pans[1:]:  # more values of the same field: each extends the bfid
        more = tokenize_values(pid, "DEMO", [("vault_token_card_number", pan)], bfid=bfid)
        bfid = more.bfid
        cards.append(more.values["vault_token_card_number"])
    pairs = [("vault_token_card_number", cards[2]), ("zip", first.values["zip"]),
             ("vault_token_card_number", cards[0]), ("vault_token_card_number", cards[1]),
             ("vault_token_card_number", cards[0])]
    verified: list[str] = []
    real_verify = service._verify
    monkeypatch.setattr(service, "_verify", lambda *a: verified.append("v") or real_verify(*a))
    ff1_calls: list[str] = []
    real_ff1 = service.detokenize_value
    monkeypatch.setattr(service, "detokenize_value", lambda *a, **k: ff1_calls.append("ff1") or real_ff1(*a, **k))
    assert detokenize_pairs(pid, bfid, pairs) == [pans[2], "30301", pans[0], pans[1], pans[0]]
    assert verified == ["v"] and len(ff1_calls) == 4  # one verification; the repeated token inverted once
    assert detokenize_pairs(pid, bfid, []) == []
    # detokenize_values is the same implementation (one field at most once: a mapping)
    assert detokenize_values(pid, bfid, {"zip": first.values["zip"]}) == {"zip": "30301"}

    ff1_calls.clear()
    other = tokenize_values(pid, "DEMO", [("vault_token_card_number", "4012888888881881")])
    for bad, code in (((("vault_token_card_number", other.values["vault_token_card_number"])), 3015),
                      (("vault_token_card_number", "not-a-card-token"), 3003),
                      (("no_such_field", cards[0]), 3002)):
        with pytest.raises(TokenServiceError) as err:
            detokenize_pairs(pid, bfid, [*pairs, bad])  # one bad pair last, after good ones
        assert _code(err) == code
    assert ff1_calls == []  # nothing was inverted: every pair is checked first
    with pytest.raises(TokenServiceError) as err:
        detokenize_pairs(pid, other.bfid, pairs)  # the first bfid's tokens under another bfid
    assert _code(err) == 3015
    with pytest.raises(TokenServiceError) as err:
        detokenize_pairs(pid, bfid[:-2] + ("AA" if bfid[-2:] != "AA" else "BB"), pairs)
    assert _code(err) == 3010
    for malformed in ({"vault_token_card_number": cards[0]}, "abc", [("vault_token_card_number",)],
                      [("vault_token_card_number", 1)], None):
        with pytest.raises(TokenServiceError) as err:
            detokenize_pairs(pid, bfid, malformed)
        assert _code(err) == 3021
    assert ff1_calls == []


def test_version_1_bfids_keep_detokenizing_without_the_tag_check(platform, partner):
    from vaultcore.tokens import keys as token_keys
    from vaultcore.tokens.bfid import new_bfid
    from vaultcore.tokens.engine import tokenize_value
    from vaultcore.tokens.templates import Template

    pid = partner["partnerId"]
    keys = token_keys.current_keys(pid)
    # Given a bfid of the former layout and a token made as before (FF1 tweak over the whole bfid text)
    old = new_bfid(keys.mac_key, keys.version, "DEMO", pid, version=1)
    assert old.startswith("djEA")
    demo = Template.from_dict({"templateRef": "DEMO", "fields": FIELDS})
    token = tokenize_value(keys.ff1_key, old, demo.get_field("vault_token_card_number"), PAN,
                           bfid_version=1)
    # Then it still detokenizes (no tags: no tag check), and tokenizing under it keeps its text
    assert detokenize_values(pid, old, {"vault_token_card_number": token}) == {"vault_token_card_number": PAN}
    again = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN), ("zip", "30301")], bfid=old)
    assert again.bfid == old and again.values["vault_token_card_number"] == token
    assert read_stored_tokens(pid, old) == again.values
    assert detokenize_values(pid, old, again.values) == {"vault_token_card_number": PAN, "zip": "30301"}
    # documented limit of version 1: a wrong well-formed token is not refused (FF1 gives another value)
    wrong = detokenize_values(pid, old, {"vault_token_card_number": README_EXAMPLE_TOKEN})
    assert wrong["vault_token_card_number"] != PAN
    # new bfids are version 4
    assert tokenize_values(pid, "DEMO", [("zip", "30301")]).bfid.startswith("djQA")


def test_version_2_bfids_keep_their_cycle_walked_short_tokens(platform, partner):
    from vaultcore.tokens import keys as token_keys
    from vaultcore.tokens.bfid import draft_bfid, parse_bfid, seal_bfid, token_tag
    from vaultcore.tokens.engine import tokenize_value
    from vaultcore.tokens.templates import Template

    pid = partner["partnerId"]
    keys = token_keys.current_keys(pid)
    demo = Template.from_dict({"templateRef": "DEMO", "fields": FIELDS})
    expiry, first = demo.get_field("vault_token_card_expiration"), demo.get_field("vault_token_first_name")
    # Given a version-2 bfid issued before version 3, with an expiry token made the old way (cycle walking)
    draft = draft_bfid(keys.version, "DEMO", pid, version=2)
    old = tokenize_value(keys.ff1_key, draft.scope, expiry, "1229", bfid_version=2)
    bfid = seal_bfid(keys.mac_key, draft, [(1, token_tag(keys.tag_key, draft.scope, expiry.name, old))])
    assert bfid.startswith("djIA")
    # Then it still detokenizes through the service
    assert detokenize_values(pid, bfid, {expiry.name: old}) == {expiry.name: "1229"}
    # and tokenizing more under it keeps version 2 and the old construction (same token again, the new short one
    # cycle-walked too), so one bfid never mixes constructions
    more = tokenize_values(pid, "DEMO", [(expiry.name, "1229"), (first.name, "Al")], bfid=bfid)
    assert more.bfid.startswith("djIA") and parse_bfid(keys.mac_key, more.bfid).scope == draft.scope
    assert more.values == {expiry.name: old,
                           first.name: tokenize_value(keys.ff1_key, draft.scope, first, "Al", bfid_version=2)}
    assert detokenize_values(pid, more.bfid, more.values) == {expiry.name: "1229", first.name: "Al"}
    # while a new bfid is version 3 and makes its short tokens with the prefix cipher
    new = tokenize_values(pid, "DEMO", [(expiry.name, "1229"), (first.name, "Al")])
    scope = parse_bfid(keys.mac_key, new.bfid).scope
    assert new.bfid.startswith("djQA")
    assert new.values == {expiry.name: tokenize_value(keys.ff1_key, scope, expiry, "1229", bfid_version=3),
                          first.name: tokenize_value(keys.ff1_key, scope, first, "Al", bfid_version=3)}
    assert detokenize_values(pid, new.bfid, new.values) == {expiry.name: "1229", first.name: "Al"}


def test_omit_keeps_tokens_out_of_the_response(platform, partner):
    status, _, answer = tokenize(platform, partner, omit=True)
    assert status == 200 and "values" not in answer
    stored = read_stored_tokens(partner["partnerId"], answer["bfid"])
    assert detokenize_values(partner["partnerId"], answer["bfid"], stored) == VALUES


# ----------------------------------------------------------------------------------------------- templates


def test_templates_are_immutable_and_versioned(platform, partner):
    pid = partner["partnerId"]
    base = f"/admin/v1/partners/{pid}/templates"
    v1 = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN)])
    changed = [dict(FIELDS[0], format="LAST_FOUR"), FIELDS[2]]
    status, t2 = admin(platform, "POST", base, {"templateRef": "DEMO", "fields": changed})
    assert (status, t2["version"], t2["fields"][0]["format"]) == (201, 2, "LAST_FOUR")
    status, latest = admin(platform, "GET", base + "/DEMO")
    assert (status, latest["version"], latest["versions"]) == (200, 2, [1, 2])
    status, first = admin(platform, "GET", base + "/DEMO", query={"version": "1"})
    assert first["version"] == 1 and first["fields"][0]["format"] == "FIRST_SIX_LAST_FOUR" and len(first["fields"]) == 7
    # tokens of version 1 keep detokenizing with version 1's fields, and version 1 bfids keep version 1
    service.reset_caches()
    assert detokenize_values(pid, v1.bfid, v1.values) == {"vault_token_card_number": PAN}
    again = tokenize_values(pid, "DEMO", [("zip", "123")], bfid=v1.bfid)
    assert again.template_version == 1
    # new tokenizations use version 2: LAST_FOUR now, and version 2 has no zip field
    v2 = tokenize_values(pid, "DEMO", [("vault_token_card_number", PAN)])
    assert v2.template_version == 2 and v2.values["vault_token_card_number"][:6] != PAN[:6]
    assert detokenize_values(pid, v2.bfid, v2.values) == {"vault_token_card_number": PAN}
    with pytest.raises(TokenServiceError) as err:
        tokenize_values(pid, "DEMO", [("zip", "123")])
    assert _code(err) == 3002
    # the list shows built-ins and the latest version of each template
    templates = admin(platform, "GET", base)[1]["templates"]
    assert [(t["templateRef"], t["version"], t["versions"]) for t in templates] == [("GATEWAY", 1, 1), ("DEMO", 2, 2)]
    # a generated reference, errors
    status, generated = admin(platform, "POST", base, {"fields": [FIELDS[2]]})
    assert status == 201 and generated["templateRef"].startswith("T") and len(generated["templateRef"]) == 20
    assert admin(platform, "GET", base + "/NOPE") == (404, {"success": False, "errCode": 3001,
                                                           "errMessage": "Template not found."})
    assert admin(platform, "GET", base + "/DEMO", query={"version": "7"})[0] == 404
    assert admin(platform, "GET", base + "/DEMO", query={"version": "x"})[0] == 400
    for bad in ({"templateRef": "GATEWAY", "fields": [FIELDS[2]]},
                {"templateRef": "bad-ref", "fields": [FIELDS[2]]},
                {"fields": []},
                {"fields": [{"name": "cvv", "type": "card", "format": "LAST_FOUR", "minLength": 4, "maxLength": 4}]},
                {"fields": [FIELDS[2], FIELDS[2]]},
                {"fields": [FIELDS[2]], "extra": 1}):
        status, error = admin(platform, "POST", base, bad)
        assert (status, error["errCode"]) == (400, 3050), bad
    assert admin(platform, "POST", "/admin/v1/partners/nobody/templates", {"fields": [FIELDS[2]]})[0] == 404


def test_irreversible_fields_and_active_windows(platform):
    fields = [{"name": "secret", "type": "field", "format": "NONE", "irreversible": True},
              {"name": "later", "type": "field", "format": "NONE", "active": {"from": "PT1H", "to": "PT2H"}}]
    p = _partner(platform, fields=fields, ref="WIN")
    result = tokenize_values(p["partnerId"], "WIN", [("secret", "hunter22"), ("later", "opens-later")])
    with pytest.raises(TokenServiceError) as err:
        detokenize_values(p["partnerId"], result.bfid, {"secret": result.values["secret"]})
    assert _code(err) == 3012
    with pytest.raises(TokenServiceError) as err:
        detokenize_values(p["partnerId"], result.bfid, {"later": result.values["later"]})
    assert _code(err) == 3013
    clock.set_offset(3600)
    assert detokenize_values(p["partnerId"], result.bfid, {"later": result.values["later"]}) == {"later": "opens-later"}
    clock.set_offset(7200)
    with pytest.raises(TokenServiceError) as err:
        detokenize_values(p["partnerId"], result.bfid, {"later": result.values["later"]})
    assert _code(err) == 3013
    with pytest.raises(TokenServiceError) as err:
        detokenize_values(p["partnerId"], result.bfid, {"nope": "abc"})
    assert _code(err) == 3002
    assert detokenize_values(p["partnerId"], result.bfid, {}) == {}


# ------------------------------------------------------------------------------------------------ errors


ERROR_CASES = [
    ({"values": [{"name": "zip", "value": "12345"}]}, 3000),
    ({"templateRef": 5, "values": [{"name": "zip", "value": "12345"}]}, 3000),
    ({"templateRef": "NOPE", "values": [{"name": "zip", "value": "12345"}]}, 3001),
    ({"templateRef": "DEMO", "values": [{"name": "cvv", "value": "123"}]}, 3002),
    ({"templateRef": "DEMO", "values": [{"name": "vault_token_card_number", "value": "4111111111111112"}]}, 3003),
    ({"templateRef": "DEMO", "values": [{"name": "vault_token_card_number", "value": "41111111111x1111"}]}, 3003),
    ({"templateRef": "DEMO", "values": [{"name": "vault_token_card_expiration", "value": "1329"}]}, 3003),
    ({"templateRef": "DEMO", "values": [{"name": "routing", "value": "011000016"}]}, 3003),
    ({"templateRef": "DEMO", "values": [{"name": "email", "value": "not-an-address"}]}, 3003),
    ({"templateRef": "DEMO", "values": [{"name": "zip", "value": "12"}]}, 3004),
    ({"templateRef": "DEMO", "values": [{"name": "vault_token_card_number", "value": "41111111111111111111"}]}, 3004),
    ({"templateRef": "DEMO", "values": [{"name": "zip", "value": "12345"}, {"name": "zip", "value": "12345"}]}, 3005),
    ({"templateRef": "DEMO"}, 3020),
    ({"templateRef": "DEMO", "values": []}, 3020),
    ({"templateRef": "DEMO", "values": {"zip": "12345"}}, 3020),
    ({"templateRef": "DEMO", "values": [{"name": "zip"}]}, 3021),
    ({"templateRef": "DEMO", "values": [{"name": "zip", "value": 12345}]}, 3021),
    ({"templateRef": "DEMO", "values": [{"name": "zip", "value": "12345"}], "omit": "yes"}, 3022),
    ({"templateRef": "DEMO", "values": [{"name": "zip", "value": "12345"}], "reference": "r" * 51}, 1002),
]


def test_request_errors(platform, partner):
    for body, code in ERROR_CASES:  # one platform for every case: moto setup dominates a test's time
        raw = json.dumps(body).encode()
        status, _, answer = call(platform, "TokenizeFunction", "POST", PATH, raw, _auth(partner, raw))
        expected = 409 if code in TOKENIZATION_DATA_CODES else 400  # the original's "Invalid data"
        assert (status, answer["errCode"], answer["success"]) == (expected, code, False), (body, answer)
        assert len(answer["messageId"]) == 25  # the original's ErrorResponse: every error has one
        for entry in body.get("values", []) if isinstance(body.get("values"), list) else []:
            if isinstance(entry.get("value"), str):
                assert entry["value"] not in answer["errMessage"]


def test_authentication_and_basic_for_key_partners(platform, partner):
    raw = json.dumps({"templateRef": "DEMO", "values": [{"name": "zip", "value": "12345"}]}).encode()
    status, _, answer = call(platform, "TokenizeFunction", "POST", PATH, raw, {})
    assert (status, answer["errCode"]) == (401, 1003)
    status, _, answer = call(platform, "TokenizeFunction", "POST", PATH, b"{not json", _auth(partner, b"{not json"))
    assert (status, answer["errCode"]) == (400, 1001)
    key_partner = _partner(platform, security="key")
    status, _, answer = tokenize(platform, key_partner)
    assert status == 200 and detokenize_values(key_partner["partnerId"], answer["bfid"], _tokens(answer)) == VALUES
    # an HMAC partner's key in a Basic header is refused with the uniform 1003
    hmac_as_basic = {**partner, "apiSecurity": "key"}
    assert tokenize(platform, hmac_as_basic)[0] == 401


# -------------------------------------------------------------------------------------------- dev-payload

CARD = Card(pan="4761739001010010", expiry="2512", name="SMITH/JOHN", cvv="123")


@pytest.fixture
def devices(platform, partner):
    pid = partner["partnerId"]
    admin(platform, "POST", "/admin/v1/bdks", {"bdk": simulator.DEFAULT_BDK["tdes"], "scheme": "tdes", "bdkId": "bdk-1"})
    for serial, dtype in (("T-1", "terminal"), ("A-1", "audio-reader")):
        assert admin(platform, "POST", f"/admin/v1/partners/{pid}/devices",
                     {"serial": serial, "deviceType": dtype, "bdkId": "bdk-1"})[0] == 201
    return partner


def _dev_headers(fields: dict[str, str], serial: str) -> dict[str, str]:
    headers = {"dev-device-serial": serial, "dev-device-type": fields["deviceType"],
               "dev-payload": fields["devicePayload"]}
    if "ksn" in fields:
        headers["dev-ksn"] = fields["ksn"]
    return headers


@pytest.mark.parametrize("mode", ["keyed", "track1", "track2", "emv57"])
def test_dev_payload_fills_the_card_fields(platform, devices, mode):
    headers = _dev_headers(simulator.terminal_payload(CARD, mode), "T-1")
    status, _, answer = tokenize(platform, devices, {"zip": "10001"}, headers=headers)
    assert status == 200, answer
    tokens = _tokens(answer)
    clear = detokenize_values(devices["partnerId"], answer["bfid"], tokens)
    expected = {"zip": "10001", "vault_token_card_number": CARD.pan, "vault_token_card_expiration": "1225"}
    if mode == "track1":
        expected.update(vault_token_first_name="JOHN", vault_token_last_name="SMITH")
    assert clear == expected


def test_dev_payload_audio_reader_without_ksn_and_body_values_win(platform, devices):
    headers = _dev_headers(simulator.audio_reader_payload(CARD, "swiped"), "A-1")
    assert "dev-ksn" not in headers
    status, _, answer = tokenize(platform, devices, {"vault_token_card_number": PAN}, headers=headers)
    assert status == 200, answer
    clear = detokenize_values(devices["partnerId"], answer["bfid"], _tokens(answer))
    assert clear["vault_token_card_number"] == PAN and clear["vault_token_card_expiration"] == "1225"
    # no values in the body at all: the payload alone is enough
    status, _, answer = tokenize(platform, devices, None, headers=headers)
    assert status == 200 and _tokens(answer).keys() >= {"vault_token_card_number", "vault_token_card_expiration"}


def test_dev_payload_errors(platform, devices):
    good = simulator.terminal_payload(CARD, "track2")
    cases = [
        ({**_dev_headers(good, "T-1"), "dev-ksn": ""}, 400, 2400),
        ({k: v for k, v in _dev_headers(good, "T-1").items() if k != "dev-device-type"}, 400, 2000),
        ({**_dev_headers(good, "T-1"), "dev-device-type": "toaster"}, 400, 2001),
        (_dev_headers(good, "NOPE"), 409, 1202),
        ({**_dev_headers(good, "T-1"), "dev-payload": "zz"}, 400, 2100),
    ]
    for headers, status_code, code in cases:
        status, _, answer = tokenize(platform, devices, {"zip": "10001"}, headers=headers)
        assert (status, answer["errCode"]) == (status_code, code), (headers, answer)
    status, _, answer = tokenize(platform, devices, {"vault_token_zip": "10001"}, ref="GATEWAY",
                                 headers=_dev_headers(good, "T-1"))
    assert status == 200  # GATEWAY has the card fields
    no_card = _partner(platform, fields=[FIELDS[2]], ref="NOCARD")
    status, _, answer = tokenize(platform, no_card, {"email": "a@b.co"}, ref="NOCARD",
                                 headers=_dev_headers(good, "T-1"))
    assert (status, answer["errCode"]) == (409, 3030)


# ------------------------------------------------------------------------------------------ round trips


def test_warm_tokenize_costs_one_write_plus_the_nonce(platform, partner):
    tokenize(platform, partner)  # cold: loads partner, template, creates the key
    reset_ddb_calls()
    status, _, _ = tokenize(platform, partner)
    assert status == 200 and ddb_calls() == 2  # HMAC nonce claim + the Tokens write
    key_partner = _partner(platform, security="key")
    tokenize(platform, key_partner)
    reset_ddb_calls()
    assert tokenize(platform, key_partner)[0] == 200 and ddb_calls() == 1  # Basic: the Tokens write only


# ------------------------------------------------------------------------------------------ properties

_pans = st.text("0123456789", min_size=13, max_size=18).map(lambda body: body + luhn_check_digit(body))
_expiries = st.tuples(st.integers(1, 12), st.integers(0, 99)).map(lambda my: f"{my[0]:02d}{my[1]:02d}")
_emails = st.tuples(st.from_regex(r"[a-z0-9._]{1,20}", fullmatch=True),
                    st.from_regex(r"[a-z0-9]{1,20}\.[a-z]{2,6}", fullmatch=True)).map("@".join)
_names = st.text(st.characters(whitelist_categories=("Lu", "Ll", "Nd", "Zs"), max_codepoint=0x24F),
                 min_size=2, max_size=50).filter(lambda s: sum(c.isascii() and c.isalnum() for c in s) >= 2)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pan=_pans, expiry=_expiries, email=_emails, name=_names)
def test_service_round_trip_properties(platform, partner, pan, expiry, email, name):
    pid = partner["partnerId"]
    values = [("vault_token_card_number", pan), ("vault_token_card_expiration", expiry), ("vault_token_email", email),
              ("vault_token_first_name", name)]
    result = tokenize_values(pid, "GATEWAY", values, store=False)
    assert detokenize_values(pid, result.bfid, result.values) == dict(values)
    card = result.values["vault_token_card_number"]
    assert len(card) == len(pan) and card[:6] == pan[:6] and card[-4:] == pan[-4:] and card.isdigit()
    assert result.values["vault_token_card_expiration"].isdigit() and len(result.values["vault_token_card_expiration"]) == 4
    token_email = result.values["vault_token_email"]
    assert [i for i, c in enumerate(token_email) if c in "@._"] == [i for i, c in enumerate(email) if c in "@._"]
    again = tokenize_values(pid, "GATEWAY", values, bfid=result.bfid, store=False)
    assert again.values == result.values
