"""What one AWS call costs the function: vaultcore's JSON-protocol client beside botocore, in the same run.

* Warm: the client's own CPU time per call (``time.process_time`` of this process: signing, serialization, the
  HTTP exchange's own work, parsing; the server's time is another process's) and the wall time, for the calls the
  request path makes (DynamoDB GetItem / PutItem / UpdateItem, KMS Decrypt, SQS SendMessage), each client
  against the same moto server (a subprocess on loopback), interleaved call by call.
* Cold: in fresh interpreters (this venv's, with .pyc), importing the client's module, creating a DynamoDB and a
  KMS client, and the first GetItem: what a function's init and first request pay for the SDK.

Prints JSON. The figures are relative: moto answers in ~2 ms where DynamoDB answers in a few; what matters is the
client's own CPU, which Lambda bills at the function's memory size.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from typing import Any

from bench.common import INTERPRETER, LAYER

CALLS = 200
COLD_RUNS = 7

_COLD_PROBE = """
import os, sys, time
t = time.perf_counter()
kind, endpoint = sys.argv[1], sys.argv[2]
if kind == "json":
    from vaultcore.store.aws_json import JsonServiceClient, EnvironmentCredentials
    make = lambda s: JsonServiceClient(s, region="us-east-1", endpoint_url=endpoint, credentials=EnvironmentCredentials())
else:
    import botocore.session
    session = botocore.session.get_session()
    make = lambda s: session.create_client(s, endpoint_url=endpoint, region_name="us-east-1")
ddb, kms = make("dynamodb"), make("kms")
created = time.perf_counter()
ddb.get_item(TableName="bench", Key={"pk": {"S": "k0"}})
done = time.perf_counter()
print((created - t) * 1000, (done - created) * 1000)
"""


def _moto_server() -> tuple[subprocess.Popen, str]:
    from local.runner import _free_port

    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1).close()
            return server, endpoint
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("moto server did not start") from None
            time.sleep(0.1)


def _clients(endpoint: str) -> dict[str, dict[str, Any]]:
    import botocore.session

    from vaultcore.store.aws_json import EnvironmentCredentials, JsonServiceClient

    session = botocore.session.get_session()
    out: dict[str, dict[str, Any]] = {"json": {}, "botocore": {}}
    for service in ("dynamodb", "kms", "sqs"):
        out["json"][service] = JsonServiceClient(service, region="us-east-1", endpoint_url=endpoint,
                                                 credentials=EnvironmentCredentials())
        out["botocore"][service] = session.create_client(service, endpoint_url=endpoint, region_name="us-east-1")
    return out


def _operations(clients: dict[str, Any], setup: dict[str, Any]) -> dict[str, Any]:
    ddb, kms, sqs = clients["dynamodb"], clients["kms"], clients["sqs"]
    counter = setup["counter"]  # shared by both clients: every PutItem writes a new item
    return {
        "dynamodb.GetItem": lambda: ddb.get_item(TableName="bench", Key={"pk": {"S": "k0"}}, ConsistentRead=True),
        "dynamodb.PutItem": lambda: ddb.put_item(
            TableName="bench", Item={"pk": {"S": f"n{next(counter)}"}, "b": {"B": b"\x00" * 32}},
            ConditionExpression="attribute_not_exists(pk)"),
        "dynamodb.UpdateItem": lambda: ddb.update_item(
            TableName="bench", Key={"pk": {"S": "k0"}}, UpdateExpression="ADD n :one",
            ExpressionAttributeValues={":one": {"N": "1"}}, ReturnValues="UPDATED_NEW"),
        "kms.Decrypt": lambda: kms.decrypt(CiphertextBlob=setup["blob"], EncryptionContext={"t": "bench"}),
        "sqs.SendMessage": lambda: sqs.send_message(QueueUrl=setup["queue"], MessageBody="{}"),
    }


def warm(endpoint: str) -> dict[str, Any]:
    clients = _clients(endpoint)
    ddb, kms, sqs = (clients["botocore"][s] for s in ("dynamodb", "kms", "sqs"))
    ddb.create_table(TableName="bench", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
                     BillingMode="PAY_PER_REQUEST")
    ddb.put_item(TableName="bench", Item={"pk": {"S": "k0"}, "blob": {"B": b"\x01" * 64}})
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    setup = {"counter": iter(range(10**9)), "blob": kms.generate_data_key(KeyId=key, KeySpec="AES_256", EncryptionContext={"t": "bench"})[
        "CiphertextBlob"], "queue": sqs.create_queue(QueueName="bench")["QueueUrl"]}
    ops = {kind: _operations(clients[kind], setup) for kind in clients}
    result: dict[str, Any] = {}
    for name in ops["json"]:
        samples: dict[str, list[tuple[float, float]]] = {"json": [], "botocore": []}
        for kind in ("json", "botocore"):
            ops[kind][name]()  # the first call of each client opens its connection
        for _ in range(CALLS):
            for kind in ("json", "botocore"):  # interleaved: both see the same server and host load
                wall, cpu = time.perf_counter(), time.process_time()
                ops[kind][name]()
                samples[kind].append(((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000))
        row: dict[str, Any] = {}
        for kind, values in samples.items():
            row[kind] = {"cpu_ms": round(statistics.mean(c for _, c in values), 3),
                         "wall_ms_median": round(statistics.median(w for w, _ in values), 3)}
        row["cpu_ratio_json_to_botocore"] = round(row["json"]["cpu_ms"] / row["botocore"]["cpu_ms"], 3)
        result[name] = row
    return result


def cold(endpoint: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(LAYER), "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(LAYER)], check=True, stdout=subprocess.DEVNULL)
    samples: dict[str, list[tuple[float, float]]] = {"json": [], "botocore": []}
    for _ in range(COLD_RUNS):
        for kind in samples:
            out = subprocess.run([sys.executable, "-c", _COLD_PROBE, kind, endpoint], env=env, capture_output=True,
                                 text=True, check=True)
            created, first = (float(x) for x in out.stdout.split())
            samples[kind].append((created, first))
    result: dict[str, Any] = {}
    for kind, values in samples.items():
        result[kind] = {"import_and_two_clients_ms": round(statistics.median(c for c, _ in values), 1),
                        "first_call_ms": round(statistics.median(f for _, f in values), 1)}
    total = {k: v["import_and_two_clients_ms"] + v["first_call_ms"] for k, v in result.items()}
    result["total_ratio_json_to_botocore"] = round(total["json"] / total["botocore"], 3)
    return result


def main() -> dict[str, Any]:
    if str(LAYER) not in sys.path:
        sys.path.insert(0, str(LAYER))
    saved = dict(os.environ)
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"})
    server, endpoint = _moto_server()
    try:
        report = {"aws_client": {"interpreter": INTERPRETER, "calls_per_operation": CALLS,
                                 "warm_per_call": warm(endpoint), "cold_fresh_process": cold(endpoint)}}
    finally:
        server.terminate()
        server.wait(timeout=10)
        os.environ.clear()
        os.environ.update(saved)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
