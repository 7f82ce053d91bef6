"""Issue 28 placements 4, 7 and 8 end to end under faults (tests/faults/delivery_scenarios.py): the local runner
against a moto server behind the fault proxy, one stack for the module, each scenario its own account or partner.

* a postback's copies (the stream relay's SendMessageBatch answers lost) with the delivery-log write after each
  POST failing: one 2xx per delivery id, no attempt POSTed twice;
* the runner SIGKILLed while its stream relay holds records it read and has not queued (the send then dropped,
  or applied with its answer lost): the restarted runner reads the stream again, 0 lost, 0 POSTed twice;
* tokenization ``read`` claims whose answers are lost: the keyed caller recovers its tokens, no other reader
  gets them;
* RSAPI pages of the default range at the client's pace, under Query 503s: no 803, every SALE listed once.

``FAULTS_PLATFORM_COMMIT=<commit>`` runs them against another commit's layer and functions (before issue 28 they
fail: a second 2xx as attempt 2, 3018 for the keyed retry, 803 for page 2).
"""

from __future__ import annotations

import json

import pytest

from tests.faults import delivery_scenarios, harness
from tests.faults.harness import failures


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    yield from harness.stack_for_tests(tmp_path_factory, "faults-delivery")


def _assert_invariants(sc, violations):
    summary = {**sc.summary(violations), "broken": sorted(k for k, v in violations.items() if v)}
    print(json.dumps(summary))
    assert not any(violations.values()), (f"{sc.name}: invariants broken\n{failures(violations)}\n"
                                          f"{json.dumps(summary)}")


def test_postback_copies_with_the_delivery_log_write_failing(stack):
    sc, violations = delivery_scenarios.delivery_copies_log_write_failing(stack, sales=3)
    assert sc.notes["copies_queued"] > 0 and sc.notes["log_writes_failed"] > 0
    _assert_invariants(sc, violations)


@pytest.mark.parametrize("applied", [False, True], ids=["send-dropped", "send-applied"])
def test_sigkill_between_the_stream_read_and_the_send(stack, applied):
    sc, violations = harness.sigkill_between_stream_read_and_send(stack, sales=3, applied=applied)
    assert sc.notes["held_sends"] >= 1 and sc.notes["delivered_at_kill"] == 0
    assert stack.starts >= 2
    _assert_invariants(sc, violations)


def test_reads_whose_claim_answers_are_lost_are_recovered_by_their_caller(stack):
    sc, violations = delivery_scenarios.reads_with_lost_claim_answers(stack, bfids=8)
    _assert_invariants(sc, violations)
    assert sc.notes["bfids"] == 8 and sc.notes["first_reads_500"] >= 1


def test_rsapi_pages_of_the_default_range_at_the_clients_pace(stack):
    sc, violations = delivery_scenarios.paging_at_the_clients_pace(stack, sales=5, limit=2, pace=1.5)
    _assert_invariants(sc, violations)
    assert sc.notes["listed"] == 5
