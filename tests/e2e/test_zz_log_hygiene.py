"""Runs last (file order): the session runner's output holds no card data and no secret.

Every e2e module before this one (on this worker) drove the same session runner (parser, tokenization, proxy,
gateway, wallet, checkout), so this one scan covers all of them (PCI DSS 3.4, 10.2: no PAN, track, CVV, key or
Authorization value in logs). Under pytest-xdist the other workers' runners are scanned by the same check when
their session ends (the ``runner`` fixture's teardown, tests/e2e/conftest.py).
"""

from __future__ import annotations

from tests.e2e.log_hygiene import TEST_PANS, demo_secrets, leaks


def test_no_card_number_from_any_e2e_test_is_in_the_logs(runner):
    logs = runner.logs()
    assert "request done" in logs
    assert TEST_PANS, "the scan needs the e2e tests' card numbers"
    assert not [leak for leak in leaks(logs, runner.demo) if leak.startswith(("card number", "a clear track"))]


def test_no_credential_of_the_demo_data_is_in_the_logs(runner):
    assert len(demo_secrets(runner.demo)) >= 6
    assert leaks(runner.logs(), runner.demo) == []


def test_the_check_finds_what_it_looks_for(runner):
    """Not vacuous: each kind of leak planted in a copy of the logs is found, and named without its value."""
    pan = TEST_PANS[0]
    secret = demo_secrets(runner.demo)[0]
    planted = leaks(f"x {pan} y ;{pan}=2512 z {secret} Basic abc", runner.demo)
    assert planted == [f"card number {pan[:6]}…", "a clear track", "demo credential #0", "the text 'Basic '"]
    assert not any(pan in leak or secret in leak for leak in planted)
