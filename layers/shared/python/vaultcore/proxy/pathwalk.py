"""Evaluating the proxy's jsonpath and xpath subsets with bounded work (issue 12, "Bounded work per request").

The subsets of :mod:`vaultcore.proxy.transform` keep each *step* linear, but two descendant steps over a 1 MiB
body are not: jsonpath-ng's ``$..a..b`` walks the subtree of every ``a`` again (13 s on a body of 28-deep
nested ``a`` objects; ``$..*..*`` 40 s), and libxml2's ``//*//*`` over 250-deep nested elements ran for more
than ten minutes (its node-set merging is quadratic). Neither can be interrupted from Python. Here:

* **jsonpath**: the expression jsonpath-ng parsed (root, child, descendants, fields, index, slice, wildcard) is
  evaluated by a generator over ``(container, key, value)`` triples: the same matches in the same order as
  jsonpath-ng (``tests/unit/test_proxy_pathwalk.py`` compares them), without building a ``DatumInContext`` per
  node (about 10x faster), lazily (a caller that stops at 1,000 matches stops the walk), and with the request's
  budget (:mod:`vaultcore.net.deadline`) checked every 512 nodes visited;
* **xpath** (:class:`BoundedXPath`): a path with at most one ``//`` step runs as one lxml call (linear). A path
  with two is split before its second ``//`` step: the head runs as one call, and the tail runs from each node
  the head found, in document order, with the budget checked between them. A head node inside a subtree
  already searched is skipped (the tail's steps read only a node and its children, so a nested start finds a
  subset of what its ancestor found): the searched subtrees are disjoint, so the tail's work is linear (the
  nesting check walks a start node's ancestors: at most the depth, 256 in libxml2), and the matches come out
  in document order without duplicates, as from the single expression (the test compares them too).

:class:`vaultcore.net.deadline.BudgetExhausted` is raised when the budget runs out (the proxy answers 8109).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from vaultcore.net import deadline

__all__ = ["CHECK_EVERY", "find_json", "BoundedXPath"]

#: Nodes visited between two budget checks.
CHECK_EVERY = 512

_Triple = tuple[Any, Any, Any]  # (container, key, value); the root is (None, None, document)
_MISSING = object()


class _Meter:
    __slots__ = ("budget", "count")

    def __init__(self, budget: deadline.WorkBudget | None) -> None:
        self.budget, self.count = budget, 0

    def tick(self, n: int = 1) -> None:
        self.count += n
        if self.count >= CHECK_EVERY:
            self.count = 0
            if self.budget is not None:
                self.budget.check()


def find_json(expr: Any, document: Any) -> Iterator[tuple[Any, Any]]:
    """``(container, key)`` of every match of ``expr`` in ``document`` that is a member of an object or an
    element of an array (what a substitution can rewrite), in jsonpath-ng's order, duplicates included.

    Lazy; raises :class:`vaultcore.net.deadline.BudgetExhausted` when the active budget runs out.
    """
    from jsonpath_ng import jsonpath as jp  # imported on first use (cold start), like transform's compiler

    walker = _Walker(jp, _Meter(deadline.current()), (None, None, document))
    for container, key, _value in walker.find(expr, walker.root):
        if container is not None:
            yield container, key


def _children(value: Any) -> Iterator[_Triple]:
    if isinstance(value, list | tuple):
        for i, child in enumerate(value):
            yield value, i, child
    elif isinstance(value, dict):
        for k, child in value.items():
            yield value, k, child


class _Walker:
    """jsonpath-ng's ``find`` semantics, node by node (jsonpath_ng/jsonpath.py), over plain triples."""

    __slots__ = ("jp", "meter", "root")

    def __init__(self, jp: Any, meter: _Meter, root: _Triple) -> None:
        self.jp, self.meter, self.root = jp, meter, root

    def find(self, node: Any, datum: _Triple) -> Iterator[_Triple]:
        jp, meter, value = self.jp, self.meter, datum[2]
        if isinstance(node, jp.Child):
            for sub in self.find(node.left, datum):
                yield from self.find(node.right, sub)
        elif isinstance(node, jp.Descendants):
            for start in self.find(node.left, datum):
                yield from self._descendants(node.right, start)
        elif isinstance(node, jp.Root):
            yield self.root
        elif isinstance(node, jp.Fields):
            if getattr(node, "_deprecated_wildcard_use", False):  # a hand-built Fields('*'); the parser makes none
                if isinstance(value, list | tuple):
                    yield from _children(value)
                    return
                names: tuple[Any, ...] = tuple(value.keys()) if isinstance(value, dict) else ()
            else:
                names = node.fields
            if isinstance(value, dict):
                for name in names:
                    child = value.get(name, _MISSING)
                    if child is not _MISSING:
                        meter.tick()
                        yield value, name, child
        elif isinstance(node, jp.Wildcard):
            for triple in _children(value):
                meter.tick()
                yield triple
        elif isinstance(node, jp.Index):
            if isinstance(value, list | tuple) and value:
                for index in node.indices:
                    if -len(value) <= index < len(value):
                        yield value, index, value[index]
        elif isinstance(node, jp.Slice):
            if getattr(node, "_deprecated_wildcard_use", False) and isinstance(value, dict):
                for triple in _children(value):
                    meter.tick()
                    yield triple
            elif isinstance(value, list | tuple) and node.step != 0:
                for i in range(len(value))[node.start:node.end:node.step]:
                    meter.tick()
                    yield value, i, value[i]
        else:  # _compile_jsonpath admits no other node
            raise TypeError(f"unsupported jsonpath node {type(node).__name__}")

    def _descendants(self, right: Any, start: _Triple) -> Iterator[_Triple]:
        """``start`` and everything below it, pre-order, children in their natural order (jsonpath-ng's walk),
        with ``right`` applied to each. A plain name (``$..number``, the usual case) is looked up inline, and
        scalars, which have neither members nor children, are then not visited at all."""
        jp, meter = self.jp, self.meter
        plain = isinstance(right, jp.Fields) and not getattr(right, "_deprecated_wildcard_use", False)
        names = right.fields if plain else ()
        stack = [start]
        while stack:
            current = stack.pop()
            meter.tick()
            value = current[2]
            if not plain:
                yield from self.find(right, current)
            elif isinstance(value, dict):
                for name in names:
                    child = value.get(name, _MISSING)
                    if child is not _MISSING:
                        yield value, name, child
            items: list[_Triple]
            if isinstance(value, dict):
                items = [(value, k, v) for k, v in value.items() if not plain or isinstance(v, dict | list)]
            elif isinstance(value, list | tuple):
                items = [(value, i, v) for i, v in enumerate(value) if not plain or isinstance(v, dict | list)]
            else:
                continue
            items.reverse()
            stack.extend(items)


class BoundedXPath:
    """A location path of the proxy's xpath subset, evaluated with bounded work (module docstring).

    ``text`` is the absolute path; ``split`` the offset of its second ``//`` step (None with fewer than two).
    Called like an ``etree.XPath`` on a document; returns the node-set as a list, in document order.
    """

    __slots__ = ("path", "_whole", "_head", "_tail")

    def __init__(self, text: str, split: int | None) -> None:
        from lxml import etree

        self.path = text
        self._whole = etree.XPath(text) if split is None else None
        self._head = etree.XPath(text[:split]) if split is not None else None
        self._tail = etree.XPath("." + text[split:]) if split is not None else None

    def __call__(self, tree: Any) -> list[Any]:
        budget = deadline.current()
        if budget is not None:
            budget.check()
        if self._whole is not None:
            return list(self._whole(tree))
        assert self._head is not None and self._tail is not None
        out: list[Any] = []
        searched: Any = None  # the last start node whose subtree was searched
        for n, start in enumerate(self._head(tree)):
            if budget is not None and n % 64 == 0:
                budget.check()
            if searched is not None and _inside(start, searched):
                continue
            searched = start
            out.extend(self._tail(start))
        return out

    def __repr__(self) -> str:
        return f"BoundedXPath({self.path!r})"


def _inside(node: Any, ancestor: Any) -> bool:
    return any(a is ancestor for a in node.iterancestors())
