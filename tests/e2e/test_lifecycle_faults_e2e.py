"""Issue 28, the short form: the lifecycle traffic under mixed DynamoDB faults, end to end, reconciled.

The stack of tests/faults/harness.py (a moto server process, the fault proxy, the runner subprocess); the
traffic and the invariants are tests/faults/lifecycle.py's. The placed faults of each of the issue's
placements are in tests/integration/test_lifecycle_exactly_once.py (deterministic, in process); here the same
books are checked under random faults of every mode at once. ``python -m bench.bench_faults`` runs the long form
(the six modes of the issue: lost answers, 5xx, throttling, resets, mixed, 60% lost answers).
``FAULTS_PLATFORM_COMMIT=<commit>`` runs it against another commit's layer and functions (as
tests/e2e/test_faults_e2e.py does).
"""

from __future__ import annotations

import json
import os

import pytest

from tests.faults import harness
from tests.faults.lifecycle import lifecycle_under_faults


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    commit = os.environ.get("FAULTS_PLATFORM_COMMIT")
    root = harness.previous_tree(commit, tmp_path_factory.mktemp("platform")) if commit else None
    s = harness.Stack(tmp_path_factory.mktemp("lifecycle-faults"), root=root)
    yield s
    s.stop()


def test_the_lifecycle_under_mixed_faults_reconciles(stack):
    """AUTHORIZATION -> partial CAPTURE -> partial REFUNDs -> REVERSAL; SALE -> full REFUND racing REVERSAL;
    CREDITs to the daily limit with declines; STORE -> SALE by token_id; while DynamoDB loses answers, answers
    5xx, throttles and resets. Then: Σ refund records = refunded = told, the credit counter = Σ approved
    credits, RSAPI statuses agree, one record per key, only documented answers."""
    lc, violations = lifecycle_under_faults(stack, "mixed", rounds=2, workers=4)
    summary = lc.summary(violations)
    print(json.dumps(summary))
    assert stack.proxy.injected() > 0
    assert not any(violations.values()), (f"{lc.name}: invariants broken\n{harness.failures(violations)}\n"
                                          f"{json.dumps(summary)}")
