"""Token alphabets: the characters a template field encrypts, in numeral order.

A character's numeral is its index in the alphabet (NIST SP 800-38G section 4.2: a numeral string over
radix ``len(alphabet)``). Changing the order of an existing alphabet would change every token: the orders
below are fixed for good.

* ``CARD10``: ``0-9`` (radix 10): numeric values stay numeric.
* ``CARD62``: ``0-9``, ``A-Z``, ``a-z`` (radix 62): letters and digits; every other character of a value
  (``@``, ``.``, ``-``, spaces, accented letters) passes through unchanged where the field type allows it.

:class:`Alphabet` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass costs
0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import string

from vaultcore.plain import Frozen, init

__all__ = ["Alphabet", "ALPHABETS", "CARD10", "CARD62", "get_alphabet"]


class Alphabet(Frozen):
    """A named alphabet; ``index`` maps each character to its numeral."""

    __slots__ = ("name", "chars", "index")
    _no_repr = _no_compare = frozenset({"index"})
    name: str
    chars: str
    index: dict[str, int]

    def __init__(self, name: str, chars: str) -> None:
        init(self, name=name, chars=chars)
        self.__post_init__()

    def __post_init__(self) -> None:
        if len(set(self.chars)) != len(self.chars) or not 2 <= len(self.chars) <= 62:
            raise ValueError(f"alphabet {self.name} must have 2 to 62 distinct characters")
        object.__setattr__(self, "index", {ch: i for i, ch in enumerate(self.chars)})

    @property
    def radix(self) -> int:
        return len(self.chars)

    def __contains__(self, ch: object) -> bool:
        return ch in self.index


CARD10 = Alphabet("CARD10", string.digits)
CARD62 = Alphabet("CARD62", string.digits + string.ascii_uppercase + string.ascii_lowercase)

ALPHABETS: dict[str, Alphabet] = {a.name: a for a in (CARD10, CARD62)}


def get_alphabet(name: str) -> Alphabet:
    """The alphabet called ``name``; ``KeyError`` when there is none (templates validate names first)."""
    return ALPHABETS[name]
