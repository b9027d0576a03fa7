import asyncio
import json
from typing import Any

import pytest

from entity_memory.domain.merge import Change
from entity_memory.domain.models import METRIC_HISTORY_LIMIT, EntityInputBase, parse_entity
from entity_memory.domain.trends import better_direction, metric_trends, trend_of
from entity_memory.service.batch_upsert import upsert_batch
from entity_memory.service.entity_removal import remove_entity
from entity_memory.service.erasure import forget_user
from entity_memory.service.maintenance import reindex_recent_users
from entity_memory.service.reindex import reindex
from entity_memory.service.retrieval import retrieve_for_context
from entity_memory.service.version_rows import change_kind
from entity_memory.storage.d1 import CountingD1, SQLiteD1
from entity_memory.storage.kv import CountingKV, InMemoryKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

from .conftest import DAY, METRIC_TTL_MS, REPO, T0, Clock, upsert_one
from .factories import all_five, campaign, decision, metric, pain_point


async def rows(db: CountingD1, sql: str, *params: Any) -> list[dict[str, Any]]:
    return await db.inner.all(sql, params)


async def test_three_upserts_with_a_strategy_change_give_three_versions(
    lstore: EntityStore, ledger: Ledger, clock: Clock
) -> None:
    await upsert_one(lstore, "u1", campaign(), "s1")
    clock.advance(DAY)
    await upsert_one(lstore, "u1", campaign(content="Alpha is doing fine on tCPA"), "s2")
    clock.advance(DAY)
    await upsert_one(
        lstore,
        "u1",
        campaign(content="Alpha moved to max conversions", metadata={"strategy": "max conv"}),
        "s3",
    )
    history = await ledger.history("u1", "campaign", "campaign-alpha")
    assert [(h["version"], h["changeKind"], h["sessionId"]) for h in history] == [
        (3, "contradicted", "s3"),
        (2, "updated", "s2"),
        (1, "created", "s1"),
    ]
    assert history[0]["changes"]["metadata.strategy"] == {"old": "target CPA", "new": "max conv"}
    assert history[0]["recordedAt"] == T0 + 2 * DAY
    assert history[0]["entity"]["metadata"]["strategy"] == "max conv"
    assert history[1]["changes"] == {
        "content": {
            "old": "Campaign Alpha: search campaign on target CPA, budget $150/day",
            "new": "Alpha is doing fine on tCPA",
        }
    }
    assert history[2]["entity"]["version"] == 1


async def test_batch_of_twenty_is_one_d1_round_trip(
    lstore: EntityStore, db: CountingD1, kv: CountingKV
) -> None:
    items = [metric(name=f"Metric {i}", value=float(i)) for i in range(10)]
    items += [campaign(name=f"Campaign {i}") for i in range(10)]
    await upsert_batch(lstore, "u1", items, "s1")
    assert db.calls == 1
    # 20 versions + 10 metric observations + 1 user-activity upsert.
    assert db.statements == 31
    assert dict(kv.ops) == {"get_bulk": 1, "get": 1, "put": 21}


async def test_no_op_re_upsert_writes_nothing_anywhere(
    lstore: EntityStore, db: CountingD1, kv: CountingKV
) -> None:
    await upsert_batch(lstore, "u1", all_five(), "s1")
    db.calls = db.statements = 0
    db.by_verb.clear()
    kv.ops.clear()
    await upsert_batch(lstore, "u1", all_five(), "s1")
    # One read checks the ledger already holds these versions; nothing is written.
    assert (db.calls, dict(db.by_verb)) == (1, {"SELECT": 1}) and kv.writes == 0
    assert len(await rows(db, "SELECT * FROM entity_versions")) == 5


async def test_metric_values_are_observations_and_contradictions(
    lstore: EntityStore, ledger: Ledger, db: CountingD1, clock: Clock
) -> None:
    for i, value in enumerate([52.0, 47.0, 41.0]):
        await upsert_one(lstore, "u1", metric(value=value), f"s{i}")
        clock.advance(DAY)
    obs = await ledger.metric_observations("u1")
    assert [(o["value"], o["observed_at"], o["session_id"]) for o in obs] == [
        (52.0, T0, "s0"),
        (47.0, T0 + DAY, "s1"),
        (41.0, T0 + 2 * DAY, "s2"),
    ]
    history = await ledger.history("u1", "metric", "alpha-cpa")
    assert history[0]["changeKind"] == "contradicted"
    assert history[0]["changes"]["metadata.value"] == {"old": 47.0, "new": 41.0}
    stored = await lstore.get("u1", "metric", "alpha-cpa")
    assert [h.value for h in stored.metadata.history] == [52.0, 47.0, 41.0]  # type: ignore


@pytest.mark.parametrize(
    ("kpi", "values", "trend"),
    [
        ("CPA", [52, 47, 41], "improving"),
        ("ROAS", [3.1, 2.8, 2.2], "worsening"),
        ("cost per click", [1.2, 1.5], "worsening"),
        ("CTR", [1.1, 1.4], "improving"),
        ("conversion rate", [2.0, 2.01], "flat"),
        ("Mystery KPI", [1, 2], "unknown"),
    ],
)
def test_trend_direction_knows_which_way_is_good(kpi: str, values: list, trend: str) -> None:
    assert trend_of(kpi, values[0], values[-1])[1] == trend


@pytest.mark.parametrize(
    ("kpi", "better"),
    [
        ("CPA", "lower"),
        ("cost per click", "lower"),
        ("CTR", "higher"),
        ("ROAS", "higher"),
        ("Mystery KPI", None),
    ],
)
def test_the_better_direction_is_the_kpis_not_the_movements(kpi: str, better: str) -> None:
    # A CTR that fell is still a KPI where higher is better (the inspector's sentence).
    assert better_direction(kpi) == better
    assert trend_of("CTR", 10.4, 8.7) == ("down", "worsening")


async def test_trends_endpoint_data(lstore: EntityStore, ledger: Ledger, clock: Clock) -> None:
    for i, (cpa, roas) in enumerate([(52.0, 3.1), (47.0, 2.8), (41.0, 2.2)]):
        await upsert_batch(
            lstore,
            "u1",
            [
                metric(value=cpa),
                metric(
                    name="Alpha ROAS",
                    value=roas,
                    content=f"ROAS {roas}",
                    metadata={"kpi": "ROAS", "value": roas, "unit": "x"},
                ),
                pain_point(content=f"tracking broke again ({i})"),
            ],
            f"s{i}",
        )
        clock.advance(DAY)
    trends = {t["id"]: t for t in metric_trends(await ledger.metric_observations("u1"))}
    assert trends["alpha-cpa"] | {} == {
        "id": "alpha-cpa",
        "kpi": "CPA",
        "campaign": "Campaign Alpha",
        "unit": "USD",
        "first": 52.0,
        "last": 41.0,
        "min": 41.0,
        "max": 52.0,
        "observations": 3,
        "firstAt": T0,
        "lastAt": T0 + 2 * DAY,
        "direction": "down",
        "trend": "improving",
        "better": "lower",
    }
    assert trends["alpha-roas"]["trend"] == "worsening"


async def test_a_value_told_late_about_an_earlier_day_takes_its_place_in_the_trend(
    lstore: EntityStore, ledger: Ledger, clock: Clock
) -> None:
    def cpa(value: float, day: str) -> EntityInputBase:
        meta = {"kpi": "CPA", "value": value, "unit": "USD", "observedOn": day}
        return metric(value=value, metadata=meta)

    await upsert_one(lstore, "u1", cpa(41.0, "2026-03-01"), "s1")
    clock.advance(DAY)
    # The backfill: a value measured weeks before the one already stored.
    await upsert_one(lstore, "u1", cpa(52.0, "2026-02-01"), "s2")
    (trend,) = metric_trends(await ledger.metric_observations("u1"))
    assert (trend["first"], trend["last"], trend["trend"]) == (52.0, 41.0, "improving")
    assert trend["firstAt"] < trend["lastAt"]
    stored = await lstore.get("u1", "metric", "alpha-cpa")
    assert stored.metadata.value == 41.0  # type: ignore[attr-defined]


async def test_a_backfill_older_than_what_kv_keeps_is_in_the_ledger(
    lstore: EntityStore, ledger: Ledger
) -> None:
    await upsert_one(lstore, "u1", metric(value=23.0), "now")
    older = METRIC_HISTORY_LIMIT + 4
    for i in range(older):
        meta = {"kpi": "CPA", "value": 40.0 + i, "observedOn": f"2025-01-{1 + i:02d}"}
        await upsert_one(lstore, "u1", metric(value=40.0 + i, metadata=meta), f"old{i}")
    stored = await lstore.get("u1", "metric", "alpha-cpa")
    kept = stored.metadata.history  # type: ignore[union-attr]
    assert len(kept) == METRIC_HISTORY_LIMIT and kept[-1].value == 23.0
    rows = await ledger.metric_observations("u1")
    assert len(rows) == older + 1 and rows[-1]["value"] == 23.0


def test_the_same_words_written_otherwise_are_no_contradiction() -> None:
    assert change_kind("updated", {"metadata.strategy": Change("target CPA", "Target CPA")}) == (
        "updated"
    )
    assert change_kind("updated", {"metadata.strategy": Change("target CPA", "max conv")}) == (
        "contradicted"
    )


async def test_the_ledger_holds_the_series_kv_holds(
    lstore: EntityStore, ledger: Ledger, clock: Clock
) -> None:
    """An import dating its values on three days in one session: three rows; a later chunk of
    one session restating its undated value: the row is replaced, not kept beside it."""
    for value, day in ((3.1, "2026-01-05"), (3.6, "2026-02-05"), (4.0, "2026-03-05")):
        meta = {"kpi": "ROAS", "value": value, "observedOn": day}
        await upsert_one(lstore, "u1", metric(name="Alpha ROAS", value=value, metadata=meta), "imp")
    await upsert_one(lstore, "u1", metric(value=52.0), "s1")
    clock.advance(60_000)
    await upsert_one(lstore, "u1", metric(value=47.0), "s1")  # the session's later chunk
    rows = await ledger.metric_observations("u1")
    series = {
        m: [r["value"] for r in rows if r["metric_id"] == m] for m in ("alpha-roas", "alpha-cpa")
    }
    assert series == {"alpha-roas": [3.1, 3.6, 4.0], "alpha-cpa": [47.0]}
    for trend in metric_trends(rows):
        stored = await lstore.get("u1", "metric", trend["id"])
        assert trend["last"] == stored.metadata.value  # type: ignore[union-attr]


async def test_changes_since_returns_only_later_changes(
    lstore: EntityStore, ledger: Ledger, clock: Clock
) -> None:
    await upsert_batch(lstore, "u1", all_five(), "s1")
    clock.advance(DAY)
    since = clock.now
    clock.advance(1)
    await upsert_one(lstore, "u1", campaign(metadata={"budget": 300}), "s2")
    await remove_entity(lstore, "u1", "pain_point", "conversion-tracking-gaps")
    grouped = await ledger.changes_since("u1", since)
    assert [(g["type"], g["id"]) for g in grouped] == [
        ("campaign", "campaign-alpha"),
        ("pain_point", "conversion-tracking-gaps"),
    ]
    assert grouped[0]["changes"][0]["changes"]["metadata.budget"] == {"old": 150.0, "new": 300.0}
    assert grouped[0]["current"]["metadata"]["budget"] == 300.0
    assert grouped[0]["status"] == "live"
    assert grouped[1]["changes"][0]["changeKind"] == "deleted"
    # Only the deletion is in the window: the name comes from the last recorded version.
    assert grouped[1]["status"] == "deleted" and grouped[1]["name"] == "Conversion tracking gaps"
    assert await ledger.changes_since("u1", clock.now) == []


async def test_a_deletion_is_its_own_version_and_changes_show_the_entity_deleted(
    lstore: EntityStore, ledger: Ledger, clock: Clock
) -> None:
    await upsert_one(lstore, "u1", campaign(), "s1")
    since = clock.now
    clock.advance(1)
    await upsert_one(lstore, "u1", campaign(metadata={"budget": 300}), "s2")
    clock.advance(1)
    assert await remove_entity(lstore, "u1", "campaign", "campaign-alpha")
    history = await ledger.history("u1", "campaign", "campaign-alpha")
    assert [(h["version"], h["changeKind"]) for h in history] == [
        (3, "deleted"),
        (2, "contradicted"),
        (1, "created"),
    ]
    [group] = await ledger.changes_since("u1", since)
    assert group["status"] == "deleted"
    assert "current" not in group
    assert group["name"] == "Campaign Alpha"
    assert [c["version"] for c in group["changes"]] == [2, 3]


async def test_forget_user_erases_kv_and_d1_and_spares_others(
    lstore: EntityStore, memkv: InMemoryKV, db: CountingD1
) -> None:
    await upsert_batch(lstore, "ann", all_five(), "s1")
    await upsert_batch(lstore, "anna", all_five(), "s1")
    # An entity the index lost must be found too: erase goes by listing, not by the index.
    await memkv.put("entity:ann:campaign:orphan", json.dumps({"x": 1}))
    result = await forget_user(lstore, "ann")
    assert result["complete"] is True and result["kvKeysDeleted"] == 7
    assert result["ledgerRowsDeleted"]["entity_versions"] == 5
    assert (await memkv.list(prefix="entity:ann:")).keys == []
    assert await memkv.get_json("index:ann:entities") is None
    for table in ("entity_versions", "metric_observations", "processed_sessions", "user_activity"):
        assert await rows(db, f"SELECT * FROM {table} WHERE user_id = 'ann'") == []
    assert len((await memkv.list(prefix="entity:anna:")).keys) == 5
    assert len(await rows(db, "SELECT * FROM entity_versions WHERE user_id = 'anna'")) == 5


async def test_forget_user_in_chunks(lstore: EntityStore, memkv: InMemoryKV) -> None:
    await upsert_batch(lstore, "u1", [campaign(name=f"C{i}") for i in range(30)], "s1")
    first = await forget_user(lstore, "u1", max_keys=20)
    assert first == {"kvKeysDeleted": 20, "complete": False}
    second = await forget_user(lstore, "u1", max_keys=20)
    assert second["complete"] is True and second["kvKeysDeleted"] == 11
    assert memkv._items == {}


class InterleavingKV(InMemoryKV):
    """Yields to the event loop on every call, as a real network KV does."""

    async def get_json(self, key: str) -> Any:
        await asyncio.sleep(0)
        return await super().get_json(key)

    async def get_text(self, key: str) -> str | None:
        await asyncio.sleep(0)
        return await super().get_text(key)

    async def put(self, key: str, value: str, **kw: Any) -> None:
        await asyncio.sleep(0)
        await super().put(key, value, **kw)


async def test_racing_index_writes_lose_an_entry_that_reindex_restores(clock: Clock) -> None:
    kv = InterleavingKV(clock=clock)
    store = EntityStore(kv, clock=clock)
    await asyncio.gather(
        upsert_batch(store, "u1", [campaign(name="Alpha")], "s1"),
        upsert_batch(store, "u1", [campaign(name="Bravo")], "s2"),
    )
    assert len((await kv.list(prefix="entity:u1:")).keys) == 2  # both entities are safe
    assert len(await store.list("u1")) == 1  # but the last index write won
    stats = await reindex(store, "u1")
    assert stats["restored"] == 1 and stats["entries"] == 2
    assert sorted(e.name for e in await store.list("u1")) == ["Alpha", "Bravo"]
    found = await retrieve_for_context(store, "u1", "Bravo")
    assert found.entities[0].name == "Bravo"
    assert (await reindex(store, "u1")) == {
        "entries": 2,
        "restored": 0,
        "dropped": 0,
        "refreshed": 0,
    }


async def test_reindex_rebuilds_the_entries_an_older_version_wrote(store: EntityStore) -> None:
    """An entry without `days` was written before they existed: reindex rebuilds it (its
    keywords, links and days) from the entity, though its `updatedAt` still matches."""
    await upsert_batch(store, "u1", [campaign(name="Alpha"), campaign(name="Bravo")], "s1")
    index = await store.read_index("u1")
    old = index.entries[0]
    old.days, old.keywords = None, []
    await store.write_index("u1", index)
    stats = await reindex(store, "u1")
    assert stats["refreshed"] == 1 and stats["entries"] == 2
    rebuilt = {e.id: e for e in (await store.read_index("u1")).entries}[old.id]
    assert rebuilt.days and rebuilt.keywords
    assert (await reindex(store, "u1"))["refreshed"] == 0


async def test_reindex_drops_entries_whose_entity_is_gone(
    store: EntityStore, memkv: InMemoryKV
) -> None:
    await upsert_batch(store, "u1", all_five(), "s1")
    await memkv.delete("entity:u1:metric:alpha-cpa")
    stats = await reindex(store, "u1")
    assert stats["dropped"] == 1
    assert "alpha-cpa" not in [e.id for e in await store.list("u1")]


async def test_expiry_is_noticed_on_read_and_recorded(
    lstore: EntityStore, ledger: Ledger, clock: Clock
) -> None:
    await upsert_batch(lstore, "u1", [metric(), decision()], "s1")
    clock.advance(METRIC_TTL_MS + DAY)
    found = await retrieve_for_context(lstore, "u1", "Alpha CPA")
    assert [e.type for e in found.entities] == ["decision"]
    assert [e.id for e in await lstore.list("u1")] == ["switch-alpha-to-tcpa"]
    history = await ledger.history("u1", "metric", "alpha-cpa")
    assert [(h["version"], h["changeKind"]) for h in history] == [(2, "expired"), (1, "created")]


async def test_scheduled_reindex_visits_recent_writers(
    lstore: EntityStore, ledger: Ledger, memkv: InMemoryKV, clock: Clock
) -> None:
    await upsert_batch(lstore, "old", [campaign()], "s1")
    clock.advance(DAY)
    await upsert_batch(lstore, "fresh", [campaign(), metric()], "s1")
    await memkv.put("index:fresh:entities", json.dumps({"entries": []}))  # a lost index write
    result = await reindex_recent_users(lstore, ledger)
    assert result["users"] == 1 and result["restored"] == 2
    assert list(result["perUser"]) == ["fresh"]


async def test_export_round_trips(lstore: EntityStore, ledger: Ledger) -> None:
    await upsert_batch(lstore, "u1", all_five(), "s1")
    await upsert_one(lstore, "u1", campaign(metadata={"budget": 200}), "s2")
    entities = await lstore.live_entities("u1")
    versions = await ledger.all_versions("u1")
    doc = json.loads(
        json.dumps({"entities": [e.to_json_dict() for e in entities], "history": versions})
    )
    assert [parse_entity(e) for e in doc["entities"]] == entities
    assert len(doc["history"]) == 6
    assert doc["history"][-1]["entity"]["metadata"]["budget"] == 200


def test_migrations_apply_twice_from_empty() -> None:
    twin = SQLiteD1(migrations=REPO / "migrations")
    twin.migrate(REPO / "migrations")
    tables = {r[0] for r in twin.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {
        "entity_versions",
        "metric_observations",
        "processed_sessions",
        "user_activity",
    } <= tables


async def test_a_version_the_ledger_missed_is_recorded_on_the_next_upsert(
    lstore: EntityStore, db: CountingD1
) -> None:
    await upsert_one(lstore, "u1", campaign(), "s1")
    await db.inner.all("DELETE FROM entity_versions")  # as if the ledger write had failed
    again = await upsert_one(lstore, "u1", campaign(), "s1")
    assert again.status == "unchanged"
    rows = await rows_of(db)
    assert [(r["version"], r["change_kind"]) for r in rows] == [(1, "created")]


async def test_a_deletion_the_ledger_missed_is_recorded_on_retry(
    lstore: EntityStore, memkv: InMemoryKV, db: CountingD1
) -> None:
    await upsert_one(lstore, "u1", campaign(), "s1")
    await memkv.delete("entity:u1:campaign:campaign-alpha")  # KV deleted, ledger write lost
    assert await remove_entity(lstore, "u1", "campaign", "campaign-alpha") is True
    assert [r["change_kind"] for r in await rows_of(db)] == ["created", "deleted"]
    assert await remove_entity(lstore, "u1", "campaign", "campaign-alpha") is False


async def rows_of(db: CountingD1) -> list[dict[str, Any]]:
    return await rows(db, "SELECT version, change_kind FROM entity_versions ORDER BY seq")


async def test_d1_batch_is_atomic() -> None:
    twin = SQLiteD1(migrations=REPO / "migrations")
    ledger = Ledger(twin)
    with pytest.raises(Exception):  # noqa: B017 - sqlite's IntegrityError
        await ledger.write(
            [
                ("INSERT INTO user_activity (user_id, last_write_at) VALUES (?, ?)", ("a", 1)),
                ("INSERT INTO user_activity (user_id, last_write_at) VALUES (?, ?)", ("a", 2)),
            ]
        )
    assert await twin.all("SELECT * FROM user_activity") == []


async def test_store_without_ledger_still_works(clock: Clock) -> None:
    store = EntityStore(CountingKV(InMemoryKV(clock=clock)), clock=clock)
    [r] = await upsert_batch(store, "u1", [campaign()], "s1")
    assert r.status == "created"
