"""Payment iFrame figures (issue 19): the iframe page's size (HTML, frame.js, checkout.js; raw and gzip), the
server time and DynamoDB round trips of a submission and of an eToken SALE (in-process moto), and the time from
``VaultCheckout.mount`` to ``onReady`` in Debian's chromium (Playwright against the local runner; skipped with a
note when chromium or playwright is missing). Prints JSON."""

from __future__ import annotations

import base64
import gzip
import json
import os
import statistics
import time

from bench.common import in_process_platform, percentile


def _sizes(platform, call, headers_of, token: str) -> dict:
    from vaultcore.iframe.page import static_file

    status, headers, html = call(platform, "IframeFunction", "GET", "/iframe/v1/frame", None, None,
                                 query={"token": token, "origin": "https://shop.example"}, resource="/iframe/v1/frame")
    assert status == 200 and 'name="cardNumber"' in html
    out = {"frame_html_bytes": len(html.encode()), "frame_html_gzip_bytes": len(gzip.compress(html.encode()))}
    for name in ("frame.js", "checkout.js"):
        data = static_file(name).encode()
        out[f"{name}_bytes"] = len(data)
        out[f"{name}_gzip_bytes"] = len(gzip.compress(data))
    out["page_total_bytes"] = out["frame_html_bytes"] + out["frame.js_bytes"]
    return out


def in_process(n: int = 60) -> dict:
    from tests.helpers import admin, call
    from vaultcore.store.aws import ddb_calls, reset_ddb_calls

    with in_process_platform() as platform:
        _, partner = admin(platform, "POST", "/admin/v1/partners", {"name": "bench", "apiSecurity": "hmac"})
        _, acct = admin(platform, "POST", "/admin/v1/accounts", {"partnerId": partner["partnerId"],
                                                                 "options": {"token_payments": True}})
        account_id = acct["account_id"]
        basic = "Basic " + base64.b64encode(f"{account_id}:{acct['api_accesskey']}".encode()).decode()
        resource = "/api/v4/accounts/{account_id}/payment-iframe"

        def api(suffix: str, body: dict, config_id: str = "") -> dict:
            params = {"account_id": account_id, **({"id": config_id} if config_id else {})}
            path = (resource + suffix).replace("{account_id}", account_id).replace("{id}", config_id)
            status, _, out = call(platform, "IframeFunction", "POST", path, body, {"Authorization": basic},
                                  resource=resource + suffix, path_params=params)
            assert status == 201, out
            return out

        config = api("", {"label": "bench", "allowedParentDomains": ["https://shop.example"],
                          "cardSettings": {"billingAddress": {"zip": "required"}}})
        submit_ms, submit_calls, sale_ms, sale_calls = [], [], [], []
        sizes: dict = {}
        for i in range(n + 10):
            inst = api("/{id}/instance/init", {"label": "order", "customId": f"o{i}"}, config["id"])
            if not sizes:
                sizes = _sizes(platform, call, None, inst["bearerToken"])
            reset_ddb_calls()
            t = time.perf_counter()
            status, _, result = call(platform, "IframeFunction", "POST", "/iframe/v1/submit",
                                     {"paymentMethod": "CARD", "cardNumber": "4242424242424242",
                                      "cardExpiration": "12/30", "cardCvv": "123", "zip": "94107"},
                                     {"Authorization": "Bearer " + inst["bearerToken"]}, resource="/iframe/v1/submit")
            elapsed, calls = (time.perf_counter() - t) * 1000, ddb_calls()
            assert status == 200, result
            reset_ddb_calls()
            t = time.perf_counter()
            status, _, sale = call(platform, "GatewayFunction", "POST", "/api/qsapi/3.8", json.dumps({
                "account_id": account_id, "api_accesskey": acct["api_accesskey"], "transaction_type": "SALE",
                "tender_type": "CARD", "transaction_amount": "10.00", "currency": "USD", "payment_type": "ECOMMERCE",
                "etoken": result["eToken"], "custom_id": f"o{i}"}), {"Content-Type": "application/json"},
                resource="/api/qsapi/3.8")
            sale_elapsed, sale_round_trips = (time.perf_counter() - t) * 1000, ddb_calls()
            assert sale["transaction_approved"], sale
            if i >= 10:  # warm only
                submit_ms.append(elapsed)
                submit_calls.append(calls)
                sale_ms.append(sale_elapsed)
                sale_calls.append(sale_round_trips)
    return {"sizes": sizes,
            "submission": {"median_ms": round(statistics.median(submit_ms), 3), "p95_ms": percentile(submit_ms, 0.95),
                           "dynamodb_round_trips": max(submit_calls)},
            "etoken_sale": {"median_ms": round(statistics.median(sale_ms), 3), "p95_ms": percentile(sale_ms, 0.95),
                            "dynamodb_round_trips": max(sale_calls)},
            "note": "moto in-process stands in for DynamoDB and KMS; round trips are what a deployed stack pays"}


def browser(samples: int = 5) -> dict:
    """mount -> onReady in Debian's chromium, against a local runner (the demo shop page)."""
    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    if not os.path.exists("/usr/bin/chromium"):
        return {"skipped": "no /usr/bin/chromium (apt-get install chromium)"}
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {"skipped": "playwright is not installed (requirements-dev.txt)"}
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    state = Path(tempfile.mkdtemp(prefix="bench-iframe-"))
    err = open(state / "stderr.log", "wb")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and k != "VAULT_AWS_SDK"}
    proc = subprocess.Popen([sys.executable, "-m", "local.runner", "--port", "0", "--state-dir", str(state),
                             "--quiet-banner"], cwd=Path(__file__).resolve().parents[1], env=env,
                            stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 90
        base = None
        while time.monotonic() < deadline and base is None:
            text = (state / "stderr.log").read_text(errors="replace")
            if "listening on" in text and (state / "demo.json").exists():
                base = text.split("listening on ", 1)[1].split()[0]
            time.sleep(0.2)
        if base is None:
            return {"skipped": "the runner did not start"}
        url = base.replace("127.0.0.1", "localhost") + "/_local/checkout"
        times = []
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"])
            for _ in range(samples + 1):
                page = b.new_page()
                page.goto(url)
                page.wait_for_function("window.shop && window.shop.ready", timeout=30000)
                times.append(page.evaluate("window.shop.readyAt - window.shop.mountedAt"))
                page.close()
            b.close()
        warm = times[1:]
        return {"mount_to_onready_ms_median": round(statistics.median(warm), 1), "first_ms": round(times[0], 1),
                "samples": len(warm)}
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def main() -> dict:
    result = {"in_process": in_process(), "browser": browser()}
    print(json.dumps({"iframe": result}, indent=2))
    return result


if __name__ == "__main__":
    main()
