"""domain/merge.py: how a new mention becomes an entity's next state (SPEC bp 2 and 7)."""

from __future__ import annotations

from entity_memory.domain.merge import entity_id_for, merge
from entity_memory.domain.models import METRIC_HISTORY_LIMIT, EntityInputBase

from .conftest import DAY, T0
from .factories import campaign, item, metric, pain_point


def test_a_first_mention_creates_version_one() -> None:
    result = merge(None, campaign(), "u1", "s1", T0)
    assert result.status == "created"
    e = result.entity
    assert (e.version, e.created_at, e.updated_at, e.session_id) == (1, T0, T0, "s1")
    assert e.id == entity_id_for(campaign()) == "campaign-alpha"


def test_the_same_mention_again_is_unchanged_and_keeps_the_version() -> None:
    first = merge(None, campaign(), "u1", "s1", T0).entity
    again = merge(first, campaign(), "u1", "s2", T0 + 1)
    assert again.status == "unchanged" and again.entity is first


def test_an_update_bumps_the_version_keeps_created_at_and_reports_the_change() -> None:
    first = merge(None, campaign(), "u1", "s1", T0).entity
    moved = campaign(metadata={"strategy": "maximize conversions"})
    result = merge(first, moved, "u1", "s2", T0 + 5)
    assert result.status == "updated"
    assert (result.entity.version, result.entity.created_at) == (2, T0)
    assert result.changes["metadata.strategy"].old == "target CPA"
    assert result.changes["metadata.strategy"].new == "maximize conversions"


def test_metadata_merges_field_by_field() -> None:
    first = merge(None, campaign(), "u1", "s1", T0).entity
    result = merge(first, campaign(metadata={"status": "paused"}), "u1", "s2", T0 + 1)
    meta = result.entity.metadata.to_json_dict()  # type: ignore[attr-defined]
    assert meta["budget"] == 150 and meta["status"] == "paused"


def test_a_lower_importance_is_averaged_with_the_old_one() -> None:
    first = merge(None, campaign(importance=0.8), "u1", "s1", T0).entity
    result = merge(first, campaign(importance=0.4, content="new facts"), "u1", "s2", T0 + 1)
    assert abs(result.entity.importance - 0.6) < 1e-9


def test_metric_values_accumulate_a_history() -> None:
    e = merge(None, metric(value=42), "u1", "s1", T0).entity
    e = merge(e, metric(value=39), "u1", "s2", T0 + 1).entity
    history = e.metadata.history  # type: ignore[attr-defined]
    assert [h.value for h in history] == [42, 39]


def test_a_value_measured_before_the_stored_one_is_history_not_the_current_value() -> None:
    """A backfilled observation (an earlier `observedOn`) joins the history; the value and
    its day stay the latest measured."""

    def measured(value: float, day: str) -> object:
        meta = {"kpi": "CPA", "value": value, "unit": "USD", "observedOn": day}
        return metric(value=value, metadata=meta)

    e = merge(None, measured(40, "2026-04-10"), "u1", "s1", T0).entity
    e = merge(e, measured(50, "2026-01-15"), "u1", "s2", T0 + 1).entity  # type: ignore[arg-type]
    meta = e.metadata  # type: ignore[attr-defined]
    assert (meta.value, meta.observed_on) == (40, "2026-04-10")
    assert sorted(h.value for h in meta.history) == [40, 50]
    e = merge(e, measured(35, "2026-05-02"), "u1", "s3", T0 + 2).entity  # type: ignore[arg-type]
    assert (e.metadata.value, e.metadata.observed_on) == (35, "2026-05-02")  # type: ignore[attr-defined]


def measured(value: float, day: str | None) -> EntityInputBase:
    meta = {"kpi": "CPA", "value": value, "unit": "USD"} | ({"observedOn": day} if day else {})
    return metric(value=value, metadata=meta)


def test_a_backfill_about_an_earlier_day_is_no_current_value_when_the_stored_one_is_undated() -> (
    None
):
    e = merge(None, measured(41, None), "u1", "s1", T0).entity  # told on 2026-05-28
    e = merge(e, measured(47, "2026-02-10"), "u1", "s2", T0 + DAY).entity
    meta = e.metadata  # type: ignore[attr-defined]
    assert (meta.value, meta.observed_on) == (41, None)
    assert [h.value for h in meta.history] == [47, 41]


def test_a_value_without_a_day_does_not_keep_the_day_of_the_one_it_replaces() -> None:
    e = merge(None, measured(41, "2026-03-10"), "u1", "s1", T0).entity
    e = merge(e, measured(39, None), "u1", "s2", T0 + DAY).entity
    meta = e.metadata  # type: ignore[attr-defined]
    assert (meta.value, meta.observed_on) == (39, None)


def test_values_one_session_dates_on_different_days_are_observations_of_their_own() -> None:
    e = merge(None, measured(3.1, "2026-01-05"), "u1", "import", T0).entity
    e = merge(e, measured(3.6, "2026-02-05"), "u1", "import", T0 + 1).entity
    e = merge(e, measured(4.0, "2026-03-05"), "u1", "import", T0 + 2).entity
    meta = e.metadata  # type: ignore[attr-defined]
    assert [h.value for h in meta.history] == [3.1, 3.6, 4.0] and meta.value == 4.0


def test_a_day_after_the_day_told_is_no_day_it_was_measured() -> None:
    """A slip an extractor could make ("next week"): it would pin the current value."""
    e = merge(None, measured(47, "2099-03-01"), "u1", "s1", T0).entity
    assert e.metadata.observed_on is None  # type: ignore[attr-defined]
    e = merge(e, measured(39, None), "u1", "s2", T0 + DAY).entity
    meta = e.metadata  # type: ignore[attr-defined]
    assert (meta.value, meta.observed_on) == (39, None)
    assert [h.observed_on for h in meta.history] == [None, None]


def test_a_day_said_again_or_corrected_is_one_observation() -> None:
    e = merge(None, measured(47, "2026-05-10"), "u1", "s2", T0).entity
    e = merge(e, measured(47, "2026-05-10"), "u1", "s3", T0 + DAY).entity  # said again
    e = merge(e, measured(45, "2026-05-10"), "u1", "s4", T0 + 2 * DAY).entity  # corrected
    assert [h.value for h in e.metadata.history] == [45]  # type: ignore[attr-defined]
    today = merge(None, measured(43, None), "u1", "s5", T0).entity
    today = merge(today, measured(44, "2026-05-28"), "u1", "s5", T0 + 60_000).entity  # T0's day
    assert [h.value for h in today.metadata.history] == [44]  # type: ignore[attr-defined]


def test_provenance_keeps_where_the_fact_was_first_said() -> None:
    e = merge(None, pain_point(source="first said here"), "u1", "s0", T0).entity
    for i in range(1, 15):
        e = merge(e, pain_point(source=f"said again {i}"), "u1", f"s{i}", T0 + i).entity
    excerpts = [p.excerpt for p in e.provenance]
    assert len(excerpts) == 10 and excerpts[0] == "first said here"
    assert excerpts[-1] == "said again 14"


def test_the_history_keeps_the_latest_measured_not_the_latest_told() -> None:
    e = merge(None, measured(23, None), "u1", "now", T0).entity
    for i in range(METRIC_HISTORY_LIMIT + 4):  # then a backfill of older values
        day = f"2025-{1 + i % 12:02d}-{1 + i // 12:02d}"
        e = merge(e, measured(40 + i, day), "u1", f"old{i}", T0 + 1 + i).entity
    meta = e.metadata  # type: ignore[attr-defined]
    assert len(meta.history) == METRIC_HISTORY_LIMIT
    assert meta.history[-1].value == 23 and meta.value == 23


def test_a_sentence_a_field_change_contradicts_goes_with_the_old_value() -> None:
    """Issue 22 item 1: a write without a sentence that changes a field the stored sentence
    states leaves the fields to say what is true; one that states other things stays."""
    said = "Alpha bids on Manual CPC at $150 a day"
    meta = {"strategy": "Manual CPC", "budget": 150, "status": "enabled"}
    first = merge(None, campaign(content=said, metadata=meta), "u1", "s1", T0).entity
    edits = {
        "strategy": ({"strategy": "max conversions"}, ""),
        "budget": ({"budget": 200}, ""),
        "status only": ({"status": "paused"}, said),  # the sentence says nothing of it
        "case only": ({"strategy": "manual cpc"}, said),  # the same strategy
    }
    for label, (meta, content) in edits.items():
        result = merge(first, campaign(content="", metadata=meta), "u1", "s2", T0 + 1)
        assert result.entity.content == content, label
    for other, meta in (
        ("Alpha uses manual bidding", {"strategy": "max conversions"}),
        ("Alpha is live", {"status": "paused"}),
    ):  # the same field, other words
        stated = merge(
            None, campaign(content=other, metadata=first.metadata.to_json_dict()), "u1", "s1", T0
        ).entity  # type: ignore[attr-defined]
        assert (
            merge(stated, campaign(content="", metadata=meta), "u1", "s2", T0 + 1).entity.content
            == ""
        )
    resent = merge(first, campaign(content=said, metadata={"budget": 200}), "u1", "s2", T0 + 1)
    assert resent.entity.content == said  # a sentence sent is the client's to say


def test_a_write_that_does_not_say_the_importance_keeps_it() -> None:
    first = merge(None, campaign(importance=0.8), "u1", "s1", T0).entity
    said = campaign(metadata={"status": "paused"}).to_json_dict()
    del said["importance"]
    result = merge(first, item(**said), "u1", "s2", T0 + 1)
    assert result.entity.importance == 0.8 and "importance" not in result.changes


def test_a_pain_point_mentioned_in_another_session_counts_once_more() -> None:
    e = merge(None, pain_point(), "u1", "s1", T0).entity
    e = merge(e, pain_point(), "u1", "s2", T0 + 1).entity
    assert e.metadata.frequency == 2  # type: ignore[attr-defined]


def test_a_session_sent_again_leaves_one_observation_per_metric() -> None:
    """Issue 21: a re-sent session (or a later chunk of it) never adds a second observation;
    the session's observation holds the last value it stated."""
    entity = merge(None, metric(value=41.0), "u1", "s1", T0).entity
    entity = merge(entity, metric(value=39.0), "u1", "s2", T0 + 10).entity
    for value in (41.0, 41.0):  # session s1 sent again
        entity = merge(entity, metric(value=value), "u1", "s1", T0 + 20).entity
    for value in (39.0,):  # and s2 again
        entity = merge(entity, metric(value=value), "u1", "s2", T0 + 30).entity
    history = entity.metadata.history  # type: ignore[attr-defined]
    assert [(h.session_id, h.value, h.at) for h in history] == [
        ("s1", 41.0, T0),
        ("s2", 39.0, T0 + 10),
    ]


def test_a_later_value_in_the_same_session_replaces_that_sessions_observation() -> None:
    entity = merge(None, metric(value=52.0), "u1", "s1", T0).entity
    entity = merge(entity, metric(value=48.0), "u1", "s1", T0 + 5).entity
    history = entity.metadata.history  # type: ignore[attr-defined]
    assert [(h.session_id, h.value, h.at) for h in history] == [("s1", 48.0, T0)]


def test_a_ratio_written_the_other_way_is_kept_in_the_stored_unit() -> None:
    def roas(value: float, unit: str, **meta: float) -> EntityInputBase:
        return metric(
            "Kiln ROAS",
            value,
            metadata={"kpi": "ROAS", "value": value, "unit": unit, **meta},
        )

    first = merge(None, roas(360, "%"), "u1", "s1", T0).entity
    result = merge(first, roas(4.05, "x", target=5), "u1", "s2", T0 + DAY)
    meta = result.entity.metadata  # type: ignore[attr-defined]
    assert (meta.value, meta.target, meta.unit) == (405, 500, "%")
    assert [h.value for h in meta.history] == [360, 405]
    # Money is never converted.
    cpa = merge(None, metric(value=40), "u1", "s1", T0).entity
    assert merge(cpa, metric(value=38), "u1", "s2", T0 + DAY).entity.metadata.value == 38  # type: ignore[attr-defined]
