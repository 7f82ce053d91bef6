"""Published ID TECH-family frames (tests/vectors/idtech_frames.json): the MS246/SecureMag manual's original-format
three-track frame as published, and enhanced-format frames built around the published separately-encrypted
track ciphertexts (idtech.json "idtech-enhanced-tracks-ksn02"). Each decrypts to its expected tracks; a flipped
hash or ciphertext byte gives 2140, a truncated or extended payload 2110 (bare) or 2150 (framed), a wrong
frame check 2130."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vaultcore.cards import reader_formats as rf
from vaultcore.crypto import dukpt
from vaultcore.crypto.dukpt import KeyVariant

VECTORS = Path(__file__).parent.parent / "vectors"
FRAMES = json.loads((VECTORS / "idtech_frames.json").read_text())["entries"]
IDTECH = {e["id"]: e for e in json.loads((VECTORS / "idtech.json").read_text())["entries"]}
BY_ID = {e["id"]: e for e in FRAMES}
PUBLISHED = BY_ID["ms246-original-3track-frame"]
KSN02 = IDTECH["idtech-enhanced-tracks-ksn02"]
h = bytes.fromhex


def ids(entry: dict) -> str:
    return entry["id"]


def open_frame(payload: str | bytes, bdk: bytes, variant: str = KeyVariant.DATA) -> rf.ReaderTracks:
    message = rf.parse_audio_message(payload)
    return rf.open_message(message, lambda data: dukpt.decrypt("tdes", bdk, message.ksn, data, variant))


def card_data(entry: dict) -> bytes:
    return rf.unframe(h(entry["frame_hex"]))


def reframe(data: bytes) -> str:
    """Card data in a frame whose length, CheckLRC and CheckSum are right again (to reach the hash check)."""
    return rf.frame(data).hex().upper()


# --- every frame: header, tracks, hashes ---------------------------------------------------------------


@pytest.mark.parametrize("entry", FRAMES, ids=ids)
def test_frame_decrypts_to_the_expected_tracks(entry):
    # Given a published (or published-ciphertext) frame and the manuals' demo BDK
    message = rf.parse_audio_message(entry["frame_hex"])
    header = entry.get("expected_header") or entry["header"]
    assert message.framed is True and message.format == entry["format"]
    assert f"{message.card_encode_type:02X}" == header["card_encode_type"]
    assert f"{message.track_status:02X}" == header["track_status"]
    assert [f"{n:02X}" for n in message.lengths] == [header["t1_len"], header["t2_len"], header["t3_len"]]
    if message.format == rf.ENHANCED:
        assert (f"{message.clear_status:02X}", f"{message.encrypted_status:02X}") == (header["field8"], header["field9"])
        assert message.cipher == "tdes"
    assert message.ksn == h(entry.get("expected_ksn") or entry["ksn"])
    # When it is opened with the data key of the KSN inside it
    tracks = open_frame(entry["frame_hex"], h(entry["bdk"]))
    # Then the expected tracks come back, the hashes the frame carries verify, and the masked fields are
    # not the card
    assert tracks.t1 == entry["expected_t1"].encode()
    assert tracks.t2 == entry["expected_t2"].encode()
    assert tracks.t3 == entry.get("expected_t3", "").encode()
    assert tracks.t3_encrypted is entry.get("expected_t3_encrypted", False)
    assert list(tracks.verified) == entry.get("expected_hash_tracks", entry.get("hash_tracks"))
    assert message.masked(1) != tracks.t1 and message.masked(2) != tracks.t2
    assert b"4266841088889999" not in message.masked(1) + message.masked(2)
    # And each clear track ends with its right ISO/IEC 7811 LRC character
    for track in (tracks.t1, tracks.t2, tracks.t3):
        if track:
            assert track[-1] == rf.track_lrc(track[:-1])


def test_published_frame_as_the_manual_describes_it():
    data = h(PUBLISHED["frame_hex"])
    # "02 7D01 00 3F 48 23 6B": STX, length 0x017D, card type 00 (original), status 3F, lengths 48 23 6B
    assert data[:8] == h("027D01003F48236B")
    assert int.from_bytes(data[1:3], "little") == len(data) - 6 == 381
    assert data[-3:] == h("399F03")  # CheckLRC, CheckSum, ETX
    message = rf.parse_audio_message(data)
    # Status 3F declares three hashes (bits 3-5); the length allows two: track 3 travels in clear
    assert message.track_status & 0x38 == 0x38 and len(message.hashes) == 2
    assert message.hash_candidates[0] == (1, 2) and message.masked(3) == PUBLISHED["expected_t3"].encode()
    assert message.segments == (rf.Segment((1, 2), message.segments[0].ciphertext),)
    assert len(message.segments[0].ciphertext) == 112  # 72 + 35 rounded up to 8


def test_published_frame_hashes_are_the_sha1_of_the_separately_published_tracks():
    # The hashes in the MS246 frame are those of the camcima/Dukpt.NET clear tracks (same test card)
    import hashlib

    message = rf.parse_audio_message(PUBLISHED["frame_hex"])
    assert message.hashes == (
        hashlib.sha1(KSN02["expected_t1"].encode()).digest(),
        hashlib.sha1(KSN02["expected_t2"].encode()).digest(),
    )


def test_published_frame_unframed_and_with_whitespace():
    data = card_data(PUBLISHED)
    spaced = " ".join(data.hex()[i : i + 2] for i in range(0, 2 * len(data), 2))
    tracks = open_frame(spaced, h(PUBLISHED["bdk"]))
    assert tracks.t2 == PUBLISHED["expected_t2"].encode()


def test_published_frame_refuses_a_wrong_key_and_the_pin_variant():
    with pytest.raises(rf.HashMismatchError) as info:
        open_frame(PUBLISHED["frame_hex"], h("11" * 16))
    assert info.value.code == 2140
    with pytest.raises(rf.HashMismatchError):
        open_frame(PUBLISHED["frame_hex"], h(PUBLISHED["bdk"]), KeyVariant.PIN)


# --- built frames are reproducible from their published parts -----------------------------------------


def test_built_frames_rebuild_from_their_parts():
    masked = rf.parse_audio_message(PUBLISHED["frame_hex"])
    m1, m2, t3 = masked.clear
    t1, t2 = KSN02["expected_t1"].encode(), KSN02["expected_t2"].encode()
    c1, c2, ksn = h(KSN02["t1_encrypted_hex"]), h(KSN02["t2_encrypted_hex"]), h(KSN02["ksn"])
    built = BY_ID["enhanced-built-around-ksn02-ciphertexts"]
    assert built["t1_encrypted_hex"] == KSN02["t1_encrypted_hex"]
    data = rf.build_enhanced_message((t1, t2, b""), {1: c1, 2: c2}, ksn, clear={1: m1, 2: m2})
    assert rf.frame(data).hex().upper() == built["frame_hex"]
    imag = BY_ID["enhanced-imag-header-3track-reconstruction"]
    c3 = h(imag["t3_encrypted_hex"])
    assert c3 == dukpt.encrypt("tdes", h(imag["bdk"]), ksn, t3)  # computed, not published
    data = rf.build_enhanced_message((t1, t2, t3), {1: c1, 2: c2, 3: c3}, ksn, clear={1: m1, 2: m2}, track_status=0x3F)
    assert rf.frame(data).hex().upper() == imag["frame_hex"]
    assert rf.frame(data)[2] == 0x01  # the manual's "01-high byte of total length"
    unimag = BY_ID["unimag-ii-layout-built-around-ksn02-ciphertexts"]
    data = rf.build_enhanced_message(
        (t1, t2, b""), {1: c1, 2: c2}, ksn, clear={1: m1, 2: m2}, hashed=(),
        serial_number=unimag["serial_number_ascii"].encode(), track_status=0x1F,
    )
    assert rf.frame(data).hex().upper() == unimag["frame_hex"]
    assert rf.parse_audio_message(unimag["frame_hex"]).serial_number == b"0012345678"


# --- tampering ---------------------------------------------------------------------------------------


HASHED = [e for e in FRAMES if e.get("expected_hash_tracks", e.get("hash_tracks"))]


@pytest.mark.parametrize("entry", HASHED, ids=ids)
@pytest.mark.parametrize("which", ["first", "last"])
def test_flipped_hash_byte_gives_2140(entry, which):
    data = bytearray(card_data(entry))
    message = rf.parse_audio_message(bytes(data))
    start = bytes(data).index(message.hashes[0])
    span = len(message.hashes) * rf.HASH_LENGTH
    data[start if which == "first" else start + span - 1] ^= 0x80
    with pytest.raises(rf.HashMismatchError, match=r"^track hash does not match the decrypted data$") as info:
        open_frame(reframe(bytes(data)), h(entry["bdk"]))
    assert info.value.code == 2140


@pytest.mark.parametrize("entry", FRAMES, ids=ids)
def test_flipped_ciphertext_byte_gives_2140(entry):
    data = card_data(entry)
    message = rf.parse_audio_message(data)
    for segment in message.segments:
        start = data.index(segment.ciphertext)
        for offset in (0, len(segment.ciphertext) // 2, len(segment.ciphertext) - 1):
            bad = bytearray(data)
            bad[start + offset] ^= 0x01
            # Every segment is covered by a hash or (UniMag II, no hashes) by the charset, LRC and masked layout
            with pytest.raises(rf.HashMismatchError) as info:
                open_frame(reframe(bytes(bad)), h(entry["bdk"]))
            assert info.value.code == 2140


@pytest.mark.parametrize("entry", FRAMES, ids=ids)
@pytest.mark.parametrize("cut", [1, 3, 9, 11, 33])
def test_truncated_or_extended(entry, cut):
    framed = h(entry["frame_hex"])
    data = card_data(entry)
    # framed: the length field no longer matches (2150)
    for bad in (framed[:-cut], framed + bytes(cut)):
        with pytest.raises(rf.FrameError, match=r"^device frame") as info:
            rf.parse_audio_message(bad)
        assert info.value.code == 2150
    # bare, or re-framed with a right length and checks: the fields no longer add up (2110)
    for bad in (data[:-cut], data + bytes(cut)):
        for payload in (bad, rf.frame(bad)):
            with pytest.raises(rf.PayloadLengthError) as info:
                rf.parse_audio_message(payload)
            assert info.value.code == 2110


@pytest.mark.parametrize("entry", FRAMES, ids=ids)
@pytest.mark.parametrize(("index", "check"), [(-3, "CheckLRC"), (-2, "CheckSum")])
def test_frame_check_gives_2130(entry, index, check):
    bad = bytearray(h(entry["frame_hex"]))
    bad[index] ^= 0x01
    with pytest.raises(rf.FrameCheckError, match=rf"^device frame {check} does not match$") as info:
        rf.parse_audio_message(bytes(bad))
    assert info.value.code == 2130
    # a card-data byte changed without fixing the checks is caught by the frame too
    bad = bytearray(h(entry["frame_hex"]))
    bad[40] ^= 0x01
    with pytest.raises(rf.FrameCheckError):
        rf.parse_audio_message(bytes(bad))


def test_errors_and_reprs_never_carry_track_data():
    message = rf.parse_audio_message(PUBLISHED["frame_hex"])
    tracks = open_frame(PUBLISHED["frame_hex"], h(PUBLISHED["bdk"]))
    for text in (repr(message), repr(tracks)):
        assert "4266" not in text and "BUSH" not in text and "3333" not in text
    with pytest.raises(rf.PayloadError) as info:
        rf.parse_audio_message(PUBLISHED["frame_hex"][:-2])
    assert PUBLISHED["frame_hex"][10:30] not in str(info.value)
