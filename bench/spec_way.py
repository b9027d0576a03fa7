"""The SPEC's EntityStore access pattern, kept only as the benchmark's baseline.

The SPEC upserts one entity at a time (read entity, write entity, read index, write index) and
retrieves by reading the index then each chosen entity with its own `get`. Merge rules and
ranking are ours, so the comparison isolates the KV access pattern.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from entity_memory.domain.index_entries import index_entry_for
from entity_memory.domain.keys import entity_key, index_key
from entity_memory.domain.merge import entity_id_for, merge
from entity_memory.domain.models import BaseEntity, EntityIndex, EntityInputBase, parse_entity
from entity_memory.domain.ranking import score_entries
from entity_memory.storage.store import EntityStore


class SpecWayStore(EntityStore):
    async def upsert_many(
        self, user_id: str, items: Sequence[EntityInputBase], session_id: str
    ) -> list:  # type: ignore[override]
        now = self.clock()
        for item in items:
            key = entity_key(user_id, item.type, entity_id_for(item))  # type: ignore[attr-defined]
            data = await self.kv.get_json(key)
            old = None if data is None else parse_entity(data)
            entity = merge(old, item, user_id, session_id, now).entity
            await self._put_entity(key, entity, json.dumps(entity.to_json_dict()))
            index = await self.read_index(user_id)
            entry = index_entry_for(entity)
            index.entries = [
                e for e in index.entries if not (e.type == entity.type and e.id == entity.id)
            ] + [entry]
            await self.kv.put(index_key(user_id), json.dumps(index.to_json_dict()))
        return []

    async def retrieve_one_by_one(
        self, user_id: str, task: str, limit: int = 20
    ) -> list[BaseEntity]:
        data = await self.kv.get_json(index_key(user_id))
        index = EntityIndex.model_validate(data or {})
        ranked = score_entries(index.entries, task, self.clock())[:limit]
        found: list[BaseEntity] = []
        for s in ranked:
            doc = await self.kv.get_json(entity_key(user_id, s.type, s.id))
            if doc is not None:
                found.append(parse_entity(doc))
        return found
