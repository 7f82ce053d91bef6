"""A moto server in its own process, with DynamoDB's per-item atomicity (local/moto_atomic.py) installed.

``python -m tests.faults.moto_server --port N`` serves until killed. It outlives any runner pointed at it with
``--aws-endpoint`` (so a killed runner restarts onto the same data), and its CPU is not the test's.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MotoProcess:
    """Starts ``python -m tests.faults.moto_server`` and waits until it accepts connections."""

    def __init__(self, log: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.faults.moto_server", "--port", str(self.port)],
                                     cwd=ROOT, env=env, stdout=out, stderr=out)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("moto server exited")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)
        self.proc.kill()
        raise RuntimeError("moto server did not start in 30 s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("MOTO_ALLOW_NONEXISTENT_REGION", "true")
    sys.path.insert(0, str(ROOT))
    from moto.server import ThreadedMotoServer

    from local import moto_atomic

    moto_atomic.install()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=args.port, verbose=False)
    server.start()
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
