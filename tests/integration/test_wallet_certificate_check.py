"""The daily wallet certificate check (WalletCertificateCheckFunction) on moto: it reads the expiry of every stored
wallet certificate from the public facts beside the KMS envelope and publishes the fewest days left
(WalletCertificateExpiryAlarm), warning per certificate inside the window.

Outside artefact: the published wallet fixture's merchant certificate (tests/vectors/applepay.json, gala-8bf3871),
which expired years ago; its expiry is read here with ``cryptography`` from the PEM, not from what the platform
stored."""

from __future__ import annotations

import io
import json
import logging
import math

import pytest
from cryptography import x509

from local.template import load_template
from local.wallet_token_forge import make_test_chain
from tests.helpers import admin
from tests.wallet_support import Pki, gala_certificate_pem, gala_wallet_body, new_merchant, wallet_body
from vaultcore import clock

DAY = 86400


def _not_after(pem: str) -> float:
    return x509.load_pem_x509_certificate(pem.encode()).not_valid_after_utc.timestamp()


def _days_left(pem: str) -> int:
    return math.floor((_not_after(pem) - clock.now()) / DAY)


@pytest.fixture
def run_check(platform, capsys):
    """Invoke the function as the schedule does; return its answer, its EMF documents and its log lines."""
    def run() -> tuple[dict, list[dict], str]:
        root = logging.getLogger("vault")
        captured = io.StringIO()
        handler = logging.StreamHandler(captured)
        handler.setFormatter(root.handlers[0].formatter if root.handlers else None)
        root.addHandler(handler)
        capsys.readouterr()
        try:
            answer = platform.invoke("WalletCertificateCheckFunction",
                                     {"source": "aws.events", "detail-type": "Scheduled Event"})
        finally:
            root.removeHandler(handler)
        out = capsys.readouterr()
        emf = [json.loads(line) for line in out.out.splitlines() if line.startswith('{"_aws"')]
        return answer, emf, captured.getvalue() + out.out + out.err
    return run


def _account(platform) -> str:
    status, body = admin(platform, "POST", "/admin/v1/accounts", {})
    assert status == 201, body
    return body["account_id"]


def test_no_wallet_certificate_publishes_no_days_left(platform, run_check):
    answer, emf, _logs = run_check()
    assert answer["certificates"] == 0 and answer["fewestDaysLeft"] is None and answer["expiring"] == []
    (doc,) = emf
    assert doc["WalletCertificatesExpiring"] == 0
    assert "WalletCertificateDaysLeft" not in doc  # missing data, not a false all-clear value


def test_each_certificate_is_measured_and_the_ones_in_the_window_are_named(platform, run_check, tmp_path,
                                                                          monkeypatch):
    fresh = new_merchant()
    pki = Pki(tmp_path)
    fresh_account = _account(platform)
    status, view = admin(platform, "PUT", f"/admin/v1/accounts/{fresh_account}/wallet", wallet_body(fresh, pki))
    assert status == 200, view
    published_account = _account(platform)
    status, view = admin(platform, "PUT", f"/admin/v1/accounts/{published_account}/wallet",
                         gala_wallet_body("pkcs8", make_test_chain()))
    assert status == 200, view

    published = _days_left(gala_certificate_pem())
    assert published < 0  # the fixture's certificate has expired
    answer, emf, logs = run_check()
    assert answer["certificates"] == 3  # two of the fresh account, one of the published merchant
    assert answer["fewestDaysLeft"] == published
    assert answer["expiring"] == [{"account_id": published_account, "role": "payment_processing",
                                   "not_after": view["payment_processing_certificate_not_after"],
                                   "days_left": published}]
    (doc,) = emf
    assert doc["WalletCertificateDaysLeft"] == published and doc["WalletCertificatesExpiring"] == 1
    assert "wallet certificate has expired" in logs and published_account in logs
    for secret in (fresh.key_pem.decode().splitlines()[1], pki.identity_key_pem.splitlines()[1],
                   fresh.cert_pem.decode().splitlines()[1], gala_certificate_pem().splitlines()[1]):
        assert secret not in logs  # public expiry facts only: no key, no certificate body

    # The fresh certificates, seen from 29 days before the earlier of the two expires: inside a 30-day window.
    fresh_expiries = {"payment_processing": _not_after(fresh.cert_pem.decode()),
                      "merchant_identity": _not_after(pki.identity_cert_pem)}
    role, first = min(fresh_expiries.items(), key=lambda kv: kv[1])
    monkeypatch.setattr(clock, "_offset_seconds", first - 29.5 * DAY - clock.time.time())
    answer, emf, logs = run_check()
    inside = [c for c in answer["expiring"] if c["account_id"] == fresh_account]
    assert role in {c["role"] for c in inside if c["days_left"] == 29}
    assert all(c["days_left"] >= 29 for c in inside)
    assert "wallet certificate expires soon" in logs


def test_the_warning_window_is_the_stack_parameter(platform, run_check, monkeypatch):
    merchant = new_merchant()
    account_id = _account(platform)
    assert admin(platform, "PUT", f"/admin/v1/accounts/{account_id}/wallet", wallet_body(merchant))[0] == 200
    days = _days_left(merchant.cert_pem.decode())
    monkeypatch.setenv("WALLET_CERTIFICATE_WARNING_DAYS", str(days))
    answer, _emf, _logs = run_check()
    assert answer["warningDays"] == days and answer["fewestDaysLeft"] == days and answer["expiring"] == []
    monkeypatch.setenv("WALLET_CERTIFICATE_WARNING_DAYS", str(days + 1))
    answer, _emf, _logs = run_check()
    assert [c["days_left"] for c in answer["expiring"]] == [days]


def test_the_check_is_scheduled_daily_and_alarmed(platform):
    resources = load_template()["Resources"]
    function = resources["WalletCertificateCheckFunction"]["Properties"]
    assert function["Events"]["Daily"] == {"Type": "Schedule", "Properties": {"Schedule": "rate(1 day)"}}
    assert not any("kms" in json.dumps(p).lower() for p in function["Policies"])  # no key is ever unwrapped
    alarm = resources["WalletCertificateExpiryAlarm"]["Properties"]
    assert (alarm["MetricName"], alarm["Statistic"], alarm["ComparisonOperator"]) == (
        "WalletCertificateDaysLeft", "Minimum", "LessThanThreshold")
    assert alarm["Threshold"] == {"Ref": "WalletCertificateWarningDays"}
