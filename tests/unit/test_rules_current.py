"""What the rules store is current as of the conversation's end (issue 37): a setting or a
reading changed later in the same session replaces the first one, a problem the conversation
says is fixed is stored as resolved. Invented businesses and wording throughout; no test pins
the wording produced.
"""

from __future__ import annotations

from .test_rules_extractor import assistant, of, run, single, user
from .test_rules_precision import known


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


# --- a problem said to be over is resolved ----------------------------------------------------


def test_a_complaint_the_session_later_says_is_over_is_resolved() -> None:
    cands = run(
        user("We keep getting spam sign-ups on the trial form, it's driving me crazy."),
        assistant("I added a honeypot field to the form."),
        user("Nice, the spam sign-ups are gone this week."),
    )
    pain = single(cands, "pain_point")
    assert pain["metadata"]["resolved"] is True


def test_a_stored_problem_said_to_be_over_is_resolved_and_not_complained_again() -> None:
    stored = known("pain_point", "Spam sign-ups")
    cands = run(user("Nobody has complained about spam sign-ups in a month."), known=[stored])
    pain = single(cands, "pain_point")
    assert pain["name"] == "Spam sign-ups"
    assert pain["metadata"] == {"resolved": True, "provenance": pain["metadata"]["provenance"]}


def test_a_report_naming_the_problem_without_its_problem_word_resolves_it() -> None:
    stored = known("pain_point", "Irrelevant search queries")
    cands = run(
        assistant("Weekly check:\n- Search queries: clean for ten days, nothing new to block"),
        known=[stored],
    )
    assert single(cands, "pain_point")["metadata"]["resolved"] is True


def test_a_problem_only_hoped_or_not_yet_over_stays_open() -> None:
    stored = known("pain_point", "Spam sign-ups")
    for text in (
        "The spam sign-ups should be gone once the captcha is live.",
        "The spam sign-ups are not fixed yet.",
        "Let's get the spam sign-ups sorted this week.",
        "I fixed the landing page, but spam sign-ups keep coming.",
        "The spam sign-ups have gone up again this week.",
        "We had no more than four spam sign-ups on Monday alone.",
        "Please clean up the spam sign-ups in the CRM.",
    ):
        cands = run(user(text), known=[stored])
        assert all(not c["metadata"].get("resolved") for c in of(cands, "pain_point")), text


def test_a_complaint_after_the_fix_reopens_it() -> None:
    cands = run(
        user("We keep getting spam sign-ups on the trial form, so annoying."),
        user("Great, the spam sign-ups are gone."),
        user("Ugh, we keep getting spam sign-ups since Tuesday."),
    )
    assert single(cands, "pain_point")["metadata"]["resolved"] is False


# --- a reading is the campaign's it was said of, or the account's, never a guess ---------------


def test_a_kpi_qualified_by_an_unnamed_part_is_nobodys() -> None:
    for text in ("weekend CPA at 31, should we cut Sundays?", "The mobile CTR is 1.2% now."):
        cands = run(user(text))
        assert of(cands, "metric") == [], text


def test_the_accounts_own_kpi_is_still_read() -> None:
    for text in ("Our overall CPA is $31 this month.", "CPA is $31 this month."):
        metric = single(run(user(text)), "metric")
        assert metric["metadata"]["value"] == 31
        assert metric["metadata"].get("campaign") is None


# --- one decision, stored once -------------------------------------------------------------------


def test_a_loose_instruction_the_assistant_made_concrete_is_one_decision() -> None:
    cands = run(
        assistant("Bakery Search: $30/day, Manual CPC."),
        user("fine, try that automatic bidding stuff on the bakery ads too"),
        assistant("For Bakery Search I'd use Target CPA at $12."),
        user("ok go"),
        assistant("Switched Bakery Search to Target CPA at $12."),
    )
    decisions = of(cands, "decision")
    assert len(decisions) == 1, [d["name"] for d in decisions]
    assert "Bakery Search" in decisions[0]["metadata"]["affected_entities"]


def test_a_loose_instruction_about_something_else_stays() -> None:
    cands = run(
        user("let's add the holiday opening hours to the ads"),
        assistant("Will do. Separately, I'd switch Bakery Search to Target CPA at $12."),
        user("yes"),
    )
    assert len(of(cands, "decision")) == 2, [d["name"] for d in of(cands, "decision")]


def test_a_name_ending_on_a_country_code_is_a_campaign() -> None:
    cands = run(assistant("Done:\n- ZX - Pet Cover - US now on Target CPA, $40"))
    campaign = single(cands, "campaign")
    assert campaign["name"] == "ZX - Pet Cover - US"
    assert campaign["metadata"]["strategy"] == "Target CPA"


def test_a_kpi_row_says_in_brackets_which_campaign_it_is_of() -> None:
    stored = [known("campaign", "ZX - Pet Cover - US"), known("campaign", "Kitten Food Search")]
    cands = run(
        assistant(
            "| Metric | Last 4 weeks |\n|---|---|\n| Cost per sale (ZX) | $52 |\n"
            "| CTR (mobile) | 3.1% |\n| ROAS (Kitten Food Search) | 4.2x |"
        ),
        known=stored,
    )
    metrics = of(cands, "metric")
    by_campaign = {m["metadata"].get("campaign"): m["metadata"]["value"] for m in metrics}
    assert by_campaign == {"ZX - Pet Cover - US": 52, "Kitten Food Search": 4.2}


def test_a_single_column_of_goals_is_no_reading() -> None:
    stored = [known("campaign", "Kitten Food Search")]
    cands = run(
        assistant("| Metric | Target |\n|---|---|\n| ROAS (Kitten Food Search) | 5x |"),
        known=stored,
    )
    assert of(cands, "metric") == []


def test_a_kpi_said_of_a_campaigns_short_part_is_that_campaigns() -> None:
    stored = [known("campaign", "ZX - Pet Cover - US"), known("campaign", "Kitten Food Search")]
    cands = run(assistant("- Current cost per sale on ZX: $61 (trailing 30 days)"), known=stored)
    assert single(cands, "metric")["metadata"]["campaign"] == "ZX - Pet Cover - US"


def test_a_short_part_that_qualifies_another_word_names_no_campaign() -> None:
    stored = [known("campaign", "US - Brand"), known("campaign", "Kitten Food Search")]
    cands = run(assistant("The CPA for US shoppers is $30 this week."), known=stored)
    assert of(cands, "metric") == []


def test_as_or_since_before_a_noun_is_no_rationale() -> None:
    cands = run(
        user("add negatives for tutorial, free, diy"),
        assistant("Done: added tutorial, free and diy as exact-match negatives on the account."),
    )
    assert all(d["metadata"]["rationale"] == "" for d in of(cands, "decision"))
    cands = run(user("Let's pause Kitten Food Search as the CPA is twice our margin."))
    assert "margin" in single(cands, "decision")["metadata"]["rationale"]


def test_two_changes_to_one_campaign_are_two_decisions() -> None:
    cands = run(
        user("Let's pause Bakery Search for the holidays."),
        assistant("Paused Bakery Search."),
        user("Let's resume Bakery Search, the shop stays open."),
        known=[known("campaign", "Bakery Search")],
    )
    assert len(of(cands, "decision")) == 2, [d["name"] for d in of(cands, "decision")]
