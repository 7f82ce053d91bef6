"""What the token use policy (issue 27) costs per detokenize and per SALE, beside main before it.

``python -m bench.bench_policy_cost``. A tokenization partner (HMAC, detokenize permission) and its merchant
account with the payment iFrame, through the handlers and the AWS client Lambda uses, against a moto server in
its own process; ``ROUNDS`` times each (after one warm-up round), per round:

* ``detokenize (API)``: ``POST /api/tokenization/detokenize`` of a partner tokenization (two values);
* ``SALE etoken=``: an iFrame capture charged with ``etoken`` + ``custom_id``;
* ``SALE bfid=``: an iFrame capture (read once by the partner first) charged with ``bfid``;
* ``SALE detokenize-only``: that capture's card tokens paid again with ``bfid`` by its account;
* ``SALE keyed``: a card SALE the gateway auto-tokenizes (a gateway capture: its bfid is bound to the account,
  version 5 now);
* ``SALE detokenize-only (gateway capture)``: that capture's card tokens paid again by its account (the bound
  bfid's owner tag is checked: two HMACs and an HKDF, no AWS call).

Printed per operation, for this tree and for ``PREVIOUS_COMMIT`` (the same code in a fresh interpreter with that
commit's layer; the captures, tokenizations and reads are set up outside the measured call): ``aws_calls`` per
operation, ``write_units`` / ``read_units`` (as :mod:`bench.bench_lifecycle_cost` counts them) and
``cpu_ms`` (process CPU time of the call, the median).
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.bench_lifecycle_cost import _previous_tree, _units, compare, start_platform
from bench.common import ROOT

PREVIOUS_COMMIT = subprocess.run(["git", "log", "--format=%h", "-1", "--grep", "^Merge branch 'i29-throttle'$"],
                                 cwd=ROOT, capture_output=True, text=True).stdout.strip() or "e6df5e0"
ROUNDS = 20
OPERATIONS = ("detokenize (API)", "SALE etoken=", "SALE bfid=", "SALE detokenize-only", "SALE keyed",
              "SALE detokenize-only (gateway capture)")
HELPERS = ("tests/integration/__init__.py", "tests/integration/test_iframe.py", "tests/integration/test_token_api.py")


def measure(layer: str, endpoint: str) -> dict:
    """Runs in a fresh interpreter: ``python bench/bench_policy_cost.py --measure <layer> <endpoint>``."""
    platform = start_platform(layer, endpoint)
    from tests.aws_calls import AwsCalls
    from tests.integration.test_iframe import CARD, Iframe
    from tests.integration.test_token_api import _partner, _values, post, tokenize
    from vaultcore.gateway import store
    from vaultcore.store.aws import client

    partner = _partner(platform, permission=True)
    shop = Iframe(platform, partner["partnerId"], options={"tokenization": True})
    shop.configure()
    calls = AwsCalls()
    sent: list[tuple[str, dict[str, Any]]] = []
    client("dynamodb").meta.events.register("before-call", lambda model, params, **_: sent.append(
        (model.name, dict(params))), unique_id="bench-policy-cost")
    per_op: dict[str, Counter[str]] = {name: Counter() for name in OPERATIONS}
    units: dict[str, list[float]] = {name: [0.0, 0.0] for name in OPERATIONS}
    cpu: dict[str, list[float]] = {name: [] for name in OPERATIONS}

    def measured(name: str | None, call: Any, *args: Any, **kwargs: Any) -> Any:
        calls.reset()
        sent.clear()
        started = time.process_time()
        out = call(*args, **kwargs)
        if name is not None:
            cpu[name].append((time.process_time() - started) * 1000)
            per_op[name].update(calls.by_operation)
            w, r = _units(sent)
            units[name][0] += w
            units[name][1] += r
        return out

    def capture(custom_id: str) -> str:
        status, result = shop.submit(shop.instance(customId=custom_id)["bearerToken"], paymentMethod="CARD",
                                     cardNumber=CARD, cardExpiration="12/30", cardCvv="123")
        assert status == 200, result
        return result["eToken"]

    with calls:
        for n in range(ROUNDS + 1):
            label = (lambda op: op) if n else (lambda op: None)  # the first round warms the caches
            answer = tokenize(platform, partner)
            pairs = [{"name": k, "value": v} for k, v in _values(answer).items()]
            status, _, clear = measured(label("detokenize (API)"), post, platform, partner,
                                        "/api/tokenization/detokenize", {"bfid": answer["bfid"], "values": pairs})
            assert status == 200, clear
            etoken = capture(f"e-{n}")
            sale = measured(label("SALE etoken="), shop.pay, etoken=etoken, custom_id=f"e-{n}")
            assert sale["transaction_approved"] is True, sale
            etoken = capture(f"b-{n}")
            status, _, read = post(platform, partner, "/api/tokenization/read", {"bfid": etoken})
            assert status == 200, read
            tokens = {k: v for k, v in _values(read).items() if k != "vault_token_card_verification"}
            sale = measured(label("SALE bfid="), shop.pay, bfid=etoken)
            assert sale["transaction_approved"] is True, sale
            sale = measured(label("SALE detokenize-only"), shop.pay, bfid=etoken, **tokens)
            assert sale["transaction_approved"] is True, sale
            sale = measured(label("SALE keyed"), shop.pay, card_number=CARD, card_expiration="1230")
            assert sale["transaction_approved"] is True, sale
            item = store.get_transaction(shop.account_id, sale["transaction_id"], consistent=True)
            assert item is not None and item.get("bfid"), item
            card_tokens = {k: str(item[k]) for k in ("vault_token_card_number", "vault_token_card_expiration")}
            sale = measured(label("SALE detokenize-only (gateway capture)"), shop.pay, bfid=item["bfid"],
                            **card_tokens)
            assert sale["transaction_approved"] is True, sale
    out: dict[str, Any] = {}
    for name in OPERATIONS:
        ops = {op.split(".", 1)[1]: round(k / ROUNDS, 2) for op, k in sorted(per_op[name].items())}
        out[name] = {"aws_calls": ops, "aws_calls_total": round(sum(ops.values()), 2),
                     "write_units": round(units[name][0] / ROUNDS, 2), "read_units": round(units[name][1] / ROUNDS, 2),
                     "cpu_ms": round(statistics.median(cpu[name]), 2)}
    return out


def main() -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-policy-cost-") as tmp:
        previous = _previous_tree(Path(tmp), PREVIOUS_COMMIT, HELPERS)
        # the measuring helpers as they are now (the previous commit's bench module predates them)
        shutil.copy(ROOT / "bench" / "bench_lifecycle_cost.py", Path(tmp) / "bench" / "bench_lifecycle_cost.py")
        result = compare(__file__, previous, OPERATIONS)
    print(json.dumps({"bench_policy_cost": result, "previous_commit": PREVIOUS_COMMIT, "rounds": ROUNDS}, indent=2))
    return result


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
    else:
        main()
