"""Stage 4, resolve: each checked candidate onto what is stored (extraction/resolve.py by name,
alias, campaign id or fuzzy match; service/semantic_resolve.py by meaning), stamped with the
extractor in its provenance, and a novelty adjustment for the upsert."""

from __future__ import annotations

from collections.abc import Sequence

from entity_memory.domain.models import BaseEntity, EntityIndex, EntityInputBase, ProvenanceInput
from entity_memory.domain.text import tokenize
from entity_memory.embeddings.embedder import Embedder
from entity_memory.extraction.resolve import Resolver
from entity_memory.service.semantic_resolve import semantic_neighbours

#: Importance taken off a mention that adds nothing to what is stored (SPEC: novelty).
REPEAT_PENALTY = 0.15


def with_provenance(item: EntityInputBase, extractor: str) -> EntityInputBase:
    """Stamp the extractor on the item's provenance (one entry from its `source` if none)."""
    entries = list(item.provenance) or [ProvenanceInput(excerpt=item.source or "")]
    stamped = [e.model_copy(update={"extractor": e.extractor or extractor}) for e in entries]
    return item.model_copy(update={"provenance": stamped})


def novelty(old: BaseEntity | None, item: EntityInputBase) -> EntityInputBase:
    """A mention that only repeats what is stored is worth less than new information."""
    if old is None:
        return item
    if set(tokenize(item.content)) <= set(tokenize(old.content)):
        return item.model_copy(update={"importance": max(0.0, item.importance - REPEAT_PENALTY)})
    return item


async def resolve(
    inputs: Sequence[EntityInputBase],
    index: EntityIndex,
    embedder: Embedder | None,
    extractor: str,
) -> list[EntityInputBase]:
    resolver = Resolver(index.entries)
    near = await semantic_neighbours(embedder, index, list(inputs))
    return [
        with_provenance(resolver.resolve(item, neighbour)[0], extractor)
        for item, neighbour in zip(inputs, near, strict=True)
    ]
