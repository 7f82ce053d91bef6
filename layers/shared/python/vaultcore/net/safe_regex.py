"""Partner-supplied regular expressions with bounded running time (CWE-1333, OWASP ReDoS).

Proxy routes let partners configure regular expressions (field filters, replacement rules). The stdlib
``re`` has no timeout (STYLE.md pitfall 9), so one catastrophic pattern such as ``(a+)+$`` against a
5 KB body would pin the Lambda until its own timeout. Here:

* patterns are compiled with the third-party ``regex`` engine, which supports ``timeout=`` on every
  operation; :class:`BoundedPattern` passes it on *every* call and turns an expiry into :class:`RegexTimeout`;
* :func:`compile_bounded` refuses patterns that are too long or do not compile, and probes each new pattern
  against adversarial inputs (long runs of one character with a non-matching tail, built from the pattern's
  own characters); a pattern that exceeds its time budget on a probe is refused at configuration time
  rather than failing requests later;
* compiled patterns (and refusals) are kept in an LRU cache, so a route's patterns are compiled and probed
  once per warm Lambda.

The probe is a heuristic that catches the usual exponential shapes; the per-call timeout is the guarantee.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DEFAULT_TIMEOUT",
    "UnsafeRegex",
    "RegexTimeout",
    "BoundedPattern",
    "compile_bounded",
]

#: Seconds one match/sub/split call may take.
DEFAULT_TIMEOUT = 0.05
_DEFAULT_PROBE_LENGTH = 5000
_PROBE_TAILS = ("\x00", "!")
_BASE_PROBE_CHARS = "a1 x-.,_@=/:;\t\n"
_MAX_PROBE_CHARS = 24
_PROBE_BUDGETS = 10
_TOO_SLOW = "Regular expression is too slow on adversarial input (catastrophic backtracking)."


class UnsafeRegex(ValueError):
    """The pattern is refused: too long, invalid, or too slow on adversarial input."""


class RegexTimeout(UnsafeRegex):
    """A match exceeded its time budget at run time. The input is not echoed."""


@dataclass(frozen=True, eq=False)
class BoundedPattern:
    """A compiled pattern whose every operation carries ``timeout`` (seconds).

    Methods mirror :mod:`re` for ``str`` input; each raises :class:`RegexTimeout` when the budget is spent.
    """

    pattern: str
    timeout: float
    _compiled: Any

    @property
    def groups(self) -> int:
        return int(self._compiled.groups)

    @property
    def groupindex(self) -> dict[str, int]:
        return dict(self._compiled.groupindex)

    def search(self, string: str, pos: int = 0, endpos: int | None = None) -> Any:
        return self._call(self._compiled.search, string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int | None = None) -> Any:
        return self._call(self._compiled.match, string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int | None = None) -> Any:
        return self._call(self._compiled.fullmatch, string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int | None = None) -> list[Any]:
        return list(self._call(self._compiled.findall, string, pos, endpos))

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        return list(self._call(self._compiled.split, string, maxsplit))

    def sub(self, repl: str | Callable[[Any], str], string: str, count: int = 0) -> str:
        return str(self._call(self._compiled.sub, repl, string, count))

    def subn(self, repl: str | Callable[[Any], str], string: str, count: int = 0) -> tuple[str, int]:
        return tuple(self._call(self._compiled.subn, repl, string, count))  # type: ignore[return-value]

    def _call(self, method: Any, *args: Any) -> Any:
        import regex

        try:
            return method(*args, timeout=self.timeout)
        except TimeoutError:
            raise RegexTimeout("Regular expression took too long.") from None
        except (regex.error, IndexError) as exc:
            # A bad group reference in a replacement template, for instance.
            raise UnsafeRegex("Regular expression replacement is invalid.") from exc


def compile_bounded(
    pattern: str,
    *,
    max_length: int = 512,
    timeout: float = DEFAULT_TIMEOUT,
    flags: int = 0,
    probe_length: int = _DEFAULT_PROBE_LENGTH,
) -> BoundedPattern:
    """Compile a partner pattern, or raise :class:`UnsafeRegex`.

    Refused: non-``str`` or longer than ``max_length``; not compiling; exceeding ``timeout`` on any probe of
    ``probe_length`` characters (catastrophic backtracking, e.g. ``(a+)+$``, ``(\\w+\\s?)+$``).
    Results, refusals included, are cached (LRU), so repeated configuration does not re-pay the probes.
    """
    if not isinstance(pattern, str):
        raise UnsafeRegex("Regular expression must be a string.")
    if len(pattern) > max_length:
        raise UnsafeRegex(f"Regular expression is longer than {max_length} characters.")
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    result = _compile_cached(pattern, flags, float(timeout), probe_length)
    if isinstance(result, str):
        raise UnsafeRegex(result)
    return result


def _probes(pattern: str, length: int) -> list[str]:
    # Exponential backtracking shows on a long run of something the pattern accepts followed by one character
    # that makes the overall match fail. Taking the run characters from the pattern itself covers literals
    # (``(x+x+)+y``); the fixed set covers classes (\w, \d, \s, ., [a-z]).
    chars: list[str] = []
    for ch in _BASE_PROBE_CHARS + pattern:
        if ch.isprintable() and ch not in chars and ch not in "\\()[]{}|?*+^$":
            chars.append(ch)
        if len(chars) >= _MAX_PROBE_CHARS:
            break
    probes = [ch * length + tail for ch in chars for tail in _PROBE_TAILS]
    probes.append(("a1" * (length // 2)) + "\x00")
    probes.append(("a " * (length // 2)) + "\x00")
    return probes


@lru_cache(maxsize=256)
def _compile_cached(pattern: str, flags: int, timeout: float, probe_length: int) -> BoundedPattern | str:
    """Compile and probe; a refusal is returned as its message so that it is cached too."""
    import regex

    try:
        compiled = regex.compile(pattern, flags)
    except (regex.error, ValueError, TypeError, OverflowError, RecursionError):
        return "Regular expression does not compile."
    # Each probe has the run-time budget; the probes together get a few budgets, so that compiling a
    # borderline (polynomial) pattern cannot itself take seconds.
    started = time.monotonic()
    total_budget = _PROBE_BUDGETS * timeout
    for probe in _probes(pattern, probe_length):
        try:
            compiled.search(probe, timeout=timeout)
        except TimeoutError:
            return _TOO_SLOW
        if time.monotonic() - started > total_budget:
            return _TOO_SLOW
    return BoundedPattern(pattern=pattern, timeout=timeout, _compiled=compiled)
