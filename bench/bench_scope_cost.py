"""What an API key's checks cost per QSAPI call, beside the account's access key, in the same run (issue 31).

``python -m bench.bench_scope_cost``. One merchant account on an in-process moto (botocore clients, as
:func:`bench.common.in_process_platform`), an API key of ``pcx:payments:create`` (Basic) on it, ``ROUNDS`` rounds
after one warm-up round (the account record and the unwrapped secrets are then cached, as in a warm Lambda), each:

* ``authenticate: access key (before)``: :func:`vaultcore.gateway.accounts.authenticate`, what QSAPI called
  before API keys;
* ``authenticate: access key``: :func:`vaultcore.apikeys.gateway.authenticate` with the account's access key (what
  QSAPI calls now: the added work is a prefix test);
* ``scope check``: the scope test alone (:func:`vaultcore.apikeys.catalog.grants` over the SALE's scopes);
* ``authenticate: API key``: the same with ``api_<id>:<secret>`` and the SALE's scope (the key read, the secret's
  constant-time comparison, the state, the account, the scope);
* ``SALE: access key`` / ``SALE: API key``: a whole card SALE through the GatewayFunction handler.

Printed per operation: ``aws_calls`` (per call, by operation), ``cpu_ms`` (process CPU time of the call, median;
the access-key checks timed over ``REPEAT`` calls each) and ``cpu_ms_p90``. In-process moto serves each AWS call
on the bench's own CPU, so an AWS call here costs CPU time that in Lambda is a network round trip (a DynamoDB
GetItem: single-digit milliseconds of wait): the key path's figure is mostly the key's GetItem.
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import time
from collections import Counter
from typing import Any

ROUNDS = 40
REPEAT = 200
OPERATIONS = ("authenticate: access key (before)", "authenticate: access key", "scope check",
              "authenticate: API key", "SALE: access key", "SALE: API key")
_REPEATED = ("authenticate: access key", "scope check")


def run() -> dict[str, Any]:
    from bench.common import in_process_platform, percentile

    with in_process_platform() as platform:
        from tests.aws_calls import AwsCalls
        from tests.helpers import admin, call
        from vaultcore import clock
        from vaultcore.apikeys import gateway as gateway_keys
        from vaultcore.apikeys.catalog import grants
        from vaultcore.gateway import accounts

        status, account = admin(platform, "POST", "/admin/v1/accounts", {})
        assert status == 201, account
        account_id, accesskey = account["account_id"], account["api_accesskey"]
        import base64

        basic = "Basic " + base64.b64encode(f"{account_id}:{accesskey}".encode()).decode()
        status, _, key = call(platform, "ApiKeysFunction", "POST", f"/api/v4/accounts/{account_id}/api-keys",
                              {"label": "bench", "scopes": ["pcx:payments:create"], "methods": ["BASIC"]},
                              {"Authorization": basic}, resource="/api/v4/accounts/{account_id}/api-keys",
                              path_params={"account_id": account_id})
        assert status == 201, key
        as_key = f"{key['id']}:{key['secret']}"
        sale = {"transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
                "card_expiration": "1230", "card_verification": "123", "transaction_amount": "10.00",
                "currency": "USD", "payment_type": "ECOMMERCE"}
        scopes = gateway_keys.scopes_for(sale)
        held = frozenset({"pcx:iframe:*", "pcx:payments:create"})

        def qsapi(credential: str) -> None:
            status, _, body = call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8",
                                   json.dumps({"account_id": account_id, "api_accesskey": credential, **sale}),
                                   {"Content-Type": "application/json"}, resource="/api/qsapi/3.8")
            assert status == 200 and body["transaction_approved"] is True, body

        work = {
            "authenticate: access key (before)": lambda: accounts.authenticate(
                {"account_id": account_id, "api_accesskey": accesskey}, now=clock.now()),
            "authenticate: access key": lambda: gateway_keys.authenticate(
                {"account_id": account_id, "api_accesskey": accesskey, **sale}, now=clock.now(), scopes=scopes),
            "scope check": lambda: any(grants(held, scope) for scope in scopes),
            "authenticate: API key": lambda: gateway_keys.authenticate(
                {"account_id": account_id, "api_accesskey": as_key, **sale}, now=clock.now(), scopes=scopes),
            "SALE: access key": lambda: qsapi(accesskey),
            "SALE: API key": lambda: qsapi(as_key),
        }
        calls = AwsCalls()
        per_op: dict[str, Counter[str]] = {name: Counter() for name in OPERATIONS}
        cpu: dict[str, list[float]] = {name: [] for name in OPERATIONS}
        with calls, contextlib.redirect_stdout(io.StringIO()):  # the handlers' metric lines
            for n in range(ROUNDS + 1):
                for name in OPERATIONS:  # interleaved: the same machine state for both paths
                    # an access-key check takes microseconds: timed over REPEAT calls, the figure per call
                    repeat = REPEAT if name.startswith(_REPEATED) else 1
                    calls.reset()
                    started = time.process_time()
                    for _ in range(repeat):
                        work[name]()
                    spent = (time.process_time() - started) * 1000 / repeat
                    if n:  # the first round warms the caches
                        cpu[name].append(spent)
                        per_op[name].update({op: k / repeat for op, k in calls.by_operation.items()})
    out: dict[str, Any] = {}
    for name in OPERATIONS:
        ops = {op: round(k / ROUNDS, 2) for op, k in sorted(per_op[name].items())}
        out[name] = {"aws_calls": ops, "aws_calls_total": round(sum(ops.values()), 2),
                     "cpu_ms": round(statistics.median(cpu[name]), 3), "cpu_ms_p90": percentile(cpu[name], 0.9)}
    return out


def main() -> dict[str, Any]:
    result = run()
    print(json.dumps({"bench_scope_cost": result, "rounds": ROUNDS}, indent=2))
    return result


if __name__ == "__main__":
    main()
