"""Grounding: what cannot be traced to the conversation's words is not stored: a candidate
whose excerpt or name is not there is rejected, a number that is not there is dropped alone."""

from __future__ import annotations

from typing import Any

import pytest

from entity_memory.domain.amounts import numbers_in
from entity_memory.domain.kinds import entity_input_adapter
from entity_memory.extraction.grounding import ground, grounding_context
from entity_memory.extraction.grounding_numbers import (
    kpi_family,
    tied_to_other_kpi,
    value_tied_to_kpi,
)
from entity_memory.extraction.grounding_text import business_names

CONVERSATION = [
    ("user", "Hi! I own Clay Corner, a pottery studio in town."),
    ("user", "Wheel Workshops spent $196 last week and the CPA came in at $41."),
    ("assistant", "That is high. Should we try a $30 target?"),
    ("user", "Yes, go ahead. Glaze Nights CTR is 4.5%, budget $1,200 a month."),
    ("user", "Set   the Glaze Nights budget to 2.5k per day?  No, keep $25 a day."),
]


def _ctx(known: tuple[tuple[str, str], ...] = ()) -> Any:
    return grounding_context(CONVERSATION, known)


def _item(**data: Any) -> Any:
    return entity_input_adapter.validate_python(data)


def _metric(value: float, source: str, kpi: str = "CPA", target: float | None = None) -> Any:
    meta: dict[str, Any] = {"kpi": kpi, "value": value}
    if target is not None:
        meta["target"] = target
    return _item(type="metric", name=f"Wheel Workshops {kpi}", metadata=meta, source=source)


def _campaign(name: str, source: str, budget: float | None = None) -> Any:
    meta = {"budget": budget} if budget is not None else {}
    return _item(type="campaign", name=name, metadata=meta, source=source)


def _reasons(items: list[Any], known: tuple[tuple[str, str], ...] = ()) -> list[str | None]:
    """Per item: None when it is kept whole, else the rejection's or first drop's reason."""
    out: list[str | None] = []
    for item in items:
        grounded = ground([item], _ctx(known))
        reasons = [r.reason for r in grounded.rejected] + [d.reason for d in grounded.dropped]
        out.append(reasons[0] if reasons else None)
    return out


def test_numbers_are_read_as_written() -> None:
    values = [n.value for n in numbers_in("$1,200 a month, 2.5k a day, 4.5% and 3 ads")]
    assert values == [1200, 2500, 4.5, 3]


def test_a_number_is_never_cut_at_its_decimal_point() -> None:
    assert [n.value for n in numbers_in("opens in 1.8s, 45min later, 3.2x then 4x")] == [
        1.8,
        45,
        3.2,
        4,
    ]


def test_a_grounded_metric_is_kept() -> None:
    item = _metric(41, "the CPA came in at $41")
    assert _reasons([item]) == [None]


def test_source_must_occur_in_the_conversation_whitespace_and_case_aside() -> None:
    assert _reasons([_metric(41, "THE CPA   came in at $41.")]) == [None]
    assert _reasons([_metric(2500, "set the glaze nights budget to 2.5k per day?")]) != [None]
    [reason] = _reasons([_metric(41, "our CPA was $41 all year")])
    assert reason is not None and "not in the conversation" in reason


def test_an_elided_excerpt_must_occur_piece_by_piece() -> None:
    ok = _metric(41, "Wheel Workshops spent ... the CPA came in at $41")
    bad = _metric(41, "Wheel Workshops spent ... the CPA came in at $41 forever")
    assert _reasons([ok, bad])[0] is None
    assert _reasons([ok, bad])[1] is not None


def test_no_source_is_rejected() -> None:
    [reason] = _reasons([_metric(41, "")])
    assert reason is not None and "no source" in reason


def test_a_number_the_conversation_does_not_state_is_dropped_not_the_metric() -> None:
    grounded = ground([_metric(41, "the CPA came in at $41", target=29)], _ctx())
    [kept] = grounded.kept
    assert kept.metadata.value == 41 and kept.metadata.target is None
    [drop] = grounded.dropped
    assert (drop.field, drop.value, drop.code) == (
        "metadata.target",
        29,
        "number_not_in_conversation",
    )


def test_a_metric_left_with_no_number_is_rejected() -> None:
    grounded = ground([_metric(42, "the CPA came in at $41")], _ctx())
    assert not grounded.kept
    assert [r.code for r in grounded.rejected] == ["no_number_left"]
    assert [d.code for d in grounded.dropped] == ["number_not_in_conversation"]


def test_a_number_said_elsewhere_in_the_session_is_kept() -> None:
    # A model quotes one excerpt and sums up the session's figures: $30 is in another turn.
    grounded = ground([_metric(41, "the CPA came in at $41", target=30)], _ctx())
    assert grounded.kept[0].metadata.target == 30 and not grounded.dropped


def test_a_number_memory_already_holds_needs_no_new_evidence() -> None:
    ctx = grounding_context(
        [("user", "Glaze Nights CPA is down to $18.")],
        known_facts=[("metric", "Glaze Nights CPA", {"kpi": "CPA", "value": 22, "target": 15})],
    )
    item = _item(
        type="metric",
        name="Glaze Nights CPA",
        metadata={"kpi": "CPA", "value": 18, "target": 15},
        source="Glaze Nights CPA is down to $18.",
    )
    grounded = ground([item], ctx)
    assert grounded.kept[0].metadata.target == 15 and not grounded.dropped
    said_before = item.model_copy(update={"content": "CPA $18, down from $22; goal $15."})
    assert ground([said_before], ctx).kept[0].content == said_before.content


def test_an_amount_spent_is_not_a_cpa() -> None:
    source = "Wheel Workshops spent $196 last week and the CPA came in at $41."
    grounded = ground([_metric(196, source)], _ctx())
    assert [d.code for d in grounded.dropped] == ["value_tied_to_other_kpi"]
    assert _reasons([_metric(41, source)]) == [None]
    assert _reasons([_metric(196, source, kpi="spend")]) == [None]


@pytest.mark.parametrize(
    ("kpi", "value", "excerpt"),
    [
        ("ROAS", 512, "Store-wide we hit 512% in March once the kilns were back in stock."),
        ("refund requests", 30, "Refund requests fell from 88 to 30 after the label fix."),
        ("pickup rate", 61, "Sunday pickup rate was 61% last month."),
        ("CPA", 27, "Fourteen bookings, about $27 each (was about $35)."),
        ("CPC", 3.1, "Glaze clicks got dearer: $3.10 on average, up from $2.40."),
        ("CPA", 12.4, "Cost per weekend workshop signup is €12.40 since the new form."),
        ("cost per booked class", 19, "Our cost per booked taster class was $19 in May."),
        ("page speed", 1.8, "The booking page now opens in 1.8s on phones."),
    ],
)
def test_phrasing_alone_never_rejects_a_stated_number(kpi: str, value: float, excerpt: str) -> None:
    ctx = grounding_context([("user", excerpt)])
    item = _item(
        type="metric", name=f"Studio {kpi}", metadata={"kpi": kpi, "value": value}, source=excerpt
    )
    grounded = ground([item], ctx)
    assert grounded.kept == [item] and not grounded.dropped and not grounded.rejected


def test_a_value_attached_to_another_kpi_only() -> None:
    assert tied_to_other_kpi("CPA", 196, "Wheel Workshops spent $196 last week")
    assert tied_to_other_kpi("ROAS", 40, "a budget of $40")
    assert not tied_to_other_kpi("CTR", 4.5, "Glaze Nights CTR is 4.5%")
    assert not tied_to_other_kpi("CPA", 73, "19 bookings, roughly $73 apiece")
    assert not tied_to_other_kpi("CPA", 61, "kiln bookings cost $61 each")
    assert value_tied_to_kpi("CTR", 0.045, "Glaze Nights CTR is 4.5%")
    assert not value_tied_to_kpi("ROAS", 41, "the CPC came in at $40")


def test_a_content_stating_a_dropped_number_becomes_the_excerpt() -> None:
    item = _item(
        type="metric",
        name="Wheel Workshops CPA",
        content="CPA $41 against a $29 goal.",
        metadata={"kpi": "CPA", "value": 41, "target": 29},
        source="the CPA came in at $41",
    )
    grounded = ground([item], _ctx())
    assert grounded.kept[0].content == "the CPA came in at $41"
    assert [d.field for d in grounded.dropped] == ["metadata.target", "content"]


def test_a_content_with_an_invented_number_becomes_the_excerpt_dates_aside() -> None:
    dated = _metric(41, "the CPA came in at $41").model_copy(
        update={"content": "CPA $41 in the week to 2025-03-09."}
    )
    invented = dated.model_copy(update={"content": "CPA $41, 37% above plan."})
    grounded = ground([dated, invented], _ctx())
    assert grounded.kept[0].content == dated.content
    assert grounded.kept[1].content == "the CPA came in at $41"


def test_kpi_families() -> None:
    assert kpi_family("Cost per lead") == kpi_family("CPA") == "cpa"
    assert kpi_family("spend") == "spend"
    assert kpi_family("return on ad spend") == "roas"
    assert kpi_family("happiness") is None


def test_a_campaign_keeps_itself_without_an_unstated_budget() -> None:
    good = _campaign("Glaze Nights", "No, keep $25 a day.", budget=25)
    bad = _campaign("Glaze Nights", "No, keep $25 a day.", budget=2600)
    grounded = ground([good, bad], _ctx())
    assert [k.metadata.budget for k in grounded.kept] == [25, None]
    assert [d.field for d in grounded.dropped] == ["metadata.budget"]


def test_a_performance_figure_is_dropped_alone() -> None:
    item = _item(
        type="campaign",
        name="Glaze Nights",
        metadata={"lastPerformance": {"CTR": 4.5, "ROAS": 7.7}},
        source="Glaze Nights CTR is 4.5%",
    )
    grounded = ground([item], _ctx())
    assert grounded.kept[0].metadata.last_performance == {"CTR": 4.5}
    assert [d.field for d in grounded.dropped] == ["metadata.lastPerformance.ROAS"]


def test_a_campaign_name_must_occur_in_the_conversation_or_be_known() -> None:
    source = "keep $25 a day"
    assert _reasons([_campaign("Glaze Nights campaign", source)]) == [None]
    [reason] = _reasons([_campaign("Kiln Specials", source)])
    assert reason is not None and "campaign name" in reason
    assert _reasons([_campaign("Kiln Specials", source)], (("campaign", "Kiln Specials"),)) == [
        None
    ]


def test_the_users_own_business_is_not_a_campaign() -> None:
    [reason] = _reasons([_campaign("Clay Corner", "I own Clay Corner")])
    assert reason is not None and "own business" in reason


@pytest.mark.parametrize(
    "text",
    [
        "My studio is called Clay Corner.",
        "our pottery shop, Clay Corner, is busy",
        "We run a small studio called Clay Corner in town",
        "Here at Clay Corner we teach wheel throwing",
        "Clay Corner is my studio",
    ],
)
def test_business_names_as_users_introduce_them(text: str) -> None:
    assert "clay corner" in business_names([text])


@pytest.mark.parametrize(
    "text",
    ["Our Glaze Nights campaign is called Glaze Nights", "we run Search campaigns on Google"],
)
def test_campaign_talk_names_no_business(text: str) -> None:
    assert "glaze nights" not in business_names([text])
    assert "search" not in business_names([text])


def test_rejections_carry_the_item_and_never_the_kept_ones() -> None:
    good = _metric(41, "the CPA came in at $41")
    bad = _metric(196, "Wheel Workshops spent $196 last week")
    grounded = ground([good, bad], _ctx())
    assert grounded.kept == [good]
    assert [r.item["name"] for r in grounded.rejected] == ["Wheel Workshops CPA"]
    assert all(r.reason.startswith("ungrounded:") for r in grounded.rejected)


def test_a_self_introduction_names_the_business() -> None:
    assert "clay corner" in business_names(["Morning! Ana from Clay Corner. Busy week."])


def test_multipliers_and_per_click_costs() -> None:
    assert [n.value for n in numbers_in("ROAS 1.4x after 5 weeks")] == [1.4, 5]
    assert value_tied_to_kpi("CPC", 0.9, "keeps you on top for about $0.90 a click")
    assert value_tied_to_kpi("ROAS", 1.4, "Glaze Nights: ROAS 1.4x after 5 weeks, $1,420 spent")
    assert not value_tied_to_kpi(
        "ROAS", 1420, "Glaze Nights: ROAS 1.4x after 5 weeks, $1,420 spent"
    )
