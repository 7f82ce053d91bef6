"""The stack bench_cold_start.py measures against: the local runner (moto in server mode on loopback, every table,
queue and key of template.yaml, the demo data), started in this process, plus what the representative requests
need beyond the demo data. Writes ``<state-dir>/platform.json`` (the functions' environment and the demo data)
and runs until SIGTERM.

    python -m bench.cold_start_platform --state-dir DIR
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--state-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    before = dict(os.environ)
    from local.runner import start
    from local.seed import admin

    platform, server, demo = start(0, "cert", args.state_dir, seed_demo=True)
    base_url = demo["baseUrl"]
    # A gateway account whose postbacks go to the runner's echo page: the postback function's request.
    demo["postbackAccount"] = admin(base_url, "POST", "/admin/v1/accounts", {
        "options": {"tokenization": False, "token_payments": False}, "postback_url": f"{base_url}/_local/echo"})
    # The function environment the runner gave its handlers (template variables, moto endpoint, credentials).
    env = {k: v for k, v in os.environ.items() if before.get(k) != v}
    (args.state_dir / "platform.json").write_text(json.dumps({"env": env, "demo": demo}, indent=2))
    print(f"cold-start platform ready on {base_url}", file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.is_set():
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    server.shutdown()
    platform.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
