"""Webhook endpoints without AWS: the signature scheme (ours and the integrators' snippet in
docs/integrators/webhook-endpoints.md, run as published), the endpoint members, the SSRF guard outside the local
runner, and the delivery message the outbox writes."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from vaultcore.v4.errors import MemberInvalid
from vaultcore.webhooks import delivery, endpoints, outbox

DOC = Path(__file__).resolve().parents[2] / "docs" / "integrators" / "webhook-endpoints.md"


def _snippet() -> dict:
    """The page's Python block, executed: its verify_webhook and handle."""
    [code] = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    scope: dict = {}
    exec(compile(code, str(DOC), "exec"), scope)  # noqa: S102 - the published sample, run as a reader would
    return scope


def _message() -> dict:
    data = outbox.settlement_data({"batch_id": 3, "transaction_id": "000000012345", "created_at": 1795766082,
                                   "currency": "USD", "ach_returns": 1})
    return outbox.message("120615523104", "0b7d2d7e-2c55-4b61-a0a8-51c3b8f7d3a4", endpoints.SETTLEMENT, data,
                          "6f1c3c0e-5a2b-5d4e-9f10-2b7c8d9e0a1b", 1795766082)


def test_the_published_snippet_verifies_both_signatures_of_a_rotation_and_deduplicates():
    old, new = "whsec_" + "1" * 64, "whsec_" + "2" * 64
    now = int(time.time())
    target = delivery.WebhookTarget(url="https://merchant.example.com/h", secrets=(new.encode(), old.encode()))
    body, headers = delivery.request(_message(), target, now, 1)
    assert headers["Vault-Signature"].count("v1=") == 2 and headers["Vault-Event"] == endpoints.SETTLEMENT
    snippet = _snippet()
    for secret in (old, new):
        event = snippet["verify_webhook"](body, headers["Vault-Signature"], secret)
        assert event["data"] == {"batchId": 3, "transactionId": "000000012345", "settledAt": 1795766082,
                                 "currency": "USD", "achReturns": 1}
        assert delivery.verify(secret.encode(), headers["Vault-Signature"], body, now)
    with pytest.raises(ValueError, match="bad signature"):
        snippet["verify_webhook"](body, headers["Vault-Signature"], "whsec_" + "3" * 64)
    with pytest.raises(ValueError, match="bad signature"):
        snippet["verify_webhook"](body + b" ", headers["Vault-Signature"], new)
    stale = delivery.request(_message(), target, now - 301, 1)[1]["Vault-Signature"]
    with pytest.raises(ValueError, match="bad timestamp"):
        snippet["verify_webhook"](body, stale, new)
    assert not delivery.verify(new.encode(), stale, body, now)
    assert snippet["handle"](body, headers, new) == 200 and snippet["handle"](body, headers, new) == 200
    assert snippet["seen"] == {headers["Vault-Delivery-Id"]}


def test_every_attempt_sends_the_same_body():
    target = delivery.WebhookTarget(url="https://merchant.example.com/h", secrets=(b"whsec_x",))
    first, h1 = delivery.request(_message(), target, 100, 1)
    again, h2 = delivery.request(_message(), target, 200, 2)
    assert first == again and h1["Vault-Delivery-Id"] == h2["Vault-Delivery-Id"]
    assert (h1["Vault-Delivery-Attempt"], h2["Vault-Delivery-Attempt"]) == ("1", "2")
    assert json.loads(first)["id"] == _message()["delivery_id"]
    assert "whsec" not in repr(target)


@pytest.mark.parametrize("url", ["http://merchant.example.com/h", "https://127.0.0.1/h", "https://localhost/h",
                                 "https://[::1]/h", "https://2130706433/h", "https://169.254.169.254/",
                                 "https://user:pw@merchant.example.com/h", "https://intranet/h"])
def test_outside_the_local_runner_the_guard_refuses_loopback_and_internal_urls(url, monkeypatch):
    from vaultcore.net.ssrf import LOCAL_EGRESS_ENV

    monkeypatch.delenv(LOCAL_EGRESS_ENV, raising=False)
    with pytest.raises(MemberInvalid) as refused:
        endpoints.validate_url(url)
    assert refused.value.member == "url" and url not in str(refused.value)


def test_the_local_runner_allows_a_loopback_receiver(monkeypatch):
    from vaultcore.net.ssrf import LOCAL_EGRESS_ENV

    monkeypatch.setenv(LOCAL_EGRESS_ENV, "1")
    assert endpoints.validate_url("http://127.0.0.1:8080/h") == "http://127.0.0.1:8080/h"


def test_the_endpoint_limit_fits_the_settlements_transaction():
    # the SETTLE-BATCH's item and its postback, plus one delivery per endpoint: at most 100 TransactWriteItems
    assert 2 + endpoints.MAX_ENDPOINTS <= 100
