"""A writer that dies at any step of a batch, then a retry of the batch on a new instance over
the same storage: nothing the retry acknowledges is missing from KV, its index or the ledger,
and no version is counted twice. Every durable step (a KV put or delete, a row of the
writer's table, a D1 batch, the index flush) is a point where the crash can happen."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import pytest

from entity_memory.service.batch_upsert import UpsertResult, upsert_batch
from entity_memory.service.user_writer import WriterState
from entity_memory.storage.d1 import CountingD1, SQLiteD1
from entity_memory.storage.kv import InMemoryKV, KVListPage
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.local_table import Row, SQLiteTable
from entity_memory.storage.store import EntityStore

from .conftest import REPO, Clock, Time
from .factories import campaign, pain_point

USER = "kim"


class Crash(BaseException):
    """The process dies: nothing of this instance runs on."""


class Steps:
    """Counts the durable steps of one instance; at step `at` (and ever after) it dies."""

    def __init__(self, at: int | None) -> None:
        self.at, self.n, self.dead = at, 0, False

    def step(self) -> None:
        self.n += 1
        if self.dead or self.n == self.at:
            self.dead = True
            raise Crash


class DyingKV:
    def __init__(self, inner: InMemoryKV, steps: Steps) -> None:
        self.inner, self.steps = inner, steps

    async def get_json(self, key: str) -> Any | None:
        return await self.inner.get_json(key)

    async def get_text(self, key: str) -> str | None:
        return await self.inner.get_text(key)

    async def get_json_many(self, keys: Sequence[str]) -> dict[str, Any | None]:
        return await self.inner.get_json_many(keys)

    async def put(self, key: str, value: str, **kw: Any) -> None:
        self.steps.step()
        await self.inner.put(key, value, **kw)

    async def delete(self, key: str) -> None:
        self.steps.step()
        await self.inner.delete(key)

    async def list(self, **kw: Any) -> KVListPage:
        return await self.inner.list(**kw)


class DyingTable:
    def __init__(self, inner: SQLiteTable, steps: Steps) -> None:
        self.inner, self.steps = inner, steps

    def get(self, key: str) -> Row | None:
        return self.inner.get(key)

    def put(self, key: str, row: Row) -> None:
        self.steps.step()
        self.inner.put(key, row)

    def clear(self) -> int:
        return self.inner.clear()


class DyingD1:
    def __init__(self, inner: CountingD1, steps: Steps) -> None:
        self.inner, self.steps = inner, steps

    async def all(self, sql: str, *params: Any) -> Any:
        return await self.inner.all(sql, *params)

    async def batch(self, statements: Any) -> Any:
        self.steps.step()
        return await self.inner.batch(statements)


class Storage:
    """What survives a crash: KV, D1 and the writer's SQLite table."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.db = CountingD1(SQLiteD1(migrations=REPO / "migrations"))
        self.kv = InMemoryKV(clock=clock)
        self.table = SQLiteTable(sqlite3.connect(":memory:", isolation_level=None))

    async def write(self, batch: list[Any], session: str, steps: Steps) -> list[UpsertResult]:
        """One instance of the writer, started on this storage, runs one batch."""
        table = DyingTable(self.table, steps)
        writer = WriterState(table, self.clock, Time(self.clock).sleep)  # type: ignore[arg-type]
        held = writer.kv(DyingKV(self.kv, steps))  # type: ignore[arg-type]
        ledger = Ledger(DyingD1(self.db, steps))  # type: ignore[arg-type]
        store = EntityStore(held, clock=self.clock, ledger=ledger, held=held, replica=self.kv)
        return await writer.run(lambda: upsert_batch(store, USER, batch, session))


def _batch_a() -> list[Any]:
    return [campaign(f"Campaign {i}") for i in range(5)] + [pain_point("Tracking gaps")]


def _batch_b() -> list[Any]:
    moved = [campaign(f"Campaign {i}", content=f"Campaign {i} on max clicks") for i in range(5)]
    return moved + [campaign(f"New {i}") for i in range(4)] + [pain_point("Tracking gaps")]


async def _steps_of_batch_b(clock: Clock) -> int:
    storage = Storage(clock)
    await storage.write(_batch_a(), "a", Steps(None))
    probe = Steps(None)
    await storage.write(_batch_b(), "b", probe)
    return probe.n


async def test_a_retry_after_a_crash_at_any_step_finishes_the_batch(clock: Clock) -> None:
    total = await _steps_of_batch_b(clock)
    assert total > 20  # each KV document, its table row, the ledger, the index
    for die_at in range(1, total + 1):
        await _crash_then_retry(clock, die_at)


async def _crash_then_retry(clock: Clock, die_at: int) -> None:
    storage = Storage(clock)
    await storage.write(_batch_a(), "a", Steps(None))
    with pytest.raises(Crash):
        await storage.write(_batch_b(), "b", Steps(die_at))
    clock.advance(1_000)
    retry = await storage.write(_batch_b(), "b", Steps(None))  # a new instance, the same storage

    expected = {c.name: c.content for c in _batch_b()}
    index = await storage.kv.get_json(f"index:{USER}:entities")
    indexed = {e["id"] for e in index["entries"]}
    latest = await Ledger(storage.db).latest(USER, [(r.entity.type, r.entity.id) for r in retry])
    for result in retry:
        entity, where = result.entity, f"crash at step {die_at}: {result.entity.name}"
        stored = await storage.kv.get_json(f"entity:{USER}:{entity.type}:{entity.id}")
        assert stored is not None, f"{where} acknowledged but not in KV"
        assert stored["content"] == expected[entity.name], where
        assert stored["version"] == entity.version, where  # the answer says what is stored
        assert entity.id in indexed, where
        assert latest[(entity.type, entity.id)][0] == entity.version, where
    versions = {r.entity.name: r.entity.version for r in retry}
    assert [versions[f"Campaign {i}"] for i in range(5)] == [2] * 5  # counted once
    assert [versions[f"New {i}"] for i in range(4)] == [1] * 4
    assert len(indexed) == 10  # A's six and B's four new ones
