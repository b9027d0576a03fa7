"""A stored number with its unit, written as people write it: "$1,290", "€14.20", "4.2%", "3.1x".

Metrics keep a bare number and a unit ("USD", "%", ...) so trends can be computed; a reader
(the agent the context block is for, a person in the inspector) knows amounts by how they
are said, and the block should hold the "$1,290" the user said, not "1290 USD".
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator

from pydantic import BaseModel, ConfigDict

#: The currency signs people write, as the unit a metric stores: the one table of them.
CURRENCY_CODES = {"$": "USD", "€": "EUR", "£": "GBP"}
#: Currency codes (and the signs a client may store as a unit) written as a prefix.
CURRENCY_SYMBOLS = {code: sign for sign, code in CURRENCY_CODES.items()} | {
    sign: sign for sign in CURRENCY_CODES
}
#: Units written straight after the number.
SUFFIX_UNITS = {"%": "%", "percent": "%", "x": "x"}


#: Beyond this a number is written in exponent form: a digit string as long as a line helps
#: no one (values are not capped: a bad client write may hold 1e300).
_LONGEST_PLAIN = 1e15


def plain_number(value: float) -> str:
    """`1290`, `1234567`, `14.2`, `0.004`: up to 15 significant digits, no trailing zeros."""
    return f"{value:.15g}"


def _money(size: float) -> str:
    """Thousands separators; cents when it has any, more decimals only when they matter."""
    if size >= _LONGEST_PLAIN:
        return plain_number(size)
    if size == int(size):
        return f"{size:,.0f}"
    if round(size, 2) == size or size >= 100:
        return f"{size:,.2f}"
    return f"{size:,.4f}".rstrip("0")


def currency(unit: str | None) -> str | None:
    """The currency code a unit names ("USD" for "USD" or "$"), None for any other unit."""
    key = (unit or "").strip()
    if key in CURRENCY_CODES:
        return CURRENCY_CODES[key]
    return key.upper() if key.upper() in CURRENCY_SYMBOLS else None


def amount(value: float, unit: str | None) -> str:
    """The number with its unit, money with its currency sign first."""
    key = (unit or "").strip()
    symbol = CURRENCY_SYMBOLS.get(key.upper()) or CURRENCY_SYMBOLS.get(key)
    if symbol is not None:
        return f"{'-' if value < 0 else ''}{symbol}{_money(abs(value))}"
    suffix = SUFFIX_UNITS.get(key.lower())
    if suffix is not None:
        return f"{plain_number(value)}{suffix}"
    return f"{plain_number(value)} {key}" if key else plain_number(value)


# --- numbers written in text --------------------------------------------------------------------

#: Relative tolerance when a stored number is compared with one written in text.
NUMBER_TOLERANCE = 0.005

#: A number never ends inside another ("2.1" is not "2" then "1"), and a unit written against
#: it ("2.1s", "30min") leaves it whole: only k, m, % and x change what it means.
_NUMBER = re.compile(
    r"(?<![\w.])(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d,.]?\d)"
    r"(?:\s?(?P<suffix>k|m|%|x)(?!\w))?",
    re.IGNORECASE,
)
_SCALE = {"k": 1_000.0, "m": 1_000_000.0}


class NumberMention(BaseModel):
    model_config = ConfigDict(frozen=True)

    value: float
    start: int
    end: int
    percent: bool = False


def _read(m: re.Match[str]) -> tuple[float, bool]:
    """A number pattern's match: (its value, whether it is a percentage)."""
    suffix = (m.group("suffix") or "").lower()
    return float(m.group("num").replace(",", "")) * _SCALE.get(suffix, 1.0), suffix == "%"


def numbers_in(text: str) -> list[NumberMention]:
    """The numbers written in `text` ("$1,200", "2.5k", "4.5%"), with their positions."""
    out: list[NumberMention] = []
    for m in _NUMBER.finditer(text):
        value, percent = _read(m)
        out.append(NumberMention(value=value, start=m.start(), end=m.end(), percent=percent))
    return out


def number_values(text: str) -> Iterator[tuple[float, bool, int]]:
    """(value, is a percentage, where it ends) of each number written in `text`, lazily:
    `numbers_in` without building a model per number, for reading a whole conversation's
    numbers once, in steps."""
    for m in _NUMBER.finditer(text):
        yield *_read(m), m.end()


def same_number(a: float, b: float) -> bool:
    return abs(a - b) <= NUMBER_TOLERANCE * max(abs(a), abs(b), 1e-9)


def _matches(stored: float, mention: NumberMention) -> bool:
    if same_number(stored, mention.value):
        return True
    return mention.percent and same_number(stored * 100, mention.value)


def mentions_of(stored: float, text: str) -> list[NumberMention]:
    """Where `stored` is written in `text` (a percentage may be stored as a fraction)."""
    return [m for m in numbers_in(text) if _matches(stored, m)]


def _near(values: tuple[float, ...], stored: float) -> bool:
    """Whether a value of the sorted `values` is `same_number` as `stored`. Every such value
    lies within 2 * NUMBER_TOLERANCE * |stored| (+ the 1e-9 floor) of it, so only that window
    is read (an infinite or NaN `stored` has no window: all are compared)."""
    if not math.isfinite(stored):
        return any(same_number(stored, v) for v in values)
    reach = 2 * NUMBER_TOLERANCE * abs(stored) + 1e-9
    i = bisect_left(values, stored - reach)
    while i < len(values) and values[i] <= stored + reach:
        if same_number(stored, values[i]):
            return True
        i += 1
    return False


class WrittenNumbers(BaseModel):
    """The numbers a text writes, sorted, so that whether it writes a stored number costs a
    binary search: `has(stored)` is `bool(mentions_of(stored, text))`, which reads and parses
    the whole text each time (grounding asked it of a 1 MB session once per number of every
    candidate, for seconds)."""

    model_config = ConfigDict(frozen=True)

    values: tuple[float, ...] = ()
    #: The values of those written as percentages ("4.5%": 4.5).
    percents: tuple[float, ...] = ()

    @classmethod
    def of(cls, numbers: Iterable[tuple[float, bool]]) -> WrittenNumbers:
        """From (value, is a percentage) pairs."""
        numbers = list(numbers)
        return cls(
            values=tuple(sorted({v for v, _ in numbers})),
            percents=tuple(sorted({v for v, percent in numbers if percent})),
        )

    def has(self, stored: float) -> bool:
        """`stored` is written in the text (a percentage may be stored as a fraction)."""
        return _near(self.values, stored) or _near(self.percents, stored * 100)
