"""The days and months a task names ("on 19 August, 2023", "in April", "2023-08-19"), as
ISO strings ranking compares with the days an entity was said on (its entry's `days`).

A memory answers "what did we decide on March 3?" or "what did she share on 19 August?" by
the day a thing was said, which no word of the entity holds. Only explicit dates are read:
a day with its month (and year), a month with a year, a month alone after a word that makes
it a time ("in April", "since January", "June and July"), ISO dates, and the CJK 年/月/日
forms; without a year, the latest such day or month not after the request. "may" and
"march" in lower case are verbs unless a year follows, and a month's abbreviation alone is
too often another word. Relative phrases ("last week") are left alone: ranking's recency
already weighs what is recent.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

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
#: A month named alone must be named in full: "dec", "mar" or "jun" alone are other words.
_FULL_NAMES = frozenset(
    "january february march april may june july august september october november december".split()
)
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
#: Longest form first: a span one form read is not read again by a shorter one.
_PATTERNS = [
    re.compile(r"(?P<year>\d{4})年(?P<iso>\d{1,2})月(?:(?P<iso_day>\d{1,2})日)?"),
    *(
        re.compile(p, re.IGNORECASE)
        for p in (
            rf"\b{_YEAR}-(?P<iso>\d{{2}})(?:-(?P<iso_day>\d{{2}}))?\b",
            rf"\b{_DAY}(?:\s+of)?\s+{_MONTH}(?:,?\s+{_YEAR})?\b",
            rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s+{_YEAR})?",
            rf"\b{_MONTH}(?:,?\s+{_YEAR})?\b",
        )
    ),
]
#: Lower case, these are verbs ("it may", "march on"): a month only with a year.
_VERB_MONTHS = frozenset({"may", "march"})
#: Words after which a month named alone is a time ("in April", "June and July").
_TIME_WORDS = frozenset(
    "in on since during until till from by of before after through to and or with than "
    "early late mid last this next between".split()
)
_WORD_BEFORE = re.compile(r"([A-Za-z]+)[\s,-]*$")
_LOOK_BACK = 24
#: Dates read from one task at most: a task naming more is a list, not a question about a day.
MAX_DATES = 8
DAY_MS = 24 * 60 * 60 * 1000
#: The last millisecond of the year 9999: later times have no calendar date to show or match.
MAX_EPOCH_MS = 253_402_300_799_999
#: 2000-01-01: a client's time before it is one in seconds read as milliseconds (a day in
#: January 1970), not when anything in an ads account was said or measured.
MIN_EPOCH_MS = 946_684_800_000


def dates_in(task: str, now_ms: int) -> list[str]:
    """The ISO days ("2023-08-19") and months ("2023-04") `task` names, in order, once each.

    "Not after the request" allows a day: the stored days are UTC, the user's today may not be.
    """
    latest = date.fromisoformat(iso_day(now_ms)) + timedelta(days=1)
    found: dict[str, int] = {}
    taken = bytearray(len(task))
    for pattern in _PATTERNS:
        for m in pattern.finditer(task):
            start, end = m.span()
            if any(taken[start:end]):
                continue  # part of a date a longer form already read
            if _is_date_form(m, task):
                taken[start:end] = b"\x01" * (end - start)
                iso = _iso(m, latest)
                if iso is not None:
                    found.setdefault(iso, start)
                    if len(found) >= MAX_DATES:
                        return sorted(found, key=found.__getitem__)
    return sorted(found, key=found.__getitem__)


def _is_date_form(m: re.Match[str], task: str) -> bool:
    """Whether the match is meant as a date at all (its date may still be impossible)."""
    groups = m.groupdict()
    word = groups.get("month")
    if word is None:
        return True  # ISO and CJK forms
    name = word.lower()
    if name in _VERB_MONTHS and not word[0].isupper() and not groups.get("year"):
        return False
    if groups.get("day") or groups.get("year"):
        return True
    before = _WORD_BEFORE.search(task[max(0, m.start() - _LOOK_BACK) : m.start()])
    word_before = before.group(1).lower() if before else ""
    # After a time word, or after another month ("March, April and May", "mid-April").
    return name in _FULL_NAMES and (word_before in _TIME_WORDS or word_before in _FULL_NAMES)


def _iso(m: re.Match[str], latest: date) -> str | None:
    groups = m.groupdict()
    if groups.get("iso"):
        day = groups.get("iso_day")
        return _checked(int(groups["year"]), int(groups["iso"]), int(day) if day else None)
    month = _MONTHS[groups["month"].lower()]
    day = int(groups["day"]) if groups.get("day") else None
    if groups.get("year"):
        return _checked(int(groups["year"]), month, day)
    # The latest such month (or day) not after the request.
    year = latest.year if (month, day or 1) <= (latest.month, latest.day) else latest.year - 1
    return _checked(year, month, day)


def _checked(year: int, month: int, day: int | None) -> str | None:
    """The ISO form, or None for an impossible date ("31 June", "2023-08-00")."""
    try:
        when = date(year, month, 1 if day is None else day)
    except ValueError:
        return None
    return when.isoformat()[:7] if day is None else when.isoformat()


def iso_day(ms: int) -> str:
    """The UTC day of epoch milliseconds (YYYY-MM-DD): how days are stored and compared."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date().isoformat()


#: The earliest day a value can have been measured on: the day of `MIN_EPOCH_MS`, the floor of
#: every time a client states, so a stated day and a stated time share one floor.
EARLIEST_DAY = iso_day(MIN_EPOCH_MS)


def day_start_ms(day: str) -> int:
    """Epoch milliseconds of a YYYY-MM-DD day's start (UTC): where a dated value sorts among
    times."""
    return (
        int(datetime.combine(date.fromisoformat(day), datetime.min.time(), UTC).timestamp()) * 1000
    )


def measured_ms(observed_on: object, told_at: int) -> int:
    """When a value was measured: the start of its `observedOn` day where the conversation
    said (and the day is real: older versions stored what they were sent), else when it was
    told; a value dated the day it was told keeps the time it was told, so it sorts after one
    told earlier that day. A value told late about an earlier day sorts where it belongs."""
    if isinstance(observed_on, str) and is_real_day(observed_on) and observed_on != day_of(told_at):
        return day_start_ms(observed_on)
    return told_at


def after_today(day: str, now_ms: int) -> bool:
    """Whether a YYYY-MM-DD day is later than the teller's today (a day of slack: the
    teller's today may be ahead of UTC): no value can have been measured on it."""
    return day > iso_day(now_ms + DAY_MS)


def day_of(ms: int) -> str | None:
    """The UTC day of a stored time, or None for none or one past year 9999 (older versions
    accepted such times from clients)."""
    return iso_day(ms) if 0 < ms <= MAX_EPOCH_MS else None


def stored_day(ms: object) -> str | None:
    """The day of a stored time read from a document (any JSON value): None for none, or
    one past year 9999 (older versions let a client store those in a metric's history)."""
    return day_of(int(ms)) if isinstance(ms, int | float) else None


def is_real_day(text: str) -> bool:
    """Whether `text` is a YYYY-MM-DD day that exists (ASCII digits, a real month and day)."""
    if len(text) != len("yyyy-mm-dd") or not text.isascii():
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True
