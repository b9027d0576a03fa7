"""A metric's identity: its KPI in canonical form and the words that qualify it.

"Alpha cost per booking" and "Alpha CPA" are one measurement, "Alpha mobile CPA" is another:
the KPI words are folded to their canonical KPI (domain/vocab.py), and what is left of the
name once the KPI and the campaign are taken out is the qualifier, which must match too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from entity_memory.domain.kinds import MetricMetadata
from entity_memory.domain.text import normalize_name
from entity_memory.domain.vocab import KPI_SYNONYMS

_KPI_RES = [(re.compile(rf"(?<![\w-])(?:{p})(?![\w-])", re.I), kpi) for p, kpi in KPI_SYNONYMS]
#: Words that say nothing about which measurement it is.
_FILLER = frozenset({"the", "campaign", "avg", "average", "current", "overall", "of", "for", "on"})


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


def qualifier(name: str, owner_names: Iterable[str] = ()) -> frozenset[str]:
    """The words of a metric's name that are neither its KPI, nor its campaign, nor filler."""
    text = f" {normalize_name(name)} "
    for pattern, _ in _KPI_RES:
        text = pattern.sub(" ", text)
    for owner in sorted((normalize_name(o) for o in owner_names), key=len, reverse=True):
        if owner:
            text = text.replace(f" {owner} ", " ")
    return frozenset(w for w in text.split() if w not in _FILLER)
