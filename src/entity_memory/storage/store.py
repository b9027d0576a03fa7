"""EntityStore: the SPEC's KV store, made to respect what KV bills and limits.

KV allows one write per second per key and bills every operation, so a batch reads all the
entities it touches with bulk gets, reads the index once and writes it once, and writes only
the entities that actually changed; retrieval ranks on the index alone and bulk-gets only the
chosen entities. Entity documents are written before the index, so a failure in between leaves
entities that a reindex can find, never an index entry without its entity.

This module is KV and D1 I/O only: what to rank (service/retrieval.py), what has expired
(service/expiry.py), how to rebuild an index (service/reindex.py) and how to erase a user
(service/erasure.py) are service functions over it; `service.stores.build_store` makes it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from entity_memory.domain.index_entries import place_entries
from entity_memory.domain.keys import (
    entity_key,
    entity_prefix,
    index_key,
    validate_id,
    validate_type,
)
from entity_memory.domain.merge import Change, MergeResult, Observed, Status, entity_id_for, merge
from entity_memory.domain.models import (
    BaseEntity,
    EntityIndex,
    EntityInputBase,
    IndexEntry,
    RankIndex,
    parse_entity,
)
from entity_memory.embeddings.embedder import Embedder
from entity_memory.settings import Settings, wall_clock_ms
from entity_memory.storage import index_vectors
from entity_memory.storage.d1 import Statement
from entity_memory.storage.held_index import HeldIndex
from entity_memory.storage.index_snapshots import IndexSnapshots, parse_index, parse_rank_index
from entity_memory.storage.kv import MAX_BULK_GET_KEYS, KVListKey, KVNamespace
from entity_memory.storage.kv_io import bounded_gather, chunks, kv_metadata
from entity_memory.storage.ledger import Ledger

logger = logging.getLogger(__name__)

#: Rewrites an item given the entity it will update (None for a new one), before merging.
Adjust = Callable[[BaseEntity | None, EntityInputBase], EntityInputBase]
#: Takes the (type, id) of entities indexed without the vector of their text, for the user's
#: writer to embed after the answer (service/vector_backlog.py).
DeferVectors = Callable[[list[tuple[str, str]]], None]

#: Entries an index keeps at most (see `write_index`): ~6 MB of JSON.
MAX_INDEX_ENTRIES = 20_000


class CorruptRecord(Exception):
    """A stored document that no longer validates; surfaced, never silently dropped."""


@dataclass
class UpsertResult:
    key: str
    entity: BaseEntity
    status: Status
    changes: dict[str, Change] = field(default_factory=dict)

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


class EntityStore:
    def __init__(
        self,
        kv: KVNamespace,
        settings: Settings | None = None,
        clock: Callable[[], int] = wall_clock_ms,
        ledger: Ledger | None = None,
        max_index_entries: int = MAX_INDEX_ENTRIES,
        embedder: Embedder | None = None,
        held: HeldIndex | None = None,
        replica: KVNamespace | None = None,
        snapshots: IndexSnapshots | None = None,
    ) -> None:
        self.max_index_entries = max_index_entries
        #: The isolate's parsed indexes, for readers (`read_index_shared`); None: parse each.
        self.snapshots = snapshots
        #: The parsed index the user's writer keeps between requests (None: outside it).
        self.held = held
        #: KV itself, where `kv` is the writer's own copy over it (None: `kv` is KV).
        self.replica = replica if replica is not None else kv
        #: The semantic channel (vectors of written entities, query vectors); None: lexical.
        self.embedder = embedder
        self.kv = kv
        self.settings = settings or Settings()
        self.clock = clock
        self.ledger = ledger
        #: Keys whose stored JSON did not validate and were left out of this store's reads.
        self.skipped_records: list[str] = []

    # --- reads ---------------------------------------------------------------------------------

    def _parse(self, key: str, data: Any) -> BaseEntity:
        try:
            return parse_entity(data)
        except ValueError as exc:
            raise CorruptRecord(f"{key} does not validate: {exc}") from exc

    async def get_many(self, keys: Sequence[str]) -> dict[str, BaseEntity | None]:
        """Bulk-get `keys` in KV-sized chunks: ceil(n / 100) reads instead of n."""
        found: dict[str, BaseEntity | None] = {}
        for chunk in chunks(list(dict.fromkeys(keys)), MAX_BULK_GET_KEYS):
            for key, data in (await self.kv.get_json_many(chunk)).items():
                found[key] = None if data is None else self._parse_or_skip(key, data)
        return found

    def _parse_or_skip(self, key: str, data: Any) -> BaseEntity | None:
        """A record that no longer validates is skipped and reported, so one bad record (an
        old write, a manual edit) never takes the whole user down; a re-PUT replaces it."""
        try:
            return self._parse(key, data)
        except CorruptRecord as exc:
            logger.error("skipping %s", exc)
            self.skipped_records.append(key)
            return None

    async def read_index(self, user_id: str) -> EntityIndex:
        key = index_key(user_id)
        # Inside the user's writer, the index it holds parsed from its previous request.
        held = None if self.held is None else self.held.warm_index(key)
        if held is not None:
            return held
        raw = await self.kv.get_text(key)
        if raw is None:
            return EntityIndex()
        if self.snapshots is not None:  # a parse for a write: the kept copy goes first
            self.snapshots.make_room(key, len(raw))
        index = parse_index(user_id, raw)
        self._keep_index(key, index)
        return index

    async def read_index_shared(self, user_id: str) -> RankIndex:
        """The index for ranking only, never written back: what ranking reads of each entry.
        Outside the writer, with `snapshots`, the parsed copy is shared with the isolate's
        later requests that read the same bytes, so the caller must not change it or its
        entries."""
        if self.held is not None:  # the writer's own parsed copy serves as it is
            index = await self.read_index(user_id)
            return RankIndex.model_construct(
                entries=list(index.entries),
                vector_model=index.vector_model,
                vector_center=index.vector_center,
            )
        if self.snapshots is not None:
            return await self.snapshots.read(self.kv, index_key(user_id), user_id)
        raw = await self.kv.get_text(index_key(user_id))
        return RankIndex() if raw is None else parse_rank_index(user_id, raw)

    def _keep_index(self, key: str, index: EntityIndex) -> None:
        if self.held is not None:
            self.held.keep_index(key, index.model_copy(update={"entries": list(index.entries)}))

    async def replica_index(self, user_id: str) -> EntityIndex:
        """The index as readers find it in KV. Inside the user's writer, `read_index` gives the
        writer's own copy; a repair must start from what KV holds (the replica), which is what
        a lost write or a tampered key leaves wrong."""
        raw = await self.replica.get_text(index_key(user_id))
        return EntityIndex() if raw is None else parse_index(user_id, raw)

    async def replica_documents(self, keys: Sequence[str]) -> dict[str, Any]:
        """What KV itself holds for `keys` (raw JSON; None where absent), in bulk reads: an
        expiry is checked against KV, not against a copy that trusts an old read."""
        found: dict[str, Any] = {}
        for chunk in chunks(list(dict.fromkeys(keys)), MAX_BULK_GET_KEYS):
            found.update(await self.replica.get_json_many(chunk))
        return found

    async def write_index(self, user_id: str, index: EntityIndex) -> None:
        """Write the index, capped: past `max_index_entries` the least important (then oldest)
        entries leave it. Their entities stay in KV (readable by id, exported, erased) until
        their TTL; they just stop competing for context. Keeps the index far below KV's 25 MiB
        value limit and ranking time bounded (~300 bytes an entry)."""
        entries = index.entries
        if len(entries) > self.max_index_entries:
            keep = sorted(entries, key=lambda e: (e.importance, e.updated_at), reverse=True)
            kept = {(e.type, e.id) for e in keep[: self.max_index_entries]}
            logger.warning(
                "index of %s capped: %d entries dropped", user_id, len(entries) - len(kept)
            )
            entries = [e for e in entries if (e.type, e.id) in kept]
        compact = index.model_copy(update={"entries": entries})
        # exclude_none: an entry without a vector carries no `vec` key at all. Serialised by
        # pydantic-core in one pass: a third of the time of model_dump + json.dumps at 10k.
        await self.kv.put(
            index_key(user_id), compact.model_dump_json(by_alias=True, exclude_none=True)
        )
        self._keep_index(index_key(user_id), compact)

    async def get(self, user_id: str, entity_type: str, entity_id: str) -> BaseEntity | None:
        key = entity_key(user_id, entity_type, entity_id)
        data = await self.kv.get_json(key)
        return None if data is None else self._parse(key, data)

    async def list(self, user_id: str, entity_type: str | None = None) -> list[IndexEntry]:
        """Index entries (no entity reads), newest first."""
        if entity_type is not None:
            validate_type(entity_type)
        entries = (await self.read_index(user_id)).entries
        if entity_type is not None:
            entries = [e for e in entries if e.type == entity_type]
        return sorted(entries, key=lambda e: (-e.updated_at, e.type, e.id))

    # --- writes --------------------------------------------------------------------------------

    async def _put_entity(self, key: str, entity: BaseEntity) -> None:
        await self.kv.put(
            key,
            json.dumps(entity.to_json_dict()),
            expiration_ttl=self.settings.ttl_seconds(entity.type),
            metadata=kv_metadata(entity),
        )

    async def upsert_many(
        self,
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
        now = self.clock()
        stored = await self.get_many(keys)
        if index is None:
            index = await self.read_index(user_id)

        current, merged = self._merge_batch(keys, items, stored, user_id, session_id, now, adjust)
        dirty = [k for k in dict.fromkeys(keys) if current[k] is not stored[k]]
        # An entity stored but missing from the index (a crash between the two writes, or a
        # lost index write) is indexed again when it is sent again, even when unchanged.
        indexed = {(e.type, e.id) for e in index.entries}
        unindexed = [
            k
            for k in dict.fromkeys(keys)
            if k not in dirty and (current[k].type, current[k].id) not in indexed  # type: ignore[union-attr]
        ]
        # Different keys, so no write waits for another: send them together, a few at a time.
        await bounded_gather([self._put_entity(k, current[k]) for k in dirty])  # type: ignore[arg-type]
        await self._record(user_id, merged, now, ledger_extra)
        if dirty or unindexed:
            written = [current[k] for k in dirty + unindexed]
            await self._index_entities(user_id, index, written, defer_vectors=defer_vectors)  # type: ignore[arg-type]
        return [
            UpsertResult(key, r.entity, r.status, r.changes)
            for key, r in zip(keys, merged, strict=True)
        ]

    def _merge_batch(
        self,
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
        self, user_id: str, merged: Sequence[MergeResult], now: int, extra: Sequence[Statement]
    ) -> None:
        """The batch's one ledger write: a version per changed entity, and `extra`."""
        if self.ledger is None:
            return
        written = [r for r in merged if r.status != "unchanged"]
        written += await self._unrecorded(user_id, merged)
        if written or extra:
            await self.ledger.write(self.ledger.upsert_statements(written, now) + list(extra))

    async def _index_entities(
        self,
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
            vectors, later = index_vectors.held(self.embedder, index, entities)
        else:
            vectors, later = await self.vectors_for(index, entities), []
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
        await self.write_index(user_id, index)

    async def vectors_for(
        self, index: EntityIndex, entities: Sequence[BaseEntity]
    ) -> dict[tuple[str, str], str]:
        """Packed vectors of `entities`, in one batched AI call; {} when embeddings are off or
        the model failed (they rank lexically until a reindex backfills them)."""
        return await index_vectors.vectors_for(self.embedder, index, entities)

    async def _unrecorded(self, user_id: str, merged: Sequence[MergeResult]) -> list[MergeResult]:
        """Versions KV holds that the ledger lacks, among the batch's unchanged entities.

        KV is written before the ledger; if the ledger write failed, the client's retry finds
        those entities already current. Recording their version now keeps the ledger complete
        (one D1 read, only for batches that contain unchanged entities).
        """
        assert self.ledger is not None
        same = {(r.entity.type, r.entity.id): r.entity for r in merged if r.status == "unchanged"}
        if not same:
            return []
        latest = await self.ledger.latest(user_id, list(same))
        rows: list[MergeResult] = []
        for key, entity in same.items():
            recorded = latest.get(key, (0, ""))[0]
            if recorded < entity.version:
                # A version 1 the ledger never saw was created by the attempt that failed;
                # the observations that version's write made are those told at its time.
                kind: Status = "created" if recorded == 0 and entity.version == 1 else "updated"
                rows.append(MergeResult(entity, kind, observed=Observed.told_at_update(entity)))
        return rows

    async def delete(self, user_id: str, entity_type: str, entity_id: str) -> bool:
        """Delete the entity and its index entry; False if neither existed."""
        key = entity_key(user_id, entity_type, entity_id)
        data = await self.kv.get_json(key)
        existed = data is not None
        if existed:
            await self.kv.delete(key)
            if self.ledger is not None:
                entity = self._parse_or_skip(key, data)
                version = entity.version if entity is not None else 0
                await self.ledger.write(
                    [
                        self.ledger.removal_statement(
                            user_id, entity_type, entity_id, version, "deleted", self.clock()
                        )
                    ]
                )
        elif self.ledger is not None:
            # A retry after a failed ledger write: KV already lost the entity, the ledger not.
            last = (await self.ledger.latest(user_id, [(entity_type, entity_id)])).get(
                (entity_type, entity_id)
            )
            if last is not None and last[1] not in ("deleted", "expired"):
                await self.ledger.write(
                    [
                        self.ledger.removal_statement(
                            user_id, entity_type, entity_id, last[0], "deleted", self.clock()
                        )
                    ]
                )
                existed = True
        index = await self.read_index(user_id)
        kept = [e for e in index.entries if not (e.type == entity_type and e.id == entity_id)]
        if len(kept) != len(index.entries):
            await self.write_index(user_id, index.model_copy(update={"entries": kept}))
            return True
        return existed

    # --- listing -------------------------------------------------------------------------------

    async def list_keys(self, prefix: str) -> list[KVListKey]:
        keys: list[KVListKey] = []
        cursor: str | None = None
        while True:
            page = await self.kv.list(prefix=prefix, cursor=cursor)
            keys.extend(page.keys)
            if page.list_complete or not page.cursor:
                return keys
            cursor = page.cursor

    async def live_entities(self, user_id: str) -> list[BaseEntity]:
        """Every stored entity of the user, found by listing KV (not trusting the index)."""
        keys = await self.entity_keys(user_id)
        found = await self.get_many(keys)
        return [e for e in found.values() if e is not None]

    async def entity_keys(self, user_id: str) -> list[str]:
        """The names of every entity key of the user, found by listing KV (not the index)."""
        return [k.name for k in await self.list_keys(entity_prefix(user_id))]

    async def delete_keys(self, keys: Sequence[str]) -> None:
        for key in keys:
            await self.kv.delete(key)

    async def delete_index(self, user_id: str) -> bool:
        """Delete the user's index key; False if there was none."""
        if await self.kv.get_json(index_key(user_id)) is None:
            return False
        await self.kv.delete(index_key(user_id))
        return True
