"""Plain value classes, for the modules on a function's cold path, where a dataclass was measured to cost too much.

Written by hand for a measured cold start reason (bench/bench_cold_start.py; docs/design/benchmarks.md "Cold
starts"): on python3.13 creating one dataclass costs 0.4 to 2 ms (it generates the source of its methods and
compiles it), and the proxy function's init created 38 of them, about a quarter of its init. Under a burst every
new container is a cold start (issue 29). A class written on these bases costs what any class costs (microseconds).

A subclass lists its fields, in constructor order, as ``__slots__``, writes its ``__init__`` by hand (keyword names
equal to the field names, so that :func:`replace` can rebuild it) and sets each field once with :func:`init`.
The bases give what the dataclass gave, and nothing else:

- :class:`Frozen`: a dataclass with ``frozen=True``: equal when of the same class with equal fields, hashed on its
  fields, its fields cannot be assigned or deleted after ``__init__`` (:class:`FrozenError`, an ``AttributeError``
  as dataclasses' ``FrozenInstanceError`` is);
- :class:`Mutable`: a plain ``@dataclass``: equal on its fields, not hashable;
- both: ``repr`` ``Name(field=value, ...)`` without the fields named in ``_no_repr`` (secrets, card data);
  ``_no_compare`` names fields equality ignores (caches).

A class that compares by identity (``eq=False``) needs no base: ``__slots__``, ``__init__`` and, when frozen,
:class:`FrozenIdentity`.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar

__all__ = ["Frozen", "FrozenError", "FrozenIdentity", "Mutable", "init", "replace"]

_T = TypeVar("_T")
_setattr = object.__setattr__


class FrozenError(AttributeError):
    """A field of a frozen value was assigned or deleted."""


def init(obj: object, **fields: Any) -> None:
    """Set the fields of a new (possibly frozen) object, in ``__init__``."""
    for name, value in fields.items():
        _setattr(obj, name, value)


class _Fields:
    __slots__: tuple[str, ...] = ()
    _no_repr: ClassVar[frozenset[str]] = frozenset()
    _no_compare: ClassVar[frozenset[str]] = frozenset()

    def _compared(self) -> tuple[Any, ...]:
        skip = self._no_compare
        return tuple(getattr(self, name) for name in self.__slots__ if name not in skip)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, _Fields)  # the same class: the line above
        return self._compared() == other._compared()

    def __repr__(self) -> str:
        hidden = self._no_repr
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__ if name not in hidden)
        return f"{type(self).__qualname__}({shown})"


class Frozen(_Fields):
    """A value whose fields are set once, in ``__init__`` (module docstring)."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(self._compared())

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenError(f"cannot delete field {name!r}")


class FrozenIdentity:
    """Fields set once, in ``__init__``; equal only to itself (a dataclass with ``frozen=True, eq=False``)."""

    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenError(f"cannot delete field {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({shown})"


class Mutable(_Fields):
    """A record whose fields may change after ``__init__`` (module docstring)."""

    __slots__ = ()
    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as a plain dataclass: unhashable


def replace(obj: _T, **changes: Any) -> _T:
    """A copy of ``obj`` with ``changes``, built through its ``__init__`` (``dataclasses.replace``)."""
    values = {name: getattr(obj, name) for name in obj.__slots__}  # type: ignore[attr-defined]  # a class above
    values.update(changes)
    return type(obj)(**values)
