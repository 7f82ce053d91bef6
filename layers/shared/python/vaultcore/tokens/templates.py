"""Tokenization templates: which fields a partner tokenizes, and how.

A template (``templateRef``, optional ``name``, ``fields``) lists fields; each field has

* ``name``: the system name sent in tokenization requests (for example ``vault_token_card_number``);
* ``type``: ``card``, ``date``, ``phone``, ``address``, ``email``, ``bank``, ``routing``, ``tax`` or ``field``;
* ``format``: the characters kept in clear, counted over the characters of the alphabet only (separators do not
  count): ``NONE``, ``LAST_FOUR``, ``FIRST_SIX``, ``FIRST_SIX_LAST_FOUR``, ``FIRST_TWO_LAST_FOUR``;
* ``alphabet``: ``CARD10`` or ``CARD62``; default ``CARD10`` for card, date, bank, routing, tax and phone,
  ``CARD62`` for email, address and field;
* ``irreversible``: the token is a keyed one-way mapping and can never be detokenized;
* ``active``: ``{from?, to?}``, ISO-8601 durations after tokenization (the bfid's issue time) outside which
  detokenization is refused; ``from`` inclusive, ``to`` exclusive;
* ``minLength`` / ``maxLength``: the allowed length of the value and of its token (tokens keep the length of the
  value); defaults per type in :data:`DEFAULT_LENGTHS`;
* ``luhnValidTokens`` (issue 27; ``card`` fields that hold a card number only, default false): card-number tokens
  fail the Luhn check, so that a DLP scan tells a token from a PAN (PCI SSC tokenization guidelines); ``true`` asks
  for Luhn-valid tokens where a downstream system insists. Either way a token keeps the value's format, BIN and
  last four (:mod:`vaultcore.tokens.engine`, "Card numbers").

Characters outside the alphabet: for ``email``, ``address`` and ``field`` every printable character outside the
alphabet passes through unchanged (``@``, ``.``, ``-``, spaces, accented letters); the other types accept only the
separators of :data:`SEPARATORS` (a letter in a ``CARD10`` card number is an error, not a clear character).

Domain rule checked on creation: at the field's minimum length the format must leave at least
:data:`MIN_TOKEN_DOMAIN` possible values to encrypt (two ``CARD10`` digits or two ``CARD62`` characters). Values
whose encrypted part has fewer than FF1's one million values (NIST SP 800-38G Rev. 1 section 5.2) are enciphered by
the prefix cipher (a keyed permutation of exactly that domain) or by FF1 on a domain of exactly one million
restricted by cycle walking (see :mod:`vaultcore.tokens.engine`), so tokens keep the value's length and FF1 never
runs below its minimum domain.

The built-in template :data:`GATEWAY_TEMPLATE` (``templateRef`` ``GATEWAY``) carries the gateway's token fields with
the lengths of the token parameter table of ``spec/interface.md``; it is what auto-tokenization uses.

:class:`IsoDuration`, :class:`ActiveWindow`, :class:`TemplateField`, :class:`Template` are written by hand for a
measured cold start reason (:mod:`vaultcore.plain`: a dataclass costs 0.4-2 ms to create on python3.13, and
importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import secrets
import string
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Literal, cast

from vaultcore.api.values import json_integer
from vaultcore.lazy_re import lazy
from vaultcore.plain import Frozen, init
from vaultcore.tokens.alphabets import ALPHABETS, Alphabet

__all__ = [
    "TemplateError",
    "FieldType",
    "TokenFormat",
    "CLEAR_CHARACTERS",
    "DEFAULT_ALPHABET",
    "DEFAULT_LENGTHS",
    "SEPARATORS",
    "FREE_TEXT_TYPES",
    "MIN_TOKEN_DOMAIN",
    "MAX_FIELD_LENGTH",
    "MAX_FIELDS",
    "IsoDuration",
    "parse_iso8601_duration",
    "ActiveWindow",
    "TemplateField",
    "Template",
    "GATEWAY_TEMPLATE_REF",
    "GATEWAY_TEMPLATE",
    "BUILTIN_TEMPLATES",
    "generate_template_ref",
]


class TemplateError(ValueError):
    """A template or template field is invalid; the message names the member and the rule broken."""


class FieldType(StrEnum):
    CARD = "card"
    DATE = "date"
    PHONE = "phone"
    ADDRESS = "address"
    EMAIL = "email"
    BANK = "bank"
    ROUTING = "routing"
    TAX = "tax"
    FIELD = "field"


class TokenFormat(StrEnum):
    NONE = "NONE"
    LAST_FOUR = "LAST_FOUR"
    FIRST_SIX = "FIRST_SIX"
    FIRST_SIX_LAST_FOUR = "FIRST_SIX_LAST_FOUR"
    FIRST_TWO_LAST_FOUR = "FIRST_TWO_LAST_FOUR"


#: (leading, trailing) alphabet characters each format keeps in clear.
CLEAR_CHARACTERS: dict[TokenFormat, tuple[int, int]] = {
    TokenFormat.NONE: (0, 0),
    TokenFormat.LAST_FOUR: (0, 4),
    TokenFormat.FIRST_SIX: (6, 0),
    TokenFormat.FIRST_SIX_LAST_FOUR: (6, 4),
    TokenFormat.FIRST_TWO_LAST_FOUR: (2, 4),
}

DEFAULT_ALPHABET: dict[FieldType, str] = {
    FieldType.CARD: "CARD10",
    FieldType.DATE: "CARD10",
    FieldType.BANK: "CARD10",
    FieldType.ROUTING: "CARD10",
    FieldType.TAX: "CARD10",
    FieldType.PHONE: "CARD10",
    FieldType.EMAIL: "CARD62",
    FieldType.ADDRESS: "CARD62",
    FieldType.FIELD: "CARD62",
}

#: Default (minLength, maxLength) per type, used when a field gives none.
DEFAULT_LENGTHS: dict[FieldType, tuple[int, int]] = {
    FieldType.CARD: (12, 19),  # ISO/IEC 7812 PANs in use
    FieldType.DATE: (4, 10),  # MMYY up to YYYY-MM-DD
    FieldType.PHONE: (2, 20),
    FieldType.ADDRESS: (2, 100),
    FieldType.EMAIL: (5, 100),
    FieldType.BANK: (4, 17),
    FieldType.ROUTING: (9, 9),
    FieldType.TAX: (9, 11),  # 123456789 or 123-45-6789
    FieldType.FIELD: (2, 100),
}

#: Types whose values are free text: every printable character outside the alphabet passes through.
FREE_TEXT_TYPES = frozenset({FieldType.EMAIL, FieldType.ADDRESS, FieldType.FIELD})

#: Separators the structured types accept (and pass through); anything else outside the alphabet is an error.
SEPARATORS: dict[FieldType, frozenset[str]] = {
    FieldType.CARD: frozenset(" -"),
    FieldType.BANK: frozenset(" -"),
    FieldType.ROUTING: frozenset(" -"),
    FieldType.TAX: frozenset(" -"),
    FieldType.DATE: frozenset(" -/."),
    FieldType.PHONE: frozenset(" -+()."),
}

#: Fewest possible values the encrypted part of a value may have (radix ** characters to encrypt). Below FF1's
#: one million the engine uses the prefix cipher (cost linear in the domain) or cycle-walks FF1 (1e6 / domain calls).
MIN_TOKEN_DOMAIN = 100
MAX_FIELD_LENGTH = 256
MAX_FIELDS = 64
_TEMPLATE_REF = lazy(r"[A-Za-z0-9]{1,32}")
_FIELD_NAME = lazy(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_MAX_NAME = 100


# --------------------------------------------------------------------------------------------------- durations

_DURATION = lazy(
    r"P(?:(?P<Y>\d{1,9})Y)?(?:(?P<M>\d{1,9})M)?(?:(?P<W>\d{1,9})W)?(?:(?P<D>\d{1,9})D)?"
    r"(?:T(?:(?P<h>\d{1,9})H)?(?:(?P<m>\d{1,9})M)?(?:(?P<s>\d{1,9}(?:[.,]\d{1,6})?)S)?)?"
)
_MAX_DURATION_DAYS = 100 * 366  # a century: anything longer is a typo, and keeps datetime arithmetic in range


class IsoDuration(Frozen):
    """An ISO-8601 duration: calendar ``months`` (years count 12) plus exact ``seconds`` (weeks, days, h, m, s).

    Months are calendar months (added to the date, the day clamped to the month's end); days are 86,400 s
    (instants are UTC, so there are no daylight-saving days).
    """

    __slots__ = ("text", "months", "seconds")
    text: str
    months: int
    seconds: float

    def __init__(self, text: str, months: int, seconds: float) -> None:
        init(self, text=text, months=months, seconds=seconds)

    def after(self, instant: float) -> float:
        """The unix time ``instant`` plus this duration."""
        dt = datetime.fromtimestamp(instant, UTC)
        if self.months:
            import calendar  # lazy: only a window in months needs it, and it imports locale (cold start)

            year, month0 = divmod(dt.month - 1 + self.months, 12)
            year += dt.year
            day = min(dt.day, calendar.monthrange(year, month0 + 1)[1])
            dt = dt.replace(year=year, month=month0 + 1, day=day)
        return (dt + timedelta(seconds=self.seconds)).timestamp()

    def approx_seconds(self) -> float:
        """Length with a mean Gregorian month (30.436875 days): only for ordering checks."""
        return self.months * 30.436875 * 86400 + self.seconds


def parse_iso8601_duration(text: str) -> IsoDuration:
    """Parse ``PnYnMnWnDTnHnMnS`` (each part optional, at least one present; a fraction only on seconds).

    >>> parse_iso8601_duration("P1DT12H").seconds
    129600.0
    >>> parse_iso8601_duration("P1Y2M").months
    14
    """
    if not isinstance(text, str):
        raise TemplateError("duration must be an ISO-8601 duration string such as P30D or PT1H")
    m = _DURATION.fullmatch(text)
    if m is None or text in ("P", "PT") or text.endswith("T"):
        raise TemplateError(f"{text[:40]!r} is not an ISO-8601 duration (expected e.g. P30D, PT1H, P1Y2M, PT0.5S)")
    parts = {k: v for k, v in m.groupdict().items() if v is not None}
    months = int(parts.get("Y", 0)) * 12 + int(parts.get("M", 0))
    seconds = (
        (int(parts.get("W", 0)) * 7 + int(parts.get("D", 0))) * 86400
        + int(parts.get("h", 0)) * 3600
        + int(parts.get("m", 0)) * 60
        + float(parts.get("s", "0").replace(",", "."))
    )
    duration = IsoDuration(text, months, seconds)
    if duration.approx_seconds() > _MAX_DURATION_DAYS * 86400:
        raise TemplateError(f"duration {text} is longer than 100 years")
    return duration


class ActiveWindow(Frozen):
    """Detokenization window: from ``start`` (inclusive) to ``end`` (exclusive) after tokenization."""

    __slots__ = ("start", "end")
    start: IsoDuration | None
    end: IsoDuration | None

    def __init__(self, start: IsoDuration | None = None, end: IsoDuration | None = None) -> None:
        init(self, start=start, end=end)
        self.__post_init__()

    def __post_init__(self) -> None:
        if self.start is None and self.end is None:
            raise TemplateError("active window needs 'from', 'to' or both")
        if self.start is not None and self.end is not None and self.start.approx_seconds() >= self.end.approx_seconds():
            raise TemplateError(f"active window 'from' ({self.start.text}) must be before 'to' ({self.end.text})")

    def state(self, issued_at: float, now: float) -> Literal["pending", "active", "expired"]:
        """Where ``now`` falls relative to the window of a token issued at ``issued_at`` (unix seconds)."""
        if self.start is not None and now < self.start.after(issued_at):
            return "pending"
        if self.end is not None and now >= self.end.after(issued_at):
            return "expired"
        return "active"

    def to_dict(self) -> dict[str, str]:
        out = {}
        if self.start is not None:
            out["from"] = self.start.text
        if self.end is not None:
            out["to"] = self.end.text
        return out

    @classmethod
    def from_dict(cls, data: Any) -> ActiveWindow:
        if not isinstance(data, Mapping):
            raise TemplateError("active must be an object with 'from' and/or 'to' (ISO-8601 durations)")
        unknown = sorted(set(data) - {"from", "to"})
        if unknown:
            raise TemplateError(f"active: unknown member {unknown[0]!r} (expected 'from', 'to')")
        start = _duration_member(data, "from")
        end = _duration_member(data, "to")
        return cls(start, end)


def _duration_member(data: Mapping[str, Any], key: str) -> IsoDuration | None:
    value = data.get(key)
    if value is None:
        return None
    try:
        return parse_iso8601_duration(value)
    except TemplateError as exc:
        raise TemplateError(f"active.{key}: {exc}") from None


# ------------------------------------------------------------------------------------------------------ fields


class TemplateField(Frozen):
    """One field of a template; construction validates it and fills the per-type defaults."""

    __slots__ = ("name", "type", "format", "alphabet", "irreversible", "active", "min_length", "max_length",
                 "luhn_valid_tokens", "_alphabet")
    _no_repr = _no_compare = frozenset({"_alphabet"})
    name: str
    type: FieldType
    format: TokenFormat
    alphabet: str | None
    irreversible: bool
    active: ActiveWindow | None
    min_length: int | None
    max_length: int | None
    luhn_valid_tokens: bool
    _alphabet: Alphabet

    def __init__(self, name: str, type: FieldType, format: TokenFormat = TokenFormat.NONE, alphabet: str | None = None,
                 irreversible: bool = False, active: ActiveWindow | None = None, min_length: int | None = None,
                 max_length: int | None = None, luhn_valid_tokens: bool = False) -> None:
        init(self, name=name, type=type, format=format, alphabet=alphabet, irreversible=irreversible, active=active,
             min_length=min_length, max_length=max_length, luhn_valid_tokens=luhn_valid_tokens)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _FIELD_NAME.fullmatch(self.name):
            raise TemplateError(
                "field name must start with a letter and contain only letters, digits and '_' (at most 64 characters)"
            )
        where = f"field {self.name!r}"
        try:
            object.__setattr__(self, "type", FieldType(self.type))
        except ValueError:
            raise TemplateError(f"{where}: unknown type {self.type!r} (expected one of {_names(FieldType)})") from None
        try:
            object.__setattr__(self, "format", TokenFormat(self.format))
        except ValueError:
            raise TemplateError(
                f"{where}: unknown format {self.format!r} (expected one of {_names(TokenFormat)})"
            ) from None
        alphabet = self.alphabet if self.alphabet is not None else DEFAULT_ALPHABET[self.type]
        if alphabet not in ALPHABETS:
            raise TemplateError(f"{where}: unknown alphabet {alphabet!r} (expected one of {', '.join(ALPHABETS)})")
        object.__setattr__(self, "alphabet", alphabet)
        object.__setattr__(self, "_alphabet", ALPHABETS[alphabet])
        if not isinstance(self.irreversible, bool):
            raise TemplateError(f"{where}: irreversible must be true or false")
        if not isinstance(self.luhn_valid_tokens, bool):
            raise TemplateError(f"{where}: luhnValidTokens must be true or false")
        if self.active is not None and not isinstance(self.active, ActiveWindow):
            raise TemplateError(f"{where}: active must be an ActiveWindow")
        lo_default, hi_default = DEFAULT_LENGTHS[self.type]
        lo = lo_default if self.min_length is None else self.min_length
        hi = hi_default if self.max_length is None else self.max_length
        bounds: list[int] = []
        for label, n in (("minLength", lo), ("maxLength", hi)):
            value = json_integer(n)
            if value is None or not 1 <= value <= MAX_FIELD_LENGTH:
                raise TemplateError(f"{where}: {label} must be an integer from 1 to {MAX_FIELD_LENGTH}")
            bounds.append(value)
        lo, hi = bounds
        if lo > hi:
            raise TemplateError(f"{where}: minLength {lo} is greater than maxLength {hi}")
        object.__setattr__(self, "min_length", lo)
        object.__setattr__(self, "max_length", hi)
        head, tail = CLEAR_CHARACTERS[self.format]
        left = lo - head - tail
        radix = self._alphabet.radix
        need = _min_chars(radix)
        if left < need:
            raise TemplateError(
                f"{where}: format {self.format} keeps {head + tail} characters in clear, so a value of the minimum "
                f"length {lo} leaves {max(left, 0)} {alphabet} characters to encrypt; at least {need} are needed "
                f"(at least {MIN_TOKEN_DOMAIN} possible values). Raise minLength to {head + tail + need} or choose "
                f"a format that keeps fewer characters"
            )
        if self.luhn_valid_tokens and not self.card_number:
            raise TemplateError(f"{where}: luhnValidTokens applies to card number fields only (type card, "
                                f"alphabet CARD10, maxLength 12 or more)")

    @property
    def card_number(self) -> bool:
        """Whether the field holds card numbers (type ``card``, ``CARD10``, ``maxLength`` of 12 or more: the rule of
        :mod:`vaultcore.tokens.validation`); their tokens follow the Luhn rule of the engine."""
        return self.type == FieldType.CARD and self.alphabet == "CARD10" and (self.max_length or 0) >= 12

    @property
    def charset(self) -> Alphabet:
        """The :class:`~vaultcore.tokens.alphabets.Alphabet` of this field."""
        return self._alphabet

    @property
    def length_range(self) -> tuple[int, int]:
        """(minLength, maxLength) after defaults: always integers once constructed."""
        return cast(int, self.min_length), cast(int, self.max_length)

    @property
    def clear_characters(self) -> tuple[int, int]:
        """(leading, trailing) alphabet characters kept in clear."""
        return CLEAR_CHARACTERS[self.format]

    @property
    def free_text(self) -> bool:
        return self.type in FREE_TEXT_TYPES

    @property
    def separators(self) -> frozenset[str]:
        return SEPARATORS.get(self.type, frozenset())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "type": str(self.type),
            "format": str(self.format),
            "alphabet": self.alphabet,
            "irreversible": self.irreversible,
            "minLength": self.min_length,
            "maxLength": self.max_length,
        }
        if self.active is not None:
            out["active"] = self.active.to_dict()
        if self.luhn_valid_tokens:  # stored templates of before issue 27 keep their exact form
            out["luhnValidTokens"] = True
        return out

    @classmethod
    def from_dict(cls, data: Any) -> TemplateField:
        if not isinstance(data, Mapping):
            raise TemplateError("a field must be an object")
        unknown = sorted(set(data) - _FIELD_KEYS)
        if unknown:
            raise TemplateError(f"unknown member {unknown[0]!r} (expected {', '.join(sorted(_FIELD_KEYS))})")
        for key in ("name", "type", "format"):
            if key not in data:
                raise TemplateError(f"member {key!r} is required")
            if not isinstance(data[key], str):
                raise TemplateError(f"member {key!r} must be a string")
        alphabet = data.get("alphabet")
        if alphabet is not None and not isinstance(alphabet, str):
            raise TemplateError("member 'alphabet' must be a string")
        active = data.get("active")
        return cls(
            name=data["name"],
            type=data["type"],  # type: ignore[arg-type]  # validated into FieldType by __post_init__
            format=data["format"],  # type: ignore[arg-type]
            alphabet=alphabet,
            irreversible=data.get("irreversible", False),
            active=None if active is None else ActiveWindow.from_dict(active),
            min_length=data.get("minLength"),
            max_length=data.get("maxLength"),
            luhn_valid_tokens=data.get("luhnValidTokens", False),
        )


_FIELD_KEYS = frozenset({"name", "type", "format", "alphabet", "irreversible", "active", "minLength", "maxLength",
                         "luhnValidTokens"})


def _min_chars(radix: int) -> int:
    n, size = 1, radix
    while size < MIN_TOKEN_DOMAIN:
        n += 1
        size *= radix
    return n


#: A template's ``accessMode`` values (:attr:`Template.access_mode`).
ACCESS_MODES = ("tokenize", "detokenize")


def _names(enum: type[StrEnum]) -> str:
    return ", ".join(str(e) for e in enum)


# --------------------------------------------------------------------------------------------------- templates


class Template(Frozen):
    """A validated template. ``fields`` keep their order; names are unique."""

    __slots__ = ("template_ref", "fields", "name", "access_mode", "_by_name")
    _no_repr = _no_compare = frozenset({"_by_name"})
    template_ref: str
    fields: tuple[TemplateField, ...]
    name: str | None
    #: Who may detokenize through the secure API's detokenize endpoints (issue 21): ``tokenize`` (the default:
    #: clear values leave only through the proxy and the gateway) or ``detokenize`` (partners holding the
    #: detokenize permission may also reveal them). The template's latest version decides, for every bfid of it.
    access_mode: str
    _by_name: dict[str, TemplateField]

    def __init__(self, template_ref: str, fields: tuple[TemplateField, ...], name: str | None = None,
                 access_mode: str = "tokenize") -> None:
        init(self, template_ref=template_ref, fields=fields, name=name, access_mode=access_mode)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.template_ref, str) or not _TEMPLATE_REF.fullmatch(self.template_ref):
            raise TemplateError("templateRef must be 1 to 32 letters and digits")
        if self.name is not None and (not isinstance(self.name, str) or len(self.name) > _MAX_NAME):
            raise TemplateError(f"name must be a string of at most {_MAX_NAME} characters")
        if self.access_mode not in ACCESS_MODES:
            raise TemplateError("accessMode must be 'tokenize' or 'detokenize'")
        fields = tuple(self.fields)
        if not 1 <= len(fields) <= MAX_FIELDS:
            raise TemplateError(f"a template needs 1 to {MAX_FIELDS} fields")
        by_name: dict[str, TemplateField] = {}
        for i, f in enumerate(fields):
            if not isinstance(f, TemplateField):
                raise TemplateError(f"fields[{i}] must be a TemplateField")
            if f.name in by_name:
                raise TemplateError(f"fields[{i}]: duplicate field name {f.name!r}")
            by_name[f.name] = f
        object.__setattr__(self, "fields", fields)
        object.__setattr__(self, "_by_name", by_name)

    def get_field(self, name: str) -> TemplateField:
        """The field called ``name``; :class:`TemplateError` when the template has none."""
        try:
            return self._by_name[name]
        except (KeyError, TypeError):
            raise TemplateError(f"template {self.template_ref} has no field {str(name)[:64]!r}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"templateRef": self.template_ref, "fields": [f.to_dict() for f in self.fields]}
        if self.name is not None:
            out["name"] = self.name
        if self.access_mode != "tokenize":  # stored templates of before issue 21 keep their exact form
            out["accessMode"] = self.access_mode
        return out

    @property
    def detokenizable(self) -> bool:
        """Whether the secure API's detokenize endpoints may reveal this template's values (``accessMode``)."""
        return self.access_mode == "detokenize"

    @classmethod
    def from_dict(cls, data: Any, *, template_ref: str | None = None) -> Template:
        """Build from stored or request JSON; ``template_ref`` fills a missing ``templateRef`` (new templates)."""
        if not isinstance(data, Mapping):
            raise TemplateError("a template must be an object")
        unknown = sorted(set(data) - {"templateRef", "name", "fields", "accessMode"})
        if unknown:
            raise TemplateError(f"unknown member {unknown[0]!r} (expected fields, name, templateRef, accessMode)")
        access_mode = data.get("accessMode", "tokenize")
        if not isinstance(access_mode, str) or access_mode not in ACCESS_MODES:
            raise TemplateError("accessMode must be 'tokenize' or 'detokenize'")
        ref = data.get("templateRef", template_ref)
        if ref is None:
            raise TemplateError("templateRef is required")
        raw_fields = data.get("fields")
        if not isinstance(raw_fields, list) or not raw_fields:
            raise TemplateError("fields must be a non-empty array")
        if len(raw_fields) > MAX_FIELDS:
            raise TemplateError(f"a template needs 1 to {MAX_FIELDS} fields")
        fields = []
        for i, raw in enumerate(raw_fields):
            try:
                fields.append(TemplateField.from_dict(raw))
            except TemplateError as exc:
                raise TemplateError(f"fields[{i}]: {exc}") from None
        return cls(template_ref=ref, fields=tuple(fields), name=data.get("name"), access_mode=access_mode)


def generate_template_ref() -> str:
    """A new random templateRef: 'T' and 19 letters or digits (about 113 bits)."""
    chars = string.ascii_letters + string.digits
    return "T" + "".join(secrets.choice(chars) for _ in range(19))


# ---------------------------------------------------------------------------------------- built-in template

GATEWAY_TEMPLATE_REF = "GATEWAY"

#: The gateway's token fields with the lengths of the token parameter table (spec/interface.md, Token fields).
#: Choices: the card number keeps its BIN and last four (FIRST_SIX_LAST_FOUR, the PCI DSS display maximum), so
#: receipts and routing work on tokens; every other field encrypts all its alphabet characters. All are reversible
#: because the gateway detokenizes every vault_token_* parameter it accepts (token payment rule 1). Fields shorter
#: than FF1's minimum domain (expiration, CVV, short names, zip) use the engine's small-domain constructions: tokens
#: keep the value's length.
GATEWAY_TEMPLATE = Template(
    template_ref=GATEWAY_TEMPLATE_REF,
    name="Gateway auto-tokenization",
    fields=(
        TemplateField(
            "vault_token_card_number", FieldType.CARD, TokenFormat.FIRST_SIX_LAST_FOUR, min_length=14, max_length=19
        ),
        TemplateField("vault_token_card_expiration", FieldType.DATE, min_length=4, max_length=4),
        TemplateField("vault_token_card_verification", FieldType.CARD, min_length=3, max_length=4),
        TemplateField("vault_token_bank_account_number", FieldType.BANK, min_length=4, max_length=17),
        TemplateField("vault_token_bank_routing_number", FieldType.ROUTING, min_length=9, max_length=9),
        TemplateField("vault_token_email", FieldType.EMAIL, min_length=5, max_length=100),
        TemplateField("vault_token_first_name", FieldType.FIELD, min_length=2, max_length=50),
        TemplateField("vault_token_last_name", FieldType.FIELD, min_length=2, max_length=50),
        TemplateField("vault_token_phone", FieldType.PHONE, min_length=2, max_length=20),
        TemplateField("vault_token_street_address1", FieldType.ADDRESS, min_length=2, max_length=100),
        TemplateField("vault_token_zip", FieldType.ADDRESS, min_length=3, max_length=10),
    ),
)

BUILTIN_TEMPLATES: dict[str, Template] = {GATEWAY_TEMPLATE_REF: GATEWAY_TEMPLATE}
