"""One budget for all of a request's partner-supplied pattern work (issue 12, "Bounded work per request")."""

from __future__ import annotations

import json
import time

import pytest

from tests.helpers import SteppingClock
from vaultcore.net import deadline
from vaultcore.net.safe_regex import RegexBudgetExhausted, RegexTimeout, compile_bounded
from vaultcore.proxy import errors as E
from vaultcore.proxy import logs as proxy_logs
from vaultcore.proxy.config import MaskSpec
from vaultcore.proxy.transform import PATTERN_BUDGET, Body, Headers, Message, compile_path, locate, mask_message

EMAIL = (r"([a-zA-Z0-9_\-\.]+)@((\[[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.)|(([a-zA-Z0-9\-]+\.)+))([a-zA-Z]{2,4}|"
         r"[0-9]{1,3})(\]?)")


def _near_misses(size: int = 231_000) -> str:
    """Runs ending in '@' with no domain, each followed by an address: every search costs tens of ms."""
    segment = "a" * 2500 + "@! x@y.co "
    return (segment * (size // len(segment) + 1))[:size]


def _unprobed(path: str, type_: str = "regex"):
    """A path compiled as a stored configuration is (no save-time probes: those would refuse EMAIL)."""
    from vaultcore.net.safe_regex import probing

    with probing(enabled=False):
        return compile_path("body", type_, path)


def _message(body: str, content_type: str = "text/plain", headers=None, query=None) -> Message:
    raw = body.encode()
    kind = "none" if not raw else ("json" if "json" in content_type else "text")
    return Message(headers=Headers({"content-type": content_type, **(headers or {})}), query=list(query or []),
                   body=Body(raw, kind))


def _engine_that_runs(clock: SteppingClock, seen: list[float], *, seconds: float | None = None):
    """A stand-in for one call of the ``regex`` engine: records the timeout it was given and takes ``seconds``
    of the test clock (or, with None, all of its timeout, which it then reports as the engine does)."""

    def engine(*_args, timeout: float):
        seen.append(timeout)
        if seconds is not None and seconds < timeout:
            clock.advance(seconds)
            return None
        clock.advance(timeout * 1.001)  # the engine notices a little after its limit, as the real one does
        raise TimeoutError("regex timed out")

    return engine


# ------------------------------------------------------------------------------------------------ the budget


def test_only_metered_time_is_charged_and_nesting_counts_once(budget_clock):
    clock = budget_clock
    budget = deadline.WorkBudget(1.0)
    clock.advance(0.05)  # not pattern work: not charged
    assert budget.spent == 0.0
    with budget.metered(), budget.metered():
        clock.advance(0.05)
        assert budget.elapsed() == pytest.approx(0.05)  # the running section counts before it ends
    assert budget.spent == pytest.approx(0.05) and budget.remaining() == pytest.approx(0.95)


def test_a_spent_budget_raises_on_check(budget_clock):
    clock = budget_clock
    budget = deadline.WorkBudget(0.01)
    with budget.metered():
        clock.advance(0.02)
    assert budget.exhausted
    with pytest.raises(deadline.BudgetExhausted):
        budget.check()
    with pytest.raises(ValueError):
        deadline.WorkBudget(0)


def test_the_deployed_clock_is_the_monotonic_one():
    # The seam is for tests only: nothing in the shipped code replaces it.
    assert deadline.monotonic is time.monotonic


def test_budgeted_gives_each_call_a_fresh_budget_and_ensure_reuses_the_active_one():
    seen = []

    @deadline.budgeted(0.5)
    def request():
        seen.append(deadline.current())
        with deadline.ensure(9) as inner:
            assert inner is seen[-1]
        return seen[-1]

    first, second = request(), request()
    assert first is not second and first.seconds == 0.5
    assert deadline.current() is None
    with deadline.ensure(3) as outside:
        assert outside.seconds == 3 and deadline.current() is outside
    assert deadline.current() is None


# ------------------------------------------------------------------------------------------------ regex calls


def test_every_regex_call_gets_the_smaller_of_its_limit_and_what_is_left(budget_clock):
    clock = budget_clock
    pattern = compile_bounded(EMAIL, probe=False)  # the per-call limit: 0.5 s
    seen: list[float] = []
    budget = deadline.WorkBudget(0.15)
    with deadline.using(budget), pytest.raises(RegexBudgetExhausted):
        pattern._call(_engine_that_runs(clock, seen), "a" * 200_000 + "@")
    assert seen == [pytest.approx(0.15)]  # cut at the budget (0.15 s), not at the 0.5 s per-call limit
    assert budget.exhausted and isinstance(RegexBudgetExhausted("x"), RegexTimeout)
    with deadline.using(budget), pytest.raises(RegexBudgetExhausted):
        pattern._call(_engine_that_runs(clock, seen), "x@y.co")
    assert len(seen) == 1  # nothing left: refused before the engine runs


def test_the_real_engine_stops_at_the_budget():
    # The same through the regex engine itself: its timeout is what stops a search that would take seconds.
    pattern = compile_bounded(EMAIL, probe=False)
    with deadline.using(deadline.WorkBudget(0.05)) as budget, pytest.raises(RegexBudgetExhausted):
        pattern.search("a" * 200_000 + "@")
    assert budget.exhausted


def test_the_per_call_limit_still_applies_inside_a_large_budget(budget_clock):
    clock = budget_clock
    pattern = compile_bounded(EMAIL, timeout=0.05, probe=False)
    seen: list[float] = []
    with deadline.using(deadline.WorkBudget(10)) as budget:
        with pytest.raises(RegexTimeout) as caught:
            pattern._call(_engine_that_runs(clock, seen), "a" * 200_000 + "@")
        assert not isinstance(caught.value, RegexBudgetExhausted)
    assert seen == [0.05] and budget.spent == pytest.approx(0.05, rel=0.01)
    with deadline.using(deadline.WorkBudget(10)), pytest.raises(RegexTimeout) as real:
        pattern.search("a" * 200_000 + "@")  # the real engine, cut at 0.05 s of its own clock
    assert not isinstance(real.value, RegexBudgetExhausted)


# ------------------------------------------------------------------------------------------------ locate


def _many_addresses(count: int) -> str:
    """``count`` short, cheap matches: each search is microseconds, so only a total can stop them."""
    return "x@y.co; " * count


def test_many_short_searches_share_one_budget(budget_clock):
    clock = budget_clock
    # Issue 12: each search stays under the per-search limit, so only a total can stop them. With the test
    # clock every budget read costs 1 ms, so the 0.3 s budget is spent after 300 reads, whatever the machine.
    from vaultcore.proxy.transform import new_splicer

    clock.step = 0.001
    cpath = _unprobed(EMAIL)
    message = _message(_many_addresses(900))
    with deadline.using(deadline.WorkBudget(0.3)) as budget, pytest.raises(E.ProxyError) as caught:
        locate(message, cpath, strict=True, splicer=new_splicer(message))
    assert caught.value.code == E.REGEX_TIMEOUT == 8109
    assert caught.value.message == ("The configuration's patterns (regex, jsonpath, xpath) exceeded the request's "
                                    f"time budget for pattern work ({PATTERN_BUDGET:g} s in all) on this body.")
    assert budget.exhausted and clock.reads < 600  # stopped once spent, not after all 900 searches


def test_outside_a_request_locate_has_a_budget_of_its_own(budget_clock):
    clock = budget_clock
    from vaultcore.proxy.transform import new_splicer

    clock.step = 0.01
    message = _message(_many_addresses(900))
    with pytest.raises(E.ProxyError) as caught:
        locate(message, _unprobed(EMAIL), strict=True, splicer=new_splicer(message))
    assert caught.value.code == 8109
    # PATTERN_BUDGET (2 s) at 10 ms a read: stopped after about 200 reads, far short of 900 searches' worth.
    assert PATTERN_BUDGET / clock.step <= clock.reads < PATTERN_BUDGET / clock.step * 2
    assert deadline.current() is None  # the budget of its own ends with the call
    clock.step = 0.0
    assert locate(message, _unprobed(EMAIL), strict=True, splicer=new_splicer(message))  # a budget not spent


def test_masks_in_one_request_draw_on_the_same_budget(budget_clock):
    clock = budget_clock
    # Three masks, each well under the budget alone, do not each get a fresh one. The test clock makes the
    # cost of one mask a count of budget reads, identical for the three (same body, same matches: each mask
    # writes back what it found, so the next one finds it again).
    clock.step = 0.001
    body = _many_addresses(200)
    masks = [(_unprobed(EMAIL), str), (_unprobed(EMAIL + "()"), str), (_unprobed("(" + EMAIL + ")"), str)]
    with deadline.using(deadline.WorkBudget(10)) as alone:
        mask_message(_message(body), masks[:1])
    one = alone.spent
    assert 0 < one < 10 / 3
    with deadline.using(deadline.WorkBudget(one * 3.5)) as enough:
        mask_message(_message(body), masks)  # three masks fit in three shares (and a half)
    assert not enough.exhausted
    with deadline.using(deadline.WorkBudget(one * 2.2)), pytest.raises(E.ProxyError) as caught:
        mask_message(_message(body), masks)
    assert caught.value.code == 8109


# ------------------------------------------------------------------------------------------------ the stored log


def _scrub() -> proxy_logs.Scrubber:
    return proxy_logs.Scrubber([])


def test_a_mask_out_of_time_stores_no_body_and_fails_closed_on_headers_and_query():
    masks = [MaskSpec(_unprobed(EMAIL), "all"),
             MaskSpec(compile_path("header", "key", "X-Email"), "all"),
             MaskSpec(compile_path("query", "key", "email"), "all")]
    message = _message(json.dumps({"note": _near_misses()}), "application/json", headers={"X-Email": "jane@x.io"},
                       query=[("email", "jane@x.io"), ("n", "1")])
    with deadline.using(deadline.WorkBudget(0.2)):
        view = proxy_logs.masked_view(message, masks=masks, clear_paths=(), scrub=_scrub(), url="https://t.example/p")
    assert "body" not in view and view["bodyOmitted"].startswith("the configured masks ran out of time")
    assert view["maskError"]["code"] == 8109
    # The header and query masks come after the one that ran out: never run, so their values are redacted.
    assert view["headers"]["x-email"] == "[REDACTED]"
    assert view["url"] == "https://t.example/p?email=[REDACTED]&n=[REDACTED]"
    assert "jane@x.io" not in json.dumps(view)


def test_body_masks_over_the_query_string_fail_closed_too():
    # No body: the regex runs over the form-encoded query string ("aaa...a=b&email=..."), quadratic on the run.
    masks = [MaskSpec(_unprobed(r"\w+=\w+;"), "all")]
    message = _message("", query=[("a" * 60_000, "b"), ("email", "jane@x.io")])
    with deadline.using(deadline.WorkBudget(0.1)):
        view = proxy_logs.masked_view(message, masks=masks, clear_paths=(), scrub=_scrub(), url="https://t.example/p")
    assert view["maskError"]["code"] == 8109 and "jane" not in view["url"]


def test_a_body_too_large_to_log_is_not_masked_at_all():
    # Over 256 KiB the body is not stored: its masks would be pattern work for nothing.
    masks = [MaskSpec(_unprobed(EMAIL), "all"), MaskSpec(compile_path("header", "key", "X-Email"), "all")]
    message = _message(_near_misses(300_000), headers={"X-Email": "jane@x.io"})
    with deadline.using(deadline.WorkBudget(2)) as budget:
        view = proxy_logs.masked_view(message, masks=masks, clear_paths=(), scrub=_scrub())
    assert budget.spent < 0.1 and "maskError" not in view
    assert "over the 256 KiB logging limit" in view["bodyOmitted"] and view["headers"]["x-email"] == "*********"


def test_rescrub_masks_values_learned_after_the_view_was_built():
    view = {"url": "https://t.example/p?c=4000056655665556", "body": '{"c": "4000056655665556"}',
            "headers": {"x-c": "4000056655665556", "authorization": "[REDACTED]"}}
    proxy_logs.rescrub(view, proxy_logs.Scrubber(["4000056655665556"]))
    assert "4000056655665556" not in json.dumps(view) and view["headers"]["authorization"] == "[REDACTED]"
