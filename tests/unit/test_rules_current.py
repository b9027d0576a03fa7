"""What the rules store is current as of the conversation's end (issue 37): a setting or a
reading changed later in the same session replaces the first one, a problem the conversation
says is fixed is stored as resolved. Invented businesses and wording throughout; no test pins
the wording produced.
"""

from __future__ import annotations

from .test_rules_extractor import assistant, of, run, single, user


def test_a_campaign_named_earlier_in_the_session_takes_a_later_change() -> None:
    cands = run(
        assistant("Your setup:\n- Harbour Kayak Tours: $50/day, Manual CPC, cost per booking $22"),
        user("Move it to smart bidding."),
        assistant("Done: Harbour Kayak Tours is on Maximize Conversions now."),
    )
    campaign = single(cands, "campaign")
    assert campaign["metadata"].get("strategy") == "Maximize Conversions"


def test_a_reading_said_of_there_belongs_to_the_campaign_just_named() -> None:
    cands = run(
        assistant("Your setup:\n- Harbour Kayak Tours: $50/day, Manual CPC, cost per booking $22"),
        user("ok, trim it a bit"),
        assistant("Set Harbour Kayak Tours to $40/day. Cost per booking there is $18 this month."),
    )
    metric = single(cands, "metric")
    assert metric["metadata"]["value"] == 18
    assert metric["metadata"]["campaign"] == "Harbour Kayak Tours"
    assert single(cands, "campaign")["metadata"]["budget"] == 40


def test_a_there_that_opens_a_clause_points_at_nothing() -> None:
    cands = run(
        user("Harbour Kayak Tours is at $50/day."),
        assistant("So there is a cost per booking of $30 on the account."),
    )
    assert all(m["metadata"].get("campaign") is None for m in of(cands, "metric"))
