"""The stored entities of one type, looked up the ways resolution asks, without a scan.

Resolution asks, for each candidate, "the first stored entity (in index order) with this
name, alias, campaign id, KPI, or a fuzzily close name". Asked by scanning, a batch of `c`
candidates against `n` entries costs `c * n` comparisons, each re-tokenising a stored name:
a job's chunk against a 2,000-entry index took seconds of uninterrupted CPU, and a long job's
chunks grew slower as its own entities filled the index. Here each entry is filed once under
what it can match by, so a lookup reads only the entries that could match, and still answers
the first one in index order (the scan's answer).

A fuzzy match (extraction/resolve.py `fuzzy_same`) needs both names to pin the same KPI and
number terms and to share at least one term (a Jaccard of 0.75, or one name's terms inside
the other's), so entries are filed by (pinned terms, term).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from entity_memory.domain.models import IndexEntry
from entity_memory.domain.text import normalize_name

K = TypeVar("K")

#: The pinned terms and all terms of a name (extraction/resolve.py's `_terms` and `pinned`).
Terms = Callable[[str], tuple[frozenset[str], frozenset[str]]]


class TypeEntries:
    """One type's entries in index order, filed for lookup; `add` files a new one last."""

    def __init__(self, terms: Terms) -> None:
        self._terms = terms
        self.entries: list[IndexEntry] = []
        self._by_name: dict[str, int] = {}
        self._by_id: dict[str, int] = {}
        self._by_alias: dict[str, int] = {}
        self._by_kpi: dict[str, list[int]] = {}
        self._by_term: dict[tuple[frozenset[str], str], list[int]] = {}

    def add(self, entry: IndexEntry) -> None:
        at = len(self.entries)
        self.entries.append(entry)
        for name in (entry.name, *entry.aliases):
            self._by_name.setdefault(normalize_name(name), at)
        for alias in entry.aliases:
            self._by_alias.setdefault(alias, at)
        self._by_id.setdefault(entry.id, at)
        self._by_kpi.setdefault(entry.kpi or "", []).append(at)
        pinned, terms = self._terms(entry.name)
        for term in terms:
            self._by_term.setdefault((pinned, term), []).append(at)

    def named(self, names: Iterable[str]) -> IndexEntry | None:
        """The first entry whose normalised name or alias is one of `names` (normalised)."""
        return self._first(_positions(self._by_name, names))

    def with_campaign_id(self, campaign_id: str, slug: str) -> IndexEntry | None:
        """The first entry whose id is `slug` or that has `campaign_id` as an alias."""
        found = _positions(self._by_id, (slug,)) + _positions(self._by_alias, (campaign_id,))
        return self._first(found)

    def with_id(self, entity_id: str) -> IndexEntry | None:
        return self._first(_positions(self._by_id, (entity_id,)))

    def with_kpi(self, kpi: str | None) -> list[IndexEntry]:
        """The entries measuring `kpi` (None: those of no canonical KPI), in index order."""
        return [self.entries[i] for i in self._by_kpi.get(kpi or "", [])]

    def fuzzy_candidates(self, name: str) -> list[IndexEntry]:
        """The entries that could fuzzily match `name` (same pinned terms, a term shared), in
        index order; the caller applies the match itself."""
        pinned, terms = self._terms(name)
        found: set[int] = set()
        for term in terms:
            found.update(self._by_term.get((pinned, term), ()))
        return [self.entries[i] for i in sorted(found)]

    def _first(self, positions: list[int]) -> IndexEntry | None:
        return self.entries[min(positions)] if positions else None


def _positions(table: dict[K, int], keys: Iterable[K]) -> list[int]:
    return [table[k] for k in keys if k in table]
