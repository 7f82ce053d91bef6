"""The original's PayConex v4 document as the e2e tests use it: its generated client, its examples, its schemas.

``../shared/original-contracts/payconex-openapi.json`` (beside the repository; the tests that need it are skipped
without it, each test that needs it and only those: :func:`document`, :func:`generate`) is the original's
published document. The e2e tests of the v4 operations
(the payment iFrame, API keys, v4 payments and dynamic descriptors, webhook endpoints) each

* generate a client from it, unmodified, with openapi-python-client, the generator the project already uses
  (tests/e2e/test_generated_clients_e2e.py), into ``.local/generated-clients/`` (:func:`generate`: cached by the
  document's and the generator's hash, never in the repository); the same for our own document;
* send its operations with the original's own request examples (:func:`example`);
* check each answer's status and body against the original's response schema of that status, formats checked
  (:func:`check`), and, with ``ours=True``, against our document too (tests/e2e/contract.py).

The document contradicts itself in a few places that are not ours to settle. :func:`registry` validates against
a copy with each of them read as its intent and its examples read, and only these (each documented where the
operation is: docs/integrators/iframe.md, api-keys.md, v4-payments.md):

* the payment iFrame's configurations and instances declare ``id`` ``format: uuid`` while its own paths take
  ``ifr_`` + 32 hex and ``ifri_`` + 32 hex: ``format`` is left out of those ``id`` members (:data:`ID_SCHEMAS`);
* ``ApiKeyExtended`` adds ``secret`` to an ``ApiKey`` that closes its members: read as ``ApiKey`` plus ``secret``;
* ``Status`` spells ``APPROVED,`` and ``FAILED,`` with a trailing comma its examples do not have;
* ``CardResponse.last4`` and ``expiry`` carry the JavaScript literal ``/^\\d{4}$/``, which no four digits match;
* ``Level3Response`` is closed to ``status`` by itself and to the level 3 members by its ``allOf``: only ``{}``
  would match, so it is left open.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.e2e import contract

__all__ = ["ROOT", "ORIGINAL", "OURS", "ID_SCHEMAS", "needs_original", "document", "generate", "example",
           "registry", "absolute", "operation", "validator", "check"]

ROOT = Path(__file__).resolve().parents[2]
ORIGINAL = ROOT.parent / "shared" / "original-contracts" / "payconex-openapi.json"
OURS = ROOT / "openapi" / "gateway.json"
CACHE = ROOT / ".local" / "generated-clients"
BIN = Path(sys.executable).parent
#: The payment iFrame's schemas whose ``id`` declares ``format: uuid`` against the document's own id patterns.
ID_SCHEMAS = ("IframeResponse", "IFrameCreateInstance", "IFrameInstanceResponse")

_ABSENT = f"{ORIGINAL} is absent (the original's documents sit beside the repository)"
#: For a test that reads the original's document some other way; the fixtures' own calls skip by themselves.
needs_original = pytest.mark.skipif(not ORIGINAL.is_file(), reason=_ABSENT)


def document() -> dict[str, Any]:
    """The original's document; the calling test (or fixture) is skipped without it, and only that test: a test
    of ours that needs neither the document nor its client still runs."""
    if not ORIGINAL.is_file():
        pytest.skip(_ABSENT)
    return json.loads(ORIGINAL.read_text())


def generate(path: Path, name: str) -> ModuleType:
    """openapi-python-client's client of the document at ``path``, generated once per document and generator
    version (several xdist workers may generate it at once: each in its own directory, the first one kept)."""
    from importlib.metadata import version

    if not path.is_file():
        pytest.skip(f"{path} is absent" if path != ORIGINAL else _ABSENT)
    command = [str(BIN / "openapi-python-client"), "generate", "--path", str(path), "--output-path", "{out}"]
    key = hashlib.sha256(path.read_bytes() + " ".join(command).encode()).hexdigest()[:16]
    out = CACHE / f"opc{version('openapi-python-client')}-{name}-{key}"
    if not (out / ".done").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = CACHE / f".tmp-{name}-{key}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        result = subprocess.run([part.format(out=str(tmp)) for part in command], cwd=CACHE, capture_output=True,
                                text=True, timeout=600,
                                env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        (tmp / ".done").write_text(key)
        if not (out / ".done").exists():
            shutil.rmtree(out, ignore_errors=True)
            tmp.rename(out)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    package = next(p.parent for p in out.glob("*/client.py"))
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    return importlib.import_module(package.name)


# ------------------------------------------------------------------------------------------------ the examples
def _resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _valid(doc: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    return not list(validator(doc, schema).iter_errors(value))


def example(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    """The original's example of ``schema``: per property its ``example`` (else ``default``, else the first enum
    value, else one built from its own properties); an example that breaks its own schema is left out (e.g.
    ``Customer.phone`` ``14441234321`` against ``\\+\\d{6,16}$``)."""
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


def _settled(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``doc`` with its self-contradictions read as the module docstring lists them."""
    patched = copy.deepcopy(doc)
    schemas = patched["components"]["schemas"]
    for name in ID_SCHEMAS:
        schemas[name]["properties"]["id"].pop("format", None)
    schemas["ApiKeyExtended"] = {**schemas["ApiKey"], "properties": {
        **schemas["ApiKey"]["properties"], **schemas["ApiKeyExtended"]["properties"]}}
    schemas["Status"]["enum"] = [s.rstrip(",") for s in schemas["Status"]["enum"]]
    for name in ("last4", "expiry"):
        schemas["CardResponse"]["properties"][name]["pattern"] = "^\\d{4}$"
    schemas["Level3Response"].pop("additionalProperties", None)
    return patched


def registry(doc: dict[str, Any]) -> Any:
    """The document (settled: :func:`_settled`) as a referencing registry, under ``urn:original``."""
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    if id(doc) not in _REGISTRIES:
        _REGISTRIES[id(doc)] = Registry().with_resource("urn:original", Resource.from_contents(
            _settled(doc), default_specification=DRAFT202012))
    return _REGISTRIES[id(doc)]


def absolute(schema: Any) -> Any:
    """``schema`` with its document-relative references (``#/components/...``) made absolute."""
    if isinstance(schema, dict):
        return {k: ("urn:original" + v if k == "$ref" and isinstance(v, str) and v.startswith("#/")
                    else absolute(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [absolute(v) for v in schema]
    return schema


def validator(doc: dict[str, Any], schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator, FormatChecker

    return Draft202012Validator(absolute(schema), registry=registry(doc), format_checker=FormatChecker())


def operation(doc: dict[str, Any], operation_id: str) -> tuple[str, str, dict[str, Any]]:
    """(method, path, operation) of ``operation_id`` in ``doc``."""
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and op.get("operationId") == operation_id:
                return method, path, op
    raise AssertionError(operation_id)


def check(doc: dict[str, Any], operation_id: str, response: Any, *, ours: bool = False) -> Any:
    """The answer's status is one the original's document gives ``operation_id``, and its body is valid against
    that status's schema (formats checked); with ``ours``, valid against our document too. The parsed JSON."""
    if ours:
        contract.check(response.request.method, str(response.request.url), response.status_code,
                       {k.lower(): v for k, v in response.headers.items()}, response.content)
    _, _, op = operation(doc, operation_id)
    status = str(response.status_code)
    assert status in op["responses"], (operation_id, status, response.content[:500])
    content = (op["responses"][status].get("content") or {}).get("application/json")
    if content is None:
        assert not response.content, (operation_id, response.content[:200])
        return None
    body = response.json()
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator(doc, content["schema"]).iter_errors(body)]
    assert not errors, (operation_id, status, errors, body)
    return body
