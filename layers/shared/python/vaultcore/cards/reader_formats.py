"""Audio-reader payloads: the ID TECH "original" encrypted MSR format, its device frame, and track LRCs.

Pure code (no cryptography here: the caller decrypts with :mod:`vaultcore.crypto.dukpt`).

Card data layout (``interface.md`` "Audio-reader payload layout"; positions there are those of a 50-byte
track 1 and a 36-byte track 2, so they are computed here from the length bytes and status bits)::

    card encode type (1, ignored) | track status (1) | T1 len (1) | T2 len (1) | T3 len (1)
    | masked T1 (T1 len) | masked T2 (T2 len) | clear T3 (T3 len)
    | ENC(T1 || T2) (T1 len + T2 len rounded up to the block size: 8 TDES, 16 AES; one CBC stream)
    | SHA-1(T1) (20, status bit 3) | SHA-1(T2) (20, bit 4) | SHA-1(T3) (20, bit 5) | KSN (10 TDES, 12 AES)

Track status bits: 0/1/2 track 1/2/3 present (each must agree with its length byte being non-zero),
3/4/5 hash of track 1/2/3 present (only for a present track), 6 session id present (not part of this
layout: refused), 7 reserved (refused). Lengths are those of the clear tracks including the start and end
sentinels and the track LRC character; hashes are SHA-1 over exactly those bytes (no padding).

Device frame (ID TECH "original format" framing)::

    STX 0x02 | length of card data, little-endian (2) | card data | CheckLRC (XOR of card data)
    | CheckSum (sum of card data mod 256) | ETX 0x03

A payload starting with 0x02 is taken as a frame: 0x02 is not a defined card encode type (0x00 ISO/ABA,
0x01 AAMVA, 0x03 other, 0x04 raw).

Public error codes (every error is a :class:`PayloadError`, a ``ValueError`` with a ``code``; messages
never contain payload bytes):

====  ==========================  ====================================================================
code  class                       meaning
====  ==========================  ====================================================================
2100  PayloadFormatError          payload empty, not text/bytes, or not hexadecimal text
2110  PayloadLengthError          payload too long, too short, or its size disagrees with its track
                                  lengths and status (ciphertext, hashes, KSN)
2120  TrackStatusError            track status unsupported (session id, reserved bit, track 3 hash of an
                                  absent track), disagrees with the lengths, or no track 1/2 is present
2130  FrameCheckError             frame CheckLRC or CheckSum does not match the card data
2140  HashMismatchError           a decrypted (or clear track 3) hash does not match: wrong key or
                                  corrupted data
2150  FrameError                  frame structure: too short, no ETX, or length field disagrees
====  ==========================  ====================================================================
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass, field

__all__ = [
    "STX",
    "ETX",
    "HASH_LENGTH",
    "MAX_PAYLOAD_BYTES",
    "PayloadError",
    "PayloadFormatError",
    "PayloadLengthError",
    "TrackStatusError",
    "FrameCheckError",
    "HashMismatchError",
    "FrameError",
    "AudioMessage",
    "decode_payload",
    "frame",
    "unframe",
    "parse_audio_message",
    "split_tracks",
    "verify_track_hashes",
    "build_audio_message",
    "track_lrc",
]

STX = 0x02
ETX = 0x03
HASH_LENGTH = 20  # SHA-1
_HEADER = 5
# Three full tracks, hashes, padding and KSN stay well under 2 KiB; refusing more bounds the work a
# caller can make us do before any length check.
MAX_PAYLOAD_BYTES = 4096
_HEX_WS = re.compile(r"[ \t\r\n]+")

_T1, _T2, _T3 = 0x01, 0x02, 0x04
_H1, _H2, _H3 = 0x08, 0x10, 0x20
_SESSION_ID = 0x40
_RESERVED = 0x80


class PayloadError(ValueError):
    """A device payload that cannot be used. ``code`` is the public error code (2100-2280)."""

    code = 2100

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class PayloadFormatError(PayloadError):
    """2100: the payload is empty or not hexadecimal text."""

    code = 2100


class PayloadLengthError(PayloadError):
    """2110: the payload's size disagrees with its declared track lengths."""

    code = 2110


class TrackStatusError(PayloadError):
    """2120: the track status byte is unsupported or disagrees with the track lengths."""

    code = 2120


class FrameCheckError(PayloadError):
    """2130: the frame's CheckLRC or CheckSum does not match the card data."""

    code = 2130


class HashMismatchError(PayloadError):
    """2140: a track hash in the payload does not match the decrypted track."""

    code = 2140


class FrameError(PayloadError):
    """2150: the frame is malformed (size, ETX or length field)."""

    code = 2150


@dataclass(frozen=True, slots=True)
class AudioMessage:
    """A parsed original-format message. Track contents are kept out of ``repr`` (logs)."""

    card_encode_type: int
    track_status: int
    t1_length: int
    t2_length: int
    t3_length: int
    masked_t1: bytes = field(repr=False)
    masked_t2: bytes = field(repr=False)
    clear_t3: bytes = field(repr=False)  # may hold a clear account number: never log it
    ciphertext: bytes = field(repr=False)
    t1_hash: bytes | None = field(repr=False)
    t2_hash: bytes | None = field(repr=False)
    t3_hash: bytes | None = field(repr=False)
    ksn: bytes
    framed: bool = False

    @property
    def encrypted_length(self) -> int:
        """Length of the meaningful encrypted data: T1 length + T2 length (before padding)."""
        return self.t1_length + self.t2_length


def decode_payload(payload: str | bytes) -> bytes:
    """Text is hexadecimal (ASCII whitespace between digits tolerated); bytes are taken as they are."""
    if isinstance(payload, bytes | bytearray):
        data = bytes(payload)
    elif isinstance(payload, str):
        if len(payload) > 4 * MAX_PAYLOAD_BYTES:
            raise PayloadLengthError("device payload is too long")
        text = _HEX_WS.sub("", payload)
        if len(text) % 2 or not text.isascii():
            raise PayloadFormatError("device payload is not hexadecimal text")
        try:
            data = bytes.fromhex(text)
        except ValueError:
            raise PayloadFormatError("device payload is not hexadecimal text") from None
    else:
        raise PayloadFormatError("device payload is not hexadecimal text")
    if not data:
        raise PayloadFormatError("device payload is empty")
    if len(data) > MAX_PAYLOAD_BYTES:
        raise PayloadLengthError("device payload is too long")
    return data


def _lrc(data: bytes) -> int:
    value = 0
    for b in data:
        value ^= b
    return value


def frame(card_data: bytes) -> bytes:
    """Wrap card data in the device frame: STX, length (LE), data, CheckLRC, CheckSum, ETX."""
    if len(card_data) > 0xFFFF:
        raise ValueError("card data too long for a frame")
    return (
        bytes([STX])
        + len(card_data).to_bytes(2, "little")
        + bytes(card_data)
        + bytes([_lrc(card_data), sum(card_data) & 0xFF, ETX])
    )


def unframe(data: bytes) -> bytes:
    """Check a device frame and return its card data (2150 structure, 2130 CheckLRC/CheckSum)."""
    if len(data) < 7 or data[0] != STX:
        raise FrameError("device frame is too short or does not start with STX")
    if data[-1] != ETX:
        raise FrameError("device frame does not end with ETX")
    length = int.from_bytes(data[1:3], "little")
    if length != len(data) - 6:
        raise FrameError("device frame length field does not match its size")
    card_data = data[3:-3]
    if data[-3] != _lrc(card_data):
        raise FrameCheckError("device frame CheckLRC does not match")
    if data[-2] != sum(card_data) & 0xFF:
        raise FrameCheckError("device frame CheckSum does not match")
    return card_data


def _round_up(n: int, size: int) -> int:
    return -(-n // size) * size


def parse_audio_message(
    payload: str | bytes,
    *,
    block_size: int = 8,
    ksn_length: int = 10,
    framed: bool | None = None,
) -> AudioMessage:
    """Parse an original-format audio-reader message (hex text or bytes, framed or not).

    ``block_size`` and ``ksn_length`` come from the device's DUKPT scheme (8/10 for TDES, 16/12 for AES:
    :func:`vaultcore.crypto.dukpt.block_size` and :func:`~vaultcore.crypto.dukpt.ksn_length`).
    ``framed=None`` detects the frame by its leading STX.
    """
    if block_size not in (8, 16) or ksn_length not in (10, 12):
        raise ValueError("block_size must be 8 or 16 and ksn_length 10 or 12")
    data = decode_payload(payload)
    is_framed = data[0] == STX if framed is None else framed
    if is_framed:
        data = unframe(data)
    if len(data) < _HEADER:
        raise PayloadLengthError("device payload is too short")
    encode_type, status, t1_len, t2_len, t3_len = data[:_HEADER]

    if status & (_SESSION_ID | _RESERVED):
        raise TrackStatusError("track status declares data this format does not carry")
    for track_bit, hash_bit, length, n in ((_T1, _H1, t1_len, 1), (_T2, _H2, t2_len, 2), (_T3, _H3, t3_len, 3)):
        if bool(status & track_bit) != (length > 0):
            raise TrackStatusError(f"track status disagrees with the track {n} length")
        if status & hash_bit and not status & track_bit:
            raise TrackStatusError(f"track status declares a hash of absent track {n}")
    if not status & (_T1 | _T2):
        raise TrackStatusError("track status declares no track 1 or track 2 data")

    enc_len = _round_up(t1_len + t2_len, block_size)
    hashes = [bool(status & bit) for bit in (_H1, _H2, _H3)]
    expected = _HEADER + t1_len + t2_len + t3_len + enc_len + HASH_LENGTH * sum(hashes) + ksn_length
    if len(data) != expected:
        raise PayloadLengthError("device payload length does not match its track lengths")

    pos = _HEADER

    def take(n: int) -> bytes:
        nonlocal pos
        chunk = data[pos : pos + n]
        pos += n
        return chunk

    masked_t1, masked_t2, clear_t3, ciphertext = take(t1_len), take(t2_len), take(t3_len), take(enc_len)
    t1_hash, t2_hash, t3_hash = (take(HASH_LENGTH) if present else None for present in hashes)
    ksn = take(ksn_length)
    if t3_hash is not None and not hmac.compare_digest(t3_hash, hashlib.sha1(clear_t3).digest()):
        raise HashMismatchError("track 3 hash does not match")
    return AudioMessage(
        card_encode_type=encode_type,
        track_status=status,
        t1_length=t1_len,
        t2_length=t2_len,
        t3_length=t3_len,
        masked_t1=masked_t1,
        masked_t2=masked_t2,
        clear_t3=clear_t3,
        ciphertext=ciphertext,
        t1_hash=t1_hash,
        t2_hash=t2_hash,
        t3_hash=t3_hash,
        ksn=ksn,
        framed=is_framed,
    )


def split_tracks(parsed: AudioMessage, plaintext: bytes) -> tuple[bytes, bytes]:
    """Cut the decrypted T1||T2 stream into track 1 and track 2 (padding dropped, LRC char kept)."""
    if len(plaintext) != len(parsed.ciphertext):
        raise PayloadLengthError("decrypted data length does not match the ciphertext")
    return plaintext[: parsed.t1_length], plaintext[parsed.t1_length : parsed.encrypted_length]


def verify_track_hashes(parsed: AudioMessage, t1: bytes, t2: bytes) -> None:
    """Check the SHA-1 hashes the message carries against the decrypted tracks (2140 on mismatch).

    A mismatch means the wrong key (BDK, KSN or variant) or corrupted data. Constant-time compare: the
    hashes are of card data.
    """
    for n, expected, track in ((1, parsed.t1_hash, t1), (2, parsed.t2_hash, t2)):
        if expected is not None and not hmac.compare_digest(expected, hashlib.sha1(track).digest()):
            raise HashMismatchError(f"track {n} hash does not match the decrypted data")


def build_audio_message(
    t1: bytes,
    t2: bytes,
    ciphertext: bytes,
    ksn: bytes,
    *,
    masked_t1: bytes | None = None,
    masked_t2: bytes | None = None,
    t3: bytes = b"",
    hashes: bool = True,
    card_encode_type: int = 0x00,
    block_size: int = 8,
) -> bytes:
    """Build original-format card data (unframed; see :func:`frame`). For the simulator and tests.

    ``ciphertext`` is ENC(T1||T2) zero-padded to ``block_size``, made by the caller with the device's key.
    Masked tracks default to the track with every character but the sentinels replaced by ``*``.
    """
    if len(t1) > 255 or len(t2) > 255 or len(t3) > 255:
        raise ValueError("a track is longer than 255 bytes")
    if not t1 and not t2:
        raise ValueError("track 1 or track 2 is required")
    if len(ciphertext) != _round_up(len(t1) + len(t2), block_size):
        raise ValueError("ciphertext length does not match the tracks and block size")
    masked_t1 = _star(t1) if masked_t1 is None else masked_t1
    masked_t2 = _star(t2) if masked_t2 is None else masked_t2
    if len(masked_t1) != len(t1) or len(masked_t2) != len(t2):
        raise ValueError("a masked track differs in length from its track")
    status = (_T1 if t1 else 0) | (_T2 if t2 else 0) | (_T3 if t3 else 0)
    digests = b""
    if hashes:
        status |= (_H1 if t1 else 0) | (_H2 if t2 else 0)
        digests = (hashlib.sha1(t1).digest() if t1 else b"") + (hashlib.sha1(t2).digest() if t2 else b"")
    header = bytes([card_encode_type, status, len(t1), len(t2), len(t3)])
    return header + bytes(masked_t1) + bytes(masked_t2) + bytes(t3) + bytes(ciphertext) + digests + bytes(ksn)


def _star(track: bytes) -> bytes:
    if len(track) < 2:
        return b"*" * len(track)
    # Keep the start and end sentinels where the track has them, like the readers do; the LRC is masked.
    end = track.rfind(b"?")
    out = bytearray(b"*" * len(track))
    out[0] = track[0]
    if end > 0:
        out[end] = track[end]
    return bytes(out)


def track_lrc(data: bytes, track: int | None = None) -> int:
    """The ISO/IEC 7811 longitudinal redundancy check character of a track, start to end sentinel.

    Track 1 (6-bit, ISO/IEC 7811-2): XOR of ``(c - 0x20) & 0x3F``, output ``value + 0x20``; tracks 2 and 3
    (4-bit data + parity, ISO/IEC 7811-2 / ISO 4909): XOR of ``(c - 0x30) & 0x0F``, output ``value + 0x30``.
    The parity bit is not part of the character value. ``track`` defaults from the start sentinel
    (``%`` track 1, anything else 4-bit). Returns the LRC character's code.

    >>> chr(track_lrc(b";4266841088889999=080910110000046?"))
    '0'
    """
    if track is None:
        track = 1 if data[:1] == b"%" else 2
    if track not in (1, 2, 3):
        raise ValueError("track must be 1, 2 or 3")
    value = 0
    if track == 1:
        for c in data:
            value ^= (c - 0x20) & 0x3F
        return value + 0x20
    for c in data:
        value ^= (c - 0x30) & 0x0F
    return value + 0x30
