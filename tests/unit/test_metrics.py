"""Issue 14: the EMF metric helper (vaultcore.metrics) writes documents CloudWatch accepts, keeps dimensions
low-cardinality and card data out, and the API handler flushes once per invocation; log lines carry the
correlation id."""

from __future__ import annotations

import io
import json
import logging
import re
import threading
import time
from pathlib import Path

import pytest

from vaultcore import metrics
from vaultcore.logs import clear_request_context, get_logger, set_request_context

ROOT = Path(__file__).resolve().parents[2]
UNITS = {"Count", "Milliseconds"}


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv("METRICS_SERVICE", raising=False)
    monkeypatch.delenv("METRICS_NAMESPACE", raising=False)
    metrics.discard()
    clear_request_context()
    yield
    metrics.discard()
    clear_request_context()


class _Context:
    function_name = "GatewayFunction"
    aws_request_id = "lambda-request-id"


def _flush(context=_Context()) -> list[dict]:
    out = io.StringIO()
    lines = metrics.flush(context, stream=out)
    assert out.getvalue() == "".join(line + "\n" for line in lines)
    return [json.loads(line) for line in lines]


def assert_emf(doc: dict) -> None:
    """The CloudWatch embedded metric format specification, member by member."""
    meta = doc["_aws"]
    assert isinstance(meta["Timestamp"], int) and abs(meta["Timestamp"] - time.time() * 1000) < 60_000
    directives = meta["CloudWatchMetrics"]
    assert isinstance(directives, list) and directives
    for directive in directives:
        assert set(directive) == {"Namespace", "Dimensions", "Metrics"}
        assert isinstance(directive["Namespace"], str) and directive["Namespace"]
        assert 1 <= len(directive["Dimensions"]) <= 30
        for dimension_set in directive["Dimensions"]:
            assert isinstance(dimension_set, list) and len(dimension_set) <= 30
            for key in dimension_set:  # every dimension key is a string member of the root
                assert isinstance(doc[key], str) and 1 <= len(doc[key]) <= 1024
        assert 1 <= len(directive["Metrics"]) <= 100
        for definition in directive["Metrics"]:
            assert set(definition) <= {"Name", "Unit", "StorageResolution"} and definition["Unit"] in UNITS
            value = doc[definition["Name"]]  # the value is a member of the root: a number or up to 100 numbers
            values = value if isinstance(value, list) else [value]
            assert 1 <= len(values) <= 100
            assert all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def test_a_flush_writes_one_emf_line_with_values_as_root_members():
    set_request_context("api-gateway-request-id")
    metrics.authentication_failed("nonce reused")
    metrics.gateway_outcome(True, "SALE", 0)
    metrics.values_tokenized(2)
    metrics.values_tokenized(1)
    metrics.timing("ProxyTotalLatency", 12.3456, TargetStatus="2xx")
    docs = _flush()
    assert len(docs) == 1
    doc = docs[0]
    assert_emf(doc)
    assert doc["AuthenticationFailures"] == 1 and doc["Cause"] == "nonce"
    assert doc["GatewayApproved"] == 1 and doc["TransactionType"] == "SALE"
    assert doc["TokenizedValues"] == [2, 1]  # one data point per call: Sum = values, SampleCount = calls
    assert doc["ProxyTotalLatency"] == 12.346
    assert doc["Service"] == "vault" and doc["Function"] == "GatewayFunction"
    assert doc["correlation_id"] == "api-gateway-request-id"
    by_name = {m["Name"]: (m["Unit"], d["Namespace"], d["Dimensions"])
               for d in doc["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    # issue 27: by API too, and each of its two keys on its own
    assert doc["Api"] == "other"  # no API handler set one
    assert by_name["AuthenticationFailures"] == ("Count", "VaultPlatform", [
        ["Service"], ["Service", "Api"], ["Service", "Cause"], ["Service", "Function", "Api", "Cause"]])
    assert by_name["TokenizedValues"] == ("Count", "VaultPlatform", [["Service"], ["Service", "Function"]])
    assert by_name["ProxyTotalLatency"][0] == "Milliseconds"


def test_the_buffer_is_emptied_and_an_empty_flush_writes_nothing():
    metrics.count("GatewayErrors", Code=102)
    assert len(_flush()) == 1
    assert _flush() == [] and metrics.pending() == []


def test_service_and_namespace_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("METRICS_SERVICE", "vault-platform-prod")
    monkeypatch.setenv("METRICS_NAMESPACE", "VaultPlatformTest")
    metrics.count("GatewayErrors", Code=1)
    doc = _flush()[0]
    assert doc["Service"] == "vault-platform-prod"
    assert doc["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "VaultPlatformTest"


def test_no_card_number_amount_or_free_text_can_become_a_dimension_or_a_value():
    metrics.count("DecryptResults", Code="4761739001010010")
    metrics.count("GatewayDeclined", Code="partner demo-1 / 19.99 USD")
    metrics.count("TokenizedValues", "4242424242424242")  # a string value is dropped, never published
    metrics.count("TokenizedValues", True)
    line = json.dumps(_flush())
    assert "4761739001010010" not in line and "4242424242424242" not in line and "19.99" not in line
    doc = json.loads(line)[0]
    assert doc["Code"] == "invalid" and "TokenizedValues" not in doc


def test_reserved_members_cannot_be_overwritten():
    metrics.count("Service")
    metrics.count("GatewayErrors", Function="other")
    assert metrics.pending() == []


def test_two_values_for_one_dimension_key_make_another_document():
    metrics.count("GatewayDeclined", Code=501)
    metrics.count("GatewayErrors", Code=102)
    metrics.count("GatewayErrors", Code=200)
    metrics.count("TokenizedValues", 1)  # no clash: rides in the first document
    docs = _flush()
    assert len(docs) == 3 and docs[0]["TokenizedValues"] == 1
    for doc in docs:
        assert_emf(doc)
    published = sorted((name, doc["Code"]) for doc in docs for name in ("GatewayDeclined", "GatewayErrors")
                       if name in doc)
    assert published == [("GatewayDeclined", "501"), ("GatewayErrors", "102"), ("GatewayErrors", "200")]


def test_values_are_capped_as_the_specification_requires():
    for _ in range(150):
        metrics.count("PostbackAttempts")
    doc = _flush()[0]
    assert_emf(doc)
    assert len(doc["PostbackAttempts"]) == 100


def test_buffers_are_per_thread():
    metrics.count("GatewayApproved", TransactionType="SALE")
    worker = threading.Thread(target=lambda: metrics.count("GatewayErrors", Code=1))
    worker.start()
    worker.join()
    assert [name for name, *_ in metrics.pending()] == ["GatewayApproved"]


def test_a_failing_stream_never_fails_the_invocation():
    class Broken(io.StringIO):
        def write(self, _text):
            raise OSError("stdout closed")

    metrics.count("GatewayErrors", Code=1)
    assert metrics.flush(_Context(), stream=Broken()) == []
    assert metrics.pending() == []


# ------------------------------------------------------------------------------ the platform's vocabularies


def _authenticator_reasons() -> set[str]:
    source = (ROOT / "layers/shared/python/vaultcore/auth/authenticator.py").read_text()
    return set(re.findall(r'(?:_failed|attempt\.fail)\(f?"([^"{]+)', source))


def test_every_authentication_failure_reason_maps_to_a_published_cause():
    reasons = _authenticator_reasons()
    assert len(reasons) >= 12, reasons  # the scan found the raise sites
    causes = {reason: metrics.auth_cause(reason) for reason in reasons}
    assert "other" not in causes.values(), causes
    assert set(causes.values()) <= set(metrics.AUTH_CAUSES)
    assert causes["nonce reused"] == "nonce" and causes["signature mismatch"] == "signature"
    assert causes["malformed header: "] == "malformed" and causes["malformed basic header"] == "basic"
    assert causes["timestamp too old"] == causes["timestamp in the future"] == "timestamp"
    assert {metrics.auth_cause(code) for code in (1101, 1102, 1103, 1104, 1105)} == {
        "malformed", "unknown_partner", "disabled", "basic"}
    assert metrics.auth_cause("something new") == "other"


def test_a_missing_authorization_header_is_counted_as_malformed():
    from tests.helpers import api_event
    from vaultcore.api.http import request_from_event
    from vaultcore.auth.authenticator import authenticate_header
    from vaultcore.errors import AuthenticationFailed

    with pytest.raises(AuthenticationFailed):
        authenticate_header(request_from_event(api_event("POST", "/api/partner/validate", b"{}")))
    assert metrics.pending() == [("AuthenticationFailures", "Count", {"Api": "other", "Cause": "malformed"}, [1])]


def test_the_api_dimension_comes_from_the_handler_family_and_route():
    cases = {("gateway", "/api/qsapi/3.8"): "qsapi", ("gateway", "/api/rsapi/v1/transactions"): "rsapi",
             ("admin", "/api/v4/accounts/{account_id}/payment-iframe"): "iframe",
             ("admin", "/admin/v1/partners"): "management", ("secure", "/api/decrypt/parser"): "parser",
             ("secure", "/api/tokenization/tokenize"): "secure", ("proxy", "/api/v1/partners/{p}"): "proxy",
             ("checkout", "/payments"): "checkout", ("nothing", "/"): "other"}
    assert {key: metrics.api_of(*key) for key in cases} == cases
    try:
        metrics.set_api("qsapi")
        metrics.authentication_failed("x", cause="nonce")
        metrics.set_api("4242424242424242")  # never a value outside the fixed set
        metrics.authentication_failed("x", cause="4242424242424242")
    finally:
        metrics.set_api(None)
    assert metrics.pending() == [("AuthenticationFailures", "Count", {"Api": "qsapi", "Cause": "nonce"}, [1]),
                                 ("AuthenticationFailures", "Count", {"Api": "other", "Cause": "other"}, [1])]


def test_proxy_phases_are_a_fixed_set_by_target_status_class():
    metrics.proxy_exchange({"auth": 1.0, "config": 0.5, "target": 20.0, "own": 3.0, "total": 23.0,
                            "something": 9.0}, 503)
    metrics.proxy_exchange({"auth": 1.0, "total": 1.5}, None)
    docs = _flush()
    names = {name for doc in docs for name in doc if name.startswith("Proxy")}
    assert names == {"ProxyAuthLatency", "ProxyConfigLatency", "ProxyTargetLatency", "ProxyOwnLatency",
                     "ProxyTotalLatency"}
    assert sorted(doc["TargetStatus"] for doc in docs) == ["5xx", "none"]


def test_postback_batch_counts_attempts_deliveries_and_dead_letters():
    metrics.postback_batch(["delivered", "failed", "failed", "deferred", "skipped", "error", "failed-requeued",
                            "early", "unprocessed"], dead_lettered=1)
    doc = _flush()[0]
    assert_emf(doc)
    # a failed attempt whose log write failed (its fresh copy carries it) is an attempt; an early copy and the rest
    # of a message group after a failure are not
    assert (doc["PostbackAttempts"], doc["PostbackDelivered"], doc["PostbackFailed"], doc["PostbackDeadLettered"],
            doc["PostbackDeferred"], doc["PostbackErrors"]) == (4, 1, 2, 1, 1, 1)


def test_decrypt_and_gateway_codes():
    metrics.decrypt_result("success")
    assert metrics.pending()[0][2] == {"Code": "success"}
    metrics.discard()
    metrics.decrypt_result(2603)
    assert metrics.pending()[0][2] == {"Code": "2603"}
    metrics.discard()
    metrics.gateway_outcome(False, "SALE", 501)
    metrics.gateway_error(None)
    assert [(n, d) for n, _u, d, _v in metrics.pending()] == [("GatewayDeclined", {"Code": "501"}),
                                                              ("GatewayErrors", {"Code": "internal"})]


# ------------------------------------------------------------------------------ handler and logs


def test_the_api_handler_flushes_once_per_invocation_after_the_response(capsys):
    from tests.helpers import api_event
    from vaultcore.api.handler import api_handler
    from vaultcore.api.http import json_response

    def route(_request):
        metrics.count("GatewayApproved", TransactionType="SALE")
        return json_response(200, {"ok": True})

    handler = api_handler("gateway", route)
    event = api_event("POST", "/api/qsapi/3.8", b"{}")
    event["requestContext"]["requestId"] = "req-123"
    assert handler(event, _Context())["statusCode"] == 200
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert len(emf) == 1
    assert_emf(emf[0])
    assert emf[0]["GatewayApproved"] == 1 and emf[0]["correlation_id"] == "req-123"
    assert metrics.pending() == []


def test_every_log_line_carries_the_correlation_id_and_the_trace_id(monkeypatch):
    stream = io.StringIO()
    log = get_logger("test.metrics")
    handler = logging.getLogger("vault").handlers[0]
    monkeypatch.setattr(handler, "stream", stream)
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
    set_request_context("sqs-message-id")
    log.info("card 4242424242424242 seen")  # redaction still applies
    clear_request_context()
    log.info("outside a request")
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["correlation_id"] == "sqs-message-id"
    assert first["xray_trace_id"] == "1-5759e988-bd862e3fe1be46a994272793"
    assert "4242424242424242" not in first["message"]
    assert "correlation_id" in second and second["correlation_id"] is None
