"""Dates a task names, and ranking by the day an entity was said on (domain/task_dates.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from entity_memory.domain.index_entries import MAX_DAYS, index_entry_for
from entity_memory.domain.merge import merge
from entity_memory.domain.models import IndexEntry, ProvenanceInput
from entity_memory.domain.ranking import keywords_for, score_entries
from entity_memory.domain.task_dates import dates_in, day_start_ms, measured_ms

#: 2026-05-28 12:00 UTC: "now" for the dates below that name no year.
NOW = int(datetime(2026, 5, 28, 12, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("task", "dates"),
    [
        ("What did she share on 19 August, 2023?", ["2023-08-19"]),
        ("the photo from October 13, 2023", ["2023-10-13"]),
        ("on the 8th of December 2023", ["2023-12-08"]),
        ("Decided 2023-08-19, reviewed in 2024-02", ["2023-08-19", "2024-02"]),
        ("the class she started in December 2023", ["2023-12"]),
        ("Is it higher than in June and July?", ["2025-06", "2025-07"]),
        ("since January", ["2026-01"]),  # the latest January not after now
        ("what we set on 3 June", ["2025-06-03"]),  # this year's 3 June is still to come
        ("2023年8月19日に決めたこと", ["2023-08-19"]),
        ("what happened in May", ["2026-05"]),
        ("in March, April, May and June", ["2026-03", "2026-04", "2026-05", "2025-06"]),
        ("the sale in mid-April", ["2026-04"]),
    ],
)
def test_the_dates_a_task_names(task: str, dates: list[str]) -> None:
    assert dates_in(task, NOW) == dates


@pytest.mark.parametrize(
    "task",
    [
        "We may pause it and march on",  # verbs, not months
        "Which of these 3 may be causing it?",
        "May I see the numbers?",  # a month alone needs a word that makes it a time
        "June said the top 5 march ads did well",
        "on June 31 or 2023-08-00",  # impossible days are no dates, nor their months
        "raise the dec budget",  # an abbreviation alone is too often another word
        "CPA was 2023 dollars over 31 days",
        "What did we decide last week?",  # relative: recency's job
    ],
)
def test_words_that_are_not_dates(task: str) -> None:
    assert dates_in(task, NOW) == []


def test_an_impossible_day_is_not_read_as_one() -> None:
    assert "2023-02-31" not in dates_in("on 31 February 2023", NOW)


def said(name: str, content: str, *days: str) -> IndexEntry:
    return IndexEntry(
        id=name.lower().replace(" ", "-"),
        type="decision",
        name=name,
        importance=0.5,
        updated_at=NOW,
        keywords=keywords_for(name, [], content, []),
        days=" ".join(days) or None,
    )


def test_the_entity_said_on_the_named_day_ranks_first() -> None:
    entries = [
        said("Sam shares a stew recipe", "food", "2023-07-02"),
        said("Sam is on a diet", "less food", "2023-08-19"),
        said("Sam bakes bread", "food", "2023-08-02"),
        said("Evan shares a photo", "of a lake", "2023-08-19"),
    ]
    task = "What food did Sam mention on 19 August, 2023?"
    ranked = score_entries(entries, task, NOW)
    assert ranked[0].name == "Sam is on a diet"
    assert "2023-08-19" in ranked[0].matched_terms
    by_month = score_entries(entries, "What food did Sam mention in August 2023?", NOW)
    assert {s.name for s in by_month[:2]} == {"Sam is on a diet", "Sam bakes bread"}
    # Said that day, but sharing no word with the task: the date alone is no relevance.
    evan = next(s for s in ranked if s.name == "Evan shares a photo")
    assert evan.lexical == 0


def test_a_task_naming_no_date_ranks_as_if_entries_had_none() -> None:
    dated = [said("Sam is on a diet", "", "2023-08-19"), said("Sam bakes bread", "bread")]
    bare = [said("Sam is on a diet", ""), said("Sam bakes bread", "bread")]
    task = "What does Sam eat?"
    assert [s.score for s in score_entries(dated, task, NOW)] == [
        s.score for s in score_entries(bare, task, NOW)
    ]


def test_an_entry_keeps_the_days_it_was_said_and_measured_on() -> None:
    from tests.unit.factories import metric

    at = [int(datetime(2023, 8, d, tzinfo=UTC).timestamp() * 1000) for d in range(1, 9)]
    item = metric(metadata={"kpi": "CPA", "value": 40})
    item.provenance = [
        ProvenanceInput(excerpt=f"CPA was ${40 + i}", at=t) for i, t in enumerate(at)
    ]
    entity = merge(None, item, "u1", "s1", at[-1]).entity
    days = (index_entry_for(entity).days or "").split()
    assert len(days) == MAX_DAYS
    assert days[0] == "2023-08-08" and days == sorted(days, reverse=True)  # the newest
    measured = metric(metadata={"kpi": "CPA", "value": 40, "observedOn": "2023-07-30"})
    measured.provenance = [ProvenanceInput(excerpt="CPA was $40", at=at[0])]
    entity = merge(None, measured, "u1", "s1", at[-1]).entity
    assert index_entry_for(entity).days == "2023-08-01 2023-07-30"  # not the write's day


def test_a_client_write_without_provenance_is_said_on_its_day() -> None:
    from tests.unit.factories import decision

    entity = merge(None, decision(), "u1", "s1", NOW).entity
    assert index_entry_for(entity).days == "2026-05-28"


def test_stored_times_without_a_calendar_date_are_no_days() -> None:
    """Older versions stored any `at` up to 2^53 and any YYYY-MM-DD shape: such an entity
    still gets its index entry (once, a write failed half way on one)."""
    from entity_memory.domain.models import parse_entity
    from tests.unit.factories import metric

    entity = merge(None, metric(metadata={"kpi": "CPA", "value": 40}), "u1", "s1", NOW).entity
    doc = entity.to_json_dict()
    doc["provenance"] = [{"excerpt": "x", "at": 2**53}]
    doc["metadata"]["observedOn"] = "2026-02-31"
    assert index_entry_for(parse_entity(doc)).days == "2026-05-28"  # its write's day


def test_a_named_month_orders_entries_the_task_words_all_match() -> None:
    """Every entry matches all the task's words (relevance 1 each): the one said in the month
    the task names still comes first, and the others stay above the relevance floor."""
    from entity_memory.domain.selection import RELEVANCE_FLOOR

    months = {"North": "2026-02-10", "East": "2026-03-12", "West": "2026-04-13"}
    entries = [said(f"{region} CPA", "", day) for region, day in months.items()]
    ranked = score_entries(entries, "the CPA in April", NOW)
    assert ranked[0].name == "West CPA" and "2026-04" in ranked[0].matched_terms
    assert all(s.relevance >= RELEVANCE_FLOOR for s in ranked)


def test_a_value_is_measured_at_its_days_start_unless_told_that_day() -> None:
    told = day_start_ms("2026-03-10") + 15 * 3_600_000  # 15:00
    assert measured_ms("2026-03-01", told) == day_start_ms("2026-03-01")
    assert measured_ms("2026-03-10", told) == told  # after a value told that morning
    assert measured_ms(None, told) == measured_ms("2026-02-31", told) == told
