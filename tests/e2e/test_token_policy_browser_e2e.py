"""Issue 27 in Chromium: a hostile origin against the payment iFrame, then the eToken it captured against the policy.

The browser parts of tests/e2e/test_token_policy_e2e.py (its two partners and three accounts: :class:`World`).
The demo shop page (``local/iframe_shop.py`` at the runner's ``localhost`` origin) mounts a fresh instance of the
shop account (``?token=``). The hostile origin is a server of the test's own on another loopback port (not the gateway's
``127.0.0.1:<port>``, which is the card frame's own origin and could read its DOM):

* (a) forged ``{vault: "checkout", type: "submit"}`` messages to the filled card frame from a hostile opener
  window, from a hostile sibling frame and a same-origin (``srcdoc``) sibling of the shop page, and from a hostile
  parent (with ``frame-ancestors`` stripped from the frame's CSP by the route, so that the frame's own origin and
  source checks are what is tested) start no submission and post nothing back;
* (b) with the real headers, ``frame-ancestors`` refuses the frame in a hostile page, directly and inside the
  shop's page framed by the hostile page;
* (c) the eToken the shop got is refused to the partner's sibling account by ``etoken=`` and ``bfid=`` and to the
  other partner's account; after the shop's SALE every path refuses it (second use), and its CVV token is refused
  by the partner's ``read``, ``detokenize``, token payments and the proxy's detokenize action;

then every table, the runner's logs, the SQS queues' messages and the postbacks received hold no clear PAN, no CVV
token and no ``cvv``/``card_verification`` member with digits.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from urllib.parse import unquote

import pytest

from tests.e2e.browser import chromium  # noqa: F401 - the fixture
from tests.e2e.http import wait_until
from tests.e2e.test_iframe_browser import CARD, _fill_card, browser  # noqa: F401 - the fixture
from tests.e2e.test_proxy_e2e import Proxy, _place, _token_action
from tests.e2e.test_token_policy_e2e import CVV_NAME, World, _tables, assert_cvv_tokens_refused, cvv_tokens_of
from tests.postback_receiver import Receiver
from tests.proxy_target import Target

SUBMIT = "/iframe/v1/submit"
#: The hostile page: records every message it gets; forge(w) posts a submission request to w's first frame.
_HOSTILE_PAGE = """<!doctype html><meta charset="utf-8"><title>hostile</title><body><script>
window.got = [];
addEventListener("message", function (e) { window.got.push({origin: e.origin, data: e.data}); });
window.forge = function (w) { w.frames[0].postMessage({vault: "checkout", type: "submit", id: 1}, "*"); };
</script>__BODY__</body>"""
_SIBLING = "<script>forge(parent);</script>"  # a frame beside the card frame: its first frame is the card frame
_SRCDOC_SIBLING = ('<script>parent.frames[0].postMessage({vault: "checkout", type: "submit", id: 1}, '
                   '"*");</script>')
#: digits in a member named like a CVV, in JSON or DynamoDB JSON
_CVV_MEMBER = re.compile(r'"(?:card_verification|cvv|card_?cvv|cvv2)"\s*:\s*(?:\{\s*"[SN]"\s*:\s*)?"\d{3,4}"',
                         re.IGNORECASE)
pytest.importorskip("playwright")


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def world(runner, receiver) -> World:
    return World(runner, postback_url=receiver.url + "/policy")


class Hostile(http.server.ThreadingHTTPServer):
    """The hostile site: a server of its own on a loopback port (an origin that is neither the shop's nor the
    gateway's; a routed public name would be stopped by Chromium's local-network checks before any CSP)."""

    daemon_threads = True

    def __init__(self) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                path, _, query = self.path.partition("?")
                body = ""
                if path == "/parent":  # frames the URL it is given
                    body = f'<iframe id="f" src="{unquote(query.split("src=", 1)[1]).replace(chr(34), "")}"></iframe>'
                elif path == "/sibling":
                    body = _SIBLING
                data = _HOSTILE_PAGE.replace("__BODY__", body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


@pytest.fixture
def hostile():
    server = Hostile()
    yield server.url
    server.shutdown()
    server.server_close()


def _context(browser, runner, submits: list[str], strip_frame_ancestors: bool = False):  # noqa: F811
    context = browser.new_context()
    context.on("request", lambda r: submits.append(r.url) if SUBMIT in r.url else None)
    if strip_frame_ancestors:  # a browser without CSP frame-ancestors: the frame's own checks are what remain
        def strip(route) -> None:
            response = route.fetch()
            headers = {k: v for k, v in response.headers.items() if k.lower() != "x-frame-options"}
            csp = headers.get("content-security-policy", "")
            headers["content-security-policy"] = ";".join(d for d in csp.split(";") if "frame-ancestors" not in d)
            route.fulfill(response=response, headers=headers)

        context.route(re.compile("^" + re.escape(runner.base_url) + r"/iframe/v1/frame\?.*"), strip)
    return context


def _card_frame(page):
    frame = next(f for f in page.frames if f != page.main_frame and "/iframe/v1/frame" in f.url)
    frame.evaluate("window.__seen = 0; addEventListener('message', function () { window.__seen++; })")
    return frame


def _delivered(frame, n: int) -> None:
    """Waits until the card frame's window got ``n`` messages (its CSP forbids wait_for_function's eval)."""
    seen = frame.evaluate("n => new Promise(done => { const end = Date.now() + 20000; const poll = () => "
                          "window.__seen >= n || Date.now() > end ? done(window.__seen) : setTimeout(poll, 20); "
                          "poll(); })", n)
    assert seen >= n, f"{seen} of {n} messages delivered"


def _shop_url(runner) -> str:
    return runner.base_url.replace("127.0.0.1", "localhost") + "/_local/checkout"


def _frame_url(runner, token: str) -> str:
    shop_origin = _shop_url(runner).rsplit("/_local", 1)[0]
    return f"{runner.base_url}/iframe/v1/frame?token={token}&origin={shop_origin}"


def _received(*pages) -> str:
    return json.dumps([p.evaluate("window.got") for p in pages])


def test_forged_messages_are_ignored_frame_ancestors_holds_and_the_etoken_obeys_its_policy(
        runner, browser, world, receiver, hostile):  # noqa: F811 - the fixture
    shop_origin = _shop_url(runner).rsplit("/_local", 1)[0]
    submits: list[str] = []
    context = _context(browser, runner, submits)
    # (a) a hostile opener opens the shop's checkout; a hostile and a same-origin sibling frame join the page
    opener = context.new_page()
    opener.goto(hostile + "/opener")
    with context.expect_page() as popup:
        opener.evaluate("u => { window.victim = window.open(u); }",
                        _shop_url(runner) + "?token=" + world.shop.instance("browser-1", shop_origin))
    shop = popup.value
    shop.wait_for_function("window.shop && window.shop.ready", timeout=20000)
    _fill_card(shop)
    card = _card_frame(shop)
    opener.evaluate("forge(window.victim)")
    shop.evaluate("""([hostile, srcdoc]) => {
        for (const f of [Object.assign(document.createElement("iframe"), {src: hostile}),
                         Object.assign(document.createElement("iframe"), {srcdoc: srcdoc})]) {
            document.body.appendChild(f);
        }
    }""", [hostile + "/sibling", _SRCDOC_SIBLING])
    _delivered(card, 3)  # all three delivered (and ignored)
    assert submits == []
    sibling = next(f for f in shop.frames if f.url.startswith(hostile))
    # the shop's own submission: one request, the eToken to the shop only
    result = shop.evaluate("window.shop.checkout.submit()")
    etoken = result["eToken"]
    assert result["customId"] == "browser-1" and len(submits) == 1, (result, submits)
    got = _received(opener, sibling)
    assert etoken not in got and CARD not in got and "4242" not in got, got

    # (a) a hostile parent of the frame, frame-ancestors stripped: the frame's origin check alone refuses it
    stripped_submits: list[str] = []
    stripped = _context(browser, runner, stripped_submits, strip_frame_ancestors=True)
    parent = stripped.new_page()
    parent.goto(f"{hostile}/parent?src={_frame_url(runner, world.shop.instance('browser-2', shop_origin))}")
    parent.frame_locator("#f").locator("[name=cardNumber]").fill(CARD)
    for name, value in (("cardExpiration", "12/30"), ("cardCvv", "737"), ("zip", "94107")):
        parent.frame_locator("#f").locator(f"[name={name}]").fill(value)
    framed = _card_frame(parent)
    parent.evaluate("forge(window)")
    _delivered(framed, 1)
    got = _received(parent)
    assert stripped_submits == [] and "eToken" not in got and CARD not in got, (stripped_submits, got)
    stripped.close()

    # (b) the real headers: frame-ancestors refuses the frame in the hostile page, and below it in the shop's page
    direct, framing = context.new_page(), context.new_page()
    for page, src in ((direct, _frame_url(runner, world.shop.instance("browser-3", shop_origin))),
                      (framing, f"{_shop_url(runner)}?loadTimeoutMs=3000%26token="
                                + world.shop.instance("browser-4", shop_origin))):
        with page.expect_console_message(lambda m: "frame-ancestors" in m.text, timeout=20000):
            page.goto(f"{hostile}/parent?src={src}")
    framing.frame_locator("#f").locator("#status").filter(has_text="FRAME_TIMEOUT").wait_for(timeout=20000)
    for page in (direct, framing):
        assert not any(f.evaluate("document.getElementsByName('cardNumber').length")
                       for f in page.frames if f != page.main_frame and "/iframe/v1/frame" in f.url)
    assert len(submits) == 1
    context.close()

    # (c) the eToken: the sibling account (etoken= and bfid=) and the other partner's account are refused
    assert world.sibling.pay(etoken=etoken, custom_id="browser-1")["error_code"] == 306
    assert world.sibling.pay(bfid=etoken)["error_code"] == 303
    assert world.stranger.pay(bfid=etoken)["error_code"] == 302
    cvv_tokens = cvv_tokens_of(world)
    assert cvv_tokens
    sale = world.shop.pay(etoken=etoken, custom_id="browser-1")
    assert sale["transaction_approved"] is True and sale["cvv2_response"] == "M", sale
    # a second use, by anyone, by any parameter
    assert world.shop.pay(etoken=etoken, custom_id="browser-1")["error_code"] == 309
    assert world.shop.pay(bfid=etoken)["error_code"] == 309
    assert world.sibling.pay(etoken=etoken, custom_id="browser-1")["error_code"] in (306, 309)
    assert world.sibling.pay(bfid=etoken)["error_code"] in (303, 309)
    assert world.stranger.pay(bfid=etoken)["error_code"] == 302
    assert_cvv_tokens_refused(world, etoken, cvv_tokens)  # read, detokenize, token payments
    _proxy_refuses(runner, world, etoken, cvv_tokens)

    # the scan: tables, runner logs, queue messages, postbacks received
    delivered = wait_until(lambda: receiver.delivered("/policy"), 60.0)
    found = []
    # A CVV token is three or four digits: found as a whole JSON string value ("834", or \"834\" inside a JSON
    # string), never as a substring, which any id, duration or timestamp may hold. The proxy's request logs are
    # scanned too: the body the partner itself sent to the proxy above (a CVV token, refused) is stored masked.
    logs = runner.logs()
    for where, text in (("tables", json.dumps(_tables(runner))), ("runner logs", logs),
                        ("queue messages", json.dumps(_queue_messages(runner))),
                        ("postbacks", json.dumps([r["body"].decode(errors="replace") for r in delivered]))):
        found += [f"the card number in {where}"] if CARD in text else []
        found += [f"a CVV token in {where}" for token in cvv_tokens
                  if re.search(r'\\*"' + re.escape(token) + r'\\*"', text)]
        found += [f"a CVV member with digits in {where}"] if _CVV_MEMBER.search(text) else []
    assert found == []


def _proxy_refuses(runner, world: World, etoken: str, cvv_tokens: set[str]) -> None:
    """The proxy's detokenize action: a CVV field cannot be configured, and the CVV token put in a card-number
    field is refused (8103 or 8116); the target receives nothing."""
    partner = {**world.p, "apiSecurity": "hmac"}
    with Target() as target:
        px = Proxy(runner, target)
        cvv_sub = [{**_place("jsonpath", "$.cvv"), "fieldName": CVV_NAME}]
        status, body = _create_config(runner, partner, px.doc("/echo", [_token_action("detokenize", cvv_sub,
                                                                                     "GATEWAY")]))
        assert status == 400, body
        card_sub = [{**_place("jsonpath", "$.cvv"), "fieldName": "vault_token_card_number"}]
        ref = px.create(partner, px.doc("/echo", [_token_action("detokenize", card_sub, "GATEWAY")]))
        for token in cvv_tokens:
            status, _, data = px.call(partner, ref, json.dumps({"cvv": token}), headers={"vault-id": etoken})
            assert status == 400 and json.loads(data)["code"] in (8103, 8116), data  # not a token of the field
        assert target.seen == []


def _create_config(runner, partner: dict, doc: dict):
    from tests.e2e.http import admin

    return admin(runner.base_url, "POST", f"/admin/v1/partners/{partner['partnerId']}/proxy-configurations", doc)


def _queue_messages(runner) -> list:
    """Every message in flight on the runner's queues (the postback queue, its DLQ), left visible to the runner."""
    import boto3

    sqs = boto3.client("sqs", endpoint_url=runner.demo["awsEndpoint"], region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    return [m for url in sqs.list_queues().get("QueueUrls", [])
            for m in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0,
                                         AttributeNames=["All"]).get("Messages", [])]
