"""What each lifecycle operation costs in AWS calls and DynamoDB capacity units, beside main before issue 28.

``python -m bench.bench_lifecycle_cost``. Each operation is sent with an Idempotency-Key by an account with a
postback URL and credits on, through the gateway handler and the AWS JSON-protocol client Lambda uses, against
a moto server in its own process; ``ROUNDS`` times each, in this order per round: SALE, AUTHORIZATION,
partial CAPTURE, partial REFUND (of the capture), full REFUND of an unsettled SALE (a VOID), REVERSAL of an
AUTHORIZATION, approved CREDIT, declined CREDIT. Printed per operation, for this tree and for
``PREVIOUS_COMMIT`` (the same code, measured in a fresh interpreter with that commit's layer):

* ``aws_calls``: the AWS API calls by operation (the clients' ``before-call`` hooks), per operation;
* ``write_units`` / ``read_units``: DynamoDB capacity units as on-demand billing counts them for items under
  1 KB (what these are): 1 per PutItem / UpdateItem / DeleteItem, 2 per item of a TransactWriteItems, 1 per
  consistent GetItem (0.5 eventually consistent), 1 per Query page.

Then ``sale_with_postback``: a SALE with an Idempotency-Key and a postback, *delivery included* (the gateway,
the stream relay where there is one, and the postback function's delivery to a receiver that answers 200), its
DynamoDB write units counted from the real item sizes by table and index (:mod:`bench.write_units`: 1 KB per unit,
transactions twice, index writes too), beside ``DELIVERY_PREVIOUS_COMMIT`` (the constant-key outbox index).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import ROOT

PREVIOUS_COMMIT = "a4e45be"  # main before issue 28
DELIVERY_PREVIOUS_COMMIT = "49c4310"  # the outbox on a constant-key index, swept (before the stream relay)
DELIVERY_ROUNDS = 10
ROUNDS = 20
OPERATIONS = ("SALE", "AUTHORIZATION", "CAPTURE", "REFUND partial", "REFUND full (VOID)", "REVERSAL",
              "CREDIT approved", "CREDIT declined")


def _previous_tree(directory: Path, commit: str = PREVIOUS_COMMIT, extra: tuple[str, ...] = ()) -> Path:
    """``commit``'s layer, functions, runner and the test helpers a measurement imports, extracted in ``directory``."""
    archive = directory / "tree.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "archive", commit, "layers/shared/python", "functions", "local", "template.yaml",
                        "bench/__init__.py", "bench/common.py", "tests/__init__.py", "tests/aws_calls.py",
                        "tests/helpers.py", "tests/conftest.py", "tests/postback_receiver.py", *extra], cwd=ROOT,
                       check=True, stdout=out)
    with tarfile.open(archive) as tar:
        tar.extractall(directory, filter="data")
    return directory / "layers" / "shared" / "python"


def _units(params: list[tuple[str, dict[str, Any]]]) -> tuple[float, float]:
    writes = reads = 0.0
    for op, p in params:
        if op in ("PutItem", "UpdateItem", "DeleteItem"):
            writes += 1
        elif op == "TransactWriteItems":
            writes += 2 * len(p.get("TransactItems", []))
        elif op == "GetItem":
            reads += 1 if p.get("ConsistentRead") else 0.5
        elif op == "Query":
            reads += 1
    return writes, reads


def start_platform(layer: str, endpoint: str) -> Any:
    """In a measuring interpreter: ``layer`` first on the path, the AWS endpoint set, a platform with its resources."""
    sys.path.insert(0, layer)
    os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
                       "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
                       "LOG_LEVEL": "WARNING", "METRICS_DISABLED": "1"})
    os.environ.pop("VAULT_AWS_SDK", None)
    import vaultcore
    from local.runner import Platform

    assert str(Path(vaultcore.__file__).resolve()).startswith(str(Path(layer).resolve())), vaultcore.__file__
    platform = Platform("cert")
    platform.create_resources()
    return platform


def measure(layer: str, endpoint: str) -> dict:
    """Runs in a fresh interpreter: ``python bench/bench_lifecycle_cost.py --measure <layer> <endpoint>``."""
    platform = start_platform(layer, endpoint)
    from tests.aws_calls import AwsCalls
    from tests.helpers import admin, api_event

    _, account = admin(platform, "POST", "/admin/v1/accounts",
                       {"options": {"credit": True}, "postback_url": "http://127.0.0.1:9/postbacks"})
    creds = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
    card = {"tender_type": "CARD", "card_number": "4242424242424242", "card_expiration": "1230"}
    from vaultcore.store.aws import client

    calls = AwsCalls()
    sent: list[tuple[str, dict[str, Any]]] = []  # (DynamoDB operation, its parameters), from the before-call hook

    def record_params(model: Any, params: dict[str, Any], **_kwargs: Any) -> None:
        sent.append((model.name, dict(params)))

    client("dynamodb").meta.events.register("before-call", record_params, unique_id="bench-lifecycle-cost")
    per_op: dict[str, Counter[str]] = {name: Counter() for name in OPERATIONS}
    units: dict[str, list[float]] = {name: [0.0, 0.0] for name in OPERATIONS}
    counter = iter(range(10**9))

    def send(name: str | None, **variables: Any) -> dict:
        event = api_event("POST", "/api/qsapi/3.8", {**creds, **variables},
                          {"Idempotency-Key": f"cost-{next(counter)}"})
        calls.reset()
        sent.clear()
        out = platform.invoke("GatewayFunction", event)
        body = json.loads(out["body"])
        assert out["statusCode"] == 200, body
        if name is not None:
            per_op[name].update(calls.by_operation)
            w, r = _units(sent)
            units[name][0] += w
            units[name][1] += r
        return body

    with calls:
        for n in range(ROUNDS + 1):
            measured = n > 0  # the first round warms the container's caches
            label = (lambda op: op) if measured else (lambda op: None)
            send(label("SALE"), transaction_type="SALE", transaction_amount="10.00", **card)
            auth = send(label("AUTHORIZATION"), transaction_type="AUTHORIZATION", transaction_amount="20.00", **card)
            capture = send(label("CAPTURE"), transaction_type="CAPTURE", token_id=auth["transaction_id"],
                           transaction_amount="15.00")
            send(label("REFUND partial"), transaction_type="REFUND", token_id=capture["transaction_id"],
                 transaction_amount="5.00")
            sale = send(None, transaction_type="SALE", transaction_amount="12.00", **card)
            void = send(label("REFUND full (VOID)"), transaction_type="REFUND", token_id=sale["transaction_id"],
                        transaction_amount="12.00")
            assert void["authorization_message"] == "VOID", void
            auth2 = send(None, transaction_type="AUTHORIZATION", transaction_amount="9.00", **card)
            send(label("REVERSAL"), transaction_type="REVERSAL", token_id=auth2["transaction_id"])
            credit = send(label("CREDIT approved"), transaction_type="CREDIT", transaction_amount="1.00", **card)
            assert credit["transaction_approved"], credit
            declined = send(label("CREDIT declined"), transaction_type="CREDIT", transaction_amount="1.00",
                            **{**card, "card_number": "4000000000000002"})
            assert not declined["transaction_approved"], declined
    out: dict[str, Any] = {}
    for name in OPERATIONS:
        ops = {op.split(".", 1)[1]: round(k / ROUNDS, 2) for op, k in sorted(per_op[name].items())}
        out[name] = {"aws_calls": ops, "aws_calls_total": round(sum(ops.values()), 2),
                     "write_units": round(units[name][0] / ROUNDS, 2), "read_units": round(units[name][1] / ROUNDS, 2)}
    return out


def measure_delivery(layer: str, endpoint: str) -> dict:
    """Runs in a fresh interpreter (``--measure-delivery``): keyed SALEs with a postback, each delivered (gateway,
    stream relay if the tree has one, postback function); the write units by table and index, per SALE."""
    platform = start_platform(layer, endpoint)
    import boto3

    from bench.write_units import WriteMeter
    from tests.helpers import admin, api_event
    from tests.postback_receiver import Receiver
    from vaultcore.store.aws import client

    receiver = Receiver()
    # TOKEN DATA IN POSTBACK on: the largest postback message (the bfid and the token fields in it)
    _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "Cost partner", "apiSecurity": "hmac"})
    _, account = admin(platform, "POST", "/admin/v1/accounts", {
        "partnerId": partner["partnerId"], "options": {"tokenization": True, "token_data_in_postback": True},
        "postback_url": receiver.url + "/ok"})
    creds = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
    reader = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1")
    sqs = boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1")
    meter = WriteMeter(client("dynamodb"), reader)
    totals: dict[str, float] = {}
    relay = getattr(platform, "pump_streams", None)  # the stream relay (None: the gateway queued it itself)
    for n in range(DELIVERY_ROUNDS + 1):
        meter.reset()
        event = api_event("POST", "/api/qsapi/3.8", {**creds, "transaction_type": "SALE", "transaction_amount": "10.00",
                                                     "tender_type": "CARD", "card_number": "4242424242424242",
                                                     "card_expiration": "1230"}, {"Idempotency-Key": f"cost-pb-{n}"})
        assert platform.invoke("GatewayFunction", event)["statusCode"] == 200
        if relay is not None:
            relay()
        messages = sqs.receive_message(QueueUrl=platform.refs["PostbackFifoQueue"], MaxNumberOfMessages=10,
                                       AttributeNames=["All"]).get("Messages", [])
        assert len(messages) == 1, messages
        records = [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                    "attributes": m["Attributes"], "messageAttributes": {}, "eventSource": "aws:sqs",
                    "awsRegion": "us-east-1"} for m in messages]
        assert platform.invoke("PostbackFunction", {"Records": records}) == {"batchItemFailures": []}
        for m in messages:  # what the event source mapping does with an acknowledged record
            sqs.delete_message(QueueUrl=platform.refs["PostbackFifoQueue"], ReceiptHandle=m["ReceiptHandle"])
        if n > 0:  # the first round warms the container's caches
            for table, units in meter.units().items():
                totals[table] = totals.get(table, 0.0) + units
    receiver.close()
    per_sale = {table: round(units / DELIVERY_ROUNDS, 2) for table, units in sorted(totals.items())}
    return {"write_units_by_table": per_sale, "write_units": round(sum(per_sale.values()), 2),
            "largest_item_bytes": dict(sorted(meter.largest.items()))}


def _child(layer: Path, endpoint: str, script: str = __file__, flag: str = "--measure") -> dict:
    """``script <flag> <layer> <endpoint>`` in a fresh interpreter in ``layer``'s tree: its last line, as JSON."""
    tree = layer.parents[2]
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, str(Path(script).resolve()), flag, str(layer), endpoint],
                         cwd=tree, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(script: str, previous: Path, operations: tuple[str, ...]) -> dict:
    """``script``'s measurement with this tree's layer and with ``previous``, each against a fresh moto server
    (equal table sizes): ``{operation: {"now": ..., "previous": ...}}``."""
    from tests.faults.moto_server import MotoProcess

    figures: dict[str, dict] = {}
    for name, layer in (("now", ROOT / "layers" / "shared" / "python"), ("previous", previous)):
        server = MotoProcess()
        try:
            figures[name] = _child(layer, server.url, script)
        finally:
            server.stop()
    return {op: {"now": figures["now"][op], "previous": figures["previous"][op]} for op in operations}


def compare_delivery(previous: Path) -> dict:
    """:func:`measure_delivery` with this tree's layer and with ``previous``'s, each against a fresh moto."""
    import shutil

    from tests.faults.moto_server import MotoProcess

    # the meter is this tree's, in both measurements
    shutil.copy(ROOT / "bench" / "write_units.py", previous.parents[2] / "bench" / "write_units.py")
    figures: dict[str, dict] = {}
    for name, layer in (("now", ROOT / "layers" / "shared" / "python"), ("previous", previous)):
        server = MotoProcess()
        try:
            figures[name] = _child(layer, server.url, __file__, "--measure-delivery")
        finally:
            server.stop()
    return figures


def main() -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-lifecycle-cost-") as tmp:
        result = compare(__file__, _previous_tree(Path(tmp)), OPERATIONS)
    with tempfile.TemporaryDirectory(prefix="bench-lifecycle-cost-delivery-") as tmp:
        delivery = compare_delivery(_previous_tree(Path(tmp), DELIVERY_PREVIOUS_COMMIT))
    print(json.dumps({"bench_lifecycle_cost": result, "previous_commit": PREVIOUS_COMMIT, "rounds": ROUNDS,
                      "sale_with_postback": delivery, "sale_with_postback_previous_commit": DELIVERY_PREVIOUS_COMMIT,
                      "sale_with_postback_rounds": DELIVERY_ROUNDS}, indent=2))
    return result


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--measure":
        print(json.dumps(measure(sys.argv[2], sys.argv[3])))
    elif len(sys.argv) == 4 and sys.argv[1] == "--measure-delivery":
        print(json.dumps(measure_delivery(sys.argv[2], sys.argv[3])))
    else:
        main()
