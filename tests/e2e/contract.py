"""Every response the end-to-end suite receives is checked against its OpenAPI document (docs/integrators/openapi.md).

:func:`check` is called by the shared client (:mod:`tests.e2e.http`) for every response: the route is found by
method and path among the six documents of ``openapi/``, the response by its status (else ``default``), and a
JSON body is validated with ``jsonschema`` (Draft 2020-12, the dialect of OpenAPI 3.1) against that response's
``application/json`` schema. Bodies that are not JSON (XML echoes of the proxy, the collector's script, the
association file) are exempt by content type; paths no document has (``/_local/...``, ``/openapi/...``, unknown
routes) are not checked.

A mismatch is recorded in :data:`VIOLATIONS`; ``tests/e2e/conftest.py`` fails the test that made the call.
:data:`STATS` counts what was checked, so a test can prove the hook ran.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from local.contracts.common import closed

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ROOT / "openapi"
METHODS = ("get", "put", "post", "delete", "patch")


@dataclass
class Stats:
    checked: int = 0
    exempt: int = 0
    undocumented: int = 0
    operations: Counter[tuple[str, str, int]] = field(default_factory=Counter)  # (api, operationId, status)


STATS = Stats()
VIOLATIONS: list[str] = []
_lock = threading.Lock()


@dataclass(frozen=True)
class _Route:
    api: str
    template: str
    method: str
    regex: re.Pattern[str]
    operation: dict[str, Any]


class _Contracts:
    def __init__(self) -> None:
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        resources = []
        routes: list[_Route] = []
        for path in sorted(DOCUMENTS.glob("*.json")):
            api = path.stem
            # error codes are open in the documents (generated clients must parse new ones); this platform's own
            # answers must use a known one: the known values are closed into an enum again for the check
            doc = closed(json.loads(path.read_text(encoding="utf-8")))
            resources.append((f"urn:openapi:{api}", Resource.from_contents(doc, default_specification=DRAFT202012)))
            for template, item in doc["paths"].items():
                pattern = re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template))
                regex = re.compile("^" + pattern.rstrip("/") + "/?$")
                for method in METHODS:
                    if method in item:
                        routes.append(_Route(api, template, method.upper(), regex, item[method]))
        # Concrete paths before templated ones (as API Gateway and the routers match).
        routes.sort(key=lambda r: r.template.count("{"))
        self.routes = routes
        self.registry = Registry().with_resources(resources)
        self.validator_class = Draft202012Validator

    def route(self, method: str, path: str) -> _Route | None:
        for r in self.routes:
            if r.method == method and r.regex.match(path):
                return r
        return None

    def validate(self, r: _Route, status: int, data: Any) -> list[str]:
        responses = r.operation["responses"]
        key = str(status) if str(status) in responses else ("default" if "default" in responses else None)
        if key is None:
            return [f"status {status} is not documented"]
        content = responses[key].get("content") or {}
        if "application/json" not in content:
            if "*/*" in content:
                return []
            return [f"status {status} documents no JSON body"]
        pointer = "/".join(p.replace("~", "~0").replace("/", "~1")
                           for p in ("paths", r.template, r.method.lower(), "responses", key, "content",
                                     "application/json", "schema"))
        schema = {"$ref": f"urn:openapi:{r.api}#/{pointer}"}
        validator = self.validator_class(schema, registry=self.registry)
        out = []
        for e in validator.iter_errors(data):
            where = "/".join(str(p) for p in e.absolute_path) or "<body>"
            detail = "; ".join(f"{'/'.join(str(p) for p in c.absolute_path)}: {c.message[:160]}"
                               for c in sorted(e.context, key=lambda c: -len(c.absolute_path))[:3])
            out.append(f"{where}: {e.message[:200]}" + (f" [{detail}]" if detail else ""))
        return out[:5]


_contracts: _Contracts | None = None


def _get() -> _Contracts:
    global _contracts
    if _contracts is None:
        _contracts = _Contracts()
    return _contracts


def check(method: str, url: str, status: int, headers: dict[str, str], data: bytes, *, record: bool = True
          ) -> list[str]:
    """Validate one response; returns its violations, and records them and the counts unless ``record`` is false."""
    path = urlsplit(url).path
    contracts = _get()
    r = contracts.route(method.upper(), path)
    if r is None:
        if record:
            with _lock:
                STATS.undocumented += 1
        return []
    content_type = (headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        if record:
            with _lock:
                STATS.exempt += 1
        return []
    try:
        body = json.loads(data) if data else None
    except ValueError:
        problems = ["Content-Type is JSON but the body is not"]
    else:
        problems = contracts.validate(r, status, body)
    found = [f"{method.upper()} {path} -> {status} ({r.api}.json {r.operation.get('operationId')}): {p}"
             for p in problems]
    if record:
        with _lock:
            STATS.checked += 1
            STATS.operations[(r.api, r.operation.get("operationId", r.template), status)] += 1
            VIOLATIONS.extend(found)
    return found


def mark() -> int:
    with _lock:
        return len(VIOLATIONS)


def since(position: int) -> list[str]:
    with _lock:
        return VIOLATIONS[position:]


def forget(position: int) -> None:
    """Drop the violations recorded after ``position`` (a test that provokes one on purpose)."""
    with _lock:
        del VIOLATIONS[position:]
