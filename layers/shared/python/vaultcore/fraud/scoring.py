"""Fraud scoring rules (pure): facts about a payment in, a score from 0 to 100 and a recommendation out.

The rules are deliberately simple, additive and documented (docs/integrators/fraud-scoring.md), so a merchant can
explain every decision to a cardholder and the operator can tune them without a model:

| Reason code | Points | Fact |
|---|---|---|
| ``no_device_data`` | 40 | no signals were collected for the payment's ``device_trans_id`` (script missing, blocked, or a made-up id) |
| ``device_id_reused`` | 30 | the device transaction id was reported by two different page loads (the spec asks for a new id on every page) |
| ``many_cards_on_device`` | 15 / 35 / 75 | 2 / 3-4 / 5+ distinct cards used from one device within 24 hours |
| ``card_velocity`` | 20 / 45 | this card used 3-5 / 6+ times on the account within one hour (``card_velocity_day``: 10+ times in 24 hours, 30) |
| ``avs_mismatch`` | 35 / 15 | AVS ``N`` (neither address nor zip) / ``A`` (address matches, zip does not); ``Z``/``W``
  (zip matches, address does not or was not sent, the usual card-not-present answer) add nothing |
| ``timezone_country_mismatch`` | 20 | the device's UTC offset is outside every offset of the card's issuing country (where both are known) |

Score = min(100, sum of points); recommendation ``accept`` below 30, ``review`` from 30 to 69, ``reject`` from
70. One strong signal (5+ cards on one device) rejects alone; two moderate ones together review or reject.

Card numbers never enter this module: the many-cards and velocity rules receive counts the service derived
from keyed HMAC fingerprints (PCI DSS 3.5.1: only keyed cryptographic hashes of the PAN may be stored).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "ACCEPT",
    "REVIEW",
    "REJECT",
    "REVIEW_THRESHOLD",
    "REJECT_THRESHOLD",
    "COUNTRY_UTC_OFFSETS",
    "RiskFacts",
    "FraudResult",
    "score",
    "recommendation_for",
    "offset_fits_country",
]

ACCEPT, REVIEW, REJECT = "accept", "review", "reject"
REVIEW_THRESHOLD = 30
REJECT_THRESHOLD = 70

# UTC offsets in minutes east of UTC (standard and daylight time) each country's clocks can show. Only
# countries listed here are checked ("where known"); a country spanning many zones lists its whole range.
COUNTRY_UTC_OFFSETS: dict[str, tuple[int, int]] = {
    "US": (-600, -240),  # Hawaii standard .. Eastern daylight (Alaska/Hawaii included, territories not)
    "CA": (-480, -150),  # Pacific standard .. Newfoundland daylight
    "MX": (-480, -300),
    "BR": (-300, -120),
    "AR": (-180, -180),
    "GB": (0, 60),
    "IE": (0, 60),
    "PT": (-60, 60),  # the Azores included
    "ES": (0, 120),  # the Canaries included
    "FR": (60, 120),
    "DE": (60, 120),
    "IT": (60, 120),
    "NL": (60, 120),
    "BE": (60, 120),
    "CH": (60, 120),
    "AT": (60, 120),
    "SE": (60, 120),
    "NO": (60, 120),
    "DK": (60, 120),
    "PL": (60, 120),
    "FI": (120, 180),
    "GR": (120, 180),
    "RU": (120, 720),
    "TR": (180, 180),
    "AE": (240, 240),
    "IN": (330, 330),
    "CN": (480, 480),
    "HK": (480, 480),
    "SG": (480, 480),
    "JP": (540, 540),
    "KR": (540, 540),
    "AU": (480, 660),
    "NZ": (720, 780),
    "ZA": (120, 120),
    "NG": (60, 60),
}

# (points, reason) tiers, checked from the highest threshold down.
_CARDS_ON_DEVICE = ((5, 75), (3, 35), (2, 15))
_CARD_USES_HOUR = ((6, 45), (3, 20))
_CARD_USES_DAY_THRESHOLD, _CARD_USES_DAY_POINTS = 10, 30
_AVS_POINTS = {"N": 35, "A": 15}
_NO_DEVICE_POINTS = 40
_DEVICE_REUSED_POINTS = 30
_TIMEZONE_POINTS = 20


@dataclass(frozen=True)
class RiskFacts:
    """What the service knows about one payment. Counts include the payment being scored."""

    device_data: bool
    device_reused: bool = False
    distinct_cards_on_device_24h: int = 0
    card_uses_1h: int = 1
    card_uses_24h: int = 1
    avs_response: str | None = None
    device_utc_offset_minutes: int | None = None  # minutes east of UTC (the browser's -getTimezoneOffset())
    card_country: str | None = None  # ISO 3166-1 alpha-2, when the issuer country is known


@dataclass(frozen=True)
class FraudResult:
    score: int
    recommendation: str
    reasons: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        return {"score": self.score, "recommendation": self.recommendation, "reasons": list(self.reasons)}


def recommendation_for(score_value: int) -> str:
    if score_value >= REJECT_THRESHOLD:
        return REJECT
    if score_value >= REVIEW_THRESHOLD:
        return REVIEW
    return ACCEPT


def offset_fits_country(offset_minutes: int, country: str) -> bool | None:
    """True/False when the country's offsets are known, None when they are not (the rule then stays silent)."""
    span = COUNTRY_UTC_OFFSETS.get(country.upper())
    if span is None:
        return None
    low, high = span
    return low <= offset_minutes <= high


def _tier(value: int, tiers: tuple[tuple[int, int], ...]) -> int:
    for threshold, points in tiers:
        if value >= threshold:
            return points
    return 0


def score(facts: RiskFacts) -> FraudResult:
    """Apply every rule; reasons are listed in the order of the table above."""
    points: list[tuple[str, int]] = []
    if not facts.device_data:
        points.append(("no_device_data", _NO_DEVICE_POINTS))
    if facts.device_reused:
        points.append(("device_id_reused", _DEVICE_REUSED_POINTS))
    cards = _tier(facts.distinct_cards_on_device_24h, _CARDS_ON_DEVICE)
    if cards:
        points.append(("many_cards_on_device", cards))
    hour = _tier(facts.card_uses_1h, _CARD_USES_HOUR)
    if hour:
        points.append(("card_velocity", hour))
    if facts.card_uses_24h >= _CARD_USES_DAY_THRESHOLD:
        points.append(("card_velocity_day", _CARD_USES_DAY_POINTS))
    avs = _AVS_POINTS.get((facts.avs_response or "").strip().upper())
    if avs:
        points.append(("avs_mismatch", avs))
    if facts.device_utc_offset_minutes is not None and facts.card_country:
        if offset_fits_country(facts.device_utc_offset_minutes, facts.card_country) is False:
            points.append(("timezone_country_mismatch", _TIMEZONE_POINTS))
    total = min(100, sum(p for _, p in points))
    return FraudResult(total, recommendation_for(total), tuple(reason for reason, _ in points))
