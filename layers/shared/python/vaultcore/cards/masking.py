"""The one masking module of the platform: parser responses, proxy log masks and every log line.

PCI DSS requirement 3.4 (v4.0: 3.4.1) allows at most the first six and the last four digits of a PAN to be
displayed. Every function here stays within that limit, and values too short to be a whole PAN (fewer than
13 characters, the shortest PAN length in issue) never show more than half of their characters.

What each function keeps in clear (``*`` replaces a masked character, one for one, so the shape stays):

- :func:`mask_pan`: first six and last four digits; separators (spaces, dashes) stay.
- :func:`mask_track1` (``%B4242424242424242^SMITH/JOHN^2512101123456?``): sentinels, format code, ``^``
  separators, PAN first six / last four, the first and last letter of each name word
  (``S***H/J**N``), the service code. Expiry, discretionary data and the LRC are masked: the discretionary
  data carries the CVV/PVV of the stripe and the expiry helps card-not-present guessing, while the service
  code only says how the card may be used and is useful when support reads a log.
- :func:`mask_track2`: the same for track 2 and the EMV track 2 equivalent (``=``/``D`` separator kept).
- :func:`mask_keyed` (``PAN[=YYMM[=CVV]]``): PAN first six / last four; expiry and CVV masked.
- :func:`apply_pattern`: the proxy's log mask patterns (interface.md "Masking patterns").
- :func:`redact_text`: scrubs card data and secrets out of free text before it is logged.

Masking functions never raise on odd input: what does not have the expected structure is masked entirely
(every letter and digit becomes ``*``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from vaultcore.cards.brand import BRAND_LENGTHS, detect_brand
from vaultcore.cards.luhn import luhn_valid
from vaultcore.cards.pan_mask import FULL_PAN_MIN, MASK_CHAR, keep_ends, mask_pan
from vaultcore.lazy_re import LazyPattern, lazy

__all__ = [
    "MASK_CHAR",
    "REDACTED",
    "MASK_PATTERNS",
    "mask_pan",
    "mask_track1",
    "mask_track2",
    "mask_keyed",
    "apply_pattern",
    "redact_text",
    "holds_pan",
    "holds_pan_in_any_form",
]

REDACTED = "[REDACTED]"
MASK_PATTERNS: tuple[str, ...] = (
    "all",
    "fourPlainFourMasked",
    "allButFirstSixLastFour",
    "allButFirstOneLastFour",
    "allAsRedacted",
)

# --------------------------------------------------------------------------------------------- basics


def _mask_alnum(text: str) -> str:
    """Every letter and digit masked, everything else kept (the fallback for text of unknown structure)."""
    return "".join(MASK_CHAR if ch.isalnum() else ch for ch in text)


# --------------------------------------------------------------------------------------------- tracks

_NAME_WORD_RE = lazy(r"[^/ .]+")
_TRACK1_SHAPE_RE = lazy(
    r"(?P<ss>%?)(?P<fc>[A-Za-z])(?P<pan>[^^?]*)\^(?P<name>[^^?]*)\^(?P<rest>[^?]*)(?:(?P<es>\?)(?P<lrc>.?))?",
    re.DOTALL,
)
_TRACK2_SHAPE_RE = lazy(
    r"(?P<ss>;?)(?P<b>[Bb]?)(?P<pan>[0-9 ]*)(?P<sep>[=Dd])(?P<rest>[^?]*)(?:(?P<es>\?)(?P<lrc>.?))?",
    re.DOTALL,
)


def _mask_name_word(match: re.Match[str]) -> str:
    word = match.group(0)
    if len(word) <= 1:
        return word  # an initial
    if len(word) == 2:
        return word[0] + MASK_CHAR
    return word[0] + MASK_CHAR * (len(word) - 2) + word[-1]


def _mask_name(name: str) -> str:
    """``SMITH/JOHN`` -> ``S***H/J**N``: the first and last letter of each word, padding spaces kept."""
    return _NAME_WORD_RE.sub(_mask_name_word, name)


def _mask_tail(rest: str, absent: str) -> str:
    """Expiry masked, service code kept, discretionary data masked (ISO/IEC 7813 field order)."""
    out = []
    pos = 0
    if rest[:1] == absent:
        out.append(absent)
        pos = 1
    else:
        out.append(_mask_alnum(rest[:4]))
        pos = 4
    if pos < len(rest):
        if rest[pos] == absent:
            out.append(absent)
            pos += 1
        else:
            service = rest[pos : pos + 3]
            out.append(service if service.isdigit() else _mask_alnum(service))
            pos += 3
    out.append(_mask_alnum(rest[pos:]))
    return "".join(out)


def _lrc_mask(match: re.Match[str]) -> str:
    return (match["es"] or "") + (MASK_CHAR if match["lrc"] else "")


def mask_track1(text: str) -> str:
    """Mask an ISO/IEC 7813 track 1, with or without sentinels and LRC (see the module doc for what stays).

    >>> mask_track1("%B4242424242424242^SMITH/JOHN^2512101123456?")
    '%B424242******4242^S***H/J**N^****101******?'
    """
    if not text:
        return text
    match = _TRACK1_SHAPE_RE.fullmatch(text)
    if match is None:
        return _mask_alnum(text)
    return (
        match["ss"]
        + match["fc"]
        + mask_pan(match["pan"])
        + "^"
        + _mask_name(match["name"])
        + "^"
        + _mask_tail(match["rest"], "^")
        + _lrc_mask(match)
    )


def mask_track2(text: str) -> str:
    """Mask a track 2 or EMV track 2 equivalent text, with or without sentinels and LRC.

    >>> mask_track2(";4242424242424242=25121011234?0")
    ';424242******4242=****101****?*'
    """
    if not text:
        return text
    match = _TRACK2_SHAPE_RE.fullmatch(text)
    if match is None:
        return _mask_alnum(text)
    sep = match["sep"]
    return match["ss"] + match["b"] + mask_pan(match["pan"]) + sep + _mask_tail(match["rest"], sep) + _lrc_mask(match)


def mask_keyed(text: str) -> str:
    """Mask a keyed entry ``PAN[=YYMM[=CVV]]``: PAN first six / last four, expiry and CVV masked.

    >>> mask_keyed("4242424242424242=2512=123")
    '424242******4242=****=***'
    """
    if not text:
        return text
    pan, sep, rest = text.partition("=")
    return mask_pan(pan) + sep + _mask_alnum(rest)


# --------------------------------------------------------------------------------------------- proxy patterns


def _four_plain_four_masked(value: str) -> str:
    plain = [i for i in range(len(value)) if (i // 4) % 2 == 0]
    if len(value) < FULL_PAN_MIN:
        # A short value shows at most half: the plain characters beyond that budget are masked too.
        plain = plain[: len(value) // 2]
    keep = set(plain)
    return "".join(ch if i in keep else MASK_CHAR for i, ch in enumerate(value))


def apply_pattern(value: str, pattern: str) -> str:
    """Apply a proxy log mask pattern to ``value`` (interface.md "Masking patterns", public-facts.md).

    - ``all``: every character becomes ``*``.
    - ``fourPlainFourMasked``: groups of four characters, alternately plain and masked, plain first
      (``1234****9012****``).
    - ``allButFirstSixLastFour`` / ``allButFirstOneLastFour``: the middle masked.
    - ``allAsRedacted``: the literal ``[REDACTED]`` (hides the length too).

    Values shorter than 13 characters never show more than half of their characters, whatever the pattern
    (a short value is not a PAN and may be a CVV or a secret). Raises ``ValueError`` for another pattern.
    """
    if pattern == "allAsRedacted":
        return REDACTED
    if pattern == "all":
        return MASK_CHAR * len(value)
    if pattern == "fourPlainFourMasked":
        return _four_plain_four_masked(value)
    if pattern == "allButFirstSixLastFour":
        return keep_ends(value, 6, 4, separators=False)
    if pattern == "allButFirstOneLastFour":
        return keep_ends(value, 1, 4, separators=False)
    raise ValueError("unknown mask pattern")


# --------------------------------------------------------------------------------------------- free text

# Authorization values with a single credential (Basic, Bearer, an API key, or no scheme at all): keep the
# scheme, redact the credential. Hmac and Digest carry named parameters and are handled by _PARAM_AUTH_RE.
_AUTH_TOKEN_RE = lazy(
    r"(?P<prefix>\b(?:proxy-)?authorization\\?[\"']?\s*[:=]\s*\\?[\"']?)"
    r"(?!(?:hmac|digest)\s+[a-z][\w-]*\s*=)"
    r"(?:(?P<scheme>basic|bearer|token|negotiate|apikey|hmac|digest)\s+)?"
    r"(?P<cred>\[REDACTED\]|[^\s\"'\\,;]+)",
    re.IGNORECASE,
)
_PARAM_VALUE = r"(?:\\?\"[^\"\\\r\n]*\\?\"|'[^'\r\n]*'|\[REDACTED\]|[^\s,\"'\\]+)"
_PARAM_AUTH_RE = lazy(
    rf"\b(?P<scheme>hmac|digest)(?P<params>(?:(?:\s*,\s*|\s+)[a-z][\w-]*\s*=\s*{_PARAM_VALUE})+)",
    re.IGNORECASE,
)
_PARAM_RE = lazy(rf"(?P<key>[a-z][\w-]*)(?P<eq>\s*=\s*)(?P<val>{_PARAM_VALUE})", re.IGNORECASE)
# Parameters that prove knowledge of the key or allow a replay; username, timestamp, realm and uri stay.
_SECRET_PARAMS = frozenset({"nonce", "cnonce", "response", "signature"})

# key: value / key=value pairs whose value is a secret, in JSON, escaped JSON, Python reprs, form data and
# header lines. A key must stand alone (``level2_key`` is not ``key``). A CVV's token
# (``vault_token_card_verification``) is scrubbed like the CVV: sensitive authentication data is never kept, in
# clear or as a token (PCI DSS 3.3.1; vaultcore.tokens.policy), whatever path carried it into a text.
_SECRET_KEYS = (
    r"partner[_-]?key|api[_-]?access[_-]?key|api[_-]?key|x-api-key|access[_-]?key|shared[_-]?key|secret"
    r"|password|passwd|key|card[_-]?verification|vault[_-]?token[_-]?card[_-]?verification|cvv2?|cvc2?"
    r"|discretionary|decrypted"
)
_PAN_KEYS = r"card[_-]?number|pan|primary[_-]?account[_-]?number"
_BARE_END = r"(?=$|[\s&,;}\]\"'\\<])"
_KV_RE = lazy(
    rf"(?<![\w-])(?P<key>(?P<secret>{_SECRET_KEYS})|(?P<pankey>{_PAN_KEYS}))(?![\w-])"
    r"(?P<sep>\\?[\"']?\s*[:=]\s*)"
    r"(?P<val>\\\"(?:[^\"\\]|\\(?!\"))*\\\"|\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|\[REDACTED\]"
    rf"|[0-9*](?:[ -]?[0-9*])*+{_BARE_END}|[^\s&,;}}\]\"'\\<]+)",
    re.IGNORECASE,
)
_XML_SECRET_RE = lazy(
    rf"<(?P<tag>{_SECRET_KEYS})>(?P<val>[^<]*)</(?P=tag)>",
    re.IGNORECASE,
)

# Track 1 (format B) and track 2 / track 2 equivalent in free text. Track 1 needs its ^ separators; its last
# part runs to the end sentinel, bounded by the longest track (79 characters).
_TRACK1_RE = lazy(
    r"(?:%|(?<![A-Za-z0-9]))B(?P<pan>[0-9]{12,19})\^[^^?\r\n\"\\]{0,40}\^[^?\r\n\"\\]{0,79}"
    r"(?:(?P<es>\?)(?P<lrc>[\x20-\x5f])?)?"
)
_TRACK2_RE = lazy(
    r";?(?P<pan>[0-9]{12,19})(?P<sep>[=Dd])(?:[0-9]{4}|(?P=sep))(?:[0-9]|(?P=sep))*(?:[Ff]0*(?![0-9A-Za-z]))?"
    r"(?:(?P<es>\?)(?P<lrc>[\x30-\x3f])?)?"
)
# Keys, cryptograms, MACs, decrypted blocks: long runs of hex digits.
_HEX_RE = lazy(r"[0-9A-Fa-f]{32,}")
# Digit runs, single spaces or dashes allowed between digits, at least 13 digits.
_PAN_CANDIDATE_RE = lazy(r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,}")
# Identifiers of a fixed documented shape that are long digit runs by design: a messageId has 25 digits and a
# KSN 20 hex digits. Their values are not scanned for a PAN glued to other digits (a random 25-digit value
# holds a branded Luhn-valid window often enough to make the ids unusable in logs); a whole-value PAN is
# still masked.
_EXEMPT_KEY_RE = lazy(r"(?:message[_-]?id|ksn)\\?[\"']?\s*[:=]\s*\\?[\"']?\Z", re.IGNORECASE)
_WINDOW_MIN, _WINDOW_MAX = 13, 19
_MAX_PASSES = 8


def _redact_auth_token(match: re.Match[str]) -> str:
    scheme = match["scheme"]
    return match["prefix"] + (f"{scheme} " if scheme else "") + REDACTED


def _quoted_redacted(value: str) -> str:
    """``REDACTED`` in the same quoting as ``value`` (so JSON stays JSON)."""
    if value.startswith('\\"'):
        return f'\\"{REDACTED}\\"'
    if value[:1] in "\"'":
        return f"{value[0]}{REDACTED}{value[0]}"
    return REDACTED


def _redact_param(match: re.Match[str]) -> str:
    if match["key"].lower() not in _SECRET_PARAMS:
        return match.group(0)
    return match["key"] + match["eq"] + _quoted_redacted(match["val"])


def _redact_param_auth(match: re.Match[str]) -> str:
    return match["scheme"] + _PARAM_RE.sub(_redact_param, match["params"])


def _redact_kv(match: re.Match[str]) -> str:
    value = match["val"]
    head = match["key"] + match["sep"]
    if match["secret"] is not None:
        if value[:1] not in "\"'\\" and value != REDACTED and match["sep"][:1] in "\"'\\":
            # A bare value (number, null) after a quoted key: quote the replacement so JSON stays JSON.
            quote = '\\"' if match["sep"].startswith("\\") else match["sep"][0]
            return f"{head}{quote}{REDACTED}{quote}"
        return head + _quoted_redacted(value)
    # A PAN-named value is masked even when it fails the Luhn check: a mistyped PAN is still card data.
    if value.startswith('\\"'):
        quote, inner = '\\"', value[2:-2]
    elif value[:1] in "\"'":
        quote, inner = value[0], value[1:-1]
    else:
        quote, inner = "", value
    if inner and all(ch.isdigit() or ch in " -*" for ch in inner):
        return head + quote + mask_pan(inner) + quote
    return match.group(0)


def _redact_xml(match: re.Match[str]) -> str:
    tag = match["tag"]
    return f"<{tag}>{REDACTED}</{tag}>"


def _lrc_is(track: str, candidate: str | None) -> bool:
    if not candidate:
        return False
    # Lazy: only a track-shaped text with an LRC gets here; the functions that import this module for their log
    # lines (the proxy's init among them) do not load the track parser for it (cold start, docs/design/benchmarks.md).
    from vaultcore.cards.tracks import TrackError, track_lrc

    try:
        return track_lrc(track) == candidate
    except TrackError:
        return False


def _redact_track(match: re.Match[str], masker: Callable[[str], str]) -> str:
    text = match.group(0)
    lrc = match["lrc"]
    if lrc is None:
        return masker(text)
    track = text[:-1]
    # The character after the end sentinel is masked as the LRC only when it is the track's LRC; otherwise it
    # is ordinary text (the end of a sentence, a quote) and stays.
    if track[:1] in "%;" and _lrc_is(track, lrc):
        return masker(track) + MASK_CHAR
    return masker(track) + lrc


def _redact_track1(match: re.Match[str]) -> str:
    return _redact_track(match, mask_track1)


def _redact_track2(match: re.Match[str]) -> str:
    return _redact_track(match, mask_track2)


def _redact_hex(match: re.Match[str]) -> str:
    return f"[hex:{len(match.group(0))}]"


def _window_masks(digits: str) -> set[int]:
    """Digit positions to mask inside a run that is not itself a PAN: the middle of every window of 13 to
    19 digits that has a known brand, a length that brand issues and a valid Luhn digit (a PAN glued to a
    tag, a length or an expiry, as in ``5A08<PAN>`` or ``<PAN>2512``).

    The brand and length conditions keep ordinary long numbers readable: with the Luhn check alone, almost
    every run of 20 digits would hold some valid window.
    """
    masked: set[int] = set()
    n = len(digits)
    for start in range(n - _WINDOW_MIN + 1):
        lengths = BRAND_LENGTHS[detect_brand(digits[start : start + 6])]
        for length in lengths:
            end = start + length
            if end <= n and luhn_valid(digits[start:end]):
                masked.update(range(start + 6, end - 4))
    return masked


def _group_masks(digits: str, group_starts: list[int]) -> set[int]:
    """Digit positions to mask for groups (split by spaces or dashes) that together form a Luhn-valid 13 to
    19 digit number, whatever its brand (``order 12 4000 0000 0000 0002``). Group boundaries are where a
    person puts them, so no brand condition is needed to keep false positives rare."""
    masked: set[int] = set()
    bounds = [*group_starts, len(digits)]
    for i in range(len(group_starts)):
        for j in range(i + 1, len(bounds)):
            start, end = bounds[i], bounds[j]
            if end - start > _WINDOW_MAX:
                break
            if end - start >= _WINDOW_MIN and luhn_valid(digits[start:end]):
                masked.update(range(start + 6, end - 4))
    return masked


def _redact_pan(match: re.Match[str]) -> str:
    text = match.group(0)
    if text.isdigit() and len(text) <= _WINDOW_MAX and luhn_valid(text):
        return text[:6] + MASK_CHAR * (len(text) - 10) + text[-4:]  # the common case: a PAN without separators
    positions = [i for i, ch in enumerate(text) if ch.isdigit()]
    digits = "".join(text[i] for i in positions)
    if len(digits) <= _WINDOW_MAX and luhn_valid(digits):
        masked = set(range(6, len(digits) - 4))
    else:
        separated = len(positions) != len(text)
        context = match.string[max(0, match.start() - 24) : match.start()]
        if not separated and _EXEMPT_KEY_RE.search(context):
            return text
        masked = _window_masks(digits)
        if separated:
            # Index (in digits) of each group's first digit: a digit whose predecessor in text is a separator.
            starts = [0] + [k for k in range(1, len(positions)) if positions[k] != positions[k - 1] + 1]
            masked |= _group_masks(digits, starts)
        if not masked:
            return text
    chars = list(text)
    for index in masked:
        chars[positions[index]] = MASK_CHAR
    return "".join(chars)


def redact_text(text: str) -> str:
    """Scrub card data and secrets from free text before it is logged. Idempotent.

    In this order:

    1. ``Authorization`` values: ``Basic``/``Bearer``/other single credentials become ``[REDACTED]`` (the
       scheme stays); ``Hmac``/``Digest`` keep the scheme, ``username``, ``timestamp`` and the like, while
       ``nonce``, ``cnonce``, ``response`` and ``signature`` become ``[REDACTED]``.
    2. Values of secret keys (``partnerKey``, ``api_accesskey``, ``card_verification``, ``cvv``, ``secret``,
       ``password``, ``discretionary``, ...) in JSON, escaped JSON, reprs, form data, headers and XML become
       ``[REDACTED]``; values of PAN keys (``card_number``, ``pan``) are masked as PANs even when the Luhn
       check fails.
    3. Track 1 (``%B...^...^...?``) and track 2 / track 2 equivalent (``;PAN=...?``, ``PAN=YYMM...``,
       ``PAN D YYMM...``) are masked as by :func:`mask_track1` / :func:`mask_track2`.
    4. Runs of 32 or more hex digits (keys, cryptograms, ciphertexts) become ``[hex:<length>]``.
    5. Digit runs of 13 to 19 digits (single spaces or dashes allowed between digits) that pass the Luhn
       check are masked as PANs. Longer runs, and runs failing the check, are searched for a PAN next to
       other digits: consecutive space/dash-separated groups forming a Luhn-valid 13-19 digit number, or,
       anywhere in the run, a window with a known brand, a length of that brand and a valid Luhn digit (a
       PAN glued to a tag, a length or an expiry). Their middle digits are masked. A PAN of no known brand
       glued to other digits without a separator is not found (the price of leaving long identifiers
       readable), and the unseparated values of ``messageId`` and ``ksn`` keys are not searched for glued
       PANs.

    The steps repeat until nothing changes, so that a second call changes nothing. Ordinary text (words,
    amounts, dates, UUIDs, short identifiers) is left alone.

    Cost: each step's pattern is tried only where byte-string searches in C find a possible start (section
    "redact_text's candidate search" below), with exactly the result of running every pattern over the whole
    text; about 1.3-1.9x a ``json.loads`` + ``json.dumps`` of a JSON body (``bench/bench_tokens.py``), plus a few
    microseconds per value masked.
    """
    if not text:
        return text
    # A replacement can expose a match for an earlier step (a hex run glued to a key name becomes
    # ``[hex:32]pan: ...``; a PAN masked inside a longer run leaves a shorter run that may pass Luhn): run the
    # steps again until nothing changes. Text without card data costs one pass; the bound is a safety net.
    needles = None
    for _ in range(_MAX_PASSES):
        redacted, needles = _redact_once(text, needles)
        if redacted is text or redacted == text:
            break
        text = redacted
    return text


# ------------------------------------------------------------------------------ redact_text's candidate search
#
# Each step is ``pattern.sub(repl, text)`` with one of the patterns above, computed without letting the regular
# expression engine try every position of the text (most of these patterns begin with a lookbehind, an optional
# part or a case-insensitive alternation, so ``re`` cannot skip ahead and costs ~50 ns per character per pattern).
# Instead, byte-string operations that run in C (``bytes.find``, ``translate``, ``replace``, ``count``) list the
# positions where a match can start, and the pattern is tried there only (:func:`_sub_at`), or, for digit and hex
# runs, on the stretches of text that can hold one (:func:`_redact_pans`, :func:`_redact_hex_runs`). Every list is
# a superset of the possible match starts, so the result is exactly ``pattern.sub``'s (tests compare both on
# random and hostile texts).
#
# The byte views have one byte per character of the text, so positions agree: ASCII characters as they are, the
# four non-ASCII characters that ``re.IGNORECASE`` matches to an ASCII letter (U+0130 and U+0131 to ``i``, U+017F to
# ``s``, U+212A to ``k``) as that letter, every other character as ``?`` (the patterns look for ASCII only).

_IGNORECASE_ASCII = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))
# Where a key of _KV_RE can start: each alternative of _SECRET_KEYS and _PAN_KEYS holds one of these stems, at one of
# the listed offsets from its start (``api_access_key``: ``key`` at 11; tests check every spelling).
_KEY_STEMS: tuple[tuple[bytes, tuple[int, ...]], ...] = (
    (b"key", (0, 3, 4, 6, 7, 8, 9, 10, 11)),
    (b"secret", (0,)),
    (b"passw", (0,)),
    (b"card", (0,)),
    (b"cv", (0,)),
    (b"vault", (0,)),
    (b"discretionary", (0,)),
    (b"decrypted", (0,)),
    (b"pan", (0,)),
    (b"primary", (0,)),
)


def _class_table(mapping: dict[bytes, bytes], default: bytes) -> bytes:
    """A ``bytes.translate`` table: the bytes of each key to its value, all others to ``default``."""
    table = bytearray(default * 256)
    for chars, to in mapping.items():
        for ch in chars:
            table[ch] = to[0]
    return bytes(table)


# Digits 0, the separators a PAN may hold (one space or dash between digits) s, the track 2 separators (=, D, d) =,
# anything else a dot.
_DIGIT_CLASS = _class_table({b"0123456789": b"0", b" -": b"s", b"=Dd": b"="}, b".")
# Hex digits h, anything else a dot.
_HEX_CLASS = _class_table({b"0123456789abcdefABCDEF": b"h"}, b".")
_PAN_RUN = b"0" * _WINDOW_MIN
_HEX_RUN = b"h" * 32
_TRACK1_HEAD_RE = lazy(rb"%?B[0-9]{12,19}\Z")
_TRACK2_HEAD_RE = lazy(rb";?[0-9]{12,19}[=Dd]\Z")


def _view(text: str) -> bytes:
    """One byte per character of ``text`` (section comment); ASCII text is simply encoded."""
    if not text.isascii():
        for char, letter in _IGNORECASE_ASCII:
            if char in text:
                text = text.replace(char, letter)
    return text.encode("ascii", "replace")


def _find_all(data: bytes, needle: bytes) -> list[int]:
    out = []
    i = data.find(needle)
    while i >= 0:
        out.append(i)
        i = data.find(needle, i + 1)
    return out


class _Needles:
    """Where the word-based steps (Authorization, Hmac/Digest, secret and PAN keys) can match in one text. They
    depend on its letters and separators only, so they stay valid across the PAN step, which only turns digits
    into ``*``. Each of these patterns needs a ``:`` or ``=`` (XML tags a ``<``): without one, nothing is searched."""

    __slots__ = ("auth", "params", "keys")

    def __init__(self, low: bytes) -> None:
        self.auth: list[int] = []
        self.params: list[int] = []
        self.keys: list[int] = []
        equals = b"=" in low
        separated = equals or b":" in low
        if separated:
            for i in _find_all(low, b"authorization"):
                if low[max(0, i - 6) : i] == b"proxy-":
                    self.auth.append(i - 6)
                self.auth.append(i)
        if equals:
            self.params = sorted(_find_all(low, b"hmac") + _find_all(low, b"digest"))
        if not separated and b"<" not in low:
            return
        keys: set[int] = set()
        find = low.find
        for stem, offsets in _KEY_STEMS:
            i = find(stem)
            while i >= 0:
                keys.update(i - o for o in offsets if o <= i)
                i = find(stem, i + 1)
        if keys:
            self.keys = sorted(keys)


def _sub_at(pattern: LazyPattern[str], text: str, starts: list[int], repl: Callable[[re.Match[str]], str]) -> str:
    """``pattern.sub(repl, text)`` when ``starts`` (ascending) holds every position where ``pattern`` can match:
    the first match at or after the end of the previous one, as ``sub`` scans. Returns ``text`` itself (the same
    object) when no replacement changed anything."""
    out: list[str] = []
    last = 0
    changed = False
    for start in starts:
        if start < last:
            continue
        match = pattern.match(text, start)
        if match is None:
            continue
        replacement = repl(match)
        changed = changed or replacement != match.group(0)
        out.append(text[last:start])
        out.append(replacement)
        last = match.end()
    if not changed:
        return text
    out.append(text[last:])
    return "".join(out)


def _track1_starts(view: bytes) -> list[int]:
    """A track 1 match has its PAN right before its first ``^``, a ``B`` right before the PAN."""
    starts = []
    for caret in _find_all(view, b"^"):
        head = _TRACK1_HEAD_RE.search(view, max(0, caret - 21), caret)
        if head is not None:
            starts.append(head.start())
            if view[head.start()] == 0x25:  # "%": the match may also start at the B (the "%" can end a match)
                starts.append(head.start() + 1)
    return starts


def _track2_starts(view: bytes, classes: bytes) -> list[int]:
    """A track 2 match has a PAN of 12 to 19 digits right before a separator: every such start (and the ``;``
    before the longest), for each digit followed by a separator."""
    starts: list[int] = []
    for digit in _find_all(classes, b"0="):
        sep = digit + 1
        head = _TRACK2_HEAD_RE.search(view, max(0, sep - 20), sep + 1)
        if head is None:
            continue
        first = head.start()
        if view[first] == 0x3B:  # ";"
            starts.append(first)
            first += 1
        starts.extend(range(first, sep - 11))  # a PAN of sep - first digits down to 12
    return starts


def _redact_hex_runs(text: str, view: bytes) -> str:
    """``_HEX_RE.sub``: a run of 32 or more hex digits starts where the class string first holds 32 ``h``."""
    classes = view.translate(_HEX_CLASS)
    start = classes.find(_HEX_RUN)
    if start < 0:
        return text
    out: list[str] = []
    last = 0
    while start >= 0:
        match = _HEX_RE.match(text, start)
        assert match is not None  # the class string marks exactly the characters of _HEX_RE
        out.append(text[last:start])
        out.append(_redact_hex(match))
        last = match.end()
        start = classes.find(_HEX_RUN, last)
    out.append(text[last:])
    return "".join(out)


def _redact_pans(text: str, classes: bytes) -> str:
    """``_PAN_CANDIDATE_RE.sub``, run only on the stretches that can hold a match.

    In the class string (:data:`_DIGIT_CLASS`) a separator next to another separator becomes a dot (it ends a
    candidate, which allows one separator between digits), then the remaining separators count as digits. A
    candidate is then inside a run of 13 or more ``0``; the character after such a run can neither be nor continue
    a candidate, so ``finditer`` over the run (``endpos`` at its end; lookbehind still sees the text before it)
    finds exactly the candidates ``sub`` finds there.
    """
    runs = classes.replace(b"ss", b"..").replace(b"s", b"0")
    start = runs.find(_PAN_RUN)
    if start < 0:
        return text
    out: list[str] = []
    last = 0
    while start >= 0:
        end = len(runs)
        for stop in (b".", b"="):  # the run ends at the first character that is neither digit nor separator
            i = runs.find(stop, start, end)
            end = end if i < 0 else i
        for match in _PAN_CANDIDATE_RE.finditer(text, start, end):
            replacement = _redact_pan(match)
            if replacement != match.group(0):
                out.append(text[last : match.start()])
                out.append(replacement)
                last = match.end()
        start = runs.find(_PAN_RUN, end)
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


def _redact_once(text: str, needles: _Needles | None = None) -> tuple[str, _Needles | None]:
    """One pass of every step (:func:`redact_text`) over ``text``; ``needles`` are ``text``'s when known.

    Returns the text (``text`` itself when nothing changed) and the needles of that text when still known. Each
    step's candidate positions come from views of the text as the previous steps left it.
    """
    view = _view(text)
    low = view.lower()
    found = needles if needles is not None else _Needles(low)
    current: _Needles | None = found

    def changed(new: str) -> bool:
        nonlocal text, view, low, current
        if new is text:
            return False
        text, view = new, _view(new)
        low = view.lower()
        current = None
        return True

    if found.auth and changed(_sub_at(_AUTH_TOKEN_RE, text, found.auth, _redact_auth_token)):
        found = current = _Needles(low)
    if found.params and changed(_sub_at(_PARAM_AUTH_RE, text, found.params, _redact_param_auth)):
        found = current = _Needles(low)
    if found.keys:
        if changed(_sub_at(_KV_RE, text, found.keys, _redact_kv)):
            found = current = _Needles(low)
        if b"<" in view:
            xml = [k - 1 for k in found.keys if k and low[k - 1] == 0x3C]  # "<" right before a key
            changed(_sub_at(_XML_SECRET_RE, text, xml, _redact_xml))
    classes = view.translate(_DIGIT_CLASS)
    digits = classes.count(b"0")
    if digits >= 12:
        if b"^" in view and changed(_sub_at(_TRACK1_RE, text, _track1_starts(view), _redact_track1)):
            classes = view.translate(_DIGIT_CLASS)
        if changed(_sub_at(_TRACK2_RE, text, _track2_starts(view, classes), _redact_track2)):
            classes = view.translate(_DIGIT_CLASS)
    if changed(_redact_hex_runs(text, view)):
        classes = view.translate(_DIGIT_CLASS)
    if digits >= 13:
        letters_kept = current
        changed(_redact_pans(text, classes))
        current = letters_kept  # the PAN step turns digits into "*" only: the needles still hold
    return text, current


def holds_pan(text: str) -> bool:
    """Whether ``text`` holds what :func:`redact_text` masks as a card number: a Luhn-valid run of 13 to 19
    digits, with or without single spaces or dashes between them, or a branded Luhn-valid window inside a longer
    digit run. The same detector as the log redaction, so that data refused as card data (the v4 payments'
    meta, vaultcore.payments.meta) and data scrubbed from logs are the same set."""
    for match in _PAN_CANDIDATE_RE.finditer(text):
        if _redact_pan(match) != match.group(0):
            return True
    return False


# Between two digits, a run of up to three separators a person may type into a card number: whitespace (any,
# NBSP and tabs included), ASCII dot, slash, hyphen and underscore, and the Unicode dashes (category Pd's
# hyphen/dash block, the minus sign, the small and fullwidth hyphen-minus).
_PAN_SEPARATOR_RUN_RE = lazy(r"(?<=[0-9])[\s\-./_\u2010-\u2015\u2212\ufe58\ufe63\uff0d]{1,3}(?=[0-9])")


def _ascii_digits(text: str) -> str:
    """Every Unicode decimal digit (fullwidth, Arabic-Indic, ...) as its ASCII digit: ``int()`` reads them alike,
    and so can whoever reads the value back."""
    import unicodedata  # only for the rare non-ASCII value (the import is not on any cold start)

    return "".join(c if c.isascii() else str(d) if (d := unicodedata.decimal(c, None)) is not None else c
                   for c in text)


def holds_pan_in_any_form(text: str) -> bool:
    """:func:`holds_pan`, and also a PAN written with other separators (``4242.4242.4242.4242``, two spaces, a
    slash, an underscore, NBSP, an en dash) or other decimal digits (fullwidth, Arabic-Indic).

    For values a merchant sends to be stored and echoed (the v4 payments' meta, a dynamic descriptor, an API
    key's label, a webhook's URL): PCI DSS 3.4 asks that no PAN is stored readable, whatever its spelling, and a
    value refused costs the sender one corrected request. The log redaction keeps :func:`holds_pan` (its
    separators are the forms card data takes in the payloads it scrubs)."""
    if holds_pan(text):
        return True
    folded = text if text.isascii() else _ascii_digits(text)
    return holds_pan(_PAN_SEPARATOR_RUN_RE.sub("", folded))
