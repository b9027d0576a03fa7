"""The name-agnostic figures of bench/capable_scoring.py and the judge files of
bench/judge_export.py, on an invented bakery."""

from __future__ import annotations

import json
from pathlib import Path

from bench.capable_scoring import attribute, distinctive_facts, figures, name_hit
from bench.judge_export import judge_document, write_judge_file


def row(
    type_: str, name: str, facts: list[str], aliases: list[str] | None = None, **kw: object
) -> dict:
    return {"type": type_, "name": name, "aliases": aliases or [], "facts": facts, **kw}


def ent(type_: str, name: str, content: str = "", **kw: object) -> dict:
    return {"type": type_, "name": name, "content": content, "metadata": {}, **kw}


ROWS = [
    row("campaign", "Sourdough Search", ["$30/day"], ["sourdough"], changed=True),
    row("campaign", "Croissant Promo", ["paused"]),
    row("metric", "Sourdough cost per order", ["$4.10"]),
    row("pain_point", "Stale stock wasted", ["thrown away every evening"]),
]
SCENARIO = {
    "scenario": "bakery",
    "expect_final": ROWS,
    "sessions": [{"session_id": "s1", "date": "2026-01-01T00:00:00Z", "messages": [], "x": 1}],
    "probes": [
        {"expect_context_contains": ["$30/day", "$4.10"], "expect_context_excludes": ["$20/day"]}
    ],
}


def test_names_in_another_order_or_wording_still_give_evidence() -> None:
    assert name_hit(ent("campaign", "Search - Sourdough"), ROWS[0]) == 2
    assert name_hit(ent("pain_point", "Wasted stale stock"), ROWS[3]) == 3
    assert name_hit(ent("campaign", "Croissant Promo"), ROWS[0]) == 0


def test_a_fact_proves_a_row_only_when_it_is_distinctive() -> None:
    telling = distinctive_facts(ROWS)
    assert telling[0] == ["$30/day"]
    assert telling[1] == []  # one word, no digit: many campaigns are paused


def test_an_entity_named_otherwise_is_attributed_by_its_facts() -> None:
    stored = [ent("metric", "Bread CPA", "CPA was $4.10 last week"), ent("metric", "Opening hours")]
    assert attribute(stored, ROWS) == [2, -1]


def test_figures_count_duplicates_current_facts_and_context_by_meaning() -> None:
    stored = [
        ent("campaign", "Sourdough Search", "Budget $30/day"),
        ent("campaign", "Search for sourdough", "Budget $25/day"),  # a stale duplicate
        ent("metric", "Bread CPA", "CPA $4.10"),
    ]
    fig = figures(SCENARIO, stored, ["budget $30/DAY; cpa $4.10; was $20/day"])
    s = fig.summary()
    assert s["facts_current"] == 2 / 4 and s["changed_current"] == 1.0
    assert s["duplicates_per_real"] == 1 / 4 and s["dup_rows"] == 1
    assert s["unattributed"] == 2 / 4 and s["stored_per_real"] == 3 / 4
    assert s["context_contains"] == 1.0 and s["context_excludes"] == 0.0


def test_judge_files_hold_what_a_judge_reads_and_not_who_wrote_it(tmp_path: Path) -> None:
    stored = [
        ent(
            "campaign",
            "Sourdough Search",
            "Budget $30/day",
            version=2,
            id="x",
            provenance=[{"extractor": "rules"}],
        )
    ]
    doc = judge_document(SCENARIO, stored)
    assert set(doc) == {"sessions", "gold_final", "stored"}
    assert doc["stored"] == [
        {
            "type": "campaign",
            "name": "Sourdough Search",
            "content": "Budget $30/day",
            "metadata": {},
            "version": 2,
        }
    ]
    assert set(doc["sessions"][0]) == {"session_id", "date", "messages"}
    path = write_judge_file(tmp_path / "out", SCENARIO, stored)
    assert path.name == "bakery.json" and json.loads(path.read_text()) == doc
