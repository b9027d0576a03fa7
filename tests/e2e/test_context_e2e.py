"""Context an agent can act on, over HTTP on the local host (issue 22): a campaign brings its
linked metric and decision, grouped under it; an edit through PUT shows in the next block;
an unrelated task gets preferences and the few most important recent entities, not all."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
import pytest

from .conftest import Host

pytestmark = pytest.mark.e2e

USER = "/v1/users/e2e-linked"
REGIONS = ("Nordics", "Iberia", "Benelux", "Balkans", "Baltics", "Andes")

#: Campaigns no task below is about.
REGIONAL: list[dict[str, Any]] = [
    {"type": "campaign", "name": f"{r} Search", "content": f"{r} search", "importance": 0.9}
    for r in REGIONS
]
ALPHA: dict[str, Any] = {
    "type": "campaign",
    "name": "Campaign Alpha",
    "content": "Search campaign",
    "importance": 0.7,
    "metadata": {"strategy": "Target CPA", "budget": 150},
}
STORED: list[dict[str, Any]] = [
    ALPHA,
    {
        "type": "metric",
        "name": "Click rate",
        "content": "3% this month",
        "importance": 0.6,
        "metadata": {"kpi": "CTR", "value": 3, "unit": "%", "campaign": "Campaign Alpha"},
    },
    {
        "type": "decision",
        "name": "Widen match types",
        "content": "Broad match on two ad groups",
        "importance": 0.8,
        "metadata": {"action": "broad match", "affectedEntities": ["Campaign Alpha"]},
    },
    *REGIONAL,
    {
        "type": "preference",
        "name": "Numbers first",
        "content": "Lead with numbers",
        "importance": 0.9,
        "metadata": {"category": "communication", "value": "numbers first"},
    },
]


def context(c: httpx.Client, task: str, user: str = USER) -> dict[str, Any]:
    r = c.post(f"{user}/context", json={"task": task, "explain": True})
    assert r.status_code == 200, r.text
    return r.json()


def test_linked_context_over_http(host: Host) -> None:
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        put = c.put(f"{USER}/entities", json={"session_id": "s1", "entities": STORED})
        assert put.status_code == 200, put.text

        body = context(c, "Review Campaign Alpha")
        names = {e["name"] for e in body["entities"]}
        assert {"Campaign Alpha", "Click rate", "Widen match types", "Numbers first"} <= names
        assert not any(n.endswith(" Search") for n in names)
        assert body["ranking"]["relevant"] >= 1 and "fallback" not in body["ranking"]
        linked = {s["name"]: s["linkedTo"] for s in body["scores"]}
        assert linked["Widen match types"] == "campaign-alpha"
        lines = body["context"].splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("- **Campaign Alpha**"))
        under = lines[at + 1 : at + 3]
        assert any(line.startswith("  - metric **Click rate**") for line in under)
        assert any(line.startswith("  - decision **Widen match types**") for line in under)

        edited = {**ALPHA, "metadata": {"budget": 300}}
        put = c.put(f"{USER}/entities", json={"session_id": "s2", "entities": [edited]})
        assert put.status_code == 200, put.text
        assert "budget 300" in context(c, "Review Campaign Alpha")["context"]

        unrelated = context(c, "Write a haiku about autumn leaves")
        assert unrelated["ranking"]["fallback"] == "important_recent"
        assert unrelated["ranking"]["relevant"] == 0
        assert "Numbers first" in {e["name"] for e in unrelated["entities"]}
        assert len(unrelated["entities"]) < len(STORED)


def test_a_pain_point_brings_what_was_done_against_it_over_http(host: Host) -> None:
    """A decision whose `affectedEntities` names a pain point comes with a task about that
    pain point, though it shares no word with the task, and stands under it in the block."""
    user = "/v1/users/e2e-fixes"
    stored = [
        {
            "type": "pain_point",
            "name": "Fake form fills",
            "content": "Bots posting the contact form",
        },
        {
            "type": "decision",
            "name": "Add a captcha",
            "content": "Agreed in May",
            "importance": 0.5,
            "metadata": {"action": "add a captcha", "affectedEntities": ["fake fills"]},
        },
        *REGIONAL,
    ]
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        put = c.put(f"{user}/entities", json={"session_id": "s1", "entities": stored})
        assert put.status_code == 200, put.text
        body = context(c, "How did we handle the fake fills?", user)
        linked = {s["name"]: s["linkedTo"] for s in body["scores"]}
        assert linked.get("Add a captcha") == "fake-form-fills"
        kinds = {s["name"]: s["linkedType"] for s in body["scores"]}
        assert kinds["Add a captcha"] == "pain_point"
        lines = body["context"].splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("- **Fake form fills**"))
        assert lines[at + 1].startswith("  - decision **Add a captcha**")


def test_a_task_naming_a_day_finds_what_was_said_that_day_over_http(host: Host) -> None:
    """Two decisions on one campaign, said on different days (the client's provenance): the
    one said on the day the task names ranks first and `explain` shows the day it matched."""
    user = "/v1/users/e2e-dated"

    def decided(name: str, day: str) -> dict[str, Any]:
        at = int(datetime.fromisoformat(f"{day}T10:00:00+00:00").timestamp() * 1000)
        return {
            "type": "decision",
            "name": name,
            "content": "Harbor Tours bids",
            "metadata": {"action": name},
            "provenance": [{"excerpt": name, "at": at}],
        }

    stored = [
        decided("Lower Harbor Tours bids", "2026-03-03"),
        decided("Raise Harbor Tours bids", "2026-04-14"),
        *REGIONAL,
    ]
    with httpx.Client(base_url=host.base_url, timeout=60) as c:
        put = c.put(f"{user}/entities", json={"session_id": "s1", "entities": stored})
        assert put.status_code == 200, put.text
        for task, first, day in (
            ("What did we decide on Harbor Tours bids on 14 April 2026?", "Raise", "2026-04-14"),
            ("What did we decide on Harbor Tours bids on March 3, 2026?", "Lower", "2026-03-03"),
        ):
            body = context(c, task, user)
            assert body["scores"][0]["name"].startswith(first), body["scores"]
            assert day in body["scores"][0]["matchedTerms"]
