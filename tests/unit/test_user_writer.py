"""One writer per user, on CPython: the Worker app forwards writes to an in-process twin of
the Durable Object namespace (tests/unit/writer_twin.py); reads stay on KV."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import httpx
import pytest

from entity_memory.http.app import create_app
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.bindings import Bindings
from entity_memory.service.user_writer import MIN_INDEX_WRITE_INTERVAL_MS
from entity_memory.storage.kv import CountingKV, InMemoryKV

from .conftest import METRIC_TTL_MS, Clock, Time
from .writer_twin import WriterTwin


def campaign(name: str, content: str = "search") -> dict[str, Any]:
    return {"type": "campaign", "name": name, "content": content, "importance": 0.5}


async def put(c: httpx.AsyncClient, user: str, session: str, *entities: dict) -> httpx.Response:
    body = {"session_id": session, "entities": list(entities)}
    return await c.put(f"/v1/users/{user}/entities", json=body)


async def test_concurrent_batches_lose_nothing_and_index_everything(
    client: httpx.AsyncClient, memkv: InMemoryKV
) -> None:
    batches = [[campaign(f"C {b}-{i}") for i in range(5)] for b in range(20)]
    replies = await asyncio.gather(
        *(put(client, "ann", f"s{b}", *e) for b, e in enumerate(batches))
    )
    assert all(r.status_code == 200 for r in replies)
    index = await memkv.get_json("index:ann:entities")
    assert len(index["entries"]) == 100  # right after the last acknowledgement


async def test_racing_writes_of_one_entity_get_distinct_versions(
    client: httpx.AsyncClient,
) -> None:
    replies = await asyncio.gather(
        *(put(client, "bob", f"s{i}", campaign("Alpha", f"fact {i}")) for i in range(30))
    )
    versions = [r.json()["results"][0]["version"] for r in replies]
    assert sorted(versions) == list(range(1, 31))


async def test_every_mention_of_a_pain_point_counts(client: httpx.AsyncClient) -> None:
    pain = {"type": "pain_point", "name": "Slow reports", "content": "slow", "importance": 0.5}
    await asyncio.gather(*(put(client, "cy", f"s{i}", pain) for i in range(12)))
    stored = (await client.get("/v1/users/cy/entities/pain_point/slow-reports")).json()
    assert stored["metadata"]["frequency"] == 12


async def test_the_index_key_is_written_at_most_once_per_second(
    client: httpx.AsyncClient, counted: CountingKV, clock: Clock
) -> None:
    start = clock.now
    await asyncio.gather(*(put(client, "dee", f"s{i}", campaign(f"D {i}")) for i in range(40)))
    writes = counted.keys_written["index:dee:entities"]
    elapsed_s = (clock.now - start) / MIN_INDEX_WRITE_INTERVAL_MS
    assert 1 <= writes <= elapsed_s + 1
    assert writes < 40  # coalesced, not one per request


async def test_reads_stay_on_kv_and_skip_the_writer(
    client: httpx.AsyncClient, twin: WriterTwin
) -> None:
    await put(client, "eve", "s1", campaign("Alpha"))
    r = await client.post("/v1/users/eve/context", json={"task": "Alpha"})
    assert r.status_code == 200 and r.json()["entities"][0]["name"] == "Alpha"
    assert list(twin.writers) == ["eve"]  # the write went through the writer, the read did not


async def test_forget_runs_in_the_writer_and_clears_its_copy(
    client: httpx.AsyncClient, twin: WriterTwin, memkv: InMemoryKV
) -> None:
    await put(client, "fay", "s1", campaign("Alpha"), campaign("Beta"))
    r = await client.delete("/v1/users/fay")
    assert r.status_code == 200, r.text
    assert r.json()["complete"] and r.json()["writerRowsDeleted"] >= 3
    assert twin.writer("fay").table.get("entity:fay:campaign:alpha") is None
    assert await memkv.get_json("index:fay:entities") is None
    assert (await client.get("/v1/users/fay/entities")).json()["count"] == 0


async def test_the_writer_merges_onto_what_it_wrote_even_when_kv_lags(
    client: httpx.AsyncClient, memkv: InMemoryKV
) -> None:
    """KV may answer a read with the document before the last write; the writer reads its
    own copy, so versions still follow one another."""
    await put(client, "gus", "s1", campaign("Alpha", "one"))
    stale = await memkv.get_json("entity:gus:campaign:alpha")
    await put(client, "gus", "s2", campaign("Alpha", "two"))
    await memkv.put("entity:gus:campaign:alpha", json.dumps(stale))  # KV serves the old one
    r = await put(client, "gus", "s3", campaign("Alpha", "three"))
    assert r.json()["results"][0]["version"] == 3


async def test_a_bad_user_id_is_refused_before_any_writer_exists(
    client: httpx.AsyncClient, twin: WriterTwin
) -> None:
    r = await put(client, "a b", "s1", campaign("Alpha"))
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_id"
    assert twin.writers == {}


async def test_a_restarted_writer_republishes_the_index_a_crash_left_behind(
    client: httpx.AsyncClient, twin: WriterTwin, memkv: InMemoryKV, clock: Clock
) -> None:
    batch = [campaign(f"K {i}") for i in range(5)]
    assert (await put(client, "kit", "s1", *batch)).status_code == 200
    # The crash: KV's index lost the batch after the writer's copy had it.
    await memkv.put("index:kit:entities", json.dumps({"entries": []}))
    twin.restart("kit")
    retry = await put(client, "kit", "s1", *batch)
    assert [r["status"] for r in retry.json()["results"]] == ["unchanged"] * 5
    index = await memkv.get_json("index:kit:entities")
    assert len(index["entries"]) == 5


async def test_writes_racing_an_erase_never_bring_erased_entities_back(
    client: httpx.AsyncClient, memkv: InMemoryKV
) -> None:
    await put(client, "hal", "s0", campaign("Alpha"))
    replies = await asyncio.gather(
        client.delete("/v1/users/hal"),
        *(put(client, "hal", f"s{i}", campaign(f"R{i}")) for i in range(6)),
    )
    assert all(r.status_code == 200 for r in replies)
    index = await memkv.get_json("index:hal:entities") or {"entries": []}
    indexed = {e["id"] for e in index["entries"]}
    stored = {k.name.rsplit(":", 1)[1] for k in (await memkv.list(prefix="entity:hal:")).keys}
    assert indexed == stored and "alpha" not in stored


async def test_a_failed_index_flush_sets_the_alarm_that_retries_it(clock: Clock) -> None:
    import sqlite3

    from entity_memory.service.user_writer import FLUSH_RETRY_MS, WriterState
    from entity_memory.storage.local_table import SQLiteTable

    class FlakyKV(InMemoryKV):
        failures = 1

        async def put(self, key: str, value: str, **kw: Any) -> None:
            if key.startswith("index:") and self.failures:
                self.failures -= 1
                raise RuntimeError("KV: 503")
            await super().put(key, value, **kw)

    kv = FlakyKV(clock=clock)
    alarms: list[int] = []

    async def set_alarm(at_ms: int) -> None:
        alarms.append(at_ms)

    table = SQLiteTable(sqlite3.connect(":memory:", isolation_level=None))
    writer = WriterState(table, clock, Time(clock).sleep, schedule_retry=set_alarm)
    wkv = writer.kv(kv)

    async def write() -> None:
        await wkv.put("index:ivy:entities", json.dumps({"entries": [{"id": "a"}]}))

    with pytest.raises(RuntimeError):
        await writer.run(write)
    assert alarms == [clock.now + FLUSH_RETRY_MS]
    assert await kv.get_json("index:ivy:entities") is None
    await writer.retry_flush()  # what the object's alarm() does
    assert await kv.get_json("index:ivy:entities") == {"entries": [{"id": "a"}]}


class CountingTable:
    """A writer table that counts reads of the index row."""

    def __init__(self) -> None:
        import sqlite3

        from entity_memory.storage.local_table import SQLiteTable

        self.inner = SQLiteTable(sqlite3.connect(":memory:", isolation_level=None))
        self.index_reads = 0

    def get(self, key: str) -> Any:
        self.index_reads += key.startswith("index:")
        return self.inner.get(key)

    def put(self, key: str, row: Any) -> None:
        self.inner.put(key, row)

    def clear(self) -> int:
        return self.inner.clear()


def _writer_store(clock: Clock, kv: InMemoryKV) -> tuple[Any, Any, CountingTable, Any]:
    from entity_memory.service.user_writer import WriterState
    from entity_memory.storage.store import EntityStore

    from .factories import campaign

    table = CountingTable()
    writer = WriterState(table, clock, Time(clock).sleep)  # type: ignore[arg-type]
    held = writer.kv(kv)
    store = EntityStore(held, clock=clock, held=held, replica=kv)

    async def write(name: str) -> None:
        await writer.run(lambda: upsert_batch(store, "wes", [campaign(name)], "s"))

    return writer, store, table, write


async def test_a_writer_parses_the_index_once_and_keeps_it_between_writes(clock: Clock) -> None:
    kv = InMemoryKV(clock=clock)
    _, _, table, write = _writer_store(clock, kv)
    for i in range(4):
        await write(f"Campaign {i}")
    assert table.index_reads <= 1
    index = await kv.get_json("index:wes:entities")
    assert sorted(e["name"] for e in index["entries"]) == [f"Campaign {i}" for i in range(4)]


async def test_a_write_that_fails_leaves_the_kept_index_untouched(clock: Clock) -> None:
    kv = InMemoryKV(clock=clock)
    writer, store, _, write = _writer_store(clock, kv)
    await write("Campaign A")

    async def half_done() -> None:
        index = await store.read_index("wes")
        index.entries[0].importance = 0.0  # a change to a shared entry, then a failure
        raise RuntimeError("KV: 503")

    with pytest.raises(RuntimeError):
        await writer.run(half_done)
    assert (await writer.run(lambda: store.read_index("wes"))).entries[0].importance == 0.7


async def test_an_index_read_from_kv_is_kept_no_longer_than_kv_reads_are_trusted(
    clock: Clock,
) -> None:
    from entity_memory.storage.store import EntityStore
    from entity_memory.storage.writer_kv import KV_READ_TRUST_MS

    from .factories import campaign

    kv = InMemoryKV(clock=clock)
    before = EntityStore(kv, clock=clock)  # data written before the writer existed
    await upsert_batch(before, "wes", [campaign("Campaign A")], "s0")
    writer, store, _, write = _writer_store(clock, kv)
    await write("Campaign A")  # unchanged: the writer reads KV's index and keeps it
    await upsert_batch(before, "wes", [campaign("Campaign B")], "s1")
    clock.now += KV_READ_TRUST_MS + 1
    index = await writer.run(lambda: store.read_index("wes"))
    assert sorted(e.name for e in index.entries) == ["Campaign A", "Campaign B"]


def _decision() -> dict[str, Any]:
    """What outlives a metric (decisions keep the longest TTL)."""
    return {
        "type": "decision",
        "name": "Switch Alpha to tCPA",
        "content": "Alpha now on tCPA",
        "importance": 0.5,
        "metadata": {"action": "switch Alpha to tCPA"},
    }


def _metric() -> dict[str, Any]:
    return {
        "type": "metric",
        "name": "Alpha CPA",
        "content": "CPA of Alpha is $42",
        "importance": 0.5,
        "metadata": {"kpi": "CPA", "value": 42, "unit": "USD", "campaign": "Alpha"},
    }


async def test_an_expiry_a_reader_finds_is_dropped_once_by_the_writer(
    client: httpx.AsyncClient, memkv: InMemoryKV, clock: Clock, db: Any
) -> None:
    """Context requests run in the Worker; the index they find stale is the writer's to fix,
    or its next flush would bring the expired entry back (and each reader would record the
    expiry again)."""
    assert (await put(client, "eve", "s1", _metric(), _decision())).status_code == 200
    clock.advance(METRIC_TTL_MS + 1)  # the metric expired, the decision lives on
    for _ in range(2):
        r = await client.post("/v1/users/eve/context", json={"task": "Alpha CPA"})
        assert [e["type"] for e in r.json()["entities"]] == ["decision"], r.text
    await put(client, "eve", "s2", campaign("Beta"))
    index = await memkv.get_json("index:eve:entities")
    assert sorted(e["name"] for e in index["entries"]) == ["Beta", "Switch Alpha to tCPA"]
    rows = await db.all(
        "SELECT count(*) AS n FROM entity_versions WHERE user_id = ? AND change_kind = ?",
        ["eve", "expired"],
    )
    assert rows[0]["n"] == 1


async def test_a_request_that_fails_inside_the_app_leaves_no_half_change_behind(
    client: httpx.AsyncClient, memkv: InMemoryKV, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app answers an error instead of raising it, so the writer must read the answer."""
    from entity_memory.storage.store import EntityStore

    assert (await put(client, "zed", "s1", campaign("Alpha"))).status_code == 200

    async def half_done(self: EntityStore, key: str) -> tuple[bool, Any]:
        index = await self.read_index(key.split(":")[1])  # entity:<user>:<type>:<id>
        index.entries[0].importance = 0.0  # a change to an entry the writer holds, then a fault
        raise RuntimeError("KV: 503")

    monkeypatch.setattr(EntityStore, "delete_document", half_done)
    assert (await client.delete("/v1/users/zed/entities/campaign/alpha")).status_code >= 500
    monkeypatch.undo()
    assert (await put(client, "zed", "s2", campaign("Beta"))).status_code == 200
    index = await memkv.get_json("index:zed:entities")
    assert {e["name"]: e["importance"] for e in index["entries"]} == {"Alpha": 0.5, "Beta": 0.5}


async def test_the_writer_checks_a_reported_expiry_against_kv_not_its_copy(
    client: httpx.AsyncClient, memkv: InMemoryKV, clock: Clock, twin: WriterTwin
) -> None:
    """A document the writer read from KV is trusted for a while; whether it expired is KV's
    to say (found in review: the writer kept answering 'not expired')."""
    assert (await put(client, "ivo", "s1", _metric(), _decision())).status_code == 200
    twin.writers.pop("ivo")  # a writer whose storage does not know the documents
    clock.advance(METRIC_TTL_MS - 30 * 60 * 1000)
    assert (await put(client, "ivo", "s1", _metric(), _decision())).status_code == 200
    clock.advance(31 * 60 * 1000)  # the metric has expired in KV, within the writer's trust
    r = await client.post("/v1/users/ivo/context", json={"task": "Alpha CPA"})
    assert [e["type"] for e in r.json()["entities"]] == ["decision"]
    index = await memkv.get_json("index:ivo:entities")
    assert [e["name"] for e in index["entries"]] == ["Switch Alpha to tCPA"]


async def test_a_context_request_does_not_wait_for_the_writer_to_drop_expiries(
    twin: WriterTwin, counted: CountingKV, clock: Clock, db: Any, memkv: InMemoryKV
) -> None:
    deferred: list[Any] = []
    worker = Bindings(kv=counted, db=db, clock=clock, writers=twin.stub, defer=deferred.append)
    app = create_app(lambda env: replace(worker))
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as c:
        assert (await put(c, "uma", "s1", _metric(), _decision())).status_code == 200
        clock.advance(METRIC_TTL_MS + 1)
        r = await c.post("/v1/users/uma/context", json={"task": "Alpha CPA"})
        assert [e["type"] for e in r.json()["entities"]] == ["decision"]
        assert len(deferred) == 1  # answered; the report runs after the response
        await deferred.pop()
    index = await memkv.get_json("index:uma:entities")
    assert [e["name"] for e in index["entries"]] == ["Switch Alpha to tCPA"]
