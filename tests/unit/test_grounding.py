"""Grounding: a candidate that cannot be traced to the conversation's words is rejected."""

from __future__ import annotations

from typing import Any

import pytest

from entity_memory.domain.amounts import numbers_in
from entity_memory.domain.kinds import entity_input_adapter
from entity_memory.extraction.grounding import (
    business_names,
    ground,
    grounding_context,
    kpi_family,
    value_tied_to_kpi,
)

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
    kept, rejected = ground(items, _ctx(known))
    by_item = {id(k): None for k in kept}
    reasons = iter(r.reason for r in rejected)
    return [None if id(i) in by_item else next(reasons) for i in items]


def test_numbers_are_read_as_written() -> None:
    values = [n.value for n in numbers_in("$1,200 a month, 2.5k a day, 4.5% and 3 ads")]
    assert values == [1200, 2500, 4.5, 3]


def test_a_grounded_metric_is_kept() -> None:
    item = _metric(41, "the CPA came in at $41")
    assert _reasons([item]) == [None]


def test_source_must_occur_in_the_conversation_whitespace_and_case_aside() -> None:
    assert _reasons([_metric(41, "THE CPA   came in at $41.")]) == [None]
    assert _reasons([_metric(41, "set the glaze nights budget to 2.5k per day?")]) != [None]
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


def test_a_number_missing_from_the_excerpt_is_rejected() -> None:
    [reason] = _reasons([_metric(42, "the CPA came in at $41")])
    assert reason is not None and "42" in reason
    [target] = _reasons([_metric(41, "the CPA came in at $41", target=30)])
    assert target is not None and "target" in target


def test_an_amount_spent_is_not_a_cpa() -> None:
    source = "Wheel Workshops spent $196 last week and the CPA came in at $41."
    assert _reasons([_metric(196, source)]) != [None]
    assert _reasons([_metric(41, source)]) == [None]
    assert _reasons([_metric(196, source, kpi="spend")]) == [None]


def test_a_value_without_its_kpi_in_the_excerpt_is_rejected() -> None:
    assert not value_tied_to_kpi("ROAS", 41, "the CPA came in at $41")
    assert value_tied_to_kpi("CTR", 4.5, "Glaze Nights CTR is 4.5%")
    assert value_tied_to_kpi("CTR", 0.045, "Glaze Nights CTR is 4.5%")


def test_kpi_families() -> None:
    assert kpi_family("Cost per lead") == kpi_family("CPA") == "cpa"
    assert kpi_family("spend") == "spend"
    assert kpi_family("return on ad spend") == "roas"
    assert kpi_family("happiness") is None


def test_a_campaign_budget_must_be_in_the_excerpt() -> None:
    good = _campaign("Glaze Nights", "No, keep $25 a day.", budget=25)
    bad = _campaign("Glaze Nights", "No, keep $25 a day.", budget=2500)
    assert _reasons([good, bad])[0] is None
    assert _reasons([good, bad])[1] is not None


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
    kept, rejected = ground([good, bad], _ctx())
    assert kept == [good]
    assert [r.item["name"] for r in rejected] == ["Wheel Workshops CPA"]
    assert all(r.reason.startswith("ungrounded:") for r in rejected)


def test_a_self_introduction_names_the_business() -> None:
    assert "clay corner" in business_names(["Morning! Ana from Clay Corner. Busy week."])


def test_multipliers_and_per_click_costs() -> None:
    assert [n.value for n in numbers_in("ROAS 1.4x after 5 weeks")] == [1.4, 5]
    assert value_tied_to_kpi("CPC", 0.9, "keeps you on top for about $0.90 a click")
    assert value_tied_to_kpi("ROAS", 1.4, "Glaze Nights: ROAS 1.4x after 5 weeks, $1,420 spent")
