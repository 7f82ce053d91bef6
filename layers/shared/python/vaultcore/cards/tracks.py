"""Magnetic-stripe track data (ISO/IEC 7813 financial cards) and keyed entries: parsing and projections.

Track 1 (format B, ISO/IEC 7813 section 10.1), with sentinels::

    %B<PAN, up to 19 digits>^<NAME, SURNAME/FIRST M.TITLE>^<YYMM or ^><service code or ^><discretionary>?<LRC>

Track 2 (ISO/IEC 7813 section 10.2), with sentinels::

    ;<PAN, up to 19 digits>=<YYMM or =><service code or =><discretionary>?<LRC>

In both, a field separator in place of the expiry or of the service code marks that field absent. The LRC
(ISO/IEC 7811-2 / 7811-6) is one character after the end sentinel; readers send it, the parsers tolerate and
drop it. The EMV track 2 equivalent (EMV Book 3 Annex A, tag 57) has the same layout with a ``D`` nibble as
separator and an ``F`` nibble pad; :func:`parse_track2` accepts its text form.

Every parsed value is kept as text: digits keep their leading zeros and an expiry is never turned into a
date (readers and test cards carry impossible months such as ``3782``; judging an expiry is the gateway's job).

This module is pure (no I/O, no logging). ``TrackError`` messages name the field that is wrong but never
quote track content, so that they can be returned and logged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vaultcore.cards.pan_mask import mask_pan
from vaultcore.lazy_re import lazy

__all__ = [
    "TrackError",
    "Track1",
    "Track2",
    "KeyedEntry",
    "parse_track1",
    "parse_track2",
    "parse_keyed",
    "split_tracks",
    "strip_track_bytes",
    "track_lrc",
    "track_format",
    "TRACK_FORMATS",
]

# Formats of the proxy's parser substitutions (interface.md, "Parser substitution formats"), in that order.
TRACK_FORMATS: tuple[str, ...] = (
    "rawTrack2",
    "track2",
    "track2equivalentLower",
    "track2equivalentUpper",
    "rawTrack1",
    "Track1",
    "pan",
    "expiry",
    "expiryMonth",
    "expiryYear",
    "cvv",
    "serviceCode",
    "discretionary",
    "firstName",
    "surname",
    "firstNameAndSurname",
    "rawName",
)

_START_SENTINELS = "%;"
_END_SENTINEL = "?"
# ISO/IEC 7812-1: a PAN has 8 to 19 digits.
_PAN_MIN, _PAN_MAX = 8, 19

_TRACK2_RE = lazy(r"(?P<b>[Bb])?(?P<pan>[0-9]+)(?P<sep>[=Dd])(?P<rest>.*)", re.DOTALL)
# EMV pad: an 'F' nibble to complete the last byte; zero bytes after it are cipher-block padding.
_EMV_PAD_RE = lazy(r"[Ff]0*\Z")
_KEYED_RE = lazy(r"(?P<pan>[0-9]+)(?:=(?P<exp>[0-9]{4})(?:=(?P<cvv>[0-9]{3,4}))?|==(?P<cvv_only>[0-9]{3,4}))?")


class TrackError(ValueError):
    """Track, track 2 equivalent or keyed data that does not follow its format.

    The message names the field and the rule, never the data.
    """


def _is_digits(text: str) -> bool:
    return text.isascii() and text.isdigit()


class _ExpiryMixin:
    """Expiry views shared by every card-data record; the stored form is the track's ``YYMM``."""

    expiry_yymm: str | None

    @property
    def expiry_mmyy(self) -> str | None:
        """Expiry as month then year (``MMYY``), the order of the parser's ``EXPY`` and the gateway."""
        if self.expiry_yymm is None:
            return None
        return self.expiry_yymm[2:] + self.expiry_yymm[:2]

    @property
    def expiry_month(self) -> str | None:
        """Two-digit expiry month as carried on the card (not range-checked)."""
        return None if self.expiry_yymm is None else self.expiry_yymm[2:]

    @property
    def expiry_year(self) -> str | None:
        """Two-digit expiry year as carried on the card."""
        return None if self.expiry_yymm is None else self.expiry_yymm[:2]


@dataclass(frozen=True, repr=False)
class Track1(_ExpiryMixin):
    """A parsed ISO/IEC 7813 format B track 1.

    ``raw`` is the track without start sentinel, end sentinel and LRC (it starts with the format code ``B``).
    ``raw_name`` is the name field exactly as on the track, padding spaces included. ``surname`` and
    ``first_name`` come from the ``SURNAME/FIRST M.TITLE`` convention: ``first_name`` is everything between
    the ``/`` and the title's ``.``, so it keeps a middle name or initial (``"GEORGE W"``); both are stripped of
    padding and are ``None`` when empty. A name without ``/`` is taken as a surname only.
    """

    pan: str
    surname: str | None
    first_name: str | None
    raw_name: str
    expiry_yymm: str | None
    service_code: str | None
    discretionary: str | None
    raw: str

    def __repr__(self) -> str:
        # A repr ends up in tracebacks and test output: show the masked PAN only.
        return f"Track1(pan={mask_pan(self.pan)!r}, ...)"

    @property
    def format_code(self) -> str:
        """The format code, ``"B"`` for financial cards."""
        return self.raw[0]

    @property
    def title(self) -> str | None:
        """The title after the ``.`` of the name field (``"MR"``), if any."""
        _surname, slash, rest = self.raw_name.partition("/")
        if not slash:
            return None
        return rest.partition(".")[2].strip() or None

    @property
    def full_name(self) -> str | None:
        """First name then surname, separated by one space; ``None`` when the track carries no name."""
        parts = [p for p in (self.first_name, self.surname) if p]
        return " ".join(parts) or None

    @property
    def with_sentinels(self) -> str:
        """The track with its start and end sentinels (no LRC)."""
        return f"%{self.raw}?"


@dataclass(frozen=True, repr=False)
class Track2(_ExpiryMixin):
    """A parsed ISO/IEC 7813 track 2 or EMV track 2 equivalent.

    ``raw`` is the track without sentinels and LRC, with the field separator normalised to ``=`` (an EMV
    ``D``/``d`` separator, a leading ``B`` and the trailing ``F`` pad are not part of it).
    """

    pan: str
    expiry_yymm: str | None
    service_code: str | None
    discretionary: str | None
    raw: str

    def __repr__(self) -> str:
        return f"Track2(pan={mask_pan(self.pan)!r}, ...)"

    @property
    def with_sentinels(self) -> str:
        """The track with its start and end sentinels (no LRC)."""
        return f";{self.raw}?"


@dataclass(frozen=True, repr=False)
class KeyedEntry(_ExpiryMixin):
    """A manually keyed card: PAN, and optionally expiry (``YYMM``) and CVV. See :func:`parse_keyed`."""

    pan: str
    expiry_yymm: str | None
    cvv: str | None

    def __repr__(self) -> str:
        return f"KeyedEntry(pan={mask_pan(self.pan)!r}, ...)"


def _check_pan(pan: str, where: str) -> str:
    if not _is_digits(pan) or not _PAN_MIN <= len(pan) <= _PAN_MAX:
        raise TrackError(f"{where}: the PAN must be {_PAN_MIN} to {_PAN_MAX} digits")
    return pan


def _unwrap(text: str, start: str, where: str) -> str:
    """The track body: without start sentinel, end sentinel, LRC, reader NUL padding and line ends."""
    if not isinstance(text, str):
        raise TrackError(f"{where}: expected text")
    body = text.strip("\x00\r\n")
    if body.startswith(start):
        body = body[1:]
    end = body.find(_END_SENTINEL)
    if end >= 0:
        # At most one character (the LRC) may follow the end sentinel.
        if len(body) - end - 1 > 1:
            raise TrackError(f"{where}: unexpected data after the end sentinel")
        body = body[:end]
    return body


def _parse_tail(rest: str, absent: str, where: str) -> tuple[str | None, str | None, str | None]:
    """Expiry, service code and discretionary data after the second separator (track 1) or the first (2).

    ``absent`` (the field separator) in place of the expiry or the service code marks the field absent
    (ISO/IEC 7813); empty discretionary data is ``None``.
    """
    pos = 0
    expiry: str | None = None
    service: str | None = None
    if not rest:
        return None, None, None
    if rest[0] == absent:
        pos = 1
    else:
        expiry = rest[:4]
        if len(expiry) != 4 or not _is_digits(expiry):
            raise TrackError(f"{where}: the expiry must be 4 digits (YYMM) or a separator")
        pos = 4
    if pos < len(rest):
        if rest[pos] == absent:
            pos += 1
        else:
            service = rest[pos : pos + 3]
            if len(service) != 3 or not _is_digits(service):
                raise TrackError(f"{where}: the service code must be 3 digits or a separator")
            pos += 3
    return expiry, service, rest[pos:] or None


def _split_name(raw_name: str) -> tuple[str | None, str | None]:
    name = raw_name.strip()
    if not name:
        return None, None
    surname, slash, rest = name.partition("/")
    # The title follows a '.' (ISO/IEC 7813 name field: SURNAME/FIRST M.TITLE); it is not part of the name.
    first = rest.partition(".")[0] if slash else ""
    return surname.strip() or None, first.strip() or None


def parse_track1(text: str) -> Track1:
    """Parse a format B track 1, with or without sentinels, tolerating one LRC character after ``?``.

    Spaces inside the PAN field (some issuers group the digits) are dropped from ``pan``. Raises
    :class:`TrackError` when the format code is not ``B``, a separator is missing, the PAN is not 8 to 19
    digits, or the expiry / service code are malformed.
    """
    where = "track 1"
    body = _unwrap(text, "%", where)
    if not body.startswith("B"):
        raise TrackError(f"{where}: only format code B (ISO/IEC 7813 financial cards) is supported")
    fields = body[1:].split("^", 2)
    if len(fields) != 3:
        raise TrackError(f"{where}: two '^' field separators are required")
    pan_field, raw_name, rest = fields
    pan = _check_pan(pan_field.replace(" ", ""), where)
    expiry, service, discretionary = _parse_tail(rest, "^", where)
    surname, first_name = _split_name(raw_name)
    return Track1(
        pan=pan,
        surname=surname,
        first_name=first_name,
        raw_name=raw_name,
        expiry_yymm=expiry,
        service_code=service,
        discretionary=discretionary,
        raw=body,
    )


def parse_track2(text: str) -> Track2:
    """Parse a track 2 or an EMV track 2 equivalent in text form.

    Accepted: ``;PAN=YYMM...?`` with or without sentinels and with one LRC character after ``?``; and the
    hex-text form of tag 57, ``PAN D YYMM ...`` with ``D`` or ``d`` as separator, an optional leading ``B``
    (some readers prefix it) and a trailing ``F`` pad possibly followed by zero padding. The discretionary
    data must be digits (the numeric track 2 character set). Raises :class:`TrackError` otherwise.
    """
    where = "track 2"
    body = _unwrap(text, ";", where)
    match = _TRACK2_RE.fullmatch(body)
    if match is None:
        raise TrackError(f"{where}: a PAN followed by a '=' or 'D' separator is required")
    sep = match["sep"]
    rest = match["rest"]
    emv = sep in "Dd"
    if match["b"] and not emv:
        raise TrackError(f"{where}: a leading 'B' is only accepted with the EMV 'D' separator")
    if emv:
        rest = _EMV_PAD_RE.sub("", rest)
    pan = _check_pan(match["pan"], where)
    expiry, service, discretionary = _parse_tail(rest, sep, where)
    if discretionary is not None and not _is_digits(discretionary):
        raise TrackError(f"{where}: the discretionary data must be digits")
    raw = pan + "=" + rest.replace(sep, "=") if emv else pan + "=" + rest
    return Track2(pan=pan, expiry_yymm=expiry, service_code=service, discretionary=discretionary, raw=raw)


def parse_keyed(text: str) -> KeyedEntry:
    """Parse the plaintext of a keyed entry.

    The platform defines how expiry and CVV travel with a keyed PAN (the device interface only names the
    "account number field"): ASCII ``<PAN>``, optionally followed by ``=<YYMM>`` and then optionally by
    ``=<CVV>`` (3 or 4 digits); ``<PAN>==<CVV>`` carries a CVV without expiry, mirroring the track convention
    of a repeated separator for an absent field. Surrounding whitespace and NUL padding are ignored.

    >>> parse_keyed("4242424242424242=2512=123").expiry_mmyy
    '1225'
    """
    where = "keyed entry"
    if not isinstance(text, str):
        raise TrackError(f"{where}: expected text")
    match = _KEYED_RE.fullmatch(text.strip("\x00 \t\r\n"))
    if match is None:
        raise TrackError(f"{where}: expected PAN[=YYMM[=CVV]] with a 3-4 digit CVV")
    pan = _check_pan(match["pan"], where)
    return KeyedEntry(pan=pan, expiry_yymm=match["exp"], cvv=match["cvv"] or match["cvv_only"])


def track_lrc(track: str) -> str:
    """The LRC character of a track, computed from its start sentinel through its end sentinel.

    ISO/IEC 7811: the LRC is the XOR of the data values of every character. Track 1 (starts with ``%``)
    uses 6-bit values, ``ord(c) - 0x20``, and the result is printed as ``value + 0x20``; tracks 2 and 3
    (start with ``;``) use 4-bit values, ``ord(c) - 0x30``, printed as ``value + 0x30``. Raises
    :class:`TrackError` for a character outside the track's character set.

    >>> track_lrc(";4266841088889999=080910110000046?")
    '0'
    """
    if not isinstance(track, str) or not track:
        raise TrackError("LRC: expected a track with its start sentinel")
    base, mask = (0x20, 0x3F) if track[0] == "%" else (0x30, 0x0F)
    lrc = 0
    for ch in track:
        value = ord(ch) - base
        if not 0 <= value <= mask:
            raise TrackError("LRC: character outside the track character set")
        lrc ^= value
    return chr(lrc + base)


def _track_spans(text: str) -> list[tuple[int, int, int]]:
    """``(start, end, next)`` of each sentinel-delimited track: ``text[start:end]`` is the track with its
    sentinels and ``next`` the index after its LRC, if one follows.

    The character after an end sentinel is its LRC, except when it is a start sentinel that begins the next
    track. A start sentinel is the LRC only when it ends the data or another start sentinel follows it (an
    LRC can equal ``%`` or ``;``, and a track always starts with its sentinel followed by data).
    """
    spans: list[tuple[int, int, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] not in _START_SENTINELS:
            i += 1
            continue
        end = text.find(_END_SENTINEL, i + 1)
        if end < 0:
            break
        nxt = end + 1
        if nxt < n:
            ch = text[nxt]
            if ch not in _START_SENTINELS or nxt + 1 == n or text[nxt + 1] in _START_SENTINELS:
                nxt += 1
        spans.append((i, end + 1, nxt))
        i = nxt
    return spans


def split_tracks(text: str) -> tuple[str | None, str | None]:
    """The first track 1 (``%...?``) and the first track 2 (``;...=...?``) in ``text``, sentinels kept,
    LRC dropped; ``None`` for a track that is not there. For readers that return the tracks concatenated.

    The character after an end sentinel is taken as that track's LRC unless it is a start sentinel followed
    by track data: an LRC can itself be ``%`` or ``;``, but a following track always has data after its
    start sentinel, while an LRC is followed by the next start sentinel or by the end of the data.
    """
    track1: str | None = None
    track2: str | None = None
    for start, end, _next in _track_spans(text):
        track = text[start:end]
        if track[0] == "%" and track1 is None:
            track1 = track
        elif track[0] == ";" and track2 is None and ("=" in track or "D" in track):
            track2 = track
    return track1, track2


def strip_track_bytes(data: bytes) -> bytes:
    """The meaningful bytes of decrypted track data: sentinels kept, LRC and padding removed.

    Readers encrypt the track as read (start sentinel .. end sentinel, then the LRC byte) and pad it with
    zero bytes to the cipher block size. This removes the trailing zero bytes, then the LRC byte after each
    end sentinel (see :func:`split_tracks` for how an LRC is told from the next track's sentinel). Data
    without sentinels (a keyed entry) only loses its zero padding.

    >>> strip_track_bytes(b";4266841088889999=080910110000046?0\\x00\\x00\\x00\\x00\\x00")
    b';4266841088889999=080910110000046?'
    """
    # latin-1 maps bytes to code points one to one, so the text helpers work on bytes unchanged.
    text = bytes(data).rstrip(b"\x00").decode("latin-1")
    out: list[str] = []
    pos = 0
    for _start, end, nxt in _track_spans(text):
        out.append(text[pos:end])
        pos = nxt
    out.append(text[pos:])
    return "".join(out).encode("latin-1")


def _pick(name: str, *sources: Track1 | Track2 | KeyedEntry | None) -> str | None:
    """The first non-``None`` attribute ``name`` among the present ``sources``."""
    for source in sources:
        if source is not None:
            value = getattr(source, name)
            if value is not None:
                return value
    return None


def track_format(
    kind: str,
    track1: Track1 | None,
    track2: Track2 | None,
    keyed: KeyedEntry | None,
) -> str | None:
    """The value of one parser substitution format (interface.md "Parser substitution formats").

    Card-level fields (PAN, expiry, service code, discretionary) come from the first source that carries
    them, in the order track 2, track 1, keyed entry: track 2 is what authorisation messages carry and what
    EMV returns. Name formats come from track 1, ``cvv`` from the keyed entry. Returns ``None`` when the
    source data has no such value (the proxy then applies the substitution's ``default``). Raises
    ``ValueError`` for a format not in :data:`TRACK_FORMATS`.

    ``expiry`` is ``MMYY``; ``expiryMonth`` and ``expiryYear`` are two digits each; ``firstNameAndSurname``
    is ``"FIRST SURNAME"``; ``rawName`` keeps the track's padding.
    """
    t1, t2, k = track1, track2, keyed
    if kind == "rawTrack2":
        return t2.with_sentinels if t2 else None
    if kind == "track2":
        return t2.raw if t2 else None
    if kind == "track2equivalentLower":
        return t2.raw.replace("=", "d") if t2 else None
    if kind == "track2equivalentUpper":
        return t2.raw.replace("=", "D") if t2 else None
    if kind == "rawTrack1":
        return t1.with_sentinels if t1 else None
    if kind == "Track1":
        return t1.raw if t1 else None
    if kind == "pan":
        return _pick("pan", t2, t1, k)
    if kind == "expiry":
        return _pick("expiry_mmyy", t2, t1, k)
    if kind == "expiryMonth":
        return _pick("expiry_month", t2, t1, k)
    if kind == "expiryYear":
        return _pick("expiry_year", t2, t1, k)
    if kind == "cvv":
        return k.cvv if k else None
    if kind == "serviceCode":
        return _pick("service_code", t2, t1)
    if kind == "discretionary":
        return _pick("discretionary", t2, t1)
    if kind == "firstName":
        return t1.first_name if t1 else None
    if kind == "surname":
        return t1.surname if t1 else None
    if kind == "firstNameAndSurname":
        return t1.full_name if t1 else None
    if kind == "rawName":
        return t1.raw_name if t1 else None
    raise ValueError("unknown parser substitution format")
