"""Entity resolution: a mention of something already stored updates it, never duplicates it.

A candidate resolves to a stored entity of the same type by, in order: its normalised name or
a known alias, the campaign id in its metadata, for a metric the same measurement (the same
canonical KPI of the same campaign with the same qualifying words and, for a CPA, the same
counted thing where both say one: "Alpha cost per booking" is "Alpha CPA", never "Alpha cost per
enquiry", domain/kpi.py; a campaign named in a short form is the only one holding its words), a
close fuzzy match (never for a metric: a measurement is one by KPI, owner and qualifier), for a
campaign the only one whose name holds every word of the candidate's
(two at least: a short form of its name), or (where embeddings are on) a semantic
neighbour found by `service.semantic_resolve`. Neither fuzzy nor semantic
matching ever crosses a KPI or a number ("Alpha CPA" is not "Alpha CPC", "Campaign 2" is not
"Campaign 3"), and a resolved candidate takes the stored name, keeping its own as an alias,
unless it renames the entity: a candidate that gives the stored name as an alias of a new name
that names nothing stored (a model's way to report a renamed campaign) keeps its new name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from entity_memory.domain.keys import slug_for
from entity_memory.domain.kinds import CAMPAIGN, METRIC, MetricMetadata
from entity_memory.domain.kpi import metric_counts, metric_kpi, qualifier, same_count
from entity_memory.domain.links import MIN_MATCHING_TERMS, EntityNames, campaign_key
from entity_memory.domain.models import EntityInputBase, IndexEntry
from entity_memory.domain.text import costs_per_thing, normalize_name, tokenize
from entity_memory.domain.vocab import CHANNEL_TERMS, GENERIC_NAME_WORDS, KPI_TERMS
from entity_memory.extraction.name_lookup import TypeEntries

FUZZY_JACCARD = 0.75


@lru_cache(maxsize=16384)
def _terms(name: str) -> frozenset[str]:
    """Cached: resolution compares each candidate with many stored names.

    Ranking reads "cost per <thing>" as "<thing> cpa" (domain/vocab.py); as a name it is not
    a bare CPA, so its KPI word "cost" is kept here: "Alpha cost per trial" is not "Alpha CPA".
    """
    terms = frozenset(tokenize(name)) or frozenset(normalize_name(name).split())
    if costs_per_thing(name):
        terms |= {"cost"}
    return (terms - GENERIC_NAME_WORDS) or terms


def _pinned(t: frozenset[str]) -> frozenset[str]:
    """The terms no two names may differ in: KPIs and numbers."""
    return frozenset(x for x in t if x in KPI_TERMS or any(ch.isdigit() for ch in x))


@lru_cache(maxsize=16384)
def pinned_terms(name: str) -> tuple[frozenset[str], frozenset[str]]:
    """(the pinned terms, all the terms) of a name, as `TypeEntries` files it."""
    terms = _terms(name)
    return _pinned(terms), terms


def _compatible(ta: frozenset[str], tb: frozenset[str]) -> bool:
    if _pinned(ta) != _pinned(tb):
        return False
    ca, cb = ta & CHANNEL_TERMS, tb & CHANNEL_TERMS
    return not (ca and cb and ca != cb)


def compatible_names(a: str, b: str) -> bool:
    """No conflicting KPI, number or channel between two names."""
    return _compatible(_terms(a), _terms(b))


def fuzzy_same(a: str, b: str) -> bool:
    ta, tb = _terms(a), _terms(b)
    if not ta or not tb or not _compatible(ta, tb):
        return False
    rest_a, rest_b = ta - CHANNEL_TERMS, tb - CHANNEL_TERMS
    small, large = sorted((rest_a, rest_b), key=len)
    if len(small) >= 2 and small <= large:
        return True
    return len(ta & tb) / len(ta | tb) >= FUZZY_JACCARD


def _closest(name: str, candidates: Sequence[IndexEntry]) -> IndexEntry | None:
    """The fuzzy match of `name` closest in words, the first in index order among equals;
    None when two differ from it as much ("North Hazel Jars" and "South Hazel Jars" for
    "hazel jars": it is not known which one)."""
    scored = [(_overlap(name, e.name), e) for e in candidates if fuzzy_same(name, e.name)]
    if not scored:
        return None
    best = max(score for score, _ in scored)
    top = [e for score, e in scored if score == best]
    return top[0] if best == 1.0 or len(top) == 1 else None


def _overlap(a: str, b: str) -> float:
    ta, tb = _terms(a), _terms(b)
    return len(ta & tb) / len(ta | tb)


def campaign_called(stated: str, names: EntityNames) -> str:
    """The id of the campaign a stated name names: its name or an alias, else the only
    campaign whose name holds every word of it ("Winter Shoes" for "Winter Shoes - Search",
    two words at least); else the stated name itself (no such campaign yet)."""
    found = names.find(stated)
    if found is not None:
        return found
    held = names.holding_words(stated)
    return held.pop() if len(held) == 1 else campaign_key(stated)


def _owner_of(entry: IndexEntry, names: EntityNames) -> str | None:
    """The campaign a stored metric is about: its link, else the name it stated."""
    if entry.links:
        return entry.links[0]
    return campaign_called(entry.pending_links[0], names) if entry.pending_links else None


def same_owner(a: str | None, b: str | None, names: EntityNames) -> bool:
    """Two metrics' campaigns are one: the same id, or, where one names no stored campaign
    yet (a short or a long form of a name written before the campaign was), the words of one
    are all in the other's, two at least ("Tulip Bulbs" and "Spring Tulip Bulbs"). Two stored
    campaigns are never one."""
    if a == b:
        return True
    if a is None or b is None or (a in names.names and b in names.names):
        return False
    ta, tb = (set((names.names.get(x) or [x])[0].split()) for x in (a, b))
    small, large = sorted((ta, tb), key=len)
    return len(small) >= MIN_MATCHING_TERMS and small <= large


class Resolver:
    """Resolves candidates against the user's index (and each other, within one batch).

    Each type's entries are filed once (`TypeEntries`), so resolving a candidate reads only
    the entries it could match: a batch costs about its own size, not its size times the
    index's."""

    def __init__(self, entries: Sequence[IndexEntry]) -> None:
        self._by_type: dict[str, TypeEntries] = {}
        self._campaign_names: EntityNames | None = None
        for entry in entries:
            self._file(entry)

    def _file(self, entry: IndexEntry) -> None:
        if entry.type not in self._by_type:
            self._by_type[entry.type] = TypeEntries(pinned_terms)
        self._by_type[entry.type].add(entry)
        if entry.type == CAMPAIGN.type:
            self._campaign_names = None

    def _campaigns(self) -> EntityNames:
        """The campaigns' names, built once per batch (again after a new campaign)."""
        if self._campaign_names is None:
            found = self._by_type.get(CAMPAIGN.type)
            self._campaign_names = EntityNames(found.entries if found else [])
        return self._campaign_names

    def _find(
        self, item: EntityInputBase, neighbour: IndexEntry | None = None
    ) -> IndexEntry | None:
        stored = self._by_type.get(item.type)  # type: ignore[attr-defined]
        if stored is None:
            return neighbour
        # Its own name first: an alias may name another stored entity (a renamed campaign's
        # old name).
        entry = stored.named({normalize_name(item.name)}) or stored.named(
            {normalize_name(n) for n in item.aliases}
        )
        if entry is not None:
            return entry
        campaign_id = getattr(item.metadata, "campaign_id", None)  # type: ignore[attr-defined]
        if campaign_id:
            entry = stored.with_campaign_id(campaign_id, slug_for(campaign_id))
            if entry is not None:
                return entry
        if item.type == METRIC.type:  # type: ignore[attr-defined]
            # A measurement is one by KPI, owner and qualifier, never by looks: "Alpha
            # bookings" is not "Alpha phone bookings", nor "Alpha weekly bookings".
            kpi = metric_kpi(item.name, item.metadata)  # type: ignore[attr-defined]
            return self._same_measurement(item, kpi, stored) or neighbour
        close = _closest(item.name, stored.fuzzy_candidates(item.name))
        if close is not None:
            return close
        if item.type == CAMPAIGN.type:  # type: ignore[attr-defined]
            held = self._campaigns().holding_words(item.name)
            if len(held) == 1:
                # A short form of one campaign's name ("hazel jars" for "Autumn Hazel Jars"),
                # as its metrics' campaign is read (`campaign_called`).
                return stored.with_id(held.pop()) or neighbour
        return neighbour

    def _owner(self, item: EntityInputBase, names: EntityNames) -> str | None:
        """The campaign a metric candidate is about: the id its `campaign` names, else that
        name itself (no such campaign yet), else a campaign its own name names; None: none."""
        stated = item.metadata.campaign  # type: ignore[attr-defined]
        if stated:
            return campaign_called(stated, names)
        return names.named_in(item.name)

    def _same_measurement(
        self, item: EntityInputBase, kpi: str | None, stored: TypeEntries
    ) -> IndexEntry | None:
        """A stored metric measuring the same thing (`kpi` is its canonical KPI, None for a
        KPI the vocabulary does not fold, whose words are then all in the qualifier): the
        KPI, owner and qualifier."""
        names = self._campaigns()
        owner = self._owner(item, names)
        owned = [*names.names.get(owner or "", []), owner or ""]
        # A campaign's own words are no qualifier, whichever short form of its name is used.
        known = [*owned, *(word for name in owned for word in name.split())]
        wanted = qualifier(item.name, known)
        counts = metric_counts(item.name, item.metadata, item.content)  # type: ignore[attr-defined]
        found = [
            entry
            for entry in stored.with_kpi(kpi)
            if same_owner(_owner_of(entry, names), owner, names)
            and qualifier(entry.name, known) == wanted
            and same_count(counts, entry.counts)
        ]
        # The one that counts the same thing, where one says so, before a plain one.
        found.sort(key=lambda entry: entry.counts != counts)
        return found[0] if found else None

    def _entry_of(self, item: EntityInputBase) -> IndexEntry:
        """What the index will hold for a new candidate, as far as resolution reads it."""
        entry = IndexEntry(
            id=slug_for(item.name),
            type=item.type,  # type: ignore[attr-defined]
            name=item.name,
            importance=item.importance,
            updated_at=0,
            aliases=list(item.aliases),
        )
        entry.kpi = metric_kpi(item.name, getattr(item, "metadata", None))
        entry.counts = metric_counts(item.name, getattr(item, "metadata", None), item.content)
        if entry.kpi is not None:
            owner = self._owner(item, self._campaigns())
            entry.links = [owner] if owner else None
        return entry

    def find_lexically(self, item: EntityInputBase) -> IndexEntry | None:
        """The stored entity the item names by name, alias, campaign id, measurement or a
        close fuzzy match (no meaning)."""
        return self._find(item)

    def resolve(
        self, item: EntityInputBase, neighbour: IndexEntry | None = None
    ) -> tuple[EntityInputBase, IndexEntry | None]:
        """The item, rewritten onto the stored entity it names (if any), and that entity.

        `neighbour` is a stored entity the item is semantically close to; it is used only when
        nothing lexical matched."""
        item = self._with_full_campaign(item)
        entry = self._find(item, neighbour)
        if entry is None:
            # Later candidates in the same batch resolve to this one.
            self._file(self._entry_of(item))
            return item, None
        if self._renames(item, entry):
            return item.model_copy(update={"id": entry.id}), entry
        aliases = list(item.aliases)
        if normalize_name(item.name) != normalize_name(entry.name):
            aliases.append(item.name)
        return item.model_copy(
            update={"id": entry.id, "name": entry.name, "aliases": aliases}
        ), entry

    def _with_full_campaign(self, item: EntityInputBase) -> EntityInputBase:
        """A metric whose campaign is stated in another form of a stored campaign's name (a
        short form, an alias) names that campaign as it is stored: in its `campaign`, and in
        its own name where that holds the form stated ("elm boxes CPA" becomes "Spring Elm
        Boxes CPA", its first name kept as an alias)."""
        meta = item.metadata  # type: ignore[attr-defined]
        stated = meta.campaign if isinstance(meta, MetricMetadata) else None
        campaigns = self._by_type.get(CAMPAIGN.type)
        if not stated or campaigns is None:
            return item
        entry = campaigns.with_id(campaign_called(stated, self._campaigns()))
        if entry is None or campaign_key(entry.name) == campaign_key(stated):
            return item
        meta = meta.model_copy(update=dict(campaign=entry.name))
        name = re.sub(re.escape(stated.strip()), entry.name, item.name, count=1, flags=re.I)
        aliases = [*item.aliases, item.name] if name != item.name else list(item.aliases)
        return item.model_copy(update={"metadata": meta, "name": name, "aliases": aliases})

    def _renames(self, item: EntityInputBase, entry: IndexEntry) -> bool:
        """The item renames the stored entity: it gives the stored name as an alias of a new
        name, not a variant of it, that names nothing stored ("Spring Sale, formerly Winter
        Clearance"). It keeps the entity's id and history under its new name; the old one
        becomes an alias."""
        new = normalize_name(item.name)
        if new == normalize_name(entry.name) or fuzzy_same(item.name, entry.name):
            return False  # the same name written otherwise ("Brand Search campaign")
        if normalize_name(entry.name) not in {normalize_name(a) for a in item.aliases}:
            return False
        stored = self._by_type.get(item.type)  # type: ignore[attr-defined]
        return stored is None or stored.named({new}) is None
