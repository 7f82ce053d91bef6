"""Issue 30 in a real browser: the original's configuration vocabulary acts on the payment iFrame.

Playwright drives Debian's chromium (``executable_path``; tests/e2e/browser.py) against the runner, as in
tests/e2e/test_iframe_browser.py: configurations are made through the v4 API with the original's members, and the
demo shop's page mounts each one's instance (``/_local/checkout?token=``). ``language`` picks the labels and the
live messages (Spanish translated, German falling back to English); ``billingAddress`` and ``contactInfo`` decide
the fields shown and required; ``savePaymentOption`` offers the box and the card is stored through the gateway
(the STORE's ``token_id`` pays); a configuration without ``allowedParentDomains`` cannot be framed by the shop (the
browser refuses it: ``frame-ancestors 'none'``) and works top-level, its eToken read back from the instance.
"""

from __future__ import annotations

import base64
import json

import pytest

from tests.e2e.browser import chromium  # noqa: F401 - the fixture
from tests.e2e.http import post_json, request

CARD = "4242424242424242"
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


class Merchant:
    """The demo shop's account (made by its page), calling the v4 API as a merchant's server does."""

    def __init__(self, runner, shop_url: str, browser) -> None:
        page = browser.new_page()
        page.goto(shop_url)
        page.wait_for_function("window.shop && window.shop.ready", timeout=20000)
        page.close()
        account = json.loads((runner.stdout.parent / "shop.json").read_text())["account"]
        self.account = account
        self.auth = {"Authorization": "Basic " + base64.b64encode(
            f"{account['account_id']}:{account['api_accesskey']}".encode()).decode()}
        self.base = f"{runner.base_url}/api/v4/accounts/{account['account_id']}/payment-iframe"
        self.origin = shop_url.rsplit("/_local", 1)[0]
        self.runner = runner

    def instance(self, **config) -> tuple[str, dict]:
        body = {"label": "settings", "allowedParentDomains": [self.origin], **config}
        status, created = post_json(self.base, body, self.auth)
        assert status == 201, created
        status, inst = post_json(f"{self.base}/{created['id']}/instance/init", {"label": "order"}, self.auth)
        assert status == 201, inst
        return created["id"], inst


@pytest.fixture(scope="module")
def merchant(runner, shop_url, browser) -> Merchant:
    return Merchant(runner, shop_url, browser)


def _mounted(browser, shop_url: str, token: str):
    page = browser.new_page()
    page.goto(f"{shop_url}?token={token}")
    page.wait_for_function("window.shop && window.shop.ready", timeout=20000)
    return page, page.frame_locator("#payment iframe")


@pytest.mark.parametrize(("language", "label", "message"), [
    ("SPANISH", "Número de tarjeta", "Introduzca un número de tarjeta válido."),
    ("GERMAN", "Card number", "Enter a valid card number."),  # no German translation yet: English
    ("ENGLISH", "Card number", "Enter a valid card number."),
])
def test_language_sets_the_labels_and_the_live_messages(merchant, browser, shop_url, language, label, message):
    _, inst = merchant.instance(language=language)
    page, frame = _mounted(browser, shop_url, inst["bearerToken"])
    assert frame.locator("label[for=f-cardNumber]").text_content() == label
    frame.locator("[name=cardNumber]").fill("4242424242424241")  # a wrong Luhn digit
    frame.locator("[name=cardExpiration]").focus()
    assert frame.locator("#m-cardNumber").text_content() == message
    assert frame.locator("html").get_attribute("lang") == ("es" if language == "SPANISH" else "en")
    page.close()


def test_billing_address_and_contact_info_show_and_require_their_fields(merchant, browser, shop_url):
    _, inst = merchant.instance(cardSettings={"billingAddress": "required", "contactInfo": "required",
                                              "cvv": "omit"})
    page, frame = _mounted(browser, shop_url, inst["bearerToken"])
    for name in ("address1", "address2", "city", "state", "zip", "email", "phone"):
        assert frame.locator(f"[name={name}]").is_visible(), name
    assert frame.locator("[name=cardCvv]").count() == 0
    frame.locator("[name=cardNumber]").fill(CARD)
    frame.locator("[name=cardExpiration]").fill("12/30")
    outcome = page.evaluate("window.shop.checkout.submit().then(r => 'ok', e => e)")
    assert outcome["code"] == "VALIDATION" and {"address1", "city", "state", "zip", "email"} <= set(outcome["fields"])
    assert "address2" not in outcome["fields"] and "phone" not in outcome["fields"]  # optional
    for name, value in (("address1", "1 Main St"), ("city", "Atlanta"), ("state", "GA"), ("zip", "30301"),
                        ("email", "ann@shop.example")):
        frame.locator(f"[name={name}]").fill(value)
    result = page.evaluate("window.shop.checkout.submit()")
    assert result["contact"] == {"email": "ann@shop.example"} and result["card"]["last4"] == "4242", result
    page.close()

    _, inst = merchant.instance(cardSettings={"billingAddress": "omit", "contactInfo": "omit"})
    page, frame = _mounted(browser, shop_url, inst["bearerToken"])
    assert all(frame.locator(f"[name={n}]").count() == 0 for n in ("address1", "zip", "email", "phone"))
    page.close()


def test_save_payment_option_offers_the_box_and_stores_the_card(merchant, browser, shop_url):
    _, inst = merchant.instance(cardSettings={"savePaymentOption": "optional"})
    page, frame = _mounted(browser, shop_url, inst["bearerToken"])
    frame.locator("[name=cardNumber]").fill(CARD)
    frame.locator("[name=cardExpiration]").fill("12/30")
    frame.locator("[name=cardCvv]").fill("123")
    frame.locator("#f-saveCARD").check()
    result = page.evaluate("window.shop.checkout.submit()")
    token_id = result["saved"]["token_id"]
    page.close()
    account = merchant.account
    status, sale = post_json(merchant.runner.base_url + "/api/qsapi/3.8", {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"], "transaction_type": "SALE",
        "token_id": token_id, "transaction_amount": "3.00", "response_format": "JSON"})
    assert status == 200 and sale["transaction_approved"] is True and sale["last4"] == "4242", sale


def test_no_parent_domains_cannot_be_framed_and_works_top_level(merchant, browser, shop_url, runner):
    config_id, inst = merchant.instance(allowedParentDomains=[])
    console: list[str] = []
    page = browser.new_page()
    page.on("console", lambda m: console.append(m.text))
    page.goto(f"{shop_url}?token={inst['bearerToken']}&loadTimeoutMs=4000")
    page.wait_for_function("window.shop && window.shop.errors.length > 0", timeout=20000)
    assert page.evaluate("window.shop.errors") == ["FRAME_TIMEOUT"]  # the shop may not frame it
    assert any("frame-ancestors" in line for line in console), console
    page.close()
    # top-level, by the instance's token: its own Pay button; the merchant's server reads the eToken back
    page = browser.new_page()
    page.goto(f"{runner.base_url}/iframe/v1/frame?token={inst['bearerToken']}")
    page.fill("[name=cardNumber]", CARD)
    page.fill("[name=cardExpiration]", "12/30")
    page.fill("[name=cardCvv]", "123")
    page.click("#pay")
    from playwright.sync_api import expect  # (the page's CSP allows no eval: no wait_for_function here)

    expect(page.locator("#done")).to_have_text("Payment details received.", timeout=20000)
    page.close()
    status, _, data = request(f"{merchant.base}/{config_id}/instance/{inst['id']}", None, merchant.auth,
                              method="GET")
    view = json.loads(data)
    assert status == 201 and len(view["tokens"]) == 1, view
    account = merchant.account
    status, sale = post_json(runner.base_url + "/api/qsapi/3.8", {
        "account_id": account["account_id"], "api_accesskey": account["api_accesskey"], "transaction_type": "SALE",
        "tender_type": "CARD", "etoken": view["tokens"][0], "custom_id": inst["transactionId"],
        "transaction_amount": "4.00", "currency": "USD", "payment_type": "ECOMMERCE", "response_format": "JSON"})
    assert status == 200 and sale["transaction_approved"] is True, sale
