"""SigV4 of :mod:`vaultcore.store.aws_json`: AWS's published test suite (tests/vectors/aws4_testsuite, see its
README.md) gives the canonical request, the string to sign and the Authorization header of each case; botocore's
``SigV4Auth`` is the reference for random JSON-protocol requests (hypothesis, derandomized)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultcore.store import aws_json

SUITE = Path(__file__).resolve().parents[1] / "vectors" / "aws4_testsuite"
# The suite's fixed values (botocore's tests/unit/auth/test_sigv4.py, the suite's own README).
ACCESS_KEY = "AKIDEXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
REGION = "us-east-1"
SERVICE = "service"
AMZ_DATE = "20150830T123600Z"
STS_TOKEN = ("AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8Y"
             "UuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8"
             "YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2I"
             "CCR/oLxBA==")
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

# Every case of the suite as botocore's repository holds it (see README.md): each one must be here.
CASES = [
    "get-header-key-duplicate", "get-header-value-multiline", "get-header-value-order", "get-header-value-trim",
    "get-unreserved", "get-utf8", "get-vanilla", "get-vanilla-empty-query-key", "get-vanilla-query",
    "get-vanilla-query-order-encoded", "get-vanilla-query-order-key", "get-vanilla-query-order-key-case",
    "get-vanilla-query-order-value", "get-vanilla-query-unreserved", "get-vanilla-utf8-query",
    "get-vanilla-with-session-token", "normalize-path/get-relative", "normalize-path/get-relative-relative",
    "normalize-path/get-slash", "normalize-path/get-slash-dot-slash", "normalize-path/get-slash-pointless-dot",
    "normalize-path/get-slashes", "normalize-path/get-space", "normalize-path/get-special-character",
    "post-header-key-case", "post-header-key-sort", "post-header-value-case", "post-sts-token/post-sts-header-after",
    "post-sts-token/post-sts-header-before", "post-vanilla", "post-vanilla-empty-query-value", "post-vanilla-query",
    "post-x-www-form-urlencoded", "post-x-www-form-urlencoded-parameters",
]


class Case:
    """One case: the .req parsed (method, path, raw query, headers in order with duplicates, body) and the
    expected .creq, .sts and .authz."""

    def __init__(self, name: str) -> None:
        stem = SUITE / name / name.rsplit("/", 1)[-1]
        read = lambda suffix: stem.with_suffix(suffix).read_bytes().decode("utf-8")  # noqa: E731
        self.creq, self.sts, self.authz = read(".creq"), read(".sts"), read(".authz")
        head, _, body = read(".req").partition("\n\n")
        lines = head.split("\n")
        # The request line is split at its first and last space: normalize-path/get-space has a space in its path.
        self.method, _, rest = lines[0].partition(" ")
        target, _, version = rest.rpartition(" ")
        assert version == "HTTP/1.1", lines[0]
        self.path, _, self.query = target.partition("?")
        self.headers: list[tuple[str, str]] = []
        for line in lines[1:]:
            if line[:1] in (" ", "\t"):  # an obsolete folded line continues the previous value
                name, value = self.headers[-1]
                self.headers[-1] = (name, value + "\n" + line)
            elif line:
                name, _, value = line.partition(":")
                self.headers.append((name, value))
        self.body = body.encode("utf-8")
        # As botocore's runner does: the session token of a case is the one its canonical request shows. The .req of
        # get-vanilla-with-session-token does not carry it; post-sts-header-before does; post-sts-header-after signs
        # without it (the token is added after signing).
        found = re.search(r"^x-amz-security-token:(.*)$", self.creq, re.MULTILINE)
        self.token = found.group(1) if found else None
        if self.token and not any(n.lower() == "x-amz-security-token" for n, _ in self.headers):
            self.headers.append(("X-Amz-Security-Token", self.token))

    @property
    def credentials(self) -> aws_json.Credentials:
        return aws_json.Credentials(ACCESS_KEY, SECRET_KEY, self.token)


def test_every_case_of_the_suite_is_here_and_listed():
    on_disk = sorted(str(p.parent.relative_to(SUITE)) for p in SUITE.rglob("*.req"))
    assert on_disk == sorted(CASES)
    for name in CASES:
        for suffix in (".req", ".creq", ".sts", ".authz"):
            assert (SUITE / name / (name.rsplit("/", 1)[-1] + suffix)).is_file(), (name, suffix)
    assert (SUITE / "LICENSE").is_file() and (SUITE / "NOTICE").is_file() and (SUITE / "README.md").is_file()


def test_suite_parser_reads_the_tricky_requests():
    trim = Case("get-header-value-trim")
    assert trim.headers == [("Host", "example.amazonaws.com"), ("My-Header1", " value1"),
                            ("My-Header2", ' "a   b   c"'), ("X-Amz-Date", AMZ_DATE)]
    multiline = Case("get-header-value-multiline")
    assert multiline.headers[1] == ("My-Header1", "value1\n  value2\n     value3")
    duplicate = Case("get-header-key-duplicate")
    assert [v for n, v in duplicate.headers if n == "My-Header1"] == ["value2", "value2", "value1"]
    space = Case("normalize-path/get-space")
    assert (space.method, space.path, space.query) == ("GET", "/example space/", "")
    form = Case("post-x-www-form-urlencoded-parameters")
    assert form.body == b"Param1=value1"
    assert Case("get-vanilla-query-order-key").query == "Param1=value2&Param1=Value1"
    assert Case("post-sts-token/post-sts-header-before").token == STS_TOKEN
    assert Case("post-sts-token/post-sts-header-after").token is None
    assert Case("get-vanilla-with-session-token").token == (
        "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267")


@pytest.mark.parametrize("name", CASES)
def test_canonical_request_matches_the_suite(name):
    case = Case(name)
    creq = aws_json.canonical_request(case.method, case.path, case.query, case.headers,
                                      hashlib.sha256(case.body).hexdigest())
    assert creq == case.creq


@pytest.mark.parametrize("name", CASES)
def test_string_to_sign_matches_the_suite(name):
    case = Case(name)
    assert aws_json.string_to_sign(case.creq, AMZ_DATE, REGION, SERVICE) == case.sts


@pytest.mark.parametrize("name", CASES)
def test_authorization_header_matches_the_suite(name):
    case = Case(name)
    authz = aws_json.sign(case.method, case.path, case.query, case.headers, case.body, case.credentials, REGION,
                          SERVICE, AMZ_DATE)
    assert authz == case.authz


def test_headers_as_mapping_or_pairs_give_the_same_canonical_request():
    pairs = [("Host", "example.amazonaws.com"), ("X-Amz-Date", AMZ_DATE), ("My-Header1", "  a   b  ")]
    from_pairs = aws_json.canonical_request("post", "", "", pairs, EMPTY_SHA256)
    from_mapping = aws_json.canonical_request("POST", "/", "", dict(pairs), EMPTY_SHA256)
    assert from_pairs == from_mapping == (
        "POST\n/\n\nhost:example.amazonaws.com\nmy-header1:a b\nx-amz-date:20150830T123600Z\n\n"
        "host;my-header1;x-amz-date\n" + EMPTY_SHA256)


def test_the_signature_depends_on_every_input():
    case = Case("post-vanilla")
    base = dict(method="POST", path="/", query="", headers=case.headers, body=b"", credentials=case.credentials,
                region=REGION, service=SERVICE, amz_date=AMZ_DATE)
    reference = aws_json.sign(**base)
    assert reference == case.authz
    changes = [("body", b"{}"), ("region", "us-west-2"), ("service", "dynamodb"), ("amz_date", "20150830T123601Z"),
               ("credentials", aws_json.Credentials(ACCESS_KEY, SECRET_KEY + "x")), ("path", "/x"),
               ("query", "a=b"), ("headers", [*case.headers, ("X-Extra", "1")])]
    signatures = {reference}
    for key, value in changes:
        signatures.add(aws_json.sign(**{**base, key: value}))
    assert len(signatures) == len(changes) + 1


def test_credentials_repr_shows_neither_secret_nor_token():
    text = repr(aws_json.Credentials(ACCESS_KEY, SECRET_KEY, STS_TOKEN))
    assert SECRET_KEY not in text and STS_TOKEN not in text and "AKID" in text and ACCESS_KEY not in text


# ------------------------------------------------------------------------------ differential against botocore

_REGIONS = st.sampled_from(["us-east-1", "eu-west-2", "ap-southeast-5", "cn-north-1", "us-gov-west-1"]) | st.from_regex(
    r"\A[a-z]{2}-[a-z]{4,9}-[1-9]\Z")
_SERVICES = st.sampled_from(["dynamodb", "kms", "sqs", "secretsmanager"]) | st.from_regex(r"\A[a-z][a-z0-9-]{1,20}\Z")
_TARGETS = st.sampled_from(["DynamoDB_20120810", "TrentService", "AmazonSQS", "secretsmanager"])
_OPERATIONS = st.from_regex(r"\A[A-Z][A-Za-z]{2,25}\Z")
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12)
# Header values as HTTP carries them (printable ASCII), with the runs of spaces and tabs SigV4 trims.
_VALUE_TEXT = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=30)
_PADDING = st.sampled_from(["", " ", "  ", "\t", " \t "])
_TOKENS = st.text(st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="), min_size=16,
                  max_size=120)


def _case_variant(draw, name: str) -> str:
    return draw(st.sampled_from([name, name.lower(), name.upper()]))


@st.composite
def _json_requests(draw):
    region, service = draw(_REGIONS), draw(_SERVICES)
    host = draw(st.sampled_from([f"{service}.{region}.amazonaws.com", "localhost:4566", "127.0.0.1:50123"]))
    headers = [
        (_case_variant(draw, "Host"), host),
        (_case_variant(draw, "Content-Type"), draw(st.sampled_from(["application/x-amz-json-1.0",
                                                                    "application/x-amz-json-1.1"]))),
        (_case_variant(draw, "X-Amz-Target"), draw(_PADDING) + f"{draw(_TARGETS)}.{draw(_OPERATIONS)}" + draw(_PADDING)),
    ]
    if draw(st.booleans()):  # a header of no fixed content: inner runs of blanks are folded
        headers.append(("X-Amz-Meta-Note", draw(_PADDING) + draw(_VALUE_TEXT) + draw(_PADDING) + draw(_VALUE_TEXT)))
    headers = draw(st.permutations(headers))
    token = draw(st.none() | _TOKENS)
    body = json.dumps(draw(_JSON)).encode("utf-8") if draw(st.booleans()) else b""
    access_key = draw(st.from_regex(r"\A(AKIA|ASIA)[A-Z0-9]{16}\Z"))
    secret_key = draw(st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=20, max_size=40))
    return region, service, headers, token, body, access_key, secret_key


@settings(max_examples=100, derandomize=True, deadline=None, database=None)
@given(_json_requests())
def test_sign_agrees_with_botocore_for_json_protocol_posts(request_parts):
    region, service, headers, token, body, access_key, secret_key = request_parts
    request = AWSRequest(method="POST", url=f"https://{dict((n.lower(), v) for n, v in headers)['host']}/",
                         data=body, headers=dict(headers))
    SigV4Auth(BotoCredentials(access_key, secret_key, token), service, region).add_auth(request)
    expected = request.headers["Authorization"]
    signed = re.search(r"SignedHeaders=([^,]+),", expected).group(1).split(";")
    # botocore added X-Amz-Date (and X-Amz-Security-Token): sign exactly the headers it signed, at its date.
    ours_headers = [(n, v) for n, v in request.headers.items() if n.lower() in signed]
    assert sorted(n.lower() for n, _ in ours_headers) == signed
    assert {"host", "x-amz-date", "content-type", "x-amz-target"} <= set(signed)
    assert ("x-amz-security-token" in signed) == (token is not None)
    amz_date = request.headers["X-Amz-Date"]
    ours = aws_json.sign("POST", "/", "", ours_headers, body, aws_json.Credentials(access_key, secret_key, token),
                         region, service, amz_date)
    assert ours == expected


_PATH_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters="?#/") | st.sampled_from(
    "éሴ€ ")


@st.composite
def _paths_and_queries(draw):
    segments = draw(st.lists(st.text(_PATH_CHARS, max_size=8) | st.sampled_from([".", "..", ""]), max_size=6))
    path = "/" + "/".join(segments) + draw(st.sampled_from(["", "/"]))
    params = draw(st.dictionaries(st.text(_PATH_CHARS, min_size=1, max_size=8), st.text(_PATH_CHARS, max_size=8),
                                  max_size=4))
    return path, params


@settings(max_examples=100, derandomize=True, deadline=None, database=None)
@given(_paths_and_queries())
def test_canonical_path_and_query_agree_with_botocore(path_and_params):
    path, params = path_and_params
    headers = {"Host": "example.amazonaws.com", "X-Amz-Date": AMZ_DATE}
    request = AWSRequest(method="GET", url="https://example.amazonaws.com" + quote(path, safe="/"), params=params,
                         headers=headers)
    request.context["timestamp"] = AMZ_DATE
    expected = SigV4Auth(BotoCredentials(ACCESS_KEY, SECRET_KEY), SERVICE, REGION).canonical_request(request)
    # The same request as it goes on the wire: the path percent-encoded once, the query encoded.
    query = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in params.items())
    ours = aws_json.canonical_request("GET", quote(path, safe="/"), query, headers, EMPTY_SHA256)
    assert ours == expected
