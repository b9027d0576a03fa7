"""The requests `bench/bench_pyodide.mjs` times inside Pyodide, on in-process stand-ins.

KV is a JS object of the class name the SDK wraps (`KvNamespace`, values held as text, in a JS
Map), reached through `adapters.workers.WorkersKV` and the SDK's `_EnvWrapper` as in the
Worker; D1 is `SQLiteD1` (Pyodide's sqlite3) with the migrations, so the ledger's writes run.
What a request costs here is Python and the JS<->Python conversions, without network I/O.
Imported only inside Pyodide (it needs the SDK and the `_entity_memory_host` module).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workers.rpc import _EnvWrapper

from adapters.workers import WorkersKV
from bench.bench_store import TASK, entity_doc
from entity_memory.domain.context import assemble_entity_context
from entity_memory.domain.models import entity_input_adapter
from entity_memory.storage.d1 import SQLiteD1
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

USER = "bench"


class Bench:
    def __init__(self, js_env: Any, n: int, migrations: str) -> None:
        env = _EnvWrapper(js_env)
        ledger = Ledger(SQLiteD1(migrations=Path(migrations)))
        self.store = EntityStore(WorkersKV(env.ENTITIES), ledger=ledger)
        self.n = n
        self.writes = 0

    async def context(self) -> int:
        """What POST /context does past the HTTP layer: rank, bulk-get, assemble."""
        found = await self.store.retrieve_for_context(USER, TASK, 20)
        docs = [e.to_json_dict() for e in found.entities]
        return len(assemble_entity_context(docs, task=TASK))

    async def write(self) -> int:
        """What a 20-entity PUT does past the HTTP layer: 10 updates, 10 new entities."""
        k = self.writes = self.writes + 1
        docs = [{**entity_doc(j), "content": f"{entity_doc(j)['content']} v{k}"} for j in range(10)]
        docs += [entity_doc(self.n + 1000 * k + j) for j in range(10)]
        items = [entity_input_adapter.validate_python(d) for d in docs]
        return len(await self.store.upsert_many(USER, items, f"s{k}"))  # type: ignore[arg-type]
