"""The proxy endpoint: POST /api/v1/partners/{partnerID}/configurations/{configReferenceID}.

Flow (interface.md "the proxy endpoint"; docs/integrators/proxy.md):

1. authenticate the partner from ``Authorization`` (HMAC, or Basic for key-security partners): any failure is
   8003/401; the path's partner must be the authenticated one and own the configuration, else 8004/403 with one
   message for both cases (no oracle of other partners' references);
2. load the configuration: the item is cached per container for ``RECORD_CACHE_SECONDS`` and its compiled form
   (paths, XPath objects, bounded regexes) per *version*, so an update is never served half old, half new. When
   the item is read from the table, what steps 3 and 4 will read first (the configuration's wrapped secrets, the
   partner's token key ring and current subkeys, each tokenize action's latest template) is read in a background
   thread while the configuration compiles (:class:`_Prefetch`), into the same container caches they read;
3. check each action's authorization against the partner (basic/hmac credentials must still be the partner's
   live ones: a rotated or revoked credential stops the configuration, 8004);
4. parse the body by ``Content-Type`` (JSON, XML, URL-form; bounded; any DOCTYPE refused) and run the actions
   in order: ``tokenize`` (a new bfid, returned in the ``vault-id`` response header), ``detokenize`` (with the
   request's ``vault-id``), ``parser`` (the ``dev-device-serial``/``dev-device-type``/``dev-payload``
   [/``dev-ksn``/``dev-client-id``] headers decrypted once, each substitution writing its ``format`` as its
   ``dataType``, or its ``default``). A configured path absent from the payload is skipped and reported (the
   ``vault-unmatched`` response header and the log's ``unmatched``: ``<action>.<substitution>`` indices); a
   ``required`` substitution that matches nothing refuses the request (8115) before any action runs. Repeated
   query keys and headers are kept, in order (API Gateway's ``multiValue*`` members); with an empty body, body
   jsonpath/regex substitutions address URL-form data carried in the query string;
5. forward to ``target`` with ``proxy.method`` through :class:`vaultcore.net.http.SafeHttpClient` (egress
   policy with DNS check and pinned address, no redirects, 25 s in all, 1 MiB out, 4 MiB in), authenticated
   per ``proxy.authorization``, and answer the target's status, body and safe headers (a 3xx is answered, never
   followed);
6. with ``responseActions``, run them over the target's answer first (:mod:`vaultcore.proxy.response_actions`:
   tokens in place of what the target sent back, under the exchange's bfid; a body they cannot read is withheld
   with 8117, a failing action with 8118) and return the headers they name and ``vault-var-<name>`` for each
   variable holding a token (exchange variables: set by a parser, read by a later tokenize action);
7. store the masked exchange in ProxyLogs (:mod:`vaultcore.proxy.logs`), also when the exchange failed after
   step 2. The request's view is masked before step 5 (:meth:`_Exchange._request_view`): a request whose log
   masks run out of time is refused (8109), not forwarded.

All the partner-supplied pattern work of one request (regex, jsonpath, xpath; substitutions and masks) shares one
budget of ``PATTERN_BUDGET`` (2 s, :mod:`vaultcore.net.deadline`; docs/design/security.md "Bounded work per request"):
8109 when it runs out, well inside the function's 29 s timeout.

The container log gets one line per exchange with ids, status, code and durations: never a value.
"""

from __future__ import annotations

import base64
import hmac
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from vaultcore import clock, metrics
from vaultcore.api.http import Request, Response
from vaultcore.cache import ContainerCache
from vaultcore.errors import AuthenticationFailed, NotFound, PermissionDenied, VaultError
from vaultcore.lazy_re import lazy
from vaultcore.logs import current_correlation_id, get_logger, set_request_context
from vaultcore.net import deadline
from vaultcore.net.ssrf import EgressDenied, EgressPolicy, validate_target_url
from vaultcore.proxy import errors as E
from vaultcore.proxy import logs as proxy_logs
from vaultcore.proxy import response_actions, store
from vaultcore.proxy.actions import MAX_VAULT_ID, VAULT_ID_HEADER, ActionRunner
from vaultcore.proxy.config import (
    AuthSpec,
    ProxyConfig,
    credentials_match,
    parse_document,
    secret_context,
)
from vaultcore.proxy.transform import (
    PATTERN_BUDGET,
    Body,
    CompiledPath,
    Headers,
    Message,
    body_kind,
)

__all__ = [
    "VAULT_ID_HEADER",
    "UNMATCHED_HEADER",
    "load_config",
    "invalidate",
    "reset_caches",
    "handle_proxy",
    "dry_run",
    "ActionRunner",
]

#: Response header naming the substitutions that matched nothing: ``<action index>.<substitution index>``, comma
#: separated (docs/integrators/proxy.md). Absent when every substitution matched.
UNMATCHED_HEADER = "vault-unmatched"
_PATH = lazy(r"/api/v1/partners/(?P<partnerID>[^/]+)/configurations/(?P<configReferenceID>[^/]+)/?$")
_REFERENCE = lazy(r"^[A-Za-z0-9_\-]{1,64}$")
_MAX_VAULT_ID = MAX_VAULT_ID  # the bound the proxy's OpenAPI document states (local/contracts/proxy.py)
_log = get_logger("proxy")

# Headers never forwarded: hop-by-hop (RFC 9110 §7.6.1) and framing, the platform's own credentials and control
# headers, and what API Gateway/CloudFront add about the caller.
_DROP_HEADERS = frozenset({
    "host", "content-length", "connection", "keep-alive", "proxy-connection", "proxy-authorization",
    "proxy-authenticate", "te", "trailer", "transfer-encoding", "upgrade", "expect", "accept-encoding",
    "authorization", VAULT_ID_HEADER, "forwarded", "via", "x-real-ip",
})
_DROP_PREFIXES = ("dev-", "x-forwarded-", "x-amz", "cloudfront-")
# Target response headers handed back to the caller (canonical spelling). Set-Cookie, hop-by-hop and server
# identification headers stay behind.
_SAFE_RESPONSE_HEADERS = {
    "content-type": "Content-Type", "content-language": "Content-Language", "location": "Location",
    "retry-after": "Retry-After", "etag": "ETag", "last-modified": "Last-Modified",
    "www-authenticate": "WWW-Authenticate", "x-request-id": "X-Request-Id",
}

# ---------------------------------------------------------------------------------------------------- caches

_lock = threading.Lock()
_items: ContainerCache[dict[str, Any]] = ContainerCache("record_cache_seconds", max_items=1024)
_compiled: OrderedDict[tuple[str, str, int], ProxyConfig] = OrderedDict()
_MAX_COMPILED = 256


def reset_caches() -> None:
    """Forget cached configurations and the HTTP client (tests; a new egress policy)."""
    from vaultcore.net.http import get_default_client

    _items.reset()
    with _lock:
        _compiled.clear()
    if get_default_client.cache_info().currsize:
        get_default_client().close()
    get_default_client.cache_clear()


def invalidate(partner_id: str, reference: str) -> None:
    """Drop one configuration from this container's cache (management updates; other containers converge
    within RECORD_CACHE_SECONDS)."""
    _items.invalidate((partner_id, reference))


def compile_item(item: dict[str, Any]) -> ProxyConfig:
    import json

    from vaultcore.plain import replace

    key = (item["partnerId"], item["configReferenceID"], int(item.get("version", 1)))
    with _lock:
        hit = _compiled.get(key)
        if hit is not None:
            _compiled.move_to_end(key)
            return hit
    config = parse_document(json.loads(item["document"]), stored=True)
    config = replace(config, partner_id=key[0], reference=key[1], version=key[2])
    with _lock:
        _compiled[key] = config
        while len(_compiled) > _MAX_COMPILED:
            _compiled.popitem(last=False)
    return config


def load_config(partner_id: str, reference: str, *, on_read: Callable[[dict[str, Any]], None] | None = None
                ) -> ProxyConfig | None:
    """The partner's configuration, compiled; None when it does not exist. ``on_read`` is called with the item
    when it was read from the table (not cached), before it is compiled."""
    if not _REFERENCE.match(reference or ""):
        return None
    cache = _items
    item = cache.get((partner_id, reference))
    if item is None:
        item = store.get_item(partner_id, reference)
        if item is None:
            return None
        cache.put((partner_id, reference), item)
        if on_read is not None:
            on_read(item)
    return compile_item(item)


class _Prefetch:
    """The reads steps 3 and 4 make first, made ahead in a background thread while the configuration compiles
    (step 2; cold start, docs/design/benchmarks.md "Cold starts").

    A container that has just read a configuration from the table usually has nothing of the partner's cached
    either: step 3 would then unwrap the configuration's secrets (KMS Decrypt) and a tokenize action read the key
    ring (a Query), unwrap the current key (KMS Decrypt) and read the template (a Query), one after the other,
    after the compilation (JSONPath and regex engines, ~25 ms of CPU). Here those reads overlap the compilation
    instead. They go into the caches steps 3 and 4 read (:func:`vaultcore.store.keys.unwrap_secret`,
    :func:`vaultcore.tokens.keys.warm`, :func:`vaultcore.tokens.template_store.load_latest`): the same keys,
    lifetimes and invalidation, and nothing is written (a partner without a key ring gets its first key from the
    action, as before). Nothing is decided here: the credentials check of step 3 and every check of the actions
    still happen where they did, on what they read again if the prefetch could not (its failure is logged by type
    only and otherwise ignored). The caller is authenticated and the configuration is its own before the thread
    starts. :meth:`wait` runs before step 3 (when the configuration has secrets) and before the actions, so that
    they find the caches filled rather than read the same items a second time.
    """

    #: How long the actions wait for the reads ahead (each AWS call is itself bounded by the client's timeouts);
    #: after it they read for themselves.
    WAIT_SECONDS = 5.0

    def __init__(self, partner_id: str) -> None:
        self.partner_id = partner_id
        self._thread: threading.Thread | None = None

    def start(self, item: dict[str, Any]) -> None:
        """Start the reads for the stored document of ``item`` (validated when it was saved; a document that does
        not read as expected simply gets no prefetch)."""
        import contextvars
        import json
        from functools import partial

        from vaultcore.proxy.config import secret_context, stored_envelopes
        from vaultcore.store.keys import unwrap_secret
        from vaultcore.tokens import keys, template_store

        try:
            doc = json.loads(item["document"])
            envelopes = stored_envelopes(doc)
            actions = [a for a in (doc.get("actions") or []) + (doc.get("responseActions") or [])
                       if isinstance(a, dict) and a.get("type") == "tokenization"]
            context = secret_context(self.partner_id, item["configReferenceID"])
        except (ValueError, TypeError, AttributeError, KeyError):
            return
        # In the order the exchange needs them: the configuration's secrets (step 3), then the tokenization's.
        reads: list[Callable[[], object]] = [partial(unwrap_secret, e, context) for e in envelopes]
        if actions:
            reads.append(partial(keys.warm, self.partner_id))
            reads += [partial(template_store.load_latest, self.partner_id, ref) for ref in sorted(
                {a["templateRef"] for a in actions
                 if a.get("method") == "tokenize" and isinstance(a.get("templateRef"), str)})]
        if not reads:
            return
        # In a copy of the request's context (budgets), under the request's id in the log (a thread-local).
        self._thread = threading.Thread(target=contextvars.copy_context().run,
                                        args=(self._read, reads, current_correlation_id()), name="proxy-prefetch",
                                        daemon=True)
        self._thread.start()

    def _read(self, reads: list[Callable[[], object]], request_id: str | None) -> None:
        set_request_context(request_id)
        for read in reads:  # each on its own: one that fails leaves the others to be read ahead
            try:
                read()
            except Exception as exc:  # noqa: BLE001 - the action reads again and reports its own error
                _log.info("proxy prefetch failed", extra={"partner_id": self.partner_id,
                                                          "reason": type(exc).__name__})

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join(self.WAIT_SECONDS)
            self._thread = None


# ---------------------------------------------------------------------------------------------------- helpers


def _secret(config: ProxyConfig, auth: AuthSpec) -> bytes:
    from vaultcore.store.keys import unwrap_secret

    if auth.secret is not None:
        return auth.secret
    assert auth.wrapped is not None
    return unwrap_secret(auth.wrapped, secret_context(config.partner_id, config.reference))


def _authorize(config: ProxyConfig, partner: Any) -> None:
    """Every basic/hmac authorization of the configuration must still carry the partner's live credentials."""
    for auth, is_action in [(config.authorization, False)] + [(a.authorization, True) for a in config.all_actions]:
        if auth.type == "passthrough":
            continue
        if is_action and auth.type == "basic" and partner.api_security == "hmac":
            raise PermissionDenied("Permission denied: an action's authorization is not allowed for this partner.",
                                   code=E.PERMISSION_DENIED)
        if not credentials_match(auth, partner, _secret(config, auth)):
            raise PermissionDenied("Permission denied: the configuration's authorization does not match the "
                                   "partner's credentials.", code=E.PERMISSION_DENIED)


# ---------------------------------------------------------------------------------------------------- forwarding


def _partner_headers(config: ProxyConfig, runner: ActionRunner, fields: list[tuple[str, str]]) -> dict[str, str]:
    """The headers the partner receives: the target's safe headers (first occurrence), every header a response
    substitution names (all occurrences joined by ", ", as the response actions left them), ``vault-id``,
    ``vault-unmatched`` and one ``vault-var-<name>`` per variable holding a token."""
    named = response_actions.named_headers(config)
    out: dict[str, str] = {}
    for name, value in fields:
        if name in named:
            spelled = named[name]
            out[spelled] = f"{out[spelled]}, {value}" if spelled in out else value
            continue
        canonical = _SAFE_RESPONSE_HEADERS.get(name)
        if canonical and canonical not in out:
            out[canonical] = value
    if runner.vault_id_out:
        out[VAULT_ID_HEADER] = runner.vault_id_out
    if runner.unmatched:
        out[UNMATCHED_HEADER] = ", ".join(runner.unmatched)
    out.update(runner.returned_variables())
    return out


def _forward_headers(request_headers: dict[str, str], message: Message) -> list[tuple[str, str]]:
    out = []
    for name, value in message.headers.items():
        if name in _DROP_HEADERS or name.startswith(_DROP_PREFIXES):
            continue
        out.append((name, value))
    return out


def _incoming_message(request: Request) -> Message:
    """Every header and query value as received, repeated names included, in order (per name: API Gateway's
    ``multiValue*`` members do not carry the interleaving of different names)."""
    headers = Headers(request.header_pairs())
    query = request.query_pairs()
    return Message(headers=headers, query=query, body=Body(request.body, body_kind(request.header("content-type"),
                                                                                     request.body)))


def _target_auth(config: ProxyConfig, request: Request, message: Message, body: bytes) -> tuple[list[tuple[str, str]],
                                                                                                  set[str]]:
    """Headers authenticating the forwarded request, and the names to redact in the log."""
    auth = config.authorization
    if auth.type == "passthrough":
        name = (auth.header_name or "authorization").lower()
        value = message.headers.get(name) if name != "authorization" else request.header("authorization")
        if not value:
            raise E.ProxyError(f"The request lacks the '{auth.header_name or 'Authorization'}' header required by "
                               f"the passthrough authorization.", code=E.PASSTHROUGH_HEADER_MISSING)
        return ([("Authorization", value)] if name == "authorization" else []), {name}
    secret = _secret(config, auth)
    if auth.type == "basic":
        token = base64.b64encode(f"{auth.username}:".encode() + secret).decode("ascii")
        return [("Authorization", f"Basic {token}")], {"authorization"}
    from vaultcore.auth.hmac_scheme import build_hmac_header
    from vaultcore.proxy.config import hmac_signing_key

    assert config.parsed_target is not None
    path = config.parsed_target.request_target.split("?", 1)[0]
    return ([("Authorization", build_hmac_header(auth.username or "", hmac_signing_key(secret), path, body))],
            {"authorization"})


def _target_url(config: ProxyConfig, query: list[tuple[str, str]]) -> str:
    from urllib.parse import urlencode

    if not query:
        return config.target
    return config.target + ("&" if "?" in config.target else "?") + urlencode(query)


def _send(config: ProxyConfig, url: str, headers: list[tuple[str, str]], body: bytes) -> Any:
    from vaultcore.net import http

    try:
        return http.get_default_client().send(config.method.upper(), url, headers, body or None)
    except http.EgressDenied as exc:
        raise E.ProxyError(f"The target is refused by the egress policy: {exc.message}", code=E.TARGET_REFUSED) from None
    except http.RequestTooLarge:
        raise E.ProxyError("The request to forward is larger than 1 MiB.", code=E.PAYLOAD_TOO_LARGE) from None
    except http.InvalidRequest:
        raise E.ProxyError("The request to forward is invalid (a header value).", code=E.FORWARD_INVALID) from None
    except http.EgressTimeout:
        raise E.ProxyError("The target did not respond in time.", code=E.TARGET_TIMEOUT) from None
    except http.ResponseTooLarge:
        raise E.ProxyError("The target's response is too large.", code=E.TARGET_RESPONSE_TOO_LARGE) from None
    except http.EgressError as exc:
        raise E.ProxyError(f"The target could not be reached: {exc.message}", code=E.TARGET_UNREACHABLE) from None


class TargetResponse(Response):
    """The target's answer as a Lambda proxy response: base64 when the body is not UTF-8."""

    def to_event(self) -> dict[str, Any]:
        raw = self.body if isinstance(self.body, bytes) else self.body.encode("utf-8")
        try:
            text, b64 = raw.decode("utf-8"), False
        except UnicodeDecodeError:
            text, b64 = base64.b64encode(raw).decode("ascii"), True
        return {"statusCode": self.status, "headers": {"Cache-Control": "no-store", **self.headers}, "body": text,
                "isBase64Encoded": b64}


# ---------------------------------------------------------------------------------------------------- the exchange


class _Clock:
    def __init__(self) -> None:
        self.started = time.perf_counter()
        self.phases: dict[str, float] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        t = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + (time.perf_counter() - t) * 1000

    def summary(self) -> dict[str, float]:
        total = (time.perf_counter() - self.started) * 1000
        out = {k: round(v, 3) for k, v in self.phases.items()}
        out["total"] = round(total, 3)
        out["own"] = round(total - self.phases.get("target", 0.0), 3)
        return out


def _path_ids(request: Request) -> tuple[str, str]:
    partner = request.path_params.get("partnerID")
    reference = request.path_params.get("configReferenceID")
    if partner is None or reference is None:
        m = _PATH.search(request.path)
        if m is None:
            raise E.proxy_denied()
        partner, reference = m.group("partnerID"), m.group("configReferenceID")
    return partner, reference


def _same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8", "surrogateescape"), b.encode("utf-8", "surrogateescape"))


@deadline.budgeted(PATTERN_BUDGET)  # one budget for all of the request's pattern work (docs/integrators/proxy.md, 8109)
def handle_proxy(request: Request) -> Response:
    """The route of ProxyFunction (family ``proxy``): one exchange, in the steps of the module docstring.

    The first two steps store nothing: until the caller is known to own the configuration, no log entry is
    written under a partner's name. From the third on, :meth:`_Exchange.run` stores the exchange whatever its
    outcome."""
    timer = _Clock()
    caller, reference = _authenticate(request, timer)
    prefetch = _Prefetch(caller.partner_id)
    try:
        config = _load_configuration(caller, reference, timer, prefetch)
        return _Exchange(config, caller.partner, request, timer, prefetch).run()
    finally:
        prefetch.wait()  # no read outlives its request (one that failed before its actions ran)


def _authenticate(request: Request, timer: _Clock) -> tuple[Any, str]:
    """Step 1: the partner from ``Authorization`` (HMAC, or Basic for key-security partners: any failure is the
    uniform 8003/401), and the configuration reference the path names. The path's partner must be the
    authenticated one (8004), compared in constant time: a caller learns nothing about other partners' ids."""
    # Lazy: the management API imports this module (dry runs) and never authenticates a partner; the proxy
    # function imports it during init (functions/proxy/app.py).
    from vaultcore.auth.authenticator import authenticate_header

    with timer.phase("auth"):
        caller = authenticate_header(request)
        partner_id, reference = _path_ids(request)
        if not _same(partner_id, caller.partner_id):
            raise E.proxy_denied()
    return caller, reference


def _load_configuration(caller: Any, reference: str, timer: _Clock, prefetch: _Prefetch) -> ProxyConfig:
    """Step 2: the caller's configuration. One that does not exist is refused with the same 8004 as another
    partner's path, so that no caller can learn which references exist. The item is cached per container and its
    compiled form per version (:func:`load_config`): an update is never served half old, half new. An item read
    from the table starts ``prefetch`` before it compiles (:class:`_Prefetch`)."""
    with timer.phase("config"):
        config = load_config(caller.partner_id, reference, on_read=prefetch.start)
    if config is None:
        raise E.proxy_denied()
    return config


class _Exchange:
    """Steps 3 to 7 of one exchange (the module docstring), on one configuration for one authenticated partner.
    What each step learns is kept here, so that the log (step 7) can show as much as was reached, masked."""

    def __init__(self, config: ProxyConfig, partner: Any, request: Request, timer: _Clock,
                 prefetch: _Prefetch | None = None) -> None:
        self.config, self.partner, self.request, self.timer = config, partner, request, timer
        self.prefetch = prefetch
        self.message: Message | None = None
        self.runner = ActionRunner(config, partner.partner_id, request.headers)
        self.redact: set[str] = set()
        self.target_response: Any = None
        #: The target's answer after the response actions (None without response actions or when they failed).
        self.response_message: Message | None = None
        self.response_failed: int | None = None  # 8117 / 8118 / 8001 in the response phase
        #: The request as logged (masked), built before forwarding (:meth:`_request_view`).
        self.request_view: dict[str, Any] | None = None
        self._view_scrubbed = 0  # how many of runner.sensitive the request view was scrubbed with

    def run(self) -> Response:
        """The exchange's steps, then its log entry whatever their outcome: a refused or failed exchange is stored
        too, with the code the partner received (a 5xx as 8001, never its cause)."""
        try:
            response = self._steps()
        except VaultError as exc:
            status = 401 if isinstance(exc, AuthenticationFailed) else (500 if exc.status >= 500 else exc.status)
            code = E.PERMISSION_DENIED if isinstance(exc, PermissionDenied) else (
                E.INTERNAL if exc.status >= 500 else exc.code)
            self._record(status, {"code": code, "message": exc.message if exc.status < 500 else "Internal error."})
            raise
        except Exception as exc:
            self._record(500, {"code": E.INTERNAL, "message": "Internal error.", "type": type(exc).__name__})
            raise
        self._record(response.status, None)
        return response

    def _steps(self) -> Response:
        """Steps 3 to 6 in order; a step that refuses raises, and nothing after it happens (:meth:`run` logs it)."""
        self._authorize()
        message = self._transform_request()
        self._check_egress()
        url, headers, body = self._prepare_forward(message)
        self._mask_request_log(body)
        target = self._forward(url, headers, body)
        if not self.config.response_actions:
            return TargetResponse(target.status, target.body, _partner_headers(
                self.config, self.runner, [(n.lower(), v) for n, v in target.headers]))
        return self._apply_response_actions(target)

    def _authorize(self) -> None:
        """Step 3: each basic/hmac authorization of the configuration must still carry the partner's live
        credentials. A rotated or revoked credential stops the configuration (8004) instead of letting it go on
        acting for the partner with a secret the partner no longer holds."""
        with self.timer.phase("config"):
            if self.config.authorization.type != "passthrough" or any(
                    a.authorization.type != "passthrough" for a in self.config.all_actions):
                self._wait_prefetch()  # its secrets are unwrapped ahead (:class:`_Prefetch`)
            _authorize(self.config, self.partner)

    def _wait_prefetch(self) -> None:
        if self.prefetch is not None:
            self.prefetch.wait()

    def _transform_request(self) -> Message:
        """Step 4: the body parsed by its ``Content-Type`` (bounded; any DOCTYPE refused), then the request
        actions over it, in order. The message is kept before it is parsed, so that the log shows what was
        received even when parsing or an action fails."""
        with self.timer.phase("parse"):
            self.message = message = _incoming_message(self.request)
            message.body.parse()
        with self.timer.phase("actions"):
            self._wait_prefetch()
            self.runner.run(message)
        return message

    def _check_egress(self) -> None:
        """Step 5, before anything is prepared: the configuration's target against the egress policy. A stored
        configuration is compiled leniently (``parse_document(stored=True)``): a target the current policy refuses
        keeps the configuration readable by the management API and is refused here, on every request (8110). The
        DNS check and the pinned address come when the request is sent (:mod:`vaultcore.net.http`)."""
        with self.timer.phase("prepare"):
            if self.config.parsed_target is None:
                raise E.ProxyError(f"The target is refused by the egress policy: {self.config.target_error}",
                                   code=E.TARGET_REFUSED)

    def _prepare_forward(self, message: Message) -> tuple[str, list[tuple[str, str]], bytes]:
        """The request as the target will receive it: the transformed body; the caller's headers without the
        hop-by-hop ones, the platform's credentials and what identifies the caller (``_DROP_HEADERS``); the
        configuration's own authorization of the target (``proxy.authorization``, whose header the log redacts);
        the query string appended to the target URL."""
        with self.timer.phase("prepare"):
            body = message.body.to_bytes()
            headers = _forward_headers(self.request.headers, message)
            auth_headers, self.redact = _target_auth(self.config, self.request, message, body)
            headers.extend(auth_headers)
            url = _target_url(self.config, message.query)
        return url, headers, body

    def _mask_request_log(self, body: bytes) -> None:
        """Step 7's first half, before forwarding: the request's log masks run now, on what is forwarded (its tree
        borrowed, their writes undone). Their pattern work shares the request's budget, and a request whose log
        cannot be masked in time is refused (8109), not forwarded: an exchange is not made if it cannot be
        logged masked."""
        with self.timer.phase("log"):
            view = self._request_view(None, body)
        if "maskError" in view:
            raise E.ProxyError(f"{view['maskError']['message'].rstrip('.')} (requestMasks). The request was not "
                               f"forwarded.", code=E.REGEX_TIMEOUT)

    def _forward(self, url: str, headers: list[tuple[str, str]], body: bytes) -> Any:
        """Step 5: the request to the target through the egress client (:func:`_send`: DNS check and pinned
        address, no redirects, 25 s in all, 1 MiB out, 4 MiB in). The answer is kept on the exchange first, so
        that the log has it whatever the response actions make of it."""
        with self.timer.phase("target"):
            self.target_response = target = _send(self.config, url, headers, body)
        return target

    def _apply_response_actions(self, target: Any) -> Response:
        """Step 6: the response actions over the target's answer before the partner sees it (tokens in place of
        what the target sent back, under the exchange's bfid; :mod:`vaultcore.proxy.response_actions`). A failure
        is remembered (8117/8118, or 8001 for a token store outage) so that the log masks every response-action
        place either way."""
        with self.timer.phase("response"):
            answer = response_actions.response_message(target.headers, target.body)
            try:
                response_actions.run(self.runner, answer, target.status)
            except Exception as exc:
                self.response_failed = exc.code if isinstance(exc, E.ProxyError) else E.INTERNAL
                raise
            self.response_message = answer
            return TargetResponse(target.status, answer.body.to_bytes(),
                                  _partner_headers(self.config, self.runner, answer.headers.items()))

    def _record(self, status: int, error: dict[str, Any] | None) -> None:
        """Step 7: the masked exchange, stored in ProxyLogs (:func:`vaultcore.proxy.logs.record`: one line on
        stdout, no AWS call on the request path), its durations as a metric, and one container log line with ids,
        status and code, never a value. An exchange that cannot be masked is stored without its request and
        response (fail closed), never unmasked."""
        config = self.config
        with self.timer.phase("log"):
            now = clock.now()
            entry: dict[str, Any] = {
                "partnerId": config.partner_id, "logId": proxy_logs.new_log_id(int(now * 1000)),
                "configReferenceID": config.reference, "configVersion": config.version,
                "timestamp": datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "status": status, "outcome": "error" if error else "forwarded", "actions": self.runner.outcomes,
            }
            if self.runner.response_outcomes:
                entry["responseActions"] = self.runner.response_outcomes
            if self.runner.vault_id_out:
                entry["vaultIdIssued"] = True
            if self.runner.unmatched:
                entry["unmatched"] = list(self.runner.unmatched)
            if error:
                entry["error"] = error
            try:
                scrub = proxy_logs.Scrubber(self.runner.sensitive)
                if self.message is not None:
                    entry["request"] = self._request_view(error, None)
                if self.target_response is not None:
                    entry["response"] = self._response_view(scrub)
            except Exception as exc:  # noqa: BLE001 - fail closed: the entry is stored without the exchange
                entry.pop("request", None)
                entry.pop("response", None)
                entry["logError"] = "the exchange could not be masked and is not stored"
                _log.warning("proxy log masking failed", extra={"reason": type(exc).__name__,
                                                               "config_ref": config.reference})
        entry["durationsMs"] = self.timer.summary()
        metrics.proxy_exchange(entry["durationsMs"], getattr(self.target_response, "status", None))  # issue 14
        proxy_logs.record(entry)
        self._log_line(status, error, entry)

    def _request_view(self, error: dict[str, Any] | None, forwarded: bytes | None) -> dict[str, Any]:
        """The request as logged, masked: built once, before forwarding (``forwarded``: the body as sent; the
        masks write into its parsed tree, borrowed, and undo their writes), or at log time when the exchange failed
        earlier. Clear values the exchange handled after it was built (response actions) are scrubbed from it
        then."""
        config, message = self.config, self.message
        assert message is not None
        if self.request_view is not None:
            if len(self.runner.sensitive) > self._view_scrubbed:
                later = proxy_logs.Scrubber(self.runner.sensitive[self._view_scrubbed:])
                proxy_logs.rescrub(self.request_view, later)
                self._view_scrubbed = len(self.runner.sensitive)
            return self.request_view
        clear_paths: list[CompiledPath] = response_actions.message_paths(
            a for a in config.actions if a.writes_clear_data or error)
        headers = Headers(_forward_headers(self.request.headers, message))
        redact = set(self.redact)
        if config.authorization.type == "passthrough":
            redact.add((config.authorization.header_name or "authorization").lower())
        for name in self.redact:  # show that an authorization was sent, never its value
            headers[name] = "[REDACTED]"
        if forwarded is None:
            body = message.body
            request_message = Message(headers=headers, query=message.query, body=body)
        else:
            # The masks work on the forwarded body's own tree (no copy, no second parse), then undo their writes.
            body = message.body.borrow()
            request_message = Message(headers=headers, query=list(message.query), query_form=message.query_form,
                                      body=body)
        self._view_scrubbed = len(self.runner.sensitive)
        try:
            self.request_view = proxy_logs.masked_view(
                request_message, masks=config.request_masks, clear_paths=clear_paths,
                scrub=proxy_logs.Scrubber(self.runner.sensitive), redact_headers=redact, url=config.target,
                method=config.method.upper())
        finally:
            body.restore()
        return self.request_view

    def _response_view(self, scrub: proxy_logs.Scrubber) -> dict[str, Any]:
        """The logged response: as returned to the partner when response actions ran (tokens in place; clear data
        a response detokenize wrote is masked), else as received. After a response-phase failure the received
        response, with every response-action place masked; for 8117 without its body (it could not be read, so it
        cannot be masked with certainty)."""
        config, target = self.config, self.target_response
        masks = list(config.response_masks)
        if target.status >= 400:
            masks.extend(config.error_masks)
        if self.response_message is not None:
            return proxy_logs.masked_view(self.response_message, masks=masks,
                                          clear_paths=self.runner.response_clear_paths, scrub=scrub,
                                          status=target.status)
        if self.response_failed == E.RESPONSE_UNPROCESSABLE:
            headers_only = response_actions.response_message(target.headers, b"")
            places = [p for p in response_actions.message_paths(config.response_actions) if p.source == "header"]
            view = proxy_logs.masked_view(headers_only, masks=masks, clear_paths=places, scrub=scrub,
                                          status=target.status)
            view.pop("body", None)
            view["bodyBytes"] = len(target.body)
            view["bodyOmitted"] = "not stored: the response actions could not process this body (8117)"
            return view
        fields = Headers(target.headers)  # every field as received, repeated names included
        received = Message(headers=fields, query=[], query_form=False,
                           body=Body(target.body, body_kind(fields.get("content-type"), target.body)))
        clear = response_actions.message_paths(config.response_actions) if self.response_failed else []
        return proxy_logs.masked_view(received, masks=masks, clear_paths=clear, scrub=scrub, status=target.status)

    def _log_line(self, status: int, error: dict[str, Any] | None, entry: dict[str, Any]) -> None:
        config = self.config
        _log.info("proxy exchange", extra={"partner_id": config.partner_id, "config_ref": config.reference,
                                           "status": status, "code": (error or {}).get("code"),
                                           "duration_ms": entry["durationsMs"]["total"]})


# ---------------------------------------------------------------------------------------------------- dry run


def _sample_message(sample: dict[str, Any]) -> tuple[Message, dict[str, str]]:
    from vaultcore.errors import ValidationError

    allowed = {"headers", "query", "body", "response"}
    unknown = set(sample) - allowed
    if unknown:
        raise ValidationError(f"The dry-run request has an unknown member (allowed: {', '.join(sorted(allowed))}).",
                              code=E.CONFIG_INVALID)
    headers_raw = sample.get("headers") or {}
    query_raw = sample.get("query") or {}
    if not isinstance(headers_raw, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in headers_raw.items()):
        raise ValidationError("headers must be an object of strings.", code=E.CONFIG_INVALID)
    if isinstance(query_raw, dict):
        query = [(str(k), str(v)) for k, v in query_raw.items()]
    elif isinstance(query_raw, list) and all(isinstance(p, list) and len(p) == 2 for p in query_raw):
        query = [(str(k), str(v)) for k, v in query_raw]
    else:
        raise ValidationError("query must be an object or a list of [name, value] pairs.", code=E.CONFIG_INVALID)
    headers = {k.lower(): v for k, v in headers_raw.items()}
    body, is_json = response_actions.sample_body(sample.get("body"))
    if is_json:
        headers.setdefault("content-type", "application/json")
    return (Message(headers=Headers(headers), query=query, body=Body(body, body_kind(headers.get("content-type"), body))),
            headers)


def _dry_run_response(config: ProxyConfig, runner: ActionRunner, raw: Any,
                     result: dict[str, Any]) -> dict[str, Any] | None:
    """The response half of a dry run: the response actions over the sample target response, and what the partner
    would receive (``response``: status, headers, body with placeholders for tokens). The preview body goes
    through the log's card-number scrubbers; ``clearDataWarning`` says when they found something, i.e. when a
    clear value outside the response actions' places would reach the partner."""
    from vaultcore.cards.masking import redact_text

    if raw is None:
        result["responseActions"] = []
        result["response"] = {"note": "no sample target response: send response {status, headers, body} to run "
                                      "the response actions"}
        return None
    status, headers, body = response_actions.sample_response(raw)
    answer = response_actions.response_message(headers, body)
    error = None
    try:
        response_actions.run(runner, answer, status)
    except E.ProxyError as exc:
        error = {"code": exc.code, "message": exc.message}
    result["responseActions"] = runner.response_outcomes
    if error:
        result["response"] = {"status": 400, "note": "the partner would receive this error, not the response"}
        return error
    preview: dict[str, Any] = {"status": status,
                               "headers": _partner_headers(config, runner, answer.headers.items())}
    if answer.body.kind != "none":
        text = answer.body.to_bytes().decode("utf-8", "replace")
        shown = redact_text(proxy_logs.Scrubber(runner.sensitive)(text))
        preview["body"] = shown
        if shown != text:
            preview["clearDataWarning"] = ("clear card data outside the response actions' places would reach the "
                                           "partner (masked in this preview)")
    result["response"] = preview
    return None


@deadline.budgeted(PATTERN_BUDGET)  # the same budget for pattern work as a real request
def dry_run(partner_id: str, reference: str, sample: dict[str, Any]) -> dict[str, Any]:
    """Run a stored configuration on a sample request without forwarding it (management API)."""
    from vaultcore.partners.service import get_partner

    config = load_config(partner_id, reference)
    if config is None:
        raise NotFound("Proxy configuration not found.")
    partner = get_partner(partner_id)
    message, headers = _sample_message(sample)
    runner = ActionRunner(config, partner_id, headers, simulate=True)
    result: dict[str, Any] = {"configReferenceID": reference, "version": config.version, "forwarded": False}
    try:
        _authorize(config, partner)
        result["authorization"] = {"valid": True}
    except PermissionDenied as exc:
        result["authorization"] = {"valid": False, "message": exc.message}
    try:
        validate_target_url(config.target, EgressPolicy.from_env())
        result["target"] = {"allowedByPolicy": True}
    except EgressDenied as exc:
        result["target"] = {"allowedByPolicy": False, "message": exc.message}
    error = None
    try:
        message.body.parse()
        runner.run(message)
    except E.ProxyError as exc:
        error = {"code": exc.code, "message": exc.message}
    result["actions"] = runner.outcomes
    request_error = error
    if error is None and (config.response_actions or "response" in sample):
        error = _dry_run_response(config, runner, sample.get("response"), result)
    result["unmatched"] = runner.unmatched
    if error:
        result["error"] = error
    scrub = proxy_logs.Scrubber(runner.sensitive)
    clear_paths = response_actions.message_paths(a for a in config.actions if a.writes_clear_data or request_error)
    log_headers = Headers(_forward_headers(headers, message))
    redact = {"authorization"}
    if config.authorization.type == "passthrough" and config.authorization.header_name:
        redact.add(config.authorization.header_name.lower())
    if config.authorization.type != "passthrough" or not config.authorization.header_name:
        log_headers["authorization"] = "[REDACTED]"
    result["request"] = proxy_logs.masked_view(
        Message(headers=log_headers, query=message.query, body=message.body), masks=config.request_masks,
        clear_paths=clear_paths, scrub=scrub, redact_headers=redact, url=config.target,
        method=config.method.upper())
    if "error" not in result and "maskError" in result["request"]:  # the real request would be refused: 8109
        result["error"] = result["request"]["maskError"]
    return result

