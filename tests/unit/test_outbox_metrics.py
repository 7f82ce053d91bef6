"""Issue 22: the outbox sweeper publishes the outbox's depth on every sweep (the dashboard, PostbackOutboxAlarm)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests.unit.test_metrics import assert_emf
from vaultcore import metrics
from vaultcore.errors import VaultError
from vaultcore.postback import outbox


class _Sqs:
    def __init__(self, refuse: set[str]):
        self.refuse = refuse
        self.sent: list[str] = []

    def send_message(self, QueueUrl: str, MessageBody: str) -> dict:  # noqa: N803 - boto3's names
        if MessageBody in self.refuse:
            raise VaultError("refused")
        self.sent.append(MessageBody)
        return {}


def _sweep(monkeypatch, capsys, entries: list[dict], refuse: set[str]) -> tuple[dict, list[dict]]:
    sqs = _Sqs(refuse)
    marked: list[str] = []
    monkeypatch.setattr(outbox.deliveries, "list_unsent", lambda: entries)
    monkeypatch.setattr(outbox.deliveries, "mark_sent", lambda account, delivery: marked.append(delivery))
    monkeypatch.setattr(outbox, "client", lambda name: sqs)
    monkeypatch.setattr(outbox, "settings", lambda: SimpleNamespace(postback_queue_url="https://queue"))
    capsys.readouterr()
    result = outbox.sweep({}, SimpleNamespace(aws_request_id="sweep-1", function_name="PostbackOutboxFunction"))
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"_aws"')]
    assert [m.replace("d", "m") for m in marked] == sqs.sent  # each sent entry is marked
    return result, emf


def test_a_sweep_publishes_the_depth_it_found_and_what_stayed(monkeypatch, capsys):
    entries = [{"account_id": "a1", "delivery_id": f"d{i}", "message": f"m{i}"} for i in range(3)]
    result, emf = _sweep(monkeypatch, capsys, entries, refuse={"m1"})
    assert result == {"sent": 2, "failed": 1}
    (doc,) = emf
    assert_emf(doc)
    assert (doc["PostbackOutboxDepth"], doc["PostbackOutboxFailed"]) == (3, 1)
    assert doc["correlation_id"] == "sweep-1"
    assert metrics.pending() == []


def test_an_empty_outbox_still_publishes_zeros(monkeypatch, capsys):
    result, emf = _sweep(monkeypatch, capsys, [], refuse=set())
    assert result == {"sent": 0}
    (doc,) = emf
    assert (doc["PostbackOutboxDepth"], doc["PostbackOutboxFailed"]) == (0, 0)
