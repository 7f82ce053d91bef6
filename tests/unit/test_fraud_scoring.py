"""Fraud scoring rules: every rule's outcome, the thresholds and the recommendation bands."""

from __future__ import annotations

import pytest

from vaultcore.fraud import bins
from vaultcore.fraud.scoring import (
    ACCEPT,
    REJECT,
    REVIEW,
    RiskFacts,
    offset_fits_country,
    recommendation_for,
    score,
)

CLEAN = RiskFacts(device_data=True, distinct_cards_on_device_24h=1, card_uses_1h=1, card_uses_24h=1,
                  avs_response="Y", device_utc_offset_minutes=-300, card_country="US")


def facts(**changes) -> RiskFacts:
    return RiskFacts(**{**CLEAN.__dict__, **changes})


def test_a_clean_payment_scores_zero_and_is_accepted():
    result = score(CLEAN)
    assert (result.score, result.recommendation, result.reasons) == (0, ACCEPT, ())


def test_no_device_data_alone_asks_for_review():
    result = score(facts(device_data=False, distinct_cards_on_device_24h=0, device_utc_offset_minutes=None))
    assert (result.score, result.recommendation, result.reasons) == (40, REVIEW, ("no_device_data",))


def test_reused_device_transaction_id_asks_for_review():
    result = score(facts(device_reused=True))
    assert (result.score, result.recommendation, result.reasons) == (30, REVIEW, ("device_id_reused",))


@pytest.mark.parametrize(("cards", "points", "recommendation"), [
    (1, 0, ACCEPT), (2, 15, ACCEPT), (3, 35, REVIEW), (4, 35, REVIEW), (5, 75, REJECT), (12, 75, REJECT)])
def test_many_distinct_cards_on_one_device(cards, points, recommendation):
    result = score(facts(distinct_cards_on_device_24h=cards))
    assert (result.score, result.recommendation) == (points, recommendation)
    assert ("many_cards_on_device" in result.reasons) == bool(points)


@pytest.mark.parametrize(("hour", "day", "points", "reasons"), [
    (2, 2, 0, ()), (3, 3, 20, ("card_velocity",)), (5, 5, 20, ("card_velocity",)), (6, 6, 45, ("card_velocity",)),
    (1, 10, 30, ("card_velocity_day",)), (6, 12, 75, ("card_velocity", "card_velocity_day"))])
def test_card_velocity_per_hour_and_per_day(hour, day, points, reasons):
    result = score(facts(card_uses_1h=hour, card_uses_24h=day))
    assert (result.score, result.reasons) == (points, reasons)


@pytest.mark.parametrize(("avs", "points"), [("Y", 0), ("X", 0), ("N", 35), ("n", 35), ("A", 15), ("Z", 0),
                                             ("W", 0), ("U", 0), (None, 0), ("", 0)])
def test_avs_mismatch(avs, points):
    result = score(facts(avs_response=avs))
    assert result.score == points
    assert ("avs_mismatch" in result.reasons) == bool(points)


@pytest.mark.parametrize(("offset", "country", "flagged"), [
    (-300, "US", False), (-600, "US", False), (60, "US", True), (540, "JP", False), (-300, "JP", True),
    (60, "GB", False), (330, "IN", False), (0, "ZZ", False), (None, "US", False), (60, None, False)])
def test_timezone_against_card_country_where_known(offset, country, flagged):
    result = score(facts(device_utc_offset_minutes=offset, card_country=country))
    assert ("timezone_country_mismatch" in result.reasons) is flagged
    assert result.score == (20 if flagged else 0)


def test_unknown_country_is_silent_not_a_mismatch():
    assert offset_fits_country(120, "ZZ") is None
    assert offset_fits_country(120, "de") is True


def test_rules_add_up_and_are_capped_at_100():
    result = score(facts(device_reused=True, distinct_cards_on_device_24h=5, card_uses_1h=6, card_uses_24h=10,
                         avs_response="N", device_utc_offset_minutes=600))
    assert result.score == 100 and result.recommendation == REJECT
    assert result.reasons == ("device_id_reused", "many_cards_on_device", "card_velocity", "card_velocity_day",
                              "avs_mismatch", "timezone_country_mismatch")
    assert result.to_dict() == {"score": 100, "recommendation": "reject", "reasons": list(result.reasons)}


def test_two_moderate_signals_together_reject():
    result = score(facts(device_data=False, avs_response="N"))
    assert (result.score, result.recommendation) == (75, REJECT)


@pytest.mark.parametrize(("value", "recommendation"), [(0, ACCEPT), (29, ACCEPT), (30, REVIEW), (69, REVIEW),
                                                      (70, REJECT), (100, REJECT)])
def test_recommendation_bands(value, recommendation):
    assert recommendation_for(value) == recommendation


def test_sandbox_card_countries():
    assert bins.card_country("4000008260000000") == "GB"
    assert bins.card_country("4000003920000003") == "JP"
    assert bins.card_country("4242424242424242") == "US"
    assert bins.card_country("6011000990139424") is None
