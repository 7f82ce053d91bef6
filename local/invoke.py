"""Run one event through one function, in a fresh process, against the running local runner (no Docker).

    make run &                                           # writes .local/env.json and .local/demo.json
    .venv/bin/python -m local.invoke PartnerValidateFunction events/partner_validate.json
    .venv/bin/python -m local.invoke events/gateway_sale.json        # the function found from the event source
    make invoke FN=PartnerValidateFunction EVENT=events/partner_validate.json

What ``sam local invoke <LogicalId> -e <event> --env-vars .local/env.json`` does in a container, done in this
process: the function's code is found from template.yaml (``CodeUri`` + ``Handler``; with the makefile build of
``functions/Makefile``, ``CodeUri/<folder>/app.py``), the shared layer is put on the path as ``/opt/python``
would be, the environment is exactly the function's entry of ``env.json`` (the runner's moto endpoint, tables,
queues and key), and the handler's result is printed as JSON on stdout (its logs go to stderr). The exit status
is 1 when the handler raises, runs past its template Timeout or answers HTTP 5xx, 2 for a usage error.

Events (``events/``) may hold placeholders, filled from the runner's ``demo.json`` before the call:

``{{demo.<path>}}``
    a value of demo.json by its dotted path, e.g. ``{{demo.account.account_id}}``, ``{{demo.keyPartner.partnerKey}}``,
    ``{{demo.proxyTokenizeConfig.configReferenceID}}`` (list items by index: ``{{demo.devices.0.serial}}``);
``{{uuid}}``, ``{{now}}``
    a fresh UUID; the current Unix time in seconds;
``{{hmac.<member>}}`` (a whole header value)
    a fresh ``Authorization: Hmac ...`` header for the demo.json member (``partner`` is the demo HMAC partner)
    over the event's final body and ``path``: HMAC-SHA256 keyed with the ASCII bytes of its ``hmacKey`` exactly
    as issued, over ``POST <path>\\n<nonce>\\n<timestamp>\\n\\n<hex sha256(body)>``
    (docs/integrators/authentication.md, "The HMAC scheme");
``{{basic.<member>}}`` (a whole header value)
    ``Basic base64(partnerId:partnerKey)`` of a key-security partner (``keyPartner``).

An ``Authorization: Hmac username="<id>", ...`` header that is already concrete (an event captured from the
runner) is signed again, with a fresh nonce and timestamp, when demo.json knows that partner's key: nonces are
single-use, so a captured header works once. ``--print-event`` prints the filled, signed event instead of
invoking, for ``sam local invoke -e -`` (which does not know the placeholders).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import hashlib
import hmac
import importlib.util
import json
import os
import re
import secrets
import socket
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from local.template import ROOT, function_directories, load_template, parameters_with_defaults, render

__all__ = ["fill_event", "hmac_authorization", "function_code", "functions_for_event", "main"]

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z][\w.\-]*)\s*\}\}")
WHOLE = re.compile(r"^\s*\{\{\s*(hmac|basic)\.([\w\-]+)\s*\}\}\s*$")
HMAC_USERNAME = re.compile(r'^\s*Hmac\s.*?\busername\s*=\s*"?([^",\s]+)"?', re.IGNORECASE)
LAYER = ROOT / "layers" / "shared" / "python"
INIT_SECONDS = 10  # Lambda's init phase limit: the handler module's import is not part of the Timeout


class UsageError(Exception):
    pass


# ------------------------------------------------------------------------------------------ placeholders


def _demo_value(demo: dict[str, Any], dotted: str) -> str:
    node: Any = demo
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise UsageError(f"placeholder {{{{demo.{dotted}}}}}: demo.json has no {dotted!r}")
    if node is None or isinstance(node, dict | list):
        raise UsageError(f"placeholder {{{{demo.{dotted}}}}}: not a plain value in demo.json")
    return node if isinstance(node, str) else json.dumps(node)


def _fill_text(text: str, demo: dict[str, Any]) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name.startswith("demo."):
            return _demo_value(demo, name[len("demo."):])
        if name == "uuid":
            return str(uuid.uuid4())
        if name == "now":
            return str(int(time.time()))
        if name.startswith(("hmac.", "basic.")):
            return m.group(0)  # signed once the body is final (whole header values only)
        raise UsageError(f"unknown placeholder {m.group(0)}")

    return PLACEHOLDER.sub(one, text)


def _fill(value: Any, demo: dict[str, Any]) -> Any:
    if isinstance(value, str):
        return _fill_text(value, demo)
    if isinstance(value, list):
        return [_fill(v, demo) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, demo) for k, v in value.items()}
    return value


def hmac_authorization(partner_id: str, hmac_key: str, path: str, body: bytes) -> str:
    """The spec's header, keyed with the ASCII bytes of ``hmacKey`` exactly as issued (never base64-decoded)."""
    nonce, timestamp = secrets.token_hex(16), int(time.time())
    to_sign = f"POST {path}\n{nonce}\n{timestamp}\n\n{hashlib.sha256(body).hexdigest()}"
    response = hmac.new(hmac_key.encode("ascii"), to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return f'Hmac username="{partner_id}", nonce="{nonce}", timestamp="{timestamp}", response="{response}"'


def _member(demo: dict[str, Any], name: str, *needed: str) -> dict[str, Any]:
    member = demo.get(name)
    if not isinstance(member, dict) or not all(isinstance(member.get(k), str) for k in needed):
        raise UsageError(f"demo.json member {name!r} has no {' and '.join(needed)}")
    return member


def _partner_with_key(demo: dict[str, Any], partner_id: str) -> dict[str, Any] | None:
    for member in demo.values():
        if isinstance(member, dict) and member.get("partnerId") == partner_id and isinstance(member.get("hmacKey"), str):
            return member
    return None


def _body_bytes(event: dict[str, Any]) -> bytes:
    body = event.get("body") or ""
    return base64.b64decode(body) if event.get("isBase64Encoded") else str(body).encode("utf-8")


def _sign_headers(event: dict[str, Any], demo: dict[str, Any]) -> None:
    """Replace ``{{hmac.X}}``/``{{basic.X}}`` header values, and re-sign concrete Hmac headers of known partners.

    One value per header name, the same in ``headers`` and ``multiValueHeaders`` (as API Gateway sends them)."""
    signed: dict[str, str] = {}

    def value_for(name: str, current: str) -> str:
        key = name.lower()
        if key in signed:
            return signed[key]
        m = WHOLE.match(current)
        result = current
        if m and m.group(1) == "hmac":
            member = _member(demo, m.group(2), "partnerId", "hmacKey")
            result = hmac_authorization(member["partnerId"], member["hmacKey"], str(event.get("path") or "/"),
                                        _body_bytes(event))
        elif m:
            # a key-security partner (partnerId:partnerKey), or a gateway account (account_id:api_accesskey, the
            # payment iFrame's configuration calls)
            found = demo.get(m.group(2))
            if isinstance(found, dict) and isinstance(found.get("account_id"), str):
                member = _member(demo, m.group(2), "account_id", "api_accesskey")
                creds = f"{member['account_id']}:{member['api_accesskey']}".encode()
            else:
                member = _member(demo, m.group(2), "partnerId", "partnerKey")
                creds = f"{member['partnerId']}:{member['partnerKey']}".encode()
            result = "Basic " + base64.b64encode(creds).decode("ascii")
        elif key == "authorization" and (u := HMAC_USERNAME.match(current)):
            partner = _partner_with_key(demo, u.group(1))
            if partner is not None:
                result = hmac_authorization(partner["partnerId"], partner["hmacKey"], str(event.get("path") or "/"),
                                            _body_bytes(event))
        if result != current:
            signed[key] = result
        return result

    for member in ("headers", "multiValueHeaders"):
        headers = event.get(member)
        if not isinstance(headers, dict):
            continue
        for name, value in list(headers.items()):
            if isinstance(value, list):
                headers[name] = [value_for(name, v) if isinstance(v, str) else v for v in value]
            elif isinstance(value, str):
                headers[name] = value_for(name, value)


def _refresh_sqs_digests(event: dict[str, Any]) -> None:
    for record in event.get("Records") or []:
        if isinstance(record, dict) and "md5OfBody" in record and isinstance(record.get("body"), str):
            record["md5OfBody"] = hashlib.md5(record["body"].encode("utf-8"), usedforsecurity=False).hexdigest()


def fill_event(event: Any, demo: dict[str, Any]) -> Any:
    """The event with every placeholder filled and every Authorization header freshly made."""
    filled = _fill(event, demo)
    if isinstance(filled, dict):
        _sign_headers(filled, demo)
        _refresh_sqs_digests(filled)
    leftover = PLACEHOLDER.search(json.dumps(filled))
    if leftover:
        raise UsageError(f"placeholder {leftover.group(0)} is not usable here (hmac/basic: a whole header value)")
    return filled


# ------------------------------------------------------------------------------------------ the function


@functools.lru_cache(maxsize=2)
def _rendered(environment: str = "cert") -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """template.yaml and its resources for that Environment (read once; callers do not change them)."""
    template = load_template()
    return template, render(template, parameters_with_defaults(template, {"Environment": environment}))


def functions_for_event(event: Any, environment: str = "cert") -> list[str]:
    """The template's functions one of whose event sources produces this event: an Api event of the same method
    and resource, the SQS queue or DynamoDB table stream named by the records' ``eventSourceARN``, a Schedule, or (``awslogs``) the
    destination of a CloudWatch Logs subscription filter."""
    _, resources = _rendered(environment)
    found = []
    if isinstance(event, dict) and isinstance(event.get("awslogs"), dict):
        for res in resources.values():
            if res.get("Type") == "AWS::Logs::SubscriptionFilter":
                target = (res.get("Properties") or {}).get("DestinationArn")
                if isinstance(target, dict) and isinstance(target.get("Fn::GetAtt"), list):
                    found.append(target["Fn::GetAtt"][0])
        return sorted(set(found))
    for name, res in resources.items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        for event_id, source in ((res.get("Properties") or {}).get("Events") or {}).items():
            kind, props = source.get("Type"), source.get("Properties") or {}
            if not isinstance(event, dict):
                continue
            if kind == "Api" and "httpMethod" in event:
                method = str(props.get("Method", "")).upper()
                if props.get("Path") == event.get("resource") and method in (str(event["httpMethod"]).upper(), "ANY"):
                    found.append(name)
            elif kind == "SQS" and isinstance(event.get("Records"), list) and event["Records"]:
                queue = props.get("Queue")
                queue_id = queue.get("Fn::GetAtt", [None])[0] if isinstance(queue, dict) else None
                arns = {str(r.get("eventSourceARN", "")) for r in event["Records"] if isinstance(r, dict)}
                # a FIFO queue's name ends in ".fifo" (the runner's, and CloudFormation's generated names)
                if queue_id and arns and all(a.rsplit(":", 1)[-1].removesuffix(".fifo") == queue_id for a in arns):
                    found.append(name)
            elif kind == "DynamoDB" and isinstance(event.get("Records"), list) and event["Records"]:
                # a stream ARN is <table ARN>/stream/<label>; the table's logical id is the table name locally
                stream = props.get("Stream")
                table_id = stream.get("Fn::GetAtt", [None])[0] if isinstance(stream, dict) else None
                arns = {str(r.get("eventSourceARN", "")) for r in event["Records"] if isinstance(r, dict)}
                if table_id and arns and all(f":table/{table_id}/stream/" in a for a in arns):
                    found.append(name)
            elif kind == "Schedule" and event.get("source") == "aws.events" \
                    and event.get("detail-type") == "Scheduled Event":
                # SAM names a schedule's rule <stack>-<function><event id>-<suffix>: an event that names its rule
                # (``resources``) goes to that rule's function only.
                rules = [str(r).rsplit("/", 1)[-1] for r in event.get("resources") or []]
                if not rules or any(f"-{name}{event_id}" in rule for rule in rules):
                    found.append(name)
    return sorted(set(found))


def function_code(logical_id: str, environment: str = "cert") -> tuple[Path, str, str, int]:
    """(code directory, handler module, handler attribute, timeout) of a function, from template.yaml."""
    template, resources = _rendered(environment)
    functions = sorted(n for n, r in resources.items() if r.get("Type") == "AWS::Serverless::Function")
    if logical_id not in functions:
        raise UsageError(f"{logical_id} is not a function of template.yaml ({environment}): {', '.join(functions)}")
    globals_fn = (template.get("Globals") or {}).get("Function", {})
    props = resources[logical_id].get("Properties") or {}
    code_uri = ROOT / str(props.get("CodeUri", globals_fn.get("CodeUri", ".")))
    handler = str(props.get("Handler", globals_fn.get("Handler", "app.lambda_handler")))
    module, _, attribute = handler.rpartition(".")
    directory = code_uri
    metadata = resources[logical_id].get("Metadata") or {}
    if metadata.get("BuildMethod") == "makefile":  # functions/Makefile copies CodeUri/<folder>/ into the artifact
        folder = function_directories(code_uri / "Makefile").get(logical_id)
        if folder is None:
            raise UsageError(f"{code_uri / 'Makefile'} has no build-{logical_id} target")
        directory = code_uri / folder
    timeout = int(props.get("Timeout", globals_fn.get("Timeout", 3)))
    return directory, module, attribute, timeout


class Context:
    """What Lambda passes as ``context`` (the members the handlers use)."""

    def __init__(self, name: str, timeout: int, memory: int = 1024) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.aws_request_id = str(uuid.uuid4())
        self.memory_limit_in_mb = memory
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = "$LATEST"
        self._deadline = time.monotonic() + timeout

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _environment(variables: dict[str, str], logical_id: str, handler: str, timeout: int) -> None:
    """The process environment a Lambda sandbox would have: nothing AWS_* from the caller's shell."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        del os.environ[name]
    os.environ.update({k: str(v) for k, v in variables.items()})
    os.environ.update({"AWS_LAMBDA_FUNCTION_NAME": logical_id, "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
                       "AWS_LAMBDA_FUNCTION_TIMEOUT": str(timeout), "AWS_LAMBDA_FUNCTION_HANDLER": handler,
                       "AWS_SAM_LOCAL": "true"})


def invoke(logical_id: str, event: Any, variables: dict[str, str], environment: str = "cert") -> Any:
    directory, module_name, attribute, timeout = function_code(logical_id, environment)
    _environment(variables, logical_id, f"{module_name}.{attribute}", timeout)
    for path in (str(LAYER), str(directory)):  # /opt/python, then /var/task first (as Lambda orders them)
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    source = directory / (module_name.replace(".", "/") + ".py")
    spec = importlib.util.spec_from_file_location(module_name, source)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot load {source}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return getattr(module, attribute)(event, Context(logical_id, timeout))


# ------------------------------------------------------------------------------------------ command line


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path} not found: {what}") from None
    except ValueError as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None


def _stdin_json() -> Any:
    try:
        return json.loads(sys.stdin.read())
    except ValueError as exc:
        raise UsageError(f"stdin is not JSON: {exc}") from None


def _check_runner(endpoint: str, demo: dict[str, Any], hint: str) -> None:
    if demo.get("awsEndpoint") and endpoint != demo["awsEndpoint"]:
        raise UsageError(f"env.json and demo.json come from different runner starts: {hint}")
    split = urlsplit(endpoint)
    if split.hostname:
        try:
            socket.create_connection((split.hostname, split.port or 80), timeout=2).close()
        except OSError:
            raise UsageError(f"the runner's AWS endpoint {endpoint} does not answer: {hint}") from None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m local.invoke", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("function", metavar="LogicalId",
                   help="a function of template.yaml, e.g. PartnerValidateFunction (may be left out: the function "
                        "whose event source matches the event)")
    p.add_argument("event", metavar="EVENT", nargs="?", help="an event file (events/...), or - for stdin")
    p.add_argument("--state-dir", type=Path, default=ROOT / ".local",
                   help="the runner's --state-dir (default .local): env.json and demo.json are read from it")
    p.add_argument("--env-vars", type=Path, default=None, help="the env.json to use (default <state-dir>/env.json)")
    p.add_argument("--demo", type=Path, default=None, help="the demo.json to use (default <state-dir>/demo.json)")
    p.add_argument("--print-event", action="store_true",
                   help="print the filled, signed event and exit (pipe it to `sam local invoke -e -`)")
    args = p.parse_args(argv)
    if args.event is None:
        args.function, args.event = None, args.function
    start_hint = "start the runner first (make run) or pass its --state-dir"
    try:
        demo = _read_json(args.demo or args.state_dir / "demo.json", start_hint)
        event = _read_json(Path(args.event), "no such event file") if args.event != "-" else _stdin_json()
        if args.function is None:
            matches = functions_for_event(event, str(demo.get("environment") or "cert"))
            if len(matches) != 1:
                raise UsageError(f"name the function: the event matches {', '.join(matches) or 'no function'}")
            args.function = matches[0]
        event = fill_event(event, demo)
        if args.print_event:
            print(json.dumps(event, indent=2))
            return 0
        env_vars = _read_json(args.env_vars or args.state_dir / "env.json", start_hint)
        if args.function not in env_vars:
            raise UsageError(f"{args.function} has no entry in env.json (functions: {', '.join(sorted(env_vars))})")
        if args.env_vars is None:  # the runner's own files: say so when that runner is gone
            _check_runner(env_vars[args.function].get("AWS_ENDPOINT_URL", ""), demo, start_hint)
        environment = str(demo.get("environment") or env_vars[args.function].get("ENVIRONMENT") or "cert")
    except UsageError as exc:
        print(f"local.invoke: {exc}", file=sys.stderr)
        return 2
    timeout = function_code(args.function, environment)[3]
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = invoke(args.function, event, env_vars[args.function], environment)
        except BaseException as exc:  # noqa: BLE001 - reported below, as Lambda reports a function error
            box["error"] = exc

    with contextlib.redirect_stdout(sys.stderr):  # the function's logs to stderr, the result alone to stdout
        worker = threading.Thread(target=run, daemon=True, name=args.function)
        worker.start()
        worker.join(timeout + INIT_SECONDS)  # the function's Timeout, plus Lambda's init phase for the import
    if worker.is_alive():
        print(json.dumps({"errorType": "Sandbox.Timedout",
                          "errorMessage": f"Task timed out after {timeout} seconds"}), flush=True)
        os._exit(1)  # a thread cannot be stopped; Lambda would end the sandbox
    error = box.get("error")
    if isinstance(error, UsageError):
        print(f"local.invoke: {error}", file=sys.stderr)
        return 2
    if error is not None:
        traceback.print_exception(error, file=sys.stderr)
        print(json.dumps({"errorType": type(error).__name__, "errorMessage": str(error)}))
        return 1
    result = box.get("result")
    print(json.dumps(result, default=str))
    status = result.get("statusCode") if isinstance(result, dict) else None
    return 1 if isinstance(status, int) and status >= 500 else 0


if __name__ == "__main__":
    sys.exit(main())
