"""Audio-reader payloads: the ID TECH "original" and "enhanced" encrypted MSR formats, their device frame, and
track LRCs.

Pure code: no cryptography and no AWS here. The caller decrypts (:func:`open_message` takes a ``decrypt``
callable built on :mod:`vaultcore.crypto.dukpt`). Sources: ``interface.md`` "Audio-reader payload layout"
(its character positions are those of a 50-byte track 1 and a 36-byte track 2: here every position is
computed from the length bytes), ID TECH SecureMag / Unitech MS246 / iMag / BT Mag / UniMag II user manuals
and the SREDKey 2 integration manual (ID TECH doc 80000502-001 "Encrypted Data Output" lists the same
fields), summarised in ``tests/vectors/idtech.json`` "conventions".

The format is told apart by the card encode type byte (MS246 manual note 1: "8x for enhanced encryption
format and 0x for original"); either may come bare or in the device frame.

**Original format** (card encode type 0x00 ISO/ABA, 0x01 AAMVA, 0x03 other, 0x04 raw)::

    card encode type | track status | T1 len | T2 len | T3 len
    | masked T1 (T1 len) | masked T2 (T2 len) | clear T3 (T3 len)
    | ENC(T1 || T2): ONE CBC stream, T1 len + T2 len rounded up to the block (8 TDES, 16 AES)
    | 0-3 SHA-1 hashes (20 each, in track order) | KSN (10 TDES, 12 AES DUKPT)

**Enhanced format** (card encode type with the high bit set: 0x80 ISO/ABA, 0x81 AAMVA, 0x83 other, 0x84 raw)::

    card encode type | track status | T1 len | T2 len | T3 len | field 8 | field 9
    [| field 10: optional-bytes length | optional bytes]          (track status bit 6, SREDKey 2)
    | clear/masked T1, T2, T3 (each present per field 8 bits 0-2, its track length long)
    | ENC(T1), ENC(T2), ENC(T3): each track SEPARATELY, each zero-padded to the block (field 9 bits 0-2)
    | encrypted session ID (8 bytes padded to the block; field 9 bit 6)
    | hashes (field 9 bits 3-5: 20 bytes SHA-1, 32 with SHA-256 per optional status byte 1 bit 0)
    | reader serial number (10 bytes; field 8 bit 7) | KSN (field 9 bit 7)

Field 8: bits 0-2 clear/masked T1/T2/T3 present; bit 4 AES (0 TDES); bit 6 PIN-key encryption (SREDKey 2);
bit 7 serial number present. Bits 3 and 5 are ignored (reserved; SecureHead uses bit 5 for "use IC where
feasible"). Field 9: bits 0-2 T1/T2/T3 encrypted, 3-5 T1/T2/T3 hash present, 6 session ID, 7 KSN. The
UniMag II layout (no hashes, serial number before the KSN: field 8 = 0x83, field 9 = 0x83) is this format.

**What decides.** Real readers use the track status byte loosely: bits 3-5 are "sampling data present" in
the vendor manuals, not "hash present" (the MS246/SecureMag published frame has status 0x3F, a clear track 3
and only two hashes), bit 2 can be set with no track 3. So bits 0-5 never refuse a payload (bit 7 is
reserved; bit 6 is the SREDKey 2 field 10 in the enhanced format and has no known original-format layout: both
refused with 2120 where they have no meaning). The length bytes and the size of the data
decide: every field but the hashes has a known size, so the room left for hashes must be a whole number of
hashes, and at most one per track present; which tracks they belong to is tried among the consistent
interpretations (the declared one first) and the SHA-1 check decides after decryption (:func:`open_message`).
A wrong key or corrupted data therefore ends in 2140, never in a wrong card. An all-zero hash field is the
SREDKey 2 "null hash data" (hash not computed) and checks nothing; a track 1 or 2 no hash covers is
checked by its ISO/IEC 7811 character set and LRC character (when the reader sent it), and by its
sentinels and separators against the masked field the reader sent with it.

Only encrypted data is read as track 1 or track 2 (a clear/masked T1/T2 field is display data); track 3 is
decrypted when it is encrypted and taken as sent when it only travels in clear.

Device frame (both formats)::

    STX 0x02 | length of card data, little-endian (2) | card data | CheckLRC (XOR of card data)
    | CheckSum (sum of card data mod 256) | ETX 0x03

A payload starting with 0x02 is taken as a frame: 0x02/0x82 are not card encode types.

Public error codes (every error is a :class:`PayloadError`, a ``ValueError`` with a ``code``; messages
never contain payload bytes):

====  ==========================  ====================================================================
code  class                       meaning
====  ==========================  ====================================================================
2100  PayloadFormatError          payload empty, not text/bytes, or not hexadecimal text
2110  PayloadLengthError          payload too long, too short, or its size cannot be split into the
                                  fields its lengths and flags declare (ciphertext, hashes, KSN)
2120  TrackStatusError            status or flags unsupported (original-format session id or reserved
                                  bit, no KSN, TransArmor/MAC options), or no encrypted track 1/2
2130  FrameCheckError             frame CheckLRC or CheckSum does not match the card data
2140  HashMismatchError           no consistent hash assignment matches the decrypted (or clear) tracks,
                                  or an unhashed track fails its character set, LRC character or masked
                                  layout: wrong key or corrupted data
2150  FrameError                  frame structure: too short, no ETX, or length field disagrees
====  ==========================  ====================================================================
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "STX",
    "ETX",
    "HASH_LENGTH",
    "MAX_PAYLOAD_BYTES",
    "ORIGINAL",
    "ENHANCED",
    "PayloadError",
    "PayloadFormatError",
    "PayloadLengthError",
    "TrackStatusError",
    "FrameCheckError",
    "HashMismatchError",
    "FrameError",
    "Segment",
    "AudioMessage",
    "ReaderTracks",
    "decode_payload",
    "frame",
    "unframe",
    "parse_audio_message",
    "open_message",
    "build_audio_message",
    "build_enhanced_message",
    "track_lrc",
]

STX = 0x02
ETX = 0x03
HASH_LENGTH = 20  # SHA-1
SHA256_LENGTH = 32
SERIAL_LENGTH = 10  # reader serial number field (UniMag II: "10 bytes, '0'-padded on the left")
SESSION_ID_LENGTH = 8  # encrypted, padded to the cipher block
ORIGINAL = "original"
ENHANCED = "enhanced"
# Three full tracks, hashes, padding and KSN stay well under 2 KiB; refusing more bounds the work a
# caller can make us do before any length check.
MAX_PAYLOAD_BYTES = 4096
_HEX_WS = re.compile(r"[ \t\r\n]+")

_TRACK_BIT = {1: 0x01, 2: 0x02, 3: 0x04}  # track status bits 0-2, field 8 bits 0-2, field 9 bits 0-2
_HASH_BIT = {1: 0x08, 2: 0x10, 3: 0x20}  # track status bits 3-5 (original), field 9 bits 3-5
_ENHANCED_TYPE = 0x80
_STATUS_OPTIONAL = 0x40  # original: session id (interface.md); enhanced: field 10 present (SREDKey 2)
_STATUS_RESERVED = 0x80
_F8_AES = 0x10
_F8_PIN_KEY = 0x40
_F8_SERIAL = 0x80
_F9_SESSION = 0x40
_F9_KSN = 0x80
_OPT1_SHA256 = 0x01  # optional status byte 1 (SREDKey 2 field 11)
_OPT1_OTHER_CIPHER = 0x02  # encryption type in field 11 bits 2-4 (TransArmor): not DUKPT
_OPT1_MAC = 0x20  # MAC value length, MAC value and MAC KSN follow the KSN


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
    """2110: the payload's size cannot be split into the fields it declares."""

    code = 2110


class TrackStatusError(PayloadError):
    """2120: a status/flag combination this platform cannot use."""

    code = 2120


class FrameCheckError(PayloadError):
    """2130: the frame's CheckLRC or CheckSum does not match the card data."""

    code = 2130


class HashMismatchError(PayloadError):
    """2140: the hashes in the payload do not match the decrypted tracks."""

    code = 2140


class FrameError(PayloadError):
    """2150: the frame is malformed (size, ETX or length field)."""

    code = 2150


@dataclass(frozen=True, slots=True)
class Segment:
    """One CBC stream of the payload (zero IV): ``tracks`` it holds, in order, or ``()`` for the session ID."""

    tracks: tuple[int, ...]
    ciphertext: bytes = field(repr=False)


@dataclass(frozen=True, slots=True)
class AudioMessage:
    """A parsed original- or enhanced-format message. Track contents are kept out of ``repr`` (logs)."""

    format: str  # ORIGINAL or ENHANCED
    card_encode_type: int
    track_status: int
    lengths: tuple[int, int, int]  # clear lengths of T1, T2, T3 (sentinels and LRC included)
    clear: tuple[bytes, bytes, bytes] = field(repr=False)  # masked T1/T2, clear T3 (b"" when not sent)
    segments: tuple[Segment, ...] = field(repr=False)
    hashes: tuple[bytes, ...] = field(repr=False)
    hash_candidates: tuple[tuple[int, ...], ...]  # tracks the hashes may belong to, most likely first
    ksn: bytes
    block_size: int
    cipher: str | None = None  # enhanced: "tdes" or "aes" (field 8); original: None, the device key's own
    pin_key: bool = False  # field 8 bit 6: encrypted with the PIN key (SREDKey 2)
    clear_status: int | None = None  # field 8 (enhanced only)
    encrypted_status: int | None = None  # field 9 (enhanced only)
    serial_number: bytes | None = None
    framed: bool = False

    @property
    def encrypted_tracks(self) -> tuple[int, ...]:
        return tuple(n for s in self.segments for n in s.tracks)

    def masked(self, track: int) -> bytes:
        """The clear/masked field of ``track`` (1-3) as sent; never card data for tracks 1 and 2."""
        return self.clear[track - 1]


@dataclass(frozen=True, slots=True)
class ReaderTracks:
    """The clear tracks of an opened message: exact bytes (sentinels, LRC char), no padding; b"" if absent."""

    t1: bytes = field(repr=False)
    t2: bytes = field(repr=False)
    t3: bytes = field(repr=False)
    t3_encrypted: bool  # track 3 came decrypted (True) or as sent in clear (False)
    verified: tuple[int, ...]  # tracks whose (non-null) hash matched


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


class _Reader:
    """Takes consecutive fields; running out of data is a length error (2110)."""

    def __init__(self, data: bytes, pos: int) -> None:
        self.data, self.pos = data, pos

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise PayloadLengthError("device payload length does not match its track lengths")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    @property
    def left(self) -> int:
        return len(self.data) - self.pos


def _hash_layout(room: int, size: int, present: tuple[int, ...], declared: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The hash assignments the room left for hashes allows: a whole number of hashes, at most one per
    present track, in track order. The declared assignment comes first when it fits."""
    if room < 0 or room % size or room // size > len(present):
        raise PayloadLengthError("device payload length does not match its track lengths")
    count = room // size
    candidates = list(itertools.combinations(present, count))
    if declared in candidates:
        candidates.remove(declared)
        candidates.insert(0, declared)
    return candidates


def _parse_original(data: bytes, block_size: int, ksn_length: int, framed: bool) -> AudioMessage:
    if len(data) < 5:
        raise PayloadLengthError("device payload is too short")
    encode_type, status, *lengths = data[:5]
    if status & (_STATUS_OPTIONAL | _STATUS_RESERVED):
        # interface.md: bit 6 = session id included; no published original layout carries one.
        raise TrackStatusError("track status declares data this format does not carry")
    t1_len, t2_len, t3_len = lengths
    if not (t1_len or t2_len):
        raise TrackStatusError("the payload holds no track 1 or track 2 data")
    r = _Reader(data, 5)
    clear = (r.take(t1_len), r.take(t2_len), r.take(t3_len))
    ciphertext = r.take(_round_up(t1_len + t2_len, block_size))
    present = tuple(n for n in (1, 2, 3) if lengths[n - 1])
    declared = tuple(n for n in present if status & _HASH_BIT[n])
    candidates = _hash_layout(r.left - ksn_length, HASH_LENGTH, present, declared)
    hashes = tuple(r.take(HASH_LENGTH) for _ in candidates[0])
    ksn = r.take(ksn_length)
    tracks = tuple(n for n in (1, 2) if lengths[n - 1])
    return AudioMessage(
        format=ORIGINAL, card_encode_type=encode_type, track_status=status, lengths=(t1_len, t2_len, t3_len),
        clear=clear, segments=(Segment(tracks, ciphertext),), hashes=hashes, hash_candidates=tuple(candidates),
        ksn=ksn, block_size=block_size, framed=framed,
    )


def _parse_enhanced(data: bytes, ksn_length: int, framed: bool) -> AudioMessage:
    if len(data) < 7:
        raise PayloadLengthError("device payload is too short")
    encode_type, status, t1_len, t2_len, t3_len, f8, f9 = data[:7]
    lengths = (t1_len, t2_len, t3_len)
    if status & _STATUS_RESERVED:
        raise TrackStatusError("track status declares data this format does not carry")
    r = _Reader(data, 7)
    hash_size = HASH_LENGTH
    if status & _STATUS_OPTIONAL:
        # SREDKey 2 integration manual: status bit 6 = field 10 (optional-bytes length) exists; field 11 =
        # optional status byte 1: bit 0 SHA-256 hashes, bit 1 non-DUKPT (TransArmor) cipher, bit 5 MAC fields.
        optional = r.take(r.take(1)[0])
        if optional and optional[0] & (_OPT1_OTHER_CIPHER | _OPT1_MAC):
            raise TrackStatusError("the payload uses an encryption or MAC option this platform does not support")
        if optional and optional[0] & _OPT1_SHA256:
            hash_size = SHA256_LENGTH
    if not f9 & _F9_KSN:
        raise TrackStatusError("the payload carries no KSN")
    aes = bool(f8 & _F8_AES)
    block_size = 16 if aes else 8
    t1, t2, t3 = (r.take(lengths[n - 1]) if f8 & _TRACK_BIT[n] else b"" for n in (1, 2, 3))  # read in order
    clear = (t1, t2, t3)
    segments = [
        Segment((n,), r.take(_round_up(lengths[n - 1], block_size)))
        for n in (1, 2, 3)
        if f9 & _TRACK_BIT[n] and lengths[n - 1]
    ]
    if not any(s.tracks[0] in (1, 2) for s in segments):
        raise TrackStatusError("the payload holds no encrypted track 1 or track 2")
    if f9 & _F9_SESSION:
        segments.append(Segment((), r.take(_round_up(SESSION_ID_LENGTH, block_size))))
    serial_length = SERIAL_LENGTH if f8 & _F8_SERIAL else 0
    present = tuple(n for n in (1, 2, 3) if lengths[n - 1])
    declared = tuple(n for n in present if f9 & _HASH_BIT[n])
    candidates = _hash_layout(r.left - serial_length - ksn_length, hash_size, present, declared)
    hashes = tuple(r.take(hash_size) for _ in candidates[0])
    serial = r.take(serial_length) if serial_length else None
    ksn = r.take(ksn_length)
    return AudioMessage(
        format=ENHANCED, card_encode_type=encode_type, track_status=status, lengths=lengths,
        clear=clear, segments=tuple(segments), hashes=hashes, hash_candidates=tuple(candidates),
        ksn=ksn, block_size=block_size, cipher="aes" if aes else "tdes", pin_key=bool(f8 & _F8_PIN_KEY),
        clear_status=f8, encrypted_status=f9, serial_number=serial, framed=framed,
    )


def parse_audio_message(
    payload: str | bytes,
    *,
    block_size: int = 8,
    ksn_length: int = 10,
    framed: bool | None = None,
) -> AudioMessage:
    """Parse an original- or enhanced-format audio-reader message (hex text or bytes, framed or not).

    ``block_size`` (original format only: the enhanced format says its cipher in field 8) and ``ksn_length``
    come from the device's DUKPT scheme (8/10 for TDES, 16/12 for AES: :func:`vaultcore.crypto.dukpt.block_size`
    and :func:`~vaultcore.crypto.dukpt.ksn_length`). ``framed=None`` detects the frame by its leading STX.
    """
    if block_size not in (8, 16) or ksn_length not in (10, 12):
        raise ValueError("block_size must be 8 or 16 and ksn_length 10 or 12")
    data = decode_payload(payload)
    is_framed = data[0] == STX if framed is None else framed
    if is_framed:
        data = unframe(data)
    if data[:1] and data[0] & _ENHANCED_TYPE:
        return _parse_enhanced(data, ksn_length, is_framed)
    return _parse_original(data, block_size, ksn_length, is_framed)


def _decrypt_segments(message: AudioMessage, decrypt: Callable[[bytes], bytes]) -> list[bytes]:
    """Every segment's plaintext with ONE call to ``decrypt`` (one key derivation, one HSM call).

    Each segment is its own CBC stream with a zero IV. Decrypting them concatenated gives the right
    plaintext except for the first block of each later segment, which CBC XORed with the previous
    segment's last ciphertext block instead of the zero IV (P = D(C) xor C_prev): XORing that block back
    restores it (NIST SP 800-38A 6.2).
    """
    joined = b"".join(s.ciphertext for s in message.segments)
    plain = bytearray(decrypt(joined))
    if len(plain) != len(joined):
        raise PayloadLengthError("decrypted data length does not match the ciphertext")
    out, pos, size = [], 0, message.block_size
    for segment in message.segments:
        n = len(segment.ciphertext)
        if pos:
            for i in range(size):
                plain[pos + i] ^= joined[pos - size + i]
        out.append(bytes(plain[pos : pos + n]))
        pos += n
    return out


def _hash_matches(expected: bytes, track: bytes | None) -> bool:
    if not any(expected):
        return True  # SREDKey 2 "null hash data": the reader did not hash this track
    if track is None:
        return False
    digest = (hashlib.sha256 if len(expected) == SHA256_LENGTH else hashlib.sha1)(track).digest()
    return hmac.compare_digest(expected, digest)


def open_message(message: AudioMessage, decrypt: Callable[[bytes], bytes]) -> ReaderTracks:
    """Decrypt the message's encrypted data with ``decrypt`` (CBC, zero IV, the device key) and check it.

    ``decrypt`` gets whole blocks and returns as many bytes. The result is accepted only if one of the
    message's consistent hash assignments matches the tracks (a hash over exactly the clear track bytes,
    LRC character included, no padding) and track 1/2 not covered by a hash pass the checks of
    :func:`_unhashed_track_ok`; otherwise :class:`HashMismatchError` (2140): wrong key or corrupted
    data. The caller still checks that the tracks read as tracks.
    """
    tracks: dict[int, bytes] = {}
    for segment, plain in zip(message.segments, _decrypt_segments(message, decrypt), strict=True):
        pos = 0
        for n in segment.tracks:
            length = message.lengths[n - 1]
            tracks[n] = plain[pos : pos + length]
            pos += length
    t3_encrypted = 3 in tracks
    if not t3_encrypted and message.clear[2]:
        tracks[3] = message.clear[2]  # track 3 travels in clear: keep it as sent
    for candidate in message.hash_candidates:
        if all(_hash_matches(h, tracks.get(n)) for h, n in zip(message.hashes, candidate, strict=True)):
            verified = tuple(n for h, n in zip(message.hashes, candidate, strict=True) if any(h))
            break
    else:
        raise HashMismatchError("track hash does not match the decrypted data")
    for n in (1, 2):
        if n not in verified and not _unhashed_track_ok(tracks.get(n, b""), message.clear[n - 1]):
            raise HashMismatchError(f"track {n} does not match its LRC or its masked field")
    return ReaderTracks(tracks.get(1, b""), tracks.get(2, b""), tracks.get(3, b""), t3_encrypted, verified)


_STRUCTURE = frozenset(b"%;?^=")  # sentinels and field separators (ISO/IEC 7813): never a mask character
# ISO/IEC 7811-2 character sets as readers send them in ASCII: 6-bit (track 1, start sentinel %) 0x20-0x5F,
# 4-bit BCD (start sentinel ;) 0x30-0x3F; the LRC character is in its track's set too.
_CHARSETS = {ord("%"): range(0x20, 0x60), ord(";"): range(0x30, 0x40)}


def _unhashed_track_ok(track: bytes, masked: bytes) -> bool:
    """The integrity checks left for a track no hash covers (UniMag II sends no hashes; SREDKey 2 null
    hashes): every character in the track's ISO/IEC 7811 character set, the track's own LRC character when
    the reader sent one ("Send LRC in secured mode", ID TECH default), and the sentinels and separators at
    the places the reader's masked field shows them (the masking rules keep them in clear)."""
    if not track:
        return True  # no such track (its clear/masked field, if any, is display data)
    track = track.upper()  # ID TECH readers can be set to send letters in lower case (SecureMag setting)
    charset = _CHARSETS.get(track[0])
    if charset is not None and any(c not in charset for c in track):
        return False
    if len(track) >= 3 and track[-2:-1] == b"?" and track[-1] != track_lrc(track[:-1]):
        return False
    if masked and len(masked) != len(track):
        return False
    return all(track[i] == c for i, c in enumerate(masked) if c in _STRUCTURE)


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
    track_status: int | None = None,
) -> bytes:
    """Build original-format card data (unframed; see :func:`frame`). For the simulator and tests.

    ``ciphertext`` is ENC(T1||T2) zero-padded to ``block_size``, made by the caller with the device's key.
    Masked tracks default to the track with every character but the sentinels replaced by ``*``. Hashes
    cover tracks 1 and 2; ``track_status`` overrides the status byte (real readers' usage, see module doc).
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
    status = (0x01 if t1 else 0) | (0x02 if t2 else 0) | (0x04 if t3 else 0)
    digests = b""
    if hashes:
        status |= (_HASH_BIT[1] if t1 else 0) | (_HASH_BIT[2] if t2 else 0)
        digests = (hashlib.sha1(t1).digest() if t1 else b"") + (hashlib.sha1(t2).digest() if t2 else b"")
    status = status if track_status is None else track_status
    header = bytes([card_encode_type, status, len(t1), len(t2), len(t3)])
    return header + bytes(masked_t1) + bytes(masked_t2) + bytes(t3) + bytes(ciphertext) + digests + bytes(ksn)


def build_enhanced_message(
    tracks: tuple[bytes, bytes, bytes],
    ciphertexts: Mapping[int, bytes],
    ksn: bytes,
    *,
    clear: Mapping[int, bytes] | None = None,
    hashed: Iterable[int] | None = None,
    serial_number: bytes | None = None,
    session_id: bytes | None = None,
    aes: bool = False,
    pin_key: bool = False,
    card_encode_type: int = 0x80,
    track_status: int | None = None,
) -> bytes:
    """Build enhanced-format card data (unframed). For the simulator and tests.

    ``tracks`` are the clear T1, T2, T3 (b"" when absent: their lengths go in the header and their hashes
    are computed here); ``ciphertexts`` maps track number to that track's own zero-padded ciphertext.
    ``clear`` maps track number to its clear/masked field (default: T1/T2 masked like :func:`build_audio_message`
    when encrypted, T3 as is when not encrypted). ``hashed`` lists the hashed tracks (default: the encrypted
    ones). ``session_id`` is already encrypted. ``serial_number`` is the 10-byte field (field 8 bit 7).
    """
    block = 16 if aes else 8
    if any(len(t) > 255 for t in tracks):
        raise ValueError("a track is longer than 255 bytes")
    for n, cipher in ciphertexts.items():
        if n not in (1, 2, 3) or not tracks[n - 1] or len(cipher) != _round_up(len(tracks[n - 1]), block):
            raise ValueError("a ciphertext does not match its track and block size")
    if clear is None:
        clear = {n: _star(tracks[n - 1]) for n in (1, 2) if n in ciphertexts and tracks[n - 1]}
        if tracks[2] and 3 not in ciphertexts:
            clear[3] = tracks[2]
    if any(len(v) != len(tracks[n - 1]) for n, v in clear.items()):
        raise ValueError("a clear/masked field differs in length from its track")
    hashed = sorted(ciphertexts) if hashed is None else sorted(hashed)
    if serial_number is not None and len(serial_number) != SERIAL_LENGTH:
        raise ValueError("the serial number field is 10 bytes")
    f8 = sum(_TRACK_BIT[n] for n in clear) | (_F8_AES if aes else 0) | (_F8_PIN_KEY if pin_key else 0)
    f8 |= _F8_SERIAL if serial_number is not None else 0
    f9 = sum(_TRACK_BIT[n] for n in ciphertexts) | sum(_HASH_BIT[n] for n in hashed) | _F9_KSN
    f9 |= _F9_SESSION if session_id is not None else 0
    if track_status is None:
        track_status = sum(_TRACK_BIT[n] | _HASH_BIT[n] for n in (1, 2, 3) if tracks[n - 1])  # decoded + sampled
    out = bytearray([card_encode_type, track_status, *(len(t) for t in tracks), f8, f9])
    out += b"".join(bytes(clear[n]) for n in (1, 2, 3) if n in clear)
    out += b"".join(bytes(ciphertexts[n]) for n in (1, 2, 3) if n in ciphertexts)
    out += bytes(session_id or b"")
    out += b"".join(hashlib.sha1(tracks[n - 1]).digest() for n in hashed)
    out += bytes(serial_number or b"") + bytes(ksn)
    return bytes(out)


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
