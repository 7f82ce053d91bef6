"""A client generated from the original's PayConex v4 document runs every payment-iFrame operation (issue 30).

``../shared/original-contracts/payconex-openapi.json`` (beside the repository; the test is skipped without it) is
the original's published document. openapi-python-client, the generator the project already uses
(tests/e2e/test_generated_clients_e2e.py), generates a client from it, unmodified, into
``.local/generated-clients/`` (cached by the document's and the generator's hash; never in the repository). Each of
the seven payment-iFrame operations is sent by the generated client with the original's own request examples
(:func:`example`: each property's ``example``, else its ``default``, else its enum's first value; an example that
breaks its own property's schema is left out, e.g. ``Customer.phone`` ``14441234321`` against ``\\+\\d{6,16}$``)
to the session's runner, and each answer is checked against the original's response schema of that status, with
formats checked, and parsed by the generated models.

One contradiction inside the document is not ours to settle: it declares the configurations' and instances'
``id`` ``format: uuid`` while its own paths take ``ifr_`` + 32 hex (``^ifr_[0-9a-fA-F]{32}$``) and ``ifri_`` + 32
hex. We answer the path form (the ids a client puts back into the paths); the schema check leaves out ``format``
on those ``id`` members only, and the generated models (which turn a ``uuid`` string into ``uuid.UUID``) parse
every member but ``id``. Settings this platform does not offer (Click to Pay: the document's own example asks for
it) are refused with the original's ``ApiViolation``, which is checked too.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.e2e.conftest import Runner

ROOT = Path(__file__).resolve().parents[2]
ORIGINAL = ROOT.parent / "shared" / "original-contracts" / "payconex-openapi.json"
CACHE = ROOT / ".local" / "generated-clients"
BIN = Path(sys.executable).parent
OPERATIONS = ("createIframe", "listPaymentIframes", "getIframe", "updateIframe", "deleteIframe",
              "createIframeInstance", "getIframeInstance")
# The members whose declared `format: uuid` contradicts the document's own id patterns (module docstring).
ID_SCHEMAS = ("IframeResponse", "IFrameCreateInstance", "IFrameInstanceResponse")

pytestmark = pytest.mark.skipif(not ORIGINAL.is_file(), reason=f"{ORIGINAL} is absent (the original's documents "
                                                                "sit beside the repository)")


def _document() -> dict[str, Any]:
    import json

    return json.loads(ORIGINAL.read_text())


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return _document()


@pytest.fixture(scope="module")
def client_module() -> ModuleType:
    """openapi-python-client's client of the original's document, generated once per document and version."""
    from importlib.metadata import version

    command = [str(BIN / "openapi-python-client"), "generate", "--path", str(ORIGINAL), "--output-path", "{out}"]
    key = hashlib.sha256(ORIGINAL.read_bytes() + " ".join(command).encode()).hexdigest()[:16]
    out = CACHE / f"opc{version('openapi-python-client')}-original-payconex-{key}"
    if not (out / ".done").exists():
        shutil.rmtree(out, ignore_errors=True)
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = CACHE / f".tmp-original-payconex-{key}"
        shutil.rmtree(tmp, ignore_errors=True)
        result = subprocess.run([part.format(out=str(tmp)) for part in command], cwd=CACHE, capture_output=True,
                                text=True, timeout=600, env={**os.environ, "PATH": f"{BIN}{os.pathsep}"
                                                                                   f"{os.environ.get('PATH', '')}"})
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        (tmp / ".done").write_text(key)
        tmp.rename(out)
    package = next(p.parent for p in out.glob("*/client.py"))
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    module = importlib.import_module(package.name)
    for name in ("create_iframe", "list_payment_iframes", "get_iframe", "update_iframe", "delete_iframe",
                 "create_iframe_instance", "get_iframe_instance"):
        importlib.import_module(f"{package.name}.api.payment_iframe.{name}")  # every operation is generated
    return module


# ------------------------------------------------------------------------------------------------ the examples
def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _valid(doc: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    return not list(_validator(doc, schema).iter_errors(value))


def example(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    """The original's example of ``schema``: per property its ``example`` (else ``default``, else the first enum
    value, else one built from its own properties); an example that breaks its own schema is left out."""
    schema = _resolve(doc, schema)
    if schema.get("type") == "object" or "properties" in schema:
        out = {}
        for name, prop in (schema.get("properties") or {}).items():
            value = example(doc, prop)
            if value is not None and _valid(doc, prop, value):
                out[name] = value
        return out or None
    if schema.get("type") == "array":
        items = _resolve(doc, schema.get("items") or {})
        if "example" in schema:
            value = [v for v in schema["example"] if _valid(doc, items, v)]  # e.g. APPLE_PAY: not in its enum
        else:
            one = example(doc, items)
            value = [one] if one is not None else []
        return value or None
    for key in ("example", "default"):
        if key in schema:
            return schema[key]
    return schema["enum"][0] if schema.get("enum") else None


# ------------------------------------------------------------------------------------------------ the schemas
_REGISTRIES: dict[int, Any] = {}


def _registry(doc: dict[str, Any]) -> Any:
    """The document for validation, ``format`` left out of the ``id`` of :data:`ID_SCHEMAS` (module docstring)."""
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    if id(doc) not in _REGISTRIES:
        patched = copy.deepcopy(doc)
        for name in ID_SCHEMAS:
            patched["components"]["schemas"][name]["properties"]["id"].pop("format", None)
        _REGISTRIES[id(doc)] = Registry().with_resource("urn:original", Resource.from_contents(
            patched, default_specification=DRAFT202012))
    return _REGISTRIES[id(doc)]


def _absolute(schema: Any) -> Any:
    """``schema`` with its document-relative references (``#/components/...``) made absolute."""
    if isinstance(schema, dict):
        return {k: ("urn:original" + v if k == "$ref" and isinstance(v, str) and v.startswith("#/")
                    else _absolute(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_absolute(v) for v in schema]
    return schema


def _validator(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator, FormatChecker

    return Draft202012Validator(_absolute(schema), registry=_registry(doc), format_checker=FormatChecker())


def _operation(doc: dict[str, Any], operation_id: str) -> tuple[str, str, dict[str, Any]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and op.get("operationId") == operation_id:
                return method, path, op
    raise AssertionError(operation_id)


def check(doc: dict[str, Any], operation_id: str, response: Any) -> Any:
    """The answer's status is one the original's document gives ``operation_id``, and its body is valid against
    that status's schema (formats checked); the parsed JSON."""
    _, _, op = _operation(doc, operation_id)
    status = str(response.status_code)
    assert status in op["responses"], (operation_id, status, response.content[:500])
    content = (op["responses"][status].get("content") or {}).get("application/json")
    if content is None:
        assert not response.content, (operation_id, response.content[:200])
        return None
    body = response.json()
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in _validator(doc, content["schema"]).iter_errors(body)]
    assert not errors, (operation_id, status, errors, body)
    return body


# ------------------------------------------------------------------------------------------------ the test
def _call(module: ModuleType, client: Any, name: str, **kwargs: Any) -> Any:
    """One operation, sent exactly as the generated client builds it (its ``_get_kwargs``), on its httpx client."""
    api = importlib.import_module(f"{module.__name__}.api.payment_iframe.{name}")
    return client.get_httpx_client().request(**api._get_kwargs(**kwargs)), api


def _parsed(module: ModuleType, model: str, body: dict[str, Any]) -> Any:
    """The generated model of ``body`` (every member but ``id``: module docstring), round-tripped."""
    cls = getattr(importlib.import_module(f"{module.__name__}.models"), model)
    members = {k: v for k, v in body.items() if k != "id"}
    parsed = cls.from_dict(members)
    again = parsed.to_dict()
    for key, value in members.items():
        assert again[key] == value or (isinstance(value, int | float) and float(again[key]) == float(value)), key
    return parsed


def test_every_iframe_operation_of_the_originals_generated_client(runner: Runner, doc: dict[str, Any],
                                                                  client_module: ModuleType) -> None:
    module = client_module
    models = importlib.import_module(f"{module.__name__}.models")
    account = runner.demo["account"]
    account_id = account["account_id"]
    basic = base64.b64encode(f"{account_id}:{account['api_accesskey']}".encode()).decode()
    client = module.AuthenticatedClient(base_url=runner.base_url, token=basic, prefix="Basic")
    assert re.fullmatch(_operation(doc, "createIframe")[2]["parameters"][0]["schema"]["pattern"], account_id)
    seen: set[str] = set()

    # createIframe with the document's own example: it asks for Click to Pay, which is refused with the original's
    # ApiViolation (422, the member named); without Click to Pay, created
    body = example(doc, {"$ref": "#/components/schemas/IframeRequest"})
    assert "CLICK_TO_PAY" in body["allowedPaymentMethods"] and body["clickToPaySettings"]
    response, api = _call(module, client, "create_iframe", account_id=account_id,
                          body=models.IframeRequest.from_dict(body))
    refused = check(doc, "createIframe", response)
    assert response.status_code == 422 and refused["errorType"] == "invalid_request", refused
    assert refused["details"][0]["source"] in ("clickToPaySettings", "allowedPaymentMethods")
    assert isinstance(api._parse_response(client=client, response=response), models.ApiViolation)
    body.pop("clickToPaySettings")
    body["allowedPaymentMethods"] = [m for m in body["allowedPaymentMethods"] if m != "CLICK_TO_PAY"]
    response, _ = _call(module, client, "create_iframe", account_id=account_id,
                        body=models.IframeRequest.from_dict(body))
    created = check(doc, "createIframe", response)
    assert response.status_code == 201 and re.fullmatch(r"ifr_[0-9a-f]{32}", created["id"]), created
    assert (created["label"], created["timeout"], created["currency"]) == (body["label"], body["timeout"], "USD")
    assert created["cardSettings"] == {**body["cardSettings"], "billingAddress": body["cardSettings"].get(
        "billingAddress", created["cardSettings"]["billingAddress"])}
    _parsed(module, "IframeResponse", created)
    seen.add("createIframe")
    iframe_id = created["id"]

    response, _ = _call(module, client, "list_payment_iframes", account_id=account_id)
    listed = check(doc, "listPaymentIframes", response)
    assert response.status_code == 200 and iframe_id in [c["id"] for c in listed]
    assert int(response.headers["X-Total"]) == len(listed) and int(response.headers["X-Per-Page"]) >= len(listed)
    for item in listed:
        _parsed(module, "IframeResponse", item)
    seen.add("listPaymentIframes")

    response, _ = _call(module, client, "get_iframe", account_id=account_id, iframe_id=iframe_id)
    assert check(doc, "getIframe", response) == created and response.status_code == 201
    seen.add("getIframe")

    update = example(doc, {"$ref": "#/components/schemas/IframeUpdateRequest"})
    update.pop("clickToPaySettings", None)
    update["allowedPaymentMethods"] = [m for m in update["allowedPaymentMethods"] if m != "CLICK_TO_PAY"]
    update["language"] = "SPANISH"
    response, _ = _call(module, client, "update_iframe", account_id=account_id, iframe_id=iframe_id,
                        body=models.IframeUpdateRequest.from_dict(update))
    updated = check(doc, "updateIframe", response)
    assert response.status_code == 201 and updated["language"] == "SPANISH" and updated["id"] == iframe_id
    seen.add("updateIframe")

    # createIframeInstance with the document's example: its `tokens` (presetting saved tokens) are refused, 422
    init = example(doc, {"$ref": "#/components/schemas/IFrameInstanceRequest"})
    assert init["tokens"] and init["customer"]["billingAddress"]
    response, api = _call(module, client, "create_iframe_instance", account_id=account_id, iframe_id=iframe_id,
                          body=models.IFrameInstanceRequest.from_dict(init))
    refused = check(doc, "createIframeInstance", response)
    assert response.status_code == 422 and refused["details"][0]["source"] == "tokens", refused
    init.pop("tokens")
    response, api = _call(module, client, "create_iframe_instance", account_id=account_id, iframe_id=iframe_id,
                          body=models.IFrameInstanceRequest.from_dict(init))
    instance = check(doc, "createIframeInstance", response)
    assert response.status_code == 201 and set(instance) == {"id", "bearerToken", "transactionId"}, instance
    assert re.fullmatch(_operation(doc, "getIframeInstance")[2]["parameters"][2]["schema"]["pattern"],
                        instance["id"])
    assert re.fullmatch(_operation(doc, "createIframeInstance")[2]["parameters"][1]["schema"]["pattern"],
                        iframe_id)  # the original's own path pattern accepts our configuration id
    _parsed(module, "IFrameCreateInstance", instance)
    seen.add("createIframeInstance")

    response, _ = _call(module, client, "get_iframe_instance", account_id=account_id, iframe_id=iframe_id,
                        iframe_instance_id=instance["id"])
    view = check(doc, "getIframeInstance", response)
    assert response.status_code == 201 and view["id"] == instance["id"] and view["tokens"] == []
    assert (view["label"], view["reference"], view["amount"], view["customer"]) == (
        init["label"], init["reference"], init["amount"], init["customer"])
    _parsed(module, "IFrameInstanceResponse", view)
    seen.add("getIframeInstance")

    # the error cases: authentication (401) and an unknown configuration (404), ApiViolation both, parsed
    response, api = _call(module, client, "get_iframe", account_id=account_id, iframe_id="ifr_" + "0" * 32)
    missing = check(doc, "getIframe", response)
    assert response.status_code == 404 and missing["errorType"] == "not_found"
    assert isinstance(api._parse_response(client=client, response=response), models.ApiViolation)
    stranger = module.AuthenticatedClient(base_url=runner.base_url, prefix="Basic",
                                          token=base64.b64encode(f"{account_id}:wrong".encode()).decode())
    response, _ = _call(module, stranger, "list_payment_iframes", account_id=account_id)
    denied = check(doc, "listPaymentIframes", response)
    assert response.status_code == 401 and denied["errorType"] == "authentication"

    response, _ = _call(module, client, "delete_iframe", account_id=account_id, iframe_id=iframe_id)
    assert check(doc, "deleteIframe", response) is None and response.status_code == 204
    response, _ = _call(module, client, "get_iframe", account_id=account_id, iframe_id=iframe_id)
    assert check(doc, "getIframe", response)["errorType"] == "not_found"
    seen.add("deleteIframe")
    assert seen == set(OPERATIONS)


def test_the_originals_iframe_operations_are_the_seven(doc: dict[str, Any]) -> None:
    """The document's payment-iFrame operations are the ones the test above runs (a new one fails here)."""
    found = {op["operationId"] for path, item in doc["paths"].items() if "payment-iframe" in path
             for op in item.values() if isinstance(op, dict) and "operationId" in op}
    assert found == set(OPERATIONS)
