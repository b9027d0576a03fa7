"""service/expiry.py: which index entries have expired, and dropping them once."""

from __future__ import annotations

from entity_memory.domain.models import IndexEntry
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.expiry import drop_expired, expired_entries
from entity_memory.storage.kv import InMemoryKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

from .conftest import DAY, METRIC_TTL_MS, Clock
from .factories import decision, metric


def _entry(kind: str, updated_at: int) -> IndexEntry:
    return IndexEntry(id="x", type=kind, name="X", importance=0.5, updated_at=updated_at)


def test_an_entry_missing_before_its_ttl_is_not_an_expiry(store: EntityStore, clock: Clock) -> None:
    from entity_memory.domain.models import EntityIndex

    index = EntityIndex(entries=[_entry("metric", clock.now - METRIC_TTL_MS + DAY)])
    assert expired_entries(store, index.entries, {("metric", "x")}) == []
    clock.advance(2 * DAY)
    assert [e.id for e in expired_entries(store, index.entries, {("metric", "x")})] == ["x"]
    assert expired_entries(store, index.entries, set()) == []  # present in KV: never expired


async def test_drop_expired_asks_kv_itself_and_records_each_expiry_once(
    clock: Clock, memkv: InMemoryKV, ledger: Ledger
) -> None:
    copy = InMemoryKV(clock=clock)  # the writer's copy; `memkv` is KV itself (the replica)
    store = EntityStore(copy, clock=clock, ledger=ledger, replica=memkv)
    await upsert_batch(store, "u1", [metric(), decision()], "s1")
    refs = [("metric", "alpha-cpa"), ("decision", "switch-alpha-to-tcpa")]
    assert await drop_expired(store, "u1", refs) == 0  # absent from KV, but its TTL runs on
    clock.advance(METRIC_TTL_MS + DAY)  # the metric's TTL ran out (decisions live longer)
    assert await drop_expired(store, "u1", refs) == 1
    assert await drop_expired(store, "u1", refs) == 0
    assert [e.id for e in (await store.read_index("u1")).entries] == ["switch-alpha-to-tcpa"]
    rows = await ledger.db.all(
        "SELECT count(*) AS n FROM entity_versions WHERE change_kind = 'expired'"
    )
    assert rows[0]["n"] == 1
