"""The README's walkthrough and the HMAC signing examples of docs/integrators/authentication.md, followed literally
against the runner: the base URL and the credentials come from the test runner's demo.json (only the demo file's
path is the test's). The other pages' examples: tests/e2e/test_docs_examples.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
AUTHENTICATION = (ROOT / "docs" / "integrators" / "authentication.md").read_text()
INDEX = (ROOT / "docs" / "index.md").read_text()


def _block(after: str, fence: str = "```sh", text: str = README) -> str:
    start = text.index(after)
    body = text[text.index(fence, start) + len(fence):]
    return body[: body.index("```")]


def _localise(script: str, runner) -> str:
    # no address of its own: every example takes the runner's from demo.json (its baseUrl)
    assert not re.search(r"127\.0\.0\.1:\d|localhost:\d", script), script
    demo = runner.stdout.parent / "demo.json"
    return script.replace(".local/demo.json", str(demo))


def _first_step() -> str:
    """The documented first step of every docs example: BASE and HMAC_KEY from .local/demo.json."""
    return _block("## The examples", text=INDEX)


def _bash(script: str) -> str:
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


needs_shell_tools = pytest.mark.skipif(not (shutil.which("curl") and shutil.which("openssl")),
                                       reason="the README's shell examples use curl and openssl")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_shell_tools
def test_the_walkthrough_runs_as_written(tmp_path):
    """Pasted as one block, `make run-bg` and `make stop` included (issue 26), into one bash, in a copy of the
    repository's top level (links) whose ``.local`` is a fresh directory: a reader's first run. Only the port is
    the test's (PORT, as the README says), so that it never meets a runner of the reader's."""
    script = _block("## Walkthrough")
    assert script.lstrip().startswith("make run-bg") and script.rstrip().endswith(
        "make stop    # stops the runner that make run-bg started")
    assert 'BASE=$(python3' in script and '["baseUrl"]' in script  # the base URL is read from .local/demo.json
    assert not re.search(r"<[a-z][^>\n]*>", "\n".join(ln for ln in script.splitlines() if not ln.startswith("#")))
    repo = tmp_path / "repo"
    repo.mkdir()
    for child in ROOT.iterdir():  # the repository as the reader has it (Makefile, .venv, local/), but .local
        if child.name != ".local":
            (repo / child.name).symlink_to(child, target_is_directory=child.is_dir())
    (repo / ".local").mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MAKE"))}, "PORT": str(_free_port())}
    done = subprocess.run(["bash", "-c", "set -e\n" + script], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=300)
    try:
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    finally:
        subprocess.run(["make", "--no-print-directory", "stop"], cwd=repo, env=env, capture_output=True, timeout=60)
    out = done.stdout
    assert out.startswith(f"Local platform listening on http://127.0.0.1:{env['PORT']} (pid ")
    assert "stopped the runner (pid" in out and "stopping" in (repo / ".local" / "run.log").read_text()
    assert '"reference": "walkthrough-1"' in out
    assert out.count('"errCode": 1003') == 1  # step 2: the same header twice, refused once
    assert '"PAN": "4761739001010010"' in out
    assert '\\"number\\":\\"4242424242424242\\"' in out  # the proxy's target received the detokenized number
    assert '"transaction_approved": true' in out


@needs_shell_tools
def test_the_openssl_and_curl_signing_example_runs_as_written(runner):
    out = _bash(_localise(_first_step() + _block("Sign with `openssl` and `curl`", text=AUTHENTICATION), runner))
    assert json.loads(out) == {"success": True, "reference": "openssl-1", "messageId": json.loads(out)["messageId"]}


def test_the_standard_library_signing_example_runs_as_written(runner):
    code = _block("With Python's standard library alone:", "```python", AUTHENTICATION)
    done = subprocess.run([sys.executable, "-c", _localise(code, runner)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["reference"] == "py-1"
