"""The local runner (`python -m local.runner`, what `make run` starts) as a subprocess for end-to-end tests.

One place that starts it on a free port with a state dir of its own, captures its output to files (tests scan
them for secrets and card data), waits until it listens and has written ``demo.json``, and stops it.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from local.background import wait_until_serving

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RunnerProcess:
    base_url: str
    demo: dict[str, Any]
    stdout: Path
    stderr: Path
    proc: subprocess.Popen


@contextlib.contextmanager
def runner_process(state: Path, *args: str, start_seconds: float = 180) -> Iterator[RunnerProcess]:
    """``python -m local.runner --port 0 --state-dir <state> --quiet-banner <args>``, listening, for the block."""
    out, err = state / "stdout.log", state / "stderr.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}  # the runner's own moto only
    env["PYTHONUNBUFFERED"] = "1"
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "local.runner", "--port", "0", "--state-dir", str(state),
                                 "--quiet-banner", *args], cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
    try:
        base_url = wait_until_serving(proc, err, state, start_seconds)  # RunnerFailed (a RuntimeError) if not
        yield RunnerProcess(base_url, json.loads((state / "demo.json").read_text()), out, err, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
