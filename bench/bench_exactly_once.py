"""What the retry-aware writes of issue 18 cost a SALE, beside the code before them, in the same run.

A warm SALE with card data, an Idempotency-Key and a postback URL, through the gateway handler and the AWS
JSON-protocol client Lambda uses, against a moto server in its own process (so this process's CPU time is the
platform's alone). Printed per SALE for both versions of the shared layer:

* ``aws_calls``: the AWS API calls by operation (counted by the clients' ``before-call`` hooks);
* ``cpu_ms``: this process's CPU time (user + system) per SALE, median of batches;
* ``wall_ms``: the handler's wall time per SALE, median.

The previous figures come from the layer as it was before issue 18 (``PREVIOUS_COMMIT``), extracted with
``git archive`` into a temporary directory and measured by the same code in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT

PREVIOUS_COMMIT = "b31e8f4"  # main before issue 18's retry-aware writes
SALES = 150
WARM_UP = 20


def _previous_layer(directory: Path) -> Path:
    archive = directory / "layer.tar"
    with open(archive, "wb") as out:
        # the layer and what loads it (functions, template, runner, test helpers) as they were at that commit
        subprocess.run(["git", "archive", PREVIOUS_COMMIT, "layers/shared/python", "functions", "local", "template.yaml",
                        "bench/__init__.py", "bench/common.py", "tests/__init__.py", "tests/aws_calls.py",
                        "tests/helpers.py", "tests/conftest.py"], cwd=ROOT, check=True, stdout=out)
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")
    return directory / "layers" / "shared" / "python"


def measure(layer: str, endpoint: str) -> dict:
    """Runs in a fresh interpreter: ``python -m bench.bench_exactly_once --measure <layer> <endpoint>``."""
    sys.path.insert(0, layer)
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                       "LOG_LEVEL": "WARNING", "METRICS_DISABLED": "1"})
    os.environ.pop("VAULT_AWS_SDK", None)
    import vaultcore
    from local.runner import Platform
    from tests.aws_calls import AwsCalls
    from tests.helpers import admin, api_event

    assert str(Path(vaultcore.__file__).resolve()).startswith(str(Path(layer).resolve())), vaultcore.__file__
    platform = Platform("cert")
    platform.create_resources()
    _, account = admin(platform, "POST", "/admin/v1/accounts",
                       {"options": {}, "postback_url": "http://127.0.0.1:9/postbacks"})  # queued, never POSTed here
    sale = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
            "transaction_type": "SALE", "tender_type": "CARD", "card_number": "4242424242424242",
            "card_expiration": "1230", "card_verification": "123", "transaction_amount": "10.00", "zip": "12345"}
    walls: list[float] = []
    cpus: list[float] = []
    calls = AwsCalls()
    with calls:
        for i in range(WARM_UP + SALES):
            event = api_event("POST", "/api/qsapi/3.8", sale, {"Idempotency-Key": f"bench-{i}"})
            if i == WARM_UP:
                calls.reset()
            cpu, wall = time.process_time(), time.perf_counter()
            out = platform.invoke("GatewayFunction", event)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert out["statusCode"] == 200 and json.loads(out["body"])["transaction_approved"], out["body"]
            if i >= WARM_UP:
                walls.append(wall * 1000)
                cpus.append(cpu * 1000)
    per_sale = {op: round(n / SALES, 2) for op, n in sorted(calls.by_operation.items())}
    # CPU time has a 1-10 ms tick on some kernels: the mean of many SALEs, not the median of one each
    return {"aws_calls_per_sale": per_sale, "aws_calls_total": round(sum(per_sale.values()), 2),
            "cpu_ms_mean": round(statistics.fmean(cpus), 3), "wall_ms_median": round(statistics.median(walls), 3)}


def _child(layer: Path, endpoint: str) -> dict:
    """This file's measure() in a fresh interpreter, in the tree ``layer`` belongs to (its functions, template,
    runner and helpers), so that each version runs with the code it was written with."""
    tree = layer.parents[2]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--measure", str(layer), endpoint],
                         cwd=tree, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> dict:
    from tests.faults.moto_server import MotoProcess

    with tempfile.TemporaryDirectory(prefix="bench-exactly-once-") as tmp:
        previous = _previous_layer(Path(tmp))
        result: dict[str, Any] = {"sale_with_idempotency_key_and_postback": {}}
        for name, layer in (("retry_aware", ROOT / "layers" / "shared" / "python"), ("previous", previous)):
            server = MotoProcess()  # a fresh moto (with DynamoDB's atomicity) per version: equal table sizes
            try:
                result["sale_with_idempotency_key_and_postback"][name] = _child(layer, server.url)
            finally:
                server.stop()
    result["previous_commit"] = PREVIOUS_COMMIT
    result["sales"] = SALES
    print(json.dumps({"bench_exactly_once": result}, indent=2))
    return result


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
    else:
        main()
