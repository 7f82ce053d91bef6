"""The local runner on keep-alive connections (issue 13): its echo page over one kept-alive connection, beside
the same page on a new connection per request, measured in the same run. A Nagle/delayed-ACK stall shows as a
keep-alive median near 40 ms. Prints JSON."""

from __future__ import annotations

import http.client
import json
import statistics
import time
from urllib.parse import urlsplit

from bench.common import runner_subprocess

BODY = json.dumps({"card": {"number": "tok"}, "pad": "x" * 900}).encode()


def _time(conn_factory, n: int) -> float:
    times = []
    conn = conn_factory()
    for i in range(n + 10):
        if conn is None:
            conn = conn_factory()
        t = time.perf_counter()
        conn.request("POST", "/_local/echo", body=BODY, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        if i >= 10:
            times.append((time.perf_counter() - t) * 1000)
        if resp.getheader("Connection", "").lower() == "close" or conn_factory.__name__ == "fresh":
            conn.close()
            conn = None
    return round(statistics.median(times), 3)


def main(n: int = 200) -> dict:
    with runner_subprocess() as (base_url, _demo):
        host = urlsplit(base_url)
        hostname, port = host.hostname, host.port
        assert hostname is not None  # the runner's http://127.0.0.1:<port>

        def fresh() -> http.client.HTTPConnection:
            return http.client.HTTPConnection(hostname, port, timeout=10)

        def kept() -> http.client.HTTPConnection:
            return http.client.HTTPConnection(hostname, port, timeout=10)

        out = {"echo_1kb_keep_alive_median_ms": _time(kept, n),
               "echo_1kb_new_connection_median_ms (reference)": _time(fresh, n)}
    print(json.dumps({"runner_keep_alive": out}, indent=2))
    return out


if __name__ == "__main__":
    main()
