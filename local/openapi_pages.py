"""Runner-only pages: the OpenAPI documents of ``openapi/`` and a reference page rendered from each.

* ``GET /openapi/`` — an index of the six documents;
* ``GET /openapi/<api>.json`` — the document, as checked in;
* ``GET /openapi/<api>.html`` — a self-contained reference (no script, no CDN: the page is rendered on the
  server from the document): every operation with its parameters, request fields and their rules (type, enum,
  pattern, lengths, required), responses, and the error-code tables.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ROOT / "openapi"
_NAME = re.compile(r"^/openapi/([a-z]+)\.(json|html)$")
_METHODS = ("get", "post", "put", "patch", "delete")
_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;color:#1b1f24}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccd;margin-top:2em}h3{margin:1.4em 0 .3em}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.92em;background:#f3f4f6;padding:0 .2em}
table{border-collapse:collapse;width:100%;margin:.4em 0 1em}th,td{border:1px solid #d5d8de;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#eef0f4}.m{display:inline-block;min-width:4em;font-weight:bold;
color:#fff;background:#3b6ea8;padding:0 .4em;border-radius:3px;text-align:center}.m.get{background:#2f855a}
.m.put,.m.patch{background:#b7791f}.m.delete{background:#c53030}.op{border:1px solid #d5d8de;border-radius:4px;
padding:.2em 1em 1em;margin:1em 0}.req{color:#c53030;font-weight:bold}.desc{white-space:pre-wrap}
nav a{margin-right:1em}
"""


def _page(title: str, body: str) -> bytes:
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body>{body}</body></html>").encode()


def _md(text: str | None) -> str:
    """Enough Markdown for the documents' descriptions: `code` spans; tables are rendered separately."""
    if not text:
        return ""
    text = text.split("\n\n| code |", 1)[0]
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


class _Renderer:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.schemas = doc.get("components", {}).get("schemas", {})

    def resolve(self, schema: Any) -> tuple[dict[str, Any], str | None]:
        name = None
        while isinstance(schema, dict) and "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            schema = self.schemas.get(name, {})
        return (schema if isinstance(schema, dict) else {}), name

    def type_of(self, schema: dict[str, Any]) -> str:
        schema, name = self.resolve(schema)
        if name:
            return f'<a href="#schema-{name}">{name}</a>'
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return " | ".join(self.type_of(s) for s in schema[key])
        if "const" in schema:
            return f"<code>{html.escape(json.dumps(schema['const']))}</code>"
        kind = schema.get("type", "any")
        if isinstance(kind, list):
            kind = " | ".join(kind)
        if kind == "array" and "items" in schema:
            return f"array of {self.type_of(schema['items'])}"
        return html.escape(str(kind))

    def rules(self, schema: dict[str, Any]) -> str:
        schema, name = self.resolve(schema)
        out = []
        if "enum" in schema and "x-enum-descriptions" not in schema:
            out.append("one of " + ", ".join(f"<code>{html.escape(json.dumps(v))}</code>" for v in schema["enum"]))
        elif "x-enum-descriptions" in schema:
            out.append(f'codes: see <a href="#schema-{name}">{name}</a>' if name else "codes below")
        if "pattern" in schema:
            out.append(f"pattern <code>{html.escape(schema['pattern'])}</code>")
        for key, label in (("minLength", "min length"), ("maxLength", "max length"), ("minimum", "min"),
                           ("maximum", "max"), ("minItems", "min items"), ("maxItems", "max items"),
                           ("default", "default")):
            if key in schema:
                out.append(f"{label} <code>{html.escape(json.dumps(schema[key]))}</code>")
        if "items" in schema:
            inner = self.rules(schema["items"])
            if inner:
                out.append(f"items: {inner}")
        return "; ".join(out)

    def fields(self, schema: Any, prefix: str = "", depth: int = 0) -> list[str]:
        resolved, _name = self.resolve(schema)
        rows = []
        required = set(resolved.get("required", []))
        for prop, sub in (resolved.get("properties") or {}).items():
            sub_resolved, sub_name = self.resolve(sub)
            desc = sub.get("description") if isinstance(sub, dict) else None
            desc = desc or sub_resolved.get("description")
            rows.append(f"<tr><td class=mono>{html.escape(prefix + prop)}"
                        f"{' <span class=req>*</span>' if prop in required else ''}</td>"
                        f"<td>{self.type_of(sub)}</td><td>{self.rules(sub)}</td><td class=desc>{_md(desc)}</td></tr>")
            if depth < 2 and not sub_name and sub_resolved.get("type") == "object" and sub_resolved.get("properties"):
                rows.extend(self.fields(sub_resolved, f"{prefix}{prop}.", depth + 1))
        return rows

    def table(self, schema: Any) -> str:
        resolved, name = self.resolve(schema)
        parts = []
        if name:
            parts.append(f'<p>Schema <a href="#schema-{name}">{name}</a></p>')
        for key in ("oneOf", "anyOf"):
            if key in resolved:
                parts.append("<p>" + ("One of: " if key == "oneOf" else "Any of: ")
                             + ", ".join(self.type_of(s) for s in resolved[key]) + "</p>")
        rows = self.fields(resolved)
        if rows:
            parts.append("<table><tr><th>field</th><th>type</th><th>rules</th><th>description</th></tr>"
                         + "".join(rows) + "</table>")
        if "x-enum-descriptions" in resolved:
            parts.append(self.codes(resolved))
        return "".join(parts)

    def codes(self, schema: dict[str, Any]) -> str:
        rows = "".join(f"<tr><td class=mono>{code}</td><td>{_md(meaning)}</td></tr>"
                       for code, meaning in zip(schema.get("x-known-values", schema.get("enum")) or (),
                                                schema["x-enum-descriptions"], strict=True))
        return f"<table><tr><th>code</th><th>meaning</th></tr>{rows}</table>"

    def operation(self, path: str, method: str, op: dict[str, Any]) -> str:
        anchor = op.get("operationId", f"{method}-{path}")
        out = [f'<div class=op id="op-{html.escape(anchor)}"><h3><span class="m {method}">{method.upper()}</span> '
               f"<code>{html.escape(path)}</code></h3><p><b>{html.escape(op.get('summary', ''))}</b></p>",
               f"<p class=desc>{_md(op.get('description'))}</p>"]
        security = op.get("security")
        if security is not None:
            names = [" + ".join(req) or ("credentials in the body" if op.get("x-body-credentials") else "none")
                     for req in security]
            out.append(f"<p>Authentication: {html.escape(' or '.join(names))}"
                       + (f"; body credentials {', '.join(f'<code>{c}</code>' for c in op['x-body-credentials'])}"
                          if op.get("x-body-credentials") else "") + "</p>")
        params = op.get("parameters") or []
        if params:
            rows = "".join(f"<tr><td class=mono>{html.escape(p['name'])}"
                           f"{' <span class=req>*</span>' if p.get('required') else ''}</td><td>{p['in']}</td>"
                           f"<td>{self.rules(p.get('schema', {}))}</td><td class=desc>{_md(p.get('description'))}"
                           f"</td></tr>" for p in params)
            out.append("<h4>Parameters</h4><table><tr><th>name</th><th>in</th><th>rules</th><th>description</th>"
                       f"</tr>{rows}</table>")
        body = op.get("requestBody")
        if body:
            media = ", ".join(f"<code>{html.escape(m)}</code>" for m in body.get("content", {}))
            out.append(f"<h4>Request body{' (required)' if body.get('required') else ''}: {media}</h4>"
                       f"<p class=desc>{_md(body.get('description'))}</p>")
            first: dict[str, Any] = next(iter(body.get("content", {}).values()), {})
            out.append(self.table(first.get("schema", {})))
        out.append("<h4>Responses</h4><table><tr><th>status</th><th>description</th><th>body</th></tr>")
        for status, resp in op.get("responses", {}).items():
            content = resp.get("content") or {}
            shown = ", ".join(f"<code>{html.escape(m)}</code> {self.type_of(c.get('schema', {}))}"
                              for m, c in content.items())
            out.append(f"<tr><td class=mono>{status}</td><td class=desc>{_md(resp.get('description'))}</td>"
                       f"<td>{shown}</td></tr>")
        out.append("</table></div>")
        return "".join(out)

    def page(self) -> bytes:
        info = self.doc["info"]
        api = self.doc.get("x-api", "")
        toc, ops = [], []
        for path, item in self.doc["paths"].items():
            for method in _METHODS:
                if method in item:
                    op = item[method]
                    anchor = op.get("operationId", f"{method}-{path}")
                    toc.append(f'<li><a href="#op-{html.escape(anchor)}"><span class="m {method}">{method.upper()}'
                               f"</span> <code>{html.escape(path)}</code></a> {html.escape(op.get('summary', ''))}"
                               "</li>")
                    ops.append(self.operation(path, method, op))
        schemes = self.doc.get("components", {}).get("securitySchemes", {})
        security = "".join(f"<tr><td class=mono>{html.escape(n)}</td><td>{html.escape(s.get('type', ''))}"
                           f"{(' ' + html.escape(s.get('name', ''))) if s.get('name') else ''}</td>"
                           f"<td class=desc>{_md(s.get('description'))}</td></tr>" for n, s in schemes.items())
        schemas = "".join(f'<div id="schema-{html.escape(n)}"><h3>{html.escape(n)}</h3>'
                          f"<p class=desc>{_md(s.get('description'))}</p>{self.table(s)}</div>"
                          for n, s in self.schemas.items())
        body = (f"<nav><a href=\"/openapi/\">All APIs</a><a href=\"/openapi/{api}.json\">{api}.json</a></nav>"
                f"<h1>{html.escape(info['title'])} <small>{html.escape(info['version'])}</small></h1>"
                f"<p class=desc>{_md(info.get('description'))}</p><h2>Operations</h2><ul>{''.join(toc)}</ul>"
                + (f"<h2>Authentication</h2><table><tr><th>scheme</th><th>type</th><th>description</th></tr>"
                   f"{security}</table>" if security else "")
                + "".join(ops) + f"<h2>Schemas and error codes</h2>{schemas}")
        return _page(info["title"], body)


def apis() -> list[str]:
    return sorted(p.stem for p in DOCUMENTS.glob("*.json"))


def render_html(doc: dict[str, Any]) -> bytes:
    return _Renderer(doc).page()


def _index() -> bytes:
    rows = []
    for api in apis():
        doc = json.loads((DOCUMENTS / f"{api}.json").read_text(encoding="utf-8"))
        count = sum(1 for item in doc["paths"].values() for m in _METHODS if m in item)
        rows.append(f"<tr><td><a href=\"/openapi/{api}.html\">{html.escape(doc['info']['title'])}</a></td>"
                    f"<td><a href=\"/openapi/{api}.json\">{api}.json</a></td><td>{count}</td></tr>")
    return _page("API contracts", "<h1>API contracts</h1><p>OpenAPI 3.1 documents of the platform's APIs "
                                  "(<code>openapi/</code> in the repository).</p><table><tr><th>API</th>"
                                  f"<th>document</th><th>operations</th></tr>{''.join(rows)}</table>")


def serve(platform: Any, method: str, path: str, headers: dict[str, str], body: bytes
          ) -> tuple[int, dict[str, str], bytes]:
    route = path.split("?", 1)[0]
    if method not in ("GET", "HEAD"):
        return 405, {"Content-Type": "application/json"}, b'{"message": "Method Not Allowed"}'
    if route in ("/openapi", "/openapi/", "/openapi/index.html"):
        return 200, {"Content-Type": "text/html; charset=utf-8"}, _index()
    m = _NAME.match(route)
    if m is None or m.group(1) not in apis():
        return 404, {"Content-Type": "application/json"}, b'{"message": "Not Found"}'
    raw = (DOCUMENTS / f"{m.group(1)}.json").read_bytes()
    if m.group(2) == "json":
        return 200, {"Content-Type": "application/json", "Access-Control-Allow-Origin": "*"}, raw
    return 200, {"Content-Type": "text/html; charset=utf-8"}, render_html(json.loads(raw))


ROUTE = ("/openapi", serve)
