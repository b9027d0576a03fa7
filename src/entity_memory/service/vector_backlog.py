"""Vectors made after the answer: the texts a write changed, which the user's writer embeds
next, in its alarm and outside its lock.

Embedding is the costly part of a write (a 20-entity PUT at 2k entities took ~1.2 s with the
local model inline, ~0.23 s without), and the caller (an agent's hook, a bulk upload) waits
for the answer, not for the vectors. So a PUT stores and indexes its entities at once, where
they rank by their words (an updated entity keeps the vector of its previous text, close to
the new one), and lists them here; `WriterHost.embed_backlog` then embeds them in batched
calls and gives the entries their vectors. The list is a row of the writer's own storage,
written with the index's row: a crash or an eviction between the answer and the embedding
loses nothing, the next alarm (or the user's next write, which sets it again) finds it.
Extraction jobs embed inline (they already run off the request path, in the alarm).
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from entity_memory.domain.keys import Ref, entity_key
from entity_memory.domain.models import BaseEntity
from entity_memory.embeddings.embedder import Embedder
from entity_memory.storage import index_vectors
from entity_memory.storage.local_table import LocalTable, Row
from entity_memory.storage.store import EntityStore

#: The writer's row holding the backlog (one user per writer).
BACKLOG_KEY = "writer:vectors-pending"
#: Refs read, embedded and applied per step of a pass: a 20-entity write's texts in one
#: step (one index write), a bulk upload's backlog in steps that let the user's writes take
#: turns. The model calls within a step are as small as the model wants
#: (`EmbeddingModel.texts_per_call`: the local server's are a few texts, so a context
#: request's query waits behind one of them, not behind the step).
BACKLOG_BATCH = 20
#: Steps one alarm runs before it hands the rest to the next alarm (500 refs): each step
#: rewrites the index, and the platform bounds an alarm's CPU time per invocation.
BACKLOG_STEPS_PER_ALARM = 25
#: How soon KV's index has the vectors when no write flushes them first: the pass does not
#: flush on its own, or the next write would wait out KV's one write a second behind it.
VECTORS_FLUSH_WITHIN_MS = 5_000
#: How soon the alarm tries again when the embedding model failed.
BACKLOG_RETRY_MS = 60_000


class Backlog(BaseModel):
    model_config = ConfigDict(frozen=True)

    user_id: str
    #: (type, id) of each entity whose index entry awaits the vector of its current text.
    refs: list[Ref]


class VectorBacklog:
    """The backlog row of one writer's table. Every change runs inside the writer's lock
    (a write adds, the embedding pass settles), so no ref is dropped by a race; erasure
    clears it with the whole table, and nothing here keeps a copy in memory that
    could write it back."""

    def __init__(self, table: LocalTable) -> None:
        self.table = table

    def get(self) -> Backlog | None:
        row = self.table.get(BACKLOG_KEY)
        if row is None or row.value is None:
            return None
        return Backlog.model_validate_json(row.value)

    def waiting(self) -> bool:
        """Whether any ref awaits its vector (without parsing the row)."""
        row = self.table.get(BACKLOG_KEY)
        return row is not None and row.value is not None

    def add(self, user_id: str, refs: Sequence[Ref]) -> None:
        held = self.get()
        known = [] if held is None or held.user_id != user_id else held.refs
        self._save(Backlog(user_id=user_id, refs=list(dict.fromkeys([*known, *refs]))))

    def settle(self, refs: Sequence[Ref]) -> None:
        """Drop `refs` (embedded, or gone); the row goes when nothing is left."""
        held = self.get()
        if held is None:
            return
        done = set(refs)
        left = [r for r in held.refs if r not in done]
        if left:
            self._save(held.model_copy(update={"refs": left}))
        else:
            self.table.put(BACKLOG_KEY, Row(None, None, None))

    def _save(self, backlog: Backlog) -> None:
        self.table.put(BACKLOG_KEY, Row(backlog.model_dump_json(), None, None))


# --- the two steps of a pass that run under the writer's lock ------------------------------


async def to_embed(
    store: EntityStore, embedder: Embedder, user_id: str, refs: Sequence[Ref]
) -> tuple[list[BaseEntity], list[Ref]]:
    """(the entities of `refs` whose index entry lacks the vector of their text now, the
    refs with nothing to embed: gone, no longer indexed, or given that vector since)."""
    index = await store.read_index(user_id)
    keys = [entity_key(user_id, kind, id_) for kind, id_ in refs]
    found = await store.get_many(keys)
    return index_vectors.needing(embedder, index, [found.get(k) for k in keys], refs)


async def apply_vectors(
    store: EntityStore,
    embedder: Embedder,
    user_id: str,
    made: Sequence[tuple[BaseEntity, list[float]]],
) -> list[Ref]:
    """Give the index entries the vectors embedded, outside the lock, from the entities in
    `made`, where the text is still the one embedded (`index_vectors.apply`); the refs
    settled. One index write, none when no entry changed (after an erasure, nothing is
    found in the writer's emptied copy, so nothing is written back)."""
    if not made:
        return []
    index = await store.read_index(user_id)
    found = await store.get_many([entity_key(user_id, e.type, e.id) for e, _ in made])
    now = {(e.type, e.id): e for e in found.values() if e is not None}
    settled, changed = index_vectors.apply(embedder, index, now, made)
    if changed:
        await store.write_index(user_id, index)
    return settled
