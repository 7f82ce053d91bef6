"""The no-Docker local runner (DESIGN.md §6): `make run`.

- starts moto in server mode on loopback (DynamoDB, SQS, KMS, Secrets Manager);
- creates every table, queue and key from the resources in template.yaml;
- serves every API route of the template, and the management API, on one loopback port by turning HTTP
  requests into API Gateway (REST, proxy) events for the handlers the template names;
- polls SQS for functions with SQS events as an event source mapping would (five batches at once, each filled
  for up to the batching window, partial batch failures, the function's timeout failing the whole batch,
  visibility timeout; the queue's redrive policy moves exhausted messages to the DLQ; FIFO queues, such as the
  postback queue, are created as the template declares them, with a ".fifo" name);
- seeds demo data and prints the URL and the demo credentials (also written to .local/demo.json).

It runs as the certification environment by default, and it is the only place where http and loopback egress
(proxy targets, postback URLs) are allowed (VAULT_ALLOW_LOCAL_EGRESS=1).
"""

from __future__ import annotations

import argparse
import base64
import errno
import hashlib
import importlib.util
import json
import os
import re
import signal
import socket
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from local.env_file import write_env_file
from local.template import (
    ACCOUNT,
    PSEUDO_PARAMETERS,
    REGION,
    ROOT,
    evaluate_conditions,
    function_directories,
    load_template,
    parameters_with_defaults,
    render,
    resolver,
)

if TYPE_CHECKING:
    from moto.server import ThreadedMotoServer
    from mypy_boto3_sqs.type_defs import DeleteMessageBatchRequestEntryTypeDef

SQS_CONCURRENT_BATCHES = 5  # batches of one SQS event source in flight at once (Lambda's initial concurrency)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rate_seconds(expression: str) -> float:
    """rate(N unit) of an EventBridge schedule; LOCAL_SCHEDULE_SECONDS shortens every period locally."""
    override = os.environ.get("LOCAL_SCHEDULE_SECONDS")
    if override:
        return float(override)
    m = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)", expression.strip())
    if not m:
        return 60.0
    return int(m.group(1)) * {"minute": 60, "hour": 3600, "day": 86400}[m.group(2).rstrip("s")]


class LambdaContext:
    def __init__(self, name: str, timeout: int) -> None:
        self.function_name = name
        self.aws_request_id = str(uuid.uuid4())
        self.memory_limit_in_mb = 1024
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        self._deadline = time.monotonic() + timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class Route:
    def __init__(self, method: str, path: str, function: str, api: str = "") -> None:
        self.method = method.upper()
        self.path = path
        self.function = function
        self.api = api  # the template's API resource (RestApiId), e.g. ManagementApi
        pattern = re.sub(r"\{(\w+)\+\}", r"(?P<\1>.+)", path)
        pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
        # API Gateway (REST) also routes the path with a trailing slash to a resource (/api/qsapi/3.8/).
        self.regex = re.compile("^" + (pattern.rstrip("/") or "") + "/?$")


class Platform:
    """Everything the runner starts; also used in-process by the end-to-end tests' helpers."""

    def __init__(self, environment: str = "cert", state_dir: Path | None = None,
                 env_overrides: dict[str, str] | None = None, max_receive_count: int | None = None) -> None:
        self.environment = environment
        self.env_overrides = env_overrides or {}
        self.max_receive_count = max_receive_count
        self.state_dir = state_dir or ROOT / ".local"
        self.template = load_template()
        self.params = parameters_with_defaults(self.template, {"Environment": environment})
        self.conditions = evaluate_conditions(self.template, self.params)
        self.resources = render(self.template, self.params)
        self.refs: dict[str, str] = {}
        self.attrs: dict[tuple[str, str], str] = {}
        self.routes: list[Route] = []
        self.modules: dict[str, ModuleType] = {}
        self.timeouts: dict[str, int] = {}
        self.sqs_sources: list[dict[str, Any]] = []
        self.stream_sources: list[Any] = []  # local.streams.StreamSource, one per Type: DynamoDB event
        self.queue_urls_by_arn: dict[str, str] = {}
        self.schedules: list[dict[str, Any]] = []
        self.moto: ThreadedMotoServer | None = None
        self.reuse_resources = False  # --aws-endpoint: create only what the endpoint does not hold yet
        self._stop = threading.Event()

    # ------------------------------------------------------------ AWS stand-ins
    def start_moto(self) -> str:
        import logging

        from moto.server import ThreadedMotoServer

        from local import moto_atomic

        moto_atomic.install()  # DynamoDB's per-item atomicity of conditional writes, which moto lacks
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's per-request access log is noise here

        port = _free_port()
        # Bind to loopback only (STYLE.md pitfall 6: ThreadedMotoServer binds 0.0.0.0 by default).
        self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
        self.moto.start()
        return self.use_endpoint(f"http://127.0.0.1:{port}", reuse_resources=False)

    def use_endpoint(self, endpoint: str, reuse_resources: bool = True) -> str:
        """AWS calls go to ``endpoint`` (moto's, or one given with --aws-endpoint) with dummy credentials. With
        ``reuse_resources``, create_resources keeps the tables, queues and key the endpoint already holds."""
        self.reuse_resources = reuse_resources
        os.environ.update({
            "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
            "MOTO_ALLOW_NONEXISTENT_REGION": "true",
        })
        os.environ.pop("AWS_PROFILE", None)
        return endpoint

    def create_resources(self) -> None:
        import boto3

        ddb = boto3.client("dynamodb", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        kms = boto3.client("kms", region_name=REGION)
        resolve = resolver(self.params, self.conditions, self.refs, self.attrs, PSEUDO_PARAMETERS)
        for name, res in self.resources.items():
            if res["Type"] == "AWS::KMS::Key":
                key = self._existing_key(kms, name) if self.reuse_resources else None
                if key is None:
                    key = kms.create_key(Description=str(res["Properties"].get("Description", name)))["KeyMetadata"]
                    if self.reuse_resources:  # found again by this alias when the runner restarts
                        kms.create_alias(AliasName=self._key_alias(name), TargetKeyId=key["KeyId"])
                self.refs[name] = key["KeyId"]
                self.attrs[(name, "Arn")] = key["Arn"]
        # Dead-letter queues first, so redrive policies can name them.
        queues = [(n, r) for n, r in self.resources.items() if r["Type"] == "AWS::SQS::Queue"]
        queues.sort(key=lambda nr: "RedrivePolicy" in nr[1].get("Properties", {}))
        for name, res in queues:
            props = resolve(res.get("Properties", {}))
            # Keys typed Any: the SQS stubs want a Literal of attribute names; these come from the template.
            attributes: dict[Any, str] = {k: str(props[k]) for k in ("VisibilityTimeout", "MessageRetentionPeriod")
                                          if k in props}
            # SQS FIFO (the postback queue, issue 29): its attributes as the template sets them, and a name ending
            # in ".fifo" as SQS requires (CloudFormation appends it to the names it generates).
            fifo = str(props.get("FifoQueue", "")).lower() == "true"
            if fifo:
                for k in ("FifoQueue", "ContentBasedDeduplication", "DeduplicationScope", "FifoThroughputLimit"):
                    if k in props:
                        attributes[k] = str(props[k]).lower() if isinstance(props[k], bool) else str(props[k])
            if "RedrivePolicy" in props:
                policy = dict(props["RedrivePolicy"])
                if self.max_receive_count:  # runner-only override, so tests reach the DLQ quickly
                    policy["maxReceiveCount"] = self.max_receive_count
                attributes["RedrivePolicy"] = json.dumps(policy)
            queue_name = f"{name}.fifo" if fifo else name
            url = self._existing_queue(sqs, queue_name) if self.reuse_resources else None
            url = url or sqs.create_queue(QueueName=queue_name, Attributes=attributes)["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            self.refs[name] = url
            self.attrs[(name, "Arn")] = arn
            self.attrs[(name, "QueueName")] = queue_name
            self.queue_urls_by_arn[arn] = url
        for name, res in self.resources.items():
            if res["Type"] != "AWS::DynamoDB::Table":
                continue
            props = res["Properties"]
            kwargs: dict[str, Any] = {
                "TableName": name, "BillingMode": "PAY_PER_REQUEST",
                "AttributeDefinitions": props["AttributeDefinitions"], "KeySchema": props["KeySchema"],
            }
            for idx in ("LocalSecondaryIndexes", "GlobalSecondaryIndexes"):
                if idx in props:
                    kwargs[idx] = props[idx]
            if "StreamSpecification" in props:  # the template leaves StreamEnabled implicit; the API wants it
                kwargs["StreamSpecification"] = {"StreamEnabled": True,
                                                 "StreamViewType": props["StreamSpecification"]["StreamViewType"]}
            existed = self.reuse_resources and self._table_exists(ddb, name)
            if not existed:
                ddb.create_table(**kwargs)
            if "StreamSpecification" in props:
                table = ddb.describe_table(TableName=name)["Table"]
                if "LatestStreamArn" not in table:  # an endpoint's table from a runner before the stream
                    table = ddb.update_table(TableName=name,
                                             StreamSpecification=kwargs["StreamSpecification"])["TableDescription"]
                self.attrs[(name, "StreamArn")] = table["LatestStreamArn"]
            if "TimeToLiveSpecification" in props and not existed:
                ddb.update_time_to_live(TableName=name, TimeToLiveSpecification=props["TimeToLiveSpecification"])
            self.refs[name] = name
            self.attrs[(name, "Arn")] = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{name}"
        for name, res in self.resources.items():
            if res["Type"] == "AWS::Serverless::Api":
                self.refs[name] = name
            if res["Type"] == "AWS::Serverless::LayerVersion":
                self.refs[name] = name
        self._configure_functions(resolve)

    # --aws-endpoint: what an endpoint that outlived a previous runner already holds
    @staticmethod
    def _key_alias(name: str) -> str:
        return f"alias/vault-local-runner/{name}"

    def _existing_key(self, kms: Any, name: str) -> dict[str, Any] | None:
        try:
            return kms.describe_key(KeyId=self._key_alias(name))["KeyMetadata"]
        except kms.exceptions.NotFoundException:
            return None

    @staticmethod
    def _existing_queue(sqs: Any, name: str) -> str | None:
        try:
            return sqs.get_queue_url(QueueName=name)["QueueUrl"]
        except sqs.exceptions.QueueDoesNotExist:
            return None

    @staticmethod
    def _table_exists(ddb: Any, name: str) -> bool:
        try:
            ddb.describe_table(TableName=name)
            return True
        except ddb.exceptions.ResourceNotFoundException:
            return False

    def _configure_functions(self, resolve: Any) -> None:
        globals_fn = (self.template.get("Globals") or {}).get("Function", {})
        env = dict(resolve(globals_fn.get("Environment", {}).get("Variables", {})))
        directories = function_directories()
        for name, res in self.resources.items():
            if res["Type"] != "AWS::Serverless::Function":
                continue
            props = res["Properties"]
            env.update(resolve(props.get("Environment", {}).get("Variables", {})))
            self.timeouts[name] = int(props.get("Timeout", globals_fn.get("Timeout", 15)))
            directory = directories[name]
            for event in (props.get("Events") or {}).values():
                eprops = resolve(event.get("Properties", {}))
                if event["Type"] == "Api":
                    api = (event.get("Properties") or {}).get("RestApiId")
                    self.routes.append(Route(eprops["Method"], eprops["Path"], name,
                                             api.get("Ref", "") if isinstance(api, dict) else str(api or "")))
                elif event["Type"] == "Schedule":
                    self.schedules.append({"function": name, "every": _rate_seconds(str(eprops["Schedule"]))})
                elif event["Type"] == "SQS":
                    self.sqs_sources.append({"function": name,
                                             "queue": self.queue_urls_by_arn.get(eprops["Queue"], eprops["Queue"]),
                                             "batch": int(eprops.get("BatchSize", 10)),
                                             "window": int(eprops.get("MaximumBatchingWindowInSeconds", 0)),
                                             "partial": "ReportBatchItemFailures" in (eprops.get("FunctionResponseTypes") or [])})
                elif event["Type"] == "DynamoDB":
                    self.stream_sources.append(self._stream_source(name, eprops))
            self.modules[name] = self._load(directory)
        from local.log_subscriptions import LogSubscriptions

        self.log_subscriptions = LogSubscriptions(self.resources, set(self.modules), ACCOUNT)
        env["VAULT_ALLOW_LOCAL_EGRESS"] = "1"
        # --- issue 19 (iframe) ---
        env["IFRAME_COLLECTOR_URL"] = ""  # the collector script is served on this same origin
        # --- end ---
        env.update(self.env_overrides)
        os.environ.update({k: str(v) for k, v in env.items()})
        # Concrete routes before greedy ones.
        self.routes.sort(key=lambda r: ("{" in r.path and "+}" in r.path, r.path.count("{")))

    def _stream_source(self, function: str, eprops: dict[str, Any]) -> Any:
        """A DynamoDB stream event source (local.streams) with its failure destination's SQS queue."""
        import boto3

        from local.streams import StreamSource

        on_failure = ((eprops.get("DestinationConfig") or {}).get("OnFailure") or {}).get("Destination")
        sqs = boto3.client("sqs", region_name=REGION)
        checkpoint_path = None
        if self.reuse_resources:  # --aws-endpoint: the stream outlives this runner, so does its checkpoint
            digest = hashlib.sha256(f"{os.environ['AWS_ENDPOINT_URL']} {eprops['Stream']} {function}".encode())
            checkpoint_path = self.state_dir / "stream-checkpoints" / f"{digest.hexdigest()[:24]}.json"
        return StreamSource(function, str(eprops["Stream"]), eprops, self._invoke_with_timeout,
                            lambda url, body: sqs.send_message(QueueUrl=url, MessageBody=body),
                            self.queue_urls_by_arn.get(str(on_failure)) if on_failure else None,
                            boto3.client("dynamodbstreams", region_name=REGION),
                            retry_seconds=float(os.environ.get("LOCAL_STREAM_RETRY_SECONDS", "1")), stop=self._stop,
                            checkpoint_path=checkpoint_path)

    def pump_streams(self) -> int:
        """One pass of every stream event source, in this thread (tests; the runner's threads do it on their own):
        the records passed to handlers."""
        return sum(source.pump() for source in self.stream_sources)

    def _load(self, directory: str) -> ModuleType:
        layer = str(ROOT / "layers" / "shared" / "python")
        if layer not in sys.path:
            sys.path.insert(0, layer)
        path = ROOT / "functions" / directory / "app.py"
        spec = importlib.util.spec_from_file_location(f"local_fn_{directory}", path)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    # ------------------------------------------------------------ invocation
    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        ctx = LambdaContext(function, self.timeouts.get(function, 15))
        subscriptions = getattr(self, "log_subscriptions", None)
        if subscriptions is None:
            return self.modules[function].lambda_handler(event, ctx)
        with subscriptions.capture(function, self.invoke):  # CloudWatch Logs subscription filters (template)
            return self.modules[function].lambda_handler(event, ctx)

    def unknown_route(self, path: str) -> tuple[int, dict[str, str], bytes] | None:
        """What API Gateway answers for ``path`` when no route has it, where the template says (an API's
        ``GatewayResponses`` MISSING_AUTHENTICATION_TOKEN, what a REST API answers for an unknown path); None for
        the default. Every API shares the runner's one origin, so the path's API is the one whose routes share the
        most leading segments with it (at least two, and one API only: ``/api/nope`` belongs to none)."""
        segments = path.strip("/").split("/")
        best: dict[str, int] = {}
        for r in self.routes:
            shared = 0
            for a, b in zip(r.path.strip("/").split("/"), segments, strict=False):
                if a != b:
                    break
                shared += 1
            best[r.api] = max(best.get(r.api, 0), shared)
        top = max(best.values(), default=0)
        owners = [api for api, n in best.items() if n == top]
        if top < 2 or len(owners) != 1:
            return None
        props = (self.resources.get(owners[0]) or {}).get("Properties") or {}
        answer = (props.get("GatewayResponses") or {}).get("MISSING_AUTHENTICATION_TOKEN")
        if not answer:
            return None
        body = answer.get("ResponseTemplates", {}).get("application/json", "")
        headers = {k: str(v).strip("'") for k, v in
                   ((answer.get("ResponseParameters") or {}).get("Headers") or {}).items()}
        return (int(answer.get("StatusCode", 403)), {"Content-Type": "application/json", **headers},
                body.replace("$context.requestId", str(uuid.uuid4())).encode())

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        allowed = False
        for r in self.routes:
            m = r.regex.match(path)
            if m:
                allowed = True
                if r.method in (method, "ANY"):
                    return r, m.groupdict()
        return None if not allowed else (None, {})  # type: ignore[return-value]

    def api_event(self, method: str, raw_path: str, headers: dict[str, str] | list[tuple[str, str]], body: bytes,
                  route: Route, params: dict[str, str], source_ip: str) -> dict[str, Any]:
        """The REST (payload 1.0) proxy event API Gateway would send. Like API Gateway, a header or query key
        sent more than once has its last value in ``headers``/``queryStringParameters`` and every value, in
        order, in ``multiValueHeaders``/``multiValueQueryStringParameters`` (grouped by name: the interleaving
        of different names is not carried)."""
        split = urlsplit(raw_path)
        query = parse_qsl(split.query, keep_blank_values=True)
        pairs = list(headers.items()) if isinstance(headers, dict) else list(headers)
        single: dict[str, str] = {}
        multi: dict[str, list[str]] = {}
        for name, value in pairs:
            single[name] = value
            multi.setdefault(name, []).append(value)
        multi_query: dict[str, list[str]] = {}
        for name, value in query:
            multi_query.setdefault(name, []).append(value)
        try:
            text, b64 = body.decode("utf-8"), False
        except UnicodeDecodeError:
            text, b64 = base64.b64encode(body).decode(), True
        return {
            "resource": route.path, "path": split.path, "httpMethod": method,
            "headers": single or None, "multiValueHeaders": multi or None,
            "queryStringParameters": dict(query) or None,
            "multiValueQueryStringParameters": multi_query or None,
            "pathParameters": params or None, "stageVariables": None,
            "requestContext": {"requestId": str(uuid.uuid4()), "path": split.path, "stage": self.environment,
                               "httpMethod": method, "resourcePath": route.path, "accountId": ACCOUNT,
                               "identity": {"sourceIp": source_ip}},
            "body": text if body else None, "isBase64Encoded": b64,
        }

    # ------------------------------------------------------------ SQS and DynamoDB stream event sources
    def start_pollers(self) -> None:
        for schedule in self.schedules:
            threading.Thread(target=self._tick, args=(schedule,), daemon=True,
                             name=f"schedule-{schedule['function']}").start()
        for stream in self.stream_sources:  # every shard of the stream, in order (local.streams)
            threading.Thread(target=stream.run, args=(self._stop,), daemon=True,
                             name=f"stream-{stream.function}").start()
        for source in self.sqs_sources:
            # Lambda's event source mapping processes up to five batches of a standard queue at once (more as it
            # scales up): one slow batch does not stop the others.
            # moto's ReceiveMessage takes no lock: two concurrent receives could both get one message, which SQS
            # does only rarely on a standard queue and never on a FIFO queue (one message of a group in flight);
            # the pollers take turns to receive. On a FIFO queue (the postback queue) moto, like SQS, returns no
            # message of a group that has one in flight, and a batch may hold several of one group, in order.
            source["receive_lock"] = threading.Lock()
            for n in range(SQS_CONCURRENT_BATCHES):
                threading.Thread(target=self._poll, args=(source,), daemon=True,
                                 name=f"sqs-{source['function']}-{n}").start()

    def _tick(self, schedule: dict[str, Any]) -> None:
        """EventBridge schedules: invoke the function every period with a scheduled event."""
        while not self._stop.wait(schedule["every"]):
            try:
                self.invoke(schedule["function"], {"source": "aws.events", "detail-type": "Scheduled Event",
                                                   "detail": {}})
            except Exception as exc:
                print(f"scheduled {schedule['function']} raised {type(exc).__name__}", file=sys.stderr)

    def _poll(self, source: dict[str, Any]) -> None:
        import boto3

        sqs = boto3.session.Session().client("sqs", region_name=REGION)  # one session per thread
        url = source["queue"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        while not self._stop.is_set():
            try:
                with source["receive_lock"]:
                    out = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=min(10, source["batch"]),
                                              WaitTimeSeconds=1, AttributeNames=["All"],
                                              MessageAttributeNames=["All"])
            except Exception as exc:  # the server is stopping
                if self._stop.is_set():
                    return
                print(f"sqs poll error: {type(exc).__name__}", file=sys.stderr)
                time.sleep(0.5)
                continue
            messages = out.get("Messages", [])
            if not messages:
                continue
            # MaximumBatchingWindowInSeconds: gather more records until the batch is full or the window ends.
            window_ends = time.monotonic() + source["window"]
            while len(messages) < source["batch"] and time.monotonic() < window_ends and not self._stop.is_set():
                # another poller may hold the turn for its 1 s long poll: never wait past the window for it
                if not source["receive_lock"].acquire(timeout=max(0.0, window_ends - time.monotonic())):
                    break
                try:
                    more = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=min(10, source["batch"] - len(messages)),
                                               WaitTimeSeconds=0, AttributeNames=["All"],
                                               MessageAttributeNames=["All"]).get("Messages", [])
                except Exception:  # the server is stopping: invoke with what we have
                    break
                finally:
                    source["receive_lock"].release()
                messages.extend(more)
                if not more:
                    time.sleep(0.05)
            records: list[dict[str, Any]] = [{
                "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                "attributes": m.get("Attributes", {}),
                "messageAttributes": {k: {"stringValue": v.get("StringValue"), "dataType": v.get("DataType")}
                                      for k, v in m.get("MessageAttributes", {}).items()},
                "md5OfBody": m.get("MD5OfBody"), "eventSource": "aws:sqs", "eventSourceARN": arn,
                "awsRegion": REGION,
            } for m in messages]
            failed: set[str] = set()
            try:
                result = self._invoke_with_timeout(source["function"], {"Records": records})
                if source["partial"] and isinstance(result, dict):
                    failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            except Exception as exc:
                # A failed invocation (an error or its timeout) fails the whole batch: every message becomes
                # visible again later.
                print(f"sqs handler error: {type(exc).__name__}", file=sys.stderr)
                failed = {r["messageId"] for r in records}
            done: list[DeleteMessageBatchRequestEntryTypeDef] = [
                {"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(records)
                if r["messageId"] not in failed]
            if done:
                sqs.delete_message_batch(QueueUrl=url, Entries=done)

    def _invoke_with_timeout(self, function: str, event: dict[str, Any]) -> Any:
        """Invoke as Lambda would: past the function's Timeout the invocation fails (TimeoutError) whatever the
        handler does afterwards (a thread cannot be killed; Lambda would stop the sandbox)."""
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["result"] = self.invoke(function, event)
            except Exception as exc:  # noqa: BLE001 - re-raised in the poller's thread
                box["error"] = exc

        worker = threading.Thread(target=run, daemon=True, name=f"invoke-{function}")
        worker.start()
        timeout = self.timeouts.get(function, 15)
        worker.join(timeout)
        if worker.is_alive():
            print(f"sqs handler {function} timed out after {timeout} s", file=sys.stderr)
            raise TimeoutError(function)
        if "error" in box:
            raise box["error"]
        return box.get("result")

    def stop(self) -> None:
        self._stop.set()
        if self.moto is not None:
            self.moto.stop()


MANAGEMENT_API = "ManagementApi"
#: The names the runner answers to (it listens on 127.0.0.1 only).
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def management_refusal(method: str, host: str | None, content_type: str | None, port: int
                       ) -> tuple[int, str] | None:
    """Why the runner refuses a request to the management API, or None (issue 27; docs/local.md).

    Deployed, the management API takes IAM-signed requests only; locally it has no authentication, so the runner
    keeps browsers out of it: a ``Host`` other than its own (``127.0.0.1``, ``localhost`` or ``[::1]`` with its
    port: a DNS-rebinding page's requests carry the attacker's name) is 421, and a request other than GET or
    HEAD without ``Content-Type: application/json`` is 415 (a page can send a cross-site ``no-cors`` POST only as
    ``text/plain``, form or multipart; ``application/json`` needs a CORS preflight, which the runner never grants).
    """
    allowed = {f"{name}:{port}" for name in LOOPBACK_NAMES}
    if (host or "").strip().lower() not in allowed:
        return 421, "The local management API answers only to its own Host (127.0.0.1, localhost or [::1] and its port)."
    if method.upper() not in ("GET", "HEAD"):
        media = (content_type or "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            return 415, "The local management API takes Content-Type: application/json."
    return None


def make_http_handler(platform: Platform) -> type[BaseHTTPRequestHandler]:
    extra_routes = _extra_routes()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "vault-local"
        # Keep-alive without the Nagle/delayed-ACK stall (~40 ms per response): TCP_NODELAY on the socket, and the
        # status line, headers and body leave in one write (the stdlib flushes wfile after each request).
        disable_nagle_algorithm = True
        wbufsize = 65536

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            # Method, path and status only (the request line never carries card data or credentials).
            print(f"http {self.command} {urlsplit(self.path).path} {args[1] if len(args) > 1 else ''}",
                  file=sys.stderr)

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = urlsplit(self.path).path
            for prefix, fn in extra_routes:
                if path.startswith(prefix):
                    status, headers, payload = fn(platform, self.command, self.path, dict(self.headers), body)
                    return self._reply(status, headers, payload)
            found = platform.match(self.command, path)
            if found is None:
                declared = platform.unknown_route(path)  # the API's GatewayResponses, as API Gateway answers
                if declared is not None:
                    return self._reply(*declared)
                return self._reply(404, {"Content-Type": "application/json"}, b'{"message": "Not Found"}')
            route, params = found
            if route is None:
                return self._reply(405, {"Content-Type": "application/json"}, b'{"message": "Method Not Allowed"}')
            if route.api == MANAGEMENT_API:
                address = self.server.server_address
                refusal = management_refusal(self.command, self.headers.get("Host"), self.headers.get("Content-Type"),
                                             int(address[1]) if isinstance(address, tuple) else 0)
                if refusal is not None:
                    status, message = refusal
                    return self._reply(status, {"Content-Type": "application/json"},
                                       json.dumps({"message": message}).encode())
            headers = list(self.headers.items())  # every field, repeated names included, in order
            event = platform.api_event(self.command, self.path, headers, body, route, params, self.client_address[0])
            try:
                result = platform.invoke(route.function, event)
            except Exception as exc:  # what API Gateway answers when a function crashes
                print(f"function {route.function} raised {type(exc).__name__}", file=sys.stderr)
                return self._reply(502, {"Content-Type": "application/json"}, b'{"message": "Internal server error"}')
            payload = result.get("body") or ""
            data = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode("utf-8")
            self._reply(int(result.get("statusCode", 200)), result.get("headers") or {}, data)

        def _reply(self, status: int, headers: dict[str, str], data: bytes) -> None:
            self.send_response(status)
            for k, v in headers.items():
                if k.lower() not in ("content-length", "connection"):
                    self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":  # a HEAD answer has the headers of its body, never the body (RFC 9110 9.3.2)
                self.wfile.write(data)

        # Every method goes through the routes, as API Gateway routes them: one no route declares is answered
        # 405 (or 404 off every route) in the API's JSON, never the stdlib's 501 page.
        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = _serve

    return Handler


def _extra_routes() -> list[tuple[str, Any]]:
    """Runner-only pages (none are part of the deployed stack)."""
    try:
        from local import pages
    except ImportError:
        return []
    return list(getattr(pages, "ROUTES", []))


class _Server(ThreadingHTTPServer):
    # The stdlib default backlog of 5 resets connections under bursts (20 concurrent partners); API Gateway
    # would queue them.
    request_queue_size = 256


def _previous_demo(platform: Platform, aws_endpoint: str, base_url: str) -> dict[str, Any] | None:
    """--aws-endpoint: the demo data a previous runner seeded at this endpoint, when it is all still there."""
    path = platform.state_dir / "demo.json"
    try:
        demo = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(demo, dict) or demo.get("awsEndpoint") != aws_endpoint:
        return None
    import urllib.error
    import urllib.request

    checks = [f"/admin/v1/partners/{demo[k]['partnerId']}" for k in ("partner", "keyPartner") if k in demo]
    if isinstance(demo.get("account"), dict):
        checks.append(f"/admin/v1/accounts/{demo['account']['account_id']}")
    for check in checks:
        try:
            with urllib.request.urlopen(base_url + check, timeout=30):
                pass
        except (urllib.error.URLError, OSError):
            return None
    return demo


def start(port: int, environment: str = "cert", state_dir: Path | None = None, seed_demo: bool = True,
          env_overrides: dict[str, str] | None = None, max_receive_count: int | None = None,
          aws_endpoint: str | None = None) -> tuple[Platform, ThreadingHTTPServer, dict[str, Any]]:
    platform = Platform(environment, state_dir, env_overrides, max_receive_count)
    # --aws-endpoint: a moto (or DynamoDB/SQS/KMS stand-in) started elsewhere keeps its state across runners
    external = aws_endpoint is not None
    aws_endpoint = platform.use_endpoint(aws_endpoint) if aws_endpoint is not None else platform.start_moto()
    platform.create_resources()
    from local import wallet_vendor  # runner only: the wallet vendor's merchant session endpoint, over mutual TLS

    wallet_stand_in = wallet_vendor.start(platform)  # points the wallet session function at it (local/wallet_vendor.py)
    write_env_file(platform)  # <state-dir>/env.json, in `sam local --env-vars` format (DESIGN.md §6)
    server = _Server(("127.0.0.1", port), make_http_handler(platform))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True, name="http").start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    os.environ["VAULT_LOCAL_BASE_URL"] = base_url
    platform.start_pollers()
    # The moto endpoint lets end-to-end tests inspect what the platform stored (table scans for card data).
    previous = _previous_demo(platform, aws_endpoint, base_url) if external else None
    demo: dict[str, Any] = {"baseUrl": base_url, "environment": environment, "awsEndpoint": aws_endpoint}
    if wallet_stand_in:
        demo["walletVendor"] = wallet_stand_in
    if previous is not None:  # restarted against the same endpoint: the seeded data is there, seed nothing twice
        demo = {**previous, **demo, "reused": True}
    elif seed_demo:
        from local.seed import seed

        demo.update(seed(base_url))
    platform.state_dir.mkdir(parents=True, exist_ok=True)
    (platform.state_dir / "demo.json").write_text(json.dumps(demo, indent=2))
    return platform, server, demo


def _port_in_use(port: int) -> str | None:
    """Why 127.0.0.1:<port> cannot be bound (as the server binds it: SO_REUSEADDR), or None when it can."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def _port_busy_message(port: int, reason: str) -> str:
    return (f"error: port {port} on 127.0.0.1 is not free ({reason}): stop the runner using it "
            f"(README: \"Stopping a runner\") or choose another port (make run PORT=3001)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the whole platform locally (moto + handlers).")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "3000")))
    parser.add_argument("--environment", choices=["cert", "prod"], default="cert")
    parser.add_argument("--state-dir", type=Path, default=ROOT / ".local")
    parser.add_argument("--no-seed", action="store_true", help="do not create the demo partner, device, ...")
    parser.add_argument("--quiet-banner", action="store_true",
                        help="do not print demo credentials (they are still written to <state-dir>/demo.json)")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="override a function environment variable (e.g. POSTBACK_RETRY_SCHEDULE=1,1,1)")
    parser.add_argument("--max-receive-count", type=int, default=None,
                        help="override the queues' maxReceiveCount (runner only; for tests of the DLQ)")
    parser.add_argument("--aws-endpoint", default=None, metavar="URL",
                        help="use this AWS endpoint (a moto server started elsewhere) instead of starting moto; "
                             "tables, queues and the key are created only if missing, and a demo.json of the "
                             "same endpoint in --state-dir is reused, so a restarted runner keeps all data")
    args = parser.parse_args(argv)
    started = time.monotonic()
    overrides = dict(item.split("=", 1) for item in args.env)
    busy = _port_in_use(args.port)  # before moto starts: one line, not a traceback, and nothing left running
    if busy:
        print(_port_busy_message(args.port, busy), file=sys.stderr, flush=True)
        return 2
    try:
        platform, server, demo = start(args.port, args.environment, args.state_dir, not args.no_seed, overrides,
                                       args.max_receive_count, args.aws_endpoint)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:  # taken since the check
            raise
        print(_port_busy_message(args.port, exc.strerror or str(exc)), file=sys.stderr, flush=True)
        return 2
    banner = {"url": demo["baseUrl"], "environment": args.environment,
              "startedInSeconds": round(time.monotonic() - started, 2),
              "demoFile": str(args.state_dir / "demo.json")}
    print(f"Local platform listening on {demo['baseUrl']}", file=sys.stderr, flush=True)
    if not args.quiet_banner:
        # Demo credentials of a throwaway local stack: printing them to the terminal is the point.
        print(json.dumps({**banner, "demo": demo}, indent=2), file=sys.stderr, flush=True)
    else:
        print(json.dumps(banner), file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.is_set():
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    print("stopping", file=sys.stderr, flush=True)
    server.shutdown()
    platform.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
