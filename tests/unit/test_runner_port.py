"""A busy port: ``python -m local.runner`` (``make run``) says so in one line and exits 2, before starting moto."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_busy_port_gives_one_line_and_no_traceback(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "local.runner", "--port", str(port), "--state-dir",
                               str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith(f"error: port {port} on 127.0.0.1 is not free")
    assert not list(tmp_path.iterdir())  # nothing was started or written


def test_a_free_port_is_reported_free():
    from local.runner import _port_in_use

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert _port_in_use(port) is None
