"""Proxy configurations: the document model, its validation, its compilation (interface.md "Proxy configuration").

A configuration is partner-written and decides where clear card data goes, so validation is strict and happens
when it is created or updated, never first at request time:

* required members, enum values and types are checked with a message naming the member
  (``actions[1].substitutions[0].format must be one of: ...``); unknown members are refused (a typo such as
  ``transformationpath`` must not silently disable a mask);
* the source/type rule: ``jsonpath``, ``xpath`` and ``regex`` need ``transformationSource`` ``body``; ``key``
  needs ``header`` or ``query``;
* every path is compiled (jsonpath, xpath, bounded regex: see :mod:`vaultcore.proxy.transform`);
* ``target`` is checked against the egress policy (:mod:`vaultcore.net.ssrf`: https only, no IP literal, no
  internal name; the local runner alone allows http and loopback) and checked again, with DNS, on every call;
* ``basic`` and ``hmac`` authorizations must carry the partner's own credentials (spec: "username: partner id,
  password: partner key" / "secret: the Base64-decoded key of the partner's HMAC secret"), compared in
  constant time; for a partner whose API security is ``hmac`` an action may not use ``basic`` (spec: "Setting
  API security to HMAC applies to all proxy configurations of that partner account").

The original's additions are accepted (public-facts.md): mask pattern ``allAsRedacted``,
``logSettings.handledErrorMasks`` (masks applied, on top of ``responseMasks``, to the logged response when the
target answers 4xx/5xx), the member ``model`` with the value ``sync``, ``responseActions`` (tokenization actions
run on the target's response before it is returned: body, header or variable places) and
``transformationSource`` ``variable`` with type ``key``: an exchange variable named by ``transformationPath``,
set by a request parser action and read by a later tokenize action (request or response), whose token is
returned in the ``vault-var-<name>`` response header (docs/integrators/proxy.md "Variables"; save-time rules in
:func:`_check_variables`). The ``hmac-vpc`` authorization is named in the refusal message as not supported. This
platform adds one optional member, ``required`` (boolean) on a substitution: a request in which that substitution
matches nothing is refused with 8115 instead of being forwarded with the value left as sent (in a response
action: the response is withheld, 8118).

Limits, checked when a document is saved: 10 actions and 2 response actions (one tokenize, one detokenize),
50 substitutions per action and 200 in all, 10 variables, 50 masks per list, 256 KiB of document (the stored
item must fit DynamoDB's 400 KB). Stored documents are compiled without the overall limits (a configuration saved
before they existed keeps working).

Secrets (``password``, ``secret``) are stored KMS-wrapped (envelope encryption, DESIGN.md §4) and never
returned: the public view shows ``[REDACTED]``.

The model classes (:class:`AuthSpec` ... :class:`ProxyConfig`) are written by hand for a measured cold start reason
(:mod:`vaultcore.plain`: a dataclass costs 0.4-2 ms to create on python3.13; docs/design/benchmarks.md).
"""

from __future__ import annotations

import hmac
import json
from typing import TYPE_CHECKING, Any

from vaultcore.cards.masking import MASK_PATTERNS, REDACTED
from vaultcore.lazy_re import lazy
from vaultcore.net.safe_regex import probing
from vaultcore.net.ssrf import EgressDenied, EgressPolicy, ParsedTarget, validate_target_url
from vaultcore.plain import Frozen, init
from vaultcore.proxy import errors as E
from vaultcore.proxy.transform import SOURCES, TYPES, CompiledPath, PathError, compile_path

if TYPE_CHECKING:
    from vaultcore.partners.service import Partner

__all__ = [
    "METHODS",
    "AUTH_TYPES",
    "DATA_TYPES",
    "NUMERIC_FORMATS",
    "MAX_ACTIONS",
    "MAX_SUBSTITUTIONS",
    "MAX_MASKS",
    "MAX_RESPONSE_ACTIONS",
    "MAX_TOTAL_SUBSTITUTIONS",
    "MAX_VARIABLES",
    "MAX_DOCUMENT_BYTES",
    "AuthSpec",
    "MaskSpec",
    "SubstitutionSpec",
    "ActionSpec",
    "ProxyConfig",
    "parse_document",
    "check_credentials",
    "stored_document",
    "public_document",
    "secret_context",
]

METHODS = ("get", "post", "put", "patch", "delete")
AUTH_TYPES = ("passthrough", "basic", "hmac")
ACTION_TYPES = ("parser", "tokenization")
TOKEN_METHODS = ("tokenize", "detokenize")
DATA_TYPES = ("string", "number", "boolean")
#: Parser formats whose values are digits, so that ``dataType: number`` makes sense.
NUMERIC_FORMATS = frozenset({"pan", "expiry", "expiryMonth", "expiryYear", "cvv", "serviceCode", "discretionary"})
BOOLEAN_TEXT = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}
MAX_ACTIONS = 10
MAX_SUBSTITUTIONS = 50
MAX_MASKS = 50
#: responseActions: one tokenize and one detokenize at most (one vault-id each way).
MAX_RESPONSE_ACTIONS = 2
#: Substitutions of all actions and response actions together (save time).
MAX_TOTAL_SUBSTITUTIONS = 200
#: Distinct variable names of a configuration (each may become one vault-var-<name> response header).
MAX_VARIABLES = 10
#: The document as compact JSON (save time): the stored item, secrets wrapped, must fit DynamoDB's 400 KB.
MAX_DOCUMENT_BYTES = 256 * 1024
MAX_TARGET_LENGTH = 2048
#: Where a substitution may point: the message's places, or an exchange variable (never masks: never logged).
SUBSTITUTION_SOURCES = SOURCES + ("variable",)
#: A response has no query string.
RESPONSE_SOURCES = ("body", "header", "variable")
_VARIABLE_NAME = lazy(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
#: Response headers a response substitution may not name: framing and hop-by-hop headers, cookies (never returned
#: to the partner) and the proxy's own headers.
_RESPONSE_HEADERS_REFUSED = frozenset({
    "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "te", "trailer", "transfer-encoding",
    "upgrade", "content-length", "content-encoding", "content-type", "set-cookie", "vault-id", "vault-unmatched",
})
_MAX_NAME = 128
NON_BLANK = lazy(r"\S")  # names, credentials, templateRef and target: not empty, not only white space
_WRAPPED = "$wrapped"


# ---------------------------------------------------------------------------------------------------- model


class AuthSpec(Frozen):
    """An authorization object. ``secret`` is the clear password/secret (validation time only); ``wrapped`` its
    stored envelope."""

    __slots__ = ("type", "where", "header_name", "username", "secret", "wrapped")
    _no_repr = frozenset({"secret", "wrapped"})
    type: str
    where: str
    header_name: str | None
    username: str | None
    secret: bytes | None
    wrapped: dict[str, Any] | None

    def __init__(self, type: str, where: str, header_name: str | None = None, username: str | None = None,
                 secret: bytes | None = None, wrapped: dict[str, Any] | None = None) -> None:
        init(self, type=type, where=where, header_name=header_name, username=username, secret=secret,
             wrapped=wrapped)


class MaskSpec(Frozen):
    __slots__ = ("path", "pattern")
    path: CompiledPath
    pattern: str

    def __init__(self, path: CompiledPath, pattern: str) -> None:
        init(self, path=path, pattern=pattern)


class SubstitutionSpec(Frozen):
    __slots__ = ("path", "field_name", "data_type", "default", "format", "required")
    path: CompiledPath
    field_name: str | None  # tokenization
    data_type: str | None  # parser
    default: str | None  # parser
    format: str | None  # parser
    required: bool  # a request where it matches nothing is refused (8115), not forwarded

    def __init__(self, path: CompiledPath, field_name: str | None = None, data_type: str | None = None,
                 default: str | None = None, format: str | None = None, required: bool = False) -> None:
        init(self, path=path, field_name=field_name, data_type=data_type, default=default, format=format,
             required=required)


class ActionSpec(Frozen):
    __slots__ = ("index", "type", "authorization", "substitutions", "method", "template_ref", "phase")
    index: int
    type: str
    authorization: AuthSpec
    substitutions: tuple[SubstitutionSpec, ...]
    method: str | None  # tokenize / detokenize
    template_ref: str | None
    phase: str  # "request", or "response" (responseActions)

    def __init__(self, index: int, type: str, authorization: AuthSpec, substitutions: tuple[SubstitutionSpec, ...],
                 method: str | None = None, template_ref: str | None = None, phase: str = "request") -> None:
        init(self, index=index, type=type, authorization=authorization, substitutions=substitutions, method=method,
             template_ref=template_ref, phase=phase)

    @property
    def label(self) -> str:
        return f"{self.type}/{self.method}" if self.method else self.type

    @property
    def where(self) -> str:
        """The action as the document names it: ``actions[i]`` or ``responseActions[i]``."""
        return f"{'responseActions' if self.phase == 'response' else 'actions'}[{self.index}]"

    def unmatched_label(self, n: int) -> str:
        """``<action>.<substitution>`` as in the vault-unmatched header; response actions are prefixed ``r``."""
        return f"{'r' if self.phase == 'response' else ''}{self.index}.{n}"

    @property
    def writes_clear_data(self) -> bool:
        """Detokenize and parser actions put clear card data into the forwarded request."""
        return self.type == "parser" or self.method == "detokenize"


class ProxyConfig(Frozen):
    __slots__ = ("method", "target", "parsed_target", "target_error", "authorization", "request_masks",
                 "response_masks", "error_masks", "actions", "partner_id", "reference", "version", "response_actions")
    method: str
    target: str
    parsed_target: ParsedTarget | None
    target_error: str | None
    authorization: AuthSpec
    request_masks: tuple[MaskSpec, ...]
    response_masks: tuple[MaskSpec, ...]
    error_masks: tuple[MaskSpec, ...]
    actions: tuple[ActionSpec, ...]
    partner_id: str
    reference: str
    version: int
    response_actions: tuple[ActionSpec, ...]

    def __init__(self, method: str, target: str, parsed_target: ParsedTarget | None, target_error: str | None,
                 authorization: AuthSpec, request_masks: tuple[MaskSpec, ...], response_masks: tuple[MaskSpec, ...],
                 error_masks: tuple[MaskSpec, ...], actions: tuple[ActionSpec, ...], partner_id: str = "",
                 reference: str = "", version: int = 0, response_actions: tuple[ActionSpec, ...] = ()) -> None:
        init(self, method=method, target=target, parsed_target=parsed_target, target_error=target_error,
             authorization=authorization, request_masks=request_masks, response_masks=response_masks,
             error_masks=error_masks, actions=actions, partner_id=partner_id, reference=reference, version=version,
             response_actions=response_actions)

    @property
    def has_required(self) -> bool:
        """A request action has a ``required`` substitution (checked on the request as received)."""
        return any(s.required for a in self.actions for s in a.substitutions)

    @property
    def all_actions(self) -> tuple[ActionSpec, ...]:
        return self.actions + self.response_actions


# ---------------------------------------------------------------------------------------------------- helpers


def _fail(message: str, code: int = E.CONFIG_INVALID) -> E.ProxyConfigError:
    return E.ProxyConfigError(message, code=code)


def _name(member: Any) -> str:
    text = str(member)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text[:64] + ("..." if len(text) > 64 else "")


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(f"{where} must be an object.")
    return value


def _members(obj: dict[str, Any], where: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> None:
    for key in obj:
        if key not in required and key not in optional:
            allowed = ", ".join(required + optional)
            raise _fail(f"{where} has an unknown member '{_name(key)}' (allowed: {allowed}).")
    for key in required:
        if key not in obj or obj[key] is None:
            raise _fail(f"{where}.{key} is required.")


def _enum(value: Any, where: str, allowed: tuple[str, ...] | frozenset[str], notes: dict[str, str] | None = None) -> str:
    if not isinstance(value, str) or value not in allowed:
        if isinstance(value, str) and notes and value in notes:
            raise _fail(f"{where} '{value}' {notes[value]}")
        raise _fail(f"{where} must be one of: {', '.join(allowed)}.")
    return value


def _present(obj: dict[str, Any], key: str, stored: bool) -> bool:
    """Whether an optional member is given. ``null`` is no value the document allows (8200); a configuration
    stored before that was refused may hold one, and reads as absent."""
    return key in obj and (obj[key] is not None or not stored)


def _string(value: Any, where: str, max_length: int = _MAX_NAME) -> str:
    if not isinstance(value, str) or not NON_BLANK.search(value):
        raise _fail(f"{where} must be a non-empty string.")
    if len(value) > max_length:
        raise _fail(f"{where} must be at most {max_length} characters.")
    return value


def _array(value: Any, where: str, max_items: int, *, allow_empty: bool = True) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(f"{where} must be an array.")
    if not allow_empty and not value:
        raise _fail(f"{where} must not be empty.")
    if len(value) > max_items:
        raise _fail(f"{where} must have at most {max_items} entries.")
    return value


_SOURCE_NOTES = {"variable": "is not allowed in a mask (variables are never logged; use body, header or query).",
                 "query": "is not available in a response action (a response has no query string)."}
_AUTH_NOTES = {"hmac-vpc": "is not supported by this platform (use passthrough, basic or hmac)."}


def _place(obj: dict[str, Any], where: str, sources: tuple[str, ...] = SOURCES) -> CompiledPath:
    source = _enum(obj["transformationSource"], f"{where}.transformationSource", sources, _SOURCE_NOTES)
    type_ = _enum(obj["transformationType"], f"{where}.transformationType", TYPES)
    if type_ in ("jsonpath", "xpath", "regex") and source != "body":
        raise _fail(f"{where}: transformationType '{type_}' requires transformationSource 'body'.")
    keyed = [s for s in ("header", "query", "variable") if s in sources]
    if type_ == "key" and source not in keyed:
        names = ", ".join(f"'{s}'" for s in keyed[:-1]) + f" or '{keyed[-1]}'"
        raise _fail(f"{where}: transformationType 'key' requires transformationSource {names}.")
    path = obj["transformationPath"]
    if not isinstance(path, str):
        raise _fail(f"{where}.transformationPath must be a string.")
    if source == "variable":
        if not _VARIABLE_NAME.match(path):
            raise _fail(f"{where}.transformationPath must be a variable name: a letter, then letters, digits, '_' "
                        f"or '-' (at most 64 characters).")
        return CompiledPath("variable", "key", path, key=path.lower())  # names are case-insensitive, like headers
    try:
        return compile_path(source, type_, path)
    except PathError as exc:
        raise _fail(f"{where}.transformationPath {exc}.", exc.code) from None


_PLACE = ("transformationSource", "transformationType", "transformationPath")


def _mask(value: Any, where: str) -> MaskSpec:
    obj = _object(value, where)
    _members(obj, where, _PLACE + ("pattern",))
    cpath = _place(obj, where)
    return MaskSpec(cpath, _enum(obj["pattern"], f"{where}.pattern", MASK_PATTERNS))


def _secret(value: Any, where: str, stored: bool) -> tuple[bytes | None, dict[str, Any] | None]:
    if stored and isinstance(value, dict) and _WRAPPED in value:
        return None, value[_WRAPPED]
    return _string(value, where, 512).encode("utf-8"), None


def _authorization(value: Any, where: str, stored: bool) -> AuthSpec:
    obj = _object(value, where)
    if "type" not in obj or obj["type"] is None:
        raise _fail(f"{where}.type is required.")
    type_ = _enum(obj["type"], f"{where}.type", AUTH_TYPES, _AUTH_NOTES)
    if type_ == "passthrough":
        _members(obj, where, ("type",), ("headerName",))
        header = None
        if _present(obj, "headerName", stored):
            header = _string(obj["headerName"], f"{where}.headerName")
            try:
                compile_path("header", "key", header)
            except PathError:
                raise _fail(f"{where}.headerName must be a valid header name.") from None
        return AuthSpec("passthrough", where, header_name=header)
    if type_ == "basic":
        _members(obj, where, ("type", "username", "password"))
        secret, wrapped = _secret(obj["password"], f"{where}.password", stored)
    else:
        _members(obj, where, ("type", "username", "secret"))
        secret, wrapped = _secret(obj["secret"], f"{where}.secret", stored)
    username = _string(obj["username"], f"{where}.username", 64)
    return AuthSpec(type_, where, username=username, secret=secret, wrapped=wrapped)


def _required(obj: dict[str, Any], where: str) -> bool:
    """``required`` (this platform's addition): a boolean; true refuses a request where the place is absent."""
    if "required" not in obj:
        return False
    if not isinstance(obj["required"], bool):
        raise _fail(f"{where}.required must be true or false.")
    return obj["required"]


def _substitution(value: Any, where: str, action_type: str, phase: str = "request") -> SubstitutionSpec:
    obj = _object(value, where)
    sources = RESPONSE_SOURCES if phase == "response" else SUBSTITUTION_SOURCES
    if action_type == "tokenization":
        _members(obj, where, _PLACE + ("fieldName",), ("required",))
        cpath = _place(obj, where, sources)
        if phase == "response" and cpath.source == "header" and (
                cpath.key in _RESPONSE_HEADERS_REFUSED or (cpath.key or "").startswith("vault-var-")):
            raise _fail(f"{where}.transformationPath names a response header a response action may not rewrite "
                        f"(framing, cookies, Content-Type, or the proxy's own vault-* headers).")
        if cpath.source == "variable" and "required" in obj:
            raise _fail(f"{where}.required is not allowed on a variable (a variable is set by an earlier action, "
                        f"not sent by the caller).")
        return SubstitutionSpec(cpath, field_name=_string(obj["fieldName"], f"{where}.fieldName", 64),
                                required=_required(obj, where))
    _members(obj, where, _PLACE + ("dataType", "format"), ("default", "required"))
    cpath = _place(obj, where, sources)
    if cpath.source == "variable" and "required" in obj:
        raise _fail(f"{where}.required is not allowed on a variable (a parser always sets its variable).")
    data_type = _enum(obj["dataType"], f"{where}.dataType", DATA_TYPES)
    if cpath.source == "variable" and data_type == "boolean":
        raise _fail(f"{where}.dataType 'boolean' is not allowed for a variable (a variable holds a value for a "
                    f"tokenize action: use string or number).")
    # Lazy: only a parser action's substitution names a track format; the proxy's init does not load the track
    # parser for configurations that have none (cold start, docs/design/benchmarks.md).
    from vaultcore.cards.tracks import TRACK_FORMATS

    fmt = _enum(obj["format"], f"{where}.format", TRACK_FORMATS)
    default = obj.get("default")
    if default is not None and not isinstance(default, str):
        raise _fail(f"{where}.default must be a string or null.")
    if default is not None and len(default) > 256:
        raise _fail(f"{where}.default must be at most 256 characters.")
    if data_type == "number":
        if fmt not in NUMERIC_FORMATS:
            raise _fail(f"{where}: format '{fmt}' is not numeric; dataType 'number' needs one of: "
                        f"{', '.join(sorted(NUMERIC_FORMATS))}.")
        if default is not None and not default.isdigit():
            raise _fail(f"{where}.default must be digits for dataType 'number'.")
    if data_type == "boolean" and default is not None and default.lower() not in BOOLEAN_TEXT:
        raise _fail(f"{where}.default must be one of {', '.join(BOOLEAN_TEXT)} for dataType 'boolean'.")
    return SubstitutionSpec(cpath, data_type=data_type, default=default, format=fmt, required=_required(obj, where))


_RESPONSE_TYPE_NOTES = {"parser": "is not allowed in responseActions (a parser decrypts the request's dev-* headers; "
                                  "use it in actions)."}


def _action(value: Any, index: int, stored: bool, phase: str = "request") -> ActionSpec:
    where = f"{'responseActions' if phase == 'response' else 'actions'}[{index}]"
    obj = _object(value, where)
    if "type" not in obj or obj["type"] is None:
        raise _fail(f"{where}.type is required.")
    if phase == "response":
        type_ = _enum(obj["type"], f"{where}.type", ("tokenization",), _RESPONSE_TYPE_NOTES)
    else:
        type_ = _enum(obj["type"], f"{where}.type", ACTION_TYPES)
    if type_ == "tokenization":
        _members(obj, where, ("type", "authorization", "method", "templateRef", "substitutions"), ("model",))
    else:
        _members(obj, where, ("type", "authorization", "substitutions"), ("model",))
    if "model" in obj and obj["model"] != "sync":
        raise _fail(f"{where}.model must be 'sync' (the only model this platform runs).")
    method = template_ref = None
    if type_ == "tokenization":
        method = _enum(obj["method"], f"{where}.method", TOKEN_METHODS)
        template_ref = _string(obj["templateRef"], f"{where}.templateRef", 64)
    auth = _authorization(obj["authorization"], f"{where}.authorization", stored)
    subs_raw = _array(obj["substitutions"], f"{where}.substitutions", MAX_SUBSTITUTIONS, allow_empty=False)
    subs = tuple(_substitution(s, f"{where}.substitutions[{i}]", type_, phase) for i, s in enumerate(subs_raw))
    for n, sub in enumerate(subs):
        if method == "detokenize" and sub.path.source == "variable":
            raise _fail(f"{where}.substitutions[{n}]: a detokenize action may not use a variable (a variable is set "
                        f"by a parser and read by a tokenize action).")
    body_kinds = {"regex" if s.path.type == "regex" else "structural" for s in subs if s.path.is_body}
    if len(body_kinds) > 1:
        # One action reads every value before writing any (one bfid per tokenize action): a regex over the text
        # and a jsonpath/xpath over the tree of the same body cannot both be written consistently.
        raise _fail(f"{where}: body substitutions of one action must be all regex or all jsonpath/xpath "
                    f"(use two actions).")
    return ActionSpec(index, type_, auth, subs, method=method, template_ref=template_ref, phase=phase)


def _check_variables(actions: tuple[ActionSpec, ...], response_actions: tuple[ActionSpec, ...]) -> None:
    """A variable is set by a parser substitution and read by a tokenize substitution of a *later* action (a
    response action comes after every request action); at most :data:`MAX_VARIABLES` names."""
    set_by: set[str] = set()
    names: set[str] = set()
    for action in actions + response_actions:
        for n, sub in enumerate(action.substitutions):
            if sub.path.source != "variable":
                continue
            name = sub.path.key or ""
            names.add(name)
            if action.type == "tokenization" and name not in set_by:
                raise _fail(f"{action.where}.substitutions[{n}] reads variable '{sub.path.path}', which no earlier "
                            f"parser action sets.")
        if action.type == "parser":
            set_by.update(s.path.key or "" for s in action.substitutions if s.path.source == "variable")
    if len(names) > MAX_VARIABLES:
        raise _fail(f"configuration uses {len(names)} variables; at most {MAX_VARIABLES}.")


def _check_tokenize_templates(actions: tuple[ActionSpec, ...], response_actions: tuple[ActionSpec, ...]) -> None:
    """The response carries one vault-id: a response tokenization works under the bfid a request tokenize action
    issued, so both name the same template."""
    issued = next((a for a in actions if a.method == "tokenize"), None)
    if issued is None:
        return
    for action in response_actions:
        if action.template_ref != issued.template_ref:
            raise _fail(f"{action.where}.templateRef must be {issued.where}'s templateRef: the response's tokens and "
                        f"the request's share the bfid {issued.where} issues (one vault-id).")


def _target(value: Any, policy: EgressPolicy, *, strict: bool) -> tuple[str, ParsedTarget | None, str | None]:
    target = _string(value, "proxy.target", MAX_TARGET_LENGTH)
    try:
        return target, validate_target_url(target, policy), None
    except EgressDenied as exc:
        if strict:
            raise _fail(f"proxy.target is not allowed: {exc.message}", E.CONFIG_TARGET_REFUSED) from None
        return target, None, exc.message


def parse_document(doc: Any, *, policy: EgressPolicy | None = None, stored: bool = False) -> ProxyConfig:
    """Validate and compile a configuration document; raises :class:`ProxyConfigError` with a precise message.

    ``stored`` documents come from the table: secrets are envelopes, and a target the current policy refuses
    is kept (and refused at call time with 8110) rather than making the configuration unreadable. Regular
    expressions are probed on adversarial 1 MiB inputs when a document is saved (8202; all of them within
    a few seconds together: :func:`vaultcore.net.safe_regex.probing`), not when a stored one is loaded (the
    per-request budget for pattern work bounds them at run time).
    """
    with probing(enabled=not stored):
        return _parse_document(doc, policy=policy, stored=stored)


def _parse_document(doc: Any, *, policy: EgressPolicy | None, stored: bool) -> ProxyConfig:
    policy = policy or EgressPolicy.from_env()
    root = _object(doc, "configuration")
    _members(root, "configuration", ("proxy", "actions"), ("responseActions",))
    if not stored and len(json.dumps(root, separators=(",", ":"), default=str).encode("utf-8")) > MAX_DOCUMENT_BYTES:
        raise _fail(f"configuration must be at most {MAX_DOCUMENT_BYTES // 1024} KiB as JSON.")
    proxy = _object(root["proxy"], "proxy")
    _members(proxy, "proxy", ("authorization", "method", "target"), ("logSettings",))
    method = _enum(proxy["method"], "proxy.method", METHODS)
    target, parsed, target_error = _target(proxy["target"], policy, strict=not stored)
    authorization = _authorization(proxy["authorization"], "proxy.authorization", stored)
    masks: dict[str, tuple[MaskSpec, ...]] = {"requestMasks": (), "responseMasks": (), "handledErrorMasks": ()}
    if _present(proxy, "logSettings", stored):
        settings = _object(proxy["logSettings"], "proxy.logSettings")
        _members(settings, "proxy.logSettings", (), tuple(masks))
        for key in masks:
            if _present(settings, key, stored):
                items = _array(settings[key], f"proxy.logSettings.{key}", MAX_MASKS)
                masks[key] = tuple(_mask(m, f"proxy.logSettings.{key}[{i}]") for i, m in enumerate(items))
    actions_raw = _array(root["actions"], "actions", MAX_ACTIONS)
    actions = tuple(_action(a, i, stored) for i, a in enumerate(actions_raw))
    for method_name in TOKEN_METHODS:
        if sum(a.method == method_name for a in actions) > 1:
            raise _fail(f"actions: at most one '{method_name}' action (one vault-id per request).")
    response_actions: tuple[ActionSpec, ...] = ()
    if _present(root, "responseActions", stored):
        raw = _array(root["responseActions"], "responseActions", MAX_RESPONSE_ACTIONS)
        response_actions = tuple(_action(a, i, stored, "response") for i, a in enumerate(raw))
        for method_name in TOKEN_METHODS:
            if sum(a.method == method_name for a in response_actions) > 1:
                raise _fail(f"responseActions: at most one '{method_name}' action (one vault-id per response).")
    if not stored:
        total = sum(len(a.substitutions) for a in actions + response_actions)
        if total > MAX_TOTAL_SUBSTITUTIONS:
            raise _fail(f"configuration has {total} substitutions in all (actions and responseActions); at most "
                        f"{MAX_TOTAL_SUBSTITUTIONS}.")
    _check_variables(actions, response_actions)
    _check_tokenize_templates(actions, response_actions)
    return ProxyConfig(method=method, target=target, parsed_target=parsed, target_error=target_error,
                       authorization=authorization, request_masks=masks["requestMasks"],
                       response_masks=masks["responseMasks"], error_masks=masks["handledErrorMasks"],
                       actions=actions, response_actions=response_actions)


# ---------------------------------------------------------------------------------------------------- credentials


def _all_auth(config: ProxyConfig) -> list[tuple[AuthSpec, bool]]:
    """Every authorization with whether it belongs to an action."""
    return [(config.authorization, False)] + [(a.authorization, True) for a in config.all_actions]


def credentials_match(auth: AuthSpec, partner: Partner, secret: bytes) -> bool:
    """Constant-time check of a basic/hmac authorization against the partner's live credentials."""
    from vaultcore.partners.service import hmac_keys_of, issued_hmac_key, partner_key_matches

    ok = hmac.compare_digest((auth.username or "").encode("utf-8"), partner.partner_id.encode("utf-8"))
    if auth.type == "basic":
        try:
            password = secret.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return partner_key_matches(partner, password) & ok
    matched = False
    for key in hmac_keys_of(partner):
        # The spec's form (the Base64-decoded hmacKey) or, as integrators also paste it, the hmacKey as issued.
        matched |= hmac.compare_digest(secret, key)  # no early exit: the time does not depend on the position
        matched |= hmac.compare_digest(secret, issued_hmac_key(key).encode("ascii"))
    return matched & ok


def hmac_signing_key(secret: bytes) -> bytes:
    """The key the proxy signs the target request with: the partner's hmacKey as issued.

    ``secret`` holds the Base64-decoded key (spec) or the issued key itself; either way the forwarded request is
    signed exactly as the partner signs an API call, so a target that verifies the spec's scheme with the
    partner's issued key (this platform's own secure API among them) accepts it.
    """
    from vaultcore.partners.service import issued_hmac_key

    if len(secret) == 64 and all(c in b"0123456789abcdef" for c in secret):
        return issued_hmac_key(secret).encode("ascii")
    return secret


def check_credentials(config: ProxyConfig, partner: Partner) -> None:
    """Refuse basic/hmac authorizations that do not carry the partner's own credentials (validation time)."""
    for auth, is_action in _all_auth(config):
        if auth.type == "passthrough":
            continue
        if is_action and auth.type == "basic" and partner.api_security == "hmac":
            raise _fail(f"{auth.where}.type 'basic' is not allowed: the partner's API security is hmac "
                        f"(use hmac or passthrough).")
        assert auth.secret is not None
        if not credentials_match(auth, partner, auth.secret):
            what = "password" if auth.type == "basic" else "secret"
            raise _fail(f"{auth.where}: username and {what} must be the partner's id and its "
                        f"{'partner key' if auth.type == 'basic' else 'Base64-decoded hmacKey'}.",
                        E.CONFIG_CREDENTIALS_MISMATCH)


# ---------------------------------------------------------------------------------------------------- storage views


def secret_context(partner_id: str, reference: str) -> dict[str, str]:
    """KMS encryption context of a configuration's stored secrets (CloudTrail shows whose secret was opened)."""
    return {"purpose": "proxy-auth", "partnerId": partner_id, "configReferenceID": reference}


def _auth_objects(doc: dict[str, Any]) -> list[dict[str, Any]]:
    objs = [doc["proxy"]["authorization"]]
    objs.extend(a["authorization"] for a in doc["actions"])
    objs.extend(a["authorization"] for a in doc.get("responseActions") or [])
    return objs


def stored_envelopes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The wrapped secrets of a stored document (basic and hmac authorizations), in document order: what
    :func:`vaultcore.proxy.service._authorize` unwraps (under :func:`secret_context`) before any action runs."""
    found = []
    for auth in _auth_objects(doc):
        if auth.get("type") in ("basic", "hmac"):
            for key in ("password", "secret"):
                value = auth.get(key)
                if isinstance(value, dict) and isinstance(value.get(_WRAPPED), dict):
                    found.append(value[_WRAPPED])
    return found


def stored_document(doc: dict[str, Any], wrap: Any) -> dict[str, Any]:
    """A deep copy of a validated document with each password/secret replaced by ``{"$wrapped": wrap(bytes)}``."""
    import copy

    out = copy.deepcopy(doc)
    for auth in _auth_objects(out):
        for key in ("password", "secret"):
            if isinstance(auth.get(key), str):
                auth[key] = {_WRAPPED: wrap(auth[key].encode("utf-8"))}
    return out


def public_document(doc: dict[str, Any]) -> dict[str, Any]:
    """The document as the management API shows it: secrets as ``[REDACTED]``."""
    import copy

    out = copy.deepcopy(doc)
    # A configuration stored before null was refused may hold one where the document allows none: shown without.
    proxy = out.get("proxy") or {}
    if isinstance(proxy.get("logSettings"), dict):
        for key in [k for k, v in proxy["logSettings"].items() if v is None]:
            del proxy["logSettings"][key]
    for parent, key in ((out, "responseActions"), (proxy, "logSettings")):
        if key in parent and parent[key] is None:
            del parent[key]
    for auth in _auth_objects(out):
        if auth.get("type") == "passthrough" and "headerName" in auth and auth["headerName"] is None:
            del auth["headerName"]
        for key in ("password", "secret"):
            if key in auth:
                auth[key] = REDACTED
    return out
