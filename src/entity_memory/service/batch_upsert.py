"""The upsert use case: merge a batch onto what is stored, record its versions in the
ledger, and put the written entities' entries in the index.

KV allows one write per second per key and bills every operation, so a batch reads all the
entities it touches with bulk gets, reads the index once and writes it once, and writes only
the entities that actually changed. Entity documents are written before the ledger and the
index, so a failure in between leaves entities that a reindex can find, never an index entry
without its entity. The store (storage/store.py) does the KV and D1 I/O; the rules (how a
mention merges: domain/merge.py; what the ledger records: version_rows.py) are called here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from entity_memory.domain.index_entries import place_entries
from entity_memory.domain.keys import entity_key, validate_id
from entity_memory.domain.merge import Change, MergeResult, Observed, Status, entity_id_for, merge
from entity_memory.domain.models import BaseEntity, EntityIndex, EntityInputBase
from entity_memory.embeddings.embedder import Embedder
from entity_memory.service.version_rows import version_rows
from entity_memory.storage import index_vectors
from entity_memory.storage.d1 import Statement
from entity_memory.storage.ledger import Ledger


class UpsertStore(Protocol):
    """What a batch upsert needs of the store: its clock, ledger and embedder, bulk reads of
    entities, the index, and the writes (storage/store.py's `EntityStore`)."""

    ledger: Ledger | None
    embedder: Embedder | None

    def clock(self) -> int: ...

    async def get_many(self, keys: Sequence[str]) -> dict[str, BaseEntity | None]: ...

    async def read_index(self, user_id: str) -> EntityIndex: ...

    async def put_entities(self, written: Sequence[tuple[str, BaseEntity, str]]) -> None: ...

    async def write_index(self, user_id: str, index: EntityIndex) -> None: ...

    async def vectors_for(
        self, index: EntityIndex, entities: Sequence[BaseEntity]
    ) -> dict[tuple[str, str], str]: ...


#: Rewrites an item given the entity it will update (None for a new one), before merging.
Adjust = Callable[[BaseEntity | None, EntityInputBase], EntityInputBase]
#: Takes the (type, id) of entities indexed without the vector of their text, for the user's
#: writer to embed after the answer (service/vector_backlog.py).
DeferVectors = Callable[[list[tuple[str, str]]], None]


@dataclass
class UpsertResult:
    key: str
    entity: BaseEntity
    status: Status
    changes: dict[str, Change] = field(default_factory=dict)
    #: The entity's JSON document, made once (its KV value, its ledger version, the answer).
    doc: dict[str, Any] | None = None

    def entity_json(self) -> dict[str, Any]:
        if self.doc is None:
            self.doc = self.entity.to_json_dict()
        return self.doc

    def to_json_dict(self) -> dict[str, Any]:
        """What the API reports per item: where it went, what happened, what changed."""
        return {
            "key": self.key,
            "id": self.entity.id,
            "type": self.entity.type,
            "status": self.status,
            "version": self.entity.version,
            "changes": {k: {"old": c.old, "new": c.new} for k, c in self.changes.items()},
        }


async def upsert_batch(
    store: UpsertStore,
    user_id: str,
    items: Sequence[EntityInputBase],
    session_id: str,
    *,
    index: EntityIndex | None = None,
    adjust: Adjust | None = None,
    ledger_extra: Sequence[Statement] = (),
    defer_vectors: DeferVectors | None = None,
) -> list[UpsertResult]:
    """Upsert a batch: one bulk read per 100 entities, one index read, one index write.

    Every key is built (and so every id validated) before anything is read or written, so a
    bad item rejects the whole batch with nothing stored. An entity named twice in a batch
    is merged twice in memory and written once. A caller that already read the index passes
    it in; `adjust(old, item)` may rewrite an item once its stored state is known (novelty
    scoring); `ledger_extra` statements join the batch's single ledger write;
    `defer_vectors` leaves the embedding of changed texts to the user's writer, after the
    answer (`_index_entities`).
    """
    validate_id(user_id, "user")
    validate_id(session_id, "session")
    keys = [entity_key(user_id, it.type, entity_id_for(it)) for it in items]  # type: ignore[attr-defined]
    if not items:
        return []
    now = store.clock()
    stored = await store.get_many(keys)
    if index is None:
        index = await store.read_index(user_id)

    current, merged = _merge_batch(keys, items, stored, user_id, session_id, now, adjust)
    results = [
        UpsertResult(key, r.entity, r.status, r.changes)
        for key, r in zip(keys, merged, strict=True)
    ]
    dirty = [k for k in dict.fromkeys(keys) if current[k] is not stored[k]]
    # An entity stored but missing from the index (a crash between the two writes, or a
    # lost index write) is indexed again when it is sent again, even when unchanged.
    indexed = {(e.type, e.id) for e in index.entries}
    unindexed = [
        k
        for k in dict.fromkeys(keys)
        if k not in dirty and (current[k].type, current[k].id) not in indexed  # type: ignore[union-attr]
    ]
    # Each written entity's JSON is made once (on the result of its last merge in the
    # batch): its KV value, its ledger version and the answer's copy.
    last = dict(zip(keys, results, strict=True))
    texts = {k: json.dumps(last[k].entity_json()) for k in dirty}
    # Different keys, so no write waits for another: send them together, a few at a time.
    await store.put_entities([(k, current[k], texts[k]) for k in dirty])  # type: ignore[misc]
    made = {(current[k].type, current[k].id): texts[k] for k in dirty}  # type: ignore[union-attr]
    await _record(store, user_id, merged, now, ledger_extra, made)
    if dirty or unindexed:
        written = [current[k] for k in dirty + unindexed]
        await _index_entities(store, user_id, index, written, defer_vectors=defer_vectors)  # type: ignore[arg-type]
    return results


def _merge_batch(
    keys: Sequence[str],
    items: Sequence[EntityInputBase],
    stored: dict[str, BaseEntity | None],
    user_id: str,
    session_id: str,
    now: int,
    adjust: Adjust | None,
) -> tuple[dict[str, BaseEntity | None], list[MergeResult]]:
    """Merge each item onto what is stored (or onto the batch's earlier merge of it)."""
    current: dict[str, BaseEntity | None] = dict(stored)
    merged: list[MergeResult] = []
    for key, item in zip(keys, items, strict=True):
        if adjust is not None:
            item = adjust(current[key], item)
        result = merge(current[key], item, user_id, session_id, now)
        current[key] = result.entity
        merged.append(result)
    return current, merged


async def _record(
    store: UpsertStore,
    user_id: str,
    merged: Sequence[MergeResult],
    now: int,
    extra: Sequence[Statement],
    made: dict[tuple[str, str], str],
) -> None:
    """The batch's one ledger write: a version per changed entity, and `extra`."""
    ledger = store.ledger
    if ledger is None:
        return
    written = [r for r in merged if r.status != "unchanged"]
    written += await _unrecorded(store, user_id, merged)
    if written or extra:
        await ledger.write(version_rows(ledger, written, now, made) + list(extra))


async def _unrecorded(
    store: UpsertStore, user_id: str, merged: Sequence[MergeResult]
) -> list[MergeResult]:
    """Versions KV holds that the ledger lacks, among the batch's unchanged entities.

    KV is written before the ledger; if the ledger write failed, the client's retry finds
    those entities already current. Recording their version now keeps the ledger complete
    (one D1 read, only for batches that contain unchanged entities).
    """
    assert store.ledger is not None
    same = {(r.entity.type, r.entity.id): r.entity for r in merged if r.status == "unchanged"}
    if not same:
        return []
    latest = await store.ledger.latest(user_id, list(same))
    rows: list[MergeResult] = []
    for key, entity in same.items():
        recorded = latest.get(key, (0, ""))[0]
        if recorded < entity.version:
            # A version 1 the ledger never saw was created by the attempt that failed;
            # the observations that version's write made are those told at its time.
            kind: Status = "created" if recorded == 0 and entity.version == 1 else "updated"
            rows.append(MergeResult(entity, kind, observed=Observed.told_at_update(entity)))
    return rows


async def _index_entities(
    store: UpsertStore,
    user_id: str,
    index: EntityIndex,
    entities: Sequence[BaseEntity],
    *,
    defer_vectors: DeferVectors | None = None,
) -> None:
    """Put (or replace) the entries of `entities` in `index`, with their vectors, and
    write it once.

    With `defer_vectors`, changed texts are not embedded here: their entries keep the
    vector of the previous text (close; its `vec_key` says it is stale) or none, and
    `defer_vectors` is handed their refs just before the index is written, with no await
    between (inside the user's writer both are rows of its storage, written together: an
    entry indexed without its vector is always listed for one)."""
    if defer_vectors is not None:
        vectors, later = index_vectors.held(store.embedder, index, entities)
    else:
        vectors, later = await store.vectors_for(index, entities), []
    stale = set(later)
    before = {(e.type, e.id): e for e in index.entries if (e.type, e.id) in stale}
    place_entries(index, entities, vectors)
    if before:
        for entry in index.entries:  # fresh entries: place_entries made them
            old = before.get((entry.type, entry.id))
            if old is not None:
                entry.vec, entry.vec_key = old.vec, old.vec_key
    if later and defer_vectors is not None:
        defer_vectors(later)
    await store.write_index(user_id, index)
