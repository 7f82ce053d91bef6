"""The postback sender's per-destination circuit breaker (a fake clock: no waiting)."""

from __future__ import annotations

from vaultcore.postback.breaker import ALLOW, DEFER, PROBE, CircuitBreaker, destination_of

DEST = "https://hooks.example.com:443"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _breaker(clock: Clock) -> CircuitBreaker:
    return CircuitBreaker(threshold=3, cooldown=30, max_cooldown=100, clock=clock)


def test_destination_is_scheme_host_and_port():
    assert destination_of("https://Hooks.Example.com/a?b=1") == DEST
    assert destination_of("https://hooks.example.com:443/other") == DEST
    assert destination_of("http://127.0.0.1:8080/x") == "http://127.0.0.1:8080"
    assert destination_of("https://hooks.example.com:8443/") != DEST


def test_opens_after_threshold_consecutive_unresponsive_attempts_only():
    b = _breaker(Clock())
    for _ in range(2):
        assert b.before_attempt(DEST) == ALLOW
        b.record(DEST, responsive=False)
    b.record(DEST, responsive=True)  # an answer (any status) resets the count
    for _ in range(2):
        b.record(DEST, responsive=False)
    assert b.before_attempt(DEST) == ALLOW and not b.is_open(DEST)
    b.record(DEST, responsive=False)
    assert b.is_open(DEST) and b.before_attempt(DEST) == DEFER
    assert b.before_attempt("https://other.example.com:443") == ALLOW  # isolated per destination


def test_half_open_lets_one_probe_through_and_an_answer_closes_it():
    clock = Clock()
    b = _breaker(clock)
    for _ in range(3):
        b.record(DEST, responsive=False)
    clock.now += 29.9
    assert b.before_attempt(DEST) == DEFER
    clock.now += 0.2
    assert b.before_attempt(DEST) == PROBE
    assert b.before_attempt(DEST) == DEFER  # one probe at a time
    b.record(DEST, responsive=True)
    assert not b.is_open(DEST) and b.before_attempt(DEST) == ALLOW


def test_a_failed_probe_reopens_for_twice_the_cooldown_up_to_the_maximum():
    clock = Clock()
    b = _breaker(clock)
    for _ in range(3):
        b.record(DEST, responsive=False)
    for expected in (60, 100, 100):
        clock.now += 1000
        assert b.before_attempt(DEST) == PROBE
        b.record(DEST, responsive=False)
        clock.now += expected - 0.1
        assert b.before_attempt(DEST) == DEFER
        clock.now += 0.2
        assert b.before_attempt(DEST) == PROBE
        b.release_probe(DEST)  # not attempted after all: the next caller may probe
        clock.now -= 1000


def test_late_failures_of_attempts_started_before_the_opening_do_not_extend_it():
    clock = Clock()
    b = _breaker(clock)
    for _ in range(3):
        b.record(DEST, responsive=False)
    clock.now += 20
    b.record(DEST, responsive=False)  # a fourth attempt of the same batch times out later
    clock.now += 10.1
    assert b.before_attempt(DEST) == PROBE


def test_bounded_number_of_destinations():
    b = CircuitBreaker(threshold=1, max_destinations=2, clock=Clock())
    for host in ("a", "b", "c"):
        b.record(f"https://{host}:443", responsive=False)
    assert not b.is_open("https://a:443") and b.is_open("https://b:443") and b.is_open("https://c:443")
