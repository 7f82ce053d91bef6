"""Payment-device simulator: builds the encrypted payloads a terminal or an audio reader would send.

For tests, the local runner's demo and integrators (``python -m vaultcore.devices.simulator --help``).
Only test cards and test keys belong here: the output is printed.

Plaintext formats (the contract the decryption parser reads; encryption zero-pads them to the block size):

======  ==========================================================================================
mode    plaintext
======  ==========================================================================================
keyed   ASCII ``<PAN>`` optionally followed by ``=<YYMM>`` and then ``=<CVV>`` (a CVV needs an expiry)
track1  ISO/IEC 7813 format B with sentinels and LRC: ``%B<PAN>^<NAME>^<YYMM><SVC><DISC>?<LRC>``
track2  ISO/IEC 7813 with sentinels and LRC: ``;<PAN>=<YYMM><SVC><DISC>?<LRC>``
emv57   EMV tag 57 TLV: ``57 <len> <BCD of PAN 'D' YYMM SVC DISC, 'F'-padded to whole bytes>``
emv5a   EMV tag 5A TLV: ``5A <len> <BCD of PAN, 'F'-padded>``
swiped  audio reader only: track 1 and track 2 in one message
======  ==========================================================================================

LRCs follow ISO/IEC 7811 (:func:`vaultcore.cards.reader_formats.track_lrc`). A terminal payload is the
encrypted field alone (its KSN travels beside it); an audio-reader payload is an ID TECH message of
:mod:`vaultcore.cards.reader_formats` with the KSN inside and, with ``--frame``, the device frame. Its
``--format``: ``original`` (T1||T2 one CBC stream, SHA-1 hashes), ``enhanced`` (each track encrypted
separately, fields 8/9, SHA-1 hashes) or ``unimag-ii`` (enhanced layout without hashes, with a 10-byte serial
number, track status bit 2 always set). ``--aes-data-key`` (enhanced formats, TDES scheme): AES-CBC under the
TDES DUKPT data key, as ID TECH readers set to AES do. Audio readers swipe only:
``keyed``/``emv57``/``emv5a`` are terminal modes.

Defaults: TDES demo BDK ``0123456789ABCDEFFEDCBA9876543210`` (also used for ``aes128``) with KSN
``FFFF9876543210E00001``; ``aes256`` uses the X9.24-3 test BDK
``FEDCBA9876543210F1F1F1F1F1F1F1F1FEDCBA9876543210F1F1F1F1F1F1F1F1``; AES KSNs default to
``123456789012345600000001``. Test card 4761739001010010, expiry 2512.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from vaultcore.cards import reader_formats
from vaultcore.crypto import dukpt, dukpt_aes
from vaultcore.crypto.dukpt import KeyVariant, Scheme

__all__ = [
    "DEVICE_TYPE_TERMINAL",
    "DEVICE_TYPE_AUDIO_READER",
    "AUDIO_FORMATS",
    "DEFAULT_BDK",
    "DEFAULT_KSN",
    "Mode",
    "Card",
    "keyed_plaintext",
    "track1",
    "track2",
    "emv57",
    "emv5a",
    "plaintext",
    "masked_track1",
    "masked_track2",
    "terminal_payload",
    "audio_reader_payload",
    "main",
]

DEVICE_TYPE_TERMINAL = "terminal"
DEVICE_TYPE_AUDIO_READER = "audio-reader"

DEFAULT_BDK = {
    Scheme.TDES: "0123456789ABCDEFFEDCBA9876543210",
    Scheme.AES128: "0123456789ABCDEFFEDCBA9876543210",
    Scheme.AES256: "FEDCBA9876543210F1F1F1F1F1F1F1F1FEDCBA9876543210F1F1F1F1F1F1F1F1",
}
DEFAULT_KSN = {
    Scheme.TDES: "FFFF9876543210E00001",
    Scheme.AES128: "123456789012345600000001",
    Scheme.AES256: "123456789012345600000001",
}
DEFAULT_PAN = "4761739001010010"
DEFAULT_EXPIRY = "2512"
DEFAULT_NAME = "TEST/CARD"


class Mode(StrEnum):
    KEYED = "keyed"
    TRACK1 = "track1"
    TRACK2 = "track2"
    EMV57 = "emv57"
    EMV5A = "emv5a"
    SWIPED = "swiped"


AUDIO_FORMATS = ("original", "enhanced", "unimag-ii")
DEFAULT_SERIAL = b"0012345678"  # UniMag II: 10 bytes, '0'-padded on the left
TERMINAL_MODES = (Mode.KEYED, Mode.TRACK1, Mode.TRACK2, Mode.EMV57, Mode.EMV5A)
AUDIO_READER_MODES = (Mode.SWIPED, Mode.TRACK1, Mode.TRACK2)


def _digits(value: str, lo: int, hi: int, what: str) -> None:
    if not (value.isascii() and value.isdigit() and lo <= len(value) <= hi):
        raise ValueError(f"{what} must be {lo}-{hi} digits")


@dataclass(frozen=True, slots=True)
class Card:
    """A test card. PAN and CVV stay out of ``repr``."""

    pan: str = field(default=DEFAULT_PAN, repr=False)
    expiry: str = DEFAULT_EXPIRY  # YYMM
    name: str = DEFAULT_NAME  # SURNAME/FIRST, ISO/IEC 7813 track 1 name field
    cvv: str | None = field(default=None, repr=False)
    service_code: str = "201"
    discretionary: str = "0000000000"

    def __post_init__(self) -> None:
        _digits(self.pan, 12, 19, "PAN")
        _digits(self.expiry, 4, 4, "expiry (YYMM)")
        if self.cvv is not None:
            _digits(self.cvv, 3, 4, "CVV")
        _digits(self.service_code, 3, 3, "service code")
        if self.discretionary:
            _digits(self.discretionary, 1, 32, "discretionary data")
        # ISO/IEC 7813: name 2-26 characters of the 6-bit set, without the field separator.
        if not (2 <= len(self.name) <= 26) or any(not (0x20 <= ord(c) <= 0x5F) or c in "^%?" for c in self.name):
            raise ValueError("name must be 2-26 upper-case track 1 characters without ^ % ?")


def _with_lrc(track: str, number: int) -> bytes:
    data = track.encode("ascii")
    return data + bytes([reader_formats.track_lrc(data, number)])


def keyed_plaintext(card: Card) -> bytes:
    """``<PAN>[=<YYMM>[=<CVV>]]``: a keyed entry always carries the expiry here; the CVV when given."""
    text = f"{card.pan}={card.expiry}"
    if card.cvv:
        text += f"={card.cvv}"
    return text.encode("ascii")


def track1(card: Card) -> bytes:
    """ISO/IEC 7813 track 1 format B with start/end sentinels and the 6-bit LRC character."""
    return _with_lrc(f"%B{card.pan}^{card.name}^{card.expiry}{card.service_code}{card.discretionary}?", 1)


def track2(card: Card) -> bytes:
    """ISO/IEC 7813 track 2 with start/end sentinels and the 4-bit LRC character."""
    return _with_lrc(f";{card.pan}={card.expiry}{card.service_code}{card.discretionary}?", 2)


def _bcd_tlv(tag: int, digits: str) -> bytes:
    if len(digits) % 2:
        digits += "F"  # EMV: compressed numeric / track 2 equivalent are padded with F to whole bytes
    value = bytes.fromhex(digits)
    return bytes([tag, len(value)]) + value


def emv57(card: Card) -> bytes:
    """EMV tag 57 (track 2 equivalent data, EMV 4.3 Book 3 Annex A): ``57 L PAN D YYMM SVC DISC [F]``."""
    return _bcd_tlv(0x57, f"{card.pan}D{card.expiry}{card.service_code}{card.discretionary}")


def emv5a(card: Card) -> bytes:
    """EMV tag 5A (application PAN, compressed numeric): ``5A L PAN [F]``."""
    return _bcd_tlv(0x5A, card.pan)


_BUILDERS = {
    Mode.KEYED: keyed_plaintext,
    Mode.TRACK1: track1,
    Mode.TRACK2: track2,
    Mode.EMV57: emv57,
    Mode.EMV5A: emv5a,
}


def plaintext(mode: Mode | str, card: Card) -> bytes:
    """The clear data a terminal encrypts in ``mode`` (see the module docstring)."""
    mode = Mode(mode)
    if mode not in _BUILDERS:
        raise ValueError("mode is not a terminal mode")
    return _BUILDERS[mode](card)


def _mask_pan(pan: str) -> str:
    # ID TECH readers' default masking: first 4 and last 4 digits in clear.
    return pan[:4] + "*" * (len(pan) - 8) + pan[-4:]


def masked_track1(card: Card) -> bytes:
    """The reader's masked track 1: PAN first/last 4, name and expiry clear, the rest and the LRC ``*``."""
    tail = "*" * len(card.service_code + card.discretionary)
    return f"%*{_mask_pan(card.pan)}^{card.name}^{card.expiry}{tail}?*".encode("ascii")


def masked_track2(card: Card) -> bytes:
    """The reader's masked track 2: PAN first/last 4 and expiry clear, the rest and the LRC ``*``."""
    tail = "*" * len(card.service_code + card.discretionary)
    return f";{_mask_pan(card.pan)}={card.expiry}{tail}?*".encode("ascii")


def terminal_payload(
    card: Card,
    mode: Mode | str,
    *,
    scheme: Scheme | str = Scheme.TDES,
    bdk: bytes | None = None,
    ksn: bytes | None = None,
    variant: KeyVariant | str = KeyVariant.DATA,
    device_type: str = DEVICE_TYPE_TERMINAL,
) -> dict[str, str]:
    """A terminal's decryption-request fields: ``deviceType``, ``ksn`` and ``devicePayload`` (hex)."""
    scheme = Scheme(scheme)
    bdk = bytes.fromhex(DEFAULT_BDK[scheme]) if bdk is None else bdk
    ksn = bytes.fromhex(DEFAULT_KSN[scheme]) if ksn is None else ksn
    ciphertext = dukpt.encrypt(scheme, bdk, ksn, plaintext(mode, card), variant)
    return {"deviceType": device_type, "ksn": ksn.hex().upper(), "devicePayload": ciphertext.hex().upper()}


def audio_reader_payload(
    card: Card,
    mode: Mode | str = Mode.SWIPED,
    *,
    scheme: Scheme | str = Scheme.TDES,
    bdk: bytes | None = None,
    ksn: bytes | None = None,
    variant: KeyVariant | str = KeyVariant.DATA,
    hashes: bool = True,
    framed: bool = False,
    device_type: str = DEVICE_TYPE_AUDIO_READER,
    payload_format: str = "original",
    aes_data_key: bool = False,
) -> dict[str, str]:
    """An audio reader's request fields: ``deviceType`` and ``devicePayload`` (hex, KSN inside)."""
    scheme, mode = Scheme(scheme), Mode(mode)
    if mode not in AUDIO_READER_MODES:
        raise ValueError("an audio reader only swipes: mode must be swiped, track1 or track2")
    if payload_format not in AUDIO_FORMATS:
        raise ValueError("payload format must be original, enhanced or unimag-ii")
    if aes_data_key and (payload_format == "original" or scheme is not Scheme.TDES):
        raise ValueError("an AES data key is for the enhanced formats with a TDES BDK")
    bdk = bytes.fromhex(DEFAULT_BDK[scheme]) if bdk is None else bdk
    ksn = bytes.fromhex(DEFAULT_KSN[scheme]) if ksn is None else ksn
    t1 = track1(card) if mode in (Mode.SWIPED, Mode.TRACK1) else b""
    t2 = track2(card) if mode in (Mode.SWIPED, Mode.TRACK2) else b""
    masked = {1: masked_track1(card) if t1 else b"", 2: masked_track2(card) if t2 else b""}
    if payload_format == "original":
        message = reader_formats.build_audio_message(
            t1,
            t2,
            dukpt.encrypt(scheme, bdk, ksn, t1 + t2, variant),
            ksn,
            masked_t1=masked[1],
            masked_t2=masked[2],
            hashes=hashes,
            block_size=dukpt.block_size(scheme),
        )
    else:

        def encrypt(track: bytes) -> bytes:
            if aes_data_key:  # ID TECH: TDES DUKPT data key used as the AES-128 key
                key = dukpt.data_key(scheme, bdk, ksn, variant)
                return dukpt_aes.aes_cbc_encrypt(key, dukpt.zero_pad(track, dukpt_aes.BLOCK_SIZE))
            return dukpt.encrypt(scheme, bdk, ksn, track, variant)

        tracks = {n: t for n, t in ((1, t1), (2, t2)) if t}
        unimag = payload_format == "unimag-ii"
        message = reader_formats.build_enhanced_message(
            (t1, t2, b""),
            {n: encrypt(t) for n, t in tracks.items()},
            ksn,
            clear={n: masked[n] for n in tracks},
            hashed=tracks if hashes and not unimag else (),
            serial_number=DEFAULT_SERIAL if unimag else None,
            aes=aes_data_key or scheme is not Scheme.TDES,
            pin_key=KeyVariant(variant) is KeyVariant.PIN,
            # UniMag II manual: track status bit 2 "always 1"; bits 3/4 T1/T2 sampling data present
            track_status=(0x04 | sum({1: 0x09, 2: 0x12}[n] for n in tracks)) if unimag else None,
        )
    if framed:
        message = reader_formats.frame(message)
    return {"deviceType": device_type, "devicePayload": message.hex().upper()}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m vaultcore.devices.simulator",
        description="Print the JSON fields of a device decryption request for a test card.",
    )
    p.add_argument("--scheme", choices=[s.value for s in Scheme], default=Scheme.TDES.value)
    p.add_argument("--bdk", help="BDK hex (default: the scheme's demo/test BDK)")
    p.add_argument("--ksn", help="KSN hex (default: FFFF9876543210E00001 for tdes, 123456789012345600000001 for AES)")
    p.add_argument(
        "--device-type", choices=[DEVICE_TYPE_TERMINAL, DEVICE_TYPE_AUDIO_READER], default=DEVICE_TYPE_TERMINAL
    )
    p.add_argument("--mode", choices=[m.value for m in Mode], help="default: track2 (terminal), swiped (audio reader)")
    p.add_argument("--variant", choices=[v.value for v in KeyVariant], default=KeyVariant.DATA.value)
    p.add_argument("--pan", default=DEFAULT_PAN)
    p.add_argument("--expiry", default=DEFAULT_EXPIRY, help="YYMM")
    p.add_argument("--name", default=DEFAULT_NAME, help='"SURNAME/FIRST"')
    p.add_argument("--cvv")
    p.add_argument("--service-code", default="201")
    p.add_argument("--discretionary", default="0000000000")
    p.add_argument("--frame", action="store_true", help="audio reader: wrap the message in the device frame")
    p.add_argument("--no-hashes", action="store_true", help="audio reader: leave the track hashes out")
    p.add_argument("--format", choices=AUDIO_FORMATS, default="original", help="audio reader: ID TECH payload format")
    p.add_argument("--aes-data-key", action="store_true",
                   help="audio reader, enhanced formats, tdes: AES-CBC under the TDES DUKPT data key")
    return p


def _hex_arg(p: argparse.ArgumentParser, value: str | None, what: str) -> bytes | None:
    if value is None:
        return None
    try:
        return bytes.fromhex(value)
    except ValueError:
        p.error(f"--{what} is not hexadecimal")
    return None  # unreachable: p.error exits


def main(argv: Sequence[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    scheme = Scheme(args.scheme)
    audio = args.device_type == DEVICE_TYPE_AUDIO_READER
    mode = Mode(args.mode) if args.mode else (Mode.SWIPED if audio else Mode.TRACK2)
    if audio and mode not in AUDIO_READER_MODES:
        p.error("an audio reader only swipes: --mode must be swiped, track1 or track2")
    if not audio and mode not in TERMINAL_MODES:
        p.error("--mode swiped is for the audio reader; a terminal sends one field")
    bdk, ksn = _hex_arg(p, args.bdk, "bdk"), _hex_arg(p, args.ksn, "ksn")
    try:
        card = Card(args.pan, args.expiry, args.name, args.cvv, args.service_code, args.discretionary)
        if audio:
            out = audio_reader_payload(
                card,
                mode,
                scheme=scheme,
                bdk=bdk,
                ksn=ksn,
                variant=args.variant,
                hashes=not args.no_hashes,
                framed=args.frame,
                payload_format=args.format,
                aes_data_key=args.aes_data_key,
            )
        else:
            out = terminal_payload(card, mode, scheme=scheme, bdk=bdk, ksn=ksn, variant=args.variant)
    except ValueError as exc:  # KsnError and bad card fields: messages carry no key or card data
        p.error(str(exc))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
