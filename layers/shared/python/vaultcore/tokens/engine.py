"""Vaultless, format-preserving tokens of one field value (NIST SP 800-38G FF1 with AES-256; the prefix cipher
for domains below FF1's minimum).

Layout of a token
    The value's characters are classified: characters of the field's alphabet are *numerals*; the format keeps
    its leading/trailing numerals in clear (``FIRST_SIX_LAST_FOUR`` keeps numerals 1-6 and the last 4; separators
    do not count); the remaining numerals, the *middle*, are enciphered and written back at their own positions;
    characters outside the alphabet (``@``, ``.``, ``-``, spaces) stay where they are. A token therefore has the
    value's length and shape: numeric stays numeric, an e-mail keeps its ``@`` and dots.

Tweak (SP 800-38G section 4.3: the tweak need not be secret)
    ``T = SHA-256(UTF-8(bfid) || 0x00 || UTF-8(field name))[:16]``. 16 bytes keep T in one AES block of FF1's Q
    (cheap) and still make tweak collisions between distinct (bfid, field) pairs a 2**-64 birthday event. The
    bfid is unique per tokenization (128 random bits) and names the key version and template, so one value gives
    the same token in the same field under one bfid and unrelated tokens under another bfid or field. The
    ``bfid`` argument of this module is the bfid's scope (:attr:`vaultcore.tokens.bfid.BfidInfo.scope`): the
    bfid text for a version-1 bfid, its core (the bfid without token tags and MAC) for versions 2 and 3, whose token
    tags are computed over the tokens and so cannot be part of their tweak.

Short values (SP 800-38G Rev. 1 section 5.2 requires ``radix**length >= 1,000,000``)
    When the middle has ``N = radix**k >= 1,000,000`` possible values it is enciphered by FF1 directly (radix 10
    or 62, length k). Below that, FF1 is never run on the middle's own domain, and the construction depends on
    the bfid's format version (``bfid_version``, :attr:`vaultcore.tokens.bfid.BfidInfo.version`), which is how a
    token says what made it:

    * **Prefix cipher** (bfid version 3, every bfid issued now; ``N <=`` :data:`PREFIX_MAX_DOMAIN` = 2**15: CARD10
      middles of 2 to 4 digits, CARD62 middles of 2 characters): :class:`vaultcore.crypto.prefix_cipher.PrefixCipher`
      with the tweak ``T || 0x02 || radix || k``, a keyed permutation of exactly ``[0, N)`` (each element's rank
      under AES-derived sort keys, AES-256 key ``HMAC-SHA256(key, label || tweak || N)``: the FF1 key keys an
      HMAC, as for irreversible fields, under a label of its own). Constant cost, linear in ``N``: ~20 us for 3
      digits, ~60 us for 4 (``bench/bench_tokens.py``, ``bench/bench_ff1.py``).
    * **Cycle walking** (bfid versions 1 and 2 for every ``N`` below one million; version 3 for ``2**15 < N <
      1,000,000``: 5 CARD10 digits, 3 CARD62 characters): FF1 runs on a domain of exactly one million (radix 1000,
      two numerals: the standard's minimum) with the tweak ``T || 0x01 || radix || k`` and the middle is
      *cycle-walked* (Black and Rogaway, "Ciphers with arbitrary finite domains", CT-RSA 2002): ``y = FF1(x)`` is
      repeated until ``y < N``. This restriction of a permutation to a subset is itself a permutation, reversible by
      walking with FF1.Decrypt, and as strong as FF1 on the one million domain up to the number of FF1 calls. Cost:
      ``1e6 / N`` FF1 calls of ~5 us on average, geometrically distributed (3 digits: ~7 ms median, ~10 ms mean,
      p95 ~30 ms; 4 digits: ~0.5 ms; under version 3, where ``N > 2**15``, fewer than 31 calls on average). Tokens
      of version-1 and -2 bfids keep detokenizing this way.

    Both keep the value's length, so every length stays in range. Padding the value into a longer token was
    rejected: a padded short value and a genuine longer value can be the same FF1 input (``"123"`` padded vs
    ``"3123"``), and fields such as the 4-digit expiry have no room. The template floor
    :data:`~vaultcore.tokens.templates.MIN_TOKEN_DOMAIN` (100) is unchanged. The work of either depends on the
    key (bucket sizes, walk length), never on anything a party without the key could relate to the value.

Card numbers (issue 27; bfid version 4, :data:`~vaultcore.tokens.bfid.LUHN_INVALID_VERSION`, and later)
    A field that holds card numbers (:attr:`TemplateField.card_number`) whose middle has ``k >= 3`` digits gets
    tokens that **fail the Luhn check** (about 10% of plain FF1 tokens pass it, so a DLP scan could not tell them
    from PANs), and keep the format, the BIN and the last four. The value must pass the Luhn check (the service's
    type rule refuses it before; the engine refuses it too). Its middle's first ``k - 1`` digits are enciphered as
    any middle of ``10**(k-1)`` values (FF1, the prefix cipher or cycle walking by size, as above); its last middle
    digit is then *not* enciphered: it is the value's own Luhn redundancy, recomputed on detokenization. The
    token's last middle digit is chosen among the nine that make the token fail Luhn, by ``HMAC-SHA256(key,
    "vaultcore/tokens/luhn/v4" || tweak || enciphered digits)`` (so every invalid check sum is as likely), or,
    with the field's ``luhnValidTokens``, is the one digit that makes it pass. A token whose last middle digit is
    not that choice is refused as malformed. Tokens of version-1 to -3 bfids (and middles of 2 digits, whose 10
    remaining values are under the template floor) are made and read as before.

Irreversible fields
    The middle is replaced by ``HMAC-SHA256``-derived numerals (counter mode, reduced modulo ``radix**k`` with 128
    spare bits so the bias is below 2**-128), keyed by ``HMAC-SHA256(key, "vaultcore/tokens/irreversible/v1")``
    over the tweak and the whole value, so they are deterministic per (bfid, field, value) and cannot be inverted.

Callers verify the bfid (:func:`vaultcore.tokens.bfid.parse_bfid`) before calling this module, and check that a
version-2 or -3 bfid vouches for a token (:func:`vaultcore.tokens.bfid.token_issued`, after :func:`check_token`) before
detokenizing it: FF1 inverts any well-formed token, so a wrong one would become a wrong clear value. ``key`` is
the FF1 key of the bfid's key version (:func:`vaultcore.tokens.bfid.derive_subkeys`).
"""

from __future__ import annotations

import hashlib
import hmac
import time
import unicodedata

from vaultcore.crypto.ff1 import MIN_DOMAIN, PreparedFF1, num_radix, str_radix
from vaultcore.crypto.prefix_cipher import MAX_DOMAIN as PREFIX_MAX_DOMAIN
from vaultcore.crypto.prefix_cipher import PrefixCipher
from vaultcore.tokens.bfid import BFID_VERSION, LUHN_INVALID_VERSION, PREFIX_CIPHER_VERSION
from vaultcore.tokens.templates import MIN_TOKEN_DOMAIN, TemplateField

__all__ = [
    "TokenError",
    "INVALID_VALUE",
    "TOO_SHORT",
    "TOO_LONG",
    "TOO_FEW_CHARACTERS",
    "IRREVERSIBLE",
    "INACTIVE",
    "TWEAK_BYTES",
    "PREFIX_MAX_DOMAIN",
    "small_domain_construction",
    "field_tweak",
    "tokenize_value",
    "detokenize_value",
    "check_active",
    "check_token",
]

INVALID_VALUE = "invalid_value"
TOO_SHORT = "too_short"
TOO_LONG = "too_long"
TOO_FEW_CHARACTERS = "too_few_characters"
IRREVERSIBLE = "irreversible"
INACTIVE = "inactive"

TWEAK_BYTES = 16
_CW_RADIX, _CW_LENGTH = 1000, 2  # 1000**2 == MIN_DOMAIN: the smallest FF1 domain, so walks are shortest
_IRREVERSIBLE_LABEL = b"vaultcore/tokens/irreversible/v1"
_LUHN_LABEL = b"vaultcore/tokens/luhn/v4"
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class TokenError(ValueError):
    """A value or token cannot be processed for a field. ``code`` is one of the module's code constants.

    Messages name the field and the rule, never the value or token.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def field_tweak(bfid: str, field_name: str) -> bytes:
    """FF1 tweak of a field under a bfid: ``SHA-256(bfid || 0x00 || field name)[:16]`` (module docstring)."""
    return hashlib.sha256(bfid.encode() + b"\x00" + field_name.encode()).digest()[:TWEAK_BYTES]


def _check_key(key: bytes) -> None:
    if not isinstance(key, bytes | bytearray) or len(key) != 32:
        raise ValueError("tokenization key must be 32 bytes (AES-256)")


def _split(field: TemplateField, text: object, what: str) -> tuple[list[int], list[int]]:
    """Validate ``text`` for ``field``; return (positions of the middle numerals, their numerals)."""
    where = f"{what} for field {field.name}"
    if not isinstance(text, str):
        raise TokenError(INVALID_VALUE, f"{where} must be a string")
    lo, hi = field.length_range
    if len(text) < lo:
        raise TokenError(TOO_SHORT, f"{where} is too short (the field accepts {lo} to {hi} characters)")
    if len(text) > hi:
        raise TokenError(TOO_LONG, f"{where} is too long (the field accepts {lo} to {hi} characters)")
    index = field.charset.index
    free, separators = field.free_text, field.separators
    positions: list[int] = []
    for pos, ch in enumerate(text):
        if ch in index:
            positions.append(pos)
        elif free:
            # Free text passes through anything visible, including non-breaking and other Unicode spaces; control,
            # format (invisible), surrogate, private-use, unassigned and line/paragraph separator characters are refused.
            if unicodedata.category(ch) in _REFUSED_CATEGORIES:
                raise TokenError(
                    INVALID_VALUE, f"{where} contains a control or invisible character at position {pos + 1}"
                )
        elif ch not in separators:
            allowed = "".join(sorted(separators))
            raise TokenError(
                INVALID_VALUE,
                f"{where} contains a character that is not allowed at position {pos + 1} "
                f"(allowed: {field.alphabet} characters and the separators {allowed!r})",
            )
    head, tail = field.clear_characters
    middle = positions[head : len(positions) - tail] if len(positions) > head + tail else []
    radix = field.charset.radix
    if radix ** len(middle) < MIN_TOKEN_DOMAIN:
        raise TokenError(
            TOO_FEW_CHARACTERS,
            f"{where} has too few {field.alphabet} characters outside the {head + tail} kept in clear by format "
            f"{field.format} (at least {MIN_TOKEN_DOMAIN} possible values must be encrypted)",
        )
    return middle, [index[text[p]] for p in middle]


def small_domain_construction(size: int, bfid_version: int = BFID_VERSION) -> str:
    """What enciphers a middle of ``size`` possible values under a bfid of ``bfid_version`` (module docstring):
    ``"ff1"``, ``"prefix-cipher"`` or ``"cycle-walk"``."""
    if size >= MIN_DOMAIN:
        return "ff1"
    if bfid_version >= PREFIX_CIPHER_VERSION and size <= PREFIX_MAX_DOMAIN:
        return "prefix-cipher"
    return "cycle-walk"


def _encipher(key: bytes, tweak: bytes, radix: int, numerals: list[int], decrypt: bool,
              bfid_version: int = BFID_VERSION) -> list[int]:
    k = len(numerals)
    x, size = num_radix(numerals, radix), radix**k
    construction = small_domain_construction(size, bfid_version)
    if construction == "ff1":
        ff1 = PreparedFF1(key, tweak, radix, k)
        y = ff1.decrypt_int(x) if decrypt else ff1.encrypt_int(x)
    elif construction == "prefix-cipher":
        prp = PrefixCipher(key, tweak + bytes((2, radix, k)), size)
        y = prp.decrypt_int(x) if decrypt else prp.encrypt_int(x)
        prp.close()
        return str_radix(y, radix, k)
    else:
        # Cycle walking (module docstring): FF1 on exactly 10**6 values, repeated until the result is below size.
        ff1 = PreparedFF1(key, tweak + bytes((1, radix, k)), _CW_RADIX, _CW_LENGTH)
        step = ff1.decrypt_int if decrypt else ff1.encrypt_int
        y = step(x)
        while y >= size:
            y = step(y)
    ff1.close()
    return str_radix(y, radix, k)


def _one_way(key: bytes, tweak: bytes, field: TemplateField, value: str, k: int) -> list[int]:
    radix = field.charset.radix
    size = radix**k
    irr_key = hmac.new(key, _IRREVERSIBLE_LABEL, hashlib.sha256).digest()
    message = tweak + bytes((radix,)) + k.to_bytes(2, "big") + value.encode()
    need = (size.bit_length() + 128 + 255) // 256  # 128 spare bits: reduction bias below 2**-128
    stream = b"".join(hmac.new(irr_key, i.to_bytes(4, "big") + message, hashlib.sha256).digest() for i in range(need))
    return str_radix(int.from_bytes(stream, "big") % size, radix, k)


def _rebuild(text: str, positions: list[int], numerals: list[int], chars: str) -> str:
    out = list(text)
    for p, d in zip(positions, numerals, strict=True):
        out[p] = chars[d]
    return "".join(out)


def _luhn_rule(field: TemplateField, k: int, bfid_version: int) -> bool:
    """Whether a middle of ``k`` numerals of ``field`` follows the card-number Luhn rule (module docstring)."""
    return bfid_version >= LUHN_INVALID_VERSION and field.card_number and k >= 3


_LUHN_DOUBLE = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)  # a doubled digit's term (2d, minus 9 above 9)
_LUHN_UNDOUBLE = tuple(_LUHN_DOUBLE.index(t) for t in range(10))


def _luhn_digit(digits: list[int], j: int) -> int:
    """The digit at index ``j`` that makes ``digits`` pass the Luhn check (ISO/IEC 7812-1 Annex B)."""
    n = len(digits)
    rest = 0
    for i, d in enumerate(digits):
        if i != j:
            rest += _LUHN_DOUBLE[d] if (n - 1 - i) & 1 else d
    term = -rest % 10
    return _LUHN_UNDOUBLE[term] if (n - 1 - j) & 1 else term


def _token_check_digit(key: bytes, tweak: bytes, field: TemplateField, digits: list[int], j: int) -> int:
    """The token's last middle digit (index ``j`` of ``digits``, the token's numerals): Luhn-invalid by default."""
    valid = _luhn_digit(digits, j)
    if field.luhn_valid_tokens:
        return valid
    enciphered = bytes(digits[:j])
    offset = hmac.new(key, _LUHN_LABEL + tweak + enciphered, hashlib.sha256).digest()[0] % 9
    return (valid + 1 + offset) % 10


def _numerals(field: TemplateField, text: str) -> list[int]:
    index = field.charset.index
    return [index[ch] for ch in text if ch in index]


def _luhn_tokenize(key: bytes, tweak: bytes, field: TemplateField, value: str, numerals: list[int],
                   bfid_version: int) -> list[int]:
    digits = _numerals(field, value)
    j = field.clear_characters[0] + len(numerals) - 1  # the last middle digit's index among the value's digits
    if _luhn_digit(digits, j) != digits[j]:
        raise TokenError(INVALID_VALUE, f"value for field {field.name} is not a valid card number (Luhn check failed)")
    if field.irreversible:
        enciphered = _one_way(key, tweak, field, value, len(numerals))[:-1]
    else:
        enciphered = _encipher(key, tweak, 10, numerals[:-1], decrypt=False, bfid_version=bfid_version)
    token = digits[: j - len(enciphered)] + enciphered + [0] + digits[j + 1:]
    return [*enciphered, _token_check_digit(key, tweak, field, token, j)]


def _luhn_detokenize(key: bytes, tweak: bytes, field: TemplateField, token: str, numerals: list[int],
                     bfid_version: int) -> list[int]:
    digits = _numerals(field, token)
    j = field.clear_characters[0] + len(numerals) - 1
    if _token_check_digit(key, tweak, field, digits, j) != digits[j]:
        raise TokenError(INVALID_VALUE, f"token for field {field.name} is not a token of this field")
    clear = _encipher(key, tweak, 10, numerals[:-1], decrypt=True, bfid_version=bfid_version)
    value = digits[: j - len(clear)] + clear + [0] + digits[j + 1:]
    return [*clear, _luhn_digit(value, j)]


def tokenize_value(key: bytes, bfid: str, field: TemplateField, value: str, *,
                   bfid_version: int = BFID_VERSION) -> str:
    """Token of ``value`` in ``field`` under ``bfid`` (same length, clear characters and separators in place).

    ``bfid_version`` (:attr:`BfidInfo.version`) picks the construction for middles below FF1's domain (module
    docstring): pass the bfid's own version, so tokens added under a version-2 bfid are made as its first ones.
    Raises :class:`TokenError` (``invalid_value``, ``too_short``, ``too_long``, ``too_few_characters``).
    """
    _check_key(key)
    positions, numerals = _split(field, value, "value")
    tweak = field_tweak(bfid, field.name)
    if _luhn_rule(field, len(numerals), bfid_version):
        out = _luhn_tokenize(bytes(key), tweak, field, value, numerals, bfid_version)
    elif field.irreversible:
        out = _one_way(bytes(key), tweak, field, value, len(numerals))
    else:
        out = _encipher(bytes(key), tweak, field.charset.radix, numerals, decrypt=False, bfid_version=bfid_version)
    return _rebuild(value, positions, out, field.charset.chars)


def check_active(field: TemplateField, issued_at: float | None, now: float | None = None) -> None:
    """Refuse (``inactive``) when ``now`` is outside the field's active window for a bfid issued at ``issued_at``."""
    if field.active is None:
        return
    if issued_at is None:
        raise ValueError(f"field {field.name} has an active window: issued_at (from the parsed bfid) is required")
    state = field.active.state(issued_at, time.time() if now is None else now)
    if state == "pending":
        raise TokenError(INACTIVE, f"field {field.name} cannot be detokenized yet (its active window has not started)")
    if state == "expired":
        raise TokenError(INACTIVE, f"field {field.name} can no longer be detokenized (its active window has ended)")


def check_token(field: TemplateField, token: str, *, issued_at: float | None = None, now: float | None = None) -> None:
    """Every check :func:`detokenize_value` makes before inverting FF1: irreversible field, active window, the
    token's length and characters. Raises :class:`TokenError`; lets callers check more before FF1 runs."""
    if field.irreversible:
        raise TokenError(IRREVERSIBLE, f"field {field.name} is irreversible: its tokens cannot be detokenized")
    check_active(field, issued_at, now)
    _split(field, token, "token")


def detokenize_value(
    key: bytes,
    bfid: str,
    field: TemplateField,
    token: str,
    *,
    issued_at: float | None = None,
    now: float | None = None,
    bfid_version: int = BFID_VERSION,
) -> str:
    """Clear value of ``token`` in ``field`` under ``bfid``.

    ``issued_at`` (unix seconds, :attr:`BfidInfo.issued_at`) is required when the field has an active window;
    ``now`` defaults to the current time; ``bfid_version`` as for :func:`tokenize_value`. Raises :class:`TokenError` (``irreversible``, ``inactive``, and the
    validation codes of :func:`tokenize_value` for a malformed token).
    """
    _check_key(key)
    if field.irreversible:
        raise TokenError(IRREVERSIBLE, f"field {field.name} is irreversible: its tokens cannot be detokenized")
    check_active(field, issued_at, now)
    positions, numerals = _split(field, token, "token")
    tweak = field_tweak(bfid, field.name)
    if _luhn_rule(field, len(numerals), bfid_version):
        out = _luhn_detokenize(bytes(key), tweak, field, token, numerals, bfid_version)
    else:
        out = _encipher(bytes(key), tweak, field.charset.radix, numerals, decrypt=True, bfid_version=bfid_version)
    return _rebuild(token, positions, out, field.charset.chars)
