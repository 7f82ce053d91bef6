"""One Lambda cold start in a fresh interpreter, run by bench_cold_start.py (never imported by it).

    python3.13 cold_start_probe.py APP_PY EVENTS_JSON RESULT_JSON

Times what Lambda's init does (import ``app.py``) and the first request, then sends the remaining events as warm
requests and counts each one's AWS calls with ``before-call`` event hooks on every client the process holds
(botocore's, and vaultcore's JSON-protocol clients, which emit the same events). With ``COLD_START_RECORD=1`` it
also records the first request's calls (service, operation, parameters) so
the naive handler can make the same ones. The result goes to a file: the handler's log lines go to stdout.
"""

# What the Lambda runtime's bootstrap has imported before it imports the handler: not part of init here either.
import base64
import decimal  # noqa: F401
import importlib.util
import json
import logging  # noqa: F401
import os
import sys
import time
import traceback  # noqa: F401
import uuid
import warnings  # noqa: F401


class Context:
    """The Lambda context object (the fields Powertools' Logger reads, and the remaining time)."""

    def __init__(self, name: str) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = 1024
        self.invoked_function_arn = f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = "cold-start"
        self._deadline = time.monotonic() + 15

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _jsonable(value):
    if isinstance(value, (bytes, bytearray)):
        return {"__b64__": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, decimal.Decimal):
        return str(value)
    return value


def _install_recorder(recorded: list) -> None:
    """Record the calls (untimed runs only: importing botocore here would count against nothing)."""
    from botocore.client import BaseClient

    original = BaseClient._make_api_call  # type: ignore[attr-defined]  # private: botocore-stubs leave it out

    def make_api_call(self, operation_name, api_params):
        recorded.append({"service": self.meta.service_model.service_name, "operation": operation_name,
                         "params": _jsonable(api_params)})
        return original(self, operation_name, api_params)

    BaseClient._make_api_call = make_api_call  # type: ignore[attr-defined]  # private: botocore-stubs leave it out
    try:
        from vaultcore.store.aws_json import JsonServiceClient
    except ImportError:  # the naive handler's tree has no vaultcore
        return
    json_call = JsonServiceClient.call

    def call(self, operation, params):
        recorded.append({"service": self.service, "operation": operation, "params": _jsonable(dict(params))})
        return json_call(self, operation, params)

    JsonServiceClient.call = call  # type: ignore[method-assign]  # recording wrapper, on purpose


def _status(out) -> object:
    if isinstance(out, dict):
        if "statusCode" in out:
            return out["statusCode"]
        if "batchItemFailures" in out:
            return f"{len(out['batchItemFailures'])} batch item failures"
    return "ok"


def main() -> int:
    app_path, events_path, result_path = sys.argv[1:4]
    with open(events_path) as fh:
        events = json.load(fh)
    name = os.environ.get("COLD_START_FUNCTION", "function")
    recorded: list = []
    if os.environ.get("COLD_START_RECORD") == "1":
        _install_recorder(recorded)

    # Diagnosis only (its figures are inflated by the profiler): COLD_START_PROFILE_DIR=<dir> writes the cProfile
    # of init and of the first request there.
    profile_dir = (os.environ.get("COLD_START_PROFILE_DIR") or "") if name != "naive" else ""
    profiler = None
    if profile_dir:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    started, cpu_started = time.perf_counter(), time.process_time()
    spec = importlib.util.spec_from_file_location("app", app_path)
    assert spec is not None and spec.loader is not None  # a .py file path always has a source loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["app"] = module
    spec.loader.exec_module(module)
    init_done = time.perf_counter()
    if profiler is not None:
        profiler.dump_stats(os.path.join(profile_dir, f"{name}-{os.getpid()}-init.prof"))
        profiler = cProfile.Profile()
        profiler.enable()
    loaded = set(sys.modules)
    out = module.lambda_handler(events[0], Context(name))
    first_done, cpu_first_done = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(os.path.join(profile_dir, f"{name}-{os.getpid()}-first.prof"))
    first_imports = sorted(set(sys.modules) - loaded)
    first_calls = list(recorded)

    warm: list[dict] = []
    if len(events) > 1:
        import gc

        from botocore.client import BaseClient

        calls: list[str] = []

        def count(model, **_kwargs):
            calls.append(f"{model.service_model.service_name}.{model.name}")

        for obj in gc.get_objects():
            # botocore clients, and vaultcore's JSON-protocol clients (the same before-call event names)
            if isinstance(obj, BaseClient) or type(obj).__name__ == "JsonServiceClient":
                obj.meta.events.register("before-call", count, unique_id="cold-start-probe")
        for event in events[1:]:
            calls.clear()
            answer = module.lambda_handler(event, Context(name))
            warm.append({"status": _status(answer), "calls": list(calls)})
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {
        "boto3", "botocore", "cryptography", "lxml", "jsonpath_ng", "regex", "aws_lambda_powertools", "pydantic",
        "urllib3", "aws_xray_sdk", "jmespath", "dateutil"})
    with open(result_path, "w") as fh:
        json.dump({"init_ms": (init_done - started) * 1000, "first_request_ms": (first_done - init_done) * 1000,
                   "cpu_ms": (cpu_first_done - cpu_started) * 1000,
                   "status": _status(out), "warm": warm, "recorded": first_calls, "heavy_modules": heavy,
                   "first_request_imports": first_imports,
                   "python": sys.version.split()[0]}, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
