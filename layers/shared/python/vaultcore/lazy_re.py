"""Module-level regular expressions compiled on their first use, not while the module is imported.

Written by hand for a measured cold start reason (bench/bench_cold_start.py; docs/design/benchmarks.md "Cold
starts"): the proxy function's init imports modules holding about 55 module-level patterns, and compiling them
was about a tenth of its init (~10 ms of ~105 ms on python3.13), while its first request uses 19 of them. Under a
burst every new container is a cold start (issue 29), so a pattern a request does not use should cost it nothing.

``lazy(source, flags)`` stands where ``re.compile(source, flags)`` stood: the same source and flags, compiled by
:mod:`re` (the same engine, the same semantics) the first time one of the :class:`re.Pattern` methods below is
called, then kept for the life of the container (``re``'s own cache holds 512 patterns and is shared, so it is not
relied on). A pattern that does not compile fails on that first use instead of at import: every lazy pattern of
the layer is compiled by tests/unit/test_lazy_re.py, so a typo still fails CI.

No lock: two threads compiling the same source at once get equal patterns and one of them is kept.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import AnyStr, Generic

__all__ = ["LazyPattern", "lazy", "created"]

_created: list[LazyPattern[str] | LazyPattern[bytes]] = []


def created() -> tuple[LazyPattern[str] | LazyPattern[bytes], ...]:
    """Every lazy pattern made so far in this process (tests compile them all)."""
    return tuple(_created)


class LazyPattern(Generic[AnyStr]):
    """A :class:`re.Pattern` compiled on first use; the methods the layer calls, with the same signatures."""

    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, source: AnyStr, flags: int = 0) -> None:
        self._source: AnyStr = source
        self._flags = flags
        self._compiled: re.Pattern[AnyStr] | None = None

    @property
    def compiled(self) -> re.Pattern[AnyStr]:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source, self._flags)
        return compiled

    @property
    def pattern(self) -> AnyStr:
        return self._source

    @property
    def flags(self) -> int:
        return self.compiled.flags

    def match(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[AnyStr] | None:
        return self.compiled.match(string, pos, endpos)

    def fullmatch(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[AnyStr] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def search(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[AnyStr] | None:
        return self.compiled.search(string, pos, endpos)

    def finditer(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[AnyStr]]:
        return self.compiled.finditer(string, pos, endpos)

    def findall(self, string: AnyStr, pos: int = 0, endpos: int = sys.maxsize) -> list[AnyStr]:
        return self.compiled.findall(string, pos, endpos)

    def sub(self, repl: AnyStr | Callable[[re.Match[AnyStr]], AnyStr], string: AnyStr, count: int = 0) -> AnyStr:
        return self.compiled.sub(repl, string, count)

    def split(self, string: AnyStr, maxsplit: int = 0) -> list[AnyStr]:
        return self.compiled.split(string, maxsplit)

    def __repr__(self) -> str:
        return f"lazy({self._source!r}, {self._flags!r})"


def lazy(source: AnyStr, flags: int = 0) -> LazyPattern[AnyStr]:
    """``re.compile(source, flags)``, compiled on first use (module docstring)."""
    pattern = LazyPattern(source, flags)
    _created.append(pattern)  # type: ignore[arg-type]  # AnyStr is str or bytes: both are listed
    return pattern
