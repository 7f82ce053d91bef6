"""The OpenAPI documents of ``openapi/`` (docs/integrators/openapi.md) are valid, current and complete.

* each is a valid OpenAPI 3.1 document (openapi-spec-validator);
* each is exactly what ``python -m local.contracts`` generates from the code now (the validators' patterns and
  lengths, the error-code tables): a changed validator or a new error code fails here until the documents are
  regenerated;
* the error-code enums are the code's tables (proxy ``PROXY_CODES``, gateway ``ERROR_MESSAGES``, tokenization and
  proxy-configuration codes) and the docs' error tables, in both directions;
* every route of template.yaml, and every route the management router registers, is in its document, and the
  documents have no route the platform does not serve.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from openapi_spec_validator import validate

from local.contracts import APIS, OUT, build, render

ROOT = Path(__file__).resolve().parents[2]
# The pages whose error tables and lists the documents must match (docs/, by audience).
README = "\n".join((ROOT / "docs" / page).read_text(encoding="utf-8") for page in (
    "integrators/errors.md", "integrators/parser.md", "integrators/tokenization.md", "integrators/proxy.md",
    "integrators/gateway.md", "integrators/wallets.md", "integrators/fraud-scoring.md", "integrators/webhooks.md",
    "operators/management-api.md"))
API_OF = {"SecureApi": "secure", "ParserApi": "parser", "ProxyApi": "proxy", "GatewayApi": "gateway",
          "CollectorApi": "collector", "ManagementApi": "management"}


def _doc(api: str) -> dict:
    return json.loads((OUT / f"{api}.json").read_text(encoding="utf-8"))


def _enum(api: str, schema: str) -> set[int]:
    """The known codes of an (open) error-code schema: ``x-known-values``, not a closed ``enum`` (issue 22)."""
    found = _doc(api)["components"]["schemas"][schema]
    assert "enum" not in found, f"{api} {schema}: error codes are open (x-known-values), not an enum"
    assert len(found["x-known-values"]) == len(found["x-enum-descriptions"]), (api, schema)
    return set(found["x-known-values"])


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path.rstrip("/") or "/")


@pytest.mark.parametrize("api", APIS)
def test_each_document_is_valid_openapi_3_1(api):
    doc = _doc(api)
    assert doc["openapi"].startswith("3.1")
    validate(doc)


@pytest.mark.parametrize("api", APIS)
def test_each_checked_in_document_is_what_the_code_generates(api):
    current = (OUT / f"{api}.json").read_text(encoding="utf-8")
    assert current == render(build(api)), f"openapi/{api}.json is stale: run `.venv/bin/python -m local.contracts`"


def test_the_error_code_enums_are_the_codes_own_tables():
    from vaultcore.gateway.errors import ERROR_MESSAGES
    from vaultcore.proxy.errors import CONFIG_CODES, PROXY_CODES
    from vaultcore.wallet.errors import WALLET_ERROR_MESSAGES

    assert _enum("proxy", "ProxyErrorCode") == set(PROXY_CODES)
    gateway = _enum("gateway", "GatewayErrorCode")
    assert gateway == set(ERROR_MESSAGES) | {0}
    assert set(WALLET_ERROR_MESSAGES) <= gateway
    assert set(CONFIG_CODES) <= _enum("management", "ManagementErrorCode")
    from local.contracts.errors import TOKEN_CODES, token_code_constants

    assert token_code_constants() == set(TOKEN_CODES)
    assert {c for c, (_m, admin_only) in TOKEN_CODES.items() if not admin_only} <= _enum("secure", "ErrorCode")
    assert {c for c, (_m, admin_only) in TOKEN_CODES.items() if admin_only} <= _enum("management",
                                                                                     "ManagementErrorCode")


def _readme_codes(heading: str, *, skip_wide_ranges: bool = True) -> set[int]:
    """The codes in the first column of the first table after ``heading`` (``a / b``, ``a-b`` ranges)."""
    start = README.index(heading)
    lines = README[start:].splitlines()[1:]
    table, seen_table = [], False
    for line in lines:
        if line.startswith("|"):
            table.append(line)
            seen_table = True
        elif seen_table:
            break
    out: set[int] = set()
    for row in table[2:]:
        cell = row.split("|")[1]
        for part in re.findall(r"\d+(?:\s*-\s*\d+)?", cell.split("(")[0]):
            if "-" in part:
                low, high = (int(x) for x in part.split("-"))
                if high - low > 30 and skip_wide_ranges:
                    continue  # "2000-2800: see Decryption errors"
                out.update(range(low, high + 1))
            else:
                out.add(int(part))
    return out


def test_the_error_code_enums_are_the_readmes_tables():
    secure = (_readme_codes("## Secure API and parser errors") | _readme_codes("Decryption errors (HTTP 400")
              | _readme_codes("## Tokenization error codes"))
    management_only = {3050, 3060, 3061, 3062}
    assert _enum("secure", "ErrorCode") == secure - management_only
    assert _enum("parser", "ErrorCode") <= secure
    assert _enum("proxy", "ProxyErrorCode") == _readme_codes("## Proxy error codes")
    gateway = _readme_codes("## Gateway error codes") | _readme_codes("## Wallet and fraud error codes")
    assert _enum("gateway", "GatewayErrorCode") == gateway
    configuration = {int(c) for c in re.findall(r"`(82\d\d)`", README)}
    assert configuration and configuration | management_only <= _enum("management", "ManagementErrorCode")


def test_every_route_of_the_template_is_documented_and_nothing_else():
    from local.template import load_template

    served: dict[str, set[tuple[str, str]]] = {api: set() for api in APIS}
    for resource in load_template()["Resources"].values():
        for event in (resource.get("Properties", {}).get("Events") or {}).values():
            if event["Type"] != "Api":
                continue
            props = event["Properties"]
            api = API_OF[props["RestApiId"]["Ref"]]
            if props["Method"].lower() == "any" and props["Path"].endswith("{proxy+}"):
                continue  # a catch-all that answers the API's not-found body (/api/v4: the original's): no operation
            if api != "management":
                served[api].add((props["Method"].lower(), _shape(props["Path"])))
    for api in APIS:
        if api == "management":
            continue
        documented = {(m, _shape(p)) for p, item in _doc(api)["paths"].items() for m in item
                      if m in ("get", "post", "put", "patch", "delete")}
        assert documented == served[api], api


def test_every_management_route_is_documented_and_nothing_else():
    from vaultcore.admin import routes
    from vaultcore.admin.router import _ROUTES

    routes.register_all()  # the route modules are imported on demand

    registered = {(method.lower(), _shape(re.sub(r"\(\?P<\w+>\[\^/\]\+\)", "{}", pattern.pattern)
                                          .removeprefix("^").removesuffix("/?$")))
                  for method, pattern, _fn in _ROUTES}
    documented = {(m, _shape(p)) for p, item in _doc("management")["paths"].items() for m in item
                  if m in ("get", "post", "put", "patch", "delete")}
    assert documented == registered


def test_the_qsapi_request_documents_every_variable_with_the_validators_patterns():
    from vaultcore.gateway import validation

    schema = _doc("gateway")["components"]["schemas"]["QsapiRequest"]["properties"]
    assert set(schema) == set(validation._KNOWN)
    assert schema["card_expiration"]["pattern"] == "^(?:(0[1-9]|1[0-2])[0-9]{2})$"
    assert (schema["account_id"]["pattern"], schema["account_id"]["minLength"]) == ("^(?:[0-9]{12})$", 12)
    assert (schema["level2_order_id"]["maxLength"], schema["level2_zip"]["maxLength"]) == (17, 10)
    assert (schema["bfid"]["minLength"], schema["bfid"]["maxLength"]) == (30, 150)
    assert (schema["vault_token_card_number"]["minLength"], schema["vault_token_card_number"]["maxLength"]) == (14, 19)
    secure = _doc("secure")["components"]["schemas"]
    assert secure["TokenizeRequest"]["properties"]["reference"]["maxLength"] == 50
    for name, pattern in validation.TOKEN_PARAMETERS.items():
        assert schema[name]["pattern"] == f"^(?:{pattern.pattern})$"


def test_the_reference_page_is_self_contained_and_lists_fields_rules_and_codes():
    from local.openapi_pages import render_html, serve

    page = render_html(_doc("gateway")).decode()
    assert "<script" not in page and "<link" not in page and "cdn" not in page.lower().replace("/cdn/cs", "")
    for text in ("/api/qsapi/3.8", "card_expiration", "^(?:(0[1-9]|1[0-2])[0-9]{2})$", "<td class=mono>308</td>",
                 "level2_order_id", "max length <code>17</code>"):
        assert text in page, text
    status, headers, body = serve(None, "GET", "/openapi/", {}, b"")
    assert status == 200 and all(f"/openapi/{api}.html" in body.decode() for api in APIS)
    assert serve(None, "GET", "/openapi/proxy.json", {}, b"")[2] == (OUT / "proxy.json").read_bytes()
    assert serve(None, "GET", "/openapi/nope.html", {}, b"")[0] == 404


def _readme_table_after(anchor: str) -> list[list[str]]:
    """The cells of the first table after ``anchor`` (any text of the pages), header and rule rows left out."""
    lines = README[README.index(anchor):].splitlines()[1:]
    table, seen_table = [], False
    for line in lines:
        if line.startswith("|"):
            table.append([cell.strip() for cell in line.strip().strip("|").split("|")])
            seen_table = True
        elif seen_table:
            break
    return table[2:]


def test_the_wallet_session_codes_are_the_code_s_table_and_the_readme_s():
    from vaultcore.wallet.session import SESSION_ERRORS

    assert _enum("gateway", "WalletSessionErrorCode") == set(SESSION_ERRORS)
    assert _readme_codes("**Wallet session errors.**") == set(SESSION_ERRORS)
    # every code is one the gateway documents (docs/integrators/gateway.md, wallets.md)
    assert set(SESSION_ERRORS) <= _enum("gateway", "GatewayErrorCode")
    for row in _readme_table_after("**Wallet session errors.**"):
        for code in re.findall(r"\d+", row[0]):
            for status in re.findall(r"\d{3}", row[1]):
                assert f"HTTP {status}" in SESSION_ERRORS[int(code)], (code, status)


def test_the_checkout_codes_are_the_code_s_table_and_the_readme_s():
    from vaultcore.wallet.checkout_api import CHECKOUT_ERRORS

    schema = _doc("gateway")["components"]["schemas"]
    assert schema["CheckoutErrorCode"]["x-known-values"] == list(CHECKOUT_ERRORS)
    assert "enum" not in schema["CheckoutErrorCode"]
    assert set(schema["CheckoutError"]["properties"]["status"]["enum"]) == {s for s, _ in CHECKOUT_ERRORS.values()}
    readme: dict[str, int] = {}
    for row in _readme_table_after("**Checkout error codes.**"):
        for code in re.findall(r"`([^`]+)`", row[0]):
            readme[code] = int(row[1])
    assert readme == {code: status for code, (status, _m) in CHECKOUT_ERRORS.items()}
    assert "702" in readme and readme["100"] == 400  # "not a JSON object" has its own code, not the token's


def test_the_management_and_collector_codes_are_in_the_readme_with_their_statuses():
    from local.contracts.errors import ADMIN_CODES, COLLECTOR_CODES

    for anchor, table, api, schema in (
            ("Besides the tokenization codes (3001", ADMIN_CODES, "management", "ManagementErrorCode"),
            ("Collector errors are the management API's body", COLLECTOR_CODES, "collector", "CollectorErrorCode")):
        rows = {int(row[0]): int(row[1]) for row in _readme_table_after(anchor)}
        assert set(rows) == set(table), anchor
        assert set(rows) <= _enum(api, schema)
        for code, status in rows.items():
            assert f"(HTTP {status}" in table[code], (anchor, code)


def test_every_postback_delivery_status_is_in_the_readme():
    statuses = _doc("management")["components"]["schemas"]["DeliveryAttempt"]["properties"]["status"]["enum"]
    assert "abandoned" in statuses
    listed = README[README.index("Each\nattempt: status"):][:200]
    assert all(f"`{s}`" in listed for s in statuses), listed


def test_error_codes_are_open_so_generated_clients_parse_new_ones():
    """Issue 22: no error-code set is a closed ``enum`` (generated clients refuse a value an enum lacks); the known
    codes are ``x-known-values`` with their meanings, also in the description; the contract checks close them again."""
    from local.contracts.common import closed

    found = 0

    def walk(node: object, where: str) -> None:
        nonlocal found
        if isinstance(node, dict):
            if "x-enum-descriptions" in node:
                found += 1
                assert "enum" not in node, where
                assert len(node["x-known-values"]) == len(node["x-enum-descriptions"]), where
                assert all(f"| {c} |" in node["description"] for c in node["x-known-values"]), where
                assert closed(node)["enum"] == node["x-known-values"], where
            for k, v in node.items():
                walk(v, f"{where}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}/{i}")

    for path in sorted((ROOT / "openapi").glob("*.json")):
        walk(json.loads(path.read_text()), path.name)
    assert found >= 8
