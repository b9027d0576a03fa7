"""Helpers for talking to KV within its limits: metadata that fits, writes a few at a time,
bulk reads in KV-sized chunks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Sequence
from typing import Any

from entity_memory.domain.models import BaseEntity
from entity_memory.storage.kv import MAX_METADATA_BYTES

#: Characters of the name kept in KV metadata (KV caps metadata at 1024 bytes).
METADATA_NAME_CHARS = 120


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


#: KV writes in flight at once (a Worker keeps at most six connections open at a time).
WRITE_CONCURRENCY = 6


async def bounded_gather(calls: Sequence[Coroutine[Any, Any, None]]) -> None:
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


def chunks(items: Sequence[str], size: int) -> list[Sequence[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]
