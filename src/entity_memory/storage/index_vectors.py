"""The vectors of an index's entries: which are still true, which texts need one, and how a
new vector joins the index (centred on its running mean, packed to sign bits).

Kept apart from the store's KV I/O: these functions only read and change an `EntityIndex` in
memory, and call the embedder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from entity_memory.domain.index_entries import embedding_key, embedding_text, reusable_vectors
from entity_memory.domain.keys import Ref
from entity_memory.domain.models import BaseEntity, EntityIndex
from entity_memory.embeddings.embedder import Embedder
from entity_memory.embeddings.vectors import centred, pack_signs, running_mean


def drop_vectors(index: EntityIndex) -> None:
    """Remove every entry's vector (another model's), replacing entries rather than changing
    them: they may be shared with the parsed index the user's writer keeps."""
    index.entries = [e.model_copy(update={"vec": None}) if e.vec else e for e in index.entries]


def same_model(embedder: Embedder | None, index: EntityIndex) -> bool:
    """Whether embeddings are on; an index whose vectors came from another model drops them
    all first: two models' spaces are never compared."""
    if embedder is None:
        return False
    if index.vector_model != embedder.model.name:
        drop_vectors(index)
        index.vector_model, index.vector_center, index.vector_count = embedder.model.name, None, 0
    return True


def held(
    embedder: Embedder | None, index: EntityIndex, entities: Sequence[BaseEntity]
) -> tuple[dict[Ref, str], list[Ref]]:
    """(the vectors still true for `entities`, the entities whose text needs one)."""
    if not entities or not same_model(embedder, index):
        return {}, []
    reused, fresh = reusable_vectors(index, entities)
    return reused, [(e.type, e.id) for e in fresh]


async def vectors_for(
    embedder: Embedder | None, index: EntityIndex, entities: Sequence[BaseEntity]
) -> dict[Ref, str]:
    """Packed vectors of `entities`, embedding only the texts that changed, in one batched
    call; {} when embeddings are off, the vectors still true when the model failed."""
    if embedder is None or not entities or not same_model(embedder, index):
        return {}
    reused, fresh = reusable_vectors(index, entities)
    if not fresh:
        return reused
    found = await embedder.try_embed([embedding_text(e) for e in fresh], "passage")
    if found is None:
        return reused
    return reused | packed(index, fresh, found)


def packed(
    index: EntityIndex, entities: Sequence[BaseEntity], found: Sequence[list[float]]
) -> dict[Ref, str]:
    """The sign bits of each new vector, centred on the index's mean (which they join)."""
    index.vector_center, index.vector_count = running_mean(
        index.vector_center, index.vector_count, found
    )
    center = index.vector_center
    return {
        (e.type, e.id): pack_signs(centred(v, center)) for e, v in zip(entities, found, strict=True)
    }


def needing(
    embedder: Embedder,
    index: EntityIndex,
    found: Sequence[BaseEntity | None],
    refs: Sequence[Ref],
) -> tuple[list[BaseEntity], list[Ref]]:
    """(the entities `found` for `refs` whose entry lacks the vector of their text now, the
    refs with nothing to embed): a ref whose entity is gone or no longer indexed, or whose
    entry was given the vector of its text since (a reindex, a text changed back), costs no
    model call."""
    entries = {(e.type, e.id): e for e in index.entries}
    usable = index.vector_model == embedder.model.name
    todo: list[BaseEntity] = []
    done: list[Ref] = []
    for ref, entity in zip(refs, found, strict=True):
        entry = entries.get(ref)
        if entity is None or entry is None:
            done.append(ref)
        elif usable and entry.vec is not None and entry.vec_key == embedding_key(entity):
            done.append(ref)  # given the vector of this text since
        else:
            todo.append(entity)
    return todo, done


def apply(
    embedder: Embedder,
    index: EntityIndex,
    now: Mapping[Ref, BaseEntity],
    made: Sequence[tuple[BaseEntity, list[float]]],
) -> tuple[list[Ref], bool]:
    """Give `index`'s entries the vectors `made` from entities as they read when embedded;
    (the refs settled, whether an entry changed). An entity whose text has changed since is
    not settled (its new text needs a vector); one that is gone, no longer indexed, or whose
    index now holds another model's vectors is settled with nothing to do."""
    positions = {(e.type, e.id): i for i, e in enumerate(index.entries)}
    usable = index.vector_model == embedder.model.name
    current: list[tuple[BaseEntity, list[float]]] = []
    settled: list[Ref] = []
    for then, vector in made:
        ref = (then.type, then.id)
        entity = now.get(ref)
        if entity is not None and embedding_key(entity) != embedding_key(then):
            continue
        settled.append(ref)
        if entity is not None and ref in positions and usable:
            current.append((entity, vector))
    if not current:
        return settled, False
    vectors = packed(index, [e for e, _ in current], [v for _, v in current])
    for entity, _ in current:
        ref = (entity.type, entity.id)
        # A new entry, not a changed one: entries may be shared with the held copy.
        index.entries[positions[ref]] = index.entries[positions[ref]].model_copy(
            update={"vec": vectors[ref], "vec_key": embedding_key(entity)}
        )
    return settled, True
