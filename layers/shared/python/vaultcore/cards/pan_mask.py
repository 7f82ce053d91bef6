"""The PAN display rule alone (PCI DSS 3.4, v4.0 3.4.1): at most the first six and the last four digits.

Below both :mod:`vaultcore.cards.tracks` (whose records show only a masked PAN in their ``repr``) and
:mod:`vaultcore.cards.masking` (every other masking function builds on it): tracks is the parser masking uses for
track data, so the rule they share lives a floor below both.
"""

from __future__ import annotations

__all__ = ["MASK_CHAR", "FULL_PAN_MIN", "keep_ends", "mask_pan"]

MASK_CHAR = "*"
# The shortest PAN in issue has 13 digits; below that a value is not a whole PAN and shows at most half.
FULL_PAN_MIN = 13


def _visible_counts(length: int, first: int, last: int) -> tuple[int, int]:
    """How many leading and trailing characters of a ``length``-character value may stay clear."""
    if length >= FULL_PAN_MIN:
        return first, last
    # Short value: at most half in clear, the trailing characters first (they identify a card to a person).
    budget = length // 2
    keep_last = min(last, budget)
    return min(first, budget - keep_last), keep_last


def keep_ends(value: str, first: int, last: int, *, separators: bool) -> str:
    """Mask all but the first ``first`` and last ``last`` characters.

    With ``separators`` true only letters and digits count and get masked (``4242 42** **** 4242``); with it
    false every character counts (the proxy patterns speak of characters).
    """
    if separators:
        # An already masked character still counts, so that masking twice gives the same result.
        positions = [i for i, ch in enumerate(value) if ch.isalnum() or ch == MASK_CHAR]
    else:
        positions = list(range(len(value)))
    keep_first, keep_last = _visible_counts(len(positions), first, last)
    masked = positions[keep_first : len(positions) - keep_last]
    if not masked:
        return value
    chars = list(value)
    for i in masked:
        chars[i] = MASK_CHAR
    return "".join(chars)


def mask_pan(pan: str) -> str:
    """``4242424242424242`` -> ``424242******4242`` (PCI DSS 3.4: first six and last four at most).

    Spaces and dashes between digit groups stay in place. Values shorter than 13 digits keep at most half
    their digits, the last ones first (``12345678`` -> ``****5678``).
    """
    if not pan:
        return pan
    return keep_ends(pan, 6, 4, separators=True)
