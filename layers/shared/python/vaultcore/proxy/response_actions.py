"""Response actions: tokenize (or detokenize) what the target sends back, before it reaches the partner.

docs/integrators/proxy.md "Response actions". The target's answer becomes a :class:`~vaultcore.proxy.transform.Message`:
its header fields as received, no query string, its body typed by its ``Content-Type`` and parsed with the request's
bounds (JSON depth 32, arrays 10,000, 1,000 form fields, any DOCTYPE refused) up to the 4 MiB response cap. The
configuration's ``responseActions`` run over it with the exchange's
:class:`~vaultcore.proxy.actions.ActionRunner` (the same paths, slots and tokenization as request actions; the
bfid rule is :meth:`ActionRunner._tokenize`), and the partner receives the rewritten body and headers: the safe
headers, plus every header a response substitution names.

Fail closed. With response actions configured, a body the actions address but cannot read (it does not parse as
its Content-Type, is not UTF-8 text for a regex, exceeds a cap, has a DOCTYPE, or is not the kind a
jsonpath/xpath needs: a text/html error page for a jsonpath) is never passed through: **8117**. Any other failure
of a response action (a value that is not valid for its field, a ``required`` response substitution that matched
nothing, an object at a path, a regex over its budget): **8118**. Both are HTTP 400 like the other target
failures (8110-8113); the message names the target's status, since the target did receive the request. The
stored log keeps the received status and headers (masked) and, for 8117, not the body.

Nothing here logs, and no message quotes a value or a body.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from vaultcore.proxy import errors as E
from vaultcore.proxy.actions import VARIABLE_HEADER_PREFIX, ActionRunner
from vaultcore.proxy.transform import Body, Headers, Message, body_kind

if TYPE_CHECKING:
    from vaultcore.proxy.config import ProxyConfig

__all__ = [
    "RESPONSE_MAX_BYTES",
    "VARIABLE_HEADER_PREFIX",
    "response_message",
    "run",
    "named_headers",
    "message_paths",
    "sample_response",
    "sample_body",
]

#: The HTTP client's response cap (vaultcore.net.http): a response body the actions parse is bounded by it.
RESPONSE_MAX_BYTES = 4_194_304
#: Request-phase codes meaning "the body cannot be read as the actions need": 8117 in the response phase.
_UNPROCESSABLE = frozenset({E.PAYLOAD_INVALID, E.PAYLOAD_TOO_LARGE, E.CONTENT_TYPE_UNSUPPORTED,
                            E.XML_DOCTYPE_REFUSED})


def response_message(headers: Iterable[tuple[str, str]], body: bytes) -> Message:
    """The target's answer as a message for the response actions (and the log): no query string, and never a
    query-string form view."""
    fields = Headers(headers)
    return Message(headers=fields, query=[],
                   body=Body(body, body_kind(fields.get("content-type"), body), max_bytes=RESPONSE_MAX_BYTES),
                   query_form=False)


def _error(exc: E.ProxyError, status: int) -> E.ProxyError:
    inner = exc.message.rstrip(".")
    if exc.code in _UNPROCESSABLE:
        return E.ProxyError(f"The target's response (HTTP {status}) cannot be processed by the response actions "
                            f"(code {exc.code}): {inner}. The target received the request; its response was "
                            f"withheld.", code=E.RESPONSE_UNPROCESSABLE)
    return E.ProxyError(f"A response action failed on the target's response (HTTP {status}; code {exc.code}): "
                        f"{inner}. The target received the request; its response was withheld.",
                        code=E.RESPONSE_ACTION_FAILED)


def run(runner: ActionRunner, message: Message, status: int) -> None:
    """Run the configuration's response actions over ``message``; raises :class:`ProxyError` 8117 or 8118.

    The body is parsed first when a response action addresses it (so a body that does not parse is 8117 even
    when no path would have matched); an empty body has nothing to address.
    """
    config = runner.config
    try:
        if any(s.path.is_body for a in config.response_actions for s in a.substitutions):
            if message.body.kind in ("json", "xml", "form"):
                message.body.parse()
            elif message.body.kind == "text":
                message.body.text()  # a regex needs UTF-8 text; a jsonpath/xpath is refused by locate (8107)
        runner.run_response(message)
    except E.ProxyError as exc:
        raise _error(exc, status) from None


def named_headers(config: ProxyConfig) -> dict[str, str]:
    """Lower-case name -> configured spelling of the response headers the response actions name: returned to the
    partner (after the actions) in addition to the safe headers."""
    return {s.path.key or "": s.path.path for a in config.response_actions for s in a.substitutions
            if s.path.source == "header"}


def message_paths(actions: Iterable[Any]) -> list[Any]:
    """The compiled paths of ``actions`` that address a message (variables are not in any message)."""
    return [s.path for a in actions for s in a.substitutions if s.path.source != "variable"]


def sample_response(raw: Any) -> tuple[int, list[tuple[str, str]], bytes]:
    """The dry run's ``response`` member: ``{status?, headers?, body?}`` (status 200, no headers, no body by
    default; a JSON value as body is sent as ``application/json``)."""
    from vaultcore.errors import ValidationError

    if not isinstance(raw, dict):
        raise ValidationError("response must be an object {status, headers, body}.", code=E.CONFIG_INVALID)
    unknown = set(raw) - {"status", "headers", "body"}
    if unknown:
        raise ValidationError("response has an unknown member (allowed: body, headers, status).",
                              code=E.CONFIG_INVALID)
    status = raw.get("status", 200)
    if not isinstance(status, int) or isinstance(status, bool) or not 100 <= status <= 599:
        raise ValidationError("response.status must be an integer from 100 to 599.", code=E.CONFIG_INVALID)
    headers_raw = raw.get("headers") or {}
    if not isinstance(headers_raw, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in headers_raw.items()):
        raise ValidationError("response.headers must be an object of strings.", code=E.CONFIG_INVALID)
    headers = [(k.lower(), v) for k, v in headers_raw.items()]
    body, is_json = sample_body(raw.get("body"))
    if is_json and not any(k == "content-type" for k, _v in headers):
        headers.append(("content-type", "application/json"))
    return status, headers, body


def sample_body(value: Any) -> tuple[bytes, bool]:
    """A dry run's sample body (request or response): None is empty, a string is sent as its UTF-8 bytes, any
    other JSON value is serialised; the flag says the body was a JSON value (so it defaults to application/json)."""
    if value is None:
        return b"", False
    if isinstance(value, str):
        return value.encode("utf-8"), False
    return json.dumps(value).encode("utf-8"), True
