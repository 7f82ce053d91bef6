"""Issue 19 in a real browser: Playwright driving Debian's chromium (``executable_path``) against the runner.

The demo shop (``local/iframe_shop.py``) is a merchant page on a second origin (``http://localhost:<port>``
beside the gateway's ``http://127.0.0.1:<port>``) that mounts the payment iFrame; the merchant server stand-in
charges the eToken through ``/api/qsapi/3.8``. Card and ACH, a second charge refused, a disallowed origin (the
browser's CSP ``frame-ancestors`` refusal), an expired bearer token (``onError``), the submission limit, the
device collection (antiFraud) and its fraud score, and scans of the parent DOM, the merchant server's log, the
tables and the runner's logs for the card number and the CVV. Also records the mount -> onReady time for
``bench/bench_iframe.py``.
"""

from __future__ import annotations

import base64
import json
import re

import pytest

from tests.e2e.browser import chromium  # noqa: F401 - the fixture
from tests.e2e.http import post_json
from tests.helpers import table_dump

CARD = "4242424242424242"
CARD2 = "5555555555554444"
CVV = "737"
ACCOUNT = "000123456789"
pytest.importorskip("playwright")


@pytest.fixture(scope="module")
def browser(chromium):  # noqa: F811 - the fixture above
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture(scope="module")
def shop_url(runner) -> str:
    return runner.base_url.replace("127.0.0.1", "localhost") + "/_local/checkout"


@pytest.fixture(scope="module")
def short_token(runner, shop_url, browser):
    """A bearer token of a 60-second configuration (the shortest allowed), made first; the test that needs it
    expired moves the runner's clock past it (/_local/clock) instead of waiting a minute."""
    page = browser.new_page()
    page.goto(shop_url)  # the shop makes its account and configuration
    page.wait_for_function("window.shop && window.shop.ready", timeout=20000)
    page.close()
    state = json.loads((runner.stdout.parent / "shop.json").read_text())
    account = state["account"]
    auth = "Basic " + base64.b64encode(f"{account['account_id']}:{account['api_accesskey']}".encode()).decode()
    base = f"/api/v4/accounts/{account['account_id']}/payment-iframe"
    origin = shop_url.rsplit("/_local", 1)[0]
    status, config = post_json(runner.base_url + base, {"label": "short", "timeout": 60,
                                                        "allowedParentDomains": [origin]}, {"Authorization": auth})
    assert status == 201, config
    status, inst = post_json(f"{runner.base_url}{base}/{config['id']}/instance/init", {"label": "x"},
                             {"Authorization": auth})
    assert status == 201, inst
    return inst["bearerToken"], 61


def _open(browser, url: str, console: list | None = None):
    page = browser.new_page()
    if console is not None:
        page.on("console", lambda m: console.append(m.text))
    page.goto(url)
    return page


def _ready(page) -> None:
    page.wait_for_function("window.shop && window.shop.ready", timeout=20000)


def _frame(page):
    return page.frame_locator("#payment iframe")


def _fill_card(page, number: str = CARD, cvv: str = CVV) -> None:
    frame = _frame(page)
    frame.locator("[name=cardNumber]").fill(number)
    frame.locator("[name=cardExpiration]").fill("12/30")
    frame.locator("[name=cardCvv]").fill(cvv)
    frame.locator("[name=zip]").fill("94107")


def _paid(page) -> dict:
    page.wait_for_function("document.title.startsWith('paid:')", timeout=20000)
    return json.loads(page.locator("#result").text_content())


def _scan(runner, texts: tuple[str, ...]) -> list[str]:
    """Where the card data shows: the merchant's log, the runner's logs, every table."""
    import boto3

    found = []
    shop_log = (runner.stdout.parent / "shop.log").read_text()
    logs = runner.logs()
    ddb = boto3.client("dynamodb", endpoint_url=runner.demo["awsEndpoint"], region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    tables = table_dump(ddb)  # deflated postback messages inflated: scanned too
    for text in texts:
        for where, body in (("shop.log", shop_log), ("runner logs", logs), ("tables", tables)):
            if text in body:
                found.append(f"{text[:4]}... in {where}")
    return found


def test_card_payment_through_the_iframe_and_a_second_charge_refused(runner, browser, shop_url, short_token):
    page = _open(browser, shop_url)
    _ready(page)
    frame = _frame(page)
    # live validation: a wrong Luhn digit is marked and announced when the field is left
    frame.locator("[name=cardNumber]").fill("4242424242424241")
    frame.locator("[name=cardExpiration]").focus()
    assert frame.locator("[name=cardNumber]").get_attribute("aria-invalid") == "true"
    assert frame.locator("#m-cardNumber").text_content()
    assert frame.locator("#m-cardNumber").get_attribute("aria-live") == "polite"
    assert frame.locator("label[for=f-cardNumber]").text_content() == "Card number"
    _fill_card(page)
    frame.locator("[name=cardNumber]").press("Tab")  # keyboard: the next field
    assert frame.locator("[name=cardNumber]").get_attribute("aria-invalid") == "false"
    page.click("#pay")
    sale = _paid(page)
    assert sale["transaction_approved"] is True and sale["last4"] == "4242" and sale["card_brand"] == "VISA", sale
    result = page.evaluate("window.shop.last")
    assert result["card"] == {"first1": "4", "last4": "4242", "expiration": "1230", "brand": "VISA"}
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", result["antiFraud"]["device_trans_id"])
    # the device collection ran inside the iframe: the SALE is scored with the browser's own signals
    assert sale["fraud"]["fraud_recommendation"] == "accept" and "no_device_data" not in sale["fraud"]["fraud_reasons"]
    again = page.evaluate("window.shop.again()")
    assert again["error_code"] == 309 and again["transaction_approved"] is False
    # the merchant's page never held the card data
    dom = page.content()
    assert CARD not in dom and "4242 4242" not in dom and CVV not in re.sub(r"\d{4,}", "", dom)
    assert "4242424242424242" not in (runner.stdout.parent / "shop.log").read_text()
    mount_to_ready = page.evaluate("window.shop.readyAt - window.shop.mountedAt")
    (runner.stdout.parent / "iframe-bench.json").write_text(json.dumps({"mount_to_ready_ms": mount_to_ready}))
    page.close()


def test_ach_payment_through_the_iframe(runner, browser, shop_url):
    page = _open(browser, shop_url)
    _ready(page)
    frame = _frame(page)
    frame.locator("input[name=paymentMethod][value=ACH]").check()
    assert frame.locator("[name=cardNumber]").is_hidden()
    frame.locator("[name=accountHolderName]").fill("Ann Lee")
    frame.locator("[name=bankRoutingNumber]").fill("021000022")  # a bad ABA checksum
    frame.locator("[name=bankAccountNumber]").focus()
    assert frame.locator("[name=bankRoutingNumber]").get_attribute("aria-invalid") == "true"
    frame.locator("[name=bankRoutingNumber]").fill("021000021")
    frame.locator("[name=bankAccountNumber]").fill(ACCOUNT)
    page.click("#pay")
    sale = _paid(page)
    assert sale["transaction_approved"] is True and sale["tender_type"] == "ACH", sale
    assert sale["authorization_message"] in ("PENDING", "APPROVED") and sale["last4"] == ACCOUNT[-4:]
    assert page.evaluate("window.shop.last")["bank"] == {"last4": "6789"}
    assert ACCOUNT not in page.content()
    page.close()


def test_the_submission_limit_is_enforced_in_the_browser(runner, browser, shop_url):
    page = _open(browser, shop_url)
    _ready(page)
    outcomes = []
    for i in range(4):
        _fill_card(page, CARD if i % 2 else CARD2)
        outcomes.append(page.evaluate("window.shop.checkout.submit().then(r => r.eToken ? 'eToken' : '?', "
                                      "e => e.code)"))
    assert outcomes == ["eToken", "eToken", "eToken", "SUBMISSION_LIMIT"], outcomes
    assert "SUBMISSION_LIMIT" in page.evaluate("window.shop.errors")
    page.close()


def test_a_disallowed_origin_gets_no_fields_and_the_browser_reports_frame_ancestors(runner, browser):
    console: list[str] = []
    page = _open(browser, runner.base_url + "/_local/checkout?loadTimeoutMs=4000", console)  # 127.0.0.1: not allowed
    page.wait_for_function("window.shop && window.shop.errors.length > 0", timeout=20000)
    assert page.evaluate("window.shop.errors") == ["FRAME_TIMEOUT"] and not page.evaluate("window.shop.ready")
    assert all(f.url.startswith("about:") or "cardNumber" not in (f.content() if f != page.main_frame else "")
               for f in page.frames if f != page.main_frame)
    assert any("frame-ancestors" in line and "blocked" in line for line in console), console
    page.close()


def test_no_card_number_or_cvv_in_the_merchant_log_the_tables_or_the_runner_logs(runner):
    assert _scan(runner, (CARD, CARD2, ACCOUNT)) == []
    import boto3

    ddb = boto3.client("dynamodb", endpoint_url=runner.demo["awsEndpoint"], region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    tokens = [t for t in ddb.list_tables()["TableNames"] if "Tokens" in t]
    items = [i for t in tokens for i in ddb.scan(TableName=t)["Items"]]
    charged = [i for i in items if "gateway_read_by" in i]
    assert charged and not any("t#vault_token_card_verification" in i for i in charged)  # CVV gone after the read


def test_an_expired_bearer_token_gets_on_error_and_no_fields(runner, browser, shop_url, short_token):
    token, lifetime = short_token
    clock = runner.base_url + "/_local/clock"
    assert post_json(clock, {"offsetSeconds": lifetime})[0] == 200  # the runner's clock, a minute on
    try:
        page = _open(browser, f"{shop_url}?token={token}")
        page.wait_for_function("window.shop && window.shop.errors.length > 0", timeout=20000)
        assert page.evaluate("window.shop.errors") == ["TOKEN_INVALID"]
        assert _frame(page).locator("[name=cardNumber]").count() == 0
        page.close()
    finally:
        assert post_json(clock, {"offsetSeconds": 0})[1] == {"offsetSeconds": 0.0}
