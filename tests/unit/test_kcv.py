"""Key check values against published values (tests/vectors/bdk_components.json records each source)."""

from __future__ import annotations

import json
from functools import reduce
from pathlib import Path

import pytest

from vaultcore.crypto.kcv import kcv_aes, kcv_tdes

VECTORS = json.loads((Path(__file__).resolve().parent.parent / "vectors" / "bdk_components.json").read_text())


def _kcv(scheme: str, key: bytes) -> str:
    return kcv_tdes(key) if scheme == "tdes" else kcv_aes(key)


@pytest.mark.parametrize("entry", VECTORS["entries"], ids=lambda e: e["id"])
def test_published_key_check_values(entry):
    key = bytes.fromhex(entry["key"])
    assert _kcv(entry["scheme"], key) == entry["kcv"]


@pytest.mark.parametrize("entry", [e for e in VECTORS["entries"] if e["type"] == "components"], ids=lambda e: e["id"])
def test_published_components_xor_into_the_published_key(entry):
    parts = [bytes.fromhex(c["component"]) for c in entry["components"]]
    assert reduce(lambda a, b: bytes(x ^ y for x, y in zip(a, b, strict=True)), parts).hex().upper() == entry["key"]
    assert [_kcv(entry["scheme"], p) for p in parts] == [c["kcv"] for c in entry["components"]]


def test_the_ansi_test_bdk_and_the_des_zero_key_known_answers():
    # ANSI X9.24 test BDK: KCV 08D7B4 (the widely published value); DES/TDES of a zero key on a zero block is
    # 8CA64DE9C1B123A7 (the classic DES known answer).
    assert kcv_tdes(bytes.fromhex("0123456789ABCDEFFEDCBA9876543210")) == "08D7B4"
    assert kcv_tdes(bytes(16)) == "8CA64D"
    with pytest.raises(ValueError):
        kcv_tdes(bytes(8))
    with pytest.raises(ValueError):
        kcv_aes(bytes(20))
