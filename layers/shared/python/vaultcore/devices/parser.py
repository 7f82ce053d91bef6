"""Device payload decryption: POST /api/decrypt/parser, and the same decryption for the proxy's parser action
and tokenization's ``dev-payload`` header.

Flow: authenticate the partner → the device must be registered to it and active (1202, 1203) → its profile
says where the KSN is and how the payload is laid out → the device's BDK decrypts (software DUKPT or the HSM)
→ the plaintext is read as a keyed entry, track 1/2, or EMV tag 57/5A, decided from its content.

Terminal plaintext (``<device_type_terminal>``), after the cipher's zero padding:
- starts with ``%`` or ``;``: swiped track 1 and/or track 2 (sentinels, track LRC, ISO/IEC 7813);
- BER-TLV holding tag 57 (track 2 equivalent) and/or 5A (PAN): EMV, answered as ``swiped`` with ``track2``;
- bare tag 57 value (BCD, ``D`` separator, ``F`` pad) or bare 5A value (BCD, ``F`` pad): EMV likewise;
- ASCII ``PAN[=YYMM[=CVV]]``: keyed entry (the platform's definition of how expiry and CVV travel with it).

Audio-reader payloads (``<device_type_audio_reader>``): the ID TECH original or enhanced format, framed or not
(:mod:`vaultcore.cards.reader_formats`); the KSN is inside. All the encrypted data is decrypted in one call,
the SHA-1 hashes decide whether the decryption is right (2140 otherwise), and the tracks are read as a swipe.
The payload's own cipher (enhanced field 8) must be one the device's BDK can use (2120 otherwise); field 8
bit 6 ("PIN key encryption") selects the PIN variant instead of the profile's.

Nothing here logs decrypted data; errors carry codes and fixed messages only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from vaultcore import metrics
from vaultcore.api.http import Request, Response
from vaultcore.api.secure import json_object_body, reference_of, success
from vaultcore.auth.authenticator import authenticate
from vaultcore.cards import emv, reader_formats
from vaultcore.cards.masking import mask_keyed, mask_track1, mask_track2
from vaultcore.cards.tracks import (
    KeyedEntry,
    Track1,
    Track2,
    TrackError,
    parse_keyed,
    parse_track1,
    parse_track2,
    split_tracks,
    strip_track_bytes,
)
from vaultcore.crypto import dukpt
from vaultcore.devices.decryptors import cipher_usable, decryptor_for
from vaultcore.devices.profiles import DeviceProfile, profile_for
from vaultcore.devices.registry import Bdk, Device, load_bdk, load_device
from vaultcore.errors import Conflict, DependencyError, ValidationError, VaultError

__all__ = ["DecryptedCard", "active_device", "decrypt_for_partner", "decrypt_device_payload", "read_terminal_plaintext",
           "parser_response", "decrypt_parser"]

_HEX = re.compile(r"[0-9A-Fa-f]+")
_BARE_57 = re.compile(r"(\d{12,19})D(\d{4}\d{3}\d*)F?0*", re.IGNORECASE)
_BARE_5A = re.compile(r"(\d{12,19})F?0*", re.IGNORECASE)
MAX_PAYLOAD_HEX = 8192


class ParserError(ValidationError):
    """A decryption-request error with a public 2xxx code."""


@dataclass
class Section:
    """One decrypted field of the response: its bytes, how to read them, their masked text."""

    data: bytes
    encoding: str
    ascii: str
    masked: str

    def to_dict(self) -> dict[str, Any]:
        return {"decrypted": self.data.hex().upper(), "encoding": self.encoding, "length": len(self.data),
                "ascii": self.ascii, "masked": self.masked}


@dataclass
class DecryptedCard:
    mode: str  # "keyed" or "swiped"
    track1: Track1 | None = None
    track2: Track2 | None = None
    keyed: KeyedEntry | None = None
    sections: dict[str, Section] = field(default_factory=dict)
    source: str = ""  # keyed, track, emv57, emv5a (for the proxy's formats and for metrics)

    @property
    def pan(self) -> str | None:
        for src in (self.track2, self.track1, self.keyed):
            if src is not None and src.pan:
                return src.pan
        return None


def _track_card(track_bytes: bytes) -> DecryptedCard:
    meaningful = strip_track_bytes(track_bytes)
    text = meaningful.decode("latin-1")
    t1_text, t2_text = split_tracks(text)
    card = DecryptedCard("swiped", source="track")
    try:
        if t1_text:
            card.track1 = parse_track1(t1_text)
            raw = t1_text.encode("latin-1")
            card.sections["track1"] = Section(raw, "ascii", t1_text, mask_track1(t1_text))
        if t2_text:
            card.track2 = parse_track2(t2_text)
            raw = t2_text.encode("latin-1")
            card.sections["track2"] = Section(raw, "ascii", t2_text, mask_track2(t2_text))
    except TrackError:
        raise ParserError("The decrypted track data is not readable.", code=2603) from None
    if card.track1 is None and card.track2 is None:
        raise ParserError("The decrypted data holds no readable track.", code=2603)
    return card


def _emv_card(tag57: bytes | None, tag5a: bytes | None) -> DecryptedCard:
    card = DecryptedCard("swiped", source="emv57" if tag57 else "emv5a")
    try:
        if tag57:
            text = emv.decode_track2_equivalent(tag57)
            card.track2 = parse_track2(text)
            card.sections["track2"] = Section(tag57, "hex", text, mask_track2(text))
        elif tag5a:
            pan = emv.decode_pan(tag5a)
            card.track2 = Track2(pan=pan, expiry_yymm=None, service_code=None, discretionary=None, raw=pan)
            from vaultcore.cards.masking import mask_pan

            card.sections["track2"] = Section(tag5a, "hex", pan, mask_pan(pan))
    except (TrackError, emv.TlvError, ValueError):
        raise ParserError("The decrypted EMV data is not readable.", code=2604) from None
    return card


def read_terminal_plaintext(plaintext: bytes) -> DecryptedCard:
    """Decide keyed, swiped or EMV from the decrypted content (see the module docstring)."""
    trimmed = plaintext.rstrip(b"\x00")
    if not trimmed:
        raise ParserError("Nothing could be decrypted.", code=1303)
    if trimmed[:1] in (b"%", b";"):
        return _track_card(plaintext)
    if emv.looks_like_tlv(plaintext):
        try:
            tags = emv.parse_tlv(plaintext)
        except emv.TlvError:
            tags = {}
        if "57" in tags or "5A" in tags:
            return _emv_card(tags.get("57"), tags.get("5A"))
    hex_text = plaintext.hex().upper()
    if _BARE_57.fullmatch(hex_text):
        return _emv_card(plaintext.rstrip(b"\x00") if not hex_text.endswith("F") else plaintext, None)
    try:
        text = trimmed.decode("ascii")
    except UnicodeDecodeError:
        text = ""
    if text and text[0].isdigit():
        try:
            keyed = parse_keyed(text)
        except TrackError:
            raise ParserError("The decrypted keyed data is not readable.", code=2603) from None
        card = DecryptedCard("keyed", keyed=keyed, source="keyed")
        card.sections["keyed"] = Section(trimmed, "ascii", text, mask_keyed(text))
        return card
    if _BARE_5A.fullmatch(hex_text) and len(trimmed) <= 10:
        return _emv_card(None, plaintext[:10].rstrip(b"\x00") or plaintext[:10])
    raise ParserError("The decrypted data is not a keyed entry, a track or EMV data (wrong key?).", code=2603)


def _decode_hex(text: Any, code: int, what: str) -> bytes:
    if not isinstance(text, str) or not text.strip():
        raise ParserError(f"{what} is required.", code=code)
    compact = re.sub(r"\s+", "", text)
    if len(compact) > MAX_PAYLOAD_HEX or len(compact) % 2 or not _HEX.fullmatch(compact):
        raise ParserError(f"{what} must be hexadecimal text.", code=code)
    return bytes.fromhex(compact)


def _decrypt(bdk: Bdk, ksn: bytes, ciphertext: bytes, variant: str, cipher: str | None = None) -> bytes:
    try:
        return decryptor_for(bdk).decrypt(bdk, ksn, ciphertext, variant, cipher)
    except dukpt.KsnError:
        raise ParserError("The KSN is invalid.", code=2400) from None
    except dukpt.DecryptionError as exc:
        raise ParserError("The payload cannot be decrypted (length or IV).", code=getattr(exc, "code", 2601)) from None


def decrypt_device_payload(device: Device, profile: DeviceProfile, payload: Any, ksn_hex: Any) -> DecryptedCard:
    """Decrypt one payload of a registered device; every failure is a ParserError with its public code."""
    bdk = load_bdk(device.bdk_id)
    if bdk is None:
        raise DependencyError("Internal error: the device's key is not available.")
    if profile.ksn_source == "request":
        if ksn_hex is None or ksn_hex == "":
            raise ParserError("ksn is required for this device type.", code=2400)
        ksn = _decode_hex(ksn_hex, 2400, "ksn")
        if len(ksn) != dukpt.ksn_length(bdk.scheme):
            raise ParserError("The KSN has the wrong length for this device's key.", code=2400)
        ciphertext = _decode_hex(payload, 2100, "devicePayload")
        return read_terminal_plaintext(_decrypt(bdk, ksn, ciphertext, profile.key_variant))
    # audio-reader: the KSN and the hashes travel inside the payload
    if not isinstance(payload, str) or not payload.strip() or len(payload) > MAX_PAYLOAD_HEX:
        raise ParserError("devicePayload is required.", code=2100)
    try:
        message = reader_formats.parse_audio_message(payload, block_size=dukpt.block_size(bdk.scheme),
                                                     ksn_length=dukpt.ksn_length(bdk.scheme))
    except reader_formats.PayloadError as exc:
        raise ParserError("The device payload is malformed.", code=exc.code) from None
    if message.format not in profile.payload_formats:
        raise ParserError("This device type does not send this payload format.", code=2100)
    if not cipher_usable(bdk.scheme, message.cipher):
        raise ParserError("The payload's cipher cannot be used with this device's key.", code=2120)
    variant = dukpt.KeyVariant.PIN.value if message.pin_key else profile.key_variant
    try:
        tracks = reader_formats.open_message(
            message, lambda data: _decrypt(bdk, message.ksn, data, variant, message.cipher))
    except reader_formats.PayloadError as exc:
        raise ParserError("The decrypted tracks do not match their hashes (wrong key?).", code=exc.code) from None
    return _track_card(tracks.t1 + tracks.t2)


def active_device(partner_id: str, serial: Any, client_id: Any, serial_name: str = "deviceSerial") -> Device:
    """The partner's registered, active device ``serial`` (with ``client_id`` when given): 1201 no serial (named
    ``serial_name`` in the message), 1205 a client id that is not a string, 1202 unknown, 1203 inactive."""
    if not isinstance(serial, str) or not serial.strip():
        raise ParserError(f"{serial_name} is required.", code=1201)
    if client_id is not None and not isinstance(client_id, str):
        raise ParserError("clientId must be a string (or null).", code=1205)
    device = load_device(partner_id, serial.strip(), client_id)
    if device is None:
        raise Conflict("Device not found.", code=1202)
    if device.status != "active":
        raise Conflict("Device is not active.", code=1203)
    return device


def decrypt_for_partner(partner_id: str, device_type: Any, serial: Any, payload: Any, ksn: Any,
                        client_id: Any = None) -> DecryptedCard:
    if not isinstance(device_type, str) or not device_type:
        raise ParserError("deviceType is required.", code=2000)
    profile = profile_for(device_type)
    if profile is None:
        raise ParserError("deviceType is not a known device type.", code=2001)
    device = active_device(partner_id, serial, client_id)
    if device.device_type != device_type:
        raise ParserError("deviceType does not match the registered device.", code=2001)
    return decrypt_device_payload(device, profile, payload, ksn)


def _extracted(card: DecryptedCard) -> dict[str, str]:
    out: dict[str, str] = {}
    if card.keyed is not None:
        out["PAN"] = card.keyed.pan
        if card.keyed.expiry_mmyy:
            out["EXPY"] = card.keyed.expiry_mmyy
        return out
    t1, t2 = card.track1, card.track2
    track = t2 or t1
    pan = track.pan if track else None
    if pan:
        out["PAN"] = pan
    expiry = (t2.expiry_mmyy if t2 else None) or (t1.expiry_mmyy if t1 else None)
    if expiry:
        out["EXPY"] = expiry
    if t1 is not None and t1.surname:
        out["Surname"] = t1.surname
    if t1 is not None and t1.first_name:
        out["FirstName"] = t1.first_name
    service = (t2.service_code if t2 else None) or (t1.service_code if t1 else None)
    if service:
        out["ServiceCode"] = service
    disc = (t2.discretionary if t2 else None) or (t1.discretionary if t1 else None)
    if disc:
        out["Discretionary"] = disc
    return out


def parser_response(card: DecryptedCard, device_type: str, serial: str) -> dict[str, Any]:
    if card.pan is None:
        raise ParserError("No card number was found in the decrypted data.", code=2800)
    body: dict[str, Any] = {"meta": {"device": device_type, "serial": serial, "mode": card.mode}}
    for name in ("keyed", "track1", "track2"):
        if name in card.sections:
            body[name] = card.sections[name].to_dict()
    body["extracted"] = _extracted(card)
    return body


def decrypt_parser(request: Request) -> Response:
    try:
        response = _decrypt_parser(request)
    except VaultError as exc:
        metrics.decrypt_result(exc.code)  # the DecryptResults metric, by public code
        raise
    except Exception:
        metrics.decrypt_result("internal")
        raise
    metrics.decrypt_result("success")
    return response


def _decrypt_parser(request: Request) -> Response:
    body = json_object_body(request)
    reference = reference_of(body)
    caller = authenticate(request, body, body_credentials=True)
    card = decrypt_for_partner(caller.partner_id, body.get("deviceType"), body.get("deviceSerial"),
                               body.get("devicePayload"), body.get("ksn"), body.get("clientId"))
    return success(parser_response(card, body["deviceType"], body["deviceSerial"].strip()), reference)
