"""EntityStore: the SPEC's KV store, made to respect what KV bills and limits.

KV allows one write per second per key and bills every operation, so a batch reads all the
entities it touches with bulk gets, reads the index once and writes it once, and writes only
the entities that actually changed; retrieval ranks on the index alone and bulk-gets only the
chosen entities. Entity documents are written before the index, so a failure in between leaves
entities that a reindex can find, never an index entry without its entity.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any

from entity_memory.domain.keys import (
    entity_key,
    entity_prefix,
    index_key,
    validate_id,
    validate_type,
)
from entity_memory.domain.merge import Change, MergeResult, Status, entity_id_for, merge
from entity_memory.domain.models import (
    BaseEntity,
    EntityIndex,
    EntityInputBase,
    IndexEntry,
    parse_entity,
)
from entity_memory.domain.ranking import Score, keywords_for, name_term_count, score_entries, select
from entity_memory.embeddings.embedder import Embedder
from entity_memory.embeddings.status import LexicalReason
from entity_memory.embeddings.vectors import (
    MIN_ENTRIES_FOR_SEMANTIC,
    QueryPlanes,
    centred,
    pack_signs,
    rescale,
    running_mean,
    unpack_signs,
)
from entity_memory.service.settings import Settings, wall_clock_ms
from entity_memory.storage.d1 import Statement
from entity_memory.storage.kv import MAX_BULK_GET_KEYS, MAX_METADATA_BYTES, KVListKey, KVNamespace
from entity_memory.storage.ledger import Ledger

logger = logging.getLogger(__name__)

#: Rewrites an item given the entity it will update (None for a new one), before merging.
Adjust = Callable[[BaseEntity | None, EntityInputBase], EntityInputBase]
#: Hands (user id, [(type, id), ...]) of entities found expired to whoever owns the index.
ReportExpired = Callable[[str, list[tuple[str, str]]], Awaitable[None]]

#: Entries an index keeps at most (see `_write_index`): ~6 MB of JSON.
MAX_INDEX_ENTRIES = 20_000
#: Characters of the name kept in KV metadata (KV caps metadata at 1024 bytes).
METADATA_NAME_CHARS = 120


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


@dataclass
class Retrieval:
    entities: list[BaseEntity]
    scores: list[Score]
    #: Why ranking was lexical only; None when the semantic channel took part.
    lexical_reason: LexicalReason | None = None


def kv_metadata(entity: BaseEntity) -> dict[str, Any]:
    """The SPEC's KV metadata plus the name, cut until it fits KV's 1024-byte metadata cap
    (measured with ASCII escapes, the stricter count, as `check_put` does)."""
    meta: dict[str, Any] = {
        "type": entity.type,
        "importance": entity.importance,
        "updatedAt": entity.updated_at,
        "name": entity.name[:METADATA_NAME_CHARS],
    }
    while len(json.dumps(meta).encode()) > MAX_METADATA_BYTES and meta["name"]:
        meta["name"] = meta["name"][: len(meta["name"]) * 3 // 4]
    return meta


def _metadata_terms(entity: BaseEntity) -> list[str]:
    """Metadata values worth matching on (a KPI, a strategy, the campaign a metric belongs to)."""
    meta = entity.metadata.to_json_dict()  # type: ignore[attr-defined]
    keys = ("kpi", "campaign", "strategy", "status", "campaignId", "category", "value", "action")
    return [str(meta[k]) for k in keys if isinstance(meta.get(k), str) and meta[k]]


def index_entry_for(entity: BaseEntity) -> IndexEntry:
    keywords = keywords_for(entity.name, entity.aliases, entity.content, _metadata_terms(entity))
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
    parts += _metadata_terms(entity)
    parts.append(entity.content)
    return ". ".join(p for p in parts if p)


def _drop_vectors(index: EntityIndex) -> None:
    """Remove every entry's vector (another model's), replacing entries rather than changing
    them: they may be shared with the parsed index the user's writer keeps."""
    index.entries = [e.model_copy(update={"vec": None}) if e.vec else e for e in index.entries]


#: KV writes in flight at once (a Worker keeps at most six connections open at a time).
WRITE_CONCURRENCY = 6


async def _bounded_gather(calls: Sequence[Coroutine[Any, Any, None]]) -> None:
    """Await `calls` with at most WRITE_CONCURRENCY in flight; the first failure propagates
    after the calls already started have finished (nothing is left half-sent)."""
    for start in range(0, len(calls), WRITE_CONCURRENCY):
        results = await asyncio.gather(
            *calls[start : start + WRITE_CONCURRENCY], return_exceptions=True
        )
        failed = [r for r in results if isinstance(r, BaseException)]
        if failed:
            for pending in calls[start + WRITE_CONCURRENCY :]:
                pending.close()
            raise failed[0]


def _chunks(items: Sequence[str], size: int) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class EntityStore:
    def __init__(
        self,
        kv: KVNamespace,
        settings: Settings | None = None,
        clock: Callable[[], int] = wall_clock_ms,
        ledger: Ledger | None = None,
        max_index_entries: int = MAX_INDEX_ENTRIES,
        embedder: Embedder | None = None,
        report_expired: ReportExpired | None = None,
    ) -> None:
        self.max_index_entries = max_index_entries
        #: Where a context request sends the expired entries it found, when another (the
        #: user's writer) owns the index; None: this store drops them itself.
        self.report_expired = report_expired
        #: The semantic channel; None ranks lexically only.
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

    async def _get_many(self, keys: Sequence[str]) -> dict[str, BaseEntity | None]:
        """Bulk-get `keys` in KV-sized chunks: ceil(n / 100) reads instead of n."""
        found: dict[str, BaseEntity | None] = {}
        for chunk in _chunks(list(dict.fromkeys(keys)), MAX_BULK_GET_KEYS):
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
        warm = getattr(self.kv, "warm_index", None)
        held = None if warm is None else warm(key)
        if held is not None:
            return held
        data = await self.kv.get_json(key)
        if data is None:
            return EntityIndex()
        try:
            index = EntityIndex.model_validate(data)
        except ValueError:
            # The entities are intact; an unreadable index is rebuilt by reindex, not trusted.
            logger.error("index of %s does not validate; treating it as empty", user_id)
            return EntityIndex()
        self._keep_index(key, index)
        return index

    def _keep_index(self, key: str, index: EntityIndex) -> None:
        keep = getattr(self.kv, "keep_index", None)
        if keep is not None:
            keep(key, index.model_copy(update={"entries": list(index.entries)}))

    async def _write_index(self, user_id: str, index: EntityIndex) -> None:
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
    ) -> list[UpsertResult]:
        """Upsert a batch: one bulk read per 100 entities, one index read, one index write.

        Every key is built (and so every id validated) before anything is read or written, so a
        bad item rejects the whole batch with nothing stored. An entity named twice in a batch
        is merged twice in memory and written once. A caller that already read the index passes
        it in; `adjust(old, item)` may rewrite an item once its stored state is known (novelty
        scoring); `ledger_extra` statements join the batch's single ledger write.
        """
        validate_id(user_id, "user")
        validate_id(session_id, "session")
        keys = [entity_key(user_id, it.type, entity_id_for(it)) for it in items]  # type: ignore[attr-defined]
        if not items:
            return []
        now = self.clock()
        stored = await self._get_many(keys)
        if index is None:
            index = await self.read_index(user_id)

        current: dict[str, BaseEntity | None] = dict(stored)
        merged: list[MergeResult] = []
        for key, item in zip(keys, items, strict=True):
            if adjust is not None:
                item = adjust(current[key], item)
            result = merge(current[key], item, user_id, session_id, now)
            current[key] = result.entity
            merged.append(result)

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
        await _bounded_gather([self._put_entity(k, current[k]) for k in dirty])  # type: ignore[arg-type]
        if self.ledger is not None:
            written = [(r.entity, r.status, r.changes) for r in merged if r.status != "unchanged"]
            written += await self._unrecorded(user_id, merged)
            if written or ledger_extra:
                await self.ledger.write(
                    self.ledger.upsert_statements(written, now) + list(ledger_extra)
                )
        if dirty or unindexed:
            dirty += unindexed
            vectors = await self._vectors_for(index, [current[k] for k in dirty])  # type: ignore[misc]
            positions = {(e.type, e.id): i for i, e in enumerate(index.entries)}
            for key in dirty:
                entity = current[key]
                assert entity is not None
                entry = index_entry_for(entity)
                entry.vec = vectors.get((entity.type, entity.id))
                pos = positions.get((entity.type, entity.id))
                if pos is None:
                    positions[(entity.type, entity.id)] = len(index.entries)
                    index.entries.append(entry)
                else:
                    index.entries[pos] = entry
            await self._write_index(user_id, index)
        return [
            UpsertResult(key, r.entity, r.status, r.changes)
            for key, r in zip(keys, merged, strict=True)
        ]

    async def _vectors_for(
        self, index: EntityIndex, entities: Sequence[BaseEntity]
    ) -> dict[tuple[str, str], str]:
        """Packed vectors of `entities`, in one batched AI call; {} when embeddings are off or
        the model failed (they rank lexically until a reindex backfills them).

        An index whose vectors came from another model drops them all: two models' spaces
        are never compared.
        """
        if self.embedder is None or not entities:
            return {}
        model = self.embedder.model.name
        if index.vector_model != model:
            _drop_vectors(index)
            index.vector_model, index.vector_center, index.vector_count = model, None, 0
        found = await self.embedder.try_embed([embedding_text(e) for e in entities], "passage")
        if found is None:
            return {}
        index.vector_center, index.vector_count = running_mean(
            index.vector_center, index.vector_count, found
        )
        center = index.vector_center
        return {
            (e.type, e.id): pack_signs(centred(v, center))
            for e, v in zip(entities, found, strict=True)
        }

    async def _unrecorded(
        self, user_id: str, merged: Sequence[MergeResult]
    ) -> list[tuple[BaseEntity, str, dict[str, Change]]]:
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
        return [
            (entity, "updated", {})
            for key, entity in same.items()
            if latest.get(key, (0, ""))[0] < entity.version
        ]

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
            await self._write_index(user_id, index.model_copy(update={"entries": kept}))
            return True
        return existed

    # --- retrieval -----------------------------------------------------------------------------

    async def retrieve_for_context(self, user_id: str, task: str, limit: int = 20) -> Retrieval:
        """Rank the index for `task`, then bulk-get the chosen entities (SPEC retrieveForContext).

        Entities whose KV document has expired are left out of the answer.
        """
        index = await self.read_index(user_id)
        if not index.entries or limit <= 0:
            return Retrieval([], [], None if self.embedder else "off")
        semantic, reason = await self._semantic(index, task)
        ranked = score_entries(index.entries, task, self.clock(), top=limit, semantic=semantic)
        chosen = select(ranked, limit)
        keys = [entity_key(user_id, s.type, s.id) for s in chosen]
        found = await self._get_many(keys)
        entities: list[BaseEntity] = []
        scores: list[Score] = []
        for key, score in zip(keys, chosen, strict=True):
            entity = found.get(key)
            if entity is not None:
                entities.append(entity)
                scores.append(score)
        missing = {(s.type, s.id) for key, s in zip(keys, chosen, strict=True) if not found[key]}
        expired = self._expired(index, missing)
        if expired and self.report_expired is None:
            await self._drop_expired(user_id, index, expired)
        elif expired and self.report_expired is not None:
            await self.report_expired(user_id, sorted((e.type, e.id) for e in expired))
        return Retrieval(entities, scores, reason)

    async def drop_expired(self, user_id: str, refs: Sequence[tuple[str, str]]) -> int:
        """Forget the index entries among `refs` whose entity KV no longer holds and whose TTL
        has run out (what a context request reported); the number dropped. Each is checked
        again here, so a stale or repeated report changes nothing."""
        keys = {ref: entity_key(user_id, *ref) for ref in dict.fromkeys(refs)}
        # Asked of KV itself: inside the writer, a document it once read from KV is trusted
        # for a while, and may have expired in KV since.
        read_many = getattr(self.kv, "read_replica_many", self.kv.get_json_many)
        found: dict[str, Any] = {}
        for chunk in _chunks(list(keys.values()), MAX_BULK_GET_KEYS):
            found.update(await read_many(chunk))
        index = await self.read_index(user_id)
        missing = {ref for ref, key in keys.items() if found.get(key) is None}
        expired = self._expired(index, missing)
        if expired:
            await self._drop_expired(user_id, index, expired)
        return len(expired)

    async def _semantic(
        self, index: EntityIndex, task: str
    ) -> tuple[list[float | None] | None, LexicalReason | None]:
        """Each entry's semantic similarity to the task (one AI call), or None and why not."""
        if self.embedder is None:
            return None, "off"
        signs = [None if e.vec is None else unpack_signs(e.vec) for e in index.entries]
        count = sum(s is not None for s in signs)
        if index.vector_model != self.embedder.model.name and count:
            return None, "other_model"
        if count < MIN_ENTRIES_FOR_SEMANTIC:
            return None, "few_vectors"
        found = await self.embedder.try_embed([task], "query")
        if not found:
            return None, "model_failed"
        planes = QueryPlanes.of(centred(found[0], index.vector_center))
        return rescale(planes.cosines(signs)), None

    def _expired(self, index: EntityIndex, missing: set[tuple[str, str]]) -> list[IndexEntry]:
        """The entries among `missing` (not found in KV) whose TTL has run out.

        An entry missing before its TTL ran out is left alone: that is a write this KV location
        has not seen yet (eventual consistency) or a concurrent delete, not an expiry.
        """
        now = self.clock()
        return [
            e
            for e in index.entries
            if (e.type, e.id) in missing
            and e.updated_at + self.settings.ttl_seconds(e.type) * 1000 <= now
        ]

    async def _drop_expired(
        self, user_id: str, index: EntityIndex, expired: Sequence[IndexEntry]
    ) -> None:
        """Forget these expired entries' index entries, and note the expiry in the ledger."""
        now = self.clock()
        if self.ledger is not None:
            await self.ledger.write(
                [
                    self.ledger.removal_statement(user_id, e.type, e.id, e.version, "expired", now)
                    for e in expired
                ]
            )
        gone = {(e.type, e.id) for e in expired}
        kept = [e for e in index.entries if (e.type, e.id) not in gone]
        await self._write_index(user_id, index.model_copy(update={"entries": kept}))

    # --- maintenance ---------------------------------------------------------------------------

    async def _list_keys(self, prefix: str) -> list[KVListKey]:
        keys: list[KVListKey] = []
        cursor: str | None = None
        while True:
            page = await self.kv.list(prefix=prefix, cursor=cursor)
            keys.extend(page.keys)
            if page.list_complete or not page.cursor:
                return keys
            cursor = page.cursor

    async def reindex(self, user_id: str) -> dict[str, int]:
        """Rebuild the index from what KV holds under the user's entity prefix.

        Entries still matching the old index (same type, id and updatedAt) are kept as they are;
        only entities the index lost are read, in bulk, to recover their ranking keywords.
        Repairs what a lost concurrent index write or an expiry left behind, and backfills
        the vectors of entries that have none (or another model's).
        """
        previous = await self._index_readers_see(user_id)
        old = {(e.type, e.id): e for e in previous.entries}
        listed = await self._list_keys(entity_prefix(user_id))
        entries: list[IndexEntry] = []
        to_fetch: list[str] = []
        for key in listed:
            _, _, entity_type, entity_id = key.name.split(":", 3)
            meta = key.metadata or {}
            known = old.get((entity_type, entity_id))
            if known is not None and known.updated_at == meta.get("updatedAt"):
                entries.append(known)
            else:
                to_fetch.append(key.name)
        fetched = await self._get_many(to_fetch)
        entries += [index_entry_for(e) for e in fetched.values() if e is not None]
        entries.sort(key=lambda e: (e.updated_at, e.type, e.id))
        new_ids = {(e.type, e.id) for e in entries}
        rebuilt = previous.model_copy(update={"entries": entries})
        stats = {
            "entries": len(entries),
            "restored": len(new_ids - set(old)),
            "dropped": len(set(old) - new_ids),
            "refreshed": len(to_fetch) - len(new_ids - set(old)),
        }
        if self.embedder is not None:
            stats["embedded"] = await self._backfill_vectors(user_id, rebuilt)
        if any(count for name, count in stats.items() if name != "entries"):
            await self._write_index(user_id, rebuilt)
        return stats

    async def _index_readers_see(self, user_id: str) -> EntityIndex:
        """The index as readers find it in KV. Inside the user's writer, `read_index` gives the
        writer's own copy; a repair must start from what KV holds (the replica), which is what
        a lost write or a tampered key leaves wrong."""
        read_replica = getattr(self.kv, "read_replica", None)
        if read_replica is None:
            return await self.read_index(user_id)
        data = await read_replica(index_key(user_id))
        try:
            return EntityIndex() if data is None else EntityIndex.model_validate(data)
        except ValueError:
            return EntityIndex()

    async def _backfill_vectors(self, user_id: str, index: EntityIndex) -> int:
        """Give every entry without a vector one (bulk reads of 100, one AI call each)."""
        if self.embedder is None:
            return 0
        if index.vector_model != self.embedder.model.name:
            _drop_vectors(index)
        missing = [e for e in index.entries if e.vec is None]
        keys = [entity_key(user_id, e.type, e.id) for e in missing]
        given: dict[tuple[str, str], str] = {}
        for chunk in _chunks(keys, MAX_BULK_GET_KEYS):
            found = [e for e in (await self._get_many(chunk)).values() if e is not None]
            vectors = await self._vectors_for(index, found)
            if not vectors:
                break  # the model failed: the rest keep ranking lexically
            given.update(vectors)
        # New entries, not changed ones: entries may be shared with the writer's held copy.
        index.entries = [
            e.model_copy(update={"vec": given[(e.type, e.id)]}) if (e.type, e.id) in given else e
            for e in index.entries
        ]
        return len(given)

    async def live_entities(self, user_id: str) -> list[BaseEntity]:
        """Every stored entity of the user, found by listing KV (not trusting the index)."""
        keys = [k.name for k in await self._list_keys(entity_prefix(user_id))]
        found = await self._get_many(keys)
        return [e for e in found.values() if e is not None]

    async def forget_user(self, user_id: str, max_keys: int = 900) -> dict[str, Any]:
        """Delete the user's KV keys (found by listing, not from the index) and ledger rows.

        A Worker invocation may make about 1,000 KV operations, so one call deletes at most
        `max_keys` keys and says `complete: false` when the caller must call again.
        """
        keys = [k.name for k in await self._list_keys(entity_prefix(user_id))]
        batch, complete = keys[:max_keys], len(keys) <= max_keys
        for key in batch:
            await self.kv.delete(key)
        result: dict[str, Any] = {"kvKeysDeleted": len(batch), "complete": complete}
        if complete:
            if await self.kv.get_json(index_key(user_id)) is not None:
                await self.kv.delete(index_key(user_id))
                result["kvKeysDeleted"] += 1
            if self.ledger is not None:
                result["ledgerRowsDeleted"] = await self.ledger.forget_user(user_id)
        return result
