"""An entity's value in a few words, for lists (the inspector's tables): what a reader would
otherwise open the entity to see."""

from __future__ import annotations

from entity_memory.domain.amounts import amount, plain_number
from entity_memory.domain.kinds import (
    CampaignMetadata,
    DecisionMetadata,
    MetricMetadata,
    PainPointMetadata,
    PreferenceMetadata,
)
from entity_memory.domain.models import BaseEntity

#: Longer headlines are cut here (with an ellipsis): a table cell, not a paragraph.
MAX_HEADLINE_CHARS = 80


def _parts(entity: BaseEntity) -> list[str]:
    meta = entity.metadata
    if isinstance(meta, MetricMetadata):
        if meta.value is None:
            return []
        target = f" (target {amount(meta.target, meta.unit)})" if meta.target is not None else ""
        return [f"{amount(meta.value, meta.unit)}{target}"]
    if isinstance(meta, CampaignMetadata):
        budget = f"budget {plain_number(meta.budget)}" if meta.budget is not None else None
        return [p for p in (meta.status, meta.strategy, budget) if p]
    if isinstance(meta, PreferenceMetadata):
        return [meta.value]
    if isinstance(meta, DecisionMetadata):
        return [meta.action]
    if isinstance(meta, PainPointMetadata):
        return [f"{meta.severity} severity", *(["resolved"] if meta.resolved else [])]
    return []


def headline(entity: BaseEntity) -> str:
    """The type's key facts joined with " · ", else the start of the content."""
    text = " · ".join(_parts(entity)) or (entity.content or "")
    if len(text) > MAX_HEADLINE_CHARS:
        text = text[: MAX_HEADLINE_CHARS - 1].rstrip() + "\u2026"
    return text
