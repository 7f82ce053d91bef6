"""Starts the real local runner (`python -m local.runner`) once per session and talks HTTP to it.

All of the runner's output (handler logs on stdout, runner and moto messages on stderr) is captured to
files so tests can scan it for secrets and card data.
"""

from __future__ import annotations

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
    from tests.e2e.log_hygiene import leaks
    from tests.e2e.runner_process import runner_process

    with runner_process(tmp_path_factory.mktemp("runner")) as started:
        time.sleep(0.2)
        runner = Runner(started.base_url, started.demo, started.stdout, started.stderr)
        yield runner
    # Every worker's runner is scanned once its tests are done (pytest-xdist: test_zz_log_hygiene.py sees only
    # the runner of the worker it ran on). A leak fails the session as an error in teardown.
    found = leaks(runner.logs(), runner.demo)
    assert not found, f"the session runner's logs hold {found}"


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
