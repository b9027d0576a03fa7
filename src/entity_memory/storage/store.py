"""EntityStore: the SPEC's KV store, made to respect what KV bills and limits.

KV allows one write per second per key and bills every operation: entities are read in bulk
gets of 100, the index is read once per request (or held parsed by the user's writer) and
written once per batch, capped; retrieval ranks on the index alone and bulk-gets only the
chosen entities.

This module is KV and D1 I/O only: how a batch is merged, recorded and indexed
(service/batch_upsert.py), what to rank (service/retrieval.py), what has expired
(service/expiry.py), how to rebuild an index (service/reindex.py) and how to erase a user
(service/erasure.py) are service functions over it; `service.stores.build_store` makes it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from entity_memory.domain.keys import (
    entity_key,
    entity_prefix,
    index_key,
    validate_type,
)
from entity_memory.domain.kind import kind_of
from entity_memory.domain.models import (
    BaseEntity,
    EntityIndex,
    IndexEntry,
    RankIndex,
    parse_entity,
)
from entity_memory.embeddings.embedder import Embedder
from entity_memory.settings import Settings, wall_clock_ms
from entity_memory.storage import index_vectors
from entity_memory.storage.held_index import HeldIndex
from entity_memory.storage.index_snapshots import IndexSnapshots, parse_index, parse_rank_index
from entity_memory.storage.kv import MAX_BULK_GET_KEYS, KVListKey, KVNamespace
from entity_memory.storage.kv_io import bounded_gather, chunks, kv_metadata
from entity_memory.storage.ledger import Ledger

logger = logging.getLogger(__name__)

#: Entries an index keeps at most (see `write_index`): ~6 MB of JSON.
MAX_INDEX_ENTRIES = 20_000


class CorruptRecord(Exception):
    """A stored document that no longer validates; surfaced, never silently dropped."""


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

    async def put_entities(self, written: Sequence[tuple[str, BaseEntity, str]]) -> None:
        """Put each (key, entity, its JSON) with its type's TTL and the SPEC's metadata.
        Different keys, so no write waits for another: sent together, a few at a time."""
        await bounded_gather([self._put_entity(k, e, text) for k, e, text in written])

    async def _put_entity(self, key: str, entity: BaseEntity, text: str) -> None:
        await self.kv.put(
            key,
            text,
            expiration_ttl=kind_of(entity.type).ttl_seconds(self.settings),
            metadata=kv_metadata(entity),
        )

    async def vectors_for(
        self, index: EntityIndex, entities: Sequence[BaseEntity]
    ) -> dict[tuple[str, str], str]:
        """Packed vectors of `entities`, in one batched AI call; {} when embeddings are off or
        the model failed (they rank lexically until a reindex backfills them)."""
        return await index_vectors.vectors_for(self.embedder, index, entities)

    async def delete_document(self, key: str) -> tuple[bool, BaseEntity | None]:
        """Delete an entity's document: (whether there was one, what it held: None if it
        no longer validates)."""
        data = await self.kv.get_json(key)
        if data is None:
            return False, None
        await self.kv.delete(key)
        return True, self._parse_or_skip(key, data)

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
