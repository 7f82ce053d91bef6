"""Runner-only demo shop (never part of the deployed stack): a merchant page on a second origin that embeds the
payment iFrame, and the merchant's server that charges the eToken.

Open ``http://localhost:<port>/_local/checkout`` (the runner serves ``http://127.0.0.1:<port>``: ``localhost``
is another origin of the same server, which is what a merchant's shop is to the gateway). The page

1. asks its server for an instance (``POST /_local/checkout/session``): the server holds the account's
   credentials (a page never does), creates the shop's payment iFrame configuration once
   (``allowedParentDomains`` = this page's origin, CARD and ACH, CVV required, zip optional, antiFraud) and calls
   ``POST /api/v4/accounts/{account_id}/payment-iframe/{id}/instance/init``;
2. includes ``{gateway}/iframe/v1/checkout.js`` and mounts the iframe with the bearer token;
3. on "Pay" calls ``checkout.submit()`` and sends the result (eToken, customId, method, device transaction id:
   no card data) to its server (``POST /_local/checkout/charge``), which charges it through ``/api/qsapi/3.8``
   (SALE with ``etoken`` + ``custom_id``) and answers the gateway's response (with the fraud score).

The merchant server's log (``<state-dir>/shop.log``: every request it received and every answer it got) is what
the browser test scans for card data. ``?token=<bearer>`` mounts a given token, ``?loadTimeoutMs=`` sets the
library's load timeout (tests).

The shop's account (``<state-dir>/shop.json``) is made on first use through the management API: the demo
partner's keys, token payments and fraud scoring on, a fraud client id.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
from base64 import b64encode
from typing import Any

__all__ = ["shop", "ROUTE"]

_lock = threading.Lock()

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Demo shop checkout</title>
<style>body{font-family:sans-serif;max-width:36em;margin:2em auto}#payment{margin:1em 0}
pre{background:#f4f4f4;padding:1em;white-space:pre-wrap}</style></head>
<body>
<h1>Demo shop</h1>
<p>Order total: <strong>$__AMOUNT__</strong> (sandbox: use a test card or bank account,
docs/integrators/test-cards.md)</p>
<div id="payment"></div>
<button id="pay" type="button">Pay</button> <button id="again" type="button">Charge the same eToken again</button>
<p>Status: <span id="status">loading</span></p>
<pre id="result">not paid yet</pre>
<script src="__GATEWAY__/iframe/v1/checkout.js"></script>
<script>
(function () {
  "use strict";
  var params = new URLSearchParams(location.search);
  var shop = window.shop = {ready: false, errors: [], changes: 0, mountedAt: 0, readyAt: 0, last: null};
  function status(text) { document.getElementById("status").textContent = text; }
  function show(answer) { document.getElementById("result").textContent = JSON.stringify(answer); }
  function post(path, body) {
    return fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)})
      .then(function (r) { return r.json(); });
  }
  var session = params.get("token") ? Promise.resolve({bearerToken: params.get("token")})
                                    : post("/_local/checkout/session", {amount: "__AMOUNT__"});
  session.then(function (s) {
    shop.customId = s.customId;
    shop.mountedAt = performance.now();
    shop.checkout = VaultCheckout.mount("#payment", {
      bearerToken: s.bearerToken,
      loadTimeoutMs: parseInt(params.get("loadTimeoutMs") || "10000", 10),
      onReady: function () { shop.ready = true; shop.readyAt = performance.now(); status("ready"); },
      onChange: function (e) { shop.changes++; shop.complete = e.complete; },
      onError: function (e) { shop.errors.push(e.code); status("error: " + e.code); }
    });
  });
  function charge(result) {
    return post("/_local/checkout/charge", {eToken: result.eToken, customId: result.customId,
                                            paymentMethod: result.paymentMethod,
                                            device_trans_id: result.antiFraud ? result.antiFraud.device_trans_id : null})
      .then(function (answer) {
        show(answer);
        document.title = "paid: " + (answer.transaction_approved ? "approved" : "refused " + answer.error_code);
        return answer;
      });
  }
  shop.pay = function () {
    return shop.checkout.submit().then(function (result) {
      shop.last = result;
      status("tokenized");
      return charge(result);
    }, function (err) { shop.errors.push(err.code); status("not submitted: " + err.code); return err; });
  };
  shop.again = function () { return charge(shop.last); };
  document.getElementById("pay").addEventListener("click", function () { shop.pay(); });
  document.getElementById("again").addEventListener("click", function () { shop.again(); });
})();
</script>
</body></html>
"""


def _log(platform: Any, line: dict[str, Any]) -> None:
    with _lock, open(platform.state_dir / "shop.log", "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


def _call(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the runner's own loopback
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def _account(platform: Any, base: str, origin: str) -> dict[str, Any]:
    """The shop's account and its configuration for ``origin`` (made once, kept in shop.json)."""
    path = platform.state_dir / "shop.json"
    with _lock:
        state = json.loads(path.read_text()) if path.exists() else {}
        if "account" not in state:
            _, account = _call("POST", base + "/admin/v1/accounts", {
                "partnerId": "demo", "options": {"token_payments": True, "fraud_scoring": True}})
            _call("POST", f"{base}/admin/v1/accounts/{account['account_id']}/fraud-client")
            state["account"] = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"]}
        configs = state.setdefault("configurations", {})
        if origin not in configs:
            status, config = _call("POST", f"{base}/api/v4/accounts/{state['account']['account_id']}/payment-iframe", {
                "label": "Demo shop", "allowedParentDomains": [origin], "allowedPaymentMethods": ["CARD", "ACH"],
                "cardSettings": {"cvv": "required", "billingAddress": {"zip": "optional"}}, "antiFraud": True,
                "timeout": 900}, _basic(state["account"]))
            if status != 201:
                raise RuntimeError(f"shop configuration refused: {config}")
            configs[origin] = config["id"]
        path.write_text(json.dumps(state))
        return {**state["account"], "configuration": configs[origin]}


def _basic(account: dict[str, Any]) -> dict[str, str]:
    raw = f"{account['account_id']}:{account['api_accesskey']}".encode()
    return {"Authorization": "Basic " + b64encode(raw).decode()}


def _origin(headers: dict[str, str]) -> str:
    host = {k.lower(): v for k, v in headers.items()}.get("host", "localhost")
    return "http://" + host


def _session(platform: Any, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    base = os.environ["VAULT_LOCAL_BASE_URL"]
    # The shop's configuration allows http://localhost:<port> (the demo's second origin); a page opened on any
    # other origin (127.0.0.1: the gateway's own) gets the same configuration, so the browser refuses the frame.
    port = base.rsplit(":", 1)[1]
    account = _account(platform, base, f"http://localhost:{port}")
    amount = str(json.loads(body or b"{}").get("amount", "24.99"))
    status, instance = _call("POST", f"{base}/api/v4/accounts/{account['account_id']}/payment-iframe/"
                                     f"{account['configuration']}/instance/init",
                             {"label": "Demo order", "amount": amount}, _basic(account))
    # transactionId: the custom_id the SALE carries (the original's instance answer: {id, bearerToken, transactionId})
    _log(platform, {"event": "instance", "status": status, "customId": instance.get("transactionId")})
    return status, {"Content-Type": "application/json"}, json.dumps(
        {"bearerToken": instance.get("bearerToken"), "customId": instance.get("transactionId")}).encode()


def _charge(platform: Any, body: bytes) -> tuple[int, dict[str, str], bytes]:
    base = os.environ["VAULT_LOCAL_BASE_URL"]
    account = _account(platform, base, f"http://localhost:{base.rsplit(':', 1)[1]}")
    form = json.loads(body or b"{}")
    _log(platform, {"event": "charge-request", "received": form})
    variables = {"account_id": account["account_id"], "api_accesskey": account["api_accesskey"],
                 "response_format": "JSON", "transaction_type": "SALE",
                 "tender_type": "ACH" if form.get("paymentMethod") == "ACH" else "CARD",
                 "payment_type": "ECOMMERCE", "currency": "USD", "transaction_amount": "24.99",
                 "etoken": str(form.get("eToken", "")), "custom_id": str(form.get("customId", ""))}
    if form.get("device_trans_id"):
        variables["device_trans_id"] = str(form["device_trans_id"])
    status, answer = _call("POST", base + "/api/qsapi/3.8", variables)
    if isinstance(answer, dict) and answer.get("transaction_id"):
        _, detail = _call("GET", f"{base}/admin/v1/accounts/{account['account_id']}/transactions/"
                                 f"{answer['transaction_id']}")
        if isinstance(detail, dict):
            answer["fraud"] = {k: detail.get(k) for k in ("fraud_score", "fraud_recommendation", "fraud_reasons")}
    _log(platform, {"event": "charge-answer", "status": status, "answer": answer})
    return status, {"Content-Type": "application/json"}, json.dumps(answer).encode()


def shop(platform: Any, method: str, path: str, headers: dict[str, str], body: bytes
         ) -> tuple[int, dict[str, str], bytes]:
    route = path.split("?")[0].rstrip("/")
    if method == "POST" and route == "/_local/checkout/session":
        return _session(platform, headers, body)
    if method == "POST" and route == "/_local/checkout/charge":
        return _charge(platform, body)
    if method != "GET" or route != "/_local/checkout":
        return 404, {"Content-Type": "text/plain"}, b"Not Found"
    page = _PAGE.replace("__GATEWAY__", os.environ["VAULT_LOCAL_BASE_URL"]).replace("__AMOUNT__", "24.99")
    return 200, {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"}, page.encode()


ROUTE = ("/_local/checkout", shop)
