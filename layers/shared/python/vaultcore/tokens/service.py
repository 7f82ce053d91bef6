"""The tokenization service: the API the tokenize endpoint, the proxy and the gateway use.

* :func:`tokenize_values`: clear values → tokens under a new (or a given, verified) bfid; optionally stores the
  tokens (never the values) in the Tokens table for the gateway's one-hour read step.
* :func:`detokenize_values`: bfid + tokens → clear values (no public endpoint: clear data leaves the platform
  only toward configured proxy targets and the gateway); :func:`detokenize_pairs`, its batch form (any number
  of tokens per field, one bfid verification), is the one implementation.
* :func:`gateway_read`: the gateway's read step (``etoken=`` and ``bfid=`` alone), once-only where the policy says;
  :func:`read_stored_tokens`: a plain read of stored tokens (no CVV token, nothing bound or consumed).
* :func:`read_tokens_once`: the partner's ``read`` (issue 21), once per bfid; :func:`delete_bfid`: revocation.
* :func:`template_for`: the template a tokenization would use (the endpoint fills card fields from it).

Every bfid is verified before anything is looked up with it (DESIGN.md §4): the unverified partner id must be
the caller's (else 3010 at once), the key version it names must be current or active, and its MAC must verify
under that version's key (:func:`vaultcore.tokens.bfid.parse_bfid`); only then are the Tokens table, the template
or the token engine touched. All of these failures are the same 3010 error.

Deletion (issue 21): a deleted bfid's scope has a revocation record (:mod:`vaultcore.store.tokens`). Every use of
a verified bfid (detokenization by the proxy, the gateway and the secure API, the read steps, tokenizing more
under it) looks it up — one strongly consistent GetItem of the record's key, or a BatchGetItem per 100 bfids
of a batch — and refuses a deleted bfid with 3017. "Not deleted" is remembered per container for at most
:data:`REVOCATION_CACHE_SECONDS` (so a gateway request's read step and detokenization make one lookup),
"deleted" for good: a deletion takes effect in the container that made it at once and everywhere within that
bound.

Detokenization integrity: a bfid (version 2 or 3) carries a 32-bit keyed tag per token it was issued with
(:mod:`vaultcore.tokens.bfid`). Tokenization draws the bfid's core, tokenizes under its scope, then seals the
bfid with the tags of every token of the call. Detokenization refuses a token without a matching tag for its
field (3015: a wrong, mistyped or another bfid's token, or a field not tokenized under the bfid) before FF1 is
inverted, so it never yields a wrong clear value; the read step returns only the stored tokens the bfid vouches
for. Version-1 bfids (no tags) keep detokenizing without the check. Tokenizing more values under a given
version-2 or -3 bfid returns an extended bfid (same scope, same Tokens item) that vouches for the old and the new
tokens; the given one keeps vouching for its own. The engine makes and reads every token with the construction of
its bfid's version (:func:`vaultcore.tokens.engine.tokenize_value`): new bfids are version 3 (short values by the
prefix cipher), and values added under a given version-1 or -2 bfid are cycle-walked like its first tokens.

Use policy (issue 27, :mod:`vaultcore.tokens.policy`): every read and every detokenization checks the
tokenization's policy here, for the :class:`~vaultcore.tokens.policy.Actor` the entry point names (the partner's
API by default): the owner account of a bound tokenization (its Tokens item, and the scope record the revocation
lookup reads anyway), its once-only use, and which fields come back in clear (never a CVV's token or, outside the
first authorization of its iFrame capture, its clear value: 3046; a bound tokenization only to its account's
gateway: 3045).

Errors are :class:`~vaultcore.tokens.errors.TokenServiceError` (a ValidationError, HTTP 400) with the codes of
:mod:`vaultcore.tokens.errors`; messages never contain a value, a token or a bfid.

:class:`TokenizeResult`, :class:`GatewayRead` are written by hand for a measured cold start reason
(:mod:`vaultcore.plain`: a dataclass costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms;
docs/design/benchmarks.md).
"""

from __future__ import annotations

import hmac
import math
from collections.abc import Iterable, Mapping
from typing import Any

from vaultcore import clock, metrics
from vaultcore.cache import TTLCache
from vaultcore.logs import get_logger
from vaultcore.plain import Frozen, init
from vaultcore.store import tokens as token_store
from vaultcore.tokens import keys as token_keys
from vaultcore.tokens import template_store
from vaultcore.tokens.bfid import (
    TAGGED_VERSION,
    BfidError,
    BfidInfo,
    draft_bfid,
    owner_tag,
    parse_bfid,
    peek_bfid_unverified,
    seal_bfid,
    token_issued,
    token_tag,
)
from vaultcore.tokens.engine import (
    INACTIVE,
    IRREVERSIBLE,
    TOO_LONG,
    TOO_SHORT,
    TokenError,
    check_token,
    detokenize_value,
    tokenize_value,
)
from vaultcore.tokens.errors import (
    ACCESS_MODE_REFUSED,
    ALREADY_READ,
    BFID_DELETED,
    BFID_INVALID,
    BFID_INVALID_MESSAGE,
    BFID_OTHER_TEMPLATE,
    FIELD_DUPLICATE,
    FIELD_INACTIVE,
    FIELD_IRREVERSIBLE,
    FIELD_UNKNOWN,
    NOT_READABLE,
    READ_WINDOW,
    TEMPLATE_REF_MISSING,
    TEMPLATE_UNKNOWN,
    TOKEN_NOT_ISSUED,
    TOO_MANY_TOKENS,
    VALUE_INVALID,
    VALUE_LENGTH,
    VALUES_ENTRY,
    VALUES_MISSING,
    PolicyRefused,
    TokenConflict,
    TokenPermissionDenied,
    TokenServiceError,
)
from vaultcore.tokens.policy import (
    CVV_FIELDS,
    CVV_SALT,
    PARTNER,
    Actor,
    Owner,
    check_clear,
    check_sealed,
    cvv_refused,
    cvv_scope,
    gateway_actor,
    is_cvv,
    new_cvv_salt,
    owner_of_item,
)
from vaultcore.tokens.template_store import StoredTemplate
from vaultcore.tokens.templates import Template, TemplateError, TemplateField
from vaultcore.tokens.validation import ValueRuleError, check_value

__all__ = ["TokenizeResult", "TokenServiceError", "tokenize_values", "detokenize_values", "detokenize_pairs",
           "read_stored_tokens", "read_tokens_once", "delete_bfid", "check_access_mode", "verify_bfid",
           "detokenize_verified", "revoked_scopes", "scope_owners", "gateway_read", "GatewayRead", "template_for",
           "stored_template", "READ_WINDOW_SECONDS", "REVOCATION_CACHE_SECONDS", "reset_caches"]

#: The gateway's read-and-detokenize window (spec Limits: one hour from data capture).
READ_WINDOW_SECONDS = 3600
#: How long a container trusts a "not deleted" answer of the revocation lookup (the deletion bound,
#: docs/integrators/tokenization.md).
REVOCATION_CACHE_SECONDS = 1.0
#: scope -> (its owner account or None,) of a scope not deleted (the scope record's other answer, issue 27).
_not_revoked: TTLCache[tuple[str | None]] = TTLCache(REVOCATION_CACHE_SECONDS, max_items=4096)
_revoked: TTLCache[bool] = TTLCache(3600.0, max_items=4096)  # a revocation is permanent
_log = get_logger("tokens")


class TokenizeResult(Frozen):
    """What a tokenization produced. ``values`` maps field name → token (kept out of repr: tokens stay out of
    logs and tracebacks)."""

    __slots__ = ("bfid", "values", "template_ref", "template_version", "key_version")
    _no_repr = frozenset({"values"})
    bfid: str
    values: dict[str, str]
    template_ref: str
    template_version: int
    key_version: int

    def __init__(self, bfid: str, values: dict[str, str], template_ref: str, template_version: int = 1,
                 key_version: int = 1) -> None:
        init(self, bfid=bfid, values=values, template_ref=template_ref, template_version=template_version,
             key_version=key_version)


def reset_caches() -> None:
    """Forget every per-container cache of the service (keys, key rings, templates, revocation answers)."""
    token_keys.reset_caches()
    template_store.reset_caches()
    _not_revoked.clear()
    _revoked.clear()


def _deleted() -> TokenServiceError:
    return TokenServiceError("The bfid was deleted.", code=BFID_DELETED)


def _check_revocation(scope: str) -> str | None:
    """3017 when the scope was deleted (module docstring: one GetItem of its scope record, or a cached answer);
    else the account the scope is bound to (None: unbound)."""
    if _revoked.get(scope):
        raise _deleted()
    hit = _not_revoked.get(scope)
    if hit is not None:
        return hit[0]
    record = token_store.scope_record(scope)
    if record.revoked:
        _revoked.put(scope, True)
        raise _deleted()
    _not_revoked.put(scope, (record.owner_account,))
    return record.owner_account


# ---------------------------------------------------------------------------------------------- helpers


def _template(partner_id: str, template_ref: object) -> StoredTemplate:
    if not isinstance(template_ref, str) or not template_ref:
        raise TokenServiceError("templateRef is required.", code=TEMPLATE_REF_MISSING)
    stored = template_store.load_latest(partner_id, template_ref)
    if stored is None:
        raise TokenServiceError("templateRef is not a template of this partner.", code=TEMPLATE_UNKNOWN)
    return stored


def stored_template(partner_id: str, template_ref: object) -> StoredTemplate:
    """The latest version of the partner's template ``template_ref`` (built-in included); 3000/3001 otherwise."""
    return _template(partner_id, template_ref)


def template_for(partner_id: str, template_ref: str) -> Template:
    """The template (latest version) a tokenization of ``template_ref`` would use; 3000/3001 otherwise."""
    return _template(partner_id, template_ref).template


def _field(template: Template, name: str) -> TemplateField:
    try:
        return template.get_field(name)
    except TemplateError:
        raise TokenServiceError(f"templateRef {template.template_ref} has no field {name[:64]!r}.",
                                code=FIELD_UNKNOWN) from None


def _pairs(values: Iterable[tuple[str, str]] | None) -> list[tuple[str, str]]:
    if values is None or isinstance(values, str | bytes | Mapping):
        raise TokenServiceError("values must be a non-empty list of name and value pairs.", code=VALUES_MISSING)
    pairs = list(values)
    if not pairs:
        raise TokenServiceError("values must be a non-empty list of name and value pairs.", code=VALUES_MISSING)
    seen: set[str] = set()
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, tuple | list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
            raise TokenServiceError(f"values[{i}] must have a string name and a string value.", code=VALUES_ENTRY)
        if pair[0] in seen:
            raise TokenServiceError(f"field {pair[0][:64]!r} appears more than once in values.",
                                    code=FIELD_DUPLICATE)
        seen.add(pair[0])
    return [(str(n), str(v)) for n, v in pairs]


def _engine_error(exc: TokenError) -> TokenServiceError:
    code = {IRREVERSIBLE: FIELD_IRREVERSIBLE, INACTIVE: FIELD_INACTIVE, TOO_SHORT: VALUE_LENGTH,
            TOO_LONG: VALUE_LENGTH}.get(exc.code, VALUE_INVALID)
    return TokenServiceError(exc.message, code=code)


def _check(field_: TemplateField, value: str) -> None:
    """Length and characters (the engine's own rules), then the type's rule, before any encryption."""
    lo, hi = field_.length_range
    if not lo <= len(value) <= hi:
        raise TokenServiceError(f"value for field {field_.name} must be {lo} to {hi} characters.", code=VALUE_LENGTH)
    try:
        check_value(field_, value)
    except ValueRuleError as exc:
        raise TokenServiceError(str(exc) + ".", code=VALUE_INVALID) from None


def _field_index(template: Template, name: str) -> int:
    """The position of field ``name`` in the template version: the label of its token tags in a bfid."""
    return next(i for i, f in enumerate(template.fields) if f.name == name)


def _issued(keys: token_keys.TokenKeys, info: BfidInfo, template: Template, name: str, token: str) -> bool:
    """Whether the verified bfid ``info`` vouches for ``token`` in field ``name`` (always, for version 1)."""
    return token_issued(keys.tag_key, info, _field_index(template, name), name, token)


def _not_issued(name: str) -> TokenServiceError:
    return TokenServiceError(f"The token for field {name} was not issued under this bfid.", code=TOKEN_NOT_ISSUED)


def _invalid_bfid() -> TokenServiceError:
    return TokenServiceError(BFID_INVALID_MESSAGE, code=BFID_INVALID)


def _verify(partner_id: str, bfid: object, *, revocation: bool = False
            ) -> tuple[BfidInfo, token_keys.TokenKeys, StoredTemplate]:
    """Verify ``bfid`` for ``partner_id`` before any lookup keyed by it (module docstring); one 3010 otherwise.
    With ``revocation``, then 3017 for a deleted bfid (detokenization looks it up after its own checks, just
    before FF1 runs, so a refused token costs no lookup)."""
    if not isinstance(bfid, str):
        raise _invalid_bfid()
    try:
        claimed_partner, key_version = peek_bfid_unverified(bfid)
    except BfidError:
        raise _invalid_bfid() from None
    # Another partner's bfid is refused before its key ring is even read: the same answer as a forged one.
    if not hmac.compare_digest(claimed_partner.encode(), partner_id.encode()):
        raise _invalid_bfid()
    keys = token_keys.keys_for_version(partner_id, key_version)
    if keys is None:  # unknown or retired version
        raise _invalid_bfid()
    try:
        info = parse_bfid(keys.mac_key, bfid, expected_partner_id=partner_id)
    except BfidError:
        raise _invalid_bfid() from None
    named = template_store.split_bfid_template(info.template_ref)
    stored = None if named is None else template_store.load_version(partner_id, named[0], named[1])
    if stored is None:  # a verified bfid always names a published template: only data loss gets here
        raise TokenServiceError("The bfid's template is not available.", code=TEMPLATE_UNKNOWN)
    if revocation:
        _check_revocation(info.scope)
    return info, keys, stored


def verify_bfid(partner_id: str, bfid: object, *, revocation: bool = False
                ) -> tuple[BfidInfo, token_keys.TokenKeys, StoredTemplate]:
    """:func:`_verify` for the secure API's endpoints (batches verify each bfid, then look them up together)."""
    return _verify(partner_id, bfid, revocation=revocation)


def check_access_mode(partner_id: str, stored: StoredTemplate) -> None:
    """3041 unless the latest version of the bfid's template has ``accessMode: detokenize`` (so a template owner
    can withdraw detokenization for every bfid of the template by publishing a new version)."""
    latest = template_store.load_latest(partner_id, stored.template_ref) or stored
    if not latest.template.detokenizable:
        raise TokenPermissionDenied("The template's accessMode does not allow detokenization.",
                                    code=ACCESS_MODE_REFUSED)


# ---------------------------------------------------------------------------------------------- the API


def tokenize_values(partner_id: str, template_ref: str, values: list[tuple[str, str]], *, bfid: str | None = None,
                    store: bool = True, readable: bool = False, log: bool = True,
                    owner: Owner | None = None) -> TokenizeResult:
    """Tokenize ``values`` (``(field name, clear value)`` pairs) with the partner's template ``template_ref``.

    Without ``bfid`` a new bfid is issued under the partner's current key and the template's latest version,
    sealed with a tag of every token of the call (module docstring); with one, it must verify for the partner
    (3010) and name ``template_ref`` (3014), and the tokens are made under its key and template version (the same
    value in the same field gives the same token again). The result's bfid is then the given one extended with
    the tags of the new tokens (the given text itself when it already vouches for all of them, and always for a
    version-1 bfid); 3016 when the tags no longer fit a bfid of 1,024 characters.
    Every value is validated (3002-3005, 3020, 3021) before anything is encrypted or written.
    With ``store`` the tokens are written under the bfid's scope to the Tokens table, readable for
    :data:`READ_WINDOW_SECONDS` by :func:`read_stored_tokens` (one DynamoDB write); ``readable`` also lets the
    partner's :func:`read_tokens_once` fetch them (tokenize with ``omit``). ``log=False``: no log line and no
    metric (a batch writes one for all its items).

    ``owner`` (issue 27): the use policy the stored tokens carry (:class:`~vaultcore.tokens.policy.Owner`), written
    with them (and, when durable, to the scope record first). A CVV (:data:`~vaultcore.tokens.policy.CVV_FIELDS`)
    is accepted only by a stored capture with an owner (an iFrame capture; 3046 for any other call: no tokenize,
    batch or proxy answer carries a CVV token), and enciphered under a random per-capture salt kept in its Tokens
    item until its first read removes it.
    """
    pairs = _pairs(values)
    if bfid is None:
        stored = _template(partner_id, template_ref)
        keys = info = None
    else:
        if not isinstance(template_ref, str) or not template_ref:
            raise TokenServiceError("templateRef is required.", code=TEMPLATE_REF_MISSING)
        info, keys, stored = _verify(partner_id, bfid, revocation=True)
        if stored.template_ref != template_ref:
            raise TokenServiceError("The bfid was issued for another templateRef.", code=BFID_OTHER_TEMPLATE)
    fields = [(_field(stored.template, name), value) for name, value in pairs]
    for f, value in fields:
        _check(f, value)
    has_cvv = any(is_cvv(f.name) for f, _ in fields)
    if has_cvv and (owner is None or not store):
        raise cvv_refused()
    now = int(clock.now())
    if info is None:
        keys = token_keys.current_keys(partner_id)
        sealed = owner_tag(keys.mac_key, owner.account_id) if owner is not None and owner.sealed else None
        info = draft_bfid(keys.version, stored.bfid_field, partner_id, issued_at=now, owner_tag=sealed)
    assert keys is not None
    tokens: dict[str, str] = {}
    salt = new_cvv_salt() if has_cvv else None
    for f, value in fields:
        scope = cvv_scope(info.scope, salt) if salt is not None and is_cvv(f.name) else info.scope
        try:
            tokens[f.name] = tokenize_value(keys.ff1_key, scope, f, value, bfid_version=info.version)
        except TokenError as exc:
            raise _engine_error(exc) from None
    if info.version >= TAGGED_VERSION:
        tags = [(_field_index(stored.template, name), token_tag(keys.tag_key, info.scope, name, token))
                for name, token in tokens.items()]
        try:
            bfid = seal_bfid(keys.mac_key, info, tags)
        except BfidError:
            raise TokenServiceError("Too many distinct tokens for one bfid; tokenize them in separate calls.",
                                    code=TOO_MANY_TOKENS) from None
    assert bfid is not None
    if store:
        # Rounded up, so the read window is never shorter than the hour (the clock has sub-second precision).
        expires_at = math.ceil(clock.now()) + READ_WINDOW_SECONDS
        policy = owner.item_attributes() if owner is not None else {}
        if salt is not None:
            policy[CVV_SALT] = salt  # a stored capture with an owner (checked above): removed by the first read
        if owner is not None and owner.durable:
            token_store.put_scope_owner(info.scope, partner_id, owner.account_id, now)  # before any token exists
        token_store.put_tokens(info.scope, partner_id, stored.template_ref, stored.version, keys.version, tokens, now,
                               expires_at, readable=readable, policy=policy)
    if log:
        _log.info("values tokenized", extra={"partner_id": partner_id, "count": len(tokens), "event": "tokenize"})
        metrics.values_tokenized(len(tokens))
    return TokenizeResult(bfid, tokens, stored.template_ref, stored.version, keys.version)


def detokenize_values(partner_id: str, bfid: str, tokens: dict[str, str], *, actor: Actor = PARTNER
                      ) -> dict[str, str]:
    """Clear values of ``tokens`` (field name → token) made under ``bfid``, per the bfid's template version.

    The bfid is verified first (3010). Then, per field: not in the template 3002, irreversible 3012, outside
    its active window 3013, malformed token 3003/3004, and (version-2 and -3 bfids) a token the bfid holds no matching
    tag for 3015, checked before FF1 is inverted; then the use policy for ``actor`` (3046 a CVV, 3045 a bound
    tokenization outside its account's gateway). An empty ``tokens`` returns ``{}`` (after verifying).
    One field at most once: :func:`detokenize_pairs` takes any number of tokens per field.
    """
    info, keys, stored = _verify(partner_id, bfid)
    if not isinstance(tokens, Mapping):
        raise TokenServiceError("tokens must map field names to tokens.", code=VALUES_ENTRY)
    names = list(tokens)
    clear = _detokenize_verified(partner_id, info, keys, stored, list(tokens.items()),
                                 "tokens must map field names to tokens.", actor=actor)
    return dict(zip(names, clear, strict=True))


def detokenize_pairs(partner_id: str, bfid: str, pairs: Iterable[tuple[str, str]], *, actor: Actor = PARTNER
                     ) -> list[str]:
    """Clear values of ``pairs`` (``(field name, token)``, a field any number of times), in their order.

    The batch form of :func:`detokenize_values`, with its checks and codes: the bfid is verified once (3010), then
    every pair is checked (3002, 3012, 3013, 3003/3004, 3015) before FF1 is inverted for any of them, so one
    refused token yields no clear value at all. The same token in the same field is inverted once. An empty
    ``pairs`` returns ``[]`` (after verifying).
    """
    info, keys, stored = _verify(partner_id, bfid)
    message = "tokens must be a list of field name and token pairs."
    if pairs is None or isinstance(pairs, str | bytes | Mapping):
        raise TokenServiceError(message, code=VALUES_ENTRY)
    try:
        items: list[object] = list(pairs)
    except TypeError:
        raise TokenServiceError(message, code=VALUES_ENTRY) from None
    return _detokenize_verified(partner_id, info, keys, stored, items, message, actor=actor)


def detokenize_verified(partner_id: str, verified: tuple[BfidInfo, token_keys.TokenKeys, StoredTemplate],
                        pairs: list[tuple[str, str]], *, revocation: bool = True, log: bool = True,
                        actor: Actor = PARTNER, owner: str | None = None) -> list[str]:
    """The secure API's detokenization of ``pairs`` under a bfid :func:`verify_bfid` verified (whose access mode
    the caller checked): the checks and codes of :func:`detokenize_pairs`; ``revocation=False`` when the caller
    looked the bfid up itself (a batch: :func:`scope_owners`, whose answer is ``owner``)."""
    info, keys, stored = verified
    return _detokenize_verified(partner_id, info, keys, stored, list(pairs),
                                "values must be a list of name and token pairs.", revocation=revocation, log=log,
                                actor=actor, owner=owner)


def _detokenize_verified(partner_id: str, info: BfidInfo, keys: token_keys.TokenKeys, stored: StoredTemplate,
                         items: list[object], message: str, *, actor: Actor, revocation: bool = True,
                         log: bool = True, owner: str | None = None) -> list[str]:
    """Check every ``(name, token)`` of ``items`` under the verified bfid ``info`` and the use policy for
    ``actor`` (the one place detokenization checks it), then invert FF1 for each."""
    now = clock.now()
    template = stored.template
    fields: dict[str, tuple[TemplateField, int]] = {}
    checked: list[tuple[TemplateField, str]] = []
    vouched: set[tuple[str, str]] = set()
    for item in items:
        if not (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], str)):
            raise TokenServiceError(message, code=VALUES_ENTRY)
        name, token = item
        known = fields.get(name)
        if known is None:
            f = _field(template, name)
            known = fields[name] = (f, _field_index(template, name))
        f, index = known
        if is_cvv(name):
            raise cvv_refused(name)  # never detokenized from a token (policy module): before any lookup
        if (name, token) not in vouched:
            try:
                check_token(f, token, issued_at=info.issued_at, now=now)
            except TokenError as exc:
                raise _engine_error(exc) from None
            if not token_issued(keys.tag_key, info, index, name, token):
                raise _not_issued(name)
            vouched.add((name, token))
        checked.append((f, token))
    # Every token is checked before FF1 runs for any of them: one refused token and no clear value is made.
    if revocation:
        # a deleted bfid: 3017; and the account it is bound to (one GetItem, or the container's short answer)
        owner = _check_revocation(info.scope)
    check_clear(owner, actor, [f.name for f, _ in checked])
    check_sealed(keys.mac_key, info, actor)
    clear: dict[tuple[str, str], str] = {}
    out: list[str] = []
    for f, token in checked:
        value = clear.get((f.name, token))
        if value is None:
            try:
                value = clear[(f.name, token)] = detokenize_value(
                    keys.ff1_key, info.scope, f, token, issued_at=info.issued_at, now=now, bfid_version=info.version)
            except TokenError as exc:
                raise _engine_error(exc) from None
        out.append(value)
    if log:
        _log.info("tokens detokenized", extra={"partner_id": partner_id, "count": len(out), "event": "detokenize"})
        metrics.values_detokenized(len(out))
    return out


def _window_passed() -> TokenServiceError:
    return TokenServiceError("Nothing is stored under this bfid, or its one-hour read window has passed.",
                             code=READ_WINDOW)


def _live_item(scope: str, partner_id: str, now: float) -> dict[str, Any]:
    """The Tokens item of ``scope``: the partner's and within its read window (DynamoDB deletes expired items
    lazily, so ``expiresAt`` is checked here), else 3011."""
    item = token_store.get_token_item(scope)
    expires_at = item.get("expiresAt") if item is not None else None
    if item is None or item.get("partnerId") != partner_id or not isinstance(expires_at, int | float) \
            or expires_at <= now:
        raise _window_passed()
    return item


def _vouched(keys: token_keys.TokenKeys, info: BfidInfo, stored: StoredTemplate, item: dict[str, Any]
             ) -> dict[str, str]:
    """The item's tokens the bfid vouches for (an extended bfid's item also holds the extension's tokens)."""
    return {name: token for name, token in token_store.stored_tokens(item).items()
            if name in stored.template and _issued(keys, info, stored.template, name, token)}


def read_stored_tokens(partner_id: str, bfid: str, *, actor: Actor = PARTNER) -> dict[str, str]:
    """The tokens stored under ``bfid`` (field name → token), within the one-hour read window, never a CVV's.

    The bfid is verified first (3010). Nothing stored, another partner's item, or an item whose ``expiresAt``
    has passed → 3011. The use policy (issue 27): a bound tokenization is read only by its account's gateway, a
    once-only or consumed one only by :func:`gateway_read` (3045). Of the item's tokens, only those the bfid
    vouches for are returned.
    """
    info, keys, stored = _verify(partner_id, bfid, revocation=True)
    check_sealed(keys.mac_key, info, actor)
    item = _live_item(info.scope, partner_id, clock.now())
    check_clear(owner_of_item(item), actor, [])
    if item.get("uses") == "once" or item.get("gateway_read_by") is not None:
        raise PolicyRefused("used")
    return {n: t for n, t in _vouched(keys, info, stored, item).items() if not is_cvv(n)}


class GatewayRead(Frozen):
    """What the gateway's read step yields: the tokens it may keep with the transaction (never a CVV's) and the
    clear values of the payment (with the CVV only when this read consumed an iFrame capture that took one)."""

    __slots__ = ("tokens", "clear")
    _no_repr = frozenset({"tokens", "clear"})
    tokens: dict[str, str]
    clear: dict[str, str]

    def __init__(self, tokens: dict[str, str], clear: dict[str, str]) -> None:
        init(self, tokens=tokens, clear=clear)


def gateway_read(partner_id: str, bfid: str, *, account_id: str, reader: str, custom_id: str | None = None,
                 method: str | None = None, consume: bool = False) -> GatewayRead:
    """The gateway's read step for ``account_id``: ``etoken=`` (``consume``) and ``bfid=`` alone, one policy.

    The bfid is verified (3010, deleted 3017). ``consume``, or a once-only item (an iFrame eToken, whatever
    parameter carries it): one conditional UpdateItem (:func:`vaultcore.store.tokens.use_item`) marks the item read
    by ``reader`` (the request's id: its own retry passes) and removes the CVV's token and salt in the same write,
    on condition of the owner (account; ``custom_id`` and tender when given) — so an eToken is used once, by its
    account, through either parameter. Otherwise one GetItem: the owner account is checked and a consumed item
    refused. Refusals: gone, expired or another partner's 3011; :class:`~vaultcore.tokens.errors.PolicyRefused`
    (3045) with ``reason`` ``account``, ``custom_id``, ``method`` or ``used``; a refused request consumes nothing.
    Then the tokens are detokenized for the account (:func:`_detokenize_verified`'s policy check); the CVV only
    with the salt this read removed.
    """
    info, keys, stored = _verify(partner_id, bfid, revocation=True)
    check_sealed(keys.mac_key, info, gateway_actor(account_id))
    now = clock.now()
    if not consume:
        item = _live_item(info.scope, partner_id, now)
        if owner_of_item(item) not in (None, account_id):
            raise PolicyRefused("account")
        if item.get("gateway_read_by") not in (None, reader):
            raise PolicyRefused("used")
        consume = item.get("uses") == "once" or "iframe_account" in item
    if consume:
        remove = (*(token_store.TOKEN_PREFIX + n for n in sorted(CVV_FIELDS)), CVV_SALT)
        used = token_store.use_item(info.scope, partner_id, reader, int(now), account_id=account_id,
                                    custom_id=custom_id, method=method, remove=remove)
        if used is None:
            _use_refusal(info.scope, partner_id, account_id, custom_id, method, now)
        item = used or {}
    tokens = _vouched(keys, info, stored, item)
    cvv = {n: tokens.pop(n) for n in list(tokens) if is_cvv(n)}
    names = list(tokens)
    clear = dict(zip(names, _detokenize_verified(partner_id, info, keys, stored, list(tokens.items()),
                                                 "tokens must map field names to tokens.",
                                                 actor=gateway_actor(account_id)), strict=True))
    if consume:
        for name, token in cvv.items():  # the first authorization of the capture: the CVV, this once
            salt = item.get(CVV_SALT)
            scope = cvv_scope(info.scope, salt) if isinstance(salt, str) else info.scope  # pre-issue-27 items
            try:
                clear[name] = detokenize_value(keys.ff1_key, scope, _field(stored.template, name), token,
                                               issued_at=info.issued_at, now=now, bfid_version=info.version)
            except TokenError as exc:
                raise _engine_error(exc) from None
    return GatewayRead(tokens, clear)


def _use_refusal(scope: str, partner_id: str, account_id: str, custom_id: str | None, method: str | None,
                 now: float) -> None:
    """Why :func:`vaultcore.store.tokens.use_item`'s condition failed (one consistent read of the item)."""
    item = _live_item(scope, partner_id, now)
    if owner_of_item(item) not in (None, account_id):
        raise PolicyRefused("account")
    bound_custom_id = item.get("owner_custom_id", item.get("iframe_custom_id"))
    if custom_id is not None and bound_custom_id not in (None, custom_id):
        raise PolicyRefused("custom_id")
    bound_method = item.get("owner_method", item.get("iframe_method"))
    if method is not None and bound_method not in (None, method):
        exc = PolicyRefused("method")
        exc.method = str(bound_method)  # type: ignore[attr-defined]
        raise exc
    raise PolicyRefused("used")


def read_tokens_once(partner_id: str, bfid: str, read_id: str) -> dict[str, str]:
    """The partner's ``read`` (issue 21): the tokens stored under ``bfid``, once per bfid, within the read window.

    The bfid is verified (3010) and looked up in the revocation records (3017); then one conditional UpdateItem
    claims the item for this read (:func:`vaultcore.store.tokens.claim_partner_read`: ``read_id`` is the random id
    of this request, or the hash of the caller's ``Idempotency-Key`` (issue 28), so an SDK retry of the same
    write, and a retry of the request with the same key, succeed again and no other read does). A
    failed condition is resolved by reading the item back: claimed by another read 3018 (HTTP 409); kept but
    not for ``read`` (tokenized without ``omit``) 3019; absent, another partner's or past its window 3011.
    Independent of the gateway's read step (:func:`read_stored_tokens`) and of the gateway's own one-time read
    of an iframe eToken: each has its own attribute.
    """
    info, keys, stored = _verify(partner_id, bfid, revocation=True)
    now = clock.now()
    item = token_store.claim_partner_read(info.scope, partner_id, read_id, now)
    if item is None:
        item = token_store.get_token_item(info.scope)
        expires_at = item.get("expiresAt") if item is not None else None
        if (item is None or item.get("partnerId") != partner_id or not isinstance(expires_at, int | float)
                or expires_at <= now):
            raise TokenServiceError("Nothing is stored under this bfid, or its one-hour read window has passed.",
                                    code=READ_WINDOW)
        if item.get("partner_read_by") not in (None, read_id):
            raise TokenConflict("The tokens of this bfid were read already: read succeeds once per bfid.",
                                code=ALREADY_READ)
        if item.get("readable") is not True:
            raise TokenServiceError("The tokens of this bfid were not kept for read: tokenize with omit.",
                                    code=NOT_READABLE)
        raise TokenServiceError("Nothing is stored under this bfid, or its one-hour read window has passed.",
                                code=READ_WINDOW)  # the condition failed for a reason the item no longer shows
    _log.info("tokens read", extra={"partner_id": partner_id, "event": "read"})
    return {n: t for n, t in _vouched(keys, info, stored, item).items() if not is_cvv(n)}  # never a CVV's token


def delete_bfid(partner_id: str, bfid: str) -> dict[str, str]:
    """Delete ``bfid`` (issue 21): its revocation record, then its stored tokens. Idempotent: deleting a deleted
    bfid answers the same. The bfid must verify (3010); the revocation covers its scope, so every extension of
    it (the same tokenization) is deleted with it.

    "Query and delete", as the original answers it: the tokens the partner could still have read under the bfid
    (kept for ``read``, within the window, not bound to an account, not a once-only or consumed capture, never a
    CVV's: :func:`read_stored_tokens`'s policy), read just before the deletion; nothing otherwise. Deleting is
    never refused for a tokenization whose tokens are not answered."""
    info, keys, stored = _verify(partner_id, bfid, revocation=False)
    tokens = _tokens_before_delete(partner_id, info, keys, stored)
    token_store.revoke_scope(info.scope, partner_id, int(clock.now()))
    _not_revoked.invalidate(info.scope)
    _revoked.put(info.scope, True)
    _log.info("bfid deleted", extra={"partner_id": partner_id, "event": "delete"})
    return tokens


def _tokens_before_delete(partner_id: str, info: BfidInfo, keys: token_keys.TokenKeys, stored: StoredTemplate
                          ) -> dict[str, str]:
    """:func:`delete_bfid`'s answer: the tokens the use policy lets the partner's API see, or nothing."""
    try:
        check_sealed(keys.mac_key, info, PARTNER)
        if _revoked.get(info.scope):
            return {}
        item = _live_item(info.scope, partner_id, clock.now())
        check_clear(owner_of_item(item), PARTNER, [])
    except (TokenServiceError, TokenPermissionDenied):
        return {}  # sealed to an account, bound, or nothing live: deleted all the same, nothing answered
    if item.get("readable") is not True or item.get("uses") == "once" or item.get("gateway_read_by") is not None:
        return {}
    return {n: t for n, t in _vouched(keys, info, stored, item).items() if not is_cvv(n)}


def scope_owners(scopes: set[str]) -> tuple[set[str], dict[str, str | None]]:
    """The deleted scopes among ``scopes``, and the owner account (None: unbound) of each other one: a batch's one
    lookup of the scope records (BatchGetItem, 100 keys a call), cached like :func:`_check_revocation`'s."""
    deleted = {s for s in scopes if _revoked.get(s)}
    owners: dict[str, str | None] = {}
    unknown = set()
    for s in scopes - deleted:
        hit = _not_revoked.get(s)
        if hit is None:
            unknown.add(s)
        else:
            owners[s] = hit[0]
    found = token_store.scope_records_among(unknown) if unknown else {}
    for s in unknown:
        record = found.get(s, token_store.ScopeRecord())
        if record.revoked:
            _revoked.put(s, True)
            deleted.add(s)
        else:
            _not_revoked.put(s, (record.owner_account,))
            owners[s] = record.owner_account
    return deleted, owners


def revoked_scopes(scopes: set[str]) -> set[str]:
    """The deleted scopes among ``scopes`` (:func:`scope_owners`)."""
    return scope_owners(scopes)[0]
