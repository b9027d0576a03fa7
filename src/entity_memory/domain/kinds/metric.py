"""The metric kind: a KPI's value, target and dated series, of one campaign."""

from __future__ import annotations

from entity_memory.domain.kind import EntityKind, ImportanceBands
from entity_memory.domain.models import MetricEntity, MetricInput, MetricMetadata


def _has_target(fact: object) -> bool:
    return getattr(fact, "target", None) is not None


METRIC = EntityKind(
    type="metric",
    entity_model=MetricEntity,
    input_model=MetricInput,
    metadata_model=MetricMetadata,
    # A metric with a stated goal is one the user is steering by.
    importance=ImportanceBands(
        extracted=0.8, detected=0.7, detected_marked=0.8, marked=_has_target
    ),
    label="Historical Metrics",
    section=4,
    member_label="metric",
    shown_fields=("value", "target"),
    known_facts=("kpi", "value", "target", "unit", "campaign"),
    offered_fields=("kpi", "value", "target", "campaign"),
    server_fields=frozenset({"history"}),
    campaign_fields=("campaign",),
    companions=5,
    llm_max_items=8,
    llm_item_tokens=50,
    ttl_days=180,
)
