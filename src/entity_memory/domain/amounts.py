"""A stored number with its unit, written as people write it: "$1,290", "€14.20", "4.2%", "3.1x".

Metrics keep a bare number and a unit ("USD", "%", ...) so trends can be computed; a reader
(the agent the context block is for, a person in the inspector) knows amounts by how they
are said, and the block should hold the "$1,290" the user said, not "1290 USD".
"""

from __future__ import annotations

#: Currency codes (and the symbols extractors may store as a unit) written as a prefix.
CURRENCY_SYMBOLS = {"USD": "$", "$": "$", "EUR": "€", "€": "€", "GBP": "£", "£": "£"}
#: Units written straight after the number.
SUFFIX_UNITS = {"%": "%", "percent": "%", "x": "x"}


def plain_number(value: float) -> str:
    """`1290`, `14.2`, `0.05`: the shortest exact form."""
    return f"{value:g}" if abs(value) < 1e15 else f"{value:.0f}"


def amount(value: float, unit: str | None) -> str:
    """The number with its unit; money with thousands separators and cents when it has any."""
    key = (unit or "").strip()
    symbol = CURRENCY_SYMBOLS.get(key.upper()) or CURRENCY_SYMBOLS.get(key)
    if symbol is not None:
        sign = "-" if value < 0 else ""
        size = abs(value)
        digits = f"{size:,.0f}" if size == int(size) else f"{size:,.2f}"
        return f"{sign}{symbol}{digits}"
    suffix = SUFFIX_UNITS.get(key.lower())
    if suffix is not None:
        return f"{plain_number(value)}{suffix}"
    return f"{plain_number(value)} {key}" if key else plain_number(value)
