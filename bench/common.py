"""Benchmark helpers: fresh-interpreter import timing, an in-process moto platform, a runner subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from local.runner import Platform

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("LOG_LEVEL", "WARNING")  # benchmarks print figures, not request logs
LAYER = ROOT / "layers" / "shared" / "python"

_IMPORT_PROBE = """
import importlib, importlib.util, re, sys, time
t = time.perf_counter()
spec = importlib.util.spec_from_file_location("app", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
app_ms = (time.perf_counter() - t) * 1000
text = open(sys.argv[1]).read()
handed = re.search(r'api_handler\\(\\s*"\\w+", (\\w+)', text)  # the route app.py hands to api_handler
route = handed and re.search(rf'^from ([\\w.]+) import {handed.group(1)}$', text, re.M)
t = time.perf_counter()
if route:
    importlib.import_module(route.group(1))
print(app_ms, (time.perf_counter() - t) * 1000)
"""
# Clients are created during init: a region and (fake) credentials let botocore do so without any network call.
_INIT_ENV = {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
             "AWS_EC2_METADATA_DISABLED": "true"}
INTERPRETER = f"{sys.executable} (Python {sys.version.split()[0]})"


def cold_import_ms(app_path: Path, runs: int = 7) -> tuple[float, float]:
    """Median time Lambda's init takes for a function in a fresh interpreter: importing its app.py, which imports
    the route and creates the AWS clients (milliseconds, WITH .pyc: the layer and the functions are compiled first,
    whatever PYTHONDONTWRITEBYTECODE says); and the median time the route module then takes to import (~0 now
    that init imports it; kept for the benches that print both).

    This runs this venv's interpreter (INTERPRETER), not the Lambda runtime's, and stops before the first request:
    bench_cold_start.py measures init + first request on python3.13, with and without .pyc."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(LAYER), str(ROOT / "functions")], check=True,
                   stdout=subprocess.DEVNULL, env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"})
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **_INIT_ENV, "PYTHONPATH": str(LAYER)}
    subprocess.run([sys.executable, "-c", _IMPORT_PROBE, str(app_path)], env=env, check=True, capture_output=True)
    apps, routes = [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, str(app_path)], env=env, check=True,
                             capture_output=True, text=True)
        app_ms, route_ms = (float(x) for x in out.stdout.strip().splitlines()[-1].split())
        apps.append(app_ms)
        routes.append(route_ms)
    return round(statistics.median(apps), 1), round(statistics.median(routes), 1)


@contextlib.contextmanager
def in_process_platform() -> Iterator[Platform]:
    from moto import mock_aws

    for k in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        os.environ.pop(k, None)
    # In-process moto patches botocore: these figures are with botocore clients ("VAULT_AWS_SDK=botocore"); the
    # JSON-protocol client Lambda uses is timed over HTTP by bench_cold_start and bench_aws_client.
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "VAULT_AWS_SDK": "botocore"})
    if str(LAYER) not in sys.path:
        sys.path.insert(0, str(LAYER))
    with mock_aws():
        from local.runner import Platform

        platform = Platform("cert")
        platform.create_resources()
        from tests.conftest import reset_platform_state

        reset_platform_state()
        yield platform


@contextlib.contextmanager
def runner_subprocess() -> Iterator[tuple[str, dict]]:
    state = Path(tempfile.mkdtemp(prefix="bench-runner-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    err = open(state / "stderr.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "local.runner", "--port", "0", "--state-dir", str(state),
                             "--quiet-banner"], cwd=ROOT, env={**env, "LOG_LEVEL": "WARNING"},
                            stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            m = re.search(r"listening on (http://\S+)", (state / "stderr.log").read_text())
            if m and (state / "demo.json").exists():
                yield m.group(1), json.loads((state / "demo.json").read_text())
                return
            time.sleep(0.1)
        raise RuntimeError("runner did not start")
    finally:
        proc.terminate()
        proc.wait(10)


def percentile(samples: list[float], p: float) -> float:
    s = sorted(samples)
    return round(s[min(len(s) - 1, int(len(s) * p))], 3)
