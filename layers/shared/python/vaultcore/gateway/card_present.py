"""Card-present sales on QSAPI (issue 20, item 9): clear magnetic-stripe tracks and P2PE reader payloads.

Two ways to send a card that is present, instead of ``card_number`` / ``card_expiration``:

* ``card_tracks`` (request ``source`` ``swiped``): track 1 and/or track 2 as a swipe reads them, with their
  sentinels (``%B...^NAME^YYMM...?`` and ``;PAN=YYMM...?``), concatenated, each optionally followed by its LRC
  character. Read with the project's track parser (:mod:`vaultcore.cards.tracks`); an LRC that is sent must be
  the track's (ISO/IEC 7811), text outside the tracks must be white space.
* ``device_type``, ``device_serial``, ``ksn``, ``device_payload`` (+ optional ``device_client_id``), request
  ``source`` ``p2pe``: the encrypted reader payload ``POST /api/decrypt/parser`` takes (its ``deviceType``,
  ``deviceSerial``, ``ksn``, ``devicePayload``, ``clientId``), for a device registered to the account's partner.
  Decrypted by the parser's own domain function (:func:`vaultcore.devices.parser.decrypt_for_partner`), so the
  card data never exists in clear outside the platform.

Either way the payment values (card number, expiry ``MMYY``, names from track 1) live in memory only: the
transaction keeps last four, brand and expiry like any card payment; tracks and a keyed entry's CVV are never
stored, logged or tokenized (PCI DSS 3.3.1.1 / 3.3.1.2).

Answers: ``swiped`` true, ``keyed`` false, ``entry_mode`` ``swiped`` for a swipe and for a reader's swiped or
EMV read (the parser's ``meta.mode``: "EMV payloads return swiped"); a keyed entry on an encrypting terminal
answers ``keyed`` true, ``entry_mode`` ``keyed`` (the spec's vocabulary for both; no third value).

Refusals: data that cannot be read as a card (format, LRC, no PAN, PAN not 13-19 digits or failing Luhn, no
valid expiry, tracks that disagree, a payload that does not decrypt) is 223 ``CARD DATA UNREADABLE``; a device
that is unknown, inactive, of another type or another partner's is 225, one message for all (nothing about the
device is disclosed). Messages never quote card data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vaultcore.cards.luhn import luhn_valid
from vaultcore.cards.tracks import (
    Track1,
    Track2,
    TrackError,
    _track_spans,
    parse_track1,
    parse_track2,
    split_tracks,
    track_lrc,
)
from vaultcore.gateway.errors import E, GatewayError

__all__ = ["VARIABLES", "P2PE_VARIABLES", "PATTERNS", "SOURCES", "CardPresent", "source_of", "parse_tracks",
           "from_tracks", "resolve_p2pe", "resolve"]

P2PE_VARIABLES = ("device_type", "device_serial", "device_client_id", "ksn", "device_payload")
VARIABLES = ("card_tracks", *P2PE_VARIABLES)
SOURCES = ("swiped", "p2pe")
_SERIAL = re.compile(r"[A-Za-z0-9._:\-]{1,64}")  # the device registry's serial and clientId form
#: QSAPI variable -> (pattern, error code); merged into the validator's table (vaultcore.gateway.validation).
PATTERNS: dict[str, tuple[re.Pattern[str], int]] = {
    # Track 1 is at most 79 characters, track 2 at most 40, track 3 at most 107 (ISO/IEC 7811), each with
    # sentinels and an LRC; readers may end the data or separate the tracks with a line end.
    "card_tracks": (re.compile(r"[\x20-\x7e\t\r\n]{2,512}"), E.CARD_DATA_UNREADABLE),
    "device_type": (re.compile(r"[A-Za-z0-9._\-]{1,64}"), E.VARIABLE),
    "device_serial": (_SERIAL, E.VARIABLE),
    "device_client_id": (_SERIAL, E.VARIABLE),
    "ksn": (re.compile(r"[0-9A-Fa-f]{2,64}"), E.VARIABLE),
    "device_payload": (re.compile(r"[0-9A-Fa-f]{2,4096}"), E.VARIABLE),
}
_EXPIRY = re.compile(r"(0[1-9]|1[0-2])[0-9]{2}")
_NAME = re.compile(r"[^\x00-\x1f\x7f]{2,50}")  # the gateway's first_name / last_name form


def _unreadable() -> GatewayError:
    return GatewayError(E.CARD_DATA_UNREADABLE)


@dataclass(frozen=True, repr=False)
class CardPresent:
    """The payment values of a card-present read (clear: memory only, never stored or logged)."""

    card_number: str
    card_expiration: str  # MMYY
    first_name: str | None
    last_name: str | None
    entry_mode: str  # "swiped" or "keyed"
    card_verification: str | None = None  # a keyed P2PE entry's CVV: for the processor only

    def __repr__(self) -> str:
        return f"CardPresent(last4={self.card_number[-4:]!r}, entry_mode={self.entry_mode!r})"

    def payment_values(self) -> dict[str, str]:
        """``card_number``, ``card_expiration`` and, when the card carries them, the names and the CVV."""
        values = {"card_number": self.card_number, "card_expiration": self.card_expiration}
        for name in ("first_name", "last_name", "card_verification"):
            value = getattr(self, name)
            if value:
                values[name] = value
        return values

    def entry_fields(self) -> dict[str, Any]:
        """The transaction's ``keyed``, ``swiped`` and ``entry_mode``."""
        keyed = self.entry_mode == "keyed"
        return {"keyed": keyed, "swiped": not keyed, "entry_mode": self.entry_mode}


def source_of(values: Mapping[str, str]) -> str | None:
    """``"swiped"`` (card_tracks), ``"p2pe"`` (a reader payload) or None; both at once is 217, and a P2PE
    payment needs device_type, device_serial and device_payload (200)."""
    p2pe = [k for k in P2PE_VARIABLES if k in values]
    if "card_tracks" in values:
        if p2pe:
            raise GatewayError(E.PAYMENT_DATA, "Send card_tracks or a P2PE reader payload, not both.")
        return "swiped"
    if not p2pe:
        return None
    for name in ("device_type", "device_serial", "device_payload"):
        if name not in values:
            raise GatewayError(E.MISSING, f"{name} is required with a P2PE reader payload.")
    return "p2pe"


def _card_number(pan: str) -> str:
    if not (13 <= len(pan) <= 19) or not luhn_valid(pan):
        raise _unreadable()
    return pan


def _name(value: str | None) -> str | None:
    return value if value is not None and _NAME.fullmatch(value) else None  # optional: left out when unusable


def from_tracks(track1: Track1 | None, track2: Track2 | None, entry_mode: str = "swiped") -> CardPresent:
    """The payment values of parsed tracks: PAN and expiry from track 2 first (what authorisation messages
    carry), names from track 1. Tracks that disagree on the PAN or the expiry are unreadable."""
    if track1 is None and track2 is None:
        raise _unreadable()
    if track1 is not None and track2 is not None and (
            track1.pan != track2.pan or None not in (track1.expiry_yymm, track2.expiry_yymm)
            and track1.expiry_yymm != track2.expiry_yymm):
        raise _unreadable()
    first = track2 or track1
    assert first is not None
    pan = _card_number(first.pan)
    expiry = (track2.expiry_mmyy if track2 else None) or (track1.expiry_mmyy if track1 else None)
    if expiry is None or not _EXPIRY.fullmatch(expiry):
        raise _unreadable()
    first_name = _name(track1.first_name) if track1 else None
    last_name = _name(track1.surname) if track1 else None
    return CardPresent(pan, expiry, first_name, last_name, entry_mode)


def parse_tracks(text: str) -> CardPresent:
    """Read ``card_tracks``: track 1 and/or track 2 with sentinels, each optionally followed by its LRC.

    Refused (223): no sentinel-delimited track, text outside the tracks other than white space, an LRC that is
    not the track's, a track the parser rejects, or card values that fail :func:`from_tracks`.
    """
    data = text.strip(" \t\r\n")
    spans = _track_spans(data)
    if not spans:
        raise _unreadable()
    outside: list[str] = []
    pos = 0
    for start, end, nxt in spans:
        outside.append(data[pos:start])
        pos = nxt
        try:
            if nxt > end and data[end] != track_lrc(data[start:end]):
                raise _unreadable()  # the reader's LRC: the track was misread
        except TrackError:
            raise _unreadable() from None  # a character outside the track's character set
    outside.append(data[pos:])
    if "".join(outside).strip(" \t\r\n"):
        raise _unreadable()
    t1_text, t2_text = split_tracks(data)
    try:
        track1 = parse_track1(t1_text) if t1_text else None
        track2 = parse_track2(t2_text) if t2_text else None
    except TrackError:
        raise _unreadable() from None
    return from_tracks(track1, track2, "swiped")


def resolve_p2pe(values: Mapping[str, str], partner_id: str | None) -> CardPresent:
    """Decrypt a reader payload of a device registered to ``partner_id`` (the parser endpoint's own function)
    and read the card it holds. 224 for a device that cannot be used, 223 for a payload that cannot be read,
    error 1 (nothing charged) when the key service is unavailable."""
    from vaultcore.devices.parser import ParserError, decrypt_for_partner
    from vaultcore.errors import Conflict, DependencyError, ValidationError

    if not partner_id:
        raise GatewayError(E.DEVICE_NOT_REGISTERED)
    try:
        card = decrypt_for_partner(partner_id, values["device_type"], values["device_serial"],
                                   values["device_payload"], values.get("ksn"), values.get("device_client_id"))
    except Conflict:  # 1202 not registered to this partner, 1203 inactive
        raise GatewayError(E.DEVICE_NOT_REGISTERED) from None
    except ParserError as exc:
        if exc.code in (2000, 2001, 1201, 1205):  # unknown device type, or not the registered device's
            raise GatewayError(E.DEVICE_NOT_REGISTERED) from None
        raise _unreadable() from None
    except ValidationError:  # 2600 / 2605: the HSM could not decrypt it with this device's key
        raise _unreadable() from None
    except DependencyError:
        raise GatewayError(E.INTERNAL, "Internal error: the reader payload could not be decrypted and nothing "
                                       "was charged; retry.") from None
    if card.keyed is not None:
        keyed = card.keyed
        expiry = keyed.expiry_mmyy
        if expiry is None or not _EXPIRY.fullmatch(expiry):
            raise _unreadable()
        return CardPresent(_card_number(keyed.pan), expiry, None, None, "keyed", keyed.cvv)
    return from_tracks(card.track1, card.track2, "swiped")


def resolve(source: str, values: Mapping[str, str], partner_id: str | None) -> CardPresent:
    """The payment values of a card-present request (``source`` ``swiped`` or ``p2pe``)."""
    if source == "swiped":
        return parse_tracks(values["card_tracks"])
    if source == "p2pe":
        return resolve_p2pe(values, partner_id)
    raise ValueError("not a card-present source")
