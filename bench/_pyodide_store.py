"""The Python half of bench/pyodide_store.mjs: the store over the SDK-wrapped KV stand-in."""

from __future__ import annotations

import itertools
from typing import Any

from workers.rpc import _EnvWrapper

from adapters.workers import WorkersKV
from bench.bench_store import TASK, entity_input
from entity_memory.storage.store import EntityStore

USER = "bench"


class Bench:
    def __init__(self, store: EntityStore, n: int) -> None:
        self.store = store
        self.n = n
        self.counter = itertools.count()

    @classmethod
    async def create(cls, js_env: Any, n: int) -> Bench:
        return cls(EntityStore(WorkersKV(_EnvWrapper(js_env).ENTITIES)), n)

    async def context(self) -> None:
        await self.store.retrieve_for_context(USER, TASK, 20)

    async def put20(self) -> None:
        """10 updates of existing entities and 10 new ones, as bench_store's upsert."""
        k = next(self.counter)
        items = [entity_input(j) for j in range(10)]
        items = [i.model_copy(update={"content": f"{i.content} v{k}"}) for i in items]
        items += [entity_input(self.n + 1000 * (k + 1) + j) for j in range(10)]
        await self.store.upsert_many(USER, items, f"s{k}")
