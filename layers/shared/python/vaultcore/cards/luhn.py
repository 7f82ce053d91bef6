"""Luhn (mod 10) check digit of a primary account number, ISO/IEC 7812-1 Annex B.

Pure text functions: no I/O, no logging. Error messages never quote their input, since the input is a card
number.

>>> luhn_valid("4242424242424242")
True
>>> luhn_check_digit("424242424242424")
'2'
"""

from __future__ import annotations

__all__ = ["luhn_valid", "luhn_check_digit"]

# The digit contributed by a doubled digit d: 2*d, minus 9 when two digits long (0..9 -> 0,2,4,6,8,1,3,5,7,9).
_DOUBLED = (0, 2, 4, 6, 8, 1, 3, 5, 7, 9)


def _luhn_sum(digits: str, double_first: bool) -> int:
    """Sum of the Luhn contributions of ``digits`` read right to left.

    ``double_first`` says whether the rightmost digit of ``digits`` is doubled: it is when a check digit is
    still to be appended to the right, and is not when ``digits`` already ends with its check digit.
    """
    total = 0
    double = double_first
    for ch in reversed(digits):
        d = ord(ch) - 48
        total += _DOUBLED[d] if double else d
        double = not double
    return total


def _is_ascii_digits(text: str) -> bool:
    # str.isdigit() accepts other scripts' digits and superscripts; a PAN is ASCII 0-9 only.
    return text.isascii() and text.isdigit()


def luhn_valid(digits: str) -> bool:
    """Whether ``digits`` ends with a correct Luhn check digit.

    Needs at least two ASCII digits (one payload digit and the check digit); anything else, including
    spaces and dashes, is not valid. Never raises.
    """
    if not isinstance(digits, str) or len(digits) < 2 or not _is_ascii_digits(digits):
        return False
    return _luhn_sum(digits, double_first=False) % 10 == 0


def luhn_check_digit(partial: str) -> str:
    """The Luhn check digit to append to ``partial`` (a non-empty string of ASCII digits).

    Raises ``ValueError`` when ``partial`` is empty or holds anything but ASCII digits.
    """
    if not isinstance(partial, str) or not partial or not _is_ascii_digits(partial):
        raise ValueError("Luhn input must be a non-empty string of ASCII digits")
    return str((10 - _luhn_sum(partial, double_first=True) % 10) % 10)
