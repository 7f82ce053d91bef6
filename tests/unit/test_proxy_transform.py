"""Proxy transforms: locating and rewriting values in JSON, XML, form and text bodies, headers and query; log
masks with every pattern; the parser action's 17 formats and 3 data types; fail-closed logging."""

from __future__ import annotations

import json

import pytest

from vaultcore.cards.tracks import TRACK_FORMATS, track_format
from vaultcore.devices import simulator
from vaultcore.devices.parser import read_terminal_plaintext
from vaultcore.devices.simulator import Card
from vaultcore.net.ssrf import EgressPolicy
from vaultcore.proxy import errors as E
from vaultcore.proxy.actions import ActionRunner, _convert, _rounds, _typed_like
from vaultcore.proxy.config import MaskSpec, parse_document
from vaultcore.proxy.logs import Scrubber, clear_mask, masked_view
from vaultcore.proxy.transform import (
    Body,
    Headers,
    Message,
    body_kind,
    compile_path,
    locate,
    mask_message,
    new_splicer,
)

LOCAL = EgressPolicy(allow_http=True, allow_loopback=True)
PAN = "4761739001010010"


def _message(body: bytes | str, content_type: str = "application/json", headers=None, query=None) -> Message:
    raw = body.encode() if isinstance(body, str) else body
    hdrs = {"content-type": content_type, **(headers or {})}
    return Message(headers=Headers(hdrs), query=list(query or []), body=Body(raw, body_kind(content_type, raw)).parse())


def _set_all(message: Message, source: str, type_: str, path: str, fn) -> int:
    cpath = compile_path(source, type_, path)
    splicer = new_splicer(message) if type_ == "regex" else None
    slots = locate(message, cpath, splicer=splicer)
    for slot in slots:
        slot.set(fn(slot.value))
    if splicer:
        splicer.commit()
    return len(slots)


# ------------------------------------------------------------------------------------------------ locating


def test_json_nested_wildcard_descendants_and_absent_paths():
    m = _message(json.dumps({"card": {"number": "4111", "n2": 12}, "items": [{"pan": "a"}, {"pan": "b"}]}))
    assert _set_all(m, "body", "jsonpath", "$.card.number", lambda v: v + "-x") == 1
    assert _set_all(m, "body", "jsonpath", "items[*].pan", str.upper) == 2
    assert _set_all(m, "body", "jsonpath", "$..pan", lambda v: v * 2) == 2
    assert _set_all(m, "body", "jsonpath", "$.missing.member", str) == 0  # absent: skipped, not an error
    out = json.loads(m.body.to_bytes())
    assert out == {"card": {"number": "4111-x", "n2": 12}, "items": [{"pan": "AA"}, {"pan": "BB"}]}


def test_an_unmodified_body_is_forwarded_byte_for_byte():
    raw = '{ "a" : "b" ,\n "c": [1, 2] }'
    m = _message(raw)
    assert _set_all(m, "body", "jsonpath", "$.zzz", str) == 0
    assert m.body.to_bytes() == raw.encode()


def test_xml_text_element_attribute_tail_and_namespaces():
    xml = (b'<?xml version="1.0" encoding="UTF-8"?>\n<p:payment xmlns:p="urn:pay"><p:card type="v">'
           b'<p:pan>4111</p:pan></p:card><note>a<b/>tail</note><plain pan="9">x</plain></p:payment>')
    m = _message(xml, "application/xml")
    assert _set_all(m, "body", "xpath", "/*[local-name()='payment']/*[local-name()='card']/*[local-name()='pan']/text()",
                    lambda v: "T-" + v) == 1
    assert _set_all(m, "body", "xpath", "//plain/@pan", lambda v: "A" + v) == 1
    assert _set_all(m, "body", "xpath", "//plain", lambda v: "E" + v) == 1
    assert _set_all(m, "body", "xpath", "/*/note/text()", str.upper) == 2  # "a" (text) and "tail" (tail of <b/>)
    out = m.body.to_bytes()
    assert out.startswith(b"<?xml version='1.0' encoding='UTF-8'?>")
    assert b"<p:pan>T-4111</p:pan>" in out and b'pan="A9">Ex</plain>' in out and b"<note>A<b/>TAIL</note>" in out


def test_form_body_as_a_flat_object_keeps_order_and_duplicates():
    m = _message("a=1&card_number=4111+1111&a=2&z=", "application/x-www-form-urlencoded")
    assert _set_all(m, "body", "jsonpath", "$.card_number", lambda v: v.replace(" ", "")) == 1
    assert _set_all(m, "body", "jsonpath", "$.a[1]", lambda v: "two") == 1
    assert m.body.to_bytes() == b"a=1&card_number=41111111&a=two&z="


def test_headers_and_query_by_key():
    m = _message("", headers={"x-card": "4111"}, query=[("pan", "1"), ("other", "x"), ("pan", "2")])
    assert _set_all(m, "header", "key", "X-Card", lambda v: v + "!") == 1
    assert _set_all(m, "query", "key", "pan", lambda v: v * 3) == 2
    assert _set_all(m, "header", "key", "X-Absent", str) == 0
    assert m.headers["x-card"] == "4111!" and m.query == [("pan", "111"), ("other", "x"), ("pan", "222")]


@pytest.mark.parametrize("content_type, body, replacement, expected", [
    ("application/json", '{"t": "tok_123"}', 'A"B', b'{"t": "tok_A\\"B"}'),
    ("application/xml", "<t>tok_123</t>", "A<&B", b"<t>tok_A&lt;&amp;B</t>"),
    ("application/x-www-form-urlencoded", "t=tok_123", "A B&C", b"t=tok_A+B%26C"),
    ("text/plain", "t=tok_123", "A B", b"t=tok_A B"),
])
def test_regex_replacements_are_escaped_for_the_body_format(content_type, body, replacement, expected):
    m = _message(body, content_type)
    # The named group "value" is what is replaced; the rest of the match stays.
    assert _set_all(m, "body", "regex", r"tok_(?P<value>\d+)", lambda v: replacement) == 1
    assert m.body.to_bytes() == expected


def test_regex_value_group_rules():
    m = _message("id=tok_1;id=tok_2", "text/plain")
    assert _set_all(m, "body", "regex", r"id=(tok_\d)", lambda v: v.upper()) == 2  # group 1
    assert m.body.to_bytes() == b"id=TOK_1;id=TOK_2"
    assert _set_all(m, "body", "regex", r"TOK_\d", lambda v: "x") == 2  # whole match
    assert m.body.to_bytes() == b"id=x;id=x"


def test_regex_then_jsonpath_in_a_later_step_reparses_the_text():
    m = _message('{"a": "tok_1", "b": "c"}')
    _set_all(m, "body", "regex", r"tok_1", lambda v: "X")
    assert _set_all(m, "body", "jsonpath", "$.b", lambda v: "d") == 1
    assert json.loads(m.body.to_bytes()) == {"a": "X", "b": "d"}


def test_a_jsonpath_on_an_xml_body_is_8107_for_substitutions_and_nothing_for_masks():
    m = _message("<a/>", "application/xml")
    with pytest.raises(E.ProxyError) as info:
        locate(m, compile_path("body", "jsonpath", "$.a"))
    assert info.value.code == E.CONTENT_TYPE_UNSUPPORTED
    assert locate(m, compile_path("body", "jsonpath", "$.a"), strict=False) == []
    with pytest.raises(E.ProxyError) as info:
        locate(_message("x", "text/plain"), compile_path("body", "xpath", "/a"))
    assert info.value.code == E.CONTENT_TYPE_UNSUPPORTED


def test_too_many_matches():
    m = _message(json.dumps({"a": list(range(1001))}))
    with pytest.raises(E.ProxyError) as info:
        locate(m, compile_path("body", "jsonpath", "$.a[*]"))
    assert info.value.code == E.VALUE_NOT_SUBSTITUTABLE


# ------------------------------------------------------------------------------------------------ parsing


@pytest.mark.parametrize("content_type, body, code", [
    ("application/json", b'{"a": ', E.PAYLOAD_INVALID),
    ("application/json", b"[" * 40 + b"]" * 40, E.PAYLOAD_TOO_LARGE),
    ("application/json", json.dumps(list(range(10001))).encode(), E.PAYLOAD_TOO_LARGE),
    ("application/json", b"\xff\xfe{}", E.PAYLOAD_INVALID),
    ("application/xml", b"<a><b></a>", E.PAYLOAD_INVALID),
    ("application/xml", b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>',
     E.XML_DOCTYPE_REFUSED),
    ("application/xml", b'<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">'
                        b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;">]><lolz>&lol3;</lolz>', E.XML_DOCTYPE_REFUSED),
    ("application/xml", '<?xml version="1.0" encoding="UTF-16"?><a/>'.encode("utf-16"), E.PAYLOAD_INVALID),
    ("application/x-www-form-urlencoded", "&".join(f"f{i}=1" for i in range(1001)).encode(), E.PAYLOAD_TOO_LARGE),
    ("application/json", b'{"a": "' + b"x" * (1024 * 1024) + b'"}', E.PAYLOAD_TOO_LARGE),
])
def test_bodies_are_parsed_with_bounds(content_type, body, code):
    with pytest.raises(E.ProxyError) as info:
        Body(body, body_kind(content_type, body)).parse()
    assert info.value.code == code and info.value.status == 400


def test_body_kinds():
    assert body_kind("application/json; charset=utf-8", b"{}") == "json"
    assert body_kind("application/vnd.api+json", b"{}") == "json"
    assert body_kind("text/xml", b"<a/>") == "xml" and body_kind("application/soap+xml", b"<a/>") == "xml"
    assert body_kind("application/x-www-form-urlencoded", b"a=1") == "form"
    assert body_kind(None, b"{}") == "text" and body_kind("application/json", b"") == "none"


# ------------------------------------------------------------------------------------------------ masks


@pytest.mark.parametrize("pattern, expected", [
    ("all", "****************"),
    ("fourPlainFourMasked", "4761****0101****"),
    ("allButFirstSixLastFour", "476173******0010"),
    ("allButFirstOneLastFour", "4***********0010"),
    ("allAsRedacted", "[REDACTED]"),
])
def test_every_mask_pattern_on_every_place(pattern, expected):
    from vaultcore.cards.masking import apply_pattern

    masker = [(None, lambda v: apply_pattern(v, pattern))]
    places = [
        (_message(json.dumps({"c": {"pan": PAN}})), "body", "jsonpath", "$.c.pan",
         lambda m: json.loads(m.body.to_bytes())["c"]["pan"]),
        (_message(f"<c><pan>{PAN}</pan></c>", "application/xml"), "body", "xpath", "/c/pan/text()",
         lambda m: m.body.to_bytes().decode().split("<pan>")[1].split("</pan>")[0]),
        (_message(f"pan={PAN}&x=1", "application/x-www-form-urlencoded"), "body", "jsonpath", "$.pan",
         lambda m: dict(__import__("urllib.parse").parse.parse_qsl(m.body.to_bytes().decode()))["pan"]),
        (_message(f"ref {PAN} end", "text/plain"), "body", "regex", r"ref (\d+) end",
         lambda m: m.body.to_bytes().decode()[4:-4]),
        (_message("", headers={"x-pan": PAN}), "header", "key", "X-Pan", lambda m: m.headers["x-pan"]),
        (_message("", query=[("pan", PAN)]), "query", "key", "pan", lambda m: m.query[0][1]),
    ]
    for message, source, type_, path, read in places:
        mask_message(message, [(compile_path(source, type_, path), masker[0][1])])
        assert read(message) == expected, (source, type_)


def test_masks_on_objects_mask_them_whole_and_numbers_become_text():
    m = _message(json.dumps({"card": {"pan": PAN, "cvv": 123}}))
    mask_message(m, [(compile_path("body", "jsonpath", "$.card"), clear_mask)])
    assert json.loads(m.body.to_bytes())["card"].count("*") > 20
    m = _message(json.dumps({"n": 4111111111111111}))
    mask_message(m, [(compile_path("body", "jsonpath", "$.n"), clear_mask)])
    assert json.loads(m.body.to_bytes()) == {"n": "411111******1111"}


def test_scrubber_masks_every_spelling_of_a_clear_value():
    scrub = Scrubber(["JOHN SMITH", PAN, "12"])
    text = f'{{"n": "JOHN SMITH", "f": "JOHN+SMITH", "p": "x{PAN}", "q": "{PAN}", "m": "12"}}'
    out = scrub(text)
    assert "JOHN" not in out and '"q": "476173******0010"' in out
    assert f"x{PAN}" in out  # glued to other characters: not a whole token (redact_text handles PANs there)
    assert '"m": "12"' in out  # values under three characters are not scrubbed everywhere


def _config(extra_masks=None, actions=None):
    doc = {"proxy": {"authorization": {"type": "passthrough"}, "method": "post", "target": "http://127.0.0.1:1/x",
                     "logSettings": {"requestMasks": extra_masks or []}},
           "actions": actions or []}
    return parse_document(doc, policy=LOCAL)


def test_masked_view_fails_closed_when_masks_cannot_be_applied():
    config = _config([{"transformationSource": "body", "transformationType": "jsonpath",
                       "transformationPath": "$.ssn", "pattern": "all"}])
    bad = Message(headers={"content-type": "application/json", "authorization": "Basic c2VjcmV0"}, query=[],
                  body=Body(f'{{"ssn": "123-45-6789", "pan": "{PAN}"'.encode(), "json"))
    view = masked_view(bad, masks=config.request_masks, clear_paths=[], scrub=Scrubber([]), url="http://t/x",
                       method="POST")
    assert "body" not in view and "could not be applied" in view["bodyOmitted"]
    assert view["headers"]["authorization"] == "[REDACTED]"


def test_masked_view_masks_clear_paths_scrubs_and_redacts():
    config = _config([{"transformationSource": "body", "transformationType": "jsonpath",
                       "transformationPath": "$.name", "pattern": "allButFirstOneLastFour"}])
    clear = compile_path("body", "jsonpath", "$.pan")
    body = json.dumps({"pan": PAN, "name": "JOHN SMITH", "echo": "JOHN SMITH", "other": "4242424242424242",
                       "cvv2": "999"})
    m = _message(body, query=[("q", PAN)])
    view = masked_view(m, masks=config.request_masks, clear_paths=[clear], scrub=Scrubber([PAN, "JOHN SMITH"]),
                       url="http://t/x", method="POST")
    logged = json.loads(view["body"])
    assert logged["pan"] == "476173******0010" and logged["name"] == "J*****MITH"
    assert "JOHN" not in logged["echo"] and logged["other"] == "424242******4242"
    assert logged["cvv2"] == "[REDACTED]" and view["url"] == "http://t/x?q=476173******0010"


@pytest.mark.parametrize("content_type, body, written, masks", [
    ("application/json", json.dumps({"card": {"pan": "tok", "cvv": 123}, "name": "JOHN SMITH", "n": [1, {"a": "b"}]}),
     ("jsonpath", "$.card.pan"), [("jsonpath", "$.card"), ("jsonpath", "$.name"), ("regex", "SMITH"),
                                  ("jsonpath", "$.n[*]")]),
    ("application/xml", '<p><card type="v"><pan>tok</pan></card><name>JOHN SMITH</name>x<b/>tail</p>',
     ("xpath", "/p/card/pan/text()"), [("xpath", "/p/card/@type"), ("xpath", "/p/name/text()"),
                                        ("xpath", "/p/text()"), ("regex", "SMITH"), ("xpath", "/p/card/pan")]),
    ("application/x-www-form-urlencoded", "pan=tok&name=JOHN+SMITH&name=JANE",
     ("jsonpath", "$.pan"), [("jsonpath", "$.name[*]"), ("jsonpath", "$.pan"), ("regex", "JANE")]),
])
def test_log_masks_on_a_borrowed_body_leave_the_forwarded_body_as_it_was(content_type, body, written, masks):
    """The request's log view masks the forwarded body's own tree (no copy, no second parse) and undoes its
    writes: the view is masked, the body to forward and its tree are exactly as before."""
    m = _message(body, content_type)
    assert _set_all(m, "body", written[0], written[1], lambda v: PAN) == 1  # a detokenization
    forwarded = m.body.to_bytes()
    view_body = m.body.borrow()
    assert view_body.tree() is m.body.tree() and view_body.to_bytes() == forwarded  # shared, not re-parsed
    view_message = Message(headers=m.headers, query=[], body=view_body)
    plan = [(compile_path("body", type_, path), clear_mask) for type_, path in [written, *masks]]
    try:
        view = masked_view(view_message, masks=[], clear_paths=[p for p, _m in plan], scrub=Scrubber([PAN]),
                           url="http://t/x", method="POST")
    finally:
        view_body.restore()
    assert PAN not in view["body"] and "SMITH" not in view["body"] and "bodyOmitted" not in view
    assert m.body.to_bytes() == forwarded  # what is sent is what was serialized before the masks
    m.body.tree_changed()  # serialize the (restored) tree again: the same bytes
    assert m.body.to_bytes() == forwarded and PAN in forwarded.decode()


# ------------------------------------------------------------------------------------------------ parser action

CARD = Card(pan=PAN, expiry="2512", name="SMITH/JOHN", cvv="123")


def _card(mode: str):
    if mode == "swiped":
        return read_terminal_plaintext(simulator.track1(CARD) + simulator.track2(CARD))
    return read_terminal_plaintext(simulator.plaintext(mode, CARD))


@pytest.mark.parametrize("mode", ["keyed", "swiped", "emv57"])
def test_parser_action_writes_all_17_formats_as_strings(monkeypatch, mode):
    import vaultcore.devices.parser as parser

    card = _card(mode)
    monkeypatch.setattr(parser, "decrypt_for_partner", lambda *a, **k: card)
    subs = [{"transformationSource": "body", "transformationType": "jsonpath", "transformationPath": f"$.{fmt}",
             "dataType": "string", "format": fmt, "default": "none"} for fmt in TRACK_FORMATS]
    config = _config(actions=[{"type": "parser", "authorization": {"type": "passthrough"}, "substitutions": subs}])
    m = _message(json.dumps({fmt: "" for fmt in TRACK_FORMATS}))
    runner = ActionRunner(config, "p1", {"dev-device-type": "terminal"})
    runner.run(m)
    out = json.loads(m.body.to_bytes())
    for fmt in TRACK_FORMATS:
        expected = track_format(fmt, card.track1, card.track2, card.keyed)
        assert out[fmt] == (expected if expected else "none"), fmt
    assert out["pan"] == PAN and out["expiry"] == "1225"
    if mode == "keyed":
        assert out["cvv"] == "123" and out["track2"] == "none"
    if mode == "swiped":
        assert out["rawTrack1"].startswith("%B" + PAN) and out["firstNameAndSurname"] == "JOHN SMITH"
        assert out["track2equivalentUpper"] == PAN + "D25122010000000000"
    assert PAN in runner.sensitive


@pytest.mark.parametrize("fmt, data_type, default, raw, expected", [
    ("pan", "number", None, PAN, int(PAN)),
    ("expiryMonth", "number", None, "09", 9),
    ("cvv", "number", "0", None, 0),
    ("cvv", "number", None, None, None),
    ("cvv", "boolean", None, "123", True),
    ("cvv", "boolean", None, None, False),
    ("cvv", "boolean", "yes", None, True),
    ("firstName", "boolean", "false", "JOHN", True),
    ("firstName", "string", None, None, None),
    ("firstName", "string", "n/a", "", "n/a"),
    ("surname", "string", None, "SMITH", "SMITH"),
])
def test_data_types(fmt, data_type, default, raw, expected):
    from vaultcore.proxy.config import SubstitutionSpec

    sub = SubstitutionSpec(compile_path("body", "jsonpath", "$.x"), data_type=data_type, default=default, format=fmt)
    assert _convert(raw, sub) == expected


def test_number_of_a_non_numeric_value_is_8102():
    from vaultcore.proxy.config import SubstitutionSpec

    sub = SubstitutionSpec(compile_path("body", "jsonpath", "$.x"), data_type="number", format="discretionary")
    with pytest.raises(E.ProxyError) as info:
        _convert("12A", sub)
    assert info.value.code == E.PARSER_FAILED


def test_parser_values_in_xml_header_and_query_are_text(monkeypatch):
    import vaultcore.devices.parser as parser

    monkeypatch.setattr(parser, "decrypt_for_partner", lambda *a, **k: _card("keyed"))
    subs = [
        {"transformationSource": "body", "transformationType": "xpath", "transformationPath": "/r/pan",
         "dataType": "number", "format": "pan"},
        {"transformationSource": "header", "transformationType": "key", "transformationPath": "X-Has-Cvv",
         "dataType": "boolean", "format": "cvv"},
        {"transformationSource": "query", "transformationType": "key", "transformationPath": "name",
         "dataType": "string", "format": "surname"},
    ]
    config = _config(actions=[{"type": "parser", "authorization": {"type": "passthrough"}, "substitutions": subs}])
    m = _message("<r><pan/></r>", "application/xml", headers={"x-has-cvv": ""}, query=[("name", "?")])
    ActionRunner(config, "p1", {}).run(m)
    assert m.body.to_bytes() == f"<r><pan>{PAN}</pan></r>".encode()
    assert m.headers["x-has-cvv"] == "true" and m.query == [("name", "")]


def test_parser_action_is_skipped_without_places_and_never_decrypts(monkeypatch):
    import vaultcore.devices.parser as parser

    monkeypatch.setattr(parser, "decrypt_for_partner", lambda *a, **k: pytest.fail("decrypted"))
    subs = [{"transformationSource": "body", "transformationType": "jsonpath", "transformationPath": "$.pan",
             "dataType": "string", "format": "pan"}]
    config = _config(actions=[{"type": "parser", "authorization": {"type": "passthrough"}, "substitutions": subs}])
    runner = ActionRunner(config, "p1", {})
    runner.run(_message('{"other": 1}'))
    assert runner.outcomes[0]["result"].startswith("skipped")


def test_helpers():
    assert _rounds(["a", "b", "a", "a", "b"]) == [[0, 1], [2, 4], [3]]
    assert _typed_like(4111, "4111222233334444") == 4111222233334444
    assert _typed_like(4111, "0411") == "0411" and _typed_like("4111", "5") == "5" and _typed_like(True, "1") == "1"


def test_mask_spec_objects_are_usable_directly():
    config = _config([{"transformationSource": "header", "transformationType": "key", "transformationPath": "X-A",
                       "pattern": "all"}])
    assert isinstance(config.request_masks[0], MaskSpec)


def test_long_bodies_are_cut_where_no_card_data_can_be_split():
    from vaultcore.proxy.logs import MAX_LOGGED_BODY, _safe_cut

    filler = '{"x": "' + "y " * 10 + '"}, '
    text = filler * (MAX_LOGGED_BODY // len(filler)) + '{"pan": "' + PAN + '"}'
    for shift in range(0, 40, 3):  # cut anywhere around the card number
        body = "#" * shift + text
        cut = _safe_cut(body, len(body) - 10)
        assert PAN[:8] not in cut and not cut.endswith(tuple("0123456789"))
    assert _safe_cut("a" * 1000, 600) == "a" * 344  # no separator in reach: the whole reach is dropped
    m = _message(json.dumps({"pad": "z " * MAX_LOGGED_BODY, "pan": PAN}))
    view = masked_view(m, masks=[], clear_paths=[], scrub=Scrubber([]), url="http://t/x", method="POST")
    assert view["bodyTruncated"] is True and len(view["body"]) <= MAX_LOGGED_BODY and PAN not in view["body"]


# ------------------------------------------------------------------------------------------------ fidelity (issue 11.6)


class _FakeTokens:
    """Stands in for the tokenization service: token = "T" + value reversed, one bfid per call chain."""

    def __init__(self) -> None:
        self.calls: list[list[tuple[str, str]]] = []

    def __call__(self, partner_id, template_ref, values, *, bfid=None, store=True):
        from vaultcore.tokens.service import TokenizeResult

        self.calls.append(list(values))
        return TokenizeResult(bfid=bfid or "bfid-1", values={n: "T" + v[::-1] for n, v in values},
                              template_ref=template_ref)


def _tokenize_config(subs: list[dict], method: str = "tokenize"):
    return _config(actions=[{"type": "tokenization", "method": method, "templateRef": "DEMO",
                             "authorization": {"type": "passthrough"}, "substitutions": subs}])


def _sub(source: str, type_: str, path: str, **extra) -> dict:
    return {"transformationSource": source, "transformationType": type_, "transformationPath": path,
            "fieldName": "vault_token_card_number", **extra}


@pytest.fixture
def fake_tokens(monkeypatch):
    import vaultcore.tokens.service as tokens

    fake = _FakeTokens()
    monkeypatch.setattr(tokens, "tokenize_values", fake)
    return fake


def test_repeated_headers_are_one_slot_per_occurrence_in_order():
    m = _message("", headers=None)
    m.headers = Headers([("X-Card", "1111"), ("x-other", "o"), ("x-card", "2222")])
    assert _set_all(m, "header", "key", "X-Card", lambda v: v + "!") == 2
    assert m.headers.items() == [("x-card", "1111!"), ("x-other", "o"), ("x-card", "2222!")]
    assert m.headers.get("x-card") == "2222!" and m.headers.get_all("X-CARD") == ["1111!", "2222!"]
    m.headers["x-card"] = "[REDACTED]"  # replaces every occurrence by one, at the first one's place
    assert m.headers.items() == [("x-card", "[REDACTED]"), ("x-other", "o")]
    assert "X-Other" in m.headers and "x-none" not in m.headers and list(m.headers) == ["x-card", "x-other"]
    assert "1111" not in repr(m.headers)  # names only


def test_a_query_key_substitution_tokenizes_every_occurrence_in_order(fake_tokens):
    config = _tokenize_config([_sub("query", "key", "pan")])
    m = _message("", query=[("pan", "4111"), ("x", "1"), ("pan", "5555")])
    runner = ActionRunner(config, "p1", {})
    runner.run(m)
    assert m.query == [("pan", "T1114"), ("x", "1"), ("pan", "T5555")]
    assert runner.vault_id_out == "bfid-1" and runner.unmatched == []
    assert fake_tokens.calls == [[("vault_token_card_number", "4111")], [("vault_token_card_number", "5555")]]


def test_form_data_in_the_query_string_is_reached_by_body_jsonpath_and_regex(fake_tokens):
    # No body: the query string is the URL-form data (spec), addressed as a form body would be.
    config = _tokenize_config([_sub("body", "jsonpath", "$.card_number")])
    m = _message("", query=[("card_number", PAN), ("amount", "10"), ("note", "a b&c")])
    ActionRunner(config, "p1", {}).run(m)
    assert m.query == [("card_number", "T" + PAN[::-1]), ("amount", "10"), ("note", "a b&c")]
    config = _tokenize_config([_sub("body", "regex", r"card_number=(\d{13,19})")])
    m = _message("", query=[("lang", "en"), ("card_number", PAN)])
    ActionRunner(config, "p1", {}).run(m)
    assert m.query == [("lang", "en"), ("card_number", "T" + PAN[::-1])]
    # A repeated field is an array, as in a form body.
    config = _tokenize_config([_sub("body", "jsonpath", "$.pan[*]")])
    m = _message("", query=[("pan", "1234"), ("pan", "5678")])
    ActionRunner(config, "p1", {}).run(m)
    assert m.query == [("pan", "T4321"), ("pan", "T8765")]


def test_the_query_string_is_not_form_data_when_there_is_a_body(fake_tokens):
    config = _tokenize_config([_sub("body", "jsonpath", "$.card_number")])
    m = _message('{"other": 1}', query=[("card_number", PAN)])
    runner = ActionRunner(config, "p1", {})
    runner.run(m)
    assert m.query == [("card_number", PAN)] and m.body.to_bytes() == b'{"other": 1}'
    assert runner.unmatched == ["0.0"] and fake_tokens.calls == []
    # xpath never addresses the query string (XML cannot travel there): no 8107 for a bodiless request.
    sub = _sub("body", "xpath", "/p/pan/text()")
    m = _message("", query=[("pan", PAN)])
    runner = ActionRunner(_tokenize_config([sub]), "p1", {})
    runner.run(m)
    assert m.query == [("pan", PAN)] and runner.unmatched == ["0.0"]


def test_unmatched_substitutions_are_reported_by_index(fake_tokens, monkeypatch):
    import vaultcore.devices.parser as parser

    monkeypatch.setattr(parser, "decrypt_for_partner", lambda *a, **k: _card("keyed"))
    config = _config(actions=[
        {"type": "tokenization", "method": "tokenize", "templateRef": "DEMO", "authorization": {"type": "passthrough"},
         "substitutions": [_sub("body", "jsonpath", "$.pan"), _sub("header", "key", "X-Missing"),
                           _sub("query", "key", "pan")]},
        {"type": "parser", "authorization": {"type": "passthrough"},
         "substitutions": [{"transformationSource": "body", "transformationType": "jsonpath",
                            "transformationPath": "$.absent", "dataType": "string", "format": "pan"}]},
    ])
    runner = ActionRunner(config, "p1", {})
    runner.run(_message(json.dumps({"pan": PAN})))
    assert runner.unmatched == ["0.1", "0.2", "1.0"]
    assert [s["matches"] for s in runner.outcomes[0]["substitutions"]] == [1, 0, 0]


def test_a_required_substitution_that_matches_nothing_refuses_before_any_action_runs(fake_tokens):
    config = _tokenize_config([_sub("body", "jsonpath", "$.pan"), _sub("query", "key", "card", required=True)])
    assert config.has_required and config.actions[0].substitutions[1].required
    runner = ActionRunner(config, "p1", {})
    m = _message(json.dumps({"pan": PAN}))
    with pytest.raises(E.ProxyError) as info:
        runner.run(m)
    assert info.value.code == E.REQUIRED_UNMATCHED == 8115 and info.value.status == 400
    assert "actions[0].substitutions[1]" in info.value.message and PAN not in info.value.message
    assert fake_tokens.calls == [] and runner.vault_id_out is None  # nothing tokenized, no bfid issued
    assert runner.unmatched == ["0.1"] and json.loads(m.body.to_bytes()) == {"pan": PAN}
    # Matched (in the query string as form data): forwarded, tokenized.
    m = _message("", query=[("card", PAN)])
    runner = ActionRunner(_tokenize_config([_sub("body", "jsonpath", "$.card", required=True)]), "p1", {})
    runner.run(m)
    assert m.query == [("card", "T" + PAN[::-1])] and runner.unmatched == []


def test_required_in_a_dry_run_simulation_reports_8115_without_calls(fake_tokens):
    config = _tokenize_config([_sub("header", "key", "X-Pan", required=True)])
    runner = ActionRunner(config, "p1", {}, simulate=True)
    with pytest.raises(E.ProxyError) as info:
        runner.run(_message("{}"))
    assert info.value.code == 8115 and runner.unmatched == ["0.0"]


def test_masks_reach_repeated_headers_and_form_data_in_the_query_string():
    m = _message("", query=[("card_number", PAN), ("k", "v")])
    m.headers = Headers([("x-pan", PAN), ("x-pan", "4242424242424242")])
    mask_message(m, [(compile_path("body", "jsonpath", "$.card_number"), clear_mask),
                     (compile_path("header", "key", "x-pan"), clear_mask)])
    assert m.query == [("card_number", "476173******0010"), ("k", "v")]
    assert m.headers.get_all("x-pan") == ["476173******0010", "424242******4242"]
    view = masked_view(m, masks=[], clear_paths=[], scrub=Scrubber([]), url="http://t/x", method="POST")
    assert view["headers"]["x-pan"] == "476173******0010, 424242******4242"  # joined, RFC 9110 5.3
    assert view["url"] == "http://t/x?card_number=476173******0010&k=v"


def test_request_from_event_keeps_every_value_of_repeated_query_keys_and_headers():
    from vaultcore.api.http import request_from_event

    event = {"httpMethod": "POST", "path": "/p", "body": None,
             "headers": {"X-A": "2", "Content-Type": "application/json"},
             "multiValueHeaders": {"X-A": ["1", "2"], "Content-Type": ["application/json"]},
             "queryStringParameters": {"item": "2", "q": "x"},
             "multiValueQueryStringParameters": {"item": ["1", "2"], "q": ["x"]}}
    request = request_from_event(event)
    assert request.query == {"item": "2", "q": "x"} and request.header("x-a") == "2"  # single values: the last
    assert request.query_pairs() == [("item", "1"), ("item", "2"), ("q", "x")]
    assert request.header_pairs() == [("x-a", "1"), ("x-a", "2"), ("content-type", "application/json")]
    # Without multiValue* members (a hand-built event) the single values are used.
    del event["multiValueHeaders"], event["multiValueQueryStringParameters"]
    request = request_from_event(event)
    assert request.query_pairs() == [("item", "2"), ("q", "x")] and ("x-a", "2") in request.header_pairs()


def test_the_local_runner_fills_multi_value_members_like_api_gateway():
    from types import SimpleNamespace

    from local.runner import Platform, Route

    route = Route("POST", "/api/v1/partners/{partnerID}/configurations/{configReferenceID}", "ProxyFunction")
    event = Platform.api_event(SimpleNamespace(environment="cert"), "POST", "/x?item=1&b=0&item=2&e=",
                               [("X-A", "1"), ("Host", "h"), ("X-A", "2")], b"", route, {}, "127.0.0.1")
    assert event["queryStringParameters"] == {"item": "2", "b": "0", "e": ""}
    assert event["multiValueQueryStringParameters"] == {"item": ["1", "2"], "b": ["0"], "e": [""]}
    assert event["headers"] == {"X-A": "2", "Host": "h"}
    assert event["multiValueHeaders"] == {"X-A": ["1", "2"], "Host": ["h"]}


def test_query_key_and_query_string_form_substitutions_of_one_action_both_land(fake_tokens):
    config = _tokenize_config([_sub("query", "key", "pan"), _sub("body", "jsonpath", "$.card_number")])
    m = _message("", query=[("pan", "1234"), ("card_number", "5678"), ("pan", "9012")])
    ActionRunner(config, "p1", {}).run(m)
    assert m.query == [("pan", "T4321"), ("card_number", "T8765"), ("pan", "T2109")]
