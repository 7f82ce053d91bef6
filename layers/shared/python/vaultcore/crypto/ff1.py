"""FF1 format-preserving encryption (NIST SP 800-38G Rev. 1, section 5.1 and Algorithms 7 and 8).

FF1 is a 10-round Feistel cipher over numeral strings of a given radix, keyed by an AES key (128, 192 or
256 bits; the platform uses AES-256) and parameterised by a tweak of any byte length.

Two interfaces:

* numerals: :func:`encrypt_numerals` / :func:`decrypt_numerals` take a list of integers ``0 <= x < radix``
  (radix 2 to 2**16, SP 800-38G section 5.1, Table 3 "radix in [2..2**16]");
* alphabet: :class:`FF1` maps the characters of an alphabet (2 to 62 distinct characters for our token
  alphabets; any size up to 2**16 works) to numerals by their index.

:class:`PreparedFF1` binds a key, tweak, radix and length once and encrypts integers ``NUM_radix(X)``
directly; it is what cycle walking uses to apply FF1 many times at the cost of a few AES blocks each.

Domain rule (SP 800-38G Rev. 1 section 5.2): ``radix**minlen >= 1_000_000`` and ``minlen >= 2``; a smaller
input raises :class:`DomainTooSmall`. The maximum length is ``2**32 - 1`` (section 5.2: ``maxlen < 2**32``,
the length is also encoded in 4 bytes of the block P).

Example (SP 800-38G FF1 sample #1, AES-128, empty tweak, radix 10):

>>> key = bytes.fromhex("2B7E151628AED2A6ABF7158809CF4F3C")
>>> FF1(key, "0123456789").encrypt("0123456789", b"")
'2433477484'
>>> encrypt_numerals(key, b"", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 10)
[2, 4, 3, 3, 4, 7, 7, 4, 8, 4]

Implementation notes (performance, not correctness): halves are kept as Python integers (``NUM_radix``)
across rounds instead of numeral strings, since every round only needs ``NUM_radix(B)`` and
``(NUM_radix(A) + y) mod radix**m``; the CBC-MAC state after ``P`` and the tweak-only blocks of ``Q`` is the
same in all ten rounds and is computed once; one AES-ECB encryptor serves all AES calls of an operation.
"""

from __future__ import annotations

from collections.abc import Sequence

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = [
    "FF1",
    "FF1Error",
    "DomainTooSmall",
    "PreparedFF1",
    "encrypt_numerals",
    "decrypt_numerals",
    "num_radix",
    "str_radix",
    "MIN_DOMAIN",
    "MIN_RADIX",
    "MAX_RADIX",
    "MAX_LENGTH",
    "min_length",
]

#: SP 800-38G Rev. 1 section 5.2: radix**minlen >= 1 000 000.
MIN_DOMAIN = 1_000_000
MIN_RADIX = 2
#: SP 800-38G section 5.1: radix in [2 .. 2**16].
MAX_RADIX = 1 << 16
#: SP 800-38G section 5.2: maxlen < 2**32 (n is encoded on 4 bytes in P).
MAX_LENGTH = (1 << 32) - 1
_MAX_TWEAK = (1 << 32) - 1
_ROUNDS = 10
_MASK128 = (1 << 128) - 1


class FF1Error(ValueError):
    """Invalid FF1 input (key, radix, tweak, numeral or character). Messages never carry the data itself."""


class DomainTooSmall(FF1Error):
    """radix**length is below the FF1 minimum domain of one million (SP 800-38G Rev. 1 section 5.2)."""


def min_length(radix: int) -> int:
    """Smallest length n with ``radix**n >= MIN_DOMAIN`` (and n >= 2): the shortest input FF1 accepts."""
    _check_radix(radix)
    n, size = 1, radix
    while size < MIN_DOMAIN or n < 2:
        n += 1
        size *= radix
    return n


def _check_radix(radix: int) -> None:
    if not isinstance(radix, int) or isinstance(radix, bool) or not MIN_RADIX <= radix <= MAX_RADIX:
        raise FF1Error(f"FF1 radix must be an integer from {MIN_RADIX} to {MAX_RADIX}")


def _check_key(key: bytes) -> None:
    if not isinstance(key, bytes | bytearray) or len(key) not in (16, 24, 32):
        raise FF1Error("FF1 key must be 16, 24 or 32 bytes (AES-128, AES-192 or AES-256)")


class PreparedFF1:
    """FF1 bound to one key, tweak, radix and length n; encrypts ``NUM_radix(X)`` as an integer.

    SP 800-38G Algorithm 7 (encrypt) and Algorithm 8 (decrypt), steps 1 to 5 done once in the constructor.
    An instance holds a live AES encryptor: use it within one operation and one thread, do not share it.
    """

    __slots__ = (
        "radix",
        "length",
        "_u",
        "_v",
        "_mod_u",
        "_mod_v",
        "_domain",
        "_enc",
        "_d",
        "_tail",
        "_tail_blocks",
        "_state",
        "_extra",
        "_fast",
        "_shift",
    )

    def __init__(self, key: bytes, tweak: bytes, radix: int, length: int) -> None:
        _check_key(key)
        _check_radix(radix)
        if not isinstance(tweak, bytes | bytearray):
            raise FF1Error("FF1 tweak must be bytes")
        if len(tweak) > _MAX_TWEAK:
            raise FF1Error("FF1 tweak is longer than 2**32 - 1 bytes")
        if not isinstance(length, int) or isinstance(length, bool) or length > MAX_LENGTH:
            raise FF1Error(f"FF1 length must be an integer of at most {MAX_LENGTH} numerals")
        # minlen >= 2 is implied: radix <= 2**16 < 1 000 000, so one numeral never reaches the minimum domain.
        if length < 2 or radix**length < MIN_DOMAIN:
            raise DomainTooSmall(
                f"FF1 domain radix**length = {radix}**{length} is below the minimum of {MIN_DOMAIN:,} "
                f"(SP 800-38G Rev. 1 section 5.2); radix {radix} needs at least {min_length(radix)} numerals"
            )
        n, t = length, len(tweak)
        u = n // 2  # step 1
        v = n - u
        self.radix, self.length = radix, n
        self._u, self._v = u, v
        self._mod_u, self._mod_v = radix**u, radix**v
        self._domain = radix**n
        # Step 3: b = ceil(ceil(v * log2(radix)) / 8), computed exactly: ceil(v*log2(radix)) is the bit length of
        # radix**v - 1 (floating-point log2 can round the wrong way on exact powers).
        b = ((self._mod_v - 1).bit_length() + 7) // 8
        self._d = 4 * ((b + 3) // 4) + 4  # step 4
        # Step 5: P = [1]^1 || [2]^1 || [1]^1 || [radix]^3 || [10]^1 || [u mod 256]^1 || [n]^4 || [t]^4.
        p = (
            bytes((1, 2, 1))
            + radix.to_bytes(3, "big")
            + bytes((10, u % 256))
            + n.to_bytes(4, "big")
            + t.to_bytes(4, "big")
        )
        # CIPH_K is the raw AES block function; ECB over single blocks is exactly that (used as the PRF's
        # building block, never to encrypt data).
        self._enc = Cipher(algorithms.AES(bytes(key)), modes.ECB()).encryptor()  # noqa: S305
        # Step 6.i: Q = T || [0]^((-t-b-1) mod 16) || [i]^1 || [NUM_radix(B)]^b. Only the last b+1 bytes change
        # between rounds: run the CBC-MAC (PRF, section 4.3 Algorithm 6) over P and every block of Q made only of
        # tweak and zero bytes now, keep the chaining value.
        q_const = bytes(tweak) + bytes((-t - b - 1) % 16)
        full = len(q_const) // 16
        state = self._block(int.from_bytes(p, "big"))
        for j in range(full):
            state = self._block(state ^ int.from_bytes(q_const[16 * j : 16 * j + 16], "big"))
        self._state = state
        rest = q_const[16 * full :]
        tail_len = len(rest) + 1 + b  # a multiple of 16 by construction of the zero padding
        self._tail_blocks = tail_len // 16
        # tail(i, x) = int(rest || [i]^1 || [x]^b) = _tail[i] | x, precomputed for the ten round indexes.
        base = int.from_bytes(rest, "big") << (8 * (b + 1)) if rest else 0
        self._tail = tuple(base | (i << (8 * b)) for i in range(_ROUNDS))
        self._extra = (self._d + 15) // 16 - 1  # step 6.iii: extra blocks CIPH(R xor [j]^16) when d > 16
        # Common case (every token up to 30 characters and more): the varying bytes sit in one last block and
        # d <= 16, so a round is one AES call: R = CIPH(state xor tail_i xor x), y = first d bytes of R.
        # tail_i has zero bits where x goes, so tail_i | x == tail_i ^ x and state ^ tail_i can be precomputed.
        self._fast = tuple(state ^ t_i for t_i in self._tail) if self._tail_blocks == 1 and self._extra == 0 else None
        self._shift = 8 * (16 - self._d)

    def _block(self, x: int) -> int:
        return int.from_bytes(self._enc.update(x.to_bytes(16, "big")), "big")

    def _round_value(self, i: int, x: int) -> int:
        """Steps 6.i to 6.iv: y = NUM(S) for round i with NUM_radix of the round input x."""
        tail = self._tail[i] | x
        if self._tail_blocks == 1:
            r = self._enc.update((self._state ^ tail).to_bytes(16, "big"))
        else:
            state, nb = self._state, self._tail_blocks
            for j in range(nb):
                state = self._block(state ^ ((tail >> (128 * (nb - 1 - j))) & _MASK128))
            r = state.to_bytes(16, "big")
        if self._extra:
            r_int = int.from_bytes(r, "big")
            # ECB processes each block independently: one call computes CIPH(R xor [1]^16) || CIPH(R xor [2]^16) ...
            r += self._enc.update(b"".join((r_int ^ j).to_bytes(16, "big") for j in range(1, self._extra + 1)))
        return int.from_bytes(r[: self._d], "big")

    def encrypt_int(self, x: int) -> int:
        """Algorithm 7 on ``X = STR^n_radix(x)``; returns ``NUM_radix(Y)``. Requires ``0 <= x < radix**n``."""
        if not 0 <= x < self._domain:
            raise FF1Error("FF1 input is outside the domain")
        a, b = divmod(x, self._mod_v)  # step 2: A = X[1..u], B = X[u+1..n]
        mod_u, mod_v = self._mod_u, self._mod_v
        fast = self._fast
        if fast is not None:
            update, shift, from_bytes = self._enc.update, self._shift, int.from_bytes
            for i in range(_ROUNDS):
                y = from_bytes(update((fast[i] ^ b).to_bytes(16, "big")), "big") >> shift
                a, b = b, (a + y) % (mod_u if i % 2 == 0 else mod_v)
            return a * mod_v + b
        for i in range(_ROUNDS):
            c = (a + self._round_value(i, b)) % (mod_u if i % 2 == 0 else mod_v)  # steps 6.v and 6.vi
            a, b = b, c  # steps 6.viii and 6.ix
        return a * mod_v + b  # step 7: A || B (A has u numerals, B has v after an even number of rounds)

    def decrypt_int(self, y: int) -> int:
        """Algorithm 8 on ``Y = STR^n_radix(y)``; returns ``NUM_radix(X)``. Requires ``0 <= y < radix**n``."""
        if not 0 <= y < self._domain:
            raise FF1Error("FF1 input is outside the domain")
        a, b = divmod(y, self._mod_v)
        mod_u, mod_v = self._mod_u, self._mod_v
        fast = self._fast
        if fast is not None:
            update, shift, from_bytes = self._enc.update, self._shift, int.from_bytes
            for i in range(_ROUNDS - 1, -1, -1):
                z = from_bytes(update((fast[i] ^ a).to_bytes(16, "big")), "big") >> shift
                b, a = a, (b - z) % (mod_u if i % 2 == 0 else mod_v)
            return a * mod_v + b
        for i in range(_ROUNDS - 1, -1, -1):
            c = (b - self._round_value(i, a)) % (mod_u if i % 2 == 0 else mod_v)
            b, a = a, c
        return a * mod_v + b

    def close(self) -> None:
        """Release the AES context (the key schedule is dropped with it)."""
        self._enc.finalize()


def num_radix(numerals: Sequence[int], radix: int) -> int:
    """NUM_radix(X) of SP 800-38G §4.5: the number the numeral string represents, most significant first."""
    x = 0
    for d in numerals:
        if not isinstance(d, int) or not 0 <= d < radix:
            raise FF1Error(f"FF1 numerals must be integers from 0 to {radix - 1}")
        x = x * radix + d
    return x


def str_radix(x: int, radix: int, n: int) -> list[int]:
    """STR^m_radix(x) of SP 800-38G §4.5: the n-numeral representation of x, most significant first."""
    out = [0] * n
    for i in range(n - 1, -1, -1):
        x, out[i] = divmod(x, radix)
    return out


def _crypt_numerals(key: bytes, tweak: bytes, numerals: Sequence[int], radix: int, decrypt: bool) -> list[int]:
    _check_radix(radix)
    ff1 = PreparedFF1(key, tweak, radix, len(numerals))
    x = num_radix(numerals, radix)
    y = ff1.decrypt_int(x) if decrypt else ff1.encrypt_int(x)
    ff1.close()
    return str_radix(y, radix, len(numerals))


def encrypt_numerals(key: bytes, tweak: bytes, numerals: Sequence[int], radix: int) -> list[int]:
    """FF1.Encrypt(K, T, X) (SP 800-38G Algorithm 7) on a numeral string; returns a numeral list of equal length."""
    return _crypt_numerals(key, tweak, numerals, radix, decrypt=False)


def decrypt_numerals(key: bytes, tweak: bytes, numerals: Sequence[int], radix: int) -> list[int]:
    """FF1.Decrypt(K, T, Y) (SP 800-38G Algorithm 8) on a numeral string; returns a numeral list of equal length."""
    return _crypt_numerals(key, tweak, numerals, radix, decrypt=True)


class FF1:
    """FF1 over the characters of ``alphabet`` (numeral i is ``alphabet[i]``, SP 800-38G section 4.2 conventions).

    >>> ff1 = FF1(bytes(32), "0123456789")
    >>> token = ff1.encrypt("4111111111111111", b"tweak")
    >>> ff1.decrypt(token, b"tweak")
    '4111111111111111'
    """

    __slots__ = ("_key", "alphabet", "radix", "_index")

    def __init__(self, key: bytes, alphabet: str) -> None:
        _check_key(key)
        if not isinstance(alphabet, str) or len(set(alphabet)) != len(alphabet):
            raise FF1Error("FF1 alphabet must be a string of distinct characters")
        _check_radix(len(alphabet))
        self._key = bytes(key)
        self.alphabet = alphabet
        self.radix = len(alphabet)
        self._index = {ch: i for i, ch in enumerate(alphabet)}

    def _crypt(self, text: str, tweak: bytes, decrypt: bool) -> str:
        if not isinstance(text, str):
            raise FF1Error("FF1 input must be a string")
        index, radix = self._index, self.radix
        x = 0
        for pos, ch in enumerate(text):
            d = index.get(ch)
            if d is None:
                raise FF1Error(f"FF1 input character at position {pos} is not in the alphabet")
            x = x * radix + d
        ff1 = PreparedFF1(self._key, tweak, radix, len(text))
        y = ff1.decrypt_int(x) if decrypt else ff1.encrypt_int(x)
        ff1.close()
        alphabet = self.alphabet
        return "".join(alphabet[d] for d in str_radix(y, radix, len(text)))

    def encrypt(self, text: str, tweak: bytes = b"") -> str:
        """FF1.Encrypt (Algorithm 7) of ``text``; the result has the same length and alphabet."""
        return self._crypt(text, tweak, decrypt=False)

    def decrypt(self, text: str, tweak: bytes = b"") -> str:
        """FF1.Decrypt (Algorithm 8) of ``text``."""
        return self._crypt(text, tweak, decrypt=True)
