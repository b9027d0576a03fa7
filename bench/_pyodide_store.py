"""The Python half of bench/pyodide_store.mjs: the store over the SDK-wrapped KV stand-in.

Three requests, as production runs them: a context request in the Worker (the store on KV;
parsing the index, and with the isolate's parsed copy of the same bytes), and a 20-entity
write both in the Worker alone (the store on KV, as without a writer) and in the user's
writer (`WriterState` over a sqlite3 table, as the Durable Object runs it). The writer's
table already holds the user's index (an earlier instance wrote it), so its first write is
what an instance pays after an eviction; the later ones find the index it keeps.
"""

from __future__ import annotations

import itertools
import sqlite3
from typing import Any

from workers.rpc import _EnvWrapper

from adapters.workers import WorkersKV, workers_ai_run
from bench.bench_store import TASK, entity_input
from entity_memory.embeddings.catalog import DEFAULT_MODEL
from entity_memory.embeddings.embedder import build_embedder
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.retrieval import retrieve_for_context
from entity_memory.service.user_writer import WriterState
from entity_memory.settings import wall_clock_ms
from entity_memory.storage.index_snapshots import IndexSnapshots
from entity_memory.storage.local_table import SQLiteTable
from entity_memory.storage.store import EntityStore

USER = "bench"


class Bench:
    def __init__(self, store: EntityStore, writer: WriterState, in_writer: EntityStore, n: int):
        self.store, self.writer, self.in_writer, self.n = store, writer, in_writer, n
        self.snapshots = IndexSnapshots()
        self.counter = itertools.count()

    @classmethod
    async def create(cls, js_env: Any, n: int, vectors: bool) -> Bench:
        env = _EnvWrapper(js_env)
        kv = WorkersKV(env.ENTITIES)
        embedder = build_embedder(DEFAULT_MODEL, workers_ai_run(env.AI)) if vectors else None
        writer = WriterState(SQLiteTable(sqlite3.connect(":memory:")), wall_clock_ms)
        held = writer.kv(kv)
        in_writer = EntityStore(held, embedder=embedder, held=held, replica=kv)
        return cls(EntityStore(kv, embedder=embedder), writer, in_writer, n)

    def worker_store(self) -> EntityStore:
        """A Worker request's store: new each request, sharing the isolate's snapshots."""
        return EntityStore(self.store.kv, embedder=self.store.embedder, snapshots=self.snapshots)

    async def evict_writer(self) -> None:
        """Let the writer write once, then replace it by a new instance over the same table,
        as after an eviction (not measured)."""
        await self.put20_writer()
        self.writer = WriterState(self.writer.table, wall_clock_ms)
        held = self.writer.kv(self.store.kv)
        self.in_writer = EntityStore(
            held, embedder=self.store.embedder, held=held, replica=self.store.kv
        )

    async def context(self) -> None:
        """A context request that parses the index: the isolate's first for this user, or
        the first after a write changed the index."""
        await retrieve_for_context(self.store, USER, TASK, 20)

    async def context_warm(self) -> None:
        """A context request in an isolate that parsed the same index before (a new store
        each request, as the Worker builds one, sharing the isolate's snapshots)."""
        await retrieve_for_context(self.worker_store(), USER, TASK, 20)

    def _batch(self) -> tuple[list[Any], str]:
        """10 updates of existing entities and 10 new ones, as bench_store's upsert."""
        k = next(self.counter)
        items = [entity_input(j) for j in range(10)]
        items = [i.model_copy(update={"content": f"{i.content} v{k}"}) for i in items]
        items += [entity_input(self.n + 1000 * (k + 1) + j) for j in range(10)]
        return items, f"s{k}"

    async def put20(self) -> None:
        items, session = self._batch()
        await upsert_batch(self.worker_store(), USER, items, session)

    async def put20_writer(self) -> None:
        items, session = self._batch()
        await self.writer.run(lambda: upsert_batch(self.in_writer, USER, items, session))
