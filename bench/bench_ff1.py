"""FF1, prefix cipher and token engine throughput; prints one JSON object.

Run: ``.venv/bin/python bench/bench_ff1.py [seconds-per-case]`` (default 1.0). Figures are single-threaded,
one process; each token includes its AES key schedule (one AES-ECB context per call, as in production). Short
values (3-digit CVV, 4-digit expiry, 2-character CARD62 name) are measured twice in the same run: as version-3
bfids make them now (prefix cipher) and as version-1/2 bfids made them (cycle walking FF1 on 10**6 values).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "layers" / "shared" / "python"))

from vaultcore.crypto.ff1 import FF1  # noqa: E402
from vaultcore.crypto.prefix_cipher import PrefixCipher  # noqa: E402
from vaultcore.tokens.engine import detokenize_value, tokenize_value  # noqa: E402
from vaultcore.tokens.templates import GATEWAY_TEMPLATE  # noqa: E402

__all__ = ["main"]


def _rate(fn: Callable[[], object], seconds: float) -> float:
    fn()  # warm up
    count, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(20):
            fn()
        count += 20
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


def main(seconds: float = 1.0) -> dict[str, object]:
    key = os.urandom(32)
    bfid = "djEAAQBrAl4ena42TO6lvdIcXESbAaZNVgtwYXJ0bmVyLTEyMwdHQVRFV0FZqMBPHbwBv8Trwiaf49MkKg"
    card, email = "4111111111111111", "john.q.public.1984@example.org"
    assert len(email) == 30
    pan = GATEWAY_TEMPLATE.get_field("vault_token_card_number")
    mail = GATEWAY_TEMPLATE.get_field("vault_token_email")
    cvv = GATEWAY_TEMPLATE.get_field("vault_token_card_verification")
    exp = GATEWAY_TEMPLATE.get_field("vault_token_card_expiration")
    name = GATEWAY_TEMPLATE.get_field("vault_token_first_name")
    pan_tok, mail_tok = tokenize_value(key, bfid, pan, card), tokenize_value(key, bfid, mail, email)
    raw10 = FF1(key, "0123456789")
    tweak = os.urandom(16)
    results = {
        "ff1_raw_16_digits_per_s": _rate(lambda: raw10.encrypt(card, tweak), seconds),
        "tokenize_16_digits_format_none_per_s": _rate(
            lambda: tokenize_value(key, bfid, GATEWAY_TEMPLATE.get_field("vault_token_bank_account_number"), card[:16]),
            seconds,
        ),
        "tokenize_card_16_digits_first6_last4_per_s": _rate(lambda: tokenize_value(key, bfid, pan, card), seconds),
        "detokenize_card_16_digits_first6_last4_per_s": _rate(
            lambda: detokenize_value(key, bfid, pan, pan_tok), seconds
        ),
        "tokenize_email_30_chars_per_s": _rate(lambda: tokenize_value(key, bfid, mail, email), seconds),
        "detokenize_email_30_chars_per_s": _rate(lambda: detokenize_value(key, bfid, mail, mail_tok), seconds),
        # Short domains, one fresh bfid per call (nothing is cached across bfids). Now: the prefix cipher, a constant
        # cost linear in the domain. Before (still how version-1/2 bfids work): cycle walking, about 1e6 / 10**k FF1
        # calls, averaged over many bfids.
        "prefix_cipher_raw_1000_per_s": _rate(lambda: PrefixCipher(key, tweak, 1000).encrypt_int(123), seconds),
        "prefix_cipher_raw_10000_per_s": _rate(lambda: PrefixCipher(key, tweak, 10_000).encrypt_int(1227), seconds),
        "tokenize_cvv_3_digits_per_s": _rate(lambda: tokenize_value(key, os.urandom(8).hex(), cvv, "123"), seconds),
        "tokenize_cvv_3_digits_cycle_walk_per_s": _rate(
            lambda: tokenize_value(key, os.urandom(8).hex(), cvv, "123", bfid_version=2), seconds),
        "detokenize_cvv_3_digits_per_s": _rate(lambda: detokenize_value(key, bfid, cvv, "239"), seconds),
        "tokenize_expiry_4_digits_per_s": _rate(lambda: tokenize_value(key, os.urandom(8).hex(), exp, "1227"), seconds),
        "tokenize_expiry_4_digits_cycle_walk_per_s": _rate(
            lambda: tokenize_value(key, os.urandom(8).hex(), exp, "1227", bfid_version=2), seconds),
        "tokenize_name_2_card62_per_s": _rate(lambda: tokenize_value(key, os.urandom(8).hex(), name, "Al"), seconds),
        "tokenize_name_2_card62_cycle_walk_per_s": _rate(
            lambda: tokenize_value(key, os.urandom(8).hex(), name, "Al", bfid_version=2), seconds),
    }
    out: dict[str, object] = {k: round(v) for k, v in results.items()}
    out["python"] = platform.python_version()
    out["machine"] = platform.machine()
    print(json.dumps({"ff1": out}, indent=2))
    return out


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
