"""Device simulator: plaintext builders (known answers), and build -> parse -> decrypt round trips."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultcore.cards import reader_formats as rf
from vaultcore.crypto import dukpt, dukpt_aes
from vaultcore.crypto.dukpt import KeyVariant, Scheme
from vaultcore.devices import simulator as sim
from vaultcore.devices.simulator import Card, Mode

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "tests" / "vectors"
IDTECH = json.loads((VECTORS / "idtech.json").read_text())["entries"]
TRACKS = json.loads((VECTORS / "tracks.json").read_text())["entries"]
h = bytes.fromhex

CARD = Card(
    pan="4761739001010010", expiry="2512", name="SMITH/JANE", cvv="123", service_code="201", discretionary="1143878089"
)
KEYS = {
    Scheme.TDES: (h(sim.DEFAULT_BDK[Scheme.TDES]), h(sim.DEFAULT_KSN[Scheme.TDES])),
    Scheme.AES128: (h(sim.DEFAULT_BDK[Scheme.AES128]), h(sim.DEFAULT_KSN[Scheme.AES128])),
    Scheme.AES256: (h(sim.DEFAULT_BDK[Scheme.AES256]), h(sim.DEFAULT_KSN[Scheme.AES256])),
}


def expected_plaintext(mode: Mode, card: Card) -> bytes:
    """The documented formats, written out independently of the simulator's builders."""
    body = f"{card.expiry}{card.service_code}{card.discretionary}"
    if mode is Mode.KEYED:
        return f"{card.pan}={card.expiry}".encode() + (f"={card.cvv}".encode() if card.cvv else b"")
    if mode is Mode.TRACK1:
        track = f"%B{card.pan}^{card.name}^{body}?".encode()
        return track + bytes([rf.track_lrc(track, 1)])
    if mode is Mode.TRACK2:
        track = f";{card.pan}={body}?".encode()
        return track + bytes([rf.track_lrc(track, 2)])
    digits = card.pan if mode is Mode.EMV5A else f"{card.pan}D{body}"
    digits += "F" * (len(digits) % 2)
    tag = 0x5A if mode is Mode.EMV5A else 0x57
    return bytes([tag, len(digits) // 2]) + h(digits)


# --- known answers ----------------------------------------------------------------------------------


def test_builders_reproduce_the_idtech_tracks():
    entry = next(e for e in IDTECH if e["type"] == "idtech_track_blocks")
    t1_card = Card("4266841088889999", "0809", "BUSH JR/GEORGE W.MR", None, "101", "100001100000000046000000")
    t2_card = Card("4266841088889999", "0809", "BUSH JR/GEORGE W.MR", None, "101", "10000046")
    assert sim.track1(t1_card) == entry["expected_t1"].encode()
    assert sim.track2(t2_card) == entry["expected_t2"].encode()


def test_builders_reproduce_the_emv_tlv_block():
    entry = next(e for e in IDTECH if e["type"] == "data_key_decrypt")
    card = Card("4761739001010010", "1512", "TEST/CARD", None, "201", "1143878089")
    assert sim.emv5a(card) + sim.emv57(card) == h(entry["plaintext_hex"]).rstrip(b"\0")


@pytest.mark.parametrize(
    "entry",
    [
        e
        for e in TRACKS
        if "raw" in e and e.get("track") in (2, "emv_track2_equivalent") and e["raw"][0] in ";0123456789"
    ],
    ids=lambda e: e["id"],
)
def test_builders_reproduce_track2_and_emv57_vectors(entry):
    exp = entry["expected"]
    card = Card(exp["pan"], exp["expiration"], "TEST/CARD", None, exp["service_code"], exp["discretionary_data"])
    if entry["track"] == 2:
        track = sim.track2(card)
        assert track[:-1] == entry["raw"][: len(track) - 1].encode()
    else:
        value = sim.emv57(card)[2:]
        assert value.hex().upper() == entry["raw"].rstrip("0")[: 2 * len(value)]


def test_emv_odd_digits_are_f_padded():
    card = Card(pan="378282246310005", expiry="2512")
    assert sim.emv5a(card) == h("5A08378282246310005F")
    assert sim.emv57(card).hex().upper().endswith("F")


def test_keyed_format():
    assert sim.keyed_plaintext(CARD) == b"4761739001010010=2512=123"
    assert sim.keyed_plaintext(Card(pan="4761739001010010", expiry="2512")) == b"4761739001010010=2512"


def test_masked_tracks_hide_the_pan_middle_and_lrc():
    m1, m2 = sim.masked_track1(CARD), sim.masked_track2(CARD)
    assert len(m1) == len(sim.track1(CARD)) and len(m2) == len(sim.track2(CARD))
    assert m1.startswith(b"%*4761********0010^SMITH/JANE^2512") and m1.endswith(b"?*")
    assert m2.startswith(b";4761********0010=2512") and m2.endswith(b"?*")
    assert b"1143878089" not in m1 + m2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pan": "4761"}, r"^PAN must be 12-19 digits$"),
        ({"pan": "476173900101001X"}, r"^PAN must be 12-19 digits$"),
        ({"expiry": "25-12"}, r"^expiry \(YYMM\) must be 4-4 digits$"),
        ({"cvv": "12"}, r"^CVV must be 3-4 digits$"),
        ({"service_code": "20"}, r"^service code must be 3-3 digits$"),
        ({"discretionary": "12A"}, r"^discretionary data must be 1-32 digits$"),
        ({"name": "A"}, r"^name must be 2-26 upper-case track 1 characters without \^ % \?$"),
        ({"name": "SMITH^JANE"}, r"name must be"),
        ({"name": "smith/jane"}, r"name must be"),
    ],
)
def test_card_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Card(**kwargs)


def test_card_repr_hides_pan_and_cvv():
    assert "4761739001010010" not in repr(CARD) and "123" not in repr(CARD).replace("SMITH", "")


# --- round trips: every mode x scheme x device type ---------------------------------------------------


@pytest.mark.parametrize("scheme", list(Scheme))
@pytest.mark.parametrize("mode", list(sim.TERMINAL_MODES))
@pytest.mark.parametrize("variant", [KeyVariant.DATA, KeyVariant.PIN])
def test_terminal_round_trip(scheme, mode, variant):
    bdk, ksn = KEYS[scheme]
    # Given a terminal payload
    out = sim.terminal_payload(CARD, mode, scheme=scheme, bdk=bdk, ksn=ksn, variant=variant)
    assert out["deviceType"] == "terminal" and out["ksn"] == ksn.hex().upper()
    # When it is decrypted with the device's BDK and the KSN beside it
    plain = dukpt.decrypt(scheme, bdk, h(out["ksn"]), h(out["devicePayload"]), variant)
    # Then the documented plaintext comes back, zero padded to the block size
    expected = expected_plaintext(mode, CARD)
    assert plain == dukpt.zero_pad(expected, dukpt.block_size(scheme))
    assert sim.plaintext(mode, CARD) == expected


@pytest.mark.parametrize("scheme", list(Scheme))
@pytest.mark.parametrize("mode", list(sim.AUDIO_READER_MODES))
@pytest.mark.parametrize("framed", [False, True])
@pytest.mark.parametrize("hashes", [True, False])
def test_audio_reader_round_trip(scheme, mode, framed, hashes):
    bdk, ksn = KEYS[scheme]
    out = sim.audio_reader_payload(CARD, mode, scheme=scheme, bdk=bdk, ksn=ksn, hashes=hashes, framed=framed)
    assert set(out) == {"deviceType", "devicePayload"} and out["deviceType"] == "audio-reader"
    parsed = rf.parse_audio_message(
        out["devicePayload"], block_size=dukpt.block_size(scheme), ksn_length=dukpt.ksn_length(scheme)
    )
    assert parsed.ksn == ksn and parsed.framed is framed and parsed.format == rf.ORIGINAL
    assert len(parsed.hashes) == (2 if mode is Mode.SWIPED else 1) * hashes
    t1, t2 = open_tracks(parsed, scheme, bdk)
    assert t1 == (expected_plaintext(Mode.TRACK1, CARD) if mode is not Mode.TRACK2 else b"")
    assert t2 == (expected_plaintext(Mode.TRACK2, CARD) if mode is not Mode.TRACK1 else b"")
    assert parsed.masked(1) == (sim.masked_track1(CARD) if t1 else b"")


def open_tracks(parsed, scheme, bdk, variant="data"):
    tracks = rf.open_message(parsed, lambda data: dukpt.decrypt(scheme, bdk, parsed.ksn, data, variant))
    return tracks.t1, tracks.t2


@pytest.mark.parametrize("scheme", list(Scheme))
@pytest.mark.parametrize("payload_format", ["enhanced", "unimag-ii"])
@pytest.mark.parametrize("mode", list(sim.AUDIO_READER_MODES))
@pytest.mark.parametrize("framed", [False, True])
def test_audio_reader_enhanced_round_trip(scheme, payload_format, mode, framed):
    bdk, ksn = KEYS[scheme]
    out = sim.audio_reader_payload(CARD, mode, scheme=scheme, bdk=bdk, ksn=ksn, framed=framed,
                                   payload_format=payload_format)
    parsed = rf.parse_audio_message(out["devicePayload"], ksn_length=dukpt.ksn_length(scheme))
    assert parsed.format == rf.ENHANCED and parsed.framed is framed and parsed.ksn == ksn
    assert parsed.cipher == ("tdes" if scheme is Scheme.TDES else "aes")
    assert parsed.block_size == dukpt.block_size(scheme)
    n_tracks = 2 if mode is Mode.SWIPED else 1
    assert len(parsed.segments) == n_tracks  # each track encrypted separately
    unimag = payload_format == "unimag-ii"
    assert len(parsed.hashes) == (0 if unimag else n_tracks)
    assert parsed.serial_number == (sim.DEFAULT_SERIAL if unimag else None)
    assert (parsed.track_status & 0x04 == 0x04) is unimag  # UniMag II: bit 2 always set, no track 3
    t1, t2 = open_tracks(parsed, scheme, bdk)
    assert t1 == (expected_plaintext(Mode.TRACK1, CARD) if mode is not Mode.TRACK2 else b"")
    assert t2 == (expected_plaintext(Mode.TRACK2, CARD) if mode is not Mode.TRACK1 else b"")


def test_audio_reader_aes_with_the_tdes_data_key():
    bdk, ksn = KEYS[Scheme.TDES]
    out = sim.audio_reader_payload(CARD, scheme=Scheme.TDES, bdk=bdk, ksn=ksn, payload_format="enhanced",
                                   aes_data_key=True)
    parsed = rf.parse_audio_message(out["devicePayload"])
    assert parsed.cipher == "aes" and parsed.block_size == 16 and len(parsed.ksn) == 10
    key = dukpt.data_key("tdes", bdk, ksn)
    tracks = rf.open_message(parsed, lambda data: dukpt_aes.aes_cbc_decrypt(key, data))
    assert (tracks.t1, tracks.t2) == (sim.track1(CARD), sim.track2(CARD))
    with pytest.raises(ValueError, match=r"^an AES data key is for the enhanced formats with a TDES BDK$"):
        sim.audio_reader_payload(CARD, aes_data_key=True)
    with pytest.raises(ValueError, match=r"^payload format must be original, enhanced or unimag-ii$"):
        sim.audio_reader_payload(CARD, payload_format="v2")


@pytest.mark.parametrize("mode", [Mode.KEYED, Mode.EMV57, Mode.EMV5A])
def test_audio_reader_does_not_key_or_dip(mode):
    with pytest.raises(ValueError, match=r"^an audio reader only swipes: mode must be swiped, track1 or track2$"):
        sim.audio_reader_payload(CARD, mode)


def test_terminal_does_not_send_two_tracks():
    with pytest.raises(ValueError, match=r"^mode is not a terminal mode$"):
        sim.terminal_payload(CARD, Mode.SWIPED)


@settings(max_examples=40, deadline=None)
@given(
    pan=st.text(alphabet="0123456789", min_size=12, max_size=19),
    expiry=st.from_regex(r"\A[0-9]{2}(0[1-9]|1[0-2])\Z"),
    name=st.from_regex(r"\A[A-Z]{1,12}/[A-Z .]{0,12}\Z"),
    cvv=st.one_of(st.none(), st.text(alphabet="0123456789", min_size=3, max_size=4)),
    scheme=st.sampled_from(list(Scheme)),
    mode=st.sampled_from(list(sim.TERMINAL_MODES)),
)
def test_random_cards_round_trip(pan, expiry, name, cvv, scheme, mode):
    card = Card(pan=pan, expiry=expiry, name=name, cvv=cvv)
    bdk, ksn = KEYS[scheme]
    out = sim.terminal_payload(card, mode, scheme=scheme, bdk=bdk, ksn=ksn)
    plain = dukpt.decrypt(scheme, bdk, ksn, h(out["devicePayload"]))
    assert plain == dukpt.zero_pad(expected_plaintext(mode, card), dukpt.block_size(scheme))
    if mode in (Mode.TRACK1, Mode.TRACK2):
        audio = sim.audio_reader_payload(card, mode, scheme=scheme, bdk=bdk, ksn=ksn, framed=True)
        parsed = rf.parse_audio_message(
            audio["devicePayload"], block_size=dukpt.block_size(scheme), ksn_length=dukpt.ksn_length(scheme)
        )
        t1, t2 = open_tracks(parsed, scheme, bdk)
        assert (t1 or t2) == expected_plaintext(mode, card)


# --- CLI --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", list(Scheme))
@pytest.mark.parametrize(
    ("device_type", "mode"),
    [("terminal", m.value) for m in sim.TERMINAL_MODES] + [("audio-reader", m.value) for m in sim.AUDIO_READER_MODES],
)
def test_cli_round_trip(capsys, scheme, device_type, mode):
    argv = ["--scheme", scheme.value, "--device-type", device_type, "--mode", mode]
    argv += ["--pan", "5413330089020037", "--expiry", "2911", "--name", "DOE/JOHN", "--cvv", "999"]
    assert sim.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    bdk, ksn = KEYS[scheme]
    card = Card(pan="5413330089020037", expiry="2911", name="DOE/JOHN", cvv="999")
    if device_type == "terminal":
        assert set(out) == {"deviceType", "ksn", "devicePayload"}
        plain = dukpt.decrypt(scheme, bdk, h(out["ksn"]), h(out["devicePayload"]))
        assert plain == dukpt.zero_pad(expected_plaintext(Mode(mode), card), dukpt.block_size(scheme))
    else:
        assert set(out) == {"deviceType", "devicePayload"}
        parsed = rf.parse_audio_message(
            out["devicePayload"], block_size=dukpt.block_size(scheme), ksn_length=dukpt.ksn_length(scheme)
        )
        t1, t2 = open_tracks(parsed, scheme, bdk)
        assert t1 + t2 == (sim.track1(card) if mode != "track2" else b"") + (
            sim.track2(card) if mode != "track1" else b""
        )


def test_cli_explicit_keys_frame_and_variant(capsys):
    argv = [
        "--device-type",
        "audio-reader",
        "--bdk",
        "0123456789ABCDEFFEDCBA9876543210",
        "--ksn",
        "FFFF9876543210E00008",
    ]
    assert sim.main([*argv, "--frame", "--no-hashes", "--variant", "pin"]) == 0
    parsed = rf.parse_audio_message(json.loads(capsys.readouterr().out)["devicePayload"])
    assert parsed.framed and parsed.hashes == () and parsed.ksn == h("FFFF9876543210E00008")
    assert open_tracks(parsed, "tdes", KEYS[Scheme.TDES][0], "pin")[1] == sim.track2(Card())
    # enhanced format, PIN variant: field 8 bit 6 says so
    assert sim.main([*argv, "--format", "unimag-ii", "--variant", "pin"]) == 0
    parsed = rf.parse_audio_message(json.loads(capsys.readouterr().out)["devicePayload"])
    assert parsed.pin_key and parsed.serial_number == sim.DEFAULT_SERIAL
    assert open_tracks(parsed, "tdes", KEYS[Scheme.TDES][0], "pin")[1] == sim.track2(Card())
    assert sim.main([*argv, "--format", "enhanced", "--aes-data-key"]) == 0
    assert rf.parse_audio_message(json.loads(capsys.readouterr().out)["devicePayload"]).cipher == "aes"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--device-type", "audio-reader", "--mode", "keyed"], "an audio reader only swipes"),
        (["--mode", "swiped"], "--mode swiped is for the audio reader"),
        (["--bdk", "XYZ"], "--bdk is not hexadecimal"),
        (["--ksn", "FFFF9876543210E00000"], "KSN transaction counter is zero"),
        (["--ksn", "FFFF"], "KSN must be 10 bytes"),
        (["--bdk", "0123"], "BDK must be 16 bytes"),
        (["--pan", "12"], "PAN must be 12-19 digits"),
        (["--scheme", "des"], "invalid choice"),
    ],
)
def test_cli_rejections(capsys, argv, message):
    with pytest.raises(SystemExit) as info:
        sim.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_cli_as_module():
    env = {**os.environ, "PYTHONPATH": str(ROOT / "layers" / "shared" / "python")}
    result = subprocess.run(
        [sys.executable, "-m", "vaultcore.devices.simulator", "--mode", "keyed", "--cvv", "123"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=60,
    )
    out = json.loads(result.stdout)
    bdk, ksn = KEYS[Scheme.TDES]
    assert out["ksn"] == ksn.hex().upper()
    plain = dukpt.decrypt("tdes", bdk, ksn, h(out["devicePayload"]))
    assert plain.rstrip(b"\0") == b"4761739001010010=2512=123"
