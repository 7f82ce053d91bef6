"""Issue 13: the masked proxy log leaves the request path through the log subscription, and under concurrent
load through the runner every exchange is stored, once."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from tests import spec_client
from tests.e2e.http import admin, post_json


def test_forty_concurrent_exchanges_are_all_logged(runner):
    pid, key = runner.demo["partner"]["partnerId"], runner.demo["partner"]["hmacKey"]
    config = {"proxy": {"authorization": {"type": "passthrough"}, "method": "post",
                        "target": runner.base_url + "/_local/echo"}, "actions": []}
    status, created = admin(runner.base_url, "POST", f"/admin/v1/partners/{pid}/proxy-configurations", config)
    assert status == 201, created
    ref = created["configReferenceID"]
    url = f"{runner.base_url}/api/v1/partners/{pid}/configurations/{ref}"

    def exchange(n: int) -> int:
        return spec_client.signed_post(url, pid, key, {"n": n})[0]

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(exchange, range(40))) == [200] * 40
    status, page = post_json(f"{runner.base_url}/admin/v1/partners/{pid}/proxy-logs?configReferenceID={ref}"
                             f"&limit=100", method="GET")
    assert status == 200
    numbers = sorted(json.loads(entry["request"]["body"])["n"] for entry in page["logs"])
    assert numbers == list(range(40))
