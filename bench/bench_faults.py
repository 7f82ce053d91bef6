"""Exactly once under faults, the long form (issue 18): ``python -m bench.bench_faults``.

The scenarios of ``tests/e2e/test_faults_e2e.py`` with longer bursts, on one stack (tests/faults/harness.py: a
moto server process, the fault proxy, a postback receiver, the runner with ``--aws-endpoint``):

* ``ddb-lost-sale``: 30 s of concurrent keyed SALEs while 30% of DynamoDB writes lose their answer (applied),
  then faults off and every key replayed once;
* ``sqs-lost-relay``: postbacks held in the Deliveries stream (the stream relay's SendMessageBatch reset), then
  half its answers lost while the relay's retries queue them;
* ``sigkill-relay`` / ``sigkill-relay-applied``: the runner SIGKILLed while its stream relay holds records it
  read and has not queued (the send dropped, or applied with its answer lost); the restarted runner reads the
  stream again from TRIM_HORIZON;
* ``sigkill``: the runner SIGKILLed in the middle of a 10 s SALE burst, restarted onto the same data, every key
  replayed;
* ``lifecycle-<mode>`` (issue 28, tests/faults/lifecycle.py): the lifecycle flows (capture and partial refunds,
  a full refund racing a reversal, credits to the daily limit with declines, store then pay) under each of the
  six fault modes -- ``lost``, ``5xx``, ``throttle``, ``reset``, ``mixed``, ``lost60`` -- reconciled against the
  tables and RSAPI (refunds, credits, statuses, one record per key, documented answers);
* issue 28 (``tests/faults/delivery_scenarios.py``): ``delivery-copies`` (20 keyed SALEs with half the
  SendMessage answers lost and every delivery-log write after a POST failing: one 2xx per delivery id),
  ``read-lost-claim`` (50 bfids read once each while 60% of UpdateItem answers are lost: each keyed reader
  recovers its tokens, no rival reader gets them), ``rsapi-paging`` (the default range paged 2 s apart under
  Query 503s: no 803, every SALE listed once).

Printed per scenario as JSON: requests, approvals, double charges, unanswered approvals, false 1003s,
self-collisions, postbacks delivered once / twice or more / missing, the faults injected, and
``invariants_broken`` (the issue 28 scenarios add their own: ``reads_unrecovered``, ``reads_by_two_readers``,
``pages_refused``, ``pages_missing``, ...). Options:
``--seconds`` (the lost-answer burst), ``--commit <rev>`` (run against that commit's layer and functions),
``--lifecycle-rounds`` (rounds of the lifecycle flows per mode; 0 skips them).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT


def run(seconds: float = 30.0, commit: str | None = None, workers: int = 6, lifecycle_rounds: int = 6) -> dict:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.faults import delivery_scenarios, harness

    work = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    root = harness.previous_tree(commit, work / "platform") if commit else None
    stack = harness.Stack(work / "stack", root=root)
    results = []
    try:
        for name, scenario in (
            ("ddb-lost-sale", lambda: harness.lost_answers_gateway(stack, seconds, workers=workers, postback_wait=90)),
            ("sqs-lost-relay", lambda: harness.sqs_lost_while_relaying(stack, sales=40, lost_seconds=15,
                                                                       postback_wait=90)),
            ("sigkill-relay", lambda: harness.sigkill_between_stream_read_and_send(stack, sales=10,
                                                                                   postback_wait=90)),
            ("sigkill-relay-applied", lambda: harness.sigkill_between_stream_read_and_send(
                stack, sales=10, applied=True, postback_wait=90)),
            ("sigkill", lambda: harness.sigkill_mid_burst(stack, seconds=10, kill_after=5, workers=workers,
                                                          postback_wait=90)),
            # issue 28, placements 4, 7 and 8 (tests/faults/delivery_scenarios.py)
            ("delivery-copies", lambda: delivery_scenarios.delivery_copies_log_write_failing(stack, sales=20,
                                                                                            postback_wait=90)),
            ("read-lost-claim", lambda: delivery_scenarios.reads_with_lost_claim_answers(stack, bfids=50)),
            ("rsapi-paging", lambda: delivery_scenarios.paging_at_the_clients_pace(stack, sales=20, limit=3,
                                                                                  pace=2.0)),
        ):
            started = time.monotonic()
            try:
                sc, violations = scenario()
            except Exception as exc:  # one scenario's harness failure does not hide the others' figures
                results.append({"scenario": name, "error": f"{type(exc).__name__}: {exc}"[:500]})
                continue
            summary = sc.summary(violations)
            summary["seconds"] = round(time.monotonic() - started, 1)
            summary["invariants_broken"] = sorted(k for k, v in violations.items() if v)
            results.append(summary)
        results += _lifecycle(stack, lifecycle_rounds, workers)
    finally:
        stack.stop()
    return {"platform": commit or "HEAD", "burst_seconds": seconds, "scenarios": results}


def _lifecycle(stack, rounds: int, workers: int) -> list[dict]:
    """Issue 28: the lifecycle flows under each fault mode, reconciled."""
    from tests.faults.lifecycle import MODES, lifecycle_under_faults

    out: list[dict] = []
    for mode in MODES if rounds > 0 else ():
        started = time.monotonic()
        try:
            lc, violations = lifecycle_under_faults(stack, mode, rounds=rounds, workers=workers)
        except Exception as exc:  # one mode's harness failure does not hide the others' figures
            out.append({"scenario": f"lifecycle-{mode}", "error": f"{type(exc).__name__}: {exc}"[:500]})
            continue
        summary = lc.summary(violations)
        summary["seconds"] = round(time.monotonic() - started, 1)
        summary["invariants_broken"] = sorted(k for k, v in violations.items() if v)
        out.append(summary)
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--commit", default=None)
    parser.add_argument("--lifecycle-rounds", type=int, default=6)
    args = parser.parse_args(argv if argv is not None else [])
    result = run(args.seconds, args.commit, lifecycle_rounds=args.lifecycle_rounds)
    print(json.dumps({"faults": result}, indent=2), flush=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
