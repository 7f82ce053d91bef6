"""A keyed, tweaked permutation of a small domain ``[0, n)``: the *prefix cipher* of Black and Rogaway ("Ciphers
with arbitrary finite domains", CT-RSA 2002, section 3), built from AES-256.

FF1 (NIST SP 800-38G Rev. 1) refuses domains below one million (section 5.2); a 3-digit security code has one
thousand values. The prefix cipher is the construction for exactly such domains: give every element of the domain
a pseudo-random sort key and let the permutation send ``x`` to the rank of its key. No Feistel rounds are involved,
so the message-recovery attacks that made SP 800-38G raise FF1's minimum domain (Bellare, Hoang and Tessaro, CCS
2016; Hoang, Tessaro and Trieu, CCS 2018: they exploit the round structure of Feistel on small domains) do not
apply.

Construction (all integers big-endian)
    * ``K_t = HMAC-SHA256(key, "vaultcore/crypto/prefix-cipher/v1" || 0x00 || [len(tweak)]^2 || tweak ||
      [n]^4)``: a fresh AES-256 key per (key, tweak, domain size), so each tweak has its own, independent
      permutation.
    * ``h_i``, ``i`` in ``[0, n)``: the 16-bit number of bytes ``i`` and ``n + i`` of the stream
      ``AES-ECB(K_t, [0]^16 || [1]^16 || [2]^16 ...)`` (AES in counter mode from zero).
    * ``s_i = AES(K_t, 0x01 || [0]^11 || [i]^4)``: a 128-bit tie-break (counter blocks start with ``0x00``, so the
      two kinds of AES input never meet).
    * ``E(x) = #{ i : (h_i, s_i) < (h_x, s_x) }`` (lexicographic order): the rank of ``x``'s key. Keys are distinct
      (the ``s_i`` are outputs of one AES permutation on distinct inputs), so ``E`` is always a bijection, and
      ``D(y)`` is the ``x`` whose key has rank ``y``.

Security: if AES under ``K_t`` were a random function, the keys would be independent and uniform, and ranking
``n`` independent uniform keys without ties gives a uniformly random permutation, whatever the adversary sees
(even the whole table). So the distinguishing advantage against a random permutation per tweak is at most the
PRF advantage of HMAC-SHA256 (for ``K_t``) plus the PRP advantage of AES-256 on ``q = ceil(n / 8) + n`` blocks
plus the PRP/PRF switching term ``q**2 / 2**129`` (below 2**-98 for ``n = 2**15``).

Cost: the ranking needs only the 16-bit ``h_i`` of all elements, which one AES-ECB call and byte-string
operations in C give (``bytes.translate`` / ``count`` / ``find``); the 128-bit ``s_i`` are computed only for the
elements sharing ``x``'s ``h`` (about ``n / 65536``, usually none). Per call: one HMAC, one AES key schedule,
``n / 8`` AES blocks, a few passes over ``n`` bytes and a loop over about ``n / 256`` elements sharing ``x``'s
first byte; tens of microseconds for ``n = 10**4`` (``bench/bench_ff1.py``), linear in ``n``, which is why
:data:`MAX_DOMAIN` bounds it. The work depends on the key (bucket sizes), never on anything a party without the
key could relate to ``x``.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from bisect import bisect_left, bisect_right
from operator import itemgetter

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = ["PrefixCipher", "PrefixCipherError", "MAX_DOMAIN", "MIN_DOMAIN"]

#: Largest domain the prefix cipher takes: its cost is linear in the domain (FF1 cycle walking is cheaper above).
MAX_DOMAIN = 1 << 15
MIN_DOMAIN = 2
_LABEL = b"vaultcore/crypto/prefix-cipher/v1"
_TIE = 1 << 120  # s_i input: 0x01 || [0]^11 || [i]^4
_BLOCK = struct.Struct(">12xI")
_BYTES = bytes(range(256))
_counters: bytes | None = None


class PrefixCipherError(ValueError):
    """Invalid key, tweak, domain or input (messages never carry the data itself)."""


def _counter_blocks() -> memoryview:
    """``[0]^16 || [1]^16 || ...`` for the largest domain (64 KiB), built once per process."""
    global _counters
    if _counters is None:
        _counters = b"".join(map(_BLOCK.pack, range(2 * MAX_DOMAIN // 16)))
    return memoryview(_counters)


def _count_below(data: bytes, byte: int) -> int:
    """How many bytes of ``data`` are below ``byte`` (one C pass: delete the others, take the length)."""
    return len(data.translate(None, _BYTES[byte:]))


def _positions(data: bytes, byte: int) -> list[int]:
    """Indexes of ``byte`` in ``data``, ascending."""
    out = []
    i = data.find(byte)
    while i >= 0:
        out.append(i)
        i = data.find(byte, i + 1)
    return out


class PrefixCipher:
    """The permutation of ``[0, n)`` under ``key`` and ``tweak`` (module docstring); ``2 <= n <=``
    :data:`MAX_DOMAIN`. An instance holds a live AES context: use it within one operation and one thread."""

    __slots__ = ("n", "_enc", "_hi", "_lo")

    def __init__(self, key: bytes, tweak: bytes, n: int) -> None:
        if not isinstance(key, bytes | bytearray) or len(key) < 16:
            raise PrefixCipherError("prefix cipher key must be at least 16 bytes")
        if not isinstance(tweak, bytes | bytearray) or len(tweak) > 0xFFFF:
            raise PrefixCipherError("prefix cipher tweak must be bytes (at most 65535)")
        if not isinstance(n, int) or isinstance(n, bool) or not MIN_DOMAIN <= n <= MAX_DOMAIN:
            raise PrefixCipherError(f"prefix cipher domain must be an integer from {MIN_DOMAIN} to {MAX_DOMAIN}")
        message = _LABEL + b"\x00" + len(tweak).to_bytes(2, "big") + bytes(tweak) + n.to_bytes(4, "big")
        k_t = hmac.new(bytes(key), message, hashlib.sha256).digest()
        self.n = n
        # AES-ECB over distinct single blocks is the raw AES permutation (a PRF input, never data encryption).
        self._enc = Cipher(algorithms.AES(k_t), modes.ECB()).encryptor()  # noqa: S305
        stream = self._enc.update(_counter_blocks()[: 16 * ((2 * n + 15) // 16)])
        self._hi, self._lo = stream[:n], stream[n : 2 * n]

    def _ties(self, indexes: list[int]) -> list[bytes]:
        """``s_i`` of each index, in order."""
        out = self._enc.update(b"".join((_TIE | i).to_bytes(16, "big") for i in indexes))
        return [out[16 * k : 16 * k + 16] for k in range(len(indexes))]

    def encrypt_int(self, x: int) -> int:
        """``E(x)``: the rank of ``x``'s key. Requires ``0 <= x < n``."""
        if not isinstance(x, int) or not 0 <= x < self.n:
            raise PrefixCipherError("prefix cipher input is outside the domain")
        hi, lo = self._hi, self._lo
        b, c = hi[x], lo[x]
        rank = _count_below(hi, b)  # keys whose first byte is smaller
        same_b = _positions(hi, b)  # x and the keys sharing its first byte (about n / 256)
        if len(same_b) == 1:
            return rank
        lows = bytes(itemgetter(*same_b)(lo))
        rank += _count_below(lows, c)
        same_h = [same_b[k] for k in _positions(lows, c)]  # sharing all 16 bits (usually x alone)
        if len(same_h) > 1:
            ties = self._ties(same_h)
            mine = ties[same_h.index(x)]
            rank += sum(t < mine for t in ties)
        return rank

    def decrypt_int(self, y: int) -> int:
        """``D(y)``: the element whose key has rank ``y``. Requires ``0 <= y < n``."""
        if not isinstance(y, int) or not 0 <= y < self.n:
            raise PrefixCipherError("prefix cipher input is outside the domain")
        hi, lo, n = self._hi, self._lo, self.n
        # The first byte b of the key of rank y: start where a uniform first byte would put it, then step.
        b = y * 256 // n
        below = _count_below(hi, b)
        count = hi.count(b)
        while y < below:
            b -= 1
            count = hi.count(b)
            below -= count
        while y >= below + count:
            below += count
            b += 1
            count = hi.count(b)
        same_b = _positions(hi, b)
        r = y - below  # rank among the keys of first byte b
        if len(same_b) == 1:
            return same_b[0]
        lows = itemgetter(*same_b)(lo)
        order = sorted(range(len(same_b)), key=lows.__getitem__)
        sorted_lows = [lows[k] for k in order]
        c = sorted_lows[r]
        first, last = bisect_left(sorted_lows, c), bisect_right(sorted_lows, c)
        if last - first == 1:
            return same_b[order[r]]
        same_h = [same_b[k] for k in order[first:last]]
        ties = self._ties(same_h)
        by_tie = sorted(range(len(same_h)), key=ties.__getitem__)
        return same_h[by_tie[r - first]]

    def close(self) -> None:
        """Release the AES context."""
        self._enc.finalize()
