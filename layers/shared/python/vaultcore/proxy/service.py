"""The proxy endpoint: POST /api/v1/partners/{partnerID}/configurations/{configReferenceID}.

Flow (interface.md "the proxy endpoint"; README "Proxy"):

1. authenticate the partner from ``Authorization`` (HMAC, or Basic for key-security partners): any failure is
   8003/401; the path's partner must be the authenticated one and own the configuration, else 8004/403 with one
   message for both cases (no oracle of other partners' references);
2. load the configuration: the item is cached per container for ``RECORD_CACHE_SECONDS`` and its compiled form
   (paths, XPath objects, bounded regexes) per *version*, so an update is never served half old, half new;
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
6. store the masked exchange in ProxyLogs (:mod:`vaultcore.proxy.logs`), also when the exchange failed after
   step 2.

The container log gets one line per exchange with ids, status, code and durations: never a value.
"""

from __future__ import annotations

import base64
import hmac
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from vaultcore import clock
from vaultcore.api.http import Request, Response
from vaultcore.cache import ContainerCache
from vaultcore.errors import AuthenticationFailed, DependencyError, NotFound, PermissionDenied, VaultError
from vaultcore.logs import get_logger
from vaultcore.net.ssrf import EgressDenied, EgressPolicy, validate_target_url
from vaultcore.proxy import errors as E
from vaultcore.proxy import logs as proxy_logs
from vaultcore.proxy import store
from vaultcore.proxy.config import (
    BOOLEAN_TEXT,
    ActionSpec,
    AuthSpec,
    ProxyConfig,
    SubstitutionSpec,
    credentials_match,
    parse_document,
    secret_context,
)
from vaultcore.proxy.transform import (
    Body,
    CompiledPath,
    Headers,
    Message,
    Slot,
    Splicer,
    body_kind,
    locate,
    new_splicer,
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

VAULT_ID_HEADER = "vault-id"
#: Response header naming the substitutions that matched nothing: ``<action index>.<substitution index>``, comma
#: separated (README "Proxy"). Absent when every substitution matched.
UNMATCHED_HEADER = "vault-unmatched"
_PATH = re.compile(r"/api/v1/partners/(?P<partnerID>[^/]+)/configurations/(?P<configReferenceID>[^/]+)/?$")
_REFERENCE = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_MAX_VAULT_ID = 1024
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
    from dataclasses import replace

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


def load_config(partner_id: str, reference: str) -> ProxyConfig | None:
    """The partner's configuration, compiled; None when it does not exist."""
    if not _REFERENCE.match(reference or ""):
        return None
    cache = _items
    item = cache.get((partner_id, reference))
    if item is None:
        item = store.get_item(partner_id, reference)
        if item is None:
            return None
        cache.put((partner_id, reference), item)
    return compile_item(item)


# ---------------------------------------------------------------------------------------------------- helpers


def _secret(config: ProxyConfig, auth: AuthSpec) -> bytes:
    from vaultcore.store.keys import unwrap_secret

    if auth.secret is not None:
        return auth.secret
    assert auth.wrapped is not None
    return unwrap_secret(auth.wrapped, secret_context(config.partner_id, config.reference))


def _authorize(config: ProxyConfig, partner: Any) -> None:
    """Every basic/hmac authorization of the configuration must still carry the partner's live credentials."""
    for auth, is_action in [(config.authorization, False)] + [(a.authorization, True) for a in config.actions]:
        if auth.type == "passthrough":
            continue
        if is_action and auth.type == "basic" and partner.api_security == "hmac":
            raise PermissionDenied("Permission denied: an action's authorization is not allowed for this partner.",
                                   code=E.PERMISSION_DENIED)
        if not credentials_match(auth, partner, _secret(config, auth)):
            raise PermissionDenied("Permission denied: the configuration's authorization does not match the "
                                   "partner's credentials.", code=E.PERMISSION_DENIED)


def _token_input(sub: SubstitutionSpec, slot: Slot, where: str) -> str | None:
    value = slot.value
    if value is None:
        return None
    if isinstance(value, bool) or isinstance(value, float) or isinstance(value, dict | list):
        raise E.ProxyError(f"{where} ({sub.path.type} {sub.path.path}) found a value that is not a string or an "
                           f"integer.", code=E.VALUE_NOT_SUBSTITUTABLE)
    text = str(value)
    return text or None


def _typed_like(original: Any, new: str) -> Any:
    """Keep a JSON integer an integer when the substituted text is a canonical integer."""
    if isinstance(original, int) and not isinstance(original, bool) and new.isdigit() and (
            new == "0" or not new.startswith("0")):
        return int(new)
    return new


def _rounds(names: list[str]) -> list[list[int]]:
    """Indices grouped so that no field name repeats within a group (the token API maps name -> value)."""
    seen: dict[str, int] = {}
    groups: list[list[int]] = []
    for i, name in enumerate(names):
        k = seen.get(name, 0)
        seen[name] = k + 1
        if k == len(groups):
            groups.append([])
        groups[k].append(i)
    return groups


def _convert(raw: str | None, sub: SubstitutionSpec) -> Any:
    """A parser format's value as the substitution's dataType (README "Proxy": dataType)."""
    present = raw is not None and raw != ""
    if sub.data_type == "boolean":
        if present:
            return True
        return BOOLEAN_TEXT[sub.default.lower()] if sub.default is not None else False
    text = raw if present else sub.default
    if text is None:
        return None
    if sub.data_type == "number":
        if not text.isdigit():
            raise E.ProxyError(f"Parser action failed: format {sub.format} is not a number for this card.",
                               code=E.PARSER_FAILED)
        return int(text)
    return text


def _wrap_token_error(exc: VaultError) -> E.ProxyError:
    code = {3010: E.VAULT_ID_INVALID, 3015: E.TOKEN_NOT_ISSUED}.get(exc.code, E.TOKENIZATION_FAILED)
    prefix = {E.VAULT_ID_INVALID: "The vault-id header is not valid",
              E.TOKEN_NOT_ISSUED: "A token was not issued under the vault-id"}.get(code, "Tokenization failed")
    return E.ProxyError(f"{prefix}: {exc.message.rstrip('.')} (code {exc.code}).", code=code)


def _required_error(missing: list[tuple[int, int]]) -> E.ProxyError:
    names = ", ".join(f"actions[{a}].substitutions[{n}]" for a, n in missing)
    return E.ProxyError(f"A required substitution matched nothing in the request: {names}. The request was not "
                        f"forwarded.", code=E.REQUIRED_UNMATCHED)


def _upstream_error(exc: BaseException) -> bool:
    """A domain error of the token or parser service that is the caller's fault (not a 5xx, not auth)."""
    return (isinstance(exc, VaultError) and not isinstance(exc, AuthenticationFailed | DependencyError)
            and exc.status < 500)


# ---------------------------------------------------------------------------------------------------- actions


@dataclass
class ActionRunner:
    """Runs a configuration's actions over a message. ``simulate`` (dry run) locates and reports but calls no
    tokenization or decryption: values are replaced by placeholders."""

    config: ProxyConfig
    partner_id: str
    request_headers: dict[str, str]
    simulate: bool = False
    sensitive: list[str] = field(default_factory=list)
    vault_id_out: str | None = None
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    #: Substitutions that matched nothing, as "<action index>.<substitution index>" (vault-unmatched header, log).
    unmatched: list[str] = field(default_factory=list)
    _card: Any = None

    def run(self, message: Message) -> None:
        try:
            self._run(message)
        finally:
            message.settle()  # a query-string form view goes back into the query, also after a failure

    def _run(self, message: Message) -> None:
        if self.config.has_required:
            self._check_required(message)
        for action in self.config.actions:
            located, splicer = self._locate(action, message)
            outcome: dict[str, Any] = {
                "action": action.index, "type": action.label,
                "substitutions": [{**sub.path.describe(), "matches": len(slots), **({"required": True}
                                                                                   if sub.required else {})}
                                  for sub, slots in located],
            }
            self.outcomes.append(outcome)
            missing: list[tuple[int, int]] = []
            for n, (sub, slots) in enumerate(located):
                if not slots:
                    self.unmatched.append(f"{action.index}.{n}")
                    if sub.required:
                        missing.append((action.index, n))
            if missing:  # an earlier action changed the message so that a required place is gone
                raise _required_error(missing)
            count = sum(len(slots) for _sub, slots in located)
            if action.type == "parser":
                outcome["result"] = self._parser(action, located, count)
            else:
                outcome["result"] = self._tokenization(action, located)
            if splicer is not None:
                splicer.commit()
            message.settle()

    def _check_required(self, message: Message) -> None:
        """Refuse with 8115, before any action runs (no bfid issued, nothing decrypted, nothing forwarded), when
        a ``required`` substitution matches nothing in the request as received."""
        unmatched: list[str] = []
        missing: list[tuple[int, int]] = []
        for action in self.config.actions:
            located, _splicer = self._locate(action, message)  # locating writes nothing; the splicer is dropped
            for n, (sub, slots) in enumerate(located):
                if not slots:
                    unmatched.append(f"{action.index}.{n}")
                    if sub.required:
                        missing.append((action.index, n))
        message.settle()  # drop a query-string view built while locating (nothing was written)
        if missing:
            self.unmatched = unmatched
            raise _required_error(missing)

    @staticmethod
    def _locate(action: ActionSpec, message: Message) -> tuple[list[tuple[SubstitutionSpec, list[Slot]]],
                                                                Splicer | None]:
        splicer = None
        if message.addressed_body().kind != "none" and any(s.path.type == "regex" for s in action.substitutions):
            splicer = new_splicer(message)
        return [(sub, locate(message, sub.path, strict=True, splicer=splicer)) for sub in action.substitutions], splicer

    def _tokenization(self, action: ActionSpec, located: list[tuple[SubstitutionSpec, list[Slot]]]) -> str:
        items: list[tuple[SubstitutionSpec, Slot, str]] = []
        for n, (sub, slots) in enumerate(located):
            for slot in slots:
                text = _token_input(sub, slot, f"actions[{action.index}].substitutions[{n}]")
                if text is not None:
                    items.append((sub, slot, text))
        if not items:
            return "skipped: no value at the configured paths"
        tokenize = action.method == "tokenize"
        if tokenize:
            # Registered before the call: if tokenization fails, the log still masks these clear values.
            self.sensitive.extend(text for _s, _slot, text in items)
        if self.simulate:
            for sub, slot, _text in items:
                slot.set(f"{{{{{'token' if tokenize else 'clear'}:{sub.field_name}}}}}")
            return (f"would {action.method} {len(items)} value(s) with template {action.template_ref}"
                    + (" under a new bfid (vault-id response header)" if tokenize else " with the request's vault-id"))
        from vaultcore.tokens.service import detokenize_values, tokenize_values

        names = [sub.field_name or "" for sub, _slot, _text in items]
        results: list[str] = [""] * len(items)
        if tokenize:
            bfid: str | None = None
            for group in _rounds(names):
                try:
                    result = tokenize_values(self.partner_id, action.template_ref or "",
                                             [(names[i], items[i][2]) for i in group], bfid=bfid, store=bfid is None)
                except VaultError as exc:
                    if _upstream_error(exc):
                        raise _wrap_token_error(exc) from None
                    raise
                bfid = result.bfid
                for i in group:
                    results[i] = result.values[names[i]]
            self.vault_id_out = bfid
        else:
            vault_id = (self.request_headers.get(VAULT_ID_HEADER) or "").strip()
            if not vault_id:
                raise E.ProxyError("The vault-id header is required: the detokenize action found tokens.",
                                   code=E.VAULT_ID_INVALID)
            if len(vault_id) > _MAX_VAULT_ID or not vault_id.isascii():
                raise E.ProxyError("The vault-id header is not valid.", code=E.VAULT_ID_INVALID)
            for group in _rounds(names):
                try:
                    clear = detokenize_values(self.partner_id, vault_id, {names[i]: items[i][2] for i in group})
                except VaultError as exc:
                    if _upstream_error(exc):
                        raise _wrap_token_error(exc) from None
                    raise
                for i in group:
                    results[i] = clear[names[i]]
            self.sensitive.extend(results)
        for (_sub, slot, _text), new in zip(items, results, strict=True):
            slot.set(_typed_like(slot.value, new))
        return f"{action.method}d {len(items)} value(s)"

    def _decrypt(self) -> Any:
        if self._card is None:
            from vaultcore.devices.parser import decrypt_for_partner

            h = self.request_headers
            try:
                self._card = decrypt_for_partner(self.partner_id, h.get("dev-device-type"), h.get("dev-device-serial"),
                                                 h.get("dev-payload"), h.get("dev-ksn"), h.get("dev-client-id"))
            except VaultError as exc:
                if _upstream_error(exc):
                    raise E.ProxyError(f"Parser action failed: {exc.message.rstrip('.')} (code {exc.code}).",
                                       code=E.PARSER_FAILED) from None
                raise
        return self._card

    def _parser(self, action: ActionSpec, located: list[tuple[SubstitutionSpec, list[Slot]]], count: int) -> str:
        if count == 0:
            return "skipped: no configured path in the payload"
        if self.simulate:
            for sub, slots in located:
                for slot in slots:
                    slot.set(f"{{{{parser:{sub.format}}}}}")
            return f"would decrypt the dev-payload header and write {count} value(s)"
        from vaultcore.cards.tracks import track_format

        card = self._decrypt()
        for sub, slots in located:
            if not slots:
                continue
            raw = track_format(sub.format or "", card.track1, card.track2, card.keyed)
            if raw:
                self.sensitive.append(raw)
            value = _convert(raw, sub)
            for slot in slots:
                slot.set(value)
        return f"decrypted and wrote {count} value(s)"


# ---------------------------------------------------------------------------------------------------- forwarding


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


def handle_proxy(request: Request) -> Response:
    """The route of ProxyFunction (family ``proxy``)."""
    from vaultcore.auth.authenticator import authenticate_header

    timer = _Clock()
    with timer.phase("auth"):
        caller = authenticate_header(request)
        partner_id, reference = _path_ids(request)
        if not _same(partner_id, caller.partner_id):
            raise E.proxy_denied()
    with timer.phase("config"):
        config = load_config(caller.partner_id, reference)
    if config is None:
        raise E.proxy_denied()
    return _Exchange(config, caller.partner, request, timer).run()


class _Exchange:
    def __init__(self, config: ProxyConfig, partner: Any, request: Request, timer: _Clock) -> None:
        self.config, self.partner, self.request, self.timer = config, partner, request, timer
        self.message: Message | None = None
        self.runner = ActionRunner(config, partner.partner_id, request.headers)
        self.url: str | None = None
        self.redact: set[str] = set()
        self.target_response: Any = None

    def run(self) -> Response:
        try:
            response = self._run()
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

    def _run(self) -> Response:
        config = self.config
        with self.timer.phase("config"):
            _authorize(config, self.partner)
        with self.timer.phase("parse"):
            self.message = message = _incoming_message(self.request)
            message.body.parse()
        with self.timer.phase("actions"):
            self.runner.run(message)
        with self.timer.phase("prepare"):
            if config.parsed_target is None:
                raise E.ProxyError(f"The target is refused by the egress policy: {config.target_error}",
                                   code=E.TARGET_REFUSED)
            body = message.body.to_bytes()
            headers = _forward_headers(self.request.headers, message)
            auth_headers, self.redact = _target_auth(config, self.request, message, body)
            headers.extend(auth_headers)
            self.url = _target_url(config, message.query)
        with self.timer.phase("target"):
            self.target_response = target = _send(config, self.url, headers, body)
        out_headers = {}
        for name, value in target.headers:
            canonical = _SAFE_RESPONSE_HEADERS.get(name.lower())
            if canonical and canonical not in out_headers:
                out_headers[canonical] = value
        if self.runner.vault_id_out:
            out_headers[VAULT_ID_HEADER] = self.runner.vault_id_out
        if self.runner.unmatched:
            out_headers[UNMATCHED_HEADER] = ", ".join(self.runner.unmatched)
        return TargetResponse(target.status, target.body, out_headers)

    def _record(self, status: int, error: dict[str, Any] | None) -> None:
        config = self.config
        with self.timer.phase("log"):
            now = clock.now()
            entry: dict[str, Any] = {
                "partnerId": config.partner_id, "logId": proxy_logs.new_log_id(int(now * 1000)),
                "configReferenceID": config.reference, "configVersion": config.version,
                "timestamp": datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                "status": status, "outcome": "error" if error else "forwarded", "actions": self.runner.outcomes,
            }
            if self.runner.vault_id_out:
                entry["vaultIdIssued"] = True
            if self.runner.unmatched:
                entry["unmatched"] = list(self.runner.unmatched)
            if error:
                entry["error"] = error
            try:
                scrub = proxy_logs.Scrubber(self.runner.sensitive)
                clear_paths: list[CompiledPath] = [
                    s.path for a in config.actions if a.writes_clear_data or error for s in a.substitutions]
                if self.message is not None:
                    headers = Headers(_forward_headers(self.request.headers, self.message))
                    redact = set(self.redact)
                    if config.authorization.type == "passthrough":
                        redact.add((config.authorization.header_name or "authorization").lower())
                    for name in self.redact:  # show that an authorization was sent, never its value
                        headers[name] = "[REDACTED]"
                    request_message = Message(headers=headers, query=self.message.query, body=self.message.body)
                    entry["request"] = proxy_logs.masked_view(
                        request_message, masks=config.request_masks, clear_paths=clear_paths, scrub=scrub,
                        redact_headers=redact, url=config.target,
                        method=config.method.upper())
                target = self.target_response
                if target is not None:
                    received = Headers(target.headers)  # every field as received, repeated names included
                    masks = list(config.response_masks)
                    if target.status >= 400:
                        masks.extend(config.error_masks)
                    response_message = Message(headers=received, query=[],
                                               body=Body(target.body, body_kind(received.get("content-type"),
                                                                                target.body)))
                    entry["response"] = proxy_logs.masked_view(response_message, masks=masks, clear_paths=(),
                                                               scrub=scrub, status=target.status)
            except Exception as exc:  # noqa: BLE001 - fail closed: the entry is stored without the exchange
                entry.pop("request", None)
                entry.pop("response", None)
                entry["logError"] = "the exchange could not be masked and is not stored"
                _log.warning("proxy log masking failed", extra={"reason": type(exc).__name__,
                                                               "config_ref": config.reference})
        entry["durationsMs"] = self.timer.summary()
        proxy_logs.record(entry)
        _log.info("proxy exchange", extra={"partner_id": config.partner_id, "config_ref": config.reference,
                                           "status": status, "code": (error or {}).get("code"),
                                           "duration_ms": entry["durationsMs"]["total"]})


# ---------------------------------------------------------------------------------------------------- dry run


def _sample_message(sample: dict[str, Any]) -> tuple[Message, dict[str, str]]:
    import json

    from vaultcore.errors import ValidationError

    allowed = {"headers", "query", "body"}
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
    body_raw = sample.get("body")
    if body_raw is None:
        body = b""
    elif isinstance(body_raw, str):
        body = body_raw.encode("utf-8")
    else:
        body = json.dumps(body_raw).encode("utf-8")
        headers.setdefault("content-type", "application/json")
    return (Message(headers=Headers(headers), query=query, body=Body(body, body_kind(headers.get("content-type"), body))),
            headers)


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
    result["unmatched"] = runner.unmatched
    if error:
        result["error"] = error
    scrub = proxy_logs.Scrubber(runner.sensitive)
    clear_paths = [s.path for a in config.actions for s in a.substitutions if a.writes_clear_data or error]
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
    return result

