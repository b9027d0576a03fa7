"""Retrieval for a task (SPEC retrieveForContext): rank the index, then bulk-get the chosen.

Ranking itself is domain/ranking.py over index entries; this is the use case around it: the
index read, the one semantic call, the entity reads, and what to do with entries whose
entity expired (see service/expiry.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from entity_memory.domain.keys import entity_key
from entity_memory.domain.models import BaseEntity, RankIndex
from entity_memory.domain.ranking import Score, signals
from entity_memory.domain.selection import choose
from entity_memory.embeddings.embedder import Embedder
from entity_memory.embeddings.status import LexicalReason
from entity_memory.embeddings.vectors import (
    MIN_ENTRIES_FOR_SEMANTIC,
    QueryPlanes,
    centred,
    rescale,
    unpack_signs,
)
from entity_memory.service.expiry import ReportExpired, expired_entries, forget_expired
from entity_memory.storage.store import EntityStore

Similarity = tuple[list[float | None] | None, LexicalReason | None]
#: Each entry's semantic similarity to a task, or None and why not (a bench swaps variants).
SemanticStep = Callable[[Embedder | None, RankIndex, str], Awaitable[Similarity]]


@dataclass
class Retrieval:
    entities: list[BaseEntity]
    scores: list[Score]
    #: Why ranking was lexical only; None when the semantic channel took part.
    lexical_reason: LexicalReason | None = None
    #: How many entities reached the relevance floor (domain/selection.py).
    relevant: int = 0
    #: "important_recent" when nothing was relevant to the task; None otherwise.
    fallback: str | None = None
    #: (type, id) -> the ids of the campaigns it is linked to, for the chosen entities.
    links: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    #: decision id -> the ids of the chosen pain points it addresses.
    addresses: dict[str, list[str]] = field(default_factory=dict)


async def semantic_similarity(embedder: Embedder | None, index: RankIndex, task: str) -> Similarity:
    """Each entry's semantic similarity to the task (one AI call), or None and why not."""
    if embedder is None:
        return None, "off"
    signs = [None if e.vec is None else unpack_signs(e.vec) for e in index.entries]
    count = len(signs) - signs.count(None)
    if index.vector_model != embedder.model.name and count:
        return None, "other_model"
    if count < MIN_ENTRIES_FOR_SEMANTIC:
        return None, "few_vectors"
    found = await embedder.try_embed([task], "query")
    if not found:
        return None, "model_failed"
    planes = QueryPlanes.of(centred(found[0], index.vector_center))
    return rescale(planes.cosines(signs)), None


async def retrieve_for_context(
    store: EntityStore,
    user_id: str,
    task: str,
    limit: int = 20,
    *,
    report_expired: ReportExpired | None = None,
    semantic: SemanticStep = semantic_similarity,
) -> Retrieval:
    """Rank the index for `task`, choose what the task needs (domain/selection.py), then
    bulk-get the chosen entities.

    Entities whose KV document has expired are left out of the answer; their entries are
    dropped here, or handed to `report_expired` when another (the user's writer) owns the
    index.
    """
    index = await store.read_index_shared(user_id)
    if not index.entries or limit <= 0:
        return Retrieval([], [], None if store.embedder else "off")
    similarity, reason = await semantic(store.embedder, index, task)
    picked = choose(signals(index.entries, task, store.clock(), similarity), limit)
    chosen = picked.scores
    keys = [entity_key(user_id, s.type, s.id) for s in chosen]
    found = await store.get_many(keys)
    entities: list[BaseEntity] = []
    scores: list[Score] = []
    for key, score in zip(keys, chosen, strict=True):
        entity = found.get(key)
        if entity is not None:
            entities.append(entity)
            scores.append(score)
    missing = {(s.type, s.id) for key, s in zip(keys, chosen, strict=True) if not found[key]}
    expired = expired_entries(store, index.entries, missing)
    if expired and report_expired is None:  # no writer: this request owns the index
        await forget_expired(store, user_id, {(e.type, e.id) for e in expired})
    elif expired and report_expired is not None:
        await report_expired(user_id, sorted((e.type, e.id) for e in expired))
    return Retrieval(
        entities,
        scores,
        reason,
        picked.relevant,
        picked.fallback,
        picked.links,
        picked.addresses,
    )
