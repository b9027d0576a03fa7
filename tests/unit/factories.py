"""Realistic entity inputs, one per type, as an ads agent would send them; and stored entities
built from the few fields a test states."""

from __future__ import annotations

from typing import Any

from entity_memory.domain.keys import slug_for
from entity_memory.domain.kind import kind_of
from entity_memory.domain.kinds import entity_input_adapter
from entity_memory.domain.models import BaseEntity, EntityInputBase, parse_entity

#: When a test's stored entity was written, unless it says: 2024-10-04, so its context line
#: reads "(as of 2024-10-04)".
STORED_AT = 20_000 * 86_400_000


def item(**data: Any) -> EntityInputBase:
    return entity_input_adapter.validate_python(data)  # type: ignore[return-value]


def campaign(name: str = "Campaign Alpha", **kw: Any) -> EntityInputBase:
    data: dict[str, Any] = {
        "type": "campaign",
        "name": name,
        "content": f"{name}: search campaign on target CPA, budget $150/day",
        "importance": 0.7,
        "metadata": {"strategy": "target CPA", "budget": 150, "status": "enabled"},
    }
    data.update(kw)
    return item(**data)


def metric(name: str = "Alpha CPA", value: float = 42.0, **kw: Any) -> EntityInputBase:
    data: dict[str, Any] = {
        "type": "metric",
        "name": name,
        "content": f"Cost per acquisition of Campaign Alpha is ${value:g}",
        "importance": 0.8,
        "metadata": {"kpi": "CPA", "value": value, "unit": "USD", "campaign": "Campaign Alpha"},
    }
    data.update(kw)
    return item(**data)


def decision(name: str = "Switch Alpha to tCPA", **kw: Any) -> EntityInputBase:
    data: dict[str, Any] = {
        "type": "decision",
        "name": name,
        "content": "Switched Campaign Alpha from manual CPC to target CPA at $40",
        "importance": 0.9,
        "metadata": {
            "action": "switch bidding to target CPA",
            "rationale": "manual bids could not keep CPA under $45",
            "affectedEntities": ["campaign-alpha"],
            "reversible": True,
        },
    }
    data.update(kw)
    return item(**data)


def pain_point(name: str = "Conversion tracking gaps", **kw: Any) -> EntityInputBase:
    data: dict[str, Any] = {
        "type": "pain_point",
        "name": name,
        "content": "Conversions keep dropping out of the Google Ads report after tag changes",
        "importance": 0.75,
        "metadata": {"severity": "high", "relatedCampaigns": ["campaign-alpha"]},
    }
    data.update(kw)
    return item(**data)


def preference(name: str = "Concise weekly summaries", **kw: Any) -> EntityInputBase:
    data: dict[str, Any] = {
        "type": "preference",
        "name": name,
        "content": "Wants a short bullet summary every Monday, numbers first",
        "importance": 0.9,
        "metadata": {"category": "reporting", "value": "concise weekly bullets", "confidence": 0.9},
    }
    data.update(kw)
    return item(**data)


def stored(**fields: Any) -> BaseEntity:
    """A stored entity (what the store reads back and the context block renders) from the
    fields a test states: what a write adds (id, user, importance, times, session, version)
    as the store fills it, the kind's example metadata unless given, validated by the kind's
    model. Its last write is `STORED_AT`, or its creation when that is later."""
    data: dict[str, Any] = {
        "userId": "u1",
        "importance": 0.5,
        "createdAt": STORED_AT,
        "sessionId": "s1",
        "version": 1,
        **fields,
    }
    data.setdefault("id", slug_for(data["name"]))
    data.setdefault("updatedAt", max(STORED_AT, data["createdAt"]))
    data.setdefault("metadata", dict(kind_of(data["type"]).example_metadata))
    return parse_entity(data)


def all_five() -> list[EntityInputBase]:
    return [campaign(), metric(), decision(), pain_point(), preference()]
