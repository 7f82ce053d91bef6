"""Device types as data: each reader model is a profile, so a new model is configuration, not code.

A profile says where the KSN comes from, how the payload is laid out, which DUKPT key variant and cipher mode
the reader uses. The DUKPT scheme (TDES or AES) is a property of the device's BDK, not of the model.

Built in (spec: ``<device_type_terminal>`` and ``<device_type_audio_reader>``):

- ``terminal``: the KSN travels in the request's ``ksn``; the payload is one encrypted field (keyed entry,
  track 1, track 2, or EMV tag 57/5A), decided from the decrypted content.
- ``audio-reader``: the audio-jack swipe reader (ID TECH family: UniMag/Shuttle, SecureMag, iMag, BT Mag...); the
  hex payload carries masked tracks, the encrypted tracks, their SHA-1 hashes and the KSN, in the ID TECH
  original format (T1||T2 one CBC stream) or enhanced format (each track encrypted separately, fields 8/9,
  optional serial number; the UniMag II layout is one of its forms), told apart by the card encode type byte,
  bare or in the STX/ETX device frame (:mod:`vaultcore.cards.reader_formats`).

Both use the data-encryption key variant with the X9.24-1 one-way function, CBC with a zero IV (public facts).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

__all__ = ["DeviceProfile", "PROFILES", "profile_for", "profile_names"]


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    layout: str  # "terminal-field" or "audio-reader"
    ksn_source: str  # "request" or "payload"
    key_variant: str = "data"  # see vaultcore.crypto.dukpt.KeyVariant
    cipher_mode: str = "CBC"
    iv_hex: str = ""  # empty: all-zero IV of the cipher's block size
    description: str = ""
    # audio-reader layout: the ID TECH payload formats the model sends (reader_formats.ORIGINAL / ENHANCED)
    payload_formats: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


PROFILES: dict[str, DeviceProfile] = {
    p.name: p
    for p in (
        DeviceProfile("terminal", "terminal-field", "request",
                      description="Terminal sending one encrypted field (keyed, track 1/2, EMV 57/5A) and its KSN."),
        DeviceProfile("audio-reader", "audio-reader", "payload", payload_formats=("original", "enhanced"),
                      description="Audio-jack swipe reader (ID TECH original or enhanced format, framed or not); "
                                  "KSN, masked tracks and hashes inside the payload."),
        # A profile only (no code): MagTek-style readers encrypt card data with the PIN variant and no
        # one-way function by default (MagneSafe "Card Data Encryption Variant").
        DeviceProfile("terminal-pin-variant", "terminal-field", "request", key_variant="pin",
                      description="Terminal whose reader encrypts card data with the DUKPT PIN variant."),
    )
}


def profile_for(device_type: str) -> DeviceProfile | None:
    return PROFILES.get(device_type)


def profile_names() -> list[str]:
    return sorted(PROFILES)
