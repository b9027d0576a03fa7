"""Which campaigns an entity is about, resolved to campaign ids when it is written.

Links come only from what is stored: a metric's `campaign`, a decision's `affectedEntities`,
a pain point's `relatedCampaigns`, each matched to a stored campaign by its name or an alias.
Where none is stated, a campaign named in the entity's own name ("Alpha CPA") is the evidence;
an entity that names no campaign stays unlinked. The ids go into the index entry (`links`),
so ranking brings a campaign's metrics and decisions along without reading their documents.
A stated name that matches no campaign yet is kept (`pendingLinks`, a few) and linked when a
campaign of that name is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

from entity_memory.domain.models import (
    BaseEntity,
    DecisionMetadata,
    IndexEntry,
    MetricMetadata,
    PainPointMetadata,
)
from entity_memory.domain.text import normalize_name
from entity_memory.domain.vocab import GENERIC_NAME_WORDS

#: Campaigns one entity links to, and unmatched names it keeps: bounded so entries stay small.
MAX_LINKS = 5
MAX_PENDING_LINKS = 3
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
    if isinstance(meta, MetricMetadata):
        return [meta.campaign] if meta.campaign else []
    if isinstance(meta, DecisionMetadata):
        return list(meta.affected_entities)
    if isinstance(meta, PainPointMetadata):
        return list(meta.related_campaigns)
    return []


class CampaignNames:
    """Every stored campaign's name and aliases, by `campaign_key`, to its id."""

    def __init__(self, entries: Iterable[IndexEntry]) -> None:
        self.ids: dict[str, str] = {}
        self.names: dict[str, list[str]] = {}
        for entry in entries:
            if entry.type != "campaign":
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


def links_of(entity: BaseEntity, names: CampaignNames) -> tuple[list[str], list[str]]:
    """(the ids of the campaigns `entity` is about, the stated names no campaign matched)."""
    if entity.type in ("campaign", "preference"):
        return [], []
    ids: list[str] = []
    pending: list[str] = []
    for name in stated_campaigns(entity):
        found = names.find(name)
        if found is not None and found not in ids:
            ids.append(found)
        elif found is None and campaign_key(name) and campaign_key(name) not in pending:
            pending.append(campaign_key(name))
    if not ids:
        named = names.named_in(entity.name)
        if named is not None:
            ids.append(named)
    return ids[:MAX_LINKS], pending[:MAX_PENDING_LINKS]


def set_links(entry: IndexEntry, links: Sequence[str], pending: Sequence[str]) -> None:
    entry.links = list(links) or None
    entry.pending_links = list(pending) or None


def link_entries(
    entries: Sequence[IndexEntry], written: Sequence[tuple[IndexEntry, BaseEntity]]
) -> None:
    """Set the links of the `written` entries (against every campaign in `entries`, the batch's
    own included), and link older entries whose pending names a written campaign now has."""
    names = CampaignNames(entries)
    for entry, entity in written:
        set_links(entry, *links_of(entity, names))
    campaigns = {entity.id for _, entity in written if entity.type == "campaign"}
    if not campaigns:
        return
    for entry in entries:
        if not entry.pending_links:
            continue
        found = [names.ids[k] for k in entry.pending_links if names.ids.get(k) in campaigns]
        if found:
            kept = [k for k in entry.pending_links if names.ids.get(k) not in campaigns]
            set_links(entry, list(dict.fromkeys([*(entry.links or []), *found]))[:MAX_LINKS], kept)
