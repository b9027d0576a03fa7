"""A metric's identity: its KPI in canonical form and the words that qualify it.

"Alpha cost per booking" and "Alpha CPA" are one measurement, "Alpha mobile CPA" is another:
the KPI words are folded to their canonical KPI (domain/vocab.py), and what is left of the
name once the KPI and the campaign are taken out is the qualifier, which must match too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from entity_memory.domain.kinds import MetricMetadata
from entity_memory.domain.text import normalize_name, stem
from entity_memory.domain.vocab import KPI_SYNONYMS, NOT_ACQUISITIONS

#: "cost per <thing>": the thing a cost is per, what a CPA counts.
_COST_PER = re.compile(r"\bcost per ([a-z0-9]+)", re.I)
#: What every CPA counts, said generically: no particular thing ("cost per conversion" is a
#: plain CPA, comparable with any).
_GENERIC_COUNTS = frozenset({"acquisition", "action", "conversion", "result"})

_KPI_RES = [(re.compile(rf"(?<![\w-])(?:{p})(?![\w-])", re.I), kpi) for p, kpi in KPI_SYNONYMS]
#: Words that say nothing about which measurement it is ("account" and "total": of the whole
#: account, as a metric of no campaign is).
_FILLER = frozenset(
    {
        "the",
        "campaign",
        "avg",
        "average",
        "current",
        "overall",
        "of",
        "for",
        "on",
        "account",
        "total",
    }
)


def canonical_kpi(text: str) -> str | None:
    """The canonical KPI `text` names (the earliest one), or None."""
    found = [(m.start(), kpi) for pattern, kpi in _KPI_RES if (m := pattern.search(text))]
    return min(found)[1] if found else None


def metric_kpi(name: str, metadata: object) -> str | None:
    """A metric's canonical KPI, from its `kpi` field or else its name; None for any other
    type (what the index entry keeps and what resolution compares)."""
    if not isinstance(metadata, MetricMetadata):
        return None
    return canonical_kpi(metadata.kpi) or canonical_kpi(name)


def metric_counts(name: str, metadata: object, content: str = "") -> str | None:
    """What a CPA metric counts, from its name, `kpi` field or sentence; None for any other
    KPI or type."""
    if metric_kpi(name, metadata) != "CPA":
        return None
    return counted_thing(name, metadata.kpi, content)  # type: ignore[attr-defined]


def counted_thing(*texts: str) -> str | None:
    """What a cost per something counts ("booking" in "cost per bookings"), from the first of
    `texts` (a metric's name, its `kpi`, its sentence) that says; None when none says, or says
    it generically. Two CPAs that count different things ("cost per enquiry", "cost per
    booking") are different measurements, whatever the vocabulary folds them to."""
    for text in texts:
        for found in _COST_PER.finditer(text or ""):
            thing = stem(found.group(1).lower())
            if thing in _GENERIC_COUNTS or thing in NOT_ACQUISITIONS:
                continue
            return thing
    return None


def same_count(a: str | None, b: str | None) -> bool:
    """Two metrics' counted things agree: equal, or at least one unsaid (a plain "CPA" is a
    cost per whatever the campaign counts)."""
    return a is None or b is None or a == b


def qualifier(name: str, owner_names: Iterable[str] = ()) -> frozenset[str]:
    """The words of a metric's name that are neither its KPI, nor its campaign, nor filler."""
    text = f" {normalize_name(name)} "
    for pattern, _ in _KPI_RES:
        text = pattern.sub(" ", text)
    text = _COST_PER.sub(" ", text)  # what it counts is `counted_thing`, compared apart
    for owner in sorted((normalize_name(o) for o in owner_names), key=len, reverse=True):
        if owner:
            text = text.replace(f" {owner} ", " ")
    return frozenset(w for w in text.split() if w not in _FILLER)
