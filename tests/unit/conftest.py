"""Shared fixtures for the CPython unit tests: an in-memory KV with a controllable clock."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from entity_memory.domain.models import EntityInputBase
from entity_memory.settings import Settings
from entity_memory.storage.d1 import CountingD1, SQLiteD1
from entity_memory.storage.kv import CountingKV, InMemoryKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore, UpsertResult

T0 = 1_780_000_000_000  # 2026-05-28, epoch ms
DAY = 24 * 60 * 60 * 1000


@dataclass
class Clock:
    now: int = T0

    def __call__(self) -> int:
        return self.now

    def advance(self, ms: int) -> None:
        self.now += ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def memkv(clock: Clock) -> InMemoryKV:
    return InMemoryKV(clock=clock)


@pytest.fixture
def kv(memkv: InMemoryKV) -> CountingKV:
    return CountingKV(memkv)


@pytest.fixture
def store(kv: CountingKV, clock: Clock) -> EntityStore:
    return EntityStore(kv, Settings(), clock)


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def db() -> CountingD1:
    return CountingD1(SQLiteD1(migrations=REPO / "migrations"))


@pytest.fixture
def ledger(db: CountingD1) -> Ledger:
    return Ledger(db)


@pytest.fixture
def lstore(kv: CountingKV, clock: Clock, ledger: Ledger) -> EntityStore:
    """A store that writes the D1 ledger too."""
    return EntityStore(kv, Settings(), clock, ledger)


async def upsert_one(
    store: EntityStore, user_id: str, item: EntityInputBase, session_id: str
) -> UpsertResult:
    """One entity through the batch path, the only write path the store has."""
    return (await store.upsert_many(user_id, [item], session_id))[0]
