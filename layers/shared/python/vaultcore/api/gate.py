"""The input gate at the edge: every request's body, headers, query and path are bounded and well formed
before any route sees them (issue 12: no 500 for any input).

Checked on every request, whatever the route:

* sizes: the body (per API family), the number and length of headers, query parameters and path parameters;
* text: every header, query and path value is valid UTF-8 text (no lone surrogate, no NUL);
* JSON bodies (a JSON ``Content-Type``, or a body that starts with ``{`` or ``[``): nesting depth (32),
  array length (10,000), object members (1,000), and no lone surrogate in a string or key once the JSON
  escapes are decoded (RFC 8259 §8.2). The parsed value is kept on the request, so routes never parse again.

A body that is not JSON at all is left to the route, which answers with its own documented "not a JSON object"
code; the gate refuses only what could make a route fail on the input's shape. Bodies of other formats are
the proxy's (bounded by :mod:`vaultcore.net.payloads`) or form bodies (parsed with replacement of bad bytes).

A refusal is :class:`InputRejected`; :mod:`vaultcore.api.responses` gives it the documented refusal of the API
family: secure API and parser ``errCode`` 1006, proxy ``code`` 8100 (text) or 8101 (a cap), management and
collector ``errCode`` 400 (HTTP 400; a collector body over its 8 KiB cap: 413), QSAPI and RSAPI ``error_code``
100 with HTTP 200 (like every gateway failure), the wallet session and association file ``error_code`` 100 with
HTTP 400, ``/paymentMethods`` and ``/payments`` ``errorCode`` ``"100"`` with HTTP 400. Messages name what was
refused, never the value.
"""

from __future__ import annotations

from vaultcore.api.http import Request
from vaultcore.api.json_body import MAX_JSON_DEPTH, InputRejected, load_json

__all__ = ["InputRejected", "BodyTooLarge", "check_request", "load_json", "BODY_LIMITS", "MAX_JSON_DEPTH"]

# The proxy forwards partners' payloads (1 MiB, as the proxy's own caps); the other APIs take small
# documents: a wallet token, a proxy configuration and a gateway request are all far below 256 KiB. The
# collector takes one device report of at most 8 KiB (vaultcore.fraud.collector).
BODY_LIMITS = {"proxy": 1_048_576, "collector": 8_192}
DEFAULT_BODY_LIMIT = 262_144
MAX_HEADERS = 100
MAX_HEADER_VALUE = 8_192
MAX_QUERY_PARAMS = 100
MAX_QUERY_TEXT = 8_192
MAX_PATH_PARAM = 4_096


class BodyTooLarge(InputRejected):
    """The body is over the family's cap (:data:`BODY_LIMITS`): the collector answers it 413, as its route does."""


def _check_text(value: str, what: str, limit: int) -> None:
    if len(value) > limit:
        raise InputRejected(f"{what} is longer than {limit} characters.")
    if "\x00" in value:
        raise InputRejected(f"{what} holds a NUL character.", "text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputRejected(f"{what} is not valid UTF-8 text (a lone surrogate).", "text") from None


def _looks_like_json(request: Request) -> bool:
    if "json" in request.content_type:
        return True
    return request.body.lstrip()[:1] in (b"{", b"[")


def check_request(request: Request, family: str) -> None:
    """Refuse, with :class:`InputRejected`, a request no route should see (see the module docstring)."""
    limit = BODY_LIMITS.get(family, DEFAULT_BODY_LIMIT)
    if len(request.body) > limit:
        raise BodyTooLarge(f"The body is larger than {limit} bytes.")
    pairs = request.header_pairs()
    if len(pairs) > MAX_HEADERS:
        raise InputRejected(f"The request has more than {MAX_HEADERS} headers.")
    for name, value in pairs:
        _check_text(name, "A header name", 256)
        _check_text(value, "A header value", MAX_HEADER_VALUE)
    query = request.query_pairs()
    if len(query) > MAX_QUERY_PARAMS:
        raise InputRejected(f"The query string has more than {MAX_QUERY_PARAMS} parameters.")
    for name, value in query:
        _check_text(name, "A query parameter name", 256)
        _check_text(value, "A query parameter value", MAX_QUERY_TEXT)
    for value in request.path_params.values():
        _check_text(value, "A path parameter", MAX_PATH_PARAM)
    _check_text(request.path, "The path", 8_192)  # API Gateway's own request-line cap is 10 KiB
    if family != "proxy" and _looks_like_json(request):
        request.json()  # parsed once, through load_json: a refusal is raised here, before the route
