"""`WRITE_ACK=committed` on CPython: a write is answered before KV's index holds it, and
the Worker's reads of the index still find every answered write (they ask the writer), also
after the writer died between the answer and the index's publication."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from entity_memory.http.app import create_app
from entity_memory.service.bindings import Bindings
from entity_memory.service.user_writer import FLUSH_RETRY_MS
from entity_memory.settings import Settings, WriteAck
from entity_memory.storage.index_snapshots import IndexSnapshots
from entity_memory.storage.kv import CountingKV, InMemoryKV

from .conftest import Clock
from .writer_twin import WriterTwin

USER = "quinn"
INDEX = f"index:{USER}:entities"


@dataclass
class Gate:
    """A sleep that holds every flush waiting out KV's second until the test opens it."""

    clock: Clock
    opened: asyncio.Event

    async def sleep(self, seconds: float) -> None:
        await self.opened.wait()
        self.clock.now += int(seconds * 1000)


@pytest.fixture
def gate(clock: Clock) -> Gate:
    return Gate(clock, asyncio.Event())


def _bindings(mode: WriteAck, counted: CountingKV, clock: Clock, db: Any) -> Bindings:
    return Bindings(kv=counted, db=db, clock=clock, settings=Settings(write_ack=mode))


@pytest.fixture
def held_twin(counted: CountingKV, clock: Clock, db: Any, gate: Gate) -> WriterTwin:
    base = _bindings(WriteAck.COMMITTED, counted, clock, db)
    return WriterTwin(lambda env: base, clock, gate.sleep)


@pytest.fixture
async def api(
    held_twin: WriterTwin, counted: CountingKV, clock: Clock, db: Any
) -> AsyncIterator[httpx.AsyncClient]:
    worker = replace(
        _bindings(WriteAck.COMMITTED, counted, clock, db),
        writers=held_twin.stub,
        snapshots=IndexSnapshots(),
    )
    app = create_app(lambda env: replace(worker))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


def campaign(name: str) -> dict[str, Any]:
    return {"type": "campaign", "name": name, "content": f"{name} runs", "importance": 0.5}


async def put(c: httpx.AsyncClient, session: str, name: str) -> httpx.Response:
    body = {"session_id": session, "entities": [campaign(name)]}
    r = await c.put(f"/v1/users/{USER}/entities", json=body)
    assert r.status_code == 200, r.text
    return r


async def listed(c: httpx.AsyncClient) -> set[str]:
    r = await c.get(f"/v1/users/{USER}/entities")
    assert r.status_code == 200, r.text
    assert r.headers["X-Writer-Reads"] == "1"
    return {e["name"] for e in r.json()["entities"]}


async def in_kv(memkv: InMemoryKV) -> set[str]:
    index = await memkv.get_json(INDEX)
    return {e["name"] for e in (index or {"entries": []})["entries"]}


def test_the_setting_is_typed() -> None:
    assert Settings.from_env({}.get).write_ack == WriteAck.INDEXED
    assert Settings.from_env({"WRITE_ACK": "Committed"}.get).write_ack == WriteAck.COMMITTED
    with pytest.raises(ValueError, match="WRITE_ACK"):
        Settings.from_env({"WRITE_ACK": "soon"}.get)


async def test_a_write_is_answered_before_kv_indexes_it_and_reads_still_find_it(
    api: httpx.AsyncClient, memkv: InMemoryKV, gate: Gate, held_twin: WriterTwin
) -> None:
    await put(api, "s1", "Alpha")  # the user's first flush has no second to wait out
    await held_twin.writer(USER).settled()
    await put(api, "s2", "Beta")  # its flush waits behind the gate: answered all the same
    await put(api, "s3", "Gamma")
    assert await in_kv(memkv) == {"Alpha"}
    assert await listed(api) == {"Alpha", "Beta", "Gamma"}
    r = await api.post(f"/v1/users/{USER}/context", json={"task": "Gamma runs"})
    assert "Gamma" in {e["name"] for e in r.json()["entities"]}
    gate.opened.set()
    await held_twin.writer(USER).settled()
    assert await in_kv(memkv) == {"Alpha", "Beta", "Gamma"}


async def test_a_writer_killed_before_publishing_loses_nothing_answered(
    api: httpx.AsyncClient, memkv: InMemoryKV, gate: Gate, held_twin: WriterTwin, clock: Clock
) -> None:
    await put(api, "s1", "Alpha")
    await held_twin.writer(USER).settled()
    await put(api, "s2", "Beta")
    assert held_twin.later[USER] == [clock.now + FLUSH_RETRY_MS]  # the alarm that heals it
    for task in held_twin.writer(USER)._behind:  # the instance dies with its flush
        task.cancel()
    held_twin.restart(USER)
    gate.opened.set()
    await held_twin.host(USER).alarm()  # the new instance's alarm republishes the table's
    assert await in_kv(memkv) == {"Alpha", "Beta"}


async def test_a_reader_wakes_a_killed_writer_and_still_finds_the_answered_write(
    api: httpx.AsyncClient, memkv: InMemoryKV, gate: Gate, held_twin: WriterTwin
) -> None:
    await put(api, "s1", "Alpha")
    await held_twin.writer(USER).settled()
    await put(api, "s2", "Beta")
    for task in held_twin.writer(USER)._behind:
        task.cancel()
    held_twin.restart(USER)
    assert await listed(api) == {"Alpha", "Beta"}  # before any alarm: served by the writer
    gate.opened.set()
    await held_twin.writer(USER).settled()  # and the read set its publication going
    assert await in_kv(memkv) == {"Alpha", "Beta"}


async def test_an_erasure_is_still_answered_once_kv_holds_nothing(
    api: httpx.AsyncClient, memkv: InMemoryKV, gate: Gate
) -> None:
    await put(api, "s1", "Alpha")
    gate.opened.set()
    r = await api.delete(f"/v1/users/{USER}")
    assert r.status_code == 200 and r.json()["complete"] is True
    assert await memkv.get_json(INDEX) is None
