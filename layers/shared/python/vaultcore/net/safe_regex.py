"""Partner-supplied regular expressions with bounded running time (CWE-1333, OWASP ReDoS).

Proxy routes let partners configure regular expressions (field filters, replacement rules, log masks). The
stdlib ``re`` cannot be interrupted mid-search (STYLE.md pitfall 9): one slow pattern such as ``(a+)+$``, or a
merely quadratic one such as the common e-mail validator ``[\\w.]+@...`` on ``aaaa...a@``, would pin the Lambda
until its own timeout. Here:

* patterns are compiled with the third-party ``regex`` engine, whose every operation takes ``timeout=`` and
  stops mid-search when it expires; :class:`BoundedPattern` passes it on *every* call: the smaller of its own
  per-call limit (:data:`DEFAULT_TIMEOUT`) and what is left of the request's budget
  (:mod:`vaultcore.net.deadline`: one budget for all of a request's pattern work), and charges the time
  spent. An expiry is :class:`RegexTimeout`, or :class:`RegexBudgetExhausted` when the request's budget ran out;
* :func:`compile_bounded` refuses patterns that are too long or do not compile, and measures each new pattern
  on adversarial inputs of the largest body (1 MiB): runs of the characters its classes accept, with and
  without the terminator it expects (``aaa...a@``), repeated near-matches (``a.a.a.a.``, ``a@a.a.a.``). Every
  probe runs first at 8 KiB (a probe over its share of the budget there is refused at once); the two slowest
  are then run at full size, and a pattern that exceeds the per-call limit on one is refused at configuration
  time rather than failing requests later. The check of one pattern is bounded (about 0.5 s of screening plus
  two full-size probes of at most the per-call limit each), and all the patterns of one configuration share
  :data:`CONFIG_PROBE_BUDGET` (:func:`probing`);
* compiled patterns and verdicts (refusals included) are kept in LRU caches, so a pattern is compiled and probed
  once per warm Lambda. Stored configurations are compiled without the probes (:func:`probing` with
  ``enabled=False``): they were checked when saved, and the run-time budget is the guarantee.

The probes are a heuristic that catches the usual exponential and polynomial shapes; the per-call timeout and
the per-request budget are the guarantee.

:class:`BoundedPattern` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass
costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from vaultcore.lazy_re import lazy
from vaultcore.net import deadline
from vaultcore.plain import FrozenIdentity, init

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "DEFAULT_TIMEOUT",
    "DEFAULT_PROBE_LENGTH",
    "CONFIG_PROBE_BUDGET",
    "UnsafeRegex",
    "RegexTimeout",
    "RegexBudgetExhausted",
    "BoundedPattern",
    "compile_bounded",
    "probing",
]

#: Seconds one match/search/sub call may take (at run time also never more than the request's remaining budget);
#: also the limit of one full-size probe at configuration time.
DEFAULT_TIMEOUT = 0.5
#: Adversarial probes are as long as the largest body the proxy accepts.
DEFAULT_PROBE_LENGTH = 1_048_576
#: Seconds of probing shared by all the new patterns of one configuration (:func:`probing`).
CONFIG_PROBE_BUDGET = 5.0
_SCREEN_LENGTH = 8192
_SCREEN_SLACK = 8  # a screen probe may take 8x its linear share of the per-call limit
_SCREEN_FLOOR = 0.02
_SCREEN_BUDGET = 0.5  # all the screen probes of one pattern
_CONFIRMED = 2  # the slowest screen probes run again at full size
_META = "\\()[]{}|?*+^$"
_BASE_RUNS = "a1 _.-"
_MORE_RUNS = "x@=/:;,\t\nA"
_BASE_TERMINATORS = "@.:=\"-/ "
_MAX_PROBE_CHARS = 24
_MAX_TERMINATORS = 8


class UnsafeRegex(ValueError):
    """The pattern is refused: too long, invalid, or too slow on adversarial input."""


class RegexTimeout(UnsafeRegex):
    """A call exceeded its time limit at run time. The input is not echoed."""


class RegexBudgetExhausted(RegexTimeout, deadline.BudgetExhausted):
    """The request's budget for pattern work ran out during (or before) a call."""


class _CheckBudgetSpent(Exception):
    """The configuration's probing budget ran out: not the pattern's verdict, so never cached."""


_skip_probes: ContextVar[bool] = ContextVar("vault_regex_skip_probes", default=False)
_probe_budget: ContextVar[deadline.WorkBudget | None] = ContextVar("vault_regex_probe_budget", default=None)


@contextmanager
def probing(*, enabled: bool = True, budget_seconds: float = CONFIG_PROBE_BUDGET) -> Iterator[None]:
    """Within the block, :func:`compile_bounded` probes new patterns under one shared budget of
    ``budget_seconds`` (a configuration being saved), or, with ``enabled=False``, compiles without probing (a
    stored configuration being loaded)."""
    skip = _skip_probes.set(not enabled)
    shared = _probe_budget.set(deadline.WorkBudget(budget_seconds) if enabled else None)
    try:
        yield
    finally:
        _probe_budget.reset(shared)
        _skip_probes.reset(skip)


class BoundedPattern(FrozenIdentity):
    """A compiled pattern whose every operation carries a timeout: ``timeout`` (seconds), or less when the
    request's budget (:func:`vaultcore.net.deadline.current`) has less left.

    Methods mirror :mod:`re` for ``str`` input; each raises :class:`RegexTimeout` when the time is spent
    (:class:`RegexBudgetExhausted` when it was the request's budget).
    """

    __slots__ = ("pattern", "timeout", "_compiled")
    pattern: str
    timeout: float
    _compiled: Any

    def __init__(self, pattern: str, timeout: float, _compiled: Any) -> None:
        init(self, pattern=pattern, timeout=timeout, _compiled=_compiled)

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

        budget = deadline.current()
        timeout = self.timeout
        if budget is not None:
            left = budget.remaining()
            if left <= 0:
                raise RegexBudgetExhausted("The request's budget for pattern work is spent.")
            timeout = min(timeout, left)
        try:
            if budget is None:
                return method(*args, timeout=timeout)
            with budget.metered():
                return method(*args, timeout=timeout)
        except TimeoutError:
            if timeout < self.timeout:
                raise RegexBudgetExhausted("The request's budget for pattern work is spent.") from None
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
    probe_length: int = DEFAULT_PROBE_LENGTH,
    probe: bool | None = None,
) -> BoundedPattern:
    """Compile a partner pattern, or raise :class:`UnsafeRegex`.

    Refused: non-``str`` or longer than ``max_length``; not compiling; exceeding ``timeout`` on an adversarial
    probe of ``probe_length`` characters (``(a+)+$``, ``(\\w+\\s?)+$``, ``\\s+$``, unanchored e-mail validators).
    ``probe`` None follows :func:`probing` (probe unless a stored configuration is being loaded).
    Results, refusals included, are cached (LRU), so repeated configuration does not re-pay the probes.
    """
    if not isinstance(pattern, str):
        raise UnsafeRegex("Regular expression must be a string.")
    if len(pattern) > max_length:
        raise UnsafeRegex(f"Regular expression is longer than {max_length} characters.")
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    compiled = _compile(pattern, flags)
    if isinstance(compiled, str):
        raise UnsafeRegex(compiled)
    if probe if probe is not None else not _skip_probes.get():
        try:
            refusal = _verdict(pattern, flags, float(timeout), int(probe_length))
        except _CheckBudgetSpent:
            raise UnsafeRegex(f"Regular expression could not be checked in time: the configuration's regular "
                              f"expressions take more than {CONFIG_PROBE_BUDGET:g} s to check (use fewer or "
                              f"simpler ones).") from None
        if refusal is not None:
            raise UnsafeRegex(refusal)
    return _bounded(pattern, flags, float(timeout))


@lru_cache(maxsize=512)
def _compile(pattern: str, flags: int) -> Any:
    """The compiled pattern, or the refusal message (cached too)."""
    import regex

    try:
        return regex.compile(pattern, flags)
    except (regex.error, ValueError, TypeError, OverflowError, RecursionError):
        return "Regular expression does not compile."


@lru_cache(maxsize=256)
def _bounded(pattern: str, flags: int, timeout: float) -> BoundedPattern:
    return BoundedPattern(pattern=pattern, timeout=timeout, _compiled=_compile(pattern, flags))


# ---------------------------------------------------------------------------------------------------- probes


def _unique(chars: str, limit: int) -> list[str]:
    out: list[str] = []
    for ch in chars:
        if ch not in out:
            out.append(ch)
        if len(out) >= limit:
            break
    return out


# A group's opening that is syntax, not text: (?:  (?=  (?!  (?<=  (?<!  (?>  (?|  (?P<name>  (?<name>  (?i)  (?i:
_GROUP_SYNTAX = lazy(r"\(\?(?:P?<[A-Za-z_]\w*>|P=\w+\)|<[=!]|[=!:>|]|[A-Za-z0-9^-]*[:)])")
_QUANTIFIER = lazy(r"\{\d*,?\d*\}")
_CLASS_ESCAPES = {"d": "1", "w": "a", "s": " ", "D": "a", "W": "!", "S": "a", "h": " ", "N": "a"}


def _pattern_chars(pattern: str) -> tuple[str, str]:
    """The pattern's literal characters outside character classes (what it expects: ``@``, ``=``, ``.`` of
    ``\\.``) and the members named inside classes (what its runs accept), roughly: enough to build probes."""
    outside: list[str] = []
    inside: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        ch = pattern[i]
        where = inside if in_class else outside
        if ch == "\\" and i + 1 < n:
            escaped = pattern[i + 1]
            i += 2
            if escaped.isalnum():
                if escaped in _CLASS_ESCAPES:
                    inside.append(_CLASS_ESCAPES[escaped])
            elif escaped.isprintable():
                where.append(escaped)
            continue
        if in_class:
            if ch == "]":
                in_class = False
            elif ch.isprintable():
                inside.append(ch)
            i += 1
            continue
        if ch == "[":
            in_class, i = True, i + 1
            if pattern.startswith("^", i):
                i += 1
            if pattern.startswith("]", i):
                inside.append("]")
                i += 1
            continue
        syntax = (_GROUP_SYNTAX if ch == "(" else _QUANTIFIER if ch == "{" else None)
        m = syntax.match(pattern, i) if syntax is not None else None
        if m is not None:
            i = m.end()
            continue
        if ch.isprintable() and ch not in _META:
            outside.append(ch)
        i += 1
    return "".join(outside), "".join(inside)


def _probe_specs(pattern: str) -> list[tuple[str, str, str]]:
    """Adversarial inputs as ``(head, unit, tail)``: ``head + unit * k + tail``.

    Slow matching shows on a long run of something the pattern accepts followed by something that makes the
    overall match fail, tried again from every start position. Run characters come from a fixed set (classes:
    ``\\w``, ``\\d``, ``\\s``, ``.``, ``[a-z]``) and from the pattern's own classes and literals (``(x+x+)+y``);
    terminators are the punctuation the pattern expects, its literals first (``@`` of an e-mail, ``=`` of
    ``key=value``), so that the run is followed by what lets the match go on before it fails (``aaa...a@``);
    repeated near-matches cover quantified groups (``a.a.a.`` for a domain, after a head ``a@`` for an anchored
    validator).
    """
    outside, inside = _pattern_chars(pattern)
    runs = _unique(_BASE_RUNS + inside + outside + _MORE_RUNS, _MAX_PROBE_CHARS)
    punctuation = "".join(ch for ch in outside + inside if not ch.isalnum() and ch != " ")
    terminators = _unique(punctuation + _BASE_TERMINATORS, _MAX_TERMINATORS)
    specs: list[tuple[str, str, str]] = []
    for ch in runs:
        specs.extend(("", ch, tail) for tail in ("\x00", "!"))
    for ch in runs[:10]:
        specs.extend(("", ch, t + "\x00") for t in terminators if t != ch)
    for ch in ("a", "1"):
        specs.extend(("", ch + t, "\x00") for t in terminators)
    for t1 in terminators[:4]:
        specs.extend(("a" + t1, "a" + t2, "\x00") for t2 in terminators[:4] if t2 != t1)
    specs.extend((("", "a1", "\x00"), ("", "a ", "\x00")))
    return list(dict.fromkeys(specs))


def _render(spec: tuple[str, str, str], length: int) -> str:
    head, unit, tail = spec
    return head + unit * max(1, (length - len(head) - len(tail)) // len(unit)) + tail


def _timed_search(compiled: Any, text: str, timeout: float) -> float | None:
    """CPU seconds one search took on this thread, or None when it hit ``timeout`` (wall time, the engine's).
    Charges the configuration's probing budget.

    CPU time, not wall time, ranks the screen probes: on a loaded machine the wall time of a fast probe can
    exceed that of the adversarial one, which then was not among the probes confirmed at full size, and a
    polynomial pattern was accepted (seen beside a CPU burner, issue 26). The ``regex`` engine holds the GIL
    during a search, so this thread's CPU time is the search's own work."""
    shared = _probe_budget.get()
    limit = timeout
    if shared is not None:
        left = shared.remaining()
        if left <= 0:
            raise _CheckBudgetSpent
        limit = min(timeout, left)
    started = time.thread_time()
    try:
        if shared is None:
            compiled.search(text, timeout=limit)
        else:
            with shared.metered():
                compiled.search(text, timeout=limit)
    except TimeoutError:
        if limit < timeout:
            raise _CheckBudgetSpent from None
        return None
    return time.thread_time() - started


def _size(length: int) -> str:
    if length >= 1 << 20 and length % (1 << 20) == 0:
        return f"{length >> 20} MiB"
    if length >= 1024 and length % 1024 == 0:
        return f"{length >> 10} KiB"
    return f"{length} characters"


@lru_cache(maxsize=256)
def _verdict(pattern: str, flags: int, timeout: float, probe_length: int) -> str | None:
    """None when the pattern is fast enough on every probe, else the refusal message (cached either way;
    :class:`_CheckBudgetSpent` is raised, so not cached)."""
    compiled = _compile(pattern, flags)
    too_slow = (f"Regular expression is too slow on adversarial input ({_size(probe_length)}): catastrophic or "
                f"polynomial backtracking.")
    screen_length = min(_SCREEN_LENGTH, probe_length)
    screen_timeout = min(timeout, max(_SCREEN_FLOOR, timeout * _SCREEN_SLACK * screen_length / probe_length))
    compiled.search("warm-up", timeout=timeout)  # the engine's first call pays a one-off cost
    started = time.monotonic()
    measured: list[tuple[float, int, tuple[str, str, str]]] = []
    for n, spec in enumerate(_probe_specs(pattern)):
        text = _render(spec, screen_length)
        took = _timed_search(compiled, text, screen_timeout)
        if took is None:  # once more, in case the machine was busy; then refused
            took = _timed_search(compiled, text, screen_timeout)
            if took is None:
                return too_slow
        measured.append((took, -n, spec))
        if time.monotonic() - started > _SCREEN_BUDGET:
            return too_slow
    if probe_length > screen_length:
        measured.sort(reverse=True)
        scale = probe_length / screen_length
        for took, _n, spec in measured[:_CONFIRMED]:
            text = _render(spec, probe_length)
            if _timed_search(compiled, text, timeout) is None:
                # Linear growth from the screen would have finished well in time: a busy machine, probably;
                # once more. Otherwise (super-linear growth) refused.
                if took * scale * 2 >= timeout or _timed_search(compiled, text, timeout) is None:
                    return too_slow
    return None
