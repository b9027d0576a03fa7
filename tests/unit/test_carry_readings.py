"""A campaign's newer reading of a KPI lands on that campaign's metric of the KPI, with its
history, only when it is clearly the same series (service/extraction/carry.py)."""

from __future__ import annotations

from typing import Any

import pytest

from entity_memory.domain.kinds import MetricEntity
from entity_memory.service.bindings import Bindings
from entity_memory.service.extraction.carry import in_series
from entity_memory.service.extraction.pipeline import SessionExtraction
from entity_memory.settings import Settings
from entity_memory.storage.d1 import CountingD1
from entity_memory.storage.kv import CountingKV
from entity_memory.storage.ledger import Ledger
from entity_memory.storage.store import EntityStore

from .conftest import Clock
from .test_extraction_pipeline import Scripted, factory_for, msgs

DAY = 24 * 60 * 60 * 1000

FERN = {
    "type": "campaign",
    "name": "Fernhill Kayak Hire",
    "content": "Fernhill Kayak Hire runs at $35/day.",
    "metadata": {"budget": 35},
    "source": "Fernhill Kayak Hire runs at $35/day",
}


def fern_metric(name: str, kpi: str, value: float, unit: str, said: str) -> dict[str, Any]:
    return {
        "type": "metric",
        "name": name,
        "content": said,
        "metadata": {"kpi": kpi, "value": value, "unit": unit, "campaign": FERN["name"]},
        "source": said,
    }


def fern_reading(performance: dict[str, float], said: str) -> dict[str, Any]:
    return {**FERN, "content": said, "metadata": {"lastPerformance": performance}, "source": said}


@pytest.fixture
def parts(kv: CountingKV, clock: Clock, db: CountingD1):
    ledger = Ledger(db)
    store = EntityStore(kv, Settings(), clock, ledger)
    return store, ledger, Bindings(kv=kv, clock=clock, db=db, vars={"EXTRACTOR": "rules"})


async def run_sessions(parts, clock: Clock, sessions: list[tuple[str, list[Any]]]) -> EntityStore:
    """Each session's text and the candidates a model sends for it, a day apart."""
    store, ledger, bindings = parts
    scripted = Scripted("rules", [candidates for _, candidates in sessions])
    run = SessionExtraction(store, ledger, bindings, factory_for(rules=scripted))
    for n, (text, _) in enumerate(sessions):
        await run.run("u1", f"s{n + 1}", msgs(text), None)
        clock.advance(DAY)
    return store


async def metrics(store: EntityStore) -> dict[str, MetricEntity]:
    found = [await store.get("u1", "metric", e.id) for e in await store.list("u1")]
    return {m.name: m for m in found if isinstance(m, MetricEntity)}


async def test_a_campaigns_newer_reading_is_the_metrics_next_observation(parts, clock) -> None:
    first = "Fernhill Kayak Hire runs at $35/day; cost per rental is $18, return on ad spend 380%."
    later = "Fernhill Kayak Hire: cost per rental dropped to $14 and ROAS is up to 4.1x."
    store = await run_sessions(
        parts,
        clock,
        [
            (
                first,
                [
                    FERN,
                    {
                        **fern_metric("Fernhill CPA", "cost per rental", 18, "USD", first),
                        "importance": 0.8,
                    },
                    fern_metric("Fernhill ROAS", "ROAS", 380, "%", first),
                ],
            ),
            (later, [fern_reading({"cost per rental": 14, "ROAS": 4.1}, later)]),
        ],
    )
    found = await metrics(store)
    cpa, roas = found["Fernhill CPA"].metadata, found["Fernhill ROAS"].metadata
    assert (cpa.value, [h.value for h in cpa.history]) == (14, [18, 14])
    # A ratio written the other way is read in the metric's unit.
    assert (roas.value, roas.unit, [h.value for h in roas.history]) == (410, "%", [380, 410])
    # A carried reading is no mention with an importance of its own: the metric keeps its.
    assert (found["Fernhill CPA"].version, found["Fernhill CPA"].importance) == (2, 0.8)


async def test_only_the_same_series_is_carried(parts, clock) -> None:
    first = (
        "Fernhill Kayak Hire runs at $35/day. Cost per enquiry $9, mobile CTR 3.2%,"
        " cost per click $0.80, impression share 61%."
    )
    later = (
        "Fernhill Kayak Hire: cost per booking is $30, CTR 2.9%, impression share 70%,"
        " and CPC $0.041 in the test market."
    )
    store = await run_sessions(
        parts,
        clock,
        [
            (
                first,
                [
                    FERN,
                    fern_metric("Fernhill cost per enquiry", "cost per enquiry", 9, "USD", first),
                    fern_metric("Fernhill mobile CTR", "CTR", 3.2, "%", first),
                    fern_metric("Fernhill CPC", "CPC", 0.8, "USD", first),
                    fern_metric("Fernhill impression share", "impression share", 61, "%", first),
                ],
            ),
            (
                later,
                # Another counted thing, a plain KPI beside a qualified metric, a value of
                # another magnitude: none is the stored series. A KPI named in words of its
                # own is, where the words are the same.
                [
                    fern_reading(
                        {"cost per booking": 30, "CTR": 2.9, "CPC": 0.041, "impression share": 70},
                        later,
                    )
                ],
            ),
        ],
    )
    found = await metrics(store)
    assert {name: m.metadata.value for name, m in found.items()} == {
        "Fernhill cost per enquiry": 9,
        "Fernhill mobile CTR": 3.2,
        "Fernhill CPC": 0.8,
        "Fernhill impression share": 70,
    }


async def test_a_restated_reading_or_a_metric_the_reply_reports_is_left_alone(parts, clock) -> None:
    first = "Fernhill Kayak Hire runs at $35/day; CPC is $0.70 now, it was $0.65, CTR 4%."
    second = "Fernhill Kayak Hire: CTR is 5% today and 4.6% over the week, CPC $0.70 still."
    store = await run_sessions(
        parts,
        clock,
        [
            (
                first,
                [
                    {**FERN, "metadata": {"budget": 35, "lastPerformance": {"CPC": 0.7}}},
                    fern_metric("Fernhill CPC", "CPC", 0.65, "USD", first),
                    fern_metric("Fernhill CTR", "CTR", 4, "%", first),
                ],
            ),
            (
                second,
                [
                    fern_reading({"CPC": 0.7, "CTR": 5}, second),
                    fern_metric("Fernhill CTR", "CTR", 4.6, "%", second),
                ],
            ),
        ],
    )
    found = await metrics(store)
    # The reply's own metric stands over the campaign's figure, and a figure the campaign
    # already held is no new reading of the metric.
    assert found["Fernhill CTR"].metadata.value == 4.6
    assert [h.value for h in found["Fernhill CPC"].metadata.history] == [0.65]


async def test_a_metrics_newer_value_refreshes_its_campaigns_snapshot(parts, clock) -> None:
    first = "Fernhill Kayak Hire runs at $35/day: spent $900, 30 rentals, ROAS 2.1x, CTR 3%."
    later = "Fernhill Kayak Hire ROAS is 2.6x this month; mobile CTR 2%."
    store = await run_sessions(
        parts,
        clock,
        [
            (
                first,
                [
                    {
                        **fern_reading({"spend": 900, "rentals": 30, "ROAS": 2.1, "CTR": 3}, first),
                        "importance": 0.9,
                    },
                    fern_metric("Fernhill ROAS", "ROAS", 2.1, "x", first),
                ],
            ),
            (
                later,
                [
                    fern_metric("Fernhill ROAS", "ROAS", 2.6, "x", later),
                    fern_metric("Fernhill mobile CTR", "CTR", 2, "%", later),
                ],
            ),
        ],
    )
    campaign = await store.get("u1", "campaign", "fernhill-kayak-hire")
    # The newer ROAS replaces the older snapshot; the mobile CTR measures something else.
    assert campaign is not None and campaign.metadata.last_performance == {"ROAS": 2.6}  # type: ignore[attr-defined]
    assert campaign.importance == 0.9


def test_a_reading_is_in_series_only_at_the_same_magnitude() -> None:
    assert in_series(71, 44, "USD") == 71
    assert in_series(4.35, 420, "%") == 435
    assert in_series(435, 4.2, "x") == 4.35
    assert in_series(0.04, 410, "%") is None
    assert in_series(4.35, 420, "USD") is None  # no ratio: not read 100 times larger
    assert in_series(3, None, None) is None
