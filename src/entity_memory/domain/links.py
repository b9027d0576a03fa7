"""Which campaigns an entity is about, and which pain points a decision addresses, resolved
to ids when it is written.

Links come only from what is stored: a metric's `campaign`, a decision's `affectedEntities`,
a pain point's `relatedCampaigns`, each matched to a stored campaign by its name or an alias.
Where none is stated, a campaign named in the entity's own name ("Alpha CPA") is the evidence;
an entity that names no campaign stays unlinked. The ids go into the index entry (`links`),
so ranking brings a campaign's metrics and decisions along without reading their documents.
A name in a decision's `affectedEntities` that is no campaign's but a stored pain point's
(by name or alias, or as some of its words: "fake fills" for "Fake form fills", when no other
pain point has them all) is what the decision was meant to fix: its id goes into `addresses`,
so a task about the pain point brings the decisions taken against it ("how was ... handled?").
A stated name that matches nothing yet is kept (`pendingLinks`, a few) and linked when a
campaign or pain point of that name is written; a name matched by its words alone stays
there too, in case it is a campaign's still to come.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from entity_memory.domain.kind import addressed_type, addresses, kind_of, link_target_type
from entity_memory.domain.models import BaseEntity, IndexEntry
from entity_memory.domain.text import normalize_name, tokenize
from entity_memory.domain.vocab import GENERIC_NAME_WORDS

#: Campaigns one entity links to, and unmatched names it keeps: bounded so entries stay small.
MAX_LINKS = 5
MAX_PENDING_LINKS = 3
#: Pain points one decision addresses.
MAX_ADDRESSES = 3
#: Distinct terms a stated problem needs before its words alone (not its whole name) may match
#: a pain point: one shared word ("form") says nothing about which problem is meant.
MIN_MATCHING_TERMS = 2
#: Longest campaign name, in words, looked for inside an entity's name.
_MAX_NAME_WORDS = 6


@lru_cache(maxsize=8192)
def campaign_key(name: str) -> str:
    """A campaign name as compared: normalised, without "campaign"/"the" around it. Cached:
    every write looks up every stored campaign's names, which rarely change."""
    words = normalize_name(name).split()
    while words and words[0] in GENERIC_NAME_WORDS:
        words = words[1:]
    while words and words[-1] in GENERIC_NAME_WORDS:
        words = words[:-1]
    return " ".join(words)


def stated_campaigns(entity: BaseEntity) -> list[str]:
    """The campaign names the entity's own fields state."""
    meta = getattr(entity, "metadata", None)
    names: list[str] = []
    for field in kind_of(entity.type).campaign_fields:
        value = getattr(meta, field, None)
        if isinstance(value, str):
            names += [value] if value else []
        elif value:
            names += list(value)
    return names


class EntityNames:
    """Every stored campaign's (or pain point's) name and aliases, by `campaign_key`, to its
    id."""

    def __init__(self, entries: Iterable[IndexEntry], entity_type: str | None = None) -> None:
        """`entity_type`: whose names (default: the campaigns', the kind others link to)."""
        entity_type = entity_type or link_target_type()
        self.ids: dict[str, str] = {}
        self.names: dict[str, list[str]] = {}
        for entry in entries:
            if entry.type != entity_type:
                continue
            for name in (entry.name, *entry.aliases):
                key = campaign_key(name)
                if key and key not in self.ids:
                    self.ids[key] = entry.id
                    self.names.setdefault(entry.id, []).append(key)

    def find(self, name: str) -> str | None:
        return self.ids.get(campaign_key(name))

    def named_in(self, text: str) -> str | None:
        """The campaign whose name or alias occurs in `text` as whole words (the longest)."""
        words = normalize_name(text).split()
        for size in range(min(_MAX_NAME_WORDS, len(words)), 0, -1):
            for start in range(len(words) - size + 1):
                found = self.ids.get(" ".join(words[start : start + size]))
                if found is not None:
                    return found
        return None

    def holding_words(self, name: str) -> set[str]:
        """The ids whose name or an alias holds every term of `name` (MIN_MATCHING_TERMS at
        least)."""
        wanted = _terms(campaign_key(name))
        if len(wanted) < MIN_MATCHING_TERMS:
            return set()
        return {entity_id for key, entity_id in self.ids.items() if wanted <= _terms(key)}


@lru_cache(maxsize=8192)
def _terms(name: str) -> frozenset[str]:
    """A name's matching terms. Cached: every write that states a problem compares it with
    every stored pain point's names, which rarely change."""
    return frozenset(tokenize(name))


@dataclass(frozen=True)
class PainMatch:
    """The pain point a stated name is, and whether by its whole name or an alias (else by
    some of its words, which a campaign still to come may have too)."""

    id: str
    exact: bool


def pain_named(name: str, pains: EntityNames, among: EntityNames | None = None) -> PainMatch | None:
    """The pain point `name` names: its name or alias, else the only one holding all its
    words. `among` (default: all) limits where it may be found, not whose words count."""
    found = (among or pains).find(name)
    if found is not None:
        return PainMatch(found, exact=True)
    held = (among or pains).holding_words(name)
    if len(held) != 1 or (among is not None and pains.holding_words(name) != held):
        return None
    return PainMatch(held.pop(), exact=False)


@dataclass(frozen=True)
class Links:
    """What one written entity is linked to."""

    campaigns: list[str]
    #: Stated names nothing matched yet (normalised).
    pending: list[str]
    #: The pain points a decision addresses.
    addresses: list[str]


def links_of(entity: BaseEntity, names: EntityNames, pains: EntityNames | None = None) -> Links:
    """The campaigns `entity` is about, the pain points it addresses (a decision; `pains`
    names the stored ones) and the stated names nothing matched."""
    kind = kind_of(entity.type)
    if not kind.campaign_fields:
        return Links([], [], [])
    ids: list[str] = []
    pending: list[str] = []
    addresses: list[str] = []
    for name in stated_campaigns(entity):
        found = names.find(name)
        pain = None
        if found is None and pains is not None and kind.addresses_pain_points:
            pain = pain_named(name, pains)
        if found is not None and found not in ids:
            ids.append(found)
        if pain is not None and pain.id not in addresses:
            addresses.append(pain.id)
        unmatched = found is None and (pain is None or not pain.exact)
        if unmatched and campaign_key(name) not in ("", *pending):
            pending.append(campaign_key(name))
    if not ids:
        named = names.named_in(entity.name)
        if named is not None:
            ids.append(named)
    return Links(ids[:MAX_LINKS], pending[:MAX_PENDING_LINKS], addresses[:MAX_ADDRESSES])


def set_links(entry: IndexEntry, links: Links) -> None:
    entry.links = list(links.campaigns) or None
    entry.pending_links = list(links.pending) or None
    if _addresses(entry):
        entry.addresses = list(links.addresses) or None


def _addresses(entry: IndexEntry) -> bool:
    """Whether the entry's kind names the pain points it is meant to fix (a decision)."""
    return addresses(entry.type)


def link_entries(
    entries: Sequence[IndexEntry], written: Sequence[tuple[IndexEntry, BaseEntity]]
) -> None:
    """Set the links of the `written` entries (against every campaign and pain point in
    `entries`, the batch's own included), and link older entries whose pending names a
    written campaign or pain point now has."""
    names, pains = _campaign_and_pain_names(entries)
    for entry, entity in written:
        set_links(entry, links_of(entity, names, pains))
    target, pain = link_target_type(), addressed_type()
    campaigns = {entity.id for _, entity in written if entity.type == target}
    new_pains = EntityNames([e for e, _ in written if e.type == pain], pain)
    if not campaigns and not new_pains.ids:
        return
    for entry in entries:
        if entry.pending_links:
            _link_pending(entry, names, campaigns, pains, new_pains)


def _campaign_and_pain_names(entries: Sequence[IndexEntry]) -> tuple[EntityNames, EntityNames]:
    """The campaigns' and the pain points' names, in one pass over the index (every write
    makes both)."""
    target, pain = link_target_type(), addressed_type()
    campaigns: list[IndexEntry] = []
    pains: list[IndexEntry] = []
    for entry in entries:
        if entry.type == target:
            campaigns.append(entry)
        elif entry.type == pain:
            pains.append(entry)
    return EntityNames(campaigns, target), EntityNames(pains, pain)


def _link_pending(
    entry: IndexEntry,
    names: EntityNames,
    campaigns: set[str],
    pains: EntityNames,
    new_pains: EntityNames,
) -> None:
    """Link `entry`'s pending names that a written campaign (`campaigns`) or, for a
    decision, a written pain point (`new_pains`) now has."""
    pending = entry.pending_links or []
    found = [names.ids[k] for k in pending if names.ids.get(k) in campaigns]
    fixes: dict[str, PainMatch] = {}
    if new_pains.ids and _addresses(entry):
        fixes = {k: m for k in pending if (m := pain_named(k, pains, among=new_pains))}
    if not found and not fixes:
        return
    kept = [
        k
        for k in pending
        if names.ids.get(k) not in campaigns and (k not in fixes or not fixes[k].exact)
    ]
    addresses = [*(entry.addresses or []), *(m.id for m in fixes.values())]
    set_links(
        entry,
        Links(
            list(dict.fromkeys([*(entry.links or []), *found]))[:MAX_LINKS],
            kept,
            list(dict.fromkeys(addresses))[:MAX_ADDRESSES],
        ),
    )
