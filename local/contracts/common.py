"""Building blocks of the OpenAPI 3.1 documents (docs/integrators/openapi.md, docs/design/api-contracts.md).

Patterns, lengths and enums are taken from the validators' own constants wherever the code has them (a Python
pattern becomes an anchored JSON Schema pattern with :func:`pattern`), so a changed validator changes the
document, and ``tests/unit/test_openapi_contracts.py`` fails until ``python -m local.contracts`` has been run.
"""

from __future__ import annotations

import re
from typing import Any

from vaultcore.lazy_re import LazyPattern

OPENAPI = "3.1.0"
VERSION = "1.0.0"
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"

#: Where each API is served: the local runner (every API on one port) and API Gateway's default endpoint.
SERVERS = [
    {"url": "http://127.0.0.1:3000", "description": "The local runner (`make run`): every API on one port."},
    {"url": "https://{restApiId}.execute-api.{region}.amazonaws.com/{stage}",
     "description": "A deployed stack: the API's own execute-api endpoint (stack outputs `*ApiUrl`).",
     "variables": {"restApiId": {"default": "abcdef1234", "description": "The REST API id of this API."},
                   "region": {"default": "us-east-1"},
                   "stage": {"default": "cert", "enum": ["cert", "prod"],
                             "description": "The stage: the template's Environment parameter."}}},
]

# --------------------------------------------------------------------------------------------- security schemes
HMAC_DESCRIPTION = (
    "`Authorization: Hmac username=\"<partnerId>\", nonce=\"<unique>\", timestamp=\"<unix seconds>\", "
    "response=\"<hex>\"` (values quoted or not, properties in any order). `response` is the lowercase hex "
    "HMAC-SHA256, keyed with the partner's `hmacKey` exactly as issued (its ASCII bytes, not base64-decoded), of "
    "`POST <path>\\n<nonce>\\n<timestamp>\\n\\n<lowercase hex SHA-256 of the exact body bytes>`. The timestamp may "
    "be at most 15 minutes old and 60 seconds in the future; a nonce (1-128 printable ASCII characters) is "
    "accepted once per partner in 15 minutes. A partner whose `apiSecurity` is `hmac` is accepted only with this "
    "scheme. Every failure answers the uniform authentication error (secure API `errCode` 1003, proxy `code` "
    "8003), whatever the cause; `POST /api/v1/authdebug` (certification only) explains a header step by step.")
BASIC_DESCRIPTION = ("`Authorization: Basic base64(partnerId:partnerKey)`: key-security partners only "
                     "(`apiSecurity` `key`).")


def hmac_scheme() -> dict[str, Any]:
    return {"type": "apiKey", "in": "header", "name": "Authorization", "description": HMAC_DESCRIPTION,
            "x-scheme": "Hmac"}


def basic_scheme() -> dict[str, Any]:
    return {"type": "http", "scheme": "basic", "description": BASIC_DESCRIPTION}


# --------------------------------------------------------------------------------------------- schemas
def ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _fold_case(text: str) -> str:
    """``(?i)`` is not ECMA-262: spell each letter outside a character class as ``[Xx]``."""
    out, in_class, escaped = [], False, False
    for ch in text:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            out.append(ch)
            escaped = True
        elif ch == "[":
            in_class = True
            out.append(ch)
        elif ch == "]":
            in_class = False
            out.append(ch)
        elif ch.isalpha() and not in_class:
            out.append(f"[{ch.upper()}{ch.lower()}]")
        else:
            out.append(ch)
    return "".join(out)


def pattern(source: re.Pattern[str] | LazyPattern[str] | str) -> str:
    """An anchored JSON Schema pattern of a validator's regular expression (matched with ``fullmatch``; a
    module-level one may be a :class:`vaultcore.lazy_re.LazyPattern`, compiled on first use)."""
    text = source.pattern if isinstance(source, re.Pattern | LazyPattern) else source
    if text.startswith("(?i)"):
        text = _fold_case(text[4:])
    if text.startswith("^") and text.endswith("$") and not text.endswith("\\$"):
        text = text[1:-1]
    return f"^(?:{text})$"


_BOUNDED = re.compile(r"^(?:\^)?(\[[^\]]+\]|\.)\{(\d+)(?:,(\d+))?\}(?:\$)?$")


def text(source: re.Pattern[str] | LazyPattern[str] | str | None = None, description: str = "",
         **extra: Any) -> dict[str, Any]:
    """A string schema; a pattern of the form ``[class]{lo,hi}`` also gives minLength/maxLength."""
    schema: dict[str, Any] = {"type": "string"}
    if source is not None:
        raw = source.pattern if isinstance(source, re.Pattern | LazyPattern) else source
        schema["pattern"] = pattern(source)
        m = _BOUNDED.match(raw)
        if m:
            schema["minLength"] = int(m.group(2))
            schema["maxLength"] = int(m.group(3) or m.group(2))
    if description:
        schema["description"] = description
    schema.update(extra)
    return schema


def obj(properties: dict[str, Any], required: tuple[str, ...] | list[str] = (), *, closed: bool = True,
        description: str = "", **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    if description:
        schema["description"] = description
    schema.update(extra)
    return schema


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema, or null (3.1: a type list, or anyOf for a reference)."""
    if "$ref" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = [kind, "null"]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


#: The known values of an open code set (error codes): ``x-known-values``, with ``x-enum-descriptions`` in the same
#: order. Not an ``enum``: a code added later must still parse in clients generated from today's document
#: (openapi-python-client and openapi-generator turn an ``enum`` into a closed type that refuses any other value).
#: The end-to-end contract checks (``tests/e2e/contract.py``, schemathesis) close the set again with :func:`closed`,
#: so this platform's own answers must use a known code.
KNOWN = "x-known-values"
OPEN_NOTE = ("The set is open: codes may be added, and a client must accept any value (the known ones are listed "
             "in `x-known-values`, their meanings in `x-enum-descriptions`).")


def codes(table: dict[int, str], description: str) -> dict[str, Any]:
    """An open integer error code: the known codes (``x-known-values``), their meanings (``x-enum-descriptions``)
    and a Markdown table in the description."""
    ordered = sorted(table)
    return open_codes("integer", ordered, [table[c] for c in ordered], description)


def open_codes(kind: str, known: list[Any], meanings: list[str], description: str) -> dict[str, Any]:
    rows = "\n".join(f"| {c} | {m} |" for c, m in zip(known, meanings, strict=True))
    return {"type": kind, KNOWN: known, "x-enum-descriptions": meanings,
            "description": f"{description} {OPEN_NOTE}\n\n| code | meaning |\n|---|---|\n{rows}"}


def closed(node: Any) -> Any:
    """A copy of a document (or schema) where every open code set is an ``enum`` of its known values again: what
    this platform may answer, for the contract checks of its own responses."""
    if isinstance(node, dict):
        out = {k: closed(v) for k, v in node.items()}
        if KNOWN in out and "enum" not in out:
            out["enum"] = list(out[KNOWN])
        return out
    if isinstance(node, list):
        return [closed(v) for v in node]
    return node


# --------------------------------------------------------------------------------------------- operations
def json_content(schema: dict[str, Any], example: Any = None) -> dict[str, Any]:
    media: dict[str, Any] = {"schema": schema}
    if example is not None:
        media["example"] = example
    return {JSON: media}


def body(schema: dict[str, Any], *, required: bool = True, example: Any = None, description: str = "",
         form: dict[str, Any] | None = None) -> dict[str, Any]:
    """A request body: ``schema`` as JSON, and with ``form`` (a schema of another name) also form-urlencoded.

    The two media types have schemas of different names so that generated clients tell them apart (one model class
    per media type: openapi-python-client sends a body of the form class as a form, of the JSON class as JSON)."""
    content = json_content(schema, example)
    if form is not None:
        if form == schema:
            raise ValueError("a form body needs a schema of its own name (generated clients tell them apart by it)")
        # JSON first: openapi-generator builds its body parameter from the first media type (with the form first,
        # its python client filled form fields but chose the JSON content type and sent no body)
        content = {**content, FORM: {"schema": form}}
    out: dict[str, Any] = {"required": required, "content": content}
    if description:
        out["description"] = description
    return out


def response(description: str, schema: dict[str, Any] | None = None, *, example: Any = None,
             headers: dict[str, Any] | None = None, content: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description}
    if content is not None:
        out["content"] = content
    elif schema is not None:
        out["content"] = json_content(schema, example)
    if headers:
        out["headers"] = headers
    return out


def header(description: str, schema: dict[str, Any] | None = None, *, required: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"description": description, "schema": schema or {"type": "string"}}
    if required:
        out["required"] = True
    return out


def parameter(name: str, where: str, description: str, schema: dict[str, Any] | None = None, *,
              required: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "in": where, "description": description,
                           "schema": schema or {"type": "string"}}
    if required or where == "path":
        out["required"] = True
    return out


def document(*, title: str, description: str, paths: dict[str, Any], schemas: dict[str, Any],
             security_schemes: dict[str, Any] | None = None, tags: list[dict[str, str]] | None = None,
             api: str) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "openapi": OPENAPI,
        "info": {"title": title, "version": VERSION, "description": description},
        "jsonSchemaDialect": "https://spec.openapis.org/oas/3.1/dialect/base",
        "servers": SERVERS,
        "paths": paths,
        "components": {"schemas": schemas},
        "x-api": api,
    }
    if security_schemes:
        doc["components"]["securitySchemes"] = security_schemes
    if tags:
        doc["tags"] = tags
    return doc
