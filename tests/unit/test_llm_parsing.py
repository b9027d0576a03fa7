"""Lenient reading of model replies: wrappings, single entities, unusable replies, bad items."""

from __future__ import annotations

import json

import pytest

from entity_memory.extraction.llm.parsing import OutputError, parse_output, split_items

from .llm_fixtures import (
    CAMPAIGN,
    DECISION,
    GOOD,
    GOOD_TEXT,
    METRIC,
    PREFERENCE,
)

# --- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        GOOD_TEXT,
        GOOD,
        f"```json\n{GOOD_TEXT}\n```",
        f"```\n{GOOD_TEXT}\n```\n",
        f"Here are the entities I found:\n\n{GOOD_TEXT}\n\nLet me know if you need more.",
        f"{GOOD_TEXT}\nNote: importance follows the rules {{0.9+ for decisions}}.",
        f"Sources [1], [2]:\n```json\n{GOOD_TEXT}\n```\nThe entities above {{ok}}",
        json.dumps(GOOD["entities"]),
        GOOD["entities"],
    ],
    ids=[
        "plain",
        "parsed-dict",
        "fence-json",
        "fence-bare",
        "prose-around",
        "trailing-braces",
        "brackets-before-fence",
        "bare-list-text",
        "bare-list",
    ],
)
def test_parse_output_finds_the_entities(raw):
    assert parse_output(raw) == GOOD["entities"]


def test_parse_output_accepts_a_single_entity_and_empty_results():
    assert parse_output(json.dumps(METRIC)) == [METRIC]
    assert parse_output('{"entities": []}') == []
    assert parse_output('{"entities": null}') == []


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty reply"),
        ("   ", "empty reply"),
        (GOOD_TEXT[: len(GOOD_TEXT) // 2], r"cut off \(truncated reply\)"),
        ("```json\n" + GOOD_TEXT[:200], r"cut off \(truncated reply\)"),
        ("{'entities': [{'type': 'campaign'}]}", "no JSON object"),
        ("I could not find any entities in this conversation.", "no JSON object"),
        ("Sure [see below", "no JSON object"),
        ('{"items": []}', 'no "entities" key'),
        ('{"entities": "none"}', '"entities" is not a list'),
        ("42", "not an object"),
    ],
)
def test_parse_output_rejects_unusable_replies(raw, reason):
    with pytest.raises(OutputError, match=reason):
        parse_output(raw)


def test_split_items_rejects_with_reasons_and_keeps_valid_siblings():
    items = [
        CAMPAIGN,
        {**METRIC, "type": "kpi_value"},
        {k: v for k, v in DECISION.items() if k != "name"},
        "Campaign Alpha",
        {**PREFERENCE, "name": "   "},
        {k: v for k, v in CAMPAIGN.items() if k != "type"},
        {**PREFERENCE, "type": "PREFERENCE"},
        {**METRIC, "type": "Pain Point", "name": "Slow reports"},
    ]
    candidates, rejected = split_items(items)
    assert candidates == [
        CAMPAIGN,
        PREFERENCE,
        {**METRIC, "type": "pain_point", "name": "Slow reports"},
    ]
    assert [r["reason"] for r in rejected] == [
        "unknown type 'kpi_value'",
        "missing name",
        "not an object",
        "invalid name '   '",
        "missing type",
    ]
    assert rejected[2]["item"] == "Campaign Alpha"
