"""Issue 14 through the runner: a SALE writes the gateway's EMF metric line to the function's output (stdout, as
Lambda hands it to CloudWatch Logs), an authentication failure is counted by cause, the EMF lines hold no card
data, and the invocation's log lines carry the same correlation id as its metrics."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import urlencode

from tests.e2e.http import request

VISA = "4242424242424242"


def _stdout_records(runner) -> list[dict]:
    out = []
    for line in runner.stdout.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def _emf_after(runner, seen: int, metric: str, timeout: float = 5.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        found = [r for r in _stdout_records(runner)[seen:] if "_aws" in r and metric in r]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _assert_emf_shape(doc: dict) -> None:
    assert isinstance(doc["_aws"]["Timestamp"], int)
    for directive in doc["_aws"]["CloudWatchMetrics"]:
        assert directive["Namespace"] == "VaultPlatform"
        for dimension_set in directive["Dimensions"]:
            assert all(isinstance(doc[key], str) for key in dimension_set)
        for definition in directive["Metrics"]:
            assert definition["Name"] in doc and definition["Unit"] in ("Count", "Milliseconds")


def test_a_sale_writes_the_gateway_approval_metric_and_no_card_number(runner):
    seen = len(_stdout_records(runner))
    account = runner.demo["account"]
    body = urlencode({"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
                      "response_format": "JSON", "transaction_type": "SALE", "tender_type": "CARD",
                      "card_number": VISA, "card_expiration": "1230", "card_verification": "123",
                      "transaction_amount": "19.99", "currency": "USD"})
    status, _, data = request(runner.base_url + "/api/qsapi/3.8", body,
                              {"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 200 and json.loads(data)["transaction_approved"] is True

    emf = _emf_after(runner, seen, "GatewayApproved")
    assert len(emf) == 1, emf  # one line for the invocation
    doc = emf[0]
    _assert_emf_shape(doc)
    assert doc["GatewayApproved"] == 1 and doc["TransactionType"] == "SALE"
    assert doc["Function"] == "GatewayFunction" and doc["Service"] == "vault-local"
    assert doc["TokenizedValues"] >= 1  # the demo account auto-tokenizes
    # The invocation's log lines carry the correlation id its metrics carry (the API Gateway request id).
    done = [r for r in _stdout_records(runner)[seen:] if r.get("message") == "request done"
            and r.get("correlation_id") == doc["correlation_id"]]
    assert doc["correlation_id"] and done

    every_emf_line = [line for line in runner.stdout.read_text(errors="replace").splitlines()
                      if line.startswith('{"_aws"')]
    assert every_emf_line
    for line in every_emf_line:
        assert VISA not in line and "19.99" not in line
        timestamp = str(json.loads(line)["_aws"]["Timestamp"])
        # No card-number-like run, once the line's own ids are set aside: the timestamp, and the correlation id
        # (a UUID whose last group is 12 hex characters, now and then all digits).
        ids_removed = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "",
                             line.replace(timestamp, ""))
        assert not re.search(r"\d{12,19}", ids_removed), line


def test_an_authentication_failure_is_counted_by_cause_behind_the_uniform_1003(runner):
    seen = len(_stdout_records(runner))
    status, _, data = request(runner.base_url + "/api/partner/validate", {"reference": "no-header"})
    assert status == 401 and json.loads(data)["errCode"] == 1003
    emf = _emf_after(runner, seen, "AuthenticationFailures")
    assert [(d["AuthenticationFailures"], d["Cause"], d["Function"]) for d in emf] == [
        (1, "malformed", "PartnerValidateFunction")]
    _assert_emf_shape(emf[0])
