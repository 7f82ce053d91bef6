"""Partner regular expressions with bounded running time (CWE-1333)."""

from __future__ import annotations

import time

import pytest

from vaultcore.net.safe_regex import BoundedPattern, RegexTimeout, UnsafeRegex, compile_bounded


@pytest.mark.parametrize(
    "pattern", [r"(a+)+$", r"(x+x+)+y", r"^(\d+)+$", r"(\w+\s?)+$", r"(a|aa)+$", r"^(a|a?)+$", r".*a.*b"]
)
def test_catastrophic_patterns_are_refused_at_compile_time(pattern):
    # Bounds here are this thread's CPU time (time.thread_time): other processes on a loaded machine do not
    # inflate it, while a runaway search or parse would still exceed it.
    # Given a pattern with catastrophic backtracking
    started = time.thread_time()
    # When a partner configures it
    with pytest.raises(UnsafeRegex, match="too slow"):
        compile_bounded(pattern)
    # Then the refusal itself is bounded too
    assert time.thread_time() - started < 2


def test_refusals_are_cached():
    # The verdict is cached (LRU): the second refusal runs no probe. Counted, not timed (issue 26).
    from vaultcore.net import safe_regex

    with pytest.raises(UnsafeRegex):
        compile_bounded(r"(b+)+$")
    before = safe_regex._verdict.cache_info()
    with pytest.raises(UnsafeRegex):
        compile_bounded(r"(b+)+$")
    after = safe_regex._verdict.cache_info()
    assert (after.hits, after.misses) == (before.hits + 1, before.misses)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        (r"\b\d{13,19}\b", "card 4111111111111111 ok", "4111111111111111"),
        (r'"number":\s*"(\d+)"', '{"number": "4111111111111111"}', '"number": "4111111111111111"'),
        (r"(?<=cvv=)\d{3,4}", "a=1&cvv=123", "123"),
        (r"^[0-9]{13,19}$", "4111111111111111", "4111111111111111"),
        (r".*card.*", "the card here", "the card here"),
    ],
)
def test_normal_patterns_work(pattern, text, expected):
    compiled = compile_bounded(pattern)
    assert isinstance(compiled, BoundedPattern)
    assert compiled.search(text).group(0) == expected


def test_sub_split_findall_and_groups():
    compiled = compile_bounded(r"(?P<bin>\d{6})\d{6}(?P<last>\d{4})")
    assert compiled.groups == 2
    assert compiled.groupindex == {"bin": 1, "last": 2}
    assert compiled.sub(r"\g<bin>******\g<last>", "pan=4111111111111111") == "pan=411111******1111"
    assert compiled.subn("X", "4111111111111111 5555555555554444") == ("X X", 2)
    assert compile_bounded(r",").split("a,b,c") == ["a", "b", "c"]
    assert compile_bounded(r"\d+").findall("a1b22") == ["1", "22"]
    assert compile_bounded(r"\d+").fullmatch("123")
    assert compile_bounded(r"\d+").match("x1") is None


def test_compiled_patterns_are_cached():
    assert compile_bounded(r"\d{4}") is compile_bounded(r"\d{4}")


def test_too_long_and_invalid_patterns_are_refused():
    with pytest.raises(UnsafeRegex, match="longer than 512"):
        compile_bounded("a" * 513)
    with pytest.raises(UnsafeRegex, match="longer than 8"):
        compile_bounded("abcdefghi", max_length=8)
    with pytest.raises(UnsafeRegex, match="does not compile"):
        compile_bounded("(unclosed")
    with pytest.raises(UnsafeRegex, match="string"):
        compile_bounded(b"bytes")  # type: ignore[arg-type]


def test_bad_replacement_template_is_refused():
    with pytest.raises(UnsafeRegex, match="replacement"):
        compile_bounded(r"(\d)").sub(r"\9", "1")


@pytest.mark.parametrize(
    "call",
    [
        lambda p, s: p.search(s),
        lambda p, s: p.match(s),
        lambda p, s: p.fullmatch(s),
        lambda p, s: p.findall(s),
        lambda p, s: p.split(s),
        lambda p, s: p.sub("x", s),
        lambda p, s: p.subn("x", s),
    ],
    ids=["search", "match", "fullmatch", "findall", "split", "sub", "subn"],
)
def test_timeout_is_enforced_on_every_call(call):
    # Given a catastrophic pattern that slipped past a (deliberately useless) one-character probe
    compiled = compile_bounded(r"(c+)+$", timeout=0.02, probe_length=1)
    started = time.thread_time()
    # When any operation runs on hostile input, then it is cut at the budget
    with pytest.raises(RegexTimeout):
        call(compiled, "c" * 5000 + "!")
    assert time.thread_time() - started < 0.5


def test_runtime_timeout_raises_regex_timeout():
    # A pattern accepted with a generous budget and a tiny probe still times out at run time on a real attack.
    compiled = compile_bounded(r"(a+)+$", timeout=0.01, probe_length=1)
    started = time.thread_time()
    with pytest.raises(RegexTimeout, match="too long"):
        compiled.search("a" * 5000 + "!")
    assert time.thread_time() - started < 0.5
    assert issubclass(RegexTimeout, ValueError)


# ------------------------------------------------------------------------------------------------ save-time probes (issue 12)

CLASSIC_EMAIL = (r"([a-zA-Z0-9_\-\.]+)@((\[[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.)|(([a-zA-Z0-9\-]+\.)+))"
                 r"([a-zA-Z]{2,4}|[0-9]{1,3})(\]?)")


@pytest.mark.parametrize(
    "pattern",
    [
        CLASSIC_EMAIL,  # issue 12: quadratic on "aaa...a@" (a run of local-part characters, '@', no domain)
        r"[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}",  # the same, unanchored
        r"\w+@\w+\.\w+",
        r"^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}$",  # anchored: quadratic on "a@a.a.a.a..." instead
        r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b",
        r"\w+=\w+",  # "aaa...a=" with nothing after
        r"\s+$",  # the classic trim: "   ...   x"
    ],
)
def test_polynomial_patterns_are_refused_on_1_mib_probes(pattern):
    # Bounded in this thread's CPU time, which other processes on a loaded machine do not inflate (the engine's
    # timeouts are wall time, so a search stopped by one uses at most that much CPU): about 0.5 s when idle.
    started = time.thread_time()
    with pytest.raises(UnsafeRegex, match=r"too slow on adversarial input \(1 MiB\)"):
        compile_bounded(pattern)
    assert time.thread_time() - started < 3


def test_probes_follow_the_patterns_own_literals_and_classes():
    from vaultcore.net.safe_regex import _pattern_chars, _probe_specs

    outside, inside = _pattern_chars(r"^(?P<user>[a-z0-9._%+-]+)@[a-z0-9.-]+\.[a-z]{2,}$")
    assert outside == "@." and "%" in inside and "user" not in outside + inside
    specs = _probe_specs(r"^[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}$")
    assert ("", "a", "@\x00") in specs and ("a@", "a.", "\x00") in specs


def test_stored_patterns_are_compiled_without_probes():
    from vaultcore.net.safe_regex import probing

    with probing(enabled=False):
        compiled = compile_bounded(CLASSIC_EMAIL)
    assert compiled.search("jane x@y.co").group(1) == "x"
    assert compile_bounded(CLASSIC_EMAIL, probe=False) is compiled


def test_one_configurations_probes_share_a_budget_and_running_out_is_not_cached():
    from vaultcore.net.safe_regex import probing

    pattern = r"(?P<pan>\d{15,16})x"
    with probing(budget_seconds=0.000001), pytest.raises(UnsafeRegex, match="could not be checked in time"):
        compile_bounded(pattern)
    assert compile_bounded(pattern).search("1234567890123456x")  # checked in full once there is time
