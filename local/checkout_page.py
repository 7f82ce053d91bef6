"""Runner-only checkout demo (never part of the deployed stack): a shop page with the device collection script.

``GET /_local/checkout`` is a checkout page as a merchant would build it: it generates a new device transaction
id (a GUID per page load, as the spec asks), adds the collector script tag of the spec (``id=bcn``, ``dvc=a``,
``dvct``, ``dvci``, ``sid``) for the demo checkout account's client id, and pays with a test card. With
``?autopay=1`` it pays as soon as the script reported (the browser test uses this); otherwise on the button.

``POST /_local/checkout/pay`` plays the merchant's server: the browser sends the card fields and the device
transaction id; the server adds the account credentials (which a page must never hold) and calls the gateway
(``POST /api/qsapi/3.8``, SALE with ``device_trans_id``), then reads the transaction detail back through the
management API to show the fraud score and recommendation the gateway stored with it.
"""

from __future__ import annotations

import html
import json
import os
import urllib.error
import urllib.request
from typing import Any

__all__ = ["checkout", "ROUTE"]

TEST_CARD = "4242424242424242"

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Demo shop checkout</title>
<style>body{font-family:sans-serif;max-width:36em;margin:2em auto}label{display:block;margin:.5em 0}
pre{background:#f4f4f4;padding:1em;white-space:pre-wrap}</style></head>
<body>
<h1>Demo shop</h1>
<p>Order total: <strong>$__AMOUNT__</strong> (sandbox; the card below is a test card)</p>
<form id="pay">
  <label>Card number <input id="card_number" value="__CARD__" autocomplete="off"></label>
  <label>Expiry (MMYY) <input id="card_expiration" value="1230"></label>
  <label>CVV <input id="card_verification" value="123"></label>
  <label>Zip <input id="zip" value="10001"></label>
  <button type="submit">Pay</button>
</form>
<p>Device collection: <span id="bcn-status">loading</span></p>
<pre id="result">not paid yet</pre>
<script>
(function () {
  "use strict";
  var dvci = (window.crypto && crypto.randomUUID) ? crypto.randomUUID()
           : "dv-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2);
  var s = document.createElement("script");
  s.id = "bcn";
  s.setAttribute("dvc", "a");
  s.setAttribute("dvct", "800");
  s.setAttribute("dvci", dvci);
  s.setAttribute("sid", "demo-" + Date.now().toString(36));
  s.src = "__SCRIPT__";
  var collected = new Promise(function (resolve) {
    document.addEventListener("bcn:collected", function (e) { resolve(e.detail.status); });
    s.onerror = function () { resolve("script-error"); };
    setTimeout(function () { resolve("timeout"); }, 5000);
  });
  collected.then(function (status) { document.getElementById("bcn-status").textContent = status; });
  document.head.appendChild(s);

  function value(id) { return document.getElementById(id).value; }
  function pay() {
    return collected.then(function () {
      return fetch("/_local/checkout/pay", {method: "POST", headers: {"Content-Type": "application/json"},
        body: JSON.stringify({card_number: value("card_number"), card_expiration: value("card_expiration"),
                              card_verification: value("card_verification"), zip: value("zip"),
                              transaction_amount: "__AMOUNT__", device_trans_id: dvci})});
    }).then(function (r) { return r.json(); }).then(function (answer) {
      document.getElementById("result").textContent = JSON.stringify(answer);
      document.title = "paid: " + (answer.transaction_approved ? "approved" : "not approved");
    }, function (err) {
      document.getElementById("result").textContent = JSON.stringify({error: String(err)});
      document.title = "paid: error";
    });
  }
  document.getElementById("pay").addEventListener("submit", function (e) { e.preventDefault(); pay(); });
  if (/[?&]autopay=1/.test(location.search)) { pay(); }
})();
</script>
</body></html>
"""


def _demo(platform: Any) -> dict[str, Any]:
    return json.loads((platform.state_dir / "demo.json").read_text())


def _call(method: str, url: str, body: dict[str, Any] | None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - the runner's own loopback
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def _pay(platform: Any, body: bytes) -> tuple[int, dict[str, str], bytes]:
    base = os.environ["VAULT_LOCAL_BASE_URL"]
    account = _demo(platform)["checkout"]
    form = json.loads(body or b"{}")
    fields = {k: str(form.get(k, "")) for k in ("card_number", "card_expiration", "card_verification", "zip",
                                                 "transaction_amount", "device_trans_id")}
    status, answer = _call("POST", base + "/api/qsapi/3.8", {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"], "response_format": "JSON",
        "transaction_type": "SALE", "tender_type": "CARD", "payment_type": "ECOMMERCE", "currency": "USD", **fields})
    if isinstance(answer, dict) and answer.get("transaction_id"):
        _, detail = _call("GET", f"{base}/admin/v1/accounts/{account['account_id']}/transactions/"
                                 f"{answer['transaction_id']}", None)
        if isinstance(detail, dict):
            answer["fraud"] = {k: detail.get(k) for k in ("fraud_score", "fraud_recommendation", "fraud_reasons")}
        answer["device_trans_id"] = fields["device_trans_id"]
    return status, {"Content-Type": "application/json"}, json.dumps(answer).encode()


def checkout(platform: Any, method: str, path: str, headers: dict[str, str], body: bytes
             ) -> tuple[int, dict[str, str], bytes]:
    if method == "POST" and path.split("?")[0] == "/_local/checkout/pay":
        return _pay(platform, body)
    if method != "GET" or path.split("?")[0] not in ("/_local/checkout", "/_local/checkout/"):
        return 404, {"Content-Type": "text/plain"}, b"Not Found"
    account = _demo(platform)["checkout"]
    page = (_PAGE.replace("__SCRIPT__", html.escape(f"/cdn/cs/{account['fraud_client_id']}.js"))
            .replace("__CARD__", TEST_CARD).replace("__AMOUNT__", "24.99"))
    return 200, {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"}, page.encode()


ROUTE = ("/_local/checkout", checkout)
