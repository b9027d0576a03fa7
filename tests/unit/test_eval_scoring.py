"""The eval README's matching rules, as implemented in bench/eval_scoring.py."""

from __future__ import annotations

from pathlib import Path

from bench.eval_scoring import (
    assign,
    band,
    changed_current,
    context_contains,
    context_excludes,
    duplicates,
    false_positives,
    hit_at_k,
    importance_agreement,
    match_length,
    normalise,
    recall,
)

ROOT = Path(__file__).resolve().parents[2]


def ent(type_: str, name: str, **kw: object) -> dict:
    return {"type": type_, "name": name, **kw}


def row(type_: str, name: str, aliases: list[str] | None = None, **kw: object) -> dict:
    return {"type": type_, "name": name, "aliases": aliases or [], **kw}


def test_normalise_lowercases_and_turns_punctuation_into_spaces() -> None:
    assert normalise("  NB - AP Automation - US ") == "nb ap automation us"
    assert normalise("Check-in   cadence!") == "check in cadence"


def test_whole_word_containment_only() -> None:
    nb = row("campaign", "NB")
    assert match_length(ent("campaign", "NB - Invoices"), nb) == 2
    assert match_length(ent("campaign", "Unbranded Search"), nb) == 0  # no match inside a word
    assert match_length(ent("campaign", "nb"), nb) == 2


def test_types_must_be_equal_and_aliases_count() -> None:
    r = row("metric", "Kayak CPA", ["cost per sale"])
    assert match_length(ent("campaign", "Kayak CPA"), r) == 0
    assert match_length(ent("metric", "Kayaks cost per sale"), r) == len("cost per sale")


def test_longest_match_wins_when_an_entity_matches_several_rows() -> None:
    rows = [row("campaign", "Brand"), row("campaign", "Brand Search")]
    assert assign([ent("campaign", "Brand Search EU")], rows) == [1]


def test_recall_per_type_overall_and_high() -> None:
    rows = [
        row("campaign", "Rafting Tours", importance="high"),
        row("metric", "Rafting CPA", importance="medium"),
        row("preference", "Weekly digest", importance="high"),
    ]
    got = [ent("campaign", "Rafting Tours"), ent("metric", "Rafting ROAS")]
    t = recall(got, rows)
    assert t.rate("campaign") == 1.0
    assert t.rate("metric") == 0.0
    assert t.rate("overall") == 1 / 3
    assert t.rate("high") == 0.5
    assert false_positives(got, rows) == [got[1]]


def test_lenient_accepts_own_aliases_or_all_facts() -> None:
    r = row("metric", "Rafting CPA", facts=["$61"])
    by_alias = ent("metric", "Cost per booking", aliases=["rafting CPA"])
    by_facts = ent("metric", "Bookings cost", content="down to $61 this week")
    assert match_length(by_alias, r) == 0
    assert match_length(by_alias, r, lenient=True) > 0
    assert match_length(by_facts, r, lenient=True) == 1


def test_replay_helpers() -> None:
    final = [
        row("campaign", "Rafting Tours", facts=["$90/day"], changed=True),
        row("preference", "Weekly digest", facts=["monday"], changed=False),
    ]
    stored = [
        ent("campaign", "Rafting Tours", content="budget $90/day"),
        ent("campaign", "Rafting Tours Search", content="budget $60/day"),
    ]
    d = duplicates(stored, final)
    assert d["counts"] == [2, 0]
    assert d["mean"] == 1.0 and d["exactly_one"] == 0.0 and d["lost"] == 0.5
    assert changed_current(stored, final)["rate"] == 1.0
    top = [{"type": "campaign", "name": "Rafting Tours"}, {"type": "preference", "name": "x"}]
    assert hit_at_k(stored, top, 10, final) == 0.5
    assert context_contains("Budget $90/DAY", ["$90/day", "paused"]) == 0.5
    assert context_excludes("Budget $90/day", ["$60/day"]) == 1.0


def test_importance_bands() -> None:
    assert [band(x) for x in (0.95, 0.85, 0.7, 0.5, 0.45)] == [
        "high",
        "high",
        "medium",
        "medium",
        "low",
    ]
    rows = [
        row("campaign", "Rafting Tours", importance="high"),
        row("metric", "X", importance="low"),
    ]
    got = [ent("campaign", "Rafting Tours", importance=0.7)]
    assert importance_agreement(got, rows) == (0, 1)
