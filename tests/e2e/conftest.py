"""Starts the real local runner (`python -m local.runner`) once per session and talks HTTP to it.

All of the runner's output (handler logs on stdout, runner and moto messages on stderr) is captured to
files so tests can scan it for secrets and card data.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Runner:
    def __init__(self, base_url: str, demo: dict, stdout: Path, stderr: Path) -> None:
        self.base_url = base_url
        self.demo = demo
        self.stdout = stdout
        self.stderr = stderr

    def logs(self) -> str:
        return self.stdout.read_text(errors="replace") + self.stderr.read_text(errors="replace")


@pytest.fixture(scope="session")
def runner(tmp_path_factory):
    state = tmp_path_factory.mktemp("runner")
    out, err = state / "stdout.log", state / "stderr.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "local.runner", "--port", "0", "--state-dir", str(state), "--quiet-banner"],
        cwd=ROOT, env=env, stdout=open(out, "wb"), stderr=open(err, "wb"))
    deadline = time.monotonic() + 60
    base_url = None
    while time.monotonic() < deadline and base_url is None:
        if proc.poll() is not None:
            raise RuntimeError("runner exited:\n" + err.read_text())
        m = re.search(r"Local platform listening on (http://\S+)", err.read_text())
        if m and (state / "demo.json").exists():
            base_url = m.group(1)
        time.sleep(0.1)
    assert base_url, "runner did not start within 60 s"
    time.sleep(0.2)
    demo = json.loads((state / "demo.json").read_text())
    yield Runner(base_url, demo, out, err)
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


# ------------------------------------------------------------------------------------------ API contracts
# Every response the shared client (tests/e2e/http.py) receives is validated against openapi/<api>.json
# (tests/e2e/contract.py); a test whose calls (its fixtures' included) got a response its document does not
# describe fails with the list of mismatches.
_CONTRACT_MARK = pytest.StashKey[int]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    from tests.e2e import contract

    item.stash[_CONTRACT_MARK] = contract.mark()
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    from tests.e2e import contract

    result = yield
    found = contract.since(item.stash.get(_CONTRACT_MARK, contract.mark()))
    if found:
        raise AssertionError("responses that do not match their OpenAPI document (openapi/*.json):\n"
                             + "\n".join(found[:20]))
    return result
