"""ISO 4217 alphabetic currency codes the gateway accepts, with their minor units (pure data).

The active national currencies and the multinational ones used for payments (XAF, XCD, XCG, XOF, XPF), as in
the ISO 4217 list maintained by SIX (list one). Left out on purpose: fund codes (BOV, CHE, CHW, CLF, COU, MXV,
USN, UYI, UYW), precious metals, SDR, test and "no currency" codes (X..), and withdrawn codes (HRK, CUC, SLL,
ZWL). A card payment in those makes no sense.

Minor units matter for amounts: a currency without minor units (JPY, KRW, ...) takes whole amounts only; the
gateway's general rule of at most two decimals applies to the rest (the three-decimal dinars included).
"""

from __future__ import annotations

__all__ = ["CURRENCIES", "is_currency", "minor_units"]

_ZERO = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX VND VUV XAF XOF XPF"
_THREE = "BHD IQD JOD KWD LYD OMR TND"
_TWO = (
    "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CNY "
    "COP CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS "
    "INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR "
    "MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD "
    "SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG"
)

#: code -> minor units
CURRENCIES: dict[str, int] = {
    **{c: 2 for c in _TWO.split()},
    **{c: 0 for c in _ZERO.split()},
    **{c: 3 for c in _THREE.split()},
}


def is_currency(code: str) -> bool:
    """Whether ``code`` is an accepted ISO 4217 code (exact upper case, as the standard writes it).

    >>> is_currency("USD"), is_currency("usd"), is_currency("XXX")
    (True, False, False)
    """
    return isinstance(code, str) and code in CURRENCIES


def minor_units(code: str) -> int:
    """Digits after the decimal point for ``code`` (2 when unknown)."""
    return CURRENCIES.get(code, 2)
