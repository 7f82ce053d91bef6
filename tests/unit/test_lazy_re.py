"""vaultcore.lazy_re: module-level patterns compiled on first use (cold start, issue 29) behave as re.compile's, and
every one of them in the layer compiles, so a broken pattern still fails CI rather than a first request."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from vaultcore import lazy_re
from vaultcore.lazy_re import LazyPattern, lazy

LAYER = Path(__file__).resolve().parents[2] / "layers" / "shared" / "python"


def _modules_using_lazy() -> list[str]:
    found = []
    for path in sorted((LAYER / "vaultcore").rglob("*.py")):
        if "from vaultcore.lazy_re import" in path.read_text():
            found.append(".".join(path.relative_to(LAYER).with_suffix("").parts))
    return found


def test_every_lazy_pattern_of_the_layer_compiles() -> None:
    modules = _modules_using_lazy()
    assert "vaultcore.cards.masking" in modules and "vaultcore.net.ssrf" in modules
    for name in modules:
        importlib.import_module(name)
    patterns = lazy_re.created()
    assert len(patterns) >= 45  # those of the proxy's init path alone: 49 when this test was written
    for pattern in patterns:
        assert isinstance(pattern.compiled, re.Pattern), pattern


def test_not_compiled_until_used() -> None:
    pattern = lazy(r"(?P<digits>[0-9]+)", re.ASCII)
    assert pattern._compiled is None
    assert pattern.pattern == r"(?P<digits>[0-9]+)"
    assert pattern.search("ab12")["digits"] == "12"  # type: ignore[index]  # a match: asserted by the value
    assert pattern._compiled is not None and pattern.flags == re.compile(r"x", re.ASCII).flags


@pytest.mark.parametrize("source, flags, text", [
    (r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,}", 0, "card 4242 4242 4242 4242, again 4242424242424242."),
    (r"\b(?P<k>api[_-]?key)\s*[:=]\s*(?P<v>\w+)", re.IGNORECASE, "API_KEY=abc; api-key: def"),
    (r"^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$", 0, "example-host"),
])
def test_methods_answer_as_re_compile(source: str, flags: int, text: str) -> None:
    ours: LazyPattern[str] = lazy(source, flags)
    theirs = re.compile(source, flags)

    def groups(m: re.Match[str] | None) -> tuple[object, ...] | None:
        return None if m is None else (m.span(), m.groups())

    for pos in (0, 3, len(text)):
        assert groups(ours.match(text, pos)) == groups(theirs.match(text, pos))
        assert groups(ours.search(text, pos)) == groups(theirs.search(text, pos))
        assert groups(ours.fullmatch(text, pos)) == groups(theirs.fullmatch(text, pos))
        assert [m.span() for m in ours.finditer(text, pos)] == [m.span() for m in theirs.finditer(text, pos)]
    assert ours.findall(text) == theirs.findall(text)
    assert ours.sub("#", text) == theirs.sub("#", text)
    assert ours.sub(lambda m: m.group(0).upper(), text, 1) == theirs.sub(lambda m: m.group(0).upper(), text, 1)
    assert ours.split(text) == theirs.split(text)


def test_bytes_patterns() -> None:
    ours = lazy(rb"<!DOCTYPE", re.IGNORECASE)
    assert ours.search(b"<?xml?><!doctype x>") is not None
    assert ours.search(b"<x/>") is None


def test_a_broken_pattern_fails_on_first_use() -> None:
    pattern = lazy(r"(unclosed")
    with pytest.raises(re.error):
        pattern.match("x")
