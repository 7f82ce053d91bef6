"""`make run-bg` and `make stop`: the local runner in the background, for walkthroughs pasted as one block.

``python -m local.background start`` starts ``python -m local.runner`` detached, its output in
``<state-dir>/run.log`` (not the terminal), removes the ``demo.json`` of an earlier run first, and returns
only once the runner listens *and* has written a fresh ``demo.json``: the next pasted command can read it.
It prints one line. ``python -m local.background stop`` stops the runner it started (the pid is in
``<state-dir>/runner.pid``) with SIGTERM, as Ctrl-C would, and waits for it: no ``lsof`` needed.

:func:`wait_until_serving` is also how the end-to-end tests wait for their runners (tests/e2e/runner_process.py).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTENING = re.compile(r"Local platform listening on (http://\S+)")


class RunnerFailed(RuntimeError):
    """The runner exited, or did not serve in time. The message ends with the tail of its log."""


def wait_until_serving(proc: subprocess.Popen, log: Path, state: Path, seconds: float) -> str:
    """The runner's base URL, once its log says it listens and ``<state>/demo.json`` exists."""
    deadline = time.monotonic() + seconds
    while True:
        text = log.read_text(errors="replace") if log.exists() else ""
        if proc.poll() is not None:
            raise RunnerFailed(f"the runner exited (status {proc.returncode}):\n{text[-2000:]}")
        found = LISTENING.search(text)
        if found and (state / "demo.json").exists():
            return found.group(1)
        if time.monotonic() > deadline:
            raise RunnerFailed(f"the runner did not serve within {seconds:.0f} s:\n{text[-2000:]}")
        time.sleep(0.1)


def _pid_file(state: Path) -> Path:
    return state / "runner.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start(state: Path, port: int, extra: list[str], seconds: float = 180) -> int:
    state.mkdir(parents=True, exist_ok=True)
    pid_file = _pid_file(state)
    if pid_file.exists() and _alive(int(pid_file.read_text() or 0)):
        print(f"a runner started by make run-bg is already running (pid {pid_file.read_text().strip()}); "
              "make stop stops it", file=sys.stderr)
        return 2
    (state / "demo.json").unlink(missing_ok=True)  # never an earlier run's keys
    log = state / "run.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the log is current while the runner serves
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "local.runner", "--port", str(port), "--state-dir", str(state),
                                 "--quiet-banner", *extra], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    pid_file.write_text(str(proc.pid))
    try:
        base_url = wait_until_serving(proc, log, state, seconds)
    except RunnerFailed as exc:
        pid_file.unlink(missing_ok=True)
        if proc.poll() is None:
            proc.terminate()
        print(f"make run-bg: {exc}", file=sys.stderr)
        return 2
    print(f"Local platform listening on {base_url} (pid {proc.pid}; demo data in {state / 'demo.json'}, "
          f"logs in {log}; make stop stops it)")
    return 0


def stop(state: Path, seconds: float = 20) -> int:
    pid_file = _pid_file(state)
    if not pid_file.exists():
        print("no runner started by make run-bg is running")
        return 0
    pid = int(pid_file.read_text() or 0)
    if pid and _alive(pid):
        os.kill(pid, signal.SIGTERM)  # the runner stops its server, poller and moto, and prints "stopping"
        deadline = time.monotonic() + seconds
        while _alive(pid) and time.monotonic() < deadline:
            try:  # our child when started from this process; otherwise poll until it is gone
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    break
            except ChildProcessError:
                pass
            time.sleep(0.1)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    pid_file.unlink(missing_ok=True)
    print(f"stopped the runner (pid {pid})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The local runner in the background (make run-bg, make stop).")
    parser.add_argument("command", choices=["start", "stop"])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "3000")))
    parser.add_argument("--state-dir", type=Path, default=ROOT / ".local")
    argv = list(sys.argv[1:] if argv is None else argv)
    runner_args = argv[argv.index("--") + 1:] if "--" in argv else []  # passed on to local.runner (make ARGS=...)
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.state_dir = args.state_dir.absolute()  # the caller's .local: the runner itself runs from the repository
    if args.command == "start":
        return start(args.state_dir, args.port, runner_args)
    return stop(args.state_dir)


if __name__ == "__main__":
    sys.exit(main())
