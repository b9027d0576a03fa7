"""What the index and the vector of an entity are made from.

Kept apart from storage (which only writes what it is given) and from ranking (which only
reads index entries): the index entry of an entity is the contract between the two.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from entity_memory.domain.kinds import MetricMetadata, PainPointMetadata
from entity_memory.domain.kpi import metric_counts, metric_kpi
from entity_memory.domain.links import link_entries
from entity_memory.domain.models import BaseEntity, EntityIndex, IndexEntry
from entity_memory.domain.ranking import keywords_for, name_term_count
from entity_memory.domain.task_dates import day_of, is_real_day

#: Metadata fields whose values are worth matching on.
_METADATA_TERMS = (
    "kpi",
    "campaign",
    "strategy",
    "status",
    "campaignId",
    "category",
    "value",
    "action",
)


def metadata_terms(entity: BaseEntity) -> list[str]:
    """Metadata values worth matching on (a KPI, a strategy, the campaign a metric belongs to)."""
    meta = entity.metadata.to_json_dict()  # type: ignore[attr-defined]
    return [str(meta[k]) for k in _METADATA_TERMS if isinstance(meta.get(k), str) and meta[k]]


#: Days an entry keeps (the newest): enough for "what was said on ...", small in the index.
MAX_DAYS = 3


def days_of(entity: BaseEntity) -> str | None:
    """The days the entity was said on (its provenance: the session's time for an extracted
    entity) or measured on (a metric's `observedOn`, current and in its history), newest
    first; only when it holds neither, the days of its first and last write."""
    days = {day for p in entity.provenance if p.at and (day := day_of(p.at))}
    meta = getattr(entity, "metadata", None)
    if isinstance(meta, MetricMetadata):
        measured = [h.observed_on for h in meta.history] + [meta.observed_on]
        days.update(day for day in measured if day and is_real_day(day))
    if not days:
        days = {day for at in (entity.created_at, entity.updated_at) if (day := day_of(at))}
    return " ".join(sorted(days, reverse=True)[:MAX_DAYS]) or None


def index_entry_for(entity: BaseEntity) -> IndexEntry:
    """The entity's entry, unlinked (`place_entries` and reindex link it)."""
    meta = getattr(entity, "metadata", None)
    keywords = keywords_for(entity.name, entity.aliases, entity.content, metadata_terms(entity))
    return IndexEntry(
        id=entity.id,
        type=entity.type,
        name=entity.name,
        importance=entity.importance,
        updated_at=entity.updated_at,
        version=entity.version,
        aliases=entity.aliases[:5],
        keywords=keywords,
        name_terms=name_term_count(entity.name, keywords),
        vec_key=embedding_key(entity),
        kpi=metric_kpi(entity.name, meta),
        counts=metric_counts(entity.name, meta, entity.content),
        resolved=True if isinstance(meta, PainPointMetadata) and meta.resolved else None,
        days=days_of(entity),
    )


def place_entries(
    index: EntityIndex, entities: Sequence[BaseEntity], vectors: dict[tuple[str, str], str]
) -> None:
    """Put (or replace) the entries of `entities` in `index`, with their vectors, then link
    them to the campaigns they are about (domain/links.py)."""
    positions = {(e.type, e.id): i for i, e in enumerate(index.entries)}
    written: list[tuple[IndexEntry, BaseEntity]] = []
    for entity in entities:
        entry = index_entry_for(entity)
        entry.vec = vectors.get((entity.type, entity.id))
        pos = positions.get((entity.type, entity.id))
        if pos is None:
            positions[(entity.type, entity.id)] = len(index.entries)
            index.entries.append(entry)
        else:
            index.entries[pos] = entry
        written.append((entry, entity))
    link_entries(index.entries, written)


def embedding_text(entity: BaseEntity) -> str:
    """What an entity's vector is made from: its name and aliases first, then its facts."""
    parts = [f"{entity.type.replace('_', ' ')}: {entity.name}", *entity.aliases[:5]]
    parts += metadata_terms(entity)
    parts.append(entity.content)
    return ". ".join(p for p in parts if p)


def embedding_key(entity: BaseEntity) -> str:
    """A short hash of `embedding_text(entity)`: equal keys, equal vectors (same model)."""
    return hashlib.sha256(embedding_text(entity).encode()).hexdigest()[:12]


def reusable_vectors(
    index: EntityIndex, entities: Sequence[BaseEntity]
) -> tuple[dict[tuple[str, str], str], list[BaseEntity]]:
    """(the index's vectors still true for `entities`, the entities to embed): a vector is kept
    when its entry's `vec_key` matches the entity's text now. Same model assumed (the store
    drops every vector of another model first)."""
    held = {(e.type, e.id): e for e in index.entries if e.vec and e.vec_key}
    reused: dict[tuple[str, str], str] = {}
    fresh: list[BaseEntity] = []
    for entity in entities:
        entry = held.get((entity.type, entity.id))
        if entry is not None and entry.vec and entry.vec_key == embedding_key(entity):
            reused[(entity.type, entity.id)] = entry.vec
        else:
            fresh.append(entity)
    return reused, fresh
