"""An isolate's parsed indexes: reused only for the bytes they were parsed from, bounded."""

from __future__ import annotations

from entity_memory.domain.keys import index_key
from entity_memory.domain.models import RankEntry, RankIndex
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.retrieval import retrieve_for_context
from entity_memory.settings import Settings
from entity_memory.storage.index_snapshots import IndexSnapshots
from entity_memory.storage.kv import CountingKV
from entity_memory.storage.store import EntityStore

from .conftest import Clock
from .factories import campaign, metric


def reader(kv: CountingKV, clock: Clock, snapshots: IndexSnapshots) -> EntityStore:
    """A Worker request's store: a new one per request, the isolate's snapshots shared."""
    return EntityStore(kv, Settings(), clock, snapshots=snapshots)


async def test_an_unchanged_index_is_parsed_once_and_still_read_from_kv_each_time(
    kv: CountingKV, clock: Clock
) -> None:
    snapshots = IndexSnapshots()
    await upsert_batch(EntityStore(kv, Settings(), clock), "u", [campaign()], "s1")
    first = await reader(kv, clock, snapshots).read_index_shared("u")
    reads = kv.reads
    again = await reader(kv, clock, snapshots).read_index_shared("u")
    assert again is first
    assert kv.reads == reads + 1  # KV answers every request; only the parse is saved
    assert (snapshots.hits, snapshots.misses) == (1, 1)


async def test_a_reader_parses_only_what_ranking_reads(kv: CountingKV, clock: Clock) -> None:
    """Context requests parse `RankEntry`s (the writer's fields left out), with or without the
    isolate's snapshots; the writer's own read keeps every field."""
    await upsert_batch(EntityStore(kv, Settings(), clock), "u", [campaign(), metric()], "s1")
    for store in (reader(kv, clock, IndexSnapshots()), EntityStore(kv, Settings(), clock)):
        index = await store.read_index_shared("u")
        assert type(index) is RankIndex and {type(e) for e in index.entries} == {RankEntry}
        assert [e.links for e in index.entries] == [None, ["campaign-alpha"]]
    full = await EntityStore(kv, Settings(), clock).read_index("u")
    assert [e.kpi for e in full.entries] == [None, "CPA"] and full.entries[1].version == 1


async def test_a_write_between_requests_is_seen_by_the_next_context(
    kv: CountingKV, clock: Clock
) -> None:
    snapshots = IndexSnapshots()
    writer = EntityStore(kv, Settings(), clock)
    await upsert_batch(writer, "u", [campaign("Campaign Alpha")], "s1")
    found = await retrieve_for_context(reader(kv, clock, snapshots), "u", "Campaign Alpha CPA")
    assert [e.name for e in found.entities] == ["Campaign Alpha"]
    await upsert_batch(writer, "u", [metric("Alpha CPA", 31.0)], "s2")
    found = await retrieve_for_context(reader(kv, clock, snapshots), "u", "Campaign Alpha CPA")
    assert {e.name for e in found.entities} == {"Campaign Alpha", "Alpha CPA"}


async def test_an_index_gone_from_kv_is_not_served_from_the_snapshot(
    kv: CountingKV, clock: Clock
) -> None:
    snapshots = IndexSnapshots()
    await upsert_batch(EntityStore(kv, Settings(), clock), "u", [campaign()], "s1")
    assert (await reader(kv, clock, snapshots).read_index_shared("u")).entries
    await kv.delete(index_key("u"))
    assert (await reader(kv, clock, snapshots).read_index_shared("u")).entries == []
    assert snapshots.held_bytes() == 0


async def test_snapshots_keep_the_most_recent_users_within_their_byte_bound(
    kv: CountingKV, clock: Clock
) -> None:
    writer = EntityStore(kv, Settings(), clock)
    for user in ("a", "b", "c"):
        await upsert_batch(writer, user, [campaign(f"Campaign {user}")], "s1")
    one = len((await kv.get_text(index_key("a"))) or "")
    snapshots = IndexSnapshots(max_bytes=2 * one + one // 2)  # room for two
    for user in ("a", "b", "a", "c"):
        await reader(kv, clock, snapshots).read_index_shared(user)
    assert snapshots.held_bytes() <= snapshots.max_bytes
    hits = snapshots.hits
    await reader(kv, clock, snapshots).read_index_shared("a")  # used recently: kept
    await reader(kv, clock, snapshots).read_index_shared("b")  # least recent: dropped for c
    assert snapshots.hits == hits + 1


async def test_an_index_over_the_bound_is_parsed_every_time_and_never_kept(
    kv: CountingKV, clock: Clock
) -> None:
    snapshots = IndexSnapshots(max_bytes=10)
    await upsert_batch(EntityStore(kv, Settings(), clock), "u", [campaign()], "s1")
    for _ in range(2):
        assert (await reader(kv, clock, snapshots).read_index_shared("u")).entries
    assert snapshots.hits == 0 and snapshots.held_bytes() == 0
