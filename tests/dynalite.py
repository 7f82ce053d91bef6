"""dynalite (https://github.com/architect/dynalite): a second DynamoDB implementation, from npm, for race tests.

moto is the project's DynamoDB stand-in, and its conditional writes are made atomic by local/moto_atomic.py. A
race test that passes on moto alone proves the platform's conditions against a model the project itself patched;
dynalite is an independent implementation (Node.js, LevelDB semantics, per-item locking) to run the same races
on. It lacks TransactWriteItems and ReturnValuesOnConditionCheckFailure, so the races run here are the ones made
of single conditional writes (refunds, captures, reversals, nonces, credit allowances, idempotency claims).

Node.js and npm come from Debian's packages when missing (as chromium does for the browser tests: root and
apt-get); dynalite from the npm registry into ``.local/node`` (pinned below), once per machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

DYNALITE_VERSION = "3.2.2"
ROOT = Path(__file__).resolve().parent.parent
PREFIX = ROOT / ".local" / "node"


def _run(*cmd: str, timeout: int) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "npm_config_fund": "false",
           "npm_config_audit": "false", "npm_config_update_notifier": "false"}
    out = subprocess.run(list(cmd), env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr[-2000:]}")


def ensure_dynalite() -> Path:
    """The path of dynalite's command-line script, installing Node.js and dynalite when missing."""
    cli = PREFIX / "node_modules" / "dynalite" / "cli.js"
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.geteuid() != 0 or shutil.which("apt-get") is None:
            raise RuntimeError("node and npm are missing and cannot be installed here (needs root and apt-get)")
        _run("apt-get", "update", "-qq", timeout=600)
        _run("apt-get", "install", "-y", "-qq", "nodejs", "npm", timeout=1200)
    if not cli.exists():
        PREFIX.mkdir(parents=True, exist_ok=True)
        _run("npm", "install", "--prefix", str(PREFIX), "--no-save", f"dynalite@{DYNALITE_VERSION}", timeout=600)
    return cli


@contextlib.contextmanager
def dynalite_server() -> Iterator[str]:
    """A dynalite server on a free loopback port (in memory), for the duration of the block: its endpoint URL."""
    cli = ensure_dynalite()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # Through its API rather than its CLI, which has no host option: loopback only (STYLE.md pitfall 6).
    script = (f"require({json.dumps(str(cli.parent))})({{createTableMs: 0, deleteTableMs: 0, updateTableMs: 0}})"
              f".listen({port}, '127.0.0.1')")
    proc = subprocess.Popen(["node", "-e", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("dynalite did not start") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
