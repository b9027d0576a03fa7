"""Entity resolution: a mention of something already stored updates it, never duplicates it.

A candidate resolves to a stored entity of the same type by, in order: its normalised name or
a known alias, the campaign id in its metadata, a close fuzzy match, or (where embeddings are
on) a semantic neighbour found by `service.semantic_resolve`. Neither fuzzy nor semantic
matching ever crosses a KPI or a number ("Alpha CPA" is not "Alpha CPC", "Campaign 2" is not
"Campaign 3"), and a resolved candidate takes the stored name, keeping its own as an alias.
"""

from __future__ import annotations

from collections.abc import Sequence

from entity_memory.domain.keys import slug_for
from entity_memory.domain.models import EntityInputBase, IndexEntry
from entity_memory.domain.text import normalize_name, tokenize
from entity_memory.domain.vocab import CHANNEL_TERMS, KPI_TERMS

FUZZY_JACCARD = 0.75


#: Words that name the kind of thing, not the thing ("Campaign Alpha" is "Alpha").
_GENERIC = frozenset({"campaign", "the"})


def _terms(name: str) -> set[str]:
    terms = set(tokenize(name)) or set(normalize_name(name).split())
    return (terms - _GENERIC) or terms


def _compatible(ta: set[str], tb: set[str]) -> bool:
    def pinned(t: set[str]) -> set[str]:
        return {x for x in t if x in KPI_TERMS or any(ch.isdigit() for ch in x)}

    if pinned(ta) != pinned(tb):
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


class Resolver:
    """Resolves candidates against the user's index (and each other, within one batch)."""

    def __init__(self, entries: Sequence[IndexEntry]) -> None:
        self._by_type: dict[str, list[IndexEntry]] = {}
        for entry in entries:
            self._by_type.setdefault(entry.type, []).append(entry)

    def _find(
        self, item: EntityInputBase, neighbour: IndexEntry | None = None
    ) -> IndexEntry | None:
        candidates = self._by_type.get(item.type, [])  # type: ignore[attr-defined]
        names = {normalize_name(n) for n in (item.name, *item.aliases)}
        for entry in candidates:
            if names & {normalize_name(n) for n in (entry.name, *entry.aliases)}:
                return entry
        campaign_id = getattr(item.metadata, "campaign_id", None)  # type: ignore[attr-defined]
        if campaign_id:
            for entry in candidates:
                if entry.id == slug_for(campaign_id) or campaign_id in entry.aliases:
                    return entry
        for entry in candidates:
            if fuzzy_same(item.name, entry.name):
                return entry
        return neighbour

    def resolve(
        self, item: EntityInputBase, neighbour: IndexEntry | None = None
    ) -> tuple[EntityInputBase, IndexEntry | None]:
        """The item, rewritten onto the stored entity it names (if any), and that entity.

        `neighbour` is a stored entity the item is semantically close to; it is used only when
        nothing lexical matched."""
        entry = self._find(item, neighbour)
        if entry is None:
            # Later candidates in the same batch resolve to this one.
            self._by_type.setdefault(item.type, []).append(  # type: ignore[attr-defined]
                IndexEntry(
                    id=slug_for(item.name),
                    type=item.type,
                    name=item.name,  # type: ignore[attr-defined]
                    importance=item.importance,
                    updated_at=0,
                    aliases=list(item.aliases),
                )
            )
            return item, None
        aliases = list(item.aliases)
        if normalize_name(item.name) != normalize_name(entry.name):
            aliases.append(item.name)
        return item.model_copy(
            update={"id": entry.id, "name": entry.name, "aliases": aliases}
        ), entry
