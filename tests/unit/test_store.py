import json

import pytest

from entity_memory.domain.context import assemble_entity_context
from entity_memory.domain.keys import InvalidId
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.entity_removal import remove_entity
from entity_memory.service.reindex import reindex
from entity_memory.service.retrieval import retrieve_for_context
from entity_memory.settings import Settings
from entity_memory.storage.kv import CountingKV, InMemoryKV
from entity_memory.storage.store import EntityStore

from .conftest import DAY, METRIC_TTL_MS, T0, Clock, upsert_one
from .factories import all_five, campaign, decision, metric, pain_point, preference

TTL_DAYS = {"preference": 180, "pain_point": 180, "decision": 365, "campaign": 180, "metric": 180}


async def test_campaign_is_stored_under_the_spec_key_with_exact_json(
    store: EntityStore, memkv: InMemoryKV
) -> None:
    [res] = await upsert_batch(store, "u1", [campaign()], "s1")
    assert res.key == "entity:u1:campaign:campaign-alpha"
    assert res.status == "created"
    raw, meta = await memkv.get_with_metadata("entity:u1:campaign:campaign-alpha")
    assert raw == {
        "id": "campaign-alpha",
        "userId": "u1",
        "type": "campaign",
        "name": "Campaign Alpha",
        "content": "Campaign Alpha: search campaign on target CPA, budget $150/day",
        "importance": 0.7,
        "createdAt": T0,
        "updatedAt": T0,
        "sessionId": "s1",
        "version": 1,
        "aliases": [],
        "provenance": [],
        "extractor": "api",
        "metadata": {
            "campaignId": None,
            "strategy": "target CPA",
            "budget": 150.0,
            "status": "enabled",
            "lastPerformance": None,
        },
    }
    assert meta == {
        "type": "campaign",
        "importance": 0.7,
        "updatedAt": T0,
        "name": "Campaign Alpha",
    }


async def test_every_type_gets_its_key_metadata_and_ttl(
    store: EntityStore, memkv: InMemoryKV
) -> None:
    results = await upsert_batch(store, "u1", all_five(), "s1")
    keys = sorted(r.key for r in results)
    assert keys == [
        "entity:u1:campaign:campaign-alpha",
        "entity:u1:decision:switch-alpha-to-tcpa",
        "entity:u1:metric:alpha-cpa",
        "entity:u1:pain_point:conversion-tracking-gaps",
        "entity:u1:preference:concise-weekly-summaries",
    ]
    for r in results:
        assert memkv.expiration_of(r.key) == (T0 + TTL_DAYS[r.entity.type] * DAY) // 1000
        _, meta = await memkv.get_with_metadata(r.key)
        assert meta == {
            "type": r.entity.type,
            "importance": r.entity.importance,
            "updatedAt": T0,
            "name": r.entity.name,
        }
    metric_doc = await memkv.get_json("entity:u1:metric:alpha-cpa")
    assert metric_doc["metadata"] == {
        "kpi": "CPA",
        "value": 42.0,
        "unit": "USD",
        "campaign": "Campaign Alpha",
        "history": [{"value": 42.0, "at": T0, "sessionId": "s1"}],
    }
    pref = await memkv.get_json("entity:u1:preference:concise-weekly-summaries")
    assert pref["metadata"] == {
        "category": "reporting",
        "value": "concise weekly bullets",
        "confidence": 0.9,
    }
    pain = await memkv.get_json("entity:u1:pain_point:conversion-tracking-gaps")
    assert pain["metadata"] == {
        "severity": "high",
        "frequency": 1,
        "resolved": False,
        "relatedCampaigns": ["campaign-alpha"],
    }
    decision = await memkv.get_json("entity:u1:decision:switch-alpha-to-tcpa")
    assert decision["metadata"]["affectedEntities"] == ["campaign-alpha"]
    assert decision["metadata"]["reversible"] is True


async def test_index_holds_the_spec_fields_for_each_entity(
    store: EntityStore, memkv: InMemoryKV
) -> None:
    await upsert_batch(store, "u1", all_five(), "s1")
    index = await memkv.get_json("index:u1:entities")
    assert [(e["type"], e["id"]) for e in index["entries"]] == [
        ("campaign", "campaign-alpha"),
        ("metric", "alpha-cpa"),
        ("decision", "switch-alpha-to-tcpa"),
        ("pain_point", "conversion-tracking-gaps"),
        ("preference", "concise-weekly-summaries"),
    ]
    first = index["entries"][0]
    assert {k: first[k] for k in ("id", "type", "name", "importance", "updatedAt")} == {
        "id": "campaign-alpha",
        "type": "campaign",
        "name": "Campaign Alpha",
        "importance": 0.7,
        "updatedAt": T0,
    }
    assert "alpha" in first["keywords"] and "tcpa" in first["keywords"]


async def test_ttls_come_from_settings(memkv: InMemoryKV, clock: Clock) -> None:
    settings = Settings.from_env({"TTL_DAYS_METRIC": "7", "TTL_DAYS_CAMPAIGN": " 90 "}.get)
    store = EntityStore(memkv, settings, clock)
    await upsert_batch(store, "u1", [metric(), campaign()], "s1")
    assert memkv.expiration_of("entity:u1:metric:alpha-cpa") == (T0 + 7 * DAY) // 1000
    assert memkv.expiration_of("entity:u1:campaign:campaign-alpha") == (T0 + 90 * DAY) // 1000
    with pytest.raises(ValueError):
        Settings.from_env({"TTL_DAYS_METRIC": "0"}.get)


async def test_upsert_bumps_version_keeps_created_at_and_updates_fields(
    store: EntityStore, clock: Clock
) -> None:
    await upsert_one(store, "u1", campaign(), "s1")
    clock.advance(DAY)
    res = await upsert_one(
        store,
        "u1",
        campaign(content="Alpha moved to maximize conversions", metadata={"strategy": "max conv"}),
        "s2",
    )
    assert res.status == "updated"
    e = res.entity
    assert (e.version, e.created_at, e.updated_at, e.session_id) == (2, T0, T0 + DAY, "s2")
    assert e.content == "Alpha moved to maximize conversions"
    # Fields the new mention did not give are kept, not erased.
    assert e.metadata.strategy == "max conv" and e.metadata.budget == 150  # type: ignore[attr-defined]
    assert res.changes["metadata.strategy"].old == "target CPA"
    assert res.changes["metadata.strategy"].new == "max conv"
    clock.advance(DAY)
    e3 = (await upsert_one(store, "u1", campaign(content="third"), "s3")).entity
    assert (e3.version, e3.created_at) == (3, T0)


async def test_lower_importance_is_averaged_higher_replaces(store: EntityStore) -> None:
    await upsert_one(store, "u1", campaign(importance=0.9), "s1")
    lower = await upsert_one(store, "u1", campaign(importance=0.5, content="changed"), "s2")
    assert lower.entity.importance == pytest.approx(0.7)
    higher = await upsert_one(store, "u1", campaign(importance=0.95, content="again"), "s3")
    assert higher.entity.importance == pytest.approx(0.95)


async def test_same_name_differently_written_lands_on_one_key(
    store: EntityStore, memkv: InMemoryKV
) -> None:
    await upsert_one(store, "u1", campaign(name="Campaign Alpha"), "s1")
    res = await upsert_one(store, "u1", campaign(name="campaign  alpha", content="new"), "s2")
    assert res.key == "entity:u1:campaign:campaign-alpha" and res.entity.version == 2
    assert res.entity.name == "Campaign Alpha"  # the first spelling stays canonical
    assert len((await memkv.list(prefix="entity:u1:")).keys) == 1


async def test_an_identical_re_upsert_writes_nothing(store: EntityStore, kv: CountingKV) -> None:
    await upsert_batch(store, "u1", all_five(), "s1")
    kv.ops.clear()
    results = await upsert_batch(store, "u1", all_five(), "s1")
    assert {r.status for r in results} == {"unchanged"}
    assert {r.entity.version for r in results} == {1}
    assert kv.writes == 0
    assert dict(kv.ops) == {"get_bulk": 1, "get": 1}


async def test_an_unchanged_entity_missing_from_the_index_is_indexed_again(
    store: EntityStore, kv: CountingKV
) -> None:
    """A crash between the entity write and the index write leaves the entity unindexed; the
    client's retry finds it unchanged and must still put it back in the index."""
    await upsert_batch(store, "u1", all_five(), "s1")
    await kv.put("index:u1:entities", json.dumps({"entries": []}))
    kv.ops.clear()
    results = await upsert_batch(store, "u1", all_five(), "s1")
    assert {r.status for r in results} == {"unchanged"}
    assert len((await store.read_index("u1")).entries) == 5
    assert kv.ops["put"] == 1  # the index only: the entities are unchanged


async def test_batch_costs_one_bulk_read_one_index_read_one_index_write(
    store: EntityStore, kv: CountingKV
) -> None:
    items = [campaign(name=f"Campaign {i}") for i in range(20)]
    await upsert_batch(store, "u1", items, "s1")
    assert dict(kv.ops) == {"get_bulk": 1, "get": 1, "put": 21}
    assert kv.keys_read["index:u1:entities"] == 1
    assert kv.keys_written["index:u1:entities"] == 1
    assert max(kv.keys_written.values()) == 1  # no key written twice (1 write/s/key)


async def test_entity_named_twice_in_a_batch_is_written_once(
    store: EntityStore, kv: CountingKV
) -> None:
    results = await upsert_batch(
        store, "u1", [campaign(), campaign(content="later in the same session")], "s1"
    )
    assert [r.status for r in results] == ["created", "updated"]
    assert kv.keys_written["entity:u1:campaign:campaign-alpha"] == 1
    stored = await store.get("u1", "campaign", "campaign-alpha")
    assert stored is not None and stored.content == "later in the same session"


async def test_metric_values_accumulate_a_bounded_history(store: EntityStore, clock: Clock) -> None:
    for i, value in enumerate([50.0, 46.0, 42.0]):
        await upsert_one(store, "u1", metric(value=value), f"s{i}")
        clock.advance(DAY)
    m = await store.get("u1", "metric", "alpha-cpa")
    assert m is not None and m.version == 3
    assert [(h.value, h.at, h.session_id) for h in m.metadata.history] == [  # type: ignore[attr-defined]
        (50.0, T0, "s0"),
        (46.0, T0 + DAY, "s1"),
        (42.0, T0 + 2 * DAY, "s2"),
    ]
    for i in range(30):
        await upsert_one(store, "u1", metric(value=100.0 + i), f"t{i}")
    m = await store.get("u1", "metric", "alpha-cpa")
    assert m is not None and len(m.metadata.history) == 20  # type: ignore[attr-defined]
    assert m.metadata.history[-1].value == 129.0  # type: ignore[attr-defined]


async def test_pain_point_recurring_in_a_new_session_counts_up(store: EntityStore) -> None:
    await upsert_one(store, "u1", pain_point(), "s1")
    again = await upsert_one(store, "u1", pain_point(content="Tracking broke again"), "s2")
    assert again.entity.metadata.frequency == 2  # type: ignore[attr-defined]
    assert again.entity.metadata.resolved is False  # type: ignore[attr-defined]
    fixed = await upsert_one(
        store,
        "u1",
        pain_point(metadata={"resolved": True}, content="Fixed by server-side tagging"),
        "s3",
    )
    # The session that says it is fixed is no new occurrence of it.
    assert fixed.entity.metadata.frequency == 2  # type: ignore[attr-defined]
    assert fixed.entity.metadata.resolved is True  # type: ignore[attr-defined]
    assert fixed.entity.metadata.severity == "high"  # type: ignore[attr-defined]


async def test_renaming_by_explicit_id_keeps_the_old_name_as_alias(store: EntityStore) -> None:
    await upsert_one(store, "u1", campaign(name="Alpha", id="c-1"), "s1")
    res = await upsert_one(store, "u1", campaign(name="Alpha Search US", id="c-1"), "s2")
    assert res.entity.name == "Alpha Search US" and res.entity.aliases == ["Alpha"]


async def test_get_list_and_delete(store: EntityStore, clock: Clock, memkv: InMemoryKV) -> None:
    await upsert_batch(store, "u1", [campaign(), preference()], "s1")
    clock.advance(1000)
    await upsert_one(store, "u1", metric(), "s2")
    assert [e.id for e in await store.list("u1")] == [
        "alpha-cpa",
        "campaign-alpha",
        "concise-weekly-summaries",
    ]
    assert [e.id for e in await store.list("u1", "preference")] == ["concise-weekly-summaries"]
    assert await remove_entity(store, "u1", "campaign", "campaign-alpha") is True
    assert await store.get("u1", "campaign", "campaign-alpha") is None
    assert [e.id for e in await store.list("u1")] == ["alpha-cpa", "concise-weekly-summaries"]
    assert await remove_entity(store, "u1", "campaign", "campaign-alpha") is False


async def test_users_never_see_each_other(store: EntityStore) -> None:
    await upsert_one(store, "ann", campaign(), "s1")
    assert await store.get("anna", "campaign", "campaign-alpha") is None
    assert await store.list("anna") == []
    assert (await retrieve_for_context(store, "anna", "Campaign Alpha")).entities == []


async def test_invalid_ids_reach_no_key(store: EntityStore, kv: CountingKV) -> None:
    with pytest.raises(InvalidId):
        await upsert_batch(store, "a:b", [campaign()], "s1")
    with pytest.raises(InvalidId):
        await upsert_batch(store, "u1", [campaign()], "bad session")
    assert kv.ops.total() == 0


async def test_expired_entities_drop_out_of_retrieval(store: EntityStore, clock: Clock) -> None:
    await upsert_batch(store, "u1", [metric(), decision()], "s1")
    clock.advance(METRIC_TTL_MS + DAY)  # decisions live longer than metrics
    found = await retrieve_for_context(store, "u1", "Alpha CPA")
    assert [e.type for e in found.entities] == ["decision"]


async def test_retrieval_reads_the_index_once_and_bulk_gets(
    store: EntityStore, kv: CountingKV
) -> None:
    await upsert_batch(store, "u1", [campaign(name=f"Campaign {i}") for i in range(60)], "s1")
    await upsert_batch(store, "u1", [campaign(name=f"Campaign {i}") for i in range(60, 150)], "s1")
    kv.ops.clear()
    found = await retrieve_for_context(store, "u1", "search campaigns", limit=100)
    assert len(found.entities) == 100
    assert dict(kv.ops) == {"get": 1, "get_bulk": 1}
    kv.ops.clear()
    assert len((await retrieve_for_context(store, "u1", "budget", limit=20)).entities) == 20
    assert dict(kv.ops) == {"get": 1, "get_bulk": 1}


async def test_corrupt_index_is_treated_as_empty_not_fatal(
    store: EntityStore, memkv: InMemoryKV
) -> None:
    await memkv.put("index:u1:entities", json.dumps({"entries": "oops"}))
    assert await store.list("u1") == []


async def test_index_is_capped_by_importance_and_entities_stay(
    memkv: InMemoryKV, clock: Clock
) -> None:
    store = EntityStore(memkv, Settings(), clock, max_index_entries=3)
    items = [campaign(name=f"C{i}", importance=i / 10) for i in range(5)]
    await upsert_batch(store, "u1", items, "s1")
    assert sorted(e.name for e in await store.list("u1")) == ["C2", "C3", "C4"]
    # The dropped ones are still stored and readable, and reindex keeps the same cap.
    assert (await store.get("u1", "campaign", "c0")) is not None
    await reindex(store, "u1")
    assert sorted(e.name for e in await store.list("u1")) == ["C2", "C3", "C4"]


async def test_a_japanese_task_finds_its_japanese_entity(store: EntityStore) -> None:
    ja = campaign(name="ブランド検索キャンペーン", content="ブランド名の検索広告。目標CPAで入札")
    others = [campaign(name=f"Campaign {n}", content="search ads") for n in ("Kilo", "Lima")]
    await upsert_batch(store, "u1", [*others, ja], "s1")
    found = await retrieve_for_context(store, "u1", "ブランド検索の入札戦略を見直したい", limit=1)
    assert [e.name for e in found.entities] == ["ブランド検索キャンペーン"]
    assert found.scores[0].relevance > 0


async def test_a_field_edited_by_put_shows_in_the_next_block(store: EntityStore) -> None:
    """Issue 22 acceptance: the next context reads the current field, not the old sentence."""
    await upsert_one(store, "u1", campaign(), "s1")
    await upsert_one(store, "u1", campaign(metadata={"strategy": "Target CPA $30"}), "s2")
    stored = await store.get("u1", "campaign", "campaign-alpha")
    assert stored is not None
    assert "strategy Target CPA $30" in assemble_entity_context([stored])
