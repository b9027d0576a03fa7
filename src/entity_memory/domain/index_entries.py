"""What the index and the vector of an entity are made from.

Kept apart from storage (which only writes what it is given) and from ranking (which only
reads index entries): the index entry of an entity is the contract between the two.
"""

from __future__ import annotations

from entity_memory.domain.models import BaseEntity, IndexEntry
from entity_memory.domain.ranking import keywords_for, name_term_count

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


def index_entry_for(entity: BaseEntity) -> IndexEntry:
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
    )


def embedding_text(entity: BaseEntity) -> str:
    """What an entity's vector is made from: its name and aliases first, then its facts."""
    parts = [f"{entity.type.replace('_', ' ')}: {entity.name}", *entity.aliases[:5]]
    parts += metadata_terms(entity)
    parts.append(entity.content)
    return ". ".join(p for p in parts if p)
