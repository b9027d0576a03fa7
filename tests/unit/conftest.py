"""Shared fixtures for the CPython unit tests: an in-memory KV with a controllable clock, and
the Worker app in front of an in-process twin of the users' writers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from entity_memory.domain import pacing
from entity_memory.domain.kind import kind_of
from entity_memory.domain.models import EntityInputBase
from entity_memory.http.app import create_app
from entity_memory.service.batch_upsert import UpsertResult, upsert_batch
from entity_memory.service.bindings import Bindings
from entity_memory.settings import Settings
from entity_memory.storage.d1 import CountingD1, SQLiteD1
from entity_memory.storage.index_snapshots import IndexSnapshots
from entity_memory.storage.kv import CountingKV, InMemoryKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

from .writer_twin import WriterTwin

T0 = 1_780_000_000_000  # 2026-05-28, epoch ms
DAY = 24 * 60 * 60 * 1000
#: How long a metric lives by default (a decision lives longer): what expiry tests wait out.
METRIC_TTL_MS = kind_of("metric").ttl_days * DAY


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
    return (await upsert_batch(store, user_id, [item], session_id))[0]


# --- the user's writer over the Worker app (tests/unit/writer_twin.py) -----------------------


class Time:
    """A clock that only moves when someone sleeps: flushes wait in simulated time."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def sleep(self, seconds: float) -> None:
        # Let the other requests run on for a while, as they would during a real second.
        for _ in range(200):
            await asyncio.sleep(0)
        self.clock.now += int(seconds * 1000)


@pytest.fixture
def counted(memkv: InMemoryKV) -> CountingKV:
    return CountingKV(memkv)


@pytest.fixture
def twin(counted: CountingKV, clock: Clock, db: Any, monkeypatch: pytest.MonkeyPatch) -> WriterTwin:
    # Time stands 200 yields for a second: a paced job's real pause between its steps
    # (pacing.TURN_PAUSE_S) would let a flush's simulated second pass within one of them.
    monkeypatch.setattr(pacing, "TURN_PAUSE_S", 0)
    base = Bindings(kv=counted, db=db, clock=clock)
    return WriterTwin(lambda env: base, clock, Time(clock).sleep)


@pytest.fixture
async def client(
    twin: WriterTwin, counted: CountingKV, clock: Clock, db: Any
) -> AsyncIterator[httpx.AsyncClient]:
    # One isolate: its parsed indexes are shared by every request, as in production.
    isolate = IndexSnapshots()
    worker = Bindings(kv=counted, db=db, clock=clock, writers=twin.stub, snapshots=isolate)
    app = create_app(lambda env: replace(worker))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c
