"""Proxy configuration validation: precise messages, the source/type rule, compiled paths, the egress policy."""

from __future__ import annotations

import copy

import pytest

from vaultcore.net.ssrf import EgressPolicy
from vaultcore.proxy import errors as E
from vaultcore.proxy.config import parse_document, public_document, stored_document

STRICT = EgressPolicy()
LOCAL = EgressPolicy(allow_http=True, allow_loopback=True)


def _doc() -> dict:
    return {
        "proxy": {
            "authorization": {"type": "passthrough", "headerName": "X-Target-Key"},
            "method": "post",
            "target": "https://api.payments.example.com/v1/charge",
            "logSettings": {
                "requestMasks": [{"transformationSource": "body", "transformationType": "jsonpath",
                                  "transformationPath": "$.card.number", "pattern": "allButFirstSixLastFour"}],
                "responseMasks": [{"transformationSource": "header", "transformationType": "key",
                                   "transformationPath": "X-Card", "pattern": "allAsRedacted"}],
                "handledErrorMasks": [{"transformationSource": "body", "transformationType": "regex",
                                       "transformationPath": r"\d{13,19}", "pattern": "all"}],
            },
        },
        "actions": [
            {"type": "tokenization", "method": "detokenize", "templateRef": "GATEWAY", "model": "sync",
             "authorization": {"type": "passthrough"},
             "substitutions": [{"transformationSource": "body", "transformationType": "jsonpath",
                                "transformationPath": "$.card.number", "fieldName": "vault_token_card_number"}]},
            {"type": "parser", "authorization": {"type": "passthrough"},
             "substitutions": [{"transformationSource": "query", "transformationType": "key",
                                "transformationPath": "exp", "dataType": "number", "format": "expiry",
                                "default": None}]},
        ],
    }


def _refused(doc, match: str, code: int = E.CONFIG_INVALID, policy=STRICT) -> None:
    with pytest.raises(E.ProxyConfigError, match=match) as info:
        parse_document(doc, policy=policy)
    assert info.value.code == code and info.value.status == 400


def _with(path: str, value, doc=None):
    """A copy of the valid document with one member set (dotted path, [n] indices); value None deletes."""
    doc = copy.deepcopy(doc or _doc())
    parts = path.replace("[", ".").replace("]", "").split(".")
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if part.isdigit() else node[part]
    last = parts[-1]
    if value is _DELETE:
        del node[int(last) if last.isdigit() else last]
    else:
        node[int(last) if last.isdigit() else last] = value
    return doc


_DELETE = object()


def test_the_full_document_with_the_originals_additions_is_accepted():
    config = parse_document(_doc(), policy=STRICT)
    assert config.method == "post" and config.parsed_target.host == "api.payments.example.com"
    assert [m.pattern for m in config.request_masks + config.response_masks + config.error_masks] == [
        "allButFirstSixLastFour", "allAsRedacted", "all"]
    assert [a.label for a in config.actions] == ["tokenization/detokenize", "parser"]
    assert config.actions[1].substitutions[0].path.key == "exp"
    assert config.authorization.header_name == "X-Target-Key"


@pytest.mark.parametrize("path, value, message", [
    ("proxy", _DELETE, r"^configuration\.proxy is required\.$"),
    ("actions", _DELETE, r"^configuration\.actions is required\.$"),
    ("extra", 1, r"configuration has an unknown member 'extra' \(allowed: proxy, actions, responseActions\)"),
    ("proxy.method", "POST", r"^proxy\.method must be one of: get, post, put, patch, delete\.$"),
    ("proxy.method", _DELETE, r"^proxy\.method is required\.$"),
    ("proxy.target", _DELETE, r"^proxy\.target is required\.$"),
    ("proxy.target", 42, r"^proxy\.target must be a non-empty string\.$"),
    ("proxy.timeout", 5, r"^proxy has an unknown member 'timeout'"),
    ("proxy.authorization.type", "bearer", r"^proxy\.authorization\.type must be one of: passthrough, basic, hmac"),
    ("proxy.authorization.type", "hmac-vpc", r"'hmac-vpc' is not supported by this platform"),
    ("proxy.authorization.password", "x", r"^proxy\.authorization has an unknown member 'password'"),
    ("proxy.authorization.headerName", "Bad Header", r"headerName must be a valid header name"),
    ("proxy.logSettings.debug", True, r"^proxy\.logSettings has an unknown member 'debug'"),
    ("proxy.logSettings.requestMasks", {}, r"^proxy\.logSettings\.requestMasks must be an array\.$"),
    ("proxy.logSettings.requestMasks[0].pattern", "half", r"requestMasks\[0\]\.pattern must be one of: all, "
                                                          r"fourPlainFourMasked, allButFirstSixLastFour, "
                                                          r"allButFirstOneLastFour, allAsRedacted\.$"),
    ("proxy.logSettings.requestMasks[0].transformationSource", "variable",
     r"transformationSource 'variable' is not allowed in a mask \(variables are never logged"),
    ("proxy.logSettings.requestMasks[0].transformationSource", "header",
     r"requestMasks\[0\]: transformationType 'jsonpath' requires transformationSource 'body'\.$"),
    ("proxy.logSettings.responseMasks[0].transformationSource", "body",
     r"responseMasks\[0\]: transformationType 'key' requires transformationSource 'header' or 'query'\.$"),
    ("proxy.logSettings.handledErrorMasks[0].transformationSource", "query",
     r"transformationType 'regex' requires transformationSource 'body'"),
    ("proxy.logSettings.requestMasks[0].transformationpath", "$.x",
     r"requestMasks\[0\] has an unknown member 'transformationpath'"),
    ("actions[0].type", "vault", r"^actions\[0\]\.type must be one of: parser, tokenization\.$"),
    ("actions[0].method", "encrypt", r"^actions\[0\]\.method must be one of: tokenize, detokenize\.$"),
    ("actions[0].templateRef", _DELETE, r"^actions\[0\]\.templateRef is required\.$"),
    ("actions[0].model", "async", r"^actions\[0\]\.model must be 'sync'"),
    ("actions[0].authorization", _DELETE, r"^actions\[0\]\.authorization is required\.$"),
    ("actions[0].substitutions", [], r"^actions\[0\]\.substitutions must not be empty\.$"),
    ("actions[0].substitutions[0].fieldName", _DELETE, r"substitutions\[0\]\.fieldName is required\.$"),
    ("actions[0].substitutions[0].format", "pan", r"substitutions\[0\] has an unknown member 'format'"),
    ("actions[1].substitutions[0].format", "track3", r"substitutions\[0\]\.format must be one of: rawTrack2, "),
    ("actions[1].substitutions[0].dataType", "date", r"dataType must be one of: string, number, boolean\.$"),
    ("actions[1].substitutions[0].format", "firstName", r"format 'firstName' is not numeric; dataType 'number'"),
    ("actions[1].substitutions[0].default", "12ab", r"default must be digits for dataType 'number'"),
    ("actions[1].substitutions[0].default", 12, r"default must be a string or null"),
    ("actions[1].templateRef", "T", r"^actions\[1\] has an unknown member 'templateRef'"),
])
def test_document_errors_name_the_member(path, value, message):
    _refused(_with(path, value), message)


def test_boolean_defaults_and_number_formats():
    doc = _with("actions[1].substitutions[0].dataType", "boolean")
    _refused(_with("actions[1].substitutions[0].default", "maybe", doc), r"default must be one of true, false")
    parse_document(_with("actions[1].substitutions[0].default", "TRUE", doc), policy=STRICT)


def test_one_tokenize_and_one_detokenize_action_at_most():
    doc = _doc()
    doc["actions"].append(copy.deepcopy(doc["actions"][0]))
    _refused(doc, r"^actions: at most one 'detokenize' action")


def test_an_action_does_not_mix_regex_and_structural_body_paths():
    doc = _doc()
    doc["actions"][0]["substitutions"].append({"transformationSource": "body", "transformationType": "regex",
                                               "transformationPath": r"tok_\w+", "fieldName": "f"})
    _refused(doc, r"^actions\[0\]: body substitutions of one action must be all regex or all jsonpath/xpath")


def test_limits():
    doc = _doc()
    doc["actions"] = [copy.deepcopy(doc["actions"][1]) for _ in range(11)]
    _refused(doc, r"^actions must have at most 10 entries\.$")
    _refused(_with("proxy.logSettings.requestMasks[0].transformationPath", "$." + "a" * 600),
             r"transformationPath must be at most 512 characters")


@pytest.mark.parametrize("path, message", [
    ("$.a[?(@.b == 1)]", "does not compile as jsonpath"),
    ("$..a..b..c", r"uses more than 2 descendant \('\.\.'\) steps"),
    ("$", "must select a member, not the whole document"),
    ("$.a.`parent`", "outside the supported subset"),
    ("$.[", "does not compile as jsonpath"),
])
def test_jsonpath_subset(path, message):
    _refused(_with("proxy.logSettings.requestMasks[0].transformationPath", path), message, E.CONFIG_PATH_INVALID)


@pytest.mark.parametrize("path", ["$.card.number", "card.number", "$['card']['number']", "$.items[*].pan",
                                  "$..pan", "$.a[0:2].b", "$.*"])
def test_jsonpath_accepted(path):
    parse_document(_with("proxy.logSettings.requestMasks[0].transformationPath", path), policy=STRICT)


def _xpath_doc(path: str) -> dict:
    return _with("proxy.logSettings.requestMasks[0]", {"transformationSource": "body", "transformationType": "xpath",
                                                       "transformationPath": path, "pattern": "all"})


@pytest.mark.parametrize("path", ["/payment/card/number/text()", "/payment/card/number", "payment/card/@pan",
                                  "//card[@type='visa']/number", "/a/b[2]/c[last()]",
                                  "/*[local-name()='payment']/*[local-name()='pan']/text()", "//pan"])
def test_xpath_accepted(path):
    parse_document(_xpath_doc(path), policy=STRICT)


@pytest.mark.parametrize("path, message", [
    ("count(//a)", "outside the supported subset"),
    ("//a[//b]", "outside the supported subset"),
    ("/a/text()/b", r"text\(\) or @attribute only in its last step"),
    ("/a/following-sibling::b", "outside the supported subset"),
    ("//a//b//c", r"more than 2 descendant \('//'\) steps"),
    ("/a[position() > 1]", "outside the supported subset"),
])
def test_xpath_subset(path, message):
    _refused(_xpath_doc(path), message, E.CONFIG_PATH_INVALID)


@pytest.mark.parametrize("pattern, message", [
    ("(a+)+$", "too slow on adversarial input"),
    (r"(\w+\s?)+$", "too slow on adversarial input"),
    ("([0-9]", "does not compile"),
])
def test_catastrophic_or_invalid_regex_is_refused(pattern, message):
    _refused(_with("proxy.logSettings.handledErrorMasks[0].transformationPath", pattern), message,
             E.CONFIG_REGEX_UNSAFE)


@pytest.mark.parametrize("target, message", [
    ("http://api.payments.example.com/", "must use https"),
    ("http://169.254.169.254/latest/meta-data/", "must use https"),
    ("https://169.254.169.254/", "not an IP address"),
    ("https://0xa9fea9fe/", "not an IP address"),
    ("https://2852039166/", "not an IP address"),
    ("https://[::ffff:169.254.169.254]/", "not an IP address"),
    ("https://localhost/", "internal name"),
    ("https://metadata/", "internal name"),
    ("https://user:pw@api.example.com/", "credentials"),
    ("api.payments.example.com/v1", "must use https"),
])
def test_target_refused_by_the_strict_policy(target, message):
    _refused(_with("proxy.target", target), message, E.CONFIG_TARGET_REFUSED)


@pytest.mark.parametrize("target", ["http://169.254.169.254/", "http://0xa9fea9fe/", "http://[::ffff:169.254.169.254]/"])
def test_metadata_targets_refused_even_by_the_local_runners_policy(target):
    _refused(_with("proxy.target", target), "not an IP address", E.CONFIG_TARGET_REFUSED, policy=LOCAL)


def test_loopback_http_target_only_with_the_local_policy():
    doc = _with("proxy.target", "http://127.0.0.1:8080/echo")
    assert parse_document(doc, policy=LOCAL).parsed_target.port == 8080
    _refused(doc, "must use https", E.CONFIG_TARGET_REFUSED, policy=STRICT)


def test_a_stored_document_keeps_a_target_the_policy_now_refuses():
    doc = _with("proxy.target", "http://127.0.0.1:8080/echo")
    config = parse_document(stored_document(doc, lambda s: {"c": "x"}), policy=STRICT, stored=True)
    assert config.parsed_target is None and "https" in config.target_error


def test_secrets_are_wrapped_for_storage_and_redacted_in_views():
    doc = _with("proxy.authorization", {"type": "basic", "username": "p1", "password": "pk-secret"})
    doc["actions"][0]["authorization"] = {"type": "hmac", "username": "p1", "secret": "hex-secret"}
    wrapped = []
    stored = stored_document(doc, lambda s: wrapped.append(s) or {"c": str(len(wrapped))})
    assert wrapped == [b"pk-secret", b"hex-secret"]
    assert stored["proxy"]["authorization"]["password"] == {"$wrapped": {"c": "1"}}
    assert doc["proxy"]["authorization"]["password"] == "pk-secret"  # the input is not modified
    config = parse_document(stored, policy=STRICT, stored=True)
    assert config.authorization.secret is None and config.authorization.wrapped == {"c": "1"}
    view = public_document(stored)
    assert view["proxy"]["authorization"]["password"] == "[REDACTED]"
    assert view["actions"][0]["authorization"]["secret"] == "[REDACTED]"
    # A caller cannot smuggle an envelope in: it is not a string.
    _refused(_with("proxy.authorization.password", {"$wrapped": {"c": "1"}}, doc),
             r"proxy\.authorization\.password must be a non-empty string")


def test_key_paths_header_and_query():
    doc = _with("proxy.logSettings.responseMasks[0].transformationPath", "X-Card Number")
    _refused(doc, "must be a valid header name")
    doc = _with("proxy.logSettings.responseMasks[0]", {"transformationSource": "query", "transformationType": "key",
                                                       "transformationPath": "card number", "pattern": "all"})
    assert parse_document(doc, policy=STRICT).response_masks[0].path.key == "card number"


def test_required_is_an_optional_boolean_of_every_substitution_but_not_of_masks():
    config = parse_document(_doc(), policy=STRICT)
    assert not config.has_required and not config.actions[0].substitutions[0].required
    doc = _with("actions[0].substitutions[0].required", True)
    doc = _with("actions[1].substitutions[0].required", False, doc)
    config = parse_document(doc, policy=STRICT)
    assert config.has_required
    assert [a.substitutions[0].required for a in config.actions] == [True, False]
    for value in ("true", 1, None, []):
        _refused(_with("actions[0].substitutions[0].required", value),
                 r"^actions\[0\]\.substitutions\[0\]\.required must be true or false\.$")
    _refused(_with("actions[1].substitutions[0].required", "yes"),
             r"^actions\[1\]\.substitutions\[0\]\.required must be true or false\.$")
    _refused(_with("proxy.logSettings.requestMasks[0].required", True),
             r"requestMasks\[0\] has an unknown member 'required'")
    # Kept through storage (the stored document is what the proxy compiles).
    stored = stored_document(doc, lambda b: {"c": "x"})
    assert parse_document(stored, policy=STRICT, stored=True).actions[0].substitutions[0].required
