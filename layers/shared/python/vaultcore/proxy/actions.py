"""The actions of a proxy configuration, run over a message: :class:`ActionRunner` (docs/integrators/proxy.md,
"Response actions", "Variables").

The request actions run over the partner's request before it is forwarded; the response actions run over the
target's answer (:mod:`vaultcore.proxy.response_actions` turns their failures into 8117/8118). Both phases share
one runner per exchange: the same paths, slots and tokenization, one bfid (issued by a request tokenize action,
extended or issued by a response one), the exchange variables, and the clear values to keep out of the log.

Below both :mod:`vaultcore.proxy.response_actions` and :mod:`vaultcore.proxy.service` (the exchange and the
dry run), which import it. A dry run (``simulate``) locates and reports but calls no tokenization or decryption.

The token service and the decryption stack are imported where they are called: the management API imports this
module for dry runs, which call neither (the proxy function imports them during init, functions/proxy/app.py).

:class:`ActionRunner` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass
costs 0.4-2 ms to create on python3.13; docs/design/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

from vaultcore.errors import AuthenticationFailed, DependencyError, VaultError
from vaultcore.plain import Mutable
from vaultcore.proxy import errors as E
from vaultcore.proxy.config import BOOLEAN_TEXT, ActionSpec, ProxyConfig, SubstitutionSpec
from vaultcore.proxy.transform import CompiledPath, Message, Slot, Splicer, locate, new_splicer

__all__ = ["ActionRunner", "VAULT_ID_HEADER", "VARIABLE_HEADER_PREFIX", "MAX_VAULT_ID"]

VAULT_ID_HEADER = "vault-id"
#: A variable holding a token is returned to the partner in ``vault-var-<name>``.
VARIABLE_HEADER_PREFIX = "vault-var-"
MAX_VAULT_ID = 1024


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
    """Indices grouped so that no field name repeats within a group (a tokenization maps name -> value)."""
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
    """A parser format's value as the substitution's dataType (docs/integrators/proxy.md: dataType)."""
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


def _required_error(missing: list[str], *, response: bool = False) -> E.ProxyError:
    names = ", ".join(missing)
    if response:
        return E.ProxyError(f"A required substitution matched nothing in the target's response: {names}.",
                            code=E.REQUIRED_UNMATCHED)
    return E.ProxyError(f"A required substitution matched nothing in the request: {names}. The request was not "
                        f"forwarded.", code=E.REQUIRED_UNMATCHED)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _upstream_error(exc: BaseException) -> bool:
    """A domain error of the token or parser service that is the caller's fault (not a 5xx, not auth)."""
    return (isinstance(exc, VaultError) and not isinstance(exc, AuthenticationFailed | DependencyError)
            and exc.status < 500)


# ---------------------------------------------------------------------------------------------------- actions


class _VariableSlot(Slot):
    """An exchange variable as a place (docs/integrators/proxy.md "Variables"): read like a header, written by the
    action. A parser substitution creates it; a tokenize substitution finds it only once set."""

    __slots__ = ("variables", "name", "value")

    def __init__(self, variables: dict[str, Any], name: str) -> None:
        self.variables, self.name = variables, name
        self.value = variables.get(name)

    def set(self, value: Any) -> None:
        self.variables[self.name] = value
        self.value = value


#: Tokenization codes after which a response tokenize gives up extending the request's vault-id and issues a new
#: bfid: not a bfid of this partner (3010), another template's (3014), no room for more token tags (3016).
_EXTEND_FALLBACK = frozenset({3010, 3014, 3016})


def _vault_id_header(headers: dict[str, str]) -> str | None:
    """The request's ``vault-id``, or None when absent or not even shaped like a bfid."""
    value = (headers.get(VAULT_ID_HEADER) or "").strip()
    if not value or len(value) > MAX_VAULT_ID or not value.isascii():
        return None
    return value


class ActionRunner(Mutable):
    """Runs a configuration's actions over a message: the request actions over the request, then the response
    actions over the target's response (:meth:`run_response`). ``simulate`` (dry run) locates and reports but
    calls no tokenization or decryption: values are replaced by placeholders.

    Fields (constructor order): ``sensitive``, the clear values to keep out of the log; ``vault_id_out``, the
    exchange's bfid: issued by the request tokenize action, extended or issued by the response tokenize action;
    returned in the vault-id response header; ``outcomes`` and ``response_outcomes``, each action's outcome;
    ``unmatched``, the substitutions that matched nothing, as "<action index>.<substitution index>" ("r<i>.<j>"
    for response actions): the vault-unmatched header and the log; ``variables``, the exchange variables,
    lower-case name -> value, never forwarded, never logged (only tokens are returned); ``token_variables``, the
    variables whose value is a token (last written by a tokenize action): returned as vault-var-<name>;
    ``response_clear_paths``, the places of the response where a response detokenize action wrote clear data
    (masked in the log)."""

    __slots__ = ("config", "partner_id", "request_headers", "simulate", "sensitive", "vault_id_out", "outcomes",
                 "response_outcomes", "unmatched", "variables", "token_variables", "response_clear_paths", "_card")
    _no_repr = frozenset({"variables"})
    config: ProxyConfig
    partner_id: str
    request_headers: dict[str, str]
    simulate: bool
    sensitive: list[str]
    vault_id_out: str | None
    outcomes: list[dict[str, Any]]
    response_outcomes: list[dict[str, Any]]
    unmatched: list[str]
    variables: dict[str, Any]
    token_variables: set[str]
    response_clear_paths: list[CompiledPath]
    _card: Any

    def __init__(self, config: ProxyConfig, partner_id: str, request_headers: dict[str, str], simulate: bool = False,
                 sensitive: list[str] | None = None, vault_id_out: str | None = None,
                 outcomes: list[dict[str, Any]] | None = None, response_outcomes: list[dict[str, Any]] | None = None,
                 unmatched: list[str] | None = None, variables: dict[str, Any] | None = None,
                 token_variables: set[str] | None = None, response_clear_paths: list[CompiledPath] | None = None,
                 _card: Any = None) -> None:
        self.config, self.partner_id, self.request_headers, self.simulate = config, partner_id, request_headers, simulate
        self.sensitive = [] if sensitive is None else sensitive
        self.vault_id_out = vault_id_out
        self.outcomes = [] if outcomes is None else outcomes
        self.response_outcomes = [] if response_outcomes is None else response_outcomes
        self.unmatched = [] if unmatched is None else unmatched
        self.variables = {} if variables is None else variables
        self.token_variables = set() if token_variables is None else token_variables
        self.response_clear_paths = [] if response_clear_paths is None else response_clear_paths
        self._card = _card

    def run(self, message: Message) -> None:
        try:
            if self.config.has_required:
                self._check_required(message)
            self._run(self.config.actions, message, self.outcomes)
        finally:
            message.settle()  # a query-string form view goes back into the query, also after a failure

    def run_response(self, message: Message) -> None:
        """The response actions over the target's response (a message without query string). Raises the same
        :class:`ProxyError` codes as the request phase; :mod:`vaultcore.proxy.response_actions` turns them into
        8117/8118."""
        self._run(self.config.response_actions, message, self.response_outcomes)

    def returned_variables(self) -> dict[str, str]:
        """``vault-var-<name>`` headers: the variables that hold a token (never a clear value)."""
        return {f"{VARIABLE_HEADER_PREFIX}{name}": _scalar(self.variables[name]) for name in sorted(self.token_variables)
                if self.variables.get(name) not in (None, "")}

    def _run(self, actions: tuple[ActionSpec, ...], message: Message, outcomes: list[dict[str, Any]]) -> None:
        for action in actions:
            located, splicer = self._locate(action, message)
            outcome: dict[str, Any] = {
                "action": action.index, "type": action.label,
                "substitutions": [{**sub.path.describe(), "matches": len(slots), **({"required": True}
                                                                                   if sub.required else {})}
                                  for sub, slots in located],
            }
            outcomes.append(outcome)
            missing: list[str] = []
            for n, (sub, slots) in enumerate(located):
                if not slots:
                    self.unmatched.append(action.unmatched_label(n))
                    if sub.required:
                        missing.append(f"{action.where}.substitutions[{n}]")
            if missing:  # an earlier action changed the message so that a required place is gone
                raise _required_error(missing, response=action.phase == "response")
            count = sum(len(slots) for _sub, slots in located)
            if action.type == "parser":
                outcome["result"] = self._parser(action, located, count)
            else:
                outcome["result"] = self._tokenization(action, located, outcome)
            if splicer is not None:
                splicer.commit()
            message.settle()

    def _check_required(self, message: Message) -> None:
        """Refuse with 8115, before any action runs (no bfid issued, nothing decrypted, nothing forwarded), when
        a ``required`` substitution matches nothing in the request as received. Variables are set by actions, so
        they are not part of this check (and cannot be ``required``)."""
        unmatched: list[str] = []
        missing: list[str] = []
        for action in self.config.actions:
            located, _splicer = self._locate(action, message)  # locating writes nothing; the splicer is dropped
            for n, (sub, slots) in enumerate(located):
                if not slots and sub.path.source != "variable":
                    unmatched.append(action.unmatched_label(n))
                    if sub.required:
                        missing.append(f"{action.where}.substitutions[{n}]")
        message.settle()  # drop a query-string view built while locating (nothing was written)
        if missing:
            self.unmatched = unmatched
            raise _required_error(missing)

    def _locate(self, action: ActionSpec, message: Message) -> tuple[list[tuple[SubstitutionSpec, list[Slot]]],
                                                                      Splicer | None]:
        splicer = None
        if any(s.path.type == "regex" for s in action.substitutions) and message.addressed_body().kind != "none":
            splicer = new_splicer(message)
        located: list[tuple[SubstitutionSpec, list[Slot]]] = []
        for sub in action.substitutions:
            if sub.path.source == "variable":
                name = sub.path.key or ""
                present = action.type == "parser" or name in self.variables  # a parser creates its variable
                located.append((sub, [_VariableSlot(self.variables, name)] if present else []))
            else:
                located.append((sub, locate(message, sub.path, strict=True, splicer=splicer)))
        return located, splicer

    def _tokenization(self, action: ActionSpec, located: list[tuple[SubstitutionSpec, list[Slot]]],
                      outcome: dict[str, Any]) -> str:
        items: list[tuple[SubstitutionSpec, Slot, str]] = []
        for n, (sub, slots) in enumerate(located):
            for slot in slots:
                text = _token_input(sub, slot, f"{action.where}.substitutions[{n}]")
                if text is not None:
                    items.append((sub, slot, text))
        if not items:
            return "skipped: no value at the configured paths"
        tokenize = action.method == "tokenize"
        response = action.phase == "response"
        if tokenize:
            # Registered before the call: if tokenization fails, the log still masks these clear values.
            self.sensitive.extend(text for _s, _slot, text in items)
        if self.simulate:
            for sub, slot, _text in items:
                slot.set(f"{{{{{'token' if tokenize else 'clear'}:{sub.field_name}}}}}")
                self._track(sub, tokenize)
            if tokenize:
                self.vault_id_out = self.vault_id_out or "{{vault-id}}"
                where = self._tokenize_bfid_plan(action)
            else:
                where = ("with the bfid this exchange issued, else the request's vault-id" if response
                         else "with the request's vault-id")
            return f"would {action.method} {len(items)} value(s) with template {action.template_ref} {where}"
        names = [sub.field_name or "" for sub, _slot, _text in items]
        inputs = [text for _sub, _slot, text in items]
        if tokenize:
            results = self._tokenize(action, names, inputs, outcome)
        else:
            results = self._detokenize(action, names, inputs)
            self.sensitive.extend(results)
            if response:
                self.response_clear_paths.extend(sub.path for sub, slots in located if slots)
        for (sub, slot, _text), new in zip(items, results, strict=True):
            slot.set(_typed_like(slot.value, new))
            self._track(sub, tokenize)
        return f"{action.method}d {len(items)} value(s)"

    def _track(self, sub: SubstitutionSpec, tokenize: bool) -> None:
        if sub.path.source == "variable":
            if tokenize:
                self.token_variables.add(sub.path.key or "")
            else:
                self.token_variables.discard(sub.path.key or "")

    def _tokenize_bfid_plan(self, action: ActionSpec) -> str:
        if action.phase != "response":
            return "under a new bfid (vault-id response header)"
        plan = ("under the request's vault-id when it verifies for this templateRef (extended), else under a new "
                "bfid (vault-id response header)")
        if any(a.method == "tokenize" for a in self.config.actions):
            return f"under the bfid the request's tokenize action issued (extended); if it found nothing, {plan}"
        return plan

    def _tokenize(self, action: ActionSpec, names: list[str], inputs: list[str], outcome: dict[str, Any]) -> list[str]:
        """Tokens for ``inputs`` (docs/integrators/proxy.md "Response actions" for the bfid of a response action):

        * request action: a new bfid;
        * response action: the bfid the request's tokenize action issued in this exchange, extended; else the
          request's ``vault-id`` when it verifies for the partner and names this templateRef, extended (a value
          the target echoes gets back the very token the caller sent); else a new bfid.
        """
        start: str | None = None
        fallback = False
        if action.phase == "response":
            if self.vault_id_out:
                start, outcome["bfid"] = self.vault_id_out, "extended: issued by the request's tokenize action"
            else:
                start = _vault_id_header(self.request_headers)
                fallback = start is not None
                if fallback:
                    outcome["bfid"] = "extended: the request's vault-id"
        try:
            try:
                return self._tokenize_rounds(action, names, inputs, start)
            except VaultError as exc:
                if not (fallback and exc.code in _EXTEND_FALLBACK):
                    raise
                outcome["bfid"] = f"new: the request's vault-id could not be extended (code {exc.code})"
                return self._tokenize_rounds(action, names, inputs, None)
        except VaultError as exc:
            if _upstream_error(exc):
                raise _wrap_token_error(exc) from None
            raise
        finally:
            outcome.setdefault("bfid", "new")

    def _tokenize_rounds(self, action: ActionSpec, names: list[str], inputs: list[str], bfid: str | None) -> list[str]:
        """One tokenization call per round (a field name at most once per call); every round after the first,
        and every round under a given bfid, extends the bfid. Only a new bfid's tokens are stored for the read
        step (an extension must not overwrite the stored tokens of the bfid it extends)."""
        from vaultcore.tokens.service import tokenize_values

        results: list[str] = [""] * len(names)
        store = bfid is None
        for group in _rounds(names):
            result = tokenize_values(self.partner_id, action.template_ref or "",
                                     [(names[i], inputs[i]) for i in group], bfid=bfid, store=store)
            store = False
            bfid = result.bfid
            for i in group:
                results[i] = result.values[names[i]]
        self.vault_id_out = bfid
        return results

    def _detokenize(self, action: ActionSpec, names: list[str], tokens: list[str]) -> list[str]:
        """Clear values with the request's ``vault-id`` (a response action: the bfid this exchange issued, else the
        request's ``vault-id``): one batch call for all the action's tokens, whatever their fields (the bfid
        verified once, every token checked before any clear value is made)."""
        from vaultcore.tokens.policy import PROXY
        from vaultcore.tokens.service import detokenize_pairs

        if action.phase == "response" and self.vault_id_out:
            vault_id = self.vault_id_out
        else:
            vault_id = (self.request_headers.get(VAULT_ID_HEADER) or "").strip()
            if not vault_id:
                raise E.ProxyError("The vault-id header is required: the detokenize action found tokens.",
                                   code=E.VAULT_ID_INVALID)
            if len(vault_id) > MAX_VAULT_ID or not vault_id.isascii():
                raise E.ProxyError("The vault-id header is not valid.", code=E.VAULT_ID_INVALID)
        try:
            return detokenize_pairs(self.partner_id, vault_id, list(zip(names, tokens, strict=True)), actor=PROXY)
        except VaultError as exc:
            if _upstream_error(exc):
                raise _wrap_token_error(exc) from None
            raise

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
                    self._track(sub, False)
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
                self._track(sub, False)
        return f"decrypted and wrote {count} value(s)"
