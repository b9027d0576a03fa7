"""The offline extractor's behaviours: an explicit statement in, the right typed fact out; a
fragment, a question or someone else's opinion in, nothing out.

The sentences are written for these tests (a yoga studio, a bakery, a bike shop, a law firm),
plus the sentences issue 9 quotes. Names are checked for what the behaviour needs (which
campaign, well formed), never for the exact wording the extractor happens to produce.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from bench.quality import malformed_name

from entity_memory.extraction.base import KnownEntity, Message
from entity_memory.extraction.grounding import ground, session_context
from entity_memory.extraction.rules import RulesExtractor, extract_candidates
from entity_memory.extraction.validate import validate_candidates


def run(*turns: tuple[str, str], known: list[KnownEntity] | None = None) -> list[dict[str, Any]]:
    msgs = [Message(role=role, content=text) for role, text in turns]  # type: ignore[arg-type]
    cands = extract_candidates(msgs, known or [])
    for c in cands:
        assert malformed_name(c["name"]) is None, c["name"]
    accepted, rejected = validate_candidates(cands)
    assert not rejected and len(accepted) == len(cands), rejected
    return cands


def of(cands: list[dict[str, Any]], type_: str) -> list[dict[str, Any]]:
    return [c for c in cands if c["type"] == type_]


def single(cands: list[dict[str, Any]], type_: str) -> dict[str, Any]:
    found = of(cands, type_)
    assert len(found) == 1, [(c["type"], c["name"]) for c in cands]
    return found[0]


def user(text: str) -> tuple[str, str]:
    return ("user", text)


def assistant(text: str) -> tuple[str, str]:
    return ("assistant", text)


# --- the sentences issue 9 quotes ----------------------------------------------------------------


def test_a_campaign_named_after_is_is_the_named_one_with_its_budget() -> None:
    cands = run(
        user("Our main campaign is Campaign Alpha, a search campaign with a $150 daily budget.")
    )
    campaign = single(cands, "campaign")
    assert "alpha" in campaign["name"].lower() and " is" not in campaign["name"].lower()
    assert campaign["metadata"]["budget"] == 150


def test_a_value_below_its_target_keeps_both_and_the_campaign() -> None:
    metric = single(run(user("PMax Holiday Gifts ROAS was 3.1, below the 4.0 target.")), "metric")
    assert metric["metadata"]["value"] == 3.1
    assert metric["metadata"]["target"] == 4.0
    assert metric["metadata"]["campaign"] == "PMax Holiday Gifts"
    assert metric["metadata"]["kpi"] == "ROAS"


def test_what_we_want_it_under_is_the_target_not_the_value() -> None:
    metric = single(run(user("CPA is $36, we want it under $30")), "metric")
    assert (metric["metadata"]["value"], metric["metadata"]["target"]) == (36, 30)


def test_money_moved_between_ad_platforms_makes_no_campaign() -> None:
    """Issue 37: "Google" and "Meta" are ad platforms, never campaigns (this test asserted
    a campaign "Meta" at $70 before)."""
    cands = run(user("Move $50 from Google to Meta, so Meta goes to $70"))
    assert of(cands, "campaign") == []


def test_a_budget_stated_after_the_campaign_name() -> None:
    campaign = single(run(user("Campaign Zeta budget is $60/day")), "campaign")
    assert "zeta" in campaign["name"].lower() and campaign["metadata"]["budget"] == 60


def test_content_is_a_short_summary_without_repetition() -> None:
    cands = run(
        user("Campaign Zeta budget is $60/day."),
        assistant("Noted: Campaign Zeta at $60/day."),
        user("Yes, Campaign Zeta budget is $60/day."),
    )
    campaign = single(cands, "campaign")
    assert campaign["content"].count("$60") == 1
    assert "user:" not in campaign["content"].lower()


# --- campaigns -----------------------------------------------------------------------------------


def test_a_strategy_switch_sets_the_new_strategy() -> None:
    campaign = single(
        run(user("Let's move Campaign Lotus to Maximize Conversions, manual CPC wastes too much.")),
        "campaign",
    )
    assert campaign["metadata"]["strategy"] == "Maximize Conversions"


def test_a_status_about_a_quoted_campaign() -> None:
    campaign = single(run(user('The "Sourdough Classes" campaign is paused for now.')), "campaign")
    assert campaign["metadata"]["status"] == "paused"
    assert "sourdough" in campaign["name"].lower()


def test_a_listing_line_names_its_campaign() -> None:
    cands = run(assistant("Trail Bikes - Search: $85/day, Manual CPC."))
    campaign = single(cands, "campaign")
    assert campaign["metadata"] == {
        "budget": 85,
        "strategy": "Manual CPC",
        "provenance": campaign["metadata"]["provenance"],
    }


def test_a_campaign_named_in_a_statement_is_kept_with_no_invented_fields() -> None:
    assert of(run(user("How is Campaign Lotus doing lately?")), "campaign") == []
    (lotus,) = of(run(user("I looked at Campaign Lotus this morning.")), "campaign")
    assert lotus["name"] == "Campaign Lotus"
    assert "I looked at Campaign Lotus this morning." in lotus["content"]
    assert {"budget", "strategy", "status"}.isdisjoint(lotus["metadata"])


def test_an_ambiguous_budget_is_not_attached_to_either_campaign() -> None:
    cands = run(user("Campaign Lotus and Campaign Fern share $40/day"))
    campaigns = of(cands, "campaign")
    assert {c["name"] for c in campaigns} == {"Campaign Lotus", "Campaign Fern"}
    assert all("budget" not in c["metadata"] for c in campaigns)


def test_a_known_campaign_is_reused_under_its_stored_name() -> None:
    known = [KnownEntity("campaign", "campaign-fern", "Campaign Fern", ("Fern",))]
    campaign = single(run(user("Fern budget is $25/day from Monday."), known=known), "campaign")
    assert campaign["name"] == "Campaign Fern" and campaign["metadata"]["budget"] == 25


# --- metrics -------------------------------------------------------------------------------------


def test_a_kpi_value_of_a_named_campaign() -> None:
    metric = single(run(assistant("Campaign Croissant CTR is 4.2% this week.")), "metric")
    assert metric["metadata"]["value"] == 4.2 and metric["metadata"]["unit"] == "%"
    assert metric["metadata"]["campaign"] == "Campaign Croissant"


def test_a_goal_alone_is_not_a_measurement() -> None:
    assert of(run(user("Our goal is a CPA of $25 for Campaign Croissant.")), "metric") == []
    assert of(run(user("Target ROAS 5 on Campaign Croissant please.")), "metric") == []


def test_a_target_before_the_number_is_a_target() -> None:
    metric = single(run(user("Campaign Croissant CPA is $31 and the target is $27.")), "metric")
    assert (metric["metadata"]["value"], metric["metadata"]["target"]) == (31, 27)


def test_a_strategy_name_is_not_a_kpi_value() -> None:
    cands = run(user("Campaign Croissant runs on Target CPA at $40."))
    assert of(cands, "metric") == []


CROISSANT = KnownEntity("campaign", "campaign-croissant", "Campaign Croissant")
CROISSANT_CPA = KnownEntity("metric", "campaign-croissant-cpa", "Campaign Croissant CPA")


def test_a_strategys_figure_is_the_target_of_the_users_metric() -> None:
    said = assistant("Done: Campaign Croissant tCPA is now $44.")
    metric = single(run(said, known=[CROISSANT, CROISSANT_CPA]), "metric")
    assert metric["name"] == "Campaign Croissant CPA"
    assert metric["metadata"]["target"] == 44 and "value" not in metric["metadata"]
    # No such metric stored: a target alone makes none.
    assert of(run(said, known=[CROISSANT]), "metric") == []


@pytest.mark.parametrize(
    "said",
    [
        "tCPA lowered to $41.",
        "I moved tCPA from $49 to $41 this morning.",
        "tCPA is now $41, no change to the budget.",  # the "no" is the budget's
    ],
)
def test_a_target_changed_in_other_words_is_the_new_one(said: str) -> None:
    turns = (user("Campaign Croissant CPA is $46 against the $49 target."), user(said))
    metric = single(run(*turns, known=[CROISSANT]), "metric")
    assert (metric["metadata"]["value"], metric["metadata"]["target"]) == (46, 41)


def test_a_target_said_after_talk_of_one_campaign_is_that_campaigns() -> None:
    turns = (
        user("Campaign Croissant CPA is $46 against the $49 target."),
        user("tCPA is now $44."),
    )
    metric = single(run(*turns, known=[CROISSANT]), "metric")
    assert (metric["metadata"]["value"], metric["metadata"]["target"]) == (46, 44)
    two = (user("Campaign Bagel CPA is $20."), *turns)  # which one's? none is said
    assert {c["metadata"].get("target") for c in of(run(*two, known=[CROISSANT]), "metric")} == {
        None,
        49,
    }


@pytest.mark.parametrize(
    "said",
    [
        user("For Campaign Croissant, Target CPA was $40, now $44."),  # which is in force?
        user("Campaign Croissant is on Target CPA at $60/day budget."),
        user("Campaign Croissant tCPA is 20% lower than before."),
        user("Campaign Croissant switched to Target CPA 2.5 weeks ago."),
        user("Campaign Croissant has $500 Target CPA spend."),
        user("we should set the Campaign Croissant tCPA to $30"),
        user("never set Campaign Croissant tCPA to $30"),
        assistant("Campaign Croissant tCPA at $30 would be safer."),
        user("Campaign Croissant Target ROAS of 400%"),
        user("let's set the Campaign Croissant tCPA to $30."),
        user("I'd like Campaign Croissant tCPA at $30."),
        user("plan for next week: Campaign Croissant tCPA to $30."),
        user("Campaign Croissant tCPA will be $30 from Monday."),
    ],
)
def test_a_figure_that_is_not_the_target_in_force_sets_none(said: tuple[str, str]) -> None:
    assert of(run(said, known=[CROISSANT, CROISSANT_CPA]), "metric") == []


def test_a_target_set_after_the_value_is_the_one_that_stays_and_both_are_grounded() -> None:
    turns = [
        user("Campaign Croissant CPA is $46 against the $49 target."),
        assistant("We could go lower."),
        user("ok, done: Campaign Croissant tCPA is now $44."),
    ]
    msgs = [Message(role=role, content=text) for role, text in turns]  # type: ignore[arg-type]
    cands = extract_candidates(msgs, [CROISSANT])
    metric = single(cands, "metric")
    assert (metric["metadata"]["value"], metric["metadata"]["target"]) == (46, 44)
    inputs, _ = validate_candidates(cands)
    grounded = ground(inputs, session_context(msgs, [CROISSANT]))
    assert not grounded.rejected and not grounded.dropped, grounded
    assert any(k.type == "metric" for k in grounded.kept)


def test_an_assistant_figure_needs_its_campaign() -> None:
    assert of(run(assistant("CPC averaged $2.10 last month.")), "metric") == []


def test_a_back_reference_takes_the_turns_campaign() -> None:
    cands = run(user("Campaign Pedal has a $30 daily budget. Its CPA is $18 right now."))
    metric = single(cands, "metric")
    assert metric["metadata"]["campaign"] == "Campaign Pedal" and metric["metadata"]["value"] == 18


# --- decisions -----------------------------------------------------------------------------------


def test_a_decision_the_user_makes() -> None:
    decision = single(
        run(user("Let's pause Campaign Pedal until the spring stock arrives.")), "decision"
    )
    assert decision["metadata"]["affected_entities"] == ["Campaign Pedal"]
    assert "pause" in decision["name"].lower()


def test_an_accepted_proposal_is_the_decision_not_the_acceptance() -> None:
    cands = run(
        assistant("Spend is flat. I'd raise Campaign Pedal to $45/day before the race weekend."),
        user("yes do it"),
    )
    decision = single(cands, "decision")
    assert "raise" in decision["name"].lower()
    assert "yes" not in decision["name"].lower()
    roles = [p["role"] for p in decision["metadata"]["provenance"]]
    assert roles == ["assistant", "user"]


def test_a_proposal_nobody_accepted_is_not_a_decision() -> None:
    cands = run(
        assistant("I'd raise Campaign Pedal to $45/day before the race weekend."),
        user("Hmm, what did it spend last week?"),
    )
    assert of(cands, "decision") == []


def test_talk_and_chores_are_not_decisions() -> None:
    cands = run(user("I'll think about it and we'll talk on Friday."))
    assert of(cands, "decision") == []


# --- preferences ---------------------------------------------------------------------------------


def test_a_preference_in_the_users_words() -> None:
    pref = single(
        run(user("I prefer a one-page summary with charts over long emails.")), "preference"
    )
    assert pref["metadata"]["category"] in {"communication", "reporting"}
    assert "summary" in pref["name"].lower()


def test_never_without_asking_is_a_risk_preference() -> None:
    pref = single(run(user("Never change bids without asking me first.")), "preference")
    assert pref["metadata"]["category"] == "risk"


def test_what_the_assistant_says_the_user_likes_is_not_a_preference() -> None:
    assert of(run(assistant("I know you always prefer short updates.")), "preference") == []


def test_a_description_with_never_is_not_a_preference() -> None:
    assert of(run(user("The booking page never loads on phones.")), "preference") == []


# --- pain points ---------------------------------------------------------------------------------


def test_an_explicit_complaint_names_what_it_is_about() -> None:
    pain = single(
        run(user("I'm really frustrated that the lead form keeps sending spam to the partners.")),
        "pain_point",
    )
    assert "lead form" in pain["name"].lower()
    assert pain["metadata"]["severity"] == "high"


def test_a_complaint_about_it_names_nothing() -> None:
    assert of(run(user("Honestly this keeps happening and I'm annoyed.")), "pain_point") == []


def test_an_assistant_sentence_is_not_the_users_complaint() -> None:
    cands = run(assistant("I understand the lead form keeps sending spam, that is frustrating."))
    assert of(cands, "pain_point") == []


def test_a_repeated_complaint_counts_its_frequency_once_per_mention() -> None:
    cands = run(
        user("The problem is duplicate leads from the contact form."),
        assistant("I'll look into it."),
        user("Again, the problem is duplicate leads from the contact form!"),
    )
    pain = single(cands, "pain_point")
    assert pain["metadata"]["frequency"] == 2


# --- fragments, questions, hypotheticals ---------------------------------------------------------


def test_fragments_questions_and_hypotheticals_store_nothing() -> None:
    for text in (
        "to the",
        "Campaign is",
        "Should we raise Campaign Pedal to $60/day?",
        "If Campaign Pedal budget is $60/day we would overspend.",
        "and for the",
        "lower it to",
    ):
        assert run(user(text)) == [], text


# --- provenance, determinism ---------------------------------------------------------------------


def test_every_candidate_carries_its_source_sentence() -> None:
    cands = run(
        user("Campaign Gavel budget is $90/day. I prefer email over phone calls."),
    )
    assert cands
    for c in cands:
        prov = c["metadata"]["provenance"]
        assert prov and all(p["role"] == "user" and len(p["excerpt"]) <= 201 for p in prov)


def test_extraction_is_deterministic() -> None:
    turns = (
        user("Campaign Gavel budget is $90/day and its CPA is $120, we want it under $100."),
        assistant("I'd pause Campaign Gavel on weekends."),
        user("ok, do it"),
    )
    extractor = RulesExtractor()
    msgs = [Message(role=r, content=t) for r, t in turns]  # type: ignore[arg-type]
    first = asyncio.run(extractor.extract(msgs, [], 0))
    second = asyncio.run(extractor.extract(msgs, [], 0))
    assert first.extractor == "rules"
    assert first.candidates == second.candidates and first.candidates


def test_a_verb_starting_the_sentence_is_not_part_of_the_name() -> None:
    launched = run(assistant("Launched Harbor Tours - Search at $30/day."))
    raised = run(assistant("Raised Harbor Tours - Search to $45/day."))
    first, second = single(launched, "campaign"), single(raised, "campaign")
    assert first["name"] == second["name"]
    assert (first["metadata"]["budget"], second["metadata"]["budget"]) == (30, 45)


def test_the_source_sentence_is_kept_through_validation() -> None:
    cands = run(user("Campaign Gavel budget is $90/day."))
    accepted, _ = validate_candidates(cands)
    assert accepted[0].source and "$90" in accepted[0].source


def test_an_ok_that_moves_on_to_something_else_accepts_nothing() -> None:
    cands = run(
        assistant("I'd pause Campaign Pedal over the holidays."),
        user("ok. what about the new shop photos?"),
    )
    assert of(cands, "decision") == []


def test_a_kpi_on_a_named_campaign_and_its_goal() -> None:
    metric = single(
        run(assistant("Conversion rate on Fresh Loaves - Search is 3.5%, your goal was 5%.")),
        "metric",
    )
    assert metric["metadata"]["campaign"] == "Fresh Loaves - Search"
    assert (metric["metadata"]["value"], metric["metadata"]["target"]) == (3.5, 5)


def test_two_campaigns_each_keep_their_own_figure() -> None:
    cands = run(
        assistant("The Spin Class campaign has a CPA of $14 and the Yoga Mats campaign is at $9.")
    )
    values = {c["metadata"]["campaign"]: c["metadata"]["value"] for c in of(cands, "metric")}
    assert values.get("Spin Class") == 14 and values.get("Yoga Mats", 9) == 9


def test_a_campaigns_metric_is_named_by_the_campaigns_short_name() -> None:
    (metric,) = of(run(user("Campaign Lotus Search CPA is $41 this week.")), "metric")
    assert metric["name"] == "Campaign Lotus CPA"
    assert metric["aliases"] == ["Campaign Lotus Search CPA"]
    assert metric["metadata"]["campaign"] == "Campaign Lotus Search"


def test_no_short_name_alias_where_two_campaigns_share_the_short_name() -> None:
    cands = run(
        user("Campaign Lotus Search CPA is $41 this week."),
        user("Campaign Lotus PMax has a $30/day budget."),
    )
    (metric,) = of(cands, "metric")
    assert metric["name"] == "Campaign Lotus Search CPA"
    assert "aliases" not in metric


def test_a_daily_budget_after_a_kpi_is_not_its_value() -> None:
    (metric,) = of(run(user("Campaign Lotus: 94% impression share at $25/day.")), "metric")
    assert metric["metadata"]["value"] == 94


def test_a_standing_request_about_reports_is_a_preference() -> None:
    (pref,) = of(run(user("could you send me a recap every Friday morning?")), "preference")
    assert "recap every Friday morning" in pref["name"]
    assert pref["metadata"]["category"] == "reporting"
    assert pref["source"] == "could you send me a recap every Friday morning?"


def test_a_rule_for_budget_changes_is_a_risk_preference() -> None:
    (pref,) = of(run(user("Generally no more than 10% budget moves per week.")), "preference")
    assert pref["metadata"]["category"] == "risk"


def test_a_one_off_request_or_small_talk_is_not_a_preference() -> None:
    for text in (
        "Could you send me last month's invoice report?",
        "I need the board report by Friday.",
        "Can you explain what ROAS means?",
        "I cc'd our accountant on the budget email.",
        "My lawyer wants to talk to me about the lease.",
    ):
        assert of(run(user(text)), "preference") == [], text
    assert of(run(user("can you give Campaign Lotus more budget?")), "preference") == []
    assert of(run(user("Lovely weather here, my mood is great.")), "preference") == []
    assert of(run(assistant("I'll always send a weekly report.")), "preference") == []


def test_what_drives_the_user_crazy_is_a_pain_point_named_by_its_subject() -> None:
    (pain,) = of(run(user("honestly these duplicate leads drive me crazy")), "pain_point")
    assert pain["name"] == "Duplicate leads"


def test_a_change_the_assistant_reports_having_made_is_a_decision() -> None:
    cands = run(user("ok go ahead"), assistant("Paused Campaign Lotus. The $30/day is free now."))
    (decision,) = of(cands, "decision")
    assert decision["name"] == "Pause Campaign Lotus"
    assert decision["source"] == "Paused Campaign Lotus."
    (done,) = of(
        run(assistant("Done: I've lowered the Campaign Fern budget to $20/day.")), "decision"
    )
    assert done["name"] == "Lower Campaign Fern budget to $20/day"


def test_a_past_tense_that_is_not_a_report_of_a_change_is_no_decision() -> None:
    assert of(run(assistant("Cut costs where you can, I'd say.")), "decision") == []
    assert of(run(assistant("Started at $40/day last month?")), "decision") == []
    assert of(run(assistant("Noticed a spike in CPC yesterday.")), "decision") == []
    for text in (
        "Increased competition pushed your CPC up 20%.",
        "Paused campaigns don't count toward your budget.",
        "I ran the numbers for the last 90 days.",
    ):
        assert of(run(assistant(text)), "decision") == [], text


TABLE = """Last 30 days:

| Campaign | Spend | Conversions | Cost/conv | CTR |
|---|---|---|---|---|
| Campaign Lotus | $1,200 | 40 | $30 | 4.1% |
| Campaign Fern | $600 | 10 | $60 | 2.0% |

Fern is the weak one."""


def test_a_table_of_campaigns_gives_each_campaign_its_efficiency_kpis() -> None:
    metrics = {m["name"]: m for m in of(run(assistant(TABLE)), "metric")}
    assert set(metrics) == {
        "Campaign Lotus Cost/conv",
        "Campaign Lotus CTR",
        "Campaign Fern Cost/conv",
        "Campaign Fern CTR",
    }  # spend and raw counts are the table's context, not kept
    fern = metrics["Campaign Fern Cost/conv"]
    assert fern["metadata"]["value"] == 60
    assert fern["metadata"]["campaign"] == "Campaign Fern"
    assert fern["source"] == "Cost/conv … Campaign Fern … $60"


def test_a_table_of_kpis_keeps_each_kpis_latest_value() -> None:
    table = "| Metric | Before | After |\n|---|---|---|\n| Cost per lead | $80 | $64 |"
    table += "\n| Leads | 30 | 41 |"
    (metric,) = of(run(user(table)), "metric")
    assert metric["name"] == "Cost per lead"
    assert metric["metadata"]["value"] == 64


def test_a_table_without_numbers_or_kpis_gives_nothing() -> None:
    table = "| Keyword | Match type |\n|---|---|\n| lotus mats | phrase |"
    assert of(run(assistant(table)), "metric") == []


def test_a_problem_named_by_its_first_word_is_a_pain_point() -> None:
    (pain,) = of(run(user("and the spam leads again, two more this week")), "pain_point")
    assert pain["name"] == "Spam leads"
    assert of(run(assistant("We filtered the spam leads.")), "pain_point") == []


def test_a_thing_the_user_calls_garbage_is_a_pain_point() -> None:
    text = "Issue one: the chat leads are useless, mostly bots."
    (pain,) = of(run(user(text)), "pain_point")
    assert pain["name"] == "Chat leads"


def test_a_structured_campaign_name_is_found_by_its_first_part() -> None:
    known = [KnownEntity(type="campaign", id="lotus-search-all", name="Lotus Search - All Mats")]
    cands = run(user("Lotus Search ROAS: 410% this week."), known=known)
    assert [c["name"] for c in of(cands, "campaign")] == ["Lotus Search - All Mats"]
    (metric,) = of(cands, "metric")
    assert metric["metadata"]["campaign"] == "Lotus Search - All Mats"


def test_a_first_part_two_campaigns_share_stands_for_neither() -> None:
    known = [
        KnownEntity(type="campaign", id="a", name="Lotus Search - Mats"),
        KnownEntity(type="campaign", id="b", name="Lotus Search - Blocks"),
    ]
    cands = run(user("Lotus Search ROAS: 410% this week."), known=known)
    names = [c["name"] for c in of(cands, "campaign")]
    assert "Lotus Search - Mats" not in names and "Lotus Search - Blocks" not in names
    campaigns = [m["metadata"].get("campaign") for m in of(cands, "metric")]
    assert "Lotus Search - Mats" not in campaigns and "Lotus Search - Blocks" not in campaigns


def test_a_first_part_in_lower_case_is_words_not_a_campaign() -> None:
    known = [KnownEntity(type="campaign", id="w", name="Water Heater - Replacement")]
    assert run(user("Our water heater at home broke last night."), known=known) == []


def test_a_structured_campaigns_metric_is_named_by_its_first_part() -> None:
    cands = run(user("Lotus Mats - All Sizes: ROAS is 410% this month."))
    (metric,) = of(cands, "metric")
    assert metric["name"] == "Lotus Mats ROAS"
    assert metric["metadata"]["campaign"] == "Lotus Mats - All Sizes"


def test_a_reported_change_keeps_its_whole_list() -> None:
    text = "All set: excluded cheap, free and diy as negative keywords."
    (decision,) = of(run(assistant(text)), "decision")
    assert decision["name"] == "Exclude cheap free and diy as negative keywords"
    assert decision["metadata"]["action"] == "exclude cheap, free and diy as negative keywords"


def test_a_long_change_is_named_by_what_it_became_not_what_it_was() -> None:
    text = "Switched Campaign Heron Display from Manual CPC to Target ROAS at 400%."
    (decision,) = of(run(assistant(text)), "decision")
    assert "Target ROAS" in decision["name"] and "Manual" not in decision["name"]
    assert "from Manual CPC" in decision["metadata"]["action"]  # the old state stays told
    kept_whole = (
        "Done: moved $40/day from Campaign Heron Display to Campaign Wren Search.",  # transfer
        "I excluded mobile apps from Campaign Heron Display to cut the junk clicks for good.",
        "Paused Campaign Heron Display from June 1 to June 15 while the shop is shut.",
    )
    for text in kept_whole:  # no old state: a source, a purpose, a period
        (decision,) = of(run(assistant(text)), "decision")
        assert "from" in decision["name"] and "Heron" in decision["name"], decision["name"]


def test_a_revised_preference_updates_the_stored_one() -> None:
    known = [KnownEntity(type="preference", id="p", name="Send me a monthly summary on the 5th")]
    text = "Board meets earlier, so I want the monthly summary on the 1st instead."
    (pref,) = of(run(user(text), known=known), "preference")
    assert pref["name"] == "Send me a monthly summary on the 5th"
    assert "on the 1st" in pref["metadata"]["value"]


def test_a_new_preference_on_the_same_topic_without_a_revision_is_its_own() -> None:
    known = [KnownEntity(type="preference", id="p", name="Send me a weekly report every Monday")]
    (pref,) = of(run(user("Please keep the weekly report short."), known=known), "preference")
    assert pref["name"] != "Send me a weekly report every Monday"


def test_a_kpi_row_takes_its_current_column_not_its_target() -> None:
    table = "| Metric | Current | Target |\n|---|---|---|\n| Cost per lead | $64 | $50 |"
    (metric,) = of(run(user(table)), "metric")
    assert metric["metadata"]["value"] == 64


def test_a_table_of_keywords_or_services_gives_no_campaign_metrics() -> None:
    table = "| Keyword | Avg. CPC | CTR |\n|---|---|---|\n| dentist near me | $4.10 | 6.2% |"
    assert of(run(assistant(table)), "metric") == []
    rates = "| Service | Hourly rate |\n|---|---|\n| Partner | $450 |"
    assert of(run(user(rates)), "metric") == []


def test_what_an_ad_problem_word_qualifies_decides_if_it_is_a_pain_point() -> None:
    assert of(run(user("We mostly fix broken pipes in winter.")), "pain_point") == []
    assert of(run(user("Our firm handles missing persons cases.")), "pain_point") == []
    assert of(run(user("I'm not worried about the CPC increase.")), "pain_point") == []
