"""Offline never states something false (issue 37): what the rules must not store, shown on
invented conversations of other businesses (a dentist, a SaaS, a hotel, a bike shop, a florist,
a gym). Each test names the mechanism; none depends on the exact wording produced.
"""

from __future__ import annotations

from typing import Any

from entity_memory.extraction.base import KnownEntity

from .test_rules_extractor import assistant, of, run, user


def names(cands: list[dict[str, Any]], type_: str) -> list[str]:
    return [c["name"] for c in of(cands, type_)]


def known(type_: str, name: str, **facts: Any) -> KnownEntity:
    return KnownEntity(id=name.lower().replace(" ", "-"), type=type_, name=name, facts=facts)


# --- a refused or ignored proposal is never a decision -----------------------------------------


def test_a_refused_proposal_is_not_a_decision() -> None:
    for reply in (
        "No, let's not do that, it feels aggressive.",
        "Yes to the negatives, but skip the competitor bidding.",
        "Sure, the report sounds good. Don't touch the bids though.",
        "Hmm, I'd rather not.",
    ):
        cands = run(
            assistant("I'd suggest bidding on the names of rival clinics in Smile Search."),
            user(reply),
        )
        assert of(cands, "decision") == [], (reply, names(cands, "decision"))


def test_an_ignored_proposal_is_not_a_decision() -> None:
    cands = run(
        assistant("We could add a second ad group for emergency appointments in Smile Search."),
        user("How did the whitening offer do last week?"),
    )
    assert of(cands, "decision") == []


def test_a_plain_yes_still_accepts_the_proposal() -> None:
    cands = run(
        assistant("I recommend pausing the Teeth Whitening Promo campaign for January."),
        user("Yes, do it."),
    )
    assert len(of(cands, "decision")) == 1


# --- an ad platform, a date range or a fragment is never a campaign ----------------------------


def test_an_ad_platform_is_never_a_campaign() -> None:
    cands = run(
        user("Move $40 from Google to Meta, so Meta goes to $90 a day."),
        user("The TikTok campaign is paused and Bing stays at $20/day."),
        user("Our Google Ads budget is $300 a day."),
    )
    platforms = {"google", "meta", "tiktok", "bing", "google ads"}
    assert not {n.lower() for n in names(cands, "campaign")} & platforms, names(cands, "campaign")


def test_a_date_range_is_never_a_campaign() -> None:
    cands = run(
        user("Spend for Mar 3 - Mar 16 was $2,400 on Trail Bikes Search."),
        user("Report for Oct 2 - Oct 15: CPA $31."),
    )
    found = names(cands, "campaign")
    assert not any(any(m in n for m in ("Mar", "Oct")) for n in found), found


def test_a_shouted_fragment_is_never_a_campaign() -> None:
    cands = run(
        user("The banner says 15% OFF YOUR FIRST CLASS CPA and people love it."),
        user("Still Manual CPC on the gym ads for now."),
    )
    found = names(cands, "campaign")
    assert not any(w in n.upper() for n in found for w in ("OFF YOUR", "STILL")), found


# --- a hypothetical or rejected idea never writes a field ---------------------------------------


def test_a_hypothetical_budget_writes_nothing() -> None:
    harbor = [known("campaign", "Harbor Rooms", budget=60)]
    for text in (
        "Dropping Harbor Rooms to $15/day would save money, but I won't do it.",
        "We considered cutting Harbor Rooms to $15/day and decided against it.",
        "Harbor Rooms could go down to $15/day if bookings stay slow.",
        "I don't want Harbor Rooms at $15/day.",
    ):
        cands = run(user(text), known=harbor)
        budgets = [c["metadata"].get("budget") for c in of(cands, "campaign")]
        assert 15 not in budgets, (text, budgets)


def test_moved_money_writes_the_budget_it_ends_at() -> None:
    two = [known("campaign", "Harbor Rooms"), known("campaign", "Lakeview Suites")]
    cands = run(
        user("Move $30 from Harbor Rooms to Lakeview Suites, so Lakeview Suites goes to $90/day."),
        known=two,
    )
    budgets = {c["name"]: c["metadata"].get("budget") for c in of(cands, "campaign")}
    assert budgets.get("Lakeview Suites") == 90 and budgets.get("Harbor Rooms") is None


def test_a_stated_budget_still_writes_it() -> None:
    harbor = [known("campaign", "Harbor Rooms", budget=40)]
    cands = run(user("Harbor Rooms is at $60/day now."), known=harbor)
    assert [c["metadata"].get("budget") for c in of(cands, "campaign")] == [60]


# --- a changed preference updates that preference ---------------------------------------------


def test_a_moved_report_day_revises_the_preference_and_is_no_decision() -> None:
    stored = [known("preference", "Weekly report on Mondays", category="reporting")]
    cands = run(user("Please move the weekly report to Thursdays instead."), known=stored)
    assert of(cands, "decision") == [], names(cands, "decision")
    assert names(cands, "preference") == ["Weekly report on Mondays"]


def test_a_preference_changed_in_the_same_session_is_one_preference() -> None:
    cands = run(
        user("Please send me a weekly report every Monday."),
        user("Actually, send the weekly report every Friday instead."),
    )
    prefs = of(cands, "preference")
    assert len(prefs) == 1, names(cands, "preference")
    assert "friday" in prefs[0]["metadata"]["value"].lower()


# --- a metric belongs to the campaign it was said of, or to none -------------------------------


def test_a_metric_in_another_clause_is_not_the_campaigns() -> None:
    lakeview = [known("campaign", "Lakeview Suites")]
    for text in (
        "Lakeview Suites is doing fine, but cost per booking is $48 on the new offer.",
        "Lakeview Suites got two reviews; overall cost per booking is $48.",
    ):
        for metric in of(run(user(text), known=lakeview), "metric"):
            assert metric["metadata"].get("campaign") != "Lakeview Suites", (text, metric)


def test_a_metric_said_of_a_campaign_is_its_own() -> None:
    lakeview = [known("campaign", "Lakeview Suites")]
    cands = run(user("Lakeview Suites: cost per booking is $48 this month."), known=lakeview)
    assert [m["metadata"].get("campaign") for m in of(cands, "metric")] == ["Lakeview Suites"]


def test_it_is_does_not_point_at_the_last_campaign() -> None:
    cands = run(
        assistant(
            "Spring Tune-Up Search spent $900 last month. It is hard to say, the CPA is $27"
            " across the account."
        ),
        known=[known("campaign", "Spring Tune-Up Search")],
    )
    for metric in of(cands, "metric"):
        assert metric["metadata"].get("campaign") is None, metric


# --- a target is never a value ------------------------------------------------------------------


def test_a_target_before_its_kpi_is_not_a_value() -> None:
    for text in (
        "We have a 90% search impression share target for Lakeview Suites.",
        "Our 40% conversion rate goal is ambitious.",
    ):
        for metric in of(run(user(text)), "metric"):
            assert metric["metadata"].get("value") not in (90, 40), (text, metric)


# --- content is never replaced by a sentence about something else -------------------------------


def test_a_passing_mention_does_not_replace_a_known_campaigns_content() -> None:
    stored = [known("campaign", "Bouquet Delivery Search")]
    cands = run(
        user("The weather was awful, Bouquet Delivery Search and everything else was slow."),
        known=stored,
    )
    for campaign in of(cands, "campaign"):
        assert campaign["content"] == "", campaign


def test_a_new_campaign_is_described_by_where_it_was_introduced() -> None:
    cands = run(
        user("We launched the Wedding Flowers campaign last week for June weddings."),
        user("My neighbour thinks the Wedding Flowers campaign is a silly name, whatever."),
    )
    (campaign,) = of(cands, "campaign")
    assert "launched" in campaign["content"], campaign["content"]


# --- a stated frustration becomes a pain point --------------------------------------------------


def test_stated_frustrations_are_pain_points() -> None:
    for text in (
        "What bugs me is the no-show bookings from the free trial offer.",
        "We keep getting calls from job seekers instead of customers.",
        "Honestly the booking widget on mobile is a pain.",
        "I'm not happy with the lead quality from the display ads.",
        "We're struggling with fake sign-ups from the referral form.",
    ):
        assert len(of(run(user(text)), "pain_point")) == 1, text


def test_a_yes_then_another_topic_still_accepts() -> None:
    cands = run(
        assistant("I'd suggest raising the Tune-Up Special campaign to $45/day for spring."),
        user("Yes, go ahead. By the way, I'm not sure about the new logo yet."),
    )
    assert len(of(cands, "decision")) == 1


def test_a_reported_pause_writes_the_status() -> None:
    stored = [known("campaign", "Harbor Rooms")]
    cands = run(assistant("Paused Harbor Rooms. Bookings were slow this month."), known=stored)
    assert [c["metadata"].get("status") for c in of(cands, "campaign")] == ["paused"]


def test_a_supposed_figure_is_not_a_metrics_value() -> None:
    for text in (
        "Maybe the CPL is $25 by now, I have not looked.",
        "Our CPL is $25 if the tracking is right.",
    ):
        values = [c["metadata"].get("value") for c in of(run(user(text)), "metric")]
        assert values == [], (text, values)
    measured = of(run(user("Our CPL is $41 this month.")), "metric")
    assert [c["metadata"].get("value") for c in measured] == [41]
