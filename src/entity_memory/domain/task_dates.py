"""The days and months a task names ("on 19 August, 2023", "in April", "2023-08-19"), as
ISO strings ranking compares with the days an entity was mentioned (its entry's `days`).

A memory answers "what did we decide on March 3?" or "what did she share on 19 August?" by
the day a thing was said, which no word of the entity holds. Only explicit dates are read:
a day with its month (and year), a month with a year, a month alone (the latest one not
after the request: "since January" in June is this year's January), ISO dates, and the
CJK 年/月/日 forms. Relative phrases ("last week") are left alone: ranking's recency already
weighs what is recent.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
_PATTERNS = [
    re.compile(p, re.IGNORECASE)
    for p in (
        rf"\b{_YEAR}-(?P<iso>\d{{2}})(?:-(?P<iso_day>\d{{2}}))?\b",
        rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}(?:,?\s+{_YEAR})?\b",
        rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+{_YEAR})?",
        rf"\b{_MONTH}(?:,?\s+{_YEAR})?\b",
    )
]
_CJK = re.compile(r"(?P<year>\d{4})年(?P<iso>\d{1,2})月(?:(?P<iso_day>\d{1,2})日)?")
#: "may" is mostly a verb: alone it is the month only when written "May".
_VERB_MONTHS = {"may", "march"}


def dates_in(task: str, now_ms: int) -> list[str]:
    """The ISO days ("2023-08-19") and months ("2023-04") `task` names, in order, once each."""
    today = date.fromisoformat(iso_day(now_ms))
    found: list[str] = []
    taken: list[tuple[int, int]] = []
    for pattern in (_CJK, *_PATTERNS):
        for m in pattern.finditer(task):
            if any(start < m.end() and m.start() < end for start, end in taken):
                continue  # part of a longer date already read
            iso = _iso(m, today)
            if iso is not None:
                taken.append(m.span())
                if iso not in found:
                    found.append(iso)
    return found


def _iso(m: re.Match[str], today: date) -> str | None:
    groups = m.groupdict()
    if groups.get("iso"):
        day = groups.get("iso_day")
        return _checked(int(groups["year"]), int(groups["iso"]), int(day) if day else None)
    word = groups["month"]
    month = _MONTHS[word.lower()]
    day = int(groups["day"]) if groups.get("day") else None
    year = int(groups["year"]) if groups.get("year") else None
    if day is None and year is None and not _alone_ok(word):
        return None
    if year is None:  # the latest such month (or day) not after today
        year = today.year if (month, day or 1) <= (today.month, today.day) else today.year - 1
    return _checked(year, month, day)


def _alone_ok(word: str) -> bool:
    """A month named without day or year: a full name, and "May"/"March" only capitalised
    (lower case they are verbs); abbreviations alone are too often other words."""
    name = word.lower()
    if name in _VERB_MONTHS:
        return word[0].isupper()
    return len(name) > 3 and name != "sept"


def _checked(year: int, month: int, day: int | None) -> str | None:
    """The ISO form, or None for an impossible date ("31 February")."""
    try:
        when = date(year, month, day or 1)
    except ValueError:
        return None
    return when.isoformat() if day else when.isoformat()[:7]


def iso_day(ms: int) -> str:
    """The UTC day of epoch milliseconds, as entries keep it."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date().isoformat()
