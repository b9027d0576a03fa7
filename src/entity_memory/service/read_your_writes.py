"""A reader's own writes, when writes are answered before KV's index holds them.

With `WRITE_ACK=committed` the user's writer answers a write once its storage and the
entity documents hold it, and writes KV's `index:<user>:entities` behind the answer (at most
once a second). A read of the index in the Worker (context, list) made meanwhile would miss
the write, so in that mode the Worker's KV is `WriterIndexKV`: a read of a user's index first
asks the user's writer (one RPC, `writes.pending_index`, which never waits for the write
lock) and uses the writer's text while it has one KV lacks. Everything else (entity
documents, which the writer puts in KV before it answers, and every write) goes to KV as is.
Its cost: one call to the user's object per index read, whatever the mode's gain; the
`X-Writer-Reads` header counts them.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from entity_memory.service.bindings import WriterStubs
from entity_memory.service.writers import RemoteWriter, WriterRefused, WriterUnavailable
from entity_memory.service.writes import IndexCall, pending_index
from entity_memory.storage.kv import KVNamespace
from entity_memory.storage.writer_kv import INDEX_PREFIX, INDEX_SUFFIX, is_index_key

logger = logging.getLogger(__name__)


class WriterIndexKV:
    """The Worker's KV, asking the user's writer before a read of the user's index."""

    def __init__(self, inner: KVNamespace, writers: WriterStubs) -> None:
        self.inner, self.writers = inner, writers
        #: Calls made to writers (for the response's `X-Writer-Reads`).
        self.asks = 0

    async def _pending(self, key: str) -> tuple[bool, str | None]:
        """(whether the writer holds an index KV lacks, its text). A writer that cannot
        be reached leaves the read to KV: reads stay up, and may miss a write answered
        within the last second (logged)."""
        user_id = key.removeprefix(INDEX_PREFIX).removesuffix(INDEX_SUFFIX)
        self.asks += 1
        try:
            answer = await RemoteWriter(self.writers(user_id)).run(
                pending_index, IndexCall(user_id=user_id)
            )
        except (WriterUnavailable, WriterRefused) as exc:
            logger.warning("index of %s read from KV, its writer did not answer: %s", user_id, exc)
            return False, None
        return answer.pending, answer.index

    async def get_text(self, key: str) -> str | bytes | None:
        if is_index_key(key):
            pending, text = await self._pending(key)
            if pending:
                return text
        return await self.inner.get_text(key)

    async def get_json(self, key: str) -> Any | None:
        if is_index_key(key):
            pending, text = await self._pending(key)
            if pending:
                return None if text is None else json.loads(text)
        return await self.inner.get_json(key)

    def __getattr__(self, name: str) -> Any:
        """Everything else is KV's: entity documents (the writer puts every answered one in
        KV before it answers; no index is read in bulk), lists, and writes."""
        return getattr(self.inner, name)
